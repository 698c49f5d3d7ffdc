"""What each package gpu2npu generates provides of the CUDA-only package it stands in for (rules.
reroute and its rules: flash_attn, xformers, bitsandbytes, apex): the modules it mirrors and the
names each has.  Read by the rules that point imports there and by the project's reading of which
files keep an import none of them has (migration.engine, Options.reroute_kept), which needs no
libcst."""
from __future__ import annotations

from typing import Dict, FrozenSet, Sequence, Set, Tuple

from .tips import FLASH_ATTN_FUNCTIONS, REROUTED_PACKAGES

_FLASH_ATTN_PADDING = frozenset({"index_first_axis", "index_put_first_axis", "pad_input", "unpad_input"})
# The attention functions flash-attn 2's layers module imports from the package, which an import
# from it names (`from flash_attn.modules.mha import flash_attn_varlen_kvpacked_func`).
_FLASH_ATTN_MHA = frozenset({"flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_kvpacked_func",
                             "flash_attn_varlen_qkvpacked_func"})
_XFORMERS_OPS = frozenset({"memory_efficient_attention", "LowerTriangularMask", "LowerTriangularFromBottomRightMask",
                           "SwiGLU", "swiglu"})
_BITSANDBYTES_OPTIMIZERS = frozenset(
    f"{prefix}{family}{bits}" for prefix in ("", "Paged") for family in ("Adam", "AdamW") for bits in ("", "8bit", "32bit")
) | frozenset(f"{family}{bits}" for family in ("SGD", "RMSprop", "Adagrad") for bits in ("", "8bit", "32bit"))

# the CUDA-only package -> its modules that the generated package mirrors -> the names each provides
PROVIDED: Dict[str, Dict[str, FrozenSet[str]]] = {
    "flash_attn": {
        "flash_attn": FLASH_ATTN_FUNCTIONS | {"__version__", "flash_attn_interface", "bert_padding"},
        "flash_attn.flash_attn_interface": FLASH_ATTN_FUNCTIONS,
        "flash_attn.bert_padding": _FLASH_ATTN_PADDING,
        "flash_attn.modules.mha": _FLASH_ATTN_MHA,
    },
    "xformers": {"xformers": frozenset({"ops", "__version__"}), "xformers.ops": _XFORMERS_OPS},
    "bitsandbytes": {"bitsandbytes": frozenset({"optim", "__version__"}), "bitsandbytes.optim": _BITSANDBYTES_OPTIMIZERS},
    "apex": {"apex": frozenset({"normalization", "optimizers", "parallel"}),
             "apex.normalization": frozenset({"FusedRMSNorm", "MixedFusedRMSNorm", "FusedLayerNorm"}),
             "apex.optimizers": frozenset({"FusedAdam", "FusedSGD", "FusedAdagrad"}),
             "apex.parallel": frozenset({"DistributedDataParallel", "SyncBatchNorm", "convert_syncbn_model"})},
}
assert set(PROVIDED) == set(REROUTED_PACKAGES)


def serves(module: str, names: Sequence[str]) -> bool:
    """Whether the generated package has what `from module import names` imports (`import module`
    where `names` is empty): as a file's plan judges a `from` import or a submodule's."""
    provided = PROVIDED.get(module.split(".")[0], {}).get(module)
    return provided is not None and all(name in provided for name in names)


def kept_by_some_file(package_imports) -> Tuple[Tuple[str, FrozenSet[str]], ...]:
    """For each package of which some file keeps an import the generated package has not (`from
    flash_attn.layers.rotary import RotaryEmbedding`), the names those files ask of other modules
    (kernel_launchers.ProjectKernels.package_imports: (path, imports, asked) of each file), sorted."""
    asked: Dict[str, Set[str]] = {}
    for _, imports, names in package_imports:
        for package in {module.split(".")[0] for module, imported in imports if not serves(module, imported)}:
            asked.setdefault(package, set()).update(names)
    return tuple(sorted((package, frozenset(names)) for package, names in asked.items()))
