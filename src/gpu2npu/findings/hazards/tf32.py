"""Switches of CUDA's float32 precision (a performance row, NPU962): they change nothing on the
NPU, whose own switch for a shorter float32 mantissa is HF32."""
from __future__ import annotations

import ast

from ...records.change import Report
from ...records.finding_kinds import TF32_ADVICE
from .view import FileView

TRIGGERS = (b"float32_matmul_precision", b"fp32_precision")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        if "torch.set_float32_matmul_precision" in self.view.qualified(call.func):
            self.view.add(call.func, TF32_ADVICE, Report.PERFORMANCE, "torch.set_float32_matmul_precision",
                          "sets whether CUDA computes float32 matmuls in TF32; the NPU's switch for float32 matmuls "
                          "with a shorter mantissa (HF32) is torch_npu.npu.matmul.allow_hf32 ('high' or 'medium' is "
                          "True, 'highest' False)", api_type="torch")

    def on_assign(self, assign: ast.Assign) -> None:
        for target in assign.targets:
            if not (isinstance(target, ast.Attribute) and target.attr == "fp32_precision"):
                continue
            name = next((q for q in sorted(self.view.qualified(target)) if q.startswith("torch.backends.")), None)
            if name is not None:
                self.view.add(assign, TF32_ADVICE, Report.PERFORMANCE, name,
                              "sets how CUDA (or cuDNN, oneDNN) computes float32 operations; on the NPU it changes "
                              "nothing. The NPU's choice for float32 matmuls and convolutions with a shorter mantissa "
                              "(HF32, like TF32) is torch_npu.npu.matmul.allow_hf32 / torch_npu.npu.conv.allow_hf32 "
                              "('tf32' is True, 'ieee' False)", api_type="torch")
