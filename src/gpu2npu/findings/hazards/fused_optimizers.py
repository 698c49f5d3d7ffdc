"""A fused optimizer or an optimizer choice the NPU has no kernel for (NPU910): `fused=True` where
the release has no NPU kernel for it, and transformers' optimizer names that build a bitsandbytes
optimizer."""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from ...records.change import Report
from ...records.finding_kinds import FUSED_OPTIMIZER
from ...knowledge.tips import FUSED_OPTIMIZERS, has_fused_kernel
from .view import FileView

# transformers' optimizer names (TrainingArguments(optim=...)) that build a bitsandbytes optimizer,
# with the torch optimizer name of the same algorithm where one exists.
HF_BITSANDBYTES_OPTIMIZERS: Dict[str, Optional[str]] = {
    "adamw_bnb_8bit": "adamw_torch", "adamw_8bit": "adamw_torch", "paged_adamw_32bit": "adamw_torch",
    "paged_adamw_8bit": "adamw_torch", "rmsprop_bnb": "rmsprop", "rmsprop_bnb_8bit": "rmsprop",
    "rmsprop_bnb_32bit": "rmsprop", "lion_8bit": None, "lion_32bit": None, "paged_lion_32bit": None,
    "paged_lion_8bit": None, "ademamix": None, "ademamix_8bit": None, "paged_ademamix_32bit": None,
    "paged_ademamix_8bit": None, "galore_adamw_8bit": "galore_adamw", "galore_adamw_8bit_layerwise": "galore_adamw_layerwise",
}

# every name above holds one of these
TRIGGERS = (b"fused=True", b"fused = True", b"8bit", b"32bit", b"bnb", b"ademamix")


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
        torch_name = HF_BITSANDBYTES_OPTIMIZERS[node.value]
        instead = (f"use optim={torch_name!r}" + (" or 'adamw_torch_npu_fused' (torch_npu's fused AdamW)"
                                                   if torch_name == "adamw_torch" else "")
                   if torch_name else "choose a torch optimizer (e.g. 'adamw_torch'): this algorithm has none in torch")
        costs = []
        if "8bit" in node.value:
            costs.append("its states are 32-bit: about four times the optimizer memory of the 8-bit ones")
        if node.value.startswith("paged_"):
            costs.append("its states are not paged out to host memory")
        self.view.add(node, FUSED_OPTIMIZER.code, Report.UNSUPPORTED, f"optimizer name {node.value!r}",
                      f"transformers builds this optimizer with bitsandbytes (CUDA kernels): {instead}"
                      + ("; " + "; ".join(costs) if costs else ""))
