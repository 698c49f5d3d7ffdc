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
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ..findings.affinity import ADVICE
from ..records.change import Operation, Report
from ..dependencies import decide
from ..reading.dependency_files import SETUP_PY, dependency_format
from ..reports.catalogue import RuleEntry, rule_catalogue
from ..reading.discover import MIGRATED_KINDS, Entry, Kind, kind_of, modules_in, project_modules, walk
from ..migration.engine import Engine
from ..records.finding_kinds import ERROR, KINDS, NOT_ANALYSED, NOT_MIGRATED, UNUSED_SUPPRESSION
from ..records.options import Options
from ..records.project_config import NO_TABLE, ConfigError, ProjectConfig, selector_matches, unknown_selectors
from ..records.results import FileResult
from ..reading.suppressions import Suppression, cell_of, suppressions_in

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
    cell: int = 0  # the notebook cell its lines are of (0: not a notebook)
    subject: str = ""  # the report row's OP (the API) where it comes from one


@dataclass
class CheckResult:
    findings: List[CheckFinding]
    files: int  # files checked
    suppressed: int = 0  # findings silenced by `# gpu2npu: ignore` comments
    ignored: int = 0  # findings of codes the configuration ignores (ignore, per-file-ignores)
    excluded: int = 0  # files the configuration excludes
    skipped: List[str] = dataclasses.field(default_factory=list)  # files named that are of no kind gpu2npu reads
    cache_problem: Optional[str] = None  # why the cache could not be used (the check went on without)
    # code -> what SARIF says of it (summary, help), when asked for
    descriptions: Dict[str, "Description"] = dataclasses.field(default_factory=dict)
    # A kind of edit's code -> the code of the rule that records it, which named such findings
    # before (a suppression, --ignore or baseline entry of that code still covers them).
    recorded_by: Dict[str, str] = dataclasses.field(default_factory=dict)


# The kinds that say a file was not (or only partly) looked at: the check did not succeed there.
NOT_LOOKED_AT = {NOT_MIGRATED.code, NOT_ANALYSED.code}


