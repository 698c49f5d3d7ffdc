"""What every rule is: a LibCST transformer with a stable code, a summary and examples.

A rule sees one file's tree, returns a new tree and records each edit it made (`Edit`, with the
line numbers of the tree it was given; the pipeline maps them back to the original file).  Rules
never print, never touch the disk and keep no state between files, so files can be migrated in any
order or in parallel.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, List, Optional, Sequence, Tuple

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from ..apidata import ApiData
from ..change import Finding, Operation, Report
from . import npu_aware


@dataclass(frozen=True)
class Example:
    """A before/after pair: documentation, and a test run by the suite.

    `after` is what the whole single-card migration makes of `before` (all rules, not only this
    one), because that is what a user sees.
    """

    before: str
    after: str


@dataclass
class Options:
    """Run-wide choices that rules read."""

    api: ApiData


@dataclass
class FileContext:
    """What a rule may know about the file being migrated, and what rules tell each other."""

    path: str
    options: Options
    # Set by rules that make the file depend on torch_npu at run time (read by ImportTorchNpu).
    needs_torch_npu: bool = False

    @property
    def api(self) -> ApiData:
        return self.options.api


@dataclass(frozen=True)
class Edit:
    """One recorded edit, in the line numbers of the tree the rule was given."""

    start_line: int
    end_line: int
    operation: Operation
    message: str


@dataclass
class RuleOutcome:
    module: cst.Module
    edits: List[Edit] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)


class Rule(m.MatcherDecoratableTransformer):
    """Base class of every rewrite rule.

    Subclasses set `code` (stable, shown in reports and `gpu2npu explain`), `summary`, `triggers`
    (substrings without which the rule cannot apply, so it is skipped cheaply) and `examples`.
    Inside an "NPU-aware" construct (code that already branches on NPU, see `npu_aware`) no rule
    changes anything: that code was written for both devices on purpose.
    """

    code: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    fix_safety: ClassVar[str] = "safe"
    triggers: ClassVar[Tuple[str, ...]] = ()
    examples: ClassVar[Tuple[Example, ...]] = ()
    # Sources this rule must leave exactly as they are.
    unchanged: ClassVar[Tuple[str, ...]] = ()

    METADATA_DEPENDENCIES: ClassVar[Sequence] = (PositionProvider,)

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context
        self.edits: List[Edit] = []
        self.findings: List[Finding] = []

    # -- running ---------------------------------------------------------------------------------
    @classmethod
    def wants(cls, source: str) -> bool:
        return not cls.triggers or any(trigger in source for trigger in cls.triggers)

    @classmethod
    def run(cls, module: cst.Module, context: FileContext) -> RuleOutcome:
        # The module is a fresh tree made by the previous step, so copying it again is waste.
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        rule = cls(context)
        new_module = wrapper.visit(rule)
        return RuleOutcome(new_module, rule.edits, rule.findings)

    def on_visit(self, node: cst.CSTNode) -> bool:
        visit_children = super().on_visit(node)
        if visit_children and npu_aware.is_npu_aware(node):
            return False
        return visit_children

    # -- recording -------------------------------------------------------------------------------
    def lines_of(self, original_node: cst.CSTNode) -> Tuple[int, int]:
        span = self.get_metadata(PositionProvider, original_node)
        return span.start.line, span.end.line

    def record(
        self,
        original_node: cst.CSTNode,
        message: str,
        operation: Operation = Operation.MODIFY,
    ) -> None:
        start, end = self.lines_of(original_node)
        self.edits.append(Edit(start, end, operation, message))

    def record_insert(self, after_line: int, message: str) -> None:
        self.edits.append(Edit(after_line, after_line, Operation.INSERT, message))

    def report(
        self,
        original_node: cst.CSTNode,
        report: Report,
        api: str,
        tip: str,
    ) -> None:
        start, end = self.lines_of(original_node)
        self.findings.append(Finding(self.context.path, start, end, report, api, tip, self.code))


def code_of(node: Optional[cst.CSTNode]) -> str:
    """Source text of an expression node, for messages."""
    if node is None:
        return ""
    return cst.Module(body=()).code_for_node(node)
