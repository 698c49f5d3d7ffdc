"""`gpu2npu check`: find CUDA-only code without writing anything (for CI and pre-commit).

A finding is either something the migration would change (each edit of a rule that replaces a
CUDA-only construct) or a CUDA construct the migration cannot change (unsupported on NPU).  Edits
that are advice rather than CUDA (a training DataLoader's drop_last) or consequences of others
(`import torch_npu`) are not findings, and neither is advice (api_performance_advice.csv,
affinity_api_call.csv): a faster NPU API is not a CUDA-only construct.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from .change import Report
from .discover import Entry, Kind, kind_of, walk
from .engine import Engine
from .pipeline import Status
from .rules import Options
from .sources import ALL_RULES_BY_CODE, MIGRATED_KINDS

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
    cache_problem: Optional[str] = None  # why the cache could not be used (the check went on without)


def _checked_files(paths: Sequence[Path]) -> Iterable[Entry]:
    """The Python files, notebooks and launch scripts under `paths`, each named as shown to the
    user (its `relative`); a file named on the command line is checked as Python unless it is a
    notebook or launch script."""
    for path in paths:
        if path.is_file():
            kind = kind_of(path)
            yield Entry(path.as_posix(), path, kind if kind in MIGRATED_KINDS else Kind.PYTHON)
            continue
        for entry in walk(path):
            if entry.kind in MIGRATED_KINDS:
                yield Entry((path / entry.relative).as_posix(), entry.absolute, entry.kind)


def check_paths(paths: Sequence[Path], options: Options, jobs: int = 1,
                cache_folder: Optional[Path] = None) -> CheckResult:
    """The findings of `paths`, computed as the migration computes its results (the same engine:
    `jobs` processes, the content-hash cache in `cache_folder`)."""
    findings: List[CheckFinding] = []
    unreadable: List[str] = []
    entries = list(_checked_files(paths))
    # the advice on faster NPU APIs is no finding: not looked for
    engine = Engine(dataclasses.replace(options, advice=False), jobs, cache_folder)
    try:
        for entry, result in engine.results(entries):
            if result.status == Status.FAILED:
                unreadable.append(f"{entry.relative}: {result.error}")
                continue
            shown = entry.relative
            for change in result.changes:
                if change.rule not in NOT_FINDINGS:
                    findings.append(CheckFinding(shown, change.start_line, change.end_line, change.rule,
                                                 f"CUDA-only: {change.message}", "error"))
            for finding in result.findings:
                if finding.report == Report.UNSUPPORTED:
                    findings.append(CheckFinding(shown, finding.start_line, finding.end_line, UNSUPPORTED_RULE,
                                                 f"{finding.api} has no NPU equivalent: {finding.tip}", "warning"))
    finally:
        engine.close()
    return CheckResult(sorted(set(findings)), len(entries), unreadable, engine.problem)


def rule_descriptions() -> dict:
    descriptions = {code: rule.summary for code, rule in ALL_RULES_BY_CODE.items() if code not in NOT_FINDINGS}
    descriptions[UNSUPPORTED_RULE] = "CUDA construct with no NPU equivalent for the chosen torch_npu release"
    return descriptions
