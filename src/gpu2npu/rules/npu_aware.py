"""Recognise code that already handles NPU, so that it is never migrated a second time.

A project that was made to run on both devices keeps its CUDA branch on purpose:

    if torch.npu.is_available():      # the NPU branch: migrated like any code (it runs on NPU)
        device = "npu"
    elif torch.cuda.is_available():   # a CUDA branch: left exactly as written
        device = "cuda"
    else:                             # after an NPU test: not taken on NPU, left as written
        device = "cpu"

On an Ascend machine such CUDA branches are not taken, so they are device-neutral.  A branch is
left alone when its test mentions CUDA but not NPU, when its test is a negated NPU test
(`if not is_npu:`, `if device != "npu":`), or when it is the `else` of a chain with an NPU test;
the branch an NPU test selects is migrated, since it runs on the NPU.  The same holds for `if`
statements beside one with an NPU test in the same block, and for conditional expressions
(`"npu" if npu_ok else "cuda"`).  Boolean expressions and collection literals that mention NPU
(`device in ("npu", "cuda")`) are left whole.  "Mentions NPU" means a name containing "npu" or
an "npu"/"hccl" string.

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


def _negated(test: cst.BaseExpression) -> bool:
    """`not <npu test>` or `x != "npu"`: the branch runs where there is no NPU."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.Comparison):
        return any(isinstance(c.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)) for c in test.comparisons)
    return False


def mentions_cuda(node: cst.CSTNode) -> bool:
    text = cst.Module(body=()).code_for_node(node).lower()
    return "cuda" in text or "nccl" in text


def _branches(node: cst.If):
    """(test, body) of each `if`/`elif` of a chain, and its final `else` (or None)."""
    branches = []
    current = node
    while True:
        branches.append((current.test, current.body))
        if isinstance(current.orelse, cst.If):
            current = current.orelse
            continue
        return branches, current.orelse


def is_npu_aware(node: cst.CSTNode) -> bool:
    """Whether `node` is a construct that chooses between NPU and other devices."""
    if isinstance(node, cst.If):
        return any(mentions_npu(test) for test, _ in _branches(node)[0])
    if isinstance(node, (cst.IfExp, cst.BooleanOperation)):
        return mentions_npu(node)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return any(_string_value(el.value) is not None and mentions_npu(el.value) for el in node.elements)
    return False


Span = Tuple[str, int, int]


class _Guards(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.spans: Set[Span] = set()
        self._elifs: Set[int] = set()  # `elif` nodes: handled with the head of their chain

    def _add(self, node: cst.CSTNode) -> None:
        position = self.get_metadata(PositionProvider, node)
        self.spans.add((type(node).__name__, position.start.line, position.end.line))

    def _guard_branch(self, test: cst.BaseExpression, body: cst.CSTNode) -> None:
        self._add(test)
        self._add(body)

    def _chain(self, node: cst.If) -> None:
        branches, orelse = _branches(node)
        npu_seen = False
        for test, body in branches:
            if mentions_npu(test):
                if _negated(test):
                    self._guard_branch(test, body)
                else:
                    npu_seen = True
                    self._add(test)  # the test itself is the project's NPU logic
            elif mentions_cuda(test):
                self._guard_branch(test, body)
        if npu_seen and isinstance(orelse, cst.Else):
            self._add(orelse)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))
        body = getattr(node, "body", None)
        if isinstance(node, (cst.Module, cst.IndentedBlock)) and isinstance(body, (list, tuple)):
            ifs = [statement for statement in body if isinstance(statement, cst.If)]
            if any(is_npu_aware(statement) for statement in ifs):
                for statement in ifs:
                    if not is_npu_aware(statement) and mentions_cuda(statement.test):
                        self._guard_branch(statement.test, statement.body)
        if isinstance(node, cst.If) and is_npu_aware(node) and id(node) not in self._elifs:
            self._chain(node)
        elif isinstance(node, cst.IfExp) and mentions_npu(node.test):
            self._add(node.test)
            self._add(node.body if _negated(node.test) else node.orelse)
        elif isinstance(node, (cst.BooleanOperation, cst.Tuple, cst.List, cst.Set)) and is_npu_aware(node):
            self._add(node)
            return False
        return True


def guarded_spans(wrapper: MetadataWrapper) -> FrozenSet[Span]:
    """(node type, first line, last line) of every node of the original file that is left as
    written because it only runs where there is no NPU (or is the project's own NPU test)."""
    guards = _Guards()
    wrapper.visit(guards)
    return frozenset(guards.spans)


def guarded_types(spans: FrozenSet[Span]) -> FrozenSet[str]:
    return frozenset(kind for kind, _, _ in spans)
