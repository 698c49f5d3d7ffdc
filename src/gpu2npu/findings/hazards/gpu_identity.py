"""A CUDA version or GPU property read to choose what runs (NPU906): `torch.version.cuda` is None
on an NPU machine, and torch_npu's device properties have no compute capability or SM count."""
from __future__ import annotations

import ast
import dataclasses
from typing import Dict, Optional, Set, Tuple

from ...knowledge.tips import CUDA_PROPERTY_FIELDS
from ...reading.file_facts import MESSAGE_CALLS
from ...records.change import Report
from ...records.finding_kinds import GPU_IDENTITY
from .view import FileView

# `from torch.version import cuda` holds no "version.cuda"
TRIGGERS = (b"version.cuda", b"import cuda", b"get_device_propert")

CUDA_VERSION_TIP = (
    "torch.version.cuda is None on an NPU machine: a test of it switches the feature off there, and "
    "parsing it (.split, packaging.version.parse) raises; test what the code needs on the NPU instead "
    "(torch_npu.npu.is_bf16_supported() for bf16), or keep the CUDA version check behind a CUDA test")


# What a value shown in a message may pass through and still only be shown: f-strings, `%` and `+`
# of strings, tuples of values, str()/repr()/format().
_SHOWN = (ast.JoinedStr, ast.FormattedValue, ast.BinOp, ast.Tuple, ast.List, ast.Dict, ast.keyword)
_TEXT_CALLS = frozenset({"str", "repr", "format"})


def shown_only(groups) -> Set[int]:
    """ids of the nodes of a file whose value is only shown in a message (`print("CUDA",
    torch.version.cuda)`, `logger.info(f"cuda {torch.version.cuda}")`), or given a default for
    None (`torch.version.cuda or "12"`): no code decides with its None."""
    shown: Set[int] = set()

    def visit(node: ast.AST) -> None:
        shown.add(id(node))
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee not in _TEXT_CALLS:
                return
            children = [*node.args, *node.keywords]
        elif isinstance(node, _SHOWN):
            children = list(ast.iter_child_nodes(node))
        else:  # the value itself where it is a name or an attribute chain (else it is computed with)
            while isinstance(node, ast.Attribute):
                node = node.value
                shown.add(id(node))
            return
        for child in children:
            visit(child)

    for call in groups.get(ast.Call, ()):
        callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        if callee in MESSAGE_CALLS:
            for argument in (*call.args, *(keyword.value for keyword in call.keywords)):
                visit(argument)
    # `torch.version.cuda or "12"`: None gives way to the default written beside it, which is what
    # is parsed or tested (no code sees the None)
    for node in groups.get(ast.BoolOp, ()):
        if isinstance(node.op, ast.Or) and any(isinstance(value, ast.Constant) and isinstance(value.value, str)
                                               for value in node.values[1:]):
            shown.add(id(node.values[0]))
    return shown


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view
        self.properties: Set[str] = set()  # names bound to get_device_properties(...)
        self.cuda_properties: Set[str] = set()  # names bound to torch.cuda.get_device_properties(...)
        self._shown_only: Optional[Set[int]] = None  # (found where a CUDA version is first read)
        # line -> (the CUDA-only property fields read there -> their first column, the index of their row)
        self._fields_on_line: Dict[int, Tuple[Dict[str, int], Optional[int]]] = {}

    def _is_properties_call(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get_device_properties"
                and any(n.startswith(("torch.cuda.", "torch.npu.", "torch_npu.npu.")) for n in self.view.qualified(node.func)))

    def _is_cuda_properties_call(self, node: ast.AST) -> bool:
        return self._is_properties_call(node) and "torch.cuda.get_device_properties" in self.view.qualified(node.func)

    def on_assign(self, assign: ast.Assign) -> None:
        if self._is_properties_call(assign.value):
            self.properties.update(t.id for t in assign.targets if isinstance(t, ast.Name))
            if self._is_cuda_properties_call(assign.value):
                self.cuda_properties.update(t.id for t in assign.targets if isinstance(t, ast.Name))

    def on_reference(self, node: ast.AST) -> None:
        if any(name == "torch.version.cuda" or name.startswith("torch.version.cuda.") for name in self.view.qualified(node)):
            if self._shown_only is None:
                self._shown_only = shown_only(self.view.groups)
            if id(node) not in self._shown_only:  # (printed or logged, None is shown as None: nothing to do)
                self.view.add(node, GPU_IDENTITY.code, Report.UNSUPPORTED, "torch.version.cuda", CUDA_VERSION_TIP)
        elif isinstance(node, ast.Attribute) and node.attr in CUDA_PROPERTY_FIELDS:
            self._property_field(node)

    def _property_field(self, node: ast.Attribute) -> None:
        value = node.value
        if self.view.similar and node.attr in ("major", "minor") and (
                self._is_cuda_properties_call(value) or (isinstance(value, ast.Name) and value.id in self.cuda_properties)):
            return  # ascend_function.get_device_properties answers them
        if self._is_properties_call(value) or (isinstance(value, ast.Name) and value.id in self.properties):
            # the fields read on one line (`(p.major, p.minor) >= (8, 0)`) are one row
            read, row = self._fields_on_line.get(node.lineno, ({}, None))
            read[node.attr] = min(read.get(node.attr, node.col_offset), node.col_offset)
            fields = sorted(read, key=read.get)  # (in the order the line reads them)
            names = " or ".join(fields)
            finding = (f"device properties {', '.join('.' + field for field in fields)}",
                       f"torch_npu's device properties have no {names} (they hold name, total_memory and the NPU's "
                       "core counts): a CUDA compute capability or SM count means nothing on the NPU; decide with "
                       "torch_npu.npu.is_bf16_supported() or a fixed choice")
            if row is None:
                self._fields_on_line[node.lineno] = (read, len(self.view.findings))
                self.view.add(node, GPU_IDENTITY.code, Report.UNSUPPORTED, *finding)
            else:
                self.view.findings[row] = dataclasses.replace(self.view.findings[row], api=finding[0], tip=finding[1])
