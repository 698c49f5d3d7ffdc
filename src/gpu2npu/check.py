"""`gpu2npu check`: find CUDA-only code without writing anything (for CI and pre-commit).

A finding is either something the migration would change (each edit of a rule that replaces a
CUDA-only construct) or a CUDA construct the migration cannot change (unsupported on NPU).  Edits
that are advice rather than CUDA (a training DataLoader's drop_last) or consequences of others
(`import torch_npu`) are not findings, and neither is advice (api_performance_advice.csv,
affinity_api_call.csv): a faster NPU API is not a CUDA-only construct.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Sequence

from .change import Report
from .discover import Kind, kind_of, walk
from .pipeline import Status
from .rules import Options
from .sources import ALL_RULES_BY_CODE, MIGRATED_KINDS, migrate_file

# Rules whose edits do not mean "CUDA-only code is here".
NOT_FINDINGS = {"NPU001", "NPU201"}
UNSUPPORTED_RULE = "NPU900"


@dataclass(frozen=True, order=True)
class CheckFinding:
    path: str
    start_line: int
    end_line: int
    rule: str
    message: str
    level: str  # "error": CUDA-only code the migration fixes; "warning": no NPU equivalent


@dataclass
class CheckResult:
    findings: List[CheckFinding]
    files: int
    unreadable: List[str]


def _checked_files(paths: Sequence[Path]) -> Iterable[tuple]:
    """(absolute path, shown path, kind) of the Python files, notebooks and launch scripts; a
    file named on the command line is checked as Python unless it is a notebook or launch script."""
    for path in paths:
        if path.is_file():
            kind = kind_of(path)
            yield path, path.as_posix(), kind if kind in MIGRATED_KINDS else Kind.PYTHON
            continue
        for entry in walk(path):
            if entry.kind in MIGRATED_KINDS:
                yield entry.absolute, (path / entry.relative).as_posix(), entry.kind


def check_paths(paths: Sequence[Path], options: Options) -> CheckResult:
    findings: List[CheckFinding] = []
    unreadable: List[str] = []
    files = 0
    for absolute, shown, kind in _checked_files(paths):
        files += 1
        try:
            data = absolute.read_bytes()
        except OSError as error:
            unreadable.append(f"{shown}: {error.strerror or error}")
            continue
        result = migrate_file(kind, data, shown, options)
        if result.status == Status.FAILED:
            unreadable.append(f"{shown}: {result.error}")
            continue
        for change in result.changes:
            if change.rule not in NOT_FINDINGS:
                findings.append(CheckFinding(shown, change.start_line, change.end_line, change.rule,
                                             f"CUDA-only: {change.message}", "error"))
        for finding in result.findings:
            if finding.report == Report.UNSUPPORTED:
                findings.append(CheckFinding(shown, finding.start_line, finding.end_line, UNSUPPORTED_RULE,
                                             f"{finding.api} has no NPU equivalent: {finding.tip}", "warning"))
    return CheckResult(sorted(set(findings)), files, unreadable)


def rule_descriptions() -> dict:
    descriptions = {code: rule.summary for code, rule in ALL_RULES_BY_CODE.items() if code not in NOT_FINDINGS}
    descriptions[UNSUPPORTED_RULE] = "CUDA construct with no NPU equivalent for the chosen torch_npu release"
    return descriptions
