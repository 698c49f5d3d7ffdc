"""A device handed to a library that runs on the CPU and NVIDIA's GPUs only (NPU934):
torchcodec's decoders, torchvision's decode_jpeg (knowledge.library_devices)."""
from __future__ import annotations

import ast
from typing import Optional

from ...knowledge.library_devices import WORDS, library_device_api
from ...records.change import Report
from ...records.finding_kinds import LIBRARY_DEVICE
from .view import FileView

TRIGGERS = tuple(word.encode() for word in WORDS)


def device_argument(call: ast.Call, position: Optional[int]) -> Optional[ast.expr]:
    """The device the call is given (its keyword, or its place among the positional arguments)."""
    for keyword in call.keywords:
        if keyword.arg == "device":
            return keyword.value
    if position is not None and len(call.args) > position and not any(
            isinstance(argument, ast.Starred) for argument in call.args[:position + 1]):
        return call.args[position]
    return None


def on_the_cpu(device: ast.expr) -> bool:
    """Whether the device is written as the CPU (`"cpu"`, `torch.device("cpu")`) or as none."""
    if isinstance(device, ast.Call) and device.args and not device.keywords:
        device = device.args[0]  # (torch.device("cpu"))
    return isinstance(device, ast.Constant) and (device.value is None or (
        isinstance(device.value, str) and device.value.split(":")[0] == "cpu"))


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        for name in sorted(self.view.qualified(call.func)):
            known = library_device_api(name)
            if known is None:
                continue
            position, tip = known
            device = device_argument(call, position)
            if device is not None and not on_the_cpu(device):
                self.view.add(call.func, LIBRARY_DEVICE.code, Report.UNSUPPORTED, f"{name}(device=...)", tip)
            return
