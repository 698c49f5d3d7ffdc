"""One launch file (shell script, Makefile, YAML job file) through the line rules.

Bytes in, `FileResult` out, never raising, like `pipeline.migrate_source`.  The text is decoded
as UTF-8 with surrogate escapes, so bytes that are not UTF-8 (a latin-1 comment) survive
untouched; line endings are split off before the rules see a line and put back after, so an
untouched line is byte-identical and a CRLF file stays CRLF.  A file holding NUL bytes is not a
text file: it is copied as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Type

from ..records.change import Change, Finding, Operation
from ..records.options import Options
from ..records.results import FileResult, Status
from ..script_rules import LAUNCH_SCRIPT_RULES, LineEdit, ScriptRule
from ..reading.shell_syntax import Dialect, ScannedLine, dialect_for, scan

ENCODING = ("utf-8", "surrogateescape")


@dataclass
class LineOutcome:
    """What the rules did to a run of lines: new texts and, per line index, the records."""

    lines: List[str]
    changes: List[Tuple[int, str, str]] = field(default_factory=list)  # (index, rule code, message)
    findings: List[Tuple[int, str, object]] = field(default_factory=list)  # (index, rule code, LineReport)


def apply_rules(line: ScannedLine, dialect: Dialect, rules: Sequence[Type[ScriptRule]]):
    """(new text, [(rule, message)], [(rule, LineReport)]) for one line: every rule sees the
    original line and the edits of all are applied together (overlaps: the first rule wins)."""
    edits: List[Tuple[LineEdit, str]] = []
    reports = []
    for rule in rules:
        if dialect not in rule.dialects or not rule.wants(line.code):
            continue
        rule_edits, rule_reports = rule.apply(line, dialect)
        edits.extend((edit, rule.code) for edit in rule_edits)
        reports.extend((rule.code, report) for report in rule_reports)
    kept: List[Tuple[LineEdit, str]] = []
    for edit, code in sorted(edits, key=lambda item: item[0].start):
        if not kept or edit.start >= kept[-1][0].end:
            kept.append((edit, code))
    text = line.text
    for edit, _ in reversed(kept):
        text = text[: edit.start] + edit.replacement + text[edit.end:]
    return text, [(code, edit.message) for edit, code in kept], reports


def rewrite_lines(lines: List[str], dialect: Dialect, rules: Sequence[Type[ScriptRule]] = LAUNCH_SCRIPT_RULES) -> LineOutcome:
    """Run the rules over `lines` (without line endings), one script."""
    outcome = LineOutcome(lines=[])
    for index, scanned in enumerate(scan(lines, dialect)):
        text, changes, reports = apply_rules(scanned, dialect, rules)
        outcome.lines.append(text)
        outcome.changes.extend((index, code, message) for code, message in changes)
        outcome.findings.extend((index, code, report) for code, report in reports)
    return outcome


def _split_ending(line: str) -> Tuple[str, str]:
    body = line.rstrip("\r\n")
    return body, line[len(body):]


def relevant(text: str, rules: Sequence[Type[ScriptRule]] = LAUNCH_SCRIPT_RULES) -> bool:
    return any(rule.wants(text) and rule.triggers for rule in rules)


def migrate_script(data: bytes, path: str, dialect: Optional[Dialect] = None,
                   options: Optional[Options] = None) -> FileResult:
    """`options`: the run's, where the rules read what the project decides (ScriptRule.for_project)."""
    dialect = dialect or dialect_for(path)
    if dialect is None or b"\0" in data:
        return FileResult(path, Status.SKIPPED)
    text = data.decode(*ENCODING)
    if not relevant(text):
        return FileResult(path, Status.SKIPPED)
    pieces = [_split_ending(line) for line in text.splitlines(keepends=True)]
    rules = [rule.for_project(options) for rule in LAUNCH_SCRIPT_RULES] if options is not None else LAUNCH_SCRIPT_RULES
    outcome = rewrite_lines([body for body, _ in pieces], dialect, rules)
    changes = [Change(path, index + 1, index + 1, Operation.MODIFY, code, message)
               for index, code, message in outcome.changes]
    findings = sorted({Finding(path, index + 1, index + 1, report.report, report.api, report.tip, report.kind or code)
                       for index, code, report in outcome.findings})
    if not changes:
        return FileResult(path, Status.UNCHANGED, findings=findings)
    new_text = "".join(body + ending for body, (_, ending) in zip(outcome.lines, pieces))
    return FileResult(path, Status.MIGRATED, new_text.encode(*ENCODING), changes, findings)
