"""A tensor made or cast to a data type the release's NPU cannot hold (NPU932): torch_npu's
releases for torch 2.6 and older have no ACL type for float8 (knowledge.npu_dtypes), so the
cast or the operator raises on the NPU.

Only a dtype that makes a tensor is a row: given to `dtype=`/`out_dtype=`, or to `.to()`,
`.view()`, `.type()`, directly, as one side of a conditional expression, through a variable
the file assigns it to (`FP8 = torch.float8_e4m3fn`), or to a function of the file that gives
that parameter to one of these (`_to_fp8(x, torch.float8_e4m3fn)`, whose body casts `x.to(dtype)`).  Comparing a tensor's dtype or reading
`torch.finfo` runs anywhere; a table of dtypes by name is read where it is used.
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional

from ...knowledge.apidata import torch_added_in
from ...knowledge.npu_dtypes import NPU_DTYPE_FROM, npu_lacks_dtype
from ...records.change import Report
from ...records.finding_kinds import NPU_DTYPE
from .view import FileView

TRIGGERS = (b"float8_",)

_DTYPE_KEYWORDS = frozenset({"dtype", "out_dtype"})
_CASTING_METHODS = frozenset({"to", "view", "type"})


def _casts(call: ast.Call) -> List[ast.AST]:
    """What `call` makes a tensor of: its dtype keywords, and the arguments of a casting method."""
    given = [keyword.value for keyword in call.keywords if keyword.arg in _DTYPE_KEYWORDS]
    if isinstance(call.func, ast.Attribute) and call.func.attr in _CASTING_METHODS:
        given.extend(call.args)
    return given


def _casting_parameters(function: ast.FunctionDef) -> Dict[object, str]:
    """The parameters of `function` that its body makes tensors of, by position and by name."""
    names = {node.id for call in ast.walk(function) if isinstance(call, ast.Call)
             for node in _casts(call) if isinstance(node, ast.Name)}
    positional = [*function.args.posonlyargs, *function.args.args]
    found: Dict[object, str] = {}
    for index, argument in enumerate(positional):
        if argument.arg in names:
            found[index] = found[argument.arg] = argument.arg
    for argument in function.args.kwonlyargs:
        if argument.arg in names:
            found[argument.arg] = argument.arg
    return found


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view
        self._version = view.api.version_tuple
        self._variables: Dict[str, str] = {}  # a name the file assigns a dtype the NPU lacks -> the dtype
        self._functions: Dict[str, Dict[object, str]] = {}  # the file's functions that cast with a parameter
        for function in (*view.groups.get(ast.FunctionDef, ()), *view.groups.get(ast.AsyncFunctionDef, ())):
            parameters = _casting_parameters(function)
            if parameters:
                self._functions[function.name] = parameters

    def _lacking(self, node: ast.AST) -> Optional[str]:
        """The dtype the NPU lacks that `node` gives, or None."""
        if isinstance(node, ast.IfExp):
            return self._lacking(node.body) or self._lacking(node.orelse)
        if isinstance(node, ast.Name) and node.id in self._variables:
            return self._variables[node.id]
        if isinstance(node, (ast.Attribute, ast.Name)):
            # (a dtype newer than the release's torch is a row of its own, NPU903)
            return next((name for name in sorted(self.view.qualified(node))
                         if npu_lacks_dtype(name, self._version)
                         and torch_added_in(name, self.view.api.torch_version) is None), None)
        return None

    def on_assign(self, assign: ast.Assign) -> None:
        dtype = self._lacking(assign.value)
        if dtype is not None:
            for target in assign.targets:
                if isinstance(target, ast.Name):
                    self._variables[target.id] = dtype

    def on_call(self, call: ast.Call) -> None:
        if self.view.npu_backend:
            return  # (the project's own NPU code chose its types for the NPU it targets)
        given = _casts(call)
        parameters = self._functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if parameters:
            given.extend(argument for index, argument in enumerate(call.args) if index in parameters)
            given.extend(keyword.value for keyword in call.keywords if keyword.arg in parameters)
        dtype = next(filter(None, map(self._lacking, given)), None)
        if dtype is not None:
            self.view.add(call, NPU_DTYPE.code, Report.UNSUPPORTED, dtype,
                          f"{self.view.release} has no NPU data type for {dtype} (torch_npu maps none to it "
                          + ("in any release" if NPU_DTYPE_FROM[dtype] is None else
                             "before its CANN 26 builds for torch 2.7.1")
                          + "): where the tensor is on the NPU it cannot be made or cast to it, the operator "
                          "raises (on the CPU it can); keep float8 off there (bfloat16), or migrate with a -v of "
                          "torch 2.7.1 or newer")
