"""What a launch-script rule is: a line rewrite with a stable code, a summary and examples.

Shell scripts, Makefiles and YAML job files are not parsed into trees: the same few variables,
commands and options appear in all of them, and a line-based rewrite that knows where code ends
(see `shell_syntax`) keeps every other byte as it was.  A rule looks at one scanned line and
returns the edits it would make (spans of the line and their replacement) and what it reports;
it never sees other lines and keeps no state, like the Python rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Dict, FrozenSet, List, Optional, Tuple, Type

from ..knowledge import env_vars
from ..records.change import Report
from ..records.finding_kinds import LEFT_ON_PURPOSE
from ..records.options import Options
from ..rules.base import Example
from ..reading.shell_syntax import Dialect, ScannedLine

ALL_DIALECTS = frozenset(Dialect)


@dataclass(frozen=True)
class ScriptExample(Example):
    """A before/after pair for a launch file (`path` says which kind: train.sh, Makefile,
    job.yaml) or, for `.ipynb`, the source of one code cell of a notebook.  `reported` names
    what the example must put in a report (the OP column)."""

    path: str = "train.sh"
    reported: Tuple[str, ...] = ()


@dataclass(frozen=True)
class LineEdit:
    start: int
    end: int
    replacement: str
    message: str


@dataclass(frozen=True)
class LineReport:
    report: Report
    api: str
    tip: str
    # the finding kind's code where the Python code's same finding has one (NPU927): else the rule's
    kind: Optional[str] = None


def kept_variable(name: str, tip: str, project_reads: Dict[str, str]) -> LineReport:
    """The row of an environment variable a script sets that stays: reported with `tip`, or noted
    where a file of the project reads it (Options.environment_reads): it has its effect on that code."""
    note = env_vars.kept_for_project(name, project_reads)
    if note is not None:
        return LineReport(Report.NOTE, name, note, LEFT_ON_PURPOSE.code)
    return LineReport(Report.UNSUPPORTED, name, tip)


LITERAL_TIP = "left as written inside a single-quoted string or here-document: change it by hand if it reaches the Ascend runtime"


class ScriptRule:
    """Base class of the launch-script and notebook-magic rules (codes NPU5xx and NPU6xx)."""

    code: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    fix_safety: ClassVar[str] = "safe"
    dialects: ClassVar[FrozenSet[Dialect]] = ALL_DIALECTS
    triggers: ClassVar[Tuple[str, ...]] = ()
    examples: ClassVar[Tuple[ScriptExample, ...]] = ()
    unchanged: ClassVar[Tuple[str, ...]] = ()  # shell sources on which the rule makes no edit
    # the finding kinds (records.finding_kinds) its reports are rows of, where not its own code
    finding_kinds: ClassVar[Tuple[str, ...]] = ()

    @classmethod
    def wants(cls, text: str) -> bool:
        return not cls.triggers or any(trigger in text for trigger in cls.triggers)

    @classmethod
    def apply(cls, line: ScannedLine, dialect: Dialect) -> Tuple[List[LineEdit], List[LineReport]]:
        raise NotImplementedError

    @classmethod
    def for_project(cls, options: Options) -> Type["ScriptRule"]:
        """The rule as it applies with the run's options (what the project's Python code and
        dependency files decide: Options.backend_options_kept, Options.transformers): itself,
        unless what it does depends on them."""
        return cls

    @classmethod
    def with_settings(cls, **settings) -> Type["ScriptRule"]:
        """The rule with these class attributes set: what for_project returns where options matter."""
        return type(cls.__name__, (cls,), {"__doc__": cls.__doc__, **settings})


def code_matches(pattern: "re.Pattern", line: ScannedLine):
    """(match, literal) for every match of `pattern` in the code part of `line`; `literal` is
    True when the match starts inside a single-quoted string or a here-document."""
    for match in pattern.finditer(line.code):
        yield match, line.in_literal(match.start())


PREFIX_COMMANDS = ("sudo", "time", "nohup", "exec", "env", "watch", "timeout", "stdbuf", "command")
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=\S*$")


def in_command_position(line: ScannedLine, start: int, dialect: Dialect) -> bool:
    """Whether the word at `start` is the command being run: first on its line or after a
    separator, possibly after variable assignments and wrappers (`sudo`, `watch -n 1`, ...)."""
    before = line.text[:start]
    cut = 0
    for match in re.finditer(r";|&&|\|\||\||&|\(|`|\$\(|\{|\b(then|do|else)\b", before):
        cut = match.end()
    segment = before[cut:]
    if dialect == Dialect.YAML and cut == 0:
        lead = re.match(r"^\s*(-\s+)?([\w.-]+:\s+)?(-\s+)?[\[\"',]?", segment)
        segment = segment[lead.end():]
    if dialect == Dialect.MAKE and cut == 0:
        segment = segment.lstrip("\t@-+")
    words = segment.split()
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    if not words:
        return True
    return words[0] in PREFIX_COMMANDS and all(w.startswith("-") or w.isdigit() or w in PREFIX_COMMANDS for w in words)


def option_values(pattern: "re.Pattern", line: ScannedLine, reports: List[LineReport]):
    """The matches of `pattern` (with `name` and `separator` groups) in the code of `line` that give
    an option its value (option_syntax); one inside single-quoted text or a here-document is
    reported in `reports` (LITERAL_TIP) and skipped."""
    for match, literal in code_matches(pattern, line):
        if not option_syntax(match):
            continue  # (`--backend: nccl`, prose)
        if literal:
            reports.append(LineReport(Report.UNSUPPORTED, match.group(0), LITERAL_TIP))
            continue
        yield match


def option_syntax(match: "re.Match") -> bool:
    """`--name value`, `name=value` or a YAML `name: value`; not prose such as `on device cuda`."""
    name, separator = match.group("name"), match.group("separator").strip()
    if separator == "=":
        return True
    if separator == ":":
        return name[0].isalpha()
    return name.startswith("-")
