"""apex's fused modules whose torch twin takes the same arguments -> the torch module."""
from __future__ import annotations

from typing import Dict, Set, Tuple

import libcst as cst

from .base import Example, Rule
from .names import dotted_name
from .walk import walk

# apex name -> (torch module, class, how many leading positional arguments mean the same thing,
# keywords of apex that torch's class does not take)
TWINS: Dict[str, Tuple[str, str, int, Set[str]]] = {
    "apex.normalization.FusedLayerNorm": ("torch.nn", "LayerNorm", 3, {"memory_efficient"}),
    "apex.normalization.fused_layer_norm.FusedLayerNorm": ("torch.nn", "LayerNorm", 3, {"memory_efficient"}),
    "apex.parallel.SyncBatchNorm": ("torch.nn", "SyncBatchNorm", 6, {"channel_last", "fuse_relu"}),
}


class _Imports(cst.CSTVisitor):
    """Local names bound to an apex class with a twin, anywhere in the file (try blocks, functions)."""

    def __init__(self) -> None:
        super().__init__()
        self.limits: Dict[str, Tuple[int, Set[str]]] = {}

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return False
        for alias in node.names:
            twin = TWINS.get(f"{dotted_name(node.module)}.{dotted_name(alias.name)}")
            if twin is not None:
                local = dotted_name(alias.asname.name) if alias.asname else dotted_name(alias.name)
                self.limits[local] = (twin[2], twin[3])
        return False


class _Calls(cst.CSTVisitor):
    """Local names whose calls pass what the torch twin cannot take."""

    def __init__(self, limits: Dict[str, Tuple[int, Set[str]]]) -> None:
        super().__init__()
        self.limits = limits
        self.refused: Set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        name = node.func.value if isinstance(node.func, cst.Name) else None
        if name not in self.limits:
            return
        positional, apex_only = self.limits[name]
        if (sum(1 for arg in node.args if arg.keyword is None) > positional
                or any(arg.keyword is not None and arg.keyword.value in apex_only for arg in node.args)
                or any(arg.star for arg in node.args)):
            self.refused.add(name)


class ApexModulesToTorch(Rule):
    """apex's `FusedLayerNorm` and `SyncBatchNorm` are CUDA kernels behind the same constructor
    as `torch.nn.LayerNorm` and `torch.nn.SyncBatchNorm` (same arguments, same defaults, same
    results), which run on the NPU.  `from apex.normalization import FusedLayerNorm` becomes
    `from torch.nn import LayerNorm as FusedLayerNorm`, so that every use of the name (calls,
    isinstance checks) keeps working and the file no longer needs apex.  Only when every name of
    the statement has a twin and no call in the file passes what torch does not take
    (`memory_efficient`, `channel_last`, `fuse_relu`); otherwise the import stays and is reported.
    apex's optimizers and RMSNorm are not twins (other defaults: FusedAdam's weight decay is
    decoupled with 0.0 by default, FusedRMSNorm's eps is 1e-5 where torch's is the dtype's):
    both go to the generated ascend_apex package, which keeps apex's constructors (NPU265).
    """

    code = "NPU262"
    summary = "apex FusedLayerNorm, SyncBatchNorm -> torch.nn.LayerNorm, torch.nn.SyncBatchNorm (same arguments)"
    triggers = ("apex",)
    examples = (
        Example(
            "import torch\nfrom apex.normalization import FusedLayerNorm\n"
            "norm = FusedLayerNorm(512, eps=1e-6)\nassert isinstance(norm, FusedLayerNorm)\n",
            "import torch\nfrom torch.nn import LayerNorm as FusedLayerNorm\n"
            "norm = FusedLayerNorm(512, eps=1e-6)\nassert isinstance(norm, FusedLayerNorm)\n",
        ),
        Example(
            "from apex.parallel import SyncBatchNorm\nbn = SyncBatchNorm(64, momentum=0.01)\n",
            "from torch.nn import SyncBatchNorm\nbn = SyncBatchNorm(64, momentum=0.01)\n",
        ),
    )
    unchanged = (
        "from apex.parallel import SyncBatchNorm\nbn = SyncBatchNorm(64, channel_last=True)\n",
        "try:\n    from apex.normalization import FusedLayerNorm as LN\nexcept ImportError:\n    LN = None\n"
        "norm = LN(8, memory_efficient=True)\n",
        "from apex.normalization import FusedLayerNorm, FusedRMSNorm\n",
        "from apex.optimizers import FusedAdam\n",
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.refused: Set[str] = set()
        imports = _Imports()
        walk(imports, node)
        if imports.limits:
            calls = _Calls(imports.limits)
            walk(calls, node)
            self.refused = calls.refused

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if original_node.relative or original_node.module is None or isinstance(original_node.names, cst.ImportStar):
            return updated_node
        module = dotted_name(original_node.module)
        twins = [TWINS.get(f"{module}.{dotted_name(alias.name)}") for alias in original_node.names]
        locals_ = [dotted_name(alias.asname.name) if alias.asname else dotted_name(alias.name)
                   for alias in original_node.names]
        if not all(twins) or any(local in self.refused for local in locals_):
            return updated_node
        targets = {twin[0] for twin in twins}
        if len(targets) != 1:
            return updated_node
        names = []
        for alias, twin, local in zip(updated_node.names, twins, locals_):
            asname = None if local == twin[1] else cst.AsName(name=cst.Name(local))
            names.append(alias.with_changes(name=cst.Name(twin[1]), asname=asname))
        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        target = targets.pop()
        self.record(original_node, f"change import from {module} to import from {target} "
                    f"({', '.join(twin[1] for twin in twins)}: same arguments and results, runs on the NPU)")
        return updated_node.with_changes(module=cst.parse_expression(target), names=names)
