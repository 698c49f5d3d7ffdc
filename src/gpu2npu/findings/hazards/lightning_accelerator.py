"""A Lightning Trainer or Fabric that chooses its accelerator itself (NPU930): Lightning's automatic
choice knows TPUs, Apple GPUs and CUDA, else the CPU; on an Ascend machine it picks the CPU, with no
error, where the program trained on GPUs.

Only a call that certainly leaves the choice to Lightning has a row: no `accelerator` (or
"auto"), no positional argument (Fabric's first one is the accelerator) and no `**options`
that may hold one."""
from __future__ import annotations

import ast
from typing import Optional

from ...records.change import Report
from ...records.finding_kinds import LIGHTNING_AUTO_ACCELERATOR
from .view import FileView

TRIGGERS = (b"lightning",)

_PACKAGES = ("lightning.", "pytorch_lightning.", "lightning_fabric.")
_CLASSES = ("Trainer", "Fabric")
_TIP = ("Lightning chooses the accelerator itself (a TPU, an Apple GPU or CUDA, else the CPU): on an Ascend machine "
        "this trains on the CPU, without an error (and its FSDP strategy refuses to start); pass an accelerator that "
        "drives the NPU (a custom lightning Accelerator, or an Ascend integration of Lightning) as accelerator=")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        if call.args or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return
        last = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
        if last not in _CLASSES:
            return
        name = _lightning_class(self.view.qualified(call.func))
        if name is None:
            return
        accelerator = None
        for keyword in call.keywords:
            if keyword.arg is None:
                return  # `**options`: may choose one
            if keyword.arg == "accelerator":
                accelerator = keyword.value
        if accelerator is None:
            self.view.add(call, LIGHTNING_AUTO_ACCELERATOR.code, Report.UNSUPPORTED, f"{name}(...) without accelerator", _TIP)
        elif isinstance(accelerator, ast.Constant) and accelerator.value == "auto":
            self.view.add(accelerator, LIGHTNING_AUTO_ACCELERATOR.code, Report.UNSUPPORTED, f"{name}(accelerator='auto')", _TIP)


def _lightning_class(names) -> Optional[str]:
    return next((name for name in sorted(names) if name.startswith(_PACKAGES) and name.rsplit(".", 1)[-1] in _CLASSES), None)
