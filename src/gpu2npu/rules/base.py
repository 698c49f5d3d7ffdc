"""What every rule is: a LibCST transformer with a stable code, a summary and examples.

A rule sees one file's tree, returns a new tree and records each edit it made (`Edit`, with the
line numbers of the tree it was given; the pipeline maps them back to the original file).  Rules
never print, never touch the disk and keep no state between files, so files can be migrated in any
order or in parallel.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ClassVar, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge.apidata import ApiData
from ..records.options import DistributedSettings, Options, SpecifyDeviceSettings
from ..records.change import Finding, Operation, Report
from . import npu_aware
from .node_set import NodeSet

if TYPE_CHECKING:
    from ..records.rule_file import CustomRules
    from ..reading.scopes import Scopes


@dataclass(frozen=True)
class Example:
    """A before/after pair: documentation, and a test run by the suite.

    `after` is what the whole migration makes of `before` (all rules, not only this one),
    because that is what a user sees: the single-card migration, `distributed` when
    `distributed` is given (the example file is then the main file), `-s` when
    `specify_device` is, `-r` with these rules when `custom_rules` is, `-m` when `modelarts` is.
    """

    before: str
    after: str
    distributed: Optional["DistributedSettings"] = None
    specify_device: Optional["SpecifyDeviceSettings"] = None
    custom_rules: Optional["CustomRules"] = None
    modelarts: bool = False
    amp_model: Optional[str] = None  # `-a MODEL_VAR`
    similar: bool = False  # `-sim`
    transformers: Optional[str] = None  # the transformers requirement the project pins


@dataclass
class FileContext:
    """What a rule may know about the file being migrated, and what rules tell each other."""

    path: str
    options: Options
    # NPU-aware constructs of the original file, as (node type, first line, last line).
    guarded: FrozenSet = frozenset()
    # Device tests left as written because they guard CUDA-only code (device_guards): the
    # test's span -> the DeadGuard to report; the spans of the code they guard -> None.
    dead_guards: Dict = field(default_factory=dict)
    # A framework's CUDA implementations of a device interface, left whole (cuda_implementations):
    # the class's span -> what the note about it says.
    cuda_implementations: Dict = field(default_factory=dict)
    # Maps a line of the tree a rule is given back to the original file.
    original_line: Callable[[int], int] = lambda line: line
    # Set by rules that make the file depend on torch_npu at run time (read by ImportTorchNpu).
    needs_torch_npu: bool = False
    # Statements that rules inserted, and original statements they removed (see
    # placement.pair_with_originals).
    inserted: NodeSet = field(default_factory=NodeSet)
    removed: NodeSet = field(default_factory=NodeSet)
    # ids of original nodes a rule takes whole (its code): the other rules leave them alone, so
    # that two rules never rewrite the same construct two ways (see apex_amp).
    claimed: Dict[int, str] = field(default_factory=dict)
    # Local name -> qualified names, from the imports of the tree the rules are given
    # (names.ImportAliases); None: resolve names with libcst's scope analysis.
    import_aliases: Optional[Dict[str, Set[str]]] = None
    # What the names whose meaning depends on the place stand for where they are read, in the
    # tree the rules are given (scopes.Scopes); None: none does.
    scopes: Optional["Scopes"] = None
    # Rule code -> the reroute.ReroutePlan of the file, for the rules that point a CUDA-only
    # package's imports at a generated package (made once, before the rules run).
    reroute_plans: Dict[str, object] = field(default_factory=dict)
    # Rule code -> (first line of its rewritten imports, generated package, what it is), for the
    # rules that put the output's top folder on sys.path: one line, before the first of them all.
    top_folder_users: Dict[str, Tuple[int, str, str]] = field(default_factory=dict)
    # What the whole file says (file_facts.FileFacts), as the pipeline read it for every file;
    # None: rules run on a tree alone (read from it where a rule asks, names.file_facts).
    file_facts: Optional[object] = None

    def __post_init__(self) -> None:
        self.guarded_types = npu_aware.guarded_types(self.guarded)
        # The analysis reads the output, whose columns moved: it knows guarded nodes by lines.
        self.guarded_lines = {(kind, start, end) for kind, start, _, end, _ in self.guarded}
        self.cuda_implementations_by_lines = {(kind, start, end): what for (kind, start, _, end, _), what
                                              in self.cuda_implementations.items()}
        # A test and the code it guards on one line, of one type (`torch.cuda.get_device_name() if
        # torch.cuda.is_available() else "cpu"`), share their key: the test's guard is kept, and the
        # key is in shared_guard_lines, for the analysis to tell the two apart by their places.
        self.dead_guards_by_lines = {}
        self.shared_guard_lines = set()
        for (kind, start, _, end, _), guard in self.dead_guards.items():
            key = (kind, start, end)
            if key in self.dead_guards_by_lines and (self.dead_guards_by_lines[key] is None) != (guard is None):
                self.shared_guard_lines.add(key)
            if guard is not None or key not in self.dead_guards_by_lines:
                self.dead_guards_by_lines[key] = guard

    def might_be_guarded(self, node: cst.CSTNode) -> bool:
        return type(node).__name__ in self.guarded_types

    def is_guarded(self, node: cst.CSTNode, position) -> bool:
        """For the rules: `position` is the node's in the tree the guards were found in."""
        return npu_aware.span_of(position, node) in self.guarded

    def lines_key(self, node: cst.CSTNode, start: int, end: int):
        """For the analysis: the node by type and original lines."""
        return (type(node).__name__, self.original_line(start), self.original_line(end))

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
    # The text the edit put into the tree (see batch.written_fragment); "" for a deletion.
    wrote: str = field(default="", compare=False)
    # The code of the kind of edit (`Rule.recorded_by`) where it is not the rule's own.
    code: str = ""


