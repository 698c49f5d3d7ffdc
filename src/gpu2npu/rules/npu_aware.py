"""Recognise code that already handles NPU, so that it is never migrated a second time.

A project that was made to run on both devices keeps its CUDA branch on purpose:

    if torch.npu.is_available():      # NPU-aware: left exactly as written
        device = "npu"
    elif torch.cuda.is_available():
        device = "cuda"

On an Ascend machine `torch.cuda.is_available()` is False, so such a CUDA branch is dead code there
and device-neutral.  Constructs that mention NPU (a name containing "npu", an "npu"/"hccl" string)
in an `if`/`elif` test, a conditional expression, a boolean expression or a collection literal are
treated as NPU-aware as a whole, and so are the `if` statements beside an NPU-aware one in the
same block (`if device == "npu": ...` followed by `if device == "cuda": ...`).

The decision is made once, on the original file (`guarded_spans`): what the rules write
themselves ("npu", torch_npu.npu) must not make later rules believe the user wrote it.
"""
from __future__ import annotations

import re
from typing import FrozenSet, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

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


GUARD_TYPES = (cst.If, cst.IfExp, cst.BooleanOperation, cst.Tuple, cst.List, cst.Set)
Span = Tuple[str, int, int]


def mentions_cuda(node: cst.CSTNode) -> bool:
    text = cst.Module(body=()).code_for_node(node).lower()
    return "cuda" in text or "nccl" in text


class _Guards(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.spans: Set[Span] = set()

    def _add(self, node: cst.CSTNode) -> None:
        position = self.get_metadata(PositionProvider, node)
        self.spans.add((type(node).__name__, position.start.line, position.end.line))

    def on_visit(self, node: cst.CSTNode) -> bool:
        body = getattr(node, "body", None)
        if isinstance(node, (cst.Module, cst.IndentedBlock)) and isinstance(body, (list, tuple)):
            ifs = [statement for statement in body if isinstance(statement, cst.If)]
            if any(is_npu_aware(statement) for statement in ifs):
                for statement in ifs:
                    if mentions_cuda(statement.test):
                        self._add(statement)
        if isinstance(node, GUARD_TYPES) and is_npu_aware(node):
            self._add(node)
            return False
        return True


def guarded_spans(wrapper: MetadataWrapper) -> FrozenSet[Span]:
    """(node type, first line, last line) of every NPU-aware construct of the original file."""
    guards = _Guards()
    wrapper.visit(guards)
    return frozenset(guards.spans)
