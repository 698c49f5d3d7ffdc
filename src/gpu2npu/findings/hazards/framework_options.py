"""Other frameworks' options that choose CUDA (NPU919): Lightning's `accelerator="gpu"` (its
"cuda" the device-strings rule reports where it leaves it), transformers' `tf32=True`, which
raises where there is no CUDA GPU."""
from __future__ import annotations

import ast

from ...records.change import Report
from ...records.finding_kinds import FRAMEWORK_CUDA
from .view import FileView

# what the options' values are written with: the string "gpu", tf32=True
TRIGGERS = (b"'gpu'", b'"gpu"', b"tf32=True", b"tf32 = True")

_LIGHTNING = ("lightning.", "pytorch_lightning.", "lightning_fabric.")
# transformers' argument classes and those built on them (TRL's configs subclass TrainingArguments)
_TRAINING_ARGUMENTS = ("transformers.", "trl.")
_ACCELERATOR_TIP = ("Lightning's 'gpu' accelerator is CUDA's (MPS on a Mac): on an Ascend machine it finds no GPU and "
                    "stops at start; Lightning has no built-in NPU accelerator: run on the NPU through a custom "
                    "lightning Accelerator or an Ascend integration of Lightning")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func)
        for keyword in call.keywords:
            value = keyword.value
            if not isinstance(value, ast.Constant):
                continue
            if keyword.arg == "accelerator" and value.value == "gpu" and any(n.startswith(_LIGHTNING) for n in names):
                self.view.add(value, FRAMEWORK_CUDA.code, Report.UNSUPPORTED, "accelerator='gpu'", _ACCELERATOR_TIP)
            elif keyword.arg == "tf32" and value.value is True and any(n.startswith(_TRAINING_ARGUMENTS) for n in names):
                self.view.add(value, FRAMEWORK_CUDA.code, Report.UNSUPPORTED, "tf32=True",
                              "transformers raises ValueError for tf32=True where there is no CUDA GPU: leave tf32 off "
                              "on the NPU (its counterpart is HF32: torch_npu.npu.matmul.allow_hf32 = True)")
