"""device_map="auto" where the project pins an accelerate that counts no NPU (NPU935): the model
is loaded onto the CPU on an Ascend machine (knowledge.accelerate_devices)."""
from __future__ import annotations

import ast
from typing import Optional

from ...knowledge.accelerate_devices import COUNTED_MAPS, places_on_the_cpu, tip
from ...records.change import Report
from ...records.finding_kinds import AUTO_DEVICE_MAP
from .view import FileView

TRIGGERS = (b"device_map",)
KEYWORD = "device_map"


def _counted_map(value: Optional[ast.AST]) -> Optional[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value in COUNTED_MAPS:
        return value.value
    return None


class Detector:
    """A device_map written as one of the maps accelerate splits over the devices it counts: as a
    keyword (`from_pretrained(name, device_map="auto")`), a parameter's default (`def load(path,
    device_map="auto")`) or a settings entry (`{"device_map": "auto"}`)."""

    def __init__(self, view: FileView) -> None:
        self.view = view
        self.pinned = view.pins.accelerate if places_on_the_cpu(view.pins.accelerate) else None

    def _add(self, node: ast.AST, value: str) -> None:
        self.view.add(node, AUTO_DEVICE_MAP.code, Report.UNSUPPORTED, f'device_map="{value}"', tip(self.pinned, value))

    def on_call(self, call: ast.Call) -> None:
        for keyword in call.keywords if self.pinned else ():
            value = _counted_map(keyword.value) if keyword.arg == KEYWORD else None
            if value is not None:
                self._add(keyword.value, value)

    def on_function(self, function: ast.AST) -> None:
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = [*([None] * (len(positional) - len(arguments.defaults))), *arguments.defaults]
        for parameter, default in [*zip(positional, defaults), *zip(arguments.kwonlyargs, arguments.kw_defaults)]:
            value = _counted_map(default) if self.pinned and parameter.arg == KEYWORD else None
            if value is not None:
                self._add(default, value)

    def on_module(self, tree: ast.Module) -> None:
        for node in self.view.groups.get(ast.Dict, ()) if self.pinned else ():
            for key, entry in zip(node.keys, node.values):
                value = _counted_map(entry) if isinstance(key, ast.Constant) and key.value == KEYWORD else None
                if value is not None:
                    self._add(entry, value)