@dataclass
class RuleOutcome:
    module: cst.Module
    edits: List[Edit] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)


class Rule(cst.CSTTransformer):
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
    # Sources on which this rule must make no edit (other rules may).
    unchanged: ClassVar[Tuple[str, ...]] = ()
    # A kind of edit that another rule makes, declared like a rule so that it has a code, a
    # summary, a description and examples of its own (`gpu2npu rules`, `explain`, SARIF, the
    # example tests): the rule whose code is named here finds and rewrites its constructs in its
    # own walk and records them under this code (`record(..., kind=...)`); such a class is never
    # run itself.  (torch.cuda's random, memory, stream and amp APIs are kinds of NPU101's edit:
    # one walk resolves every torch.cuda name, and each kind is reviewed differently.)
    recorded_by: ClassVar[str] = ""

    METADATA_DEPENDENCIES: ClassVar[Sequence] = (PositionProvider,)

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context
        self.edits: List[Edit] = []
        self.findings: List[Finding] = []

    @property
    def import_aliases(self) -> Optional[Dict[str, Set[str]]]:
        return self.context.import_aliases

    @property
    def scopes(self) -> Optional["Scopes"]:
        return self.context.scopes

    # -- running ---------------------------------------------------------------------------------
    @classmethod
    def wants(cls, source: str) -> bool:
        return not cls.triggers or any(trigger in source for trigger in cls.triggers)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.context.claimed.get(id(node), self.code) != self.code:
            self._guarded_node = node  # another rule replaces this node whole
            return False
        visit_children = super().on_visit(node)
        if visit_children and self.context.might_be_guarded(node):
            if self.context.is_guarded(node, self.get_metadata(PositionProvider, node)):
                self._guarded_node = node
                return False
        return visit_children

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        # A guarded node is left as written: not even its own leave_ method runs.
        if original_node is getattr(self, "_guarded_node", None):
            self._guarded_node = None
            return updated_node
        return super().on_leave(original_node, updated_node)

    # -- recording -------------------------------------------------------------------------------
    def lines_of(self, original_node: cst.CSTNode) -> Tuple[int, int]:
        span = self.get_metadata(PositionProvider, original_node)
        return span.start.line, span.end.line

    def record(
        self,
        original_node: cst.CSTNode,
        message: str,
        operation: Operation = Operation.MODIFY,
        kind: Optional[Type["Rule"]] = None,
    ) -> None:
        """`kind`: the kind of edit (a class whose `recorded_by` is this rule's code) where the
        edit is one of a kind with a code of its own."""
        assert kind is None or kind.recorded_by == self.code, kind
        start, end = self.lines_of(original_node)
        self.edits.append(Edit(start, end, operation, message, code=kind.code if kind is not None else ""))

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
