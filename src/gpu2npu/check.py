"""`gpu2npu check`: find CUDA-only code without writing anything (for CI and pre-commit).

A finding is either something the migration would change (each edit of a rule that replaces a
CUDA-only construct) or a CUDA construct the migration cannot change (unsupported on NPU), in the
code or in the dependency files (a CUDA-only package, a CUDA wheel index or base image).  Edits
that are advice rather than CUDA (a training DataLoader's drop_last) or consequences of others
(`import torch_npu`) are not findings, and neither is advice (api_performance_advice.csv,
affinity_api_call.csv): a faster NPU API is not a CUDA-only construct.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from . import scan
from .change import Operation, Report
from .dependencies import decide
from .dependencies.formats import SETUP_PY, dependency_format
from .catalogue import RuleEntry, rule_catalogue
from .discover import MIGRATED_KINDS, Entry, Kind, kind_of, walk
from .engine import Engine
from .results import Status
from .options import Options

# Rules whose edits do not mean "CUDA-only code is here".
NOT_FINDINGS = {"NPU001", "NPU201"}
# SARIF levels: what needs a human is the highest; what `gpu2npu` migrates by itself is below it.
MANUAL = "error"
FIXED_BY_MIGRATION = "warning"


@dataclass(frozen=True, order=True)
class CheckFinding:
    path: str
    start_line: int
    end_line: int
    rule: str
    message: str
    # "error": a human must act (no NPU equivalent: manual work, the highest level); "warning":
    # CUDA-only code the migration fixes by itself
    level: str


@dataclass
class CheckResult:
    findings: List[CheckFinding]
    files: int  # files checked
    unreadable: List[str]
    # files whose API calls and hazards were not looked at (this Python cannot parse them): "path:line: why"
    partly_checked: List[str] = dataclasses.field(default_factory=list)
    cache_problem: Optional[str] = None  # why the cache could not be used (the check went on without)
    # code -> what SARIF says of it (summary, help), when asked for
    descriptions: Dict[str, "Description"] = dataclasses.field(default_factory=dict)

    @property
    def files_with_findings(self) -> int:
        return len({finding.path for finding in self.findings})


def _checked_files(paths: Sequence[Path]) -> Iterable[Entry]:
    """The Python files, notebooks, launch scripts and dependency files under `paths`, each
    named as shown to the user (its `relative`); a file named on the command line is checked as
    Python unless it is a notebook, launch script or dependency file."""
    for path in paths:
        if path.is_file():
            kind = kind_of(path)
            if kind == Kind.OTHER and dependency_format(path.name) is not None:
                yield Entry(path.as_posix(), path, kind)
                continue
            yield Entry(path.as_posix(), path, kind if kind in MIGRATED_KINDS else Kind.PYTHON)
            continue
        for entry in walk(path):
            if entry.kind in MIGRATED_KINDS or (entry.kind == Kind.OTHER and dependency_format(entry.relative)):
                yield Entry((path / entry.relative).as_posix(), entry.absolute, entry.kind)


def check_paths(paths: Sequence[Path], options: Options, jobs: int = 1,
                cache_folder: Optional[Path] = None, describe: bool = False) -> CheckResult:
    """The findings of `paths`, computed as the migration computes its results (the same engine:
    `jobs` processes, the content-hash cache in `cache_folder`); with `describe`, the summary of
    every code a finding can carry too (SARIF lists them)."""
    findings: List[CheckFinding] = []
    unreadable: List[str] = []
    partly_checked: List[str] = []
    entries = list(_checked_files(paths))
    code = [entry for entry in entries if entry.kind in MIGRATED_KINDS]
    for entry in entries:
        form = dependency_format(entry.relative)
        if form is not None and (entry.kind == Kind.OTHER or form == SETUP_PY):
            problem = _dependency_findings(entry, form, options, findings)
            if problem:
                unreadable.append(problem)
    # the advice on faster NPU APIs is no finding: not looked for
    engine = Engine(dataclasses.replace(options, advice=False), jobs, cache_folder)
    try:
        for entry, result in engine.results(code):
            if result.status == Status.FAILED:
                unreadable.append(f"{entry.relative}: {result.error}")
                continue
            shown = entry.relative
            for change in result.changes:
                if change.rule not in NOT_FINDINGS:
                    findings.append(CheckFinding(shown, change.start_line, change.end_line, change.rule,
                                                 f"CUDA-only: {change.message}", FIXED_BY_MIGRATION))
            for finding in result.findings:
                if finding.api == scan.NOT_PARSED:
                    partly_checked.append(f"{shown}:{finding.start_line}: {finding.tip}")
                if finding.report == Report.UNSUPPORTED:
                    findings.append(CheckFinding(shown, finding.start_line, finding.end_line, finding.rule,
                                                 f"{finding.api} has no NPU equivalent: {finding.tip}", MANUAL))
        descriptions = rule_descriptions(rule_catalogue(engine.cache)) if describe else {}
    finally:
        engine.close()
    return CheckResult(sorted(set(findings)), len(entries), unreadable, partly_checked, engine.problem, descriptions)


# Dependency rules whose every edit removes or replaces something CUDA-only; a torch or
# torchvision pin is one only where it names a CUDA build (`+cu121`).
CUDA_DEPENDENCY_RULES = {decide.CUDA_ONLY_RULE, decide.TWIN_RULE, decide.INDEX_RULE, decide.CONDA_RULE, decide.DOCKER_RULE}
_CUDA_BUILD = re.compile(r"\+cu\d+|/whl/cu\d+")


def _dependency_findings(entry: Entry, form: str, options: Options, findings: List[CheckFinding]) -> Optional[str]:
    """CUDA-only packages, indexes, conda packages and images of a dependency file, read as the
    migration reads it but without a migration to ask who still imports a package."""
    from .dependencies import Context, load_table, migrate_dependencies

    try:
        text = entry.absolute.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return f"{entry.relative}: not read as UTF-8 text ({error})"
    lines = text.splitlines()
    outcome = migrate_dependencies(form, text, entry.relative, Context(options.api, load_table()))
    for change in outcome.changes:
        written = "\n".join(lines[change.start_line - 1:change.end_line])
        if change.operation == Operation.INSERT:  # (what the migration adds is no CUDA construct)
            continue
        if change.rule in CUDA_DEPENDENCY_RULES or _CUDA_BUILD.search(written):
            findings.append(CheckFinding(entry.relative, change.start_line, change.end_line, change.rule,
                                         f"CUDA-only: {change.message}", FIXED_BY_MIGRATION))
    for finding in outcome.findings:
        if finding.report == Report.UNSUPPORTED and finding.api != "--hash":
            findings.append(CheckFinding(entry.relative, finding.start_line, finding.end_line, finding.rule,
                                         f"{finding.api} has no NPU equivalent: {finding.tip}", MANUAL))
    return None


@dataclass(frozen=True)
class Description:
    """What SARIF's `driver.rules` say of a code: a line, and the help a reader of one result needs."""

    summary: str
    help: str


def rule_descriptions(rules: Dict[str, RuleEntry]) -> Dict[str, Description]:
    """Every code a finding of `check` can carry: the rules' (their documentation and first example)
    and the kinds of report rows that need a human (finding_kinds)."""
    from .finding_kinds import ERROR, KINDS

    descriptions = {code: Description(rule.summary, rule.description + (f"\n\n{rule.example}" if rule.example else ""))
                    for code, rule in rules.items() if code not in NOT_FINDINGS}
    for code, kind in KINDS.items():
        if kind.level == ERROR:
            example = f"\n\nExample:\n{kind.examples[0][0]}" if kind.examples else ""
            descriptions[code] = Description(kind.title, kind.description + example)
    return descriptions
