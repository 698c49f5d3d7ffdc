"""Recognise code that already handles NPU, so that it is never migrated a second time.

A project that was made to run on both devices keeps its CUDA branch on purpose:

    if torch.npu.is_available():      # NPU-aware: left exactly as written
        device = "npu"
    elif torch.cuda.is_available():
        device = "cuda"

On an Ascend machine `torch.cuda.is_available()` is False, so such a CUDA branch is dead code there
and device-neutral.  Constructs that mention NPU (a name containing "npu", an "npu"/"hccl" string)
in an `if`/`elif` test, a conditional expression, a boolean expression or a collection literal are
treated as NPU-aware as a whole.
"""
from __future__ import annotations

import re

import libcst as cst

_NPU_STRING = re.compile(r"^(npu(:.*)?|hccl|HCCL)$")


def _string_value(node: cst.CSTNode):
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes: not something we can judge
            return None
        return value if isinstance(value, str) else None
    return None


class _MentionsNpu(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        if "npu" in node.value.lower():
            self.found = True
        return False

    def visit_SimpleString(self, node: cst.SimpleString) -> bool:
        value = _string_value(node)
        if value is not None and _NPU_STRING.match(value.strip()):
            self.found = True
        return False

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> bool:
        if node.value.startswith("npu"):
            self.found = True
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not self.found and super().on_visit(node)


def mentions_npu(node: cst.CSTNode) -> bool:
    finder = _MentionsNpu()
    node.visit(finder)
    return finder.found


def _if_chain_tests(node: cst.If):
    current = node
    while isinstance(current, cst.If):
        yield current.test
        current = current.orelse.body if isinstance(current.orelse, cst.Else) else current.orelse
        if not isinstance(current, cst.If):
            return


def is_npu_aware(node: cst.CSTNode) -> bool:
    """Whether `node` is a construct that already chooses between NPU and other devices."""
    if isinstance(node, cst.If):
        return any(mentions_npu(test) for test in _if_chain_tests(node))
    if isinstance(node, (cst.IfExp, cst.BooleanOperation)):
        return mentions_npu(node)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return any(_string_value(el.value) is not None and mentions_npu(el.value) for el in node.elements)
    return False
