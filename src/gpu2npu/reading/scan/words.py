"""The words that make a file need the rules, and the quick test on a text the scan cannot read."""
from __future__ import annotations

import functools
import re

from ...knowledge import env_vars
from ...knowledge.autocast_state import CUDA_AUTOCAST_FUNCTIONS
from ...knowledge.tips import CUDA_ONLY_PACKAGES, TRANSFORMERS_ATTENTION_VALUES

# What makes a file need the rules.  Attributes: `x.cuda()`, `torch.cuda`, `Backend.NCCL`,
# `nn.DataParallel`, `data.DataLoader`, `cpp_extension`, `random.fork_rng`, CUDA's autocast state
# (`torch.is_autocast_enabled()`, `torch.get_autocast_gpu_dtype()`).  Imports: any module
# or name with one of these words (and then every use of the name they bind).  Strings: the ones
# the rules and the analysis act on (device strings and types, NCCL backends,
# CUDA_VISIBLE_DEVICES); prose that merely mentions CUDA is left alone by every rule.  Plain
# variable names (`use_cuda`) are not resolved by any rule and do not count.
REWRITE_WORDS = ("cuda", "nccl", "dataparallel", "data_parallel", "dataloader", "cpp_extension", "torch_npu", "fork_rng",
                 *CUDA_AUTOCAST_FUNCTIONS)
# NCCL in any case but mixed: "AsyncClient" holds n-c-C-l.
REWRITE_WORD = re.compile("|".join(REWRITE_WORDS).replace("nccl", "(?-i:nccl|NCCL|Nccl)"), re.IGNORECASE)
# (cuDNN's TF32 switches hold no CUDA word: `torch.backends.cudnn.allow_tf32`, `...conv.fp32_precision`)
_ATTRIBUTE_WORD = re.compile(r"cuda|(?-i:nccl|NCCL|Nccl)|^(DataParallel|data_parallel|DataLoader|cpp_extension|torch_npu"
                             r"|allow_tf32|fp32_precision|fork_rng|" + "|".join(CUDA_AUTOCAST_FUNCTIONS) + ")$",
                             re.IGNORECASE)
# device names are lower case; the CUDA/NCCL environment variables upper case (env_vars.NAME)
STRING_WORD = re.compile(r"^cuda|torch\.cuda\.|(?i:nccl)|CUDA_VISIBLE_DEVICES|"
                         + "".join(f"^{value}$|" for value in TRANSFORMERS_ATTENTION_VALUES) + env_vars.NAME.pattern)
# Methods whose first argument is a device, and calls returning a device index (as in NPU104).
DEVICE_METHODS = {"to", "to_empty", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
INDEX_RETURNING = {"current_device", "get_rank", "get_local_rank", "device_count", "get_world_size"}
RAY_REQUESTS = frozenset({"num_gpus", "resources_per_worker"})
RAY_PLACEMENT = "placement_group"  # (its bundles ask for GPUs: NPU110)
_CUDA_PACKAGES = frozenset(CUDA_ONLY_PACKAGES)
# The packages that hold a CUDA-only package and other parts (`deepspeed` of `deepspeed.ops.gds`).
_CUDA_PACKAGE_PARENTS = frozenset(".".join(package.split(".")[:end]) for package in CUDA_ONLY_PACKAGES
                                  for end in range(1, package.count(".") + 1))
# Attribute names that can lead from a package to a CUDA-only part of it (`ops` of deepspeed).
PACKAGE_PARTS = frozenset(part for package in CUDA_ONLY_PACKAGES for part in package.split(".")[1:])


def is_cuda_module(module: str) -> bool:
    """A CUDA-only package or a module of one (`flash_attn.bert_padding`)."""
    # (asked of every import of every file: a look-up of each of the module's packages)
    if module in _CUDA_PACKAGES:
        return True
    end = module.find(".")
    while end > 0:
        if module[:end] in _CUDA_PACKAGES:
            return True
        end = module.find(".", end + 1)
    return False


def holds_cuda_module(module: str) -> bool:
    """A package with a CUDA-only part and others (`deepspeed` holds `deepspeed.ops.gds`)."""
    return module in _CUDA_PACKAGE_PARENTS


@functools.lru_cache(maxsize=65536)
def attribute_word(attribute: str) -> bool:
    """Whether an attribute name holds a rewrite word (asked of every attribute of every file:
    the names repeat, the answers are kept)."""
    return _ATTRIBUTE_WORD.search(attribute) is not None


# Methods that a class of a project may define of its own, which the calls and reads that the
# rules rename (`.cuda()`, `.is_cuda`) reach: renamed with them (rules/tensor_cuda).
CUDA_METHOD_NAMES = frozenset({"cuda", "is_cuda"})

# Every word of a text, strings' and comments' too: what the scan can look at of a text it cannot
# parse is among them.
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What may pass an int as a device (integer_device_lines; a forwarder's body holds one too).
_DEVICE_ARGUMENT = re.compile(r"\bto(?:_empty)?[\s\\]*\(|\bdevice(?:_id)?[\s\\]*=(?!=)")
# An escape that can stand for a letter in a string ("\x63uda"): the text may hide a word.
SPELLING_ESCAPE = re.compile(r"\\[xuUN0-7]")


def could_need_rewrite(text: str) -> bool:
    """For a text the scan cannot read (Python's `ast` refuses it; a notebook before its cells
    are parsed): False only when none of what makes `FileScan.needs_rewrite` true can be in it.
    Judged by the scan's own words, packages and calls, on every word of the text."""
    if _DEVICE_ARGUMENT.search(text) or SPELLING_ESCAPE.search(text):
        return True
    for word in set(_WORDS.findall(text)):
        if (attribute_word(word) or REWRITE_WORD.search(word) or env_vars.NAME.match(word)
                or is_cuda_module(word) or holds_cuda_module(word) or word in RAY_REQUESTS
                or word == RAY_PLACEMENT):
            return True
    return False
