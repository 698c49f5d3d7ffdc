"""A fused optimizer or an optimizer choice the NPU has no kernel for (NPU910): `fused=True` where
the release has no NPU kernel for it, and transformers' optimizer names that build a bitsandbytes
optimizer."""
from __future__ import annotations

import ast
from typing import Optional, Set

from ...records.change import Report
from ...records.finding_kinds import FUSED_OPTIMIZER
from ...knowledge.hf_optimizers import HF_BITSANDBYTES_OPTIMIZERS, NAME_WORDS, bitsandbytes_optimizer_tip
from ...knowledge.tips import FUSED_OPTIMIZERS, has_fused_kernel
from .view import FileView

TRIGGERS = (b"fused=True", b"fused = True", *(word.encode() for word in NAME_WORDS))


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view
        self._in_comparisons: Optional[Set[int]] = None  # (found when an optimizer name is first read)

    def _compared(self, node: ast.Constant) -> bool:
        """Whether the name is one a test compares the chosen optimizer with (`if args.optim in
        ("adamw_8bit", "paged_adamw_8bit")`, a validation of a configuration): where it is chosen,
        and where a bitsandbytes optimizer is built, the rows stand."""
        if self._in_comparisons is None:
            self._in_comparisons = {
                id(constant) for compare in self.view.groups.get(ast.Compare, ())
                for operand in (compare.left, *compare.comparators)
                for constant in (operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else (operand,))}
        return id(node) in self._in_comparisons

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func) & FUSED_OPTIMIZERS.keys()
        if not names or not any(k.arg == "fused" and isinstance(k.value, ast.Constant) and k.value.value is True
                                for k in call.keywords):
            return
        name = sorted(names)[0]
        api = self.view.api
        if has_fused_kernel(api, name):
            return
        short = name.rsplit(".", 1)[-1]
        instead = (f"torch_npu.optim.NpuFused{short} (the same algorithm, fused for the NPU)"
                   if api.module_has("torch_npu.optim", f"NpuFused{short}") else "nothing fused")
        self.view.add(call.func, FUSED_OPTIMIZER.code, Report.UNSUPPORTED, f"{name}(fused=True)",
                      f"{self.view.release} has no NPU kernel for aten::{FUSED_OPTIMIZERS[name]} (it has "
                      f"aten::_fused_adamw_ only), so the first step raises: leave fused out (the foreach "
                      f"implementation runs on the NPU), or use {instead}")

    def on_string(self, node: ast.Constant) -> None:
        if node.value not in HF_BITSANDBYTES_OPTIMIZERS or self._compared(node):
            return
        self.view.add(node, FUSED_OPTIMIZER.code, Report.UNSUPPORTED, f"optimizer name {node.value!r}",
                      bitsandbytes_optimizer_tip(node.value))