# Folders of tools and environments that a project's checkout may hold and that are not its code
# (as ruff leaves them out): never walked into.  A folder holding pyvenv.cfg is a virtual
# environment, whatever its name.
TOOLING_FOLDERS = frozenset({".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".direnv", ".eggs", "node_modules",
                             "__pycache__", "__pypackages__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                             "site-packages", "dist-packages"})


def _tooling(name: str, path: str) -> bool:
    return name in TOOLING_FOLDERS or os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _is_read(kind: Kind, relative: str) -> bool:
    """Whether check reads a file of this kind and path: code, notebooks, launch scripts, dependency files."""
    return kind in MIGRATED_KINDS or (kind == Kind.OTHER and dependency_format(relative) is not None)


def _named_kind(path: Path) -> Optional[Kind]:
    """How a file named on the command line is read (as `check .` would read it); None: it is
    not a kind gpu2npu reads (a README), except a script whose first line runs Python."""
    kind = kind_of(path)
    if _is_read(kind, path.as_posix()):
        return kind
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return Kind.PYTHON  # (reading it fails again, as a finding)
    return Kind.PYTHON if first.startswith(b"#!") and b"python" in first else None


def _checked_files(paths: Sequence[Path], skipped: Optional[List[str]] = None) -> Iterable[Entry]:
    """The Python files, notebooks, launch scripts and dependency files under `paths`, each
    named as shown to the user (its `relative`); a file named on the command line is read as
    `check .` reads it, and one of no kind gpu2npu reads is added to `skipped`."""
    for path in paths:
        if path.is_file():
            kind = _named_kind(path)
            if kind is None:
                if skipped is not None:
                    skipped.append(path.as_posix())
                continue
            yield Entry(path.as_posix(), path, kind)
            continue
        for entry in walk(path, prune=_tooling):
            if _is_read(entry.kind, entry.relative):
                yield Entry((path / entry.relative).as_posix(), entry.absolute, entry.kind)


def _modules_of(paths: Sequence[Path], entries: Sequence[Entry]) -> FrozenSet[str]:
    """The top-level modules that the folders among `paths` make importable (project_modules);
    for a file among them, those of the folder it is checked from and of its own folder."""
    found: Set[str] = set()
    for path in paths:
        if path.is_file():  # (run from the project's root, as `check .` would read it, or as a script)
            found |= modules_in((Path.cwd(), Path.cwd() / "src", path.parent))
            continue
        prefix = "" if path.as_posix() == "." else path.as_posix().rstrip("/") + "/"
        found |= project_modules(dataclasses.replace(entry, relative=entry.relative[len(prefix):])
                                 for entry in entries if entry.relative.startswith(prefix))
    return frozenset(found)


def _as_projects(paths: Sequence[Path], entries: Sequence[Entry]) -> List[List[Tuple[Entry, Entry]]]:
    """The entries of each folder among `paths`, as a project of their own, each as (the entry as
    shown, the entry named within its folder): what a file's modules are called, and so which
    kernels, launchers and backend names its imports bring from the project's other files, is
    read as the migration of that folder reads it (`check /abs/repo` answers as `check .` in it).
    The files named on the command line make one more, named as given (with the current folder's,
    where `.` is checked too)."""
    projects: Dict[str, List[Tuple[Entry, Entry]]] = {}
    prefixes = ["" if path.as_posix() == "." else path.as_posix().rstrip("/") + "/" for path in paths if not path.is_file()]
    for entry in entries:
        prefix = next((prefix for prefix in prefixes if entry.relative.startswith(prefix)), None)
        inside = entry if prefix is None else dataclasses.replace(entry, relative=entry.relative[len(prefix):])
        projects.setdefault(prefix or "", []).append((entry, inside))
    return list(projects.values())


def check_paths(paths: Sequence[Path], options: Options, jobs: int = 1,
                cache_folder: Optional[Path] = None, describe: bool = False,
                config: Optional[ProjectConfig] = None) -> CheckResult:
    """The findings of `paths`, computed as the migration computes its results (the same engine:
    `jobs` processes, the content-hash cache in `cache_folder`), less what `config` excludes or
    ignores and what `# gpu2npu: ignore` comments silence; with `describe`, the summary of every
    code a finding can carry too (SARIF lists them)."""
    config = config or NO_TABLE
    skipped: List[str] = []
    entries = list(_checked_files(paths, skipped))
    kept = [entry for entry in entries if not config.excluded(entry.absolute)]
    files: List[Tuple[Entry, List[CheckFinding], Tuple[Suppression, ...]]] = []
    code = [entry for entry in kept if entry.kind in MIGRATED_KINDS]
    for entry in kept:
        form = dependency_format(entry.relative)
        if form is not None and (entry.kind == Kind.OTHER or form == SETUP_PY):
            files.append((entry, *_dependency_findings(entry, form, options)))
    # the advice on faster NPU APIs is no finding: not looked for; the project's modules are
    # those of each folder checked (the entries are named from the command line's paths)
    engine = Engine(dataclasses.replace(options, advice=False, project_modules=_modules_of(paths, code)), jobs,
                    cache_folder)
    try:
        rules = rule_catalogue(engine.cache)
        recorded_by = {code: entry.recorded_by for code, entry in rules.items() if entry.recorded_by}
        known = set(rules) | set(KINDS) | set(ADVICE)
        for where, selector in config.selectors():  # (before any file is checked)
            if unknown_selectors([selector], known):
                source = f"{config.source}: [tool.gpu2npu] {where}" if config.source else "--ignore"
                raise ConfigError(f"{source}: {selector} is no code that gpu2npu reports (`gpu2npu rules` lists them)")
        for project in _as_projects(paths, code):
            # (the engine's results come in the order of the entries it is given)
            for (entry, _), (_, result) in zip(project, engine.results([inside for _, inside in project])):
                files.append((entry, _code_findings(entry.relative, result), result.suppressions))
        descriptions = rule_descriptions(rules) if describe else {}
    finally:
        engine.close()
    findings: List[CheckFinding] = []
    outcome = CheckResult(findings, len(kept), excluded=len(entries) - len(kept), cache_problem=engine.problem,
                          descriptions=descriptions, skipped=skipped, recorded_by=recorded_by)
    for entry, found, suppressions in files:
        findings.extend(_filtered(entry, found, suppressions, config, known, outcome))
    outcome.findings = sorted(set(findings))
    return outcome


def _code_findings(shown: str, result: FileResult) -> List[CheckFinding]:
    findings = []
    for change in result.changes:
        if change.rule not in NOT_FINDINGS:
            findings.append(CheckFinding(shown, change.start_line, change.end_line, change.rule,
                                         f"CUDA-only: {change.message}", FIXED_BY_MIGRATION, cell_of(change.message)))
    for finding in result.findings:
        if finding.rule == NOT_MIGRATED.code:
            findings.append(CheckFinding(shown, finding.start_line, finding.end_line, finding.rule,
                                         f"file not checked: {result.error}", MANUAL))
        elif finding.rule == NOT_ANALYSED.code:
            findings.append(CheckFinding(shown, finding.start_line, finding.end_line, finding.rule,
                                         f"partly checked: {finding.tip}", MANUAL, cell_of(finding.tip)))
        elif finding.report == Report.UNSUPPORTED and _checked(finding.rule):
            findings.append(CheckFinding(shown, finding.start_line, finding.end_line, finding.rule,
                                         f"{finding.api} has no NPU equivalent: {finding.tip}", MANUAL,
                                         cell_of(finding.tip), finding.api))
    return findings


def _checked(code: str) -> bool:
    """Whether rows of `code` are findings of `check`: its kind's level says (finding_kinds)."""
    kind = KINDS.get(code)
    return kind is None or kind.level == ERROR


def _filtered(entry: Entry, found: List[CheckFinding], suppressions: Tuple[Suppression, ...], config: ProjectConfig,
              known: Set[str], outcome: CheckResult) -> List[CheckFinding]:
    """`found` less the codes the configuration ignores for the file and the findings its
    comments silence, plus a finding for each comment that silences nothing (NPU926)."""
    ignored = config.ignored_codes(entry.absolute)

    def names(selector: str, code: str) -> bool:
        return selector_matches(selector, code) or selector_matches(selector, outcome.recorded_by.get(code, code))

    def is_ignored(code: str) -> bool:
        return any(names(selector, code) for selector in ignored)

    kept = [finding for finding in found if not is_ignored(finding.rule)]
    outcome.ignored += len(found) - len(kept)
    if not suppressions:
        return kept
    silenced: Dict[Suppression, List[str]] = {suppression: [] for suppression in suppressions}  # -> codes it silenced
    shown = []
    for finding in kept:
        silencing = [s for s in suppressions if s.cell == finding.cell and finding.start_line <= s.line <= finding.end_line
                     and (not s.codes or any(names(code, finding.rule) for code in s.codes))]
        for suppression in silencing:
            silenced[suppression].append(finding.rule)
        if silencing:
            outcome.suppressed += 1
        else:
            shown.append(finding)
    for suppression, rules in silenced.items():
        where = f"cell {suppression.cell}: " if suppression.cell else ""
        unknown = [code for code in suppression.codes if not any(selector_matches(code, known_code) for known_code in known)]
        idle = [code for code in suppression.codes if code not in unknown
                and not any(names(code, rule) for rule in rules)]
        if unknown:
            message = (f"`# gpu2npu: ignore[{','.join(unknown)}]`: {where}{' and '.join(unknown)} "
                       f"{'is no code' if len(unknown) == 1 else 'are no codes'} that gpu2npu reports (`gpu2npu rules` lists them)")
        elif idle:
            message = f"`# gpu2npu: ignore[{','.join(idle)}]`: {where}no finding of {' or '.join(idle)} on this line"
        elif not rules:
            message = f"`{suppression.text}` silences nothing: {where}no finding on this line"
        else:
            continue
        if not is_ignored(UNUSED_SUPPRESSION.code):
            shown.append(CheckFinding(entry.relative, suppression.line, suppression.line, UNUSED_SUPPRESSION.code,
                                      message, MANUAL, suppression.cell))
    return shown


# Dependency rules whose every edit removes or replaces something CUDA-only; a torch or
# torchvision pin is one only where it names a CUDA build (`+cu121`).
CUDA_DEPENDENCY_RULES = {decide.CUDA_ONLY_RULE, decide.TWIN_RULE, decide.INDEX_RULE, decide.CONDA_RULE, decide.DOCKER_RULE}
_CUDA_BUILD = re.compile(r"\+cu\d+|/whl/cu\d+")


def _dependency_findings(entry: Entry, form: str, options: Options) -> Tuple[List[CheckFinding], Tuple[Suppression, ...]]:
    """CUDA-only packages, indexes, conda packages and images of a dependency file, read as the
    migration reads it but without a migration to ask who still imports a package; its comments."""
    from ..dependencies import Context, load_table, migrate_dependencies

    findings: List[CheckFinding] = []
    try:
        data = entry.absolute.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = f"cannot be read: {error.strerror or error}" if isinstance(error, OSError) else f"not UTF-8 text ({error})"
        return [CheckFinding(entry.relative, 1, 1, NOT_MIGRATED.code, f"file not checked: {reason}", MANUAL)], ()
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
    return findings, suppressions_in(Kind.OTHER, data)


@dataclass(frozen=True)
class Description:
    """What SARIF's `driver.rules` say of a code: a line, and the help a reader of one result needs."""

    summary: str
    help: str


def rule_descriptions(rules: Dict[str, RuleEntry]) -> Dict[str, Description]:
    """Every code a finding of `check` can carry: the rules' (their documentation and first example)
    and the kinds of report rows that need a human (finding_kinds)."""
    descriptions = {code: Description(rule.summary, rule.description + (f"\n\n{rule.example}" if rule.example else ""))
                    for code, rule in rules.items() if code not in NOT_FINDINGS}
    for code, kind in KINDS.items():
        if kind.level == ERROR:
            example = f"\n\nExample:\n{kind.examples[0][0]}" if kind.examples else ""
            descriptions[code] = Description(kind.title, kind.description + example)
    return descriptions
