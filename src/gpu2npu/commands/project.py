"""A whole run: check the request (request.py), migrate every file into a staging folder (the
engine, outputs/tree_copy.py), write the generated packages and the reports, then move the result into
place.  Nothing is written before the request is known to be valid, and an existing result is
never replaced unless asked to (`force`).  `preview` is the same run printed as a diff."""
from __future__ import annotations

import os
import time
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from .. import __version__, modes
from ..outputs import generated_packages
from ..records.change import Change, Finding, Report
from ..reports.catalogue import RuleEntry, WrittenPackage, rule_catalogue
from ..findings.cuda_ops import operators_in
from ..reading.dependency_files import SETUP_PY, dependency_format
from ..dependencies.phase import dependency_entries
from ..reading.discover import MIGRATED_KINDS, Entry, Kind, walk
from ..migration.engine import Engine
from ..records import results
from ..records.results import FileResult, Status, not_migrated_row
from ..reports import csv_reports, log as run_log
from ..reading.linemap import source_lines, unified_diff
from ..reading.scan.api_rows import newer_torch_note
from ..records.finding_kinds import NEWER_TORCH
from ..records.options import Options
from .request import RunRequest, check_request, earlier_reports
from ..outputs.tree_copy import copy_entry, copy_folder_modes, move_into_place, previous_result, remove_tree, write_new, write_python


@dataclass
class RunResult:
    target: Path
    report_folder: Path
    files: int = 0
    python_files: int = 0
    script_files: int = 0  # notebooks and launch scripts
    migrated: List[str] = field(default_factory=list)
    failed: List[Tuple[str, str]] = field(default_factory=list)
    excluded: int = 0  # files [tool.gpu2npu] exclude names: copied unchanged
    not_copied: List[Tuple[str, str]] = field(default_factory=list)  # (path, what happened instead)
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    report_rows: Dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0  # Python files whose result was read back from the cache
    page: Optional[Path] = None  # report.html (in the report folder as it is after the run)
    dependency_files: int = 0  # requirements, environment, pyproject, setup and Dockerfiles read
    warnings: List[str] = field(default_factory=list)  # said on the console and in the log
    notes: List[str] = field(default_factory=list)  # what the mode did and where (console and log)
    rules: Dict[str, RuleEntry] = field(default_factory=dict)  # the rule catalogue (names, summaries)


def run(request: RunRequest, progress: Callable[..., None] = lambda *done_and_total: None) -> RunResult:
    """Migrate the project; `progress(done, total, done_bytes, total_bytes)` is called after each
    Python file."""
    source, target, options = check_request(request)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        result = _run_into(source, staging, target, request, options, progress)
        if results.pending_interrupt is not None:
            raise results.pending_interrupt  # (one that landed where Python ignores what is raised)
        if source.is_dir():  # mkdtemp made it private; the result gets the input folder's mode
            os.chmod(staging, stat.S_IMODE(source.stat().st_mode) | stat.S_IRWXU)
        move_into_place(staging, target)
        if request.report_dir is None:
            result.report_folder = target
        return result
    except BaseException:
        remove_tree(staging)
        raise


def _run_into(source: Path, staging: Path, target: Path, request: RunRequest, options: Options, progress) -> RunResult:
    report_folder = staging if request.report_dir is None else request.report_dir.resolve()
    report_folder.mkdir(parents=True, exist_ok=True)
    if request.report_dir is not None:
        for earlier in earlier_reports(report_folder):  # (--force: check_request refused them otherwise)
            earlier.unlink()
    result = RunResult(target=target, report_folder=report_folder)
    logger = run_log.open_log(report_folder)
    started = time.time()
    cuda_ops: List[Tuple[str, str]] = []
    engine: Optional[Engine] = None
    try:
        logger.info(run_log.header(__version__, source, options.api.torch_version, options.api.torch_npu_version, target))
        def destination_of(entry: Entry) -> Path:
            return staging / entry.relative  # (an input file's relative is its name)

        previous = previous_result(target)  # (--force): unchanged copies are linked from there

        def previous_of(entry: Entry) -> Optional[Path]:
            return previous / entry.relative if previous is not None else None

        python: List[Entry] = []
        folders: List[Tuple[Entry, Path]] = []
        entries: List[Entry] = []
        for entry in walk(source):  # folders come before what they hold
            if entry.kind not in (Kind.DIRECTORY, Kind.SYMLINK) and request.config.excluded(entry.absolute):
                logger.info(f"{entry.relative}: excluded by [tool.gpu2npu] exclude: copied unchanged")
                result.excluded += 1
            else:
                entries.append(entry)
                if entry.kind in MIGRATED_KINDS:
                    python.append(entry)
                    continue
            if entry.kind == Kind.DIRECTORY:
                folders.append((entry, destination_of(entry)))
            else:
                result.files += 1
            instead = copy_entry(entry, destination_of(entry), source, previous_of(entry))
            if instead is not None:
                result.not_copied.append((entry.relative, instead))
                logger.warning(f"{entry.relative}: {instead}")
                continue
            if entry.kind == Kind.CUDA_SOURCE:
                cuda_ops.extend((entry.relative, name) for name in operators_in(entry.absolute))
        engine = Engine(options, request.jobs, request.cache_dir)
        sizes = [_size(entry) for entry in python]  # the time left is told from bytes (reports/progress.py)
        total_bytes, done_bytes = sum(sizes), 0
        for done, (entry, outcome) in enumerate(engine.results(python), 1):
            result.files += 1
            if entry.kind == Kind.PYTHON:
                result.python_files += 1
            else:
                result.script_files += 1
            write_python(entry, destination_of(entry), outcome, previous_of(entry))
            _log_file(logger, outcome)
            if outcome.status == Status.FAILED:
                result.failed.append((outcome.path, outcome.error))
            elif outcome.status == Status.MIGRATED:
                result.migrated.append(outcome.path)
            result.changes.extend(outcome.changes)
            result.findings.extend(outcome.findings)
            done_bytes += sizes[done - 1]
            progress(done, len(python), done_bytes, total_bytes)
        if engine.cache is not None:
            result.cache_hits = engine.hits
            logger.info(f"cache {engine.cache.folder}: {engine.hits} files read back, {engine.misses} migrated")
        dependencies = dependency_entries(entries)
        _migrate_dependencies(dependencies, entries, python, destination_of, options, result, logger)
        copy_folder_modes(folders)
        for relative, name in cuda_ops:
            logger.info(f"{relative}: custom CUDA operator {name} needs an NPU implementation")
        result.notes += modes.write_all(staging, target, options, result, logger)
        newer = newer_torch_note([row.api for row in result.findings if row.rule == NEWER_TORCH.code], options.api)
        if newer is not None:
            result.notes.append(newer)
        result.rules = rule_catalogue(engine.cache)
        for rule in result.rules.values():
            if rule.package is None:
                continue
            users = sorted({c.file for c in result.changes if c.rule == rule.code})
            if users:
                _write_generated_package(staging, rule.package, users, logger)
        result.report_rows = csv_reports.write_all(report_folder, result.changes, result.findings, cuda_ops)
        if request.html:
            read = [entry.relative for entry in python] + [e.relative for e, _ in dependencies if e.kind == Kind.OTHER]
            page = _write_page(report_folder, source, staging, target, request, options, result, read, started,
                               engine.cache)
            result.page = target / page.name if request.report_dir is None else page
        engine.close()  # (after the page, whose diffs it keeps too)
        if engine.problem:
            logger.warning(engine.problem)
        for note in result.notes:
            logger.info(note)
        _log_summary(logger, result)
    finally:
        if engine is not None:
            engine.close()  # (a run stopped part way lets its workers and cache go here, not at exit)
        run_log.close_log(logger)
    return result


def _size(entry: Entry) -> int:
    try:
        return entry.absolute.stat().st_size
    except OSError:
        return 0


def preview(request: RunRequest, warnings: Optional[List[str]] = None) -> Iterator[Tuple[str, str]]:
    """`--diff`: (path, unified diff, "") for every file the migration would change and
    (path, None, reason) for one that could not be processed; nothing is written but the cache.
    What the migration would warn of is added to `warnings`."""
    source, _, options = check_request(request, writes=False)
    engine = Engine(options, request.jobs, request.cache_dir)
    entries = [entry for entry in walk(source) if not request.config.excluded(entry.absolute)]
    outputs: Dict[str, bytes] = {}  # what the code migration wrote, for the dependency files
    applied: Set[str] = set()  # the codes of the rules that changed a file
    try:
        for entry, result in engine.results([entry for entry in entries if entry.kind in MIGRATED_KINDS]):
            if result.status == Status.FAILED:
                yield entry.relative, None, result.error
            elif result.output is not None:
                outputs[entry.relative] = result.output
                applied.update(change.rule for change in result.changes)
                if dependency_format(entry.relative) != SETUP_PY:  # (its diff comes with its dependencies')
                    yield entry.relative, _unified_diff(entry, entry.absolute.read_bytes(), result.output), ""
        rules = rule_catalogue(engine.cache)
    finally:
        engine.close()
    yield from _preview_dependencies(entries, outputs, options, warnings if warnings is not None else [])
    # the packages the migrated files import (ascend_flash_attn/...), as the migration writes them:
    # a tree patched from the diff runs as the migrated one does
    root = source if source.is_dir() else source.parent
    for rule in rules.values():
        package = rule.package
        if package is None or rule.code not in applied or (root / package.name).exists():
            continue
        for file in package.files:
            name = f"{package.name}/{file}"
            yield name, _diff_text("", generated_packages.package_file(package.name, file).decode("utf-8"),
                                   "/dev/null", f"b/{name}"), ""
    for name, text in modes.new_files(source, options):  # (the launcher of `distributed`)
        yield name, _diff_text("", text, "/dev/null", f"b/{name}"), ""


def _preview_dependencies(entries, outputs: Dict[str, bytes], options: Options,
                          warnings: List[str]) -> Iterator[Tuple[str, str]]:
    from ..dependencies.phase import migrate_project_dependencies

    found = dependency_entries(entries)

    def migrated_text(entry: Entry) -> bytes:
        return outputs[entry.relative] if entry.relative in outputs else entry.absolute.read_bytes()

    code = [(entry.relative, (lambda entry=entry: migrated_text(entry)), entry.kind)
            for entry in entries if entry.kind in MIGRATED_KINDS]
    setups = {entry.relative: entry for entry, form in found if form == SETUP_PY}
    run = migrate_project_dependencies(found, entries, code, migrated_text, options.api)
    warnings.extend(run.warnings)
    for outcome in run.files:
        setups.pop(outcome.path, None)
        final = outcome.output if outcome.output is not None else outputs.get(outcome.path)
        if final is not None:
            yield outcome.path, _unified_diff(outcome.entry, outcome.entry.absolute.read_bytes(), final), ""
    for relative, entry in setups.items():  # a setup.py the code migration changed, not read as dependencies
        if relative in outputs:
            yield relative, _unified_diff(entry, entry.absolute.read_bytes(), outputs[relative]), ""


def _unified_diff(entry: Entry, data: bytes, output: bytes) -> str:
    return _diff_text(data.decode("utf-8", errors="replace"), output.decode("utf-8", errors="replace"),
                      f"a/{entry.relative}", f"b/{entry.relative}")


def _diff_text(before: str, after: str, old_name: str, new_name: str) -> str:
    """The unified diff of two texts, every line ended (`patch` reads a file that has no last line
    end from a diff that ends its lines)."""
    diff = unified_diff(source_lines(before, keepends=True), source_lines(after, keepends=True), old_name, new_name)
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def _write_page(report_folder: Path, source: Path, staging: Path, target: Path, request: RunRequest,
                options: Options, result: RunResult, code_files: List[str], started: float, memo=None) -> Path:
    from ..findings.affinity import ADVICE
    from ..records.finding_kinds import KINDS
    from ..reports import html_report

    # (an input file's relative path is its name: it stands in its folder and in the staging one)
    base = source if source.is_dir() else source.parent

    def original(relative: str) -> Optional[bytes]:
        try:
            return (base / relative).read_bytes()
        except OSError:
            return None

    def migrated(relative: str) -> Optional[bytes]:
        try:
            return (staging / relative).read_bytes()
        except OSError:
            return None

    flags = [flag for flag, on in (("-s", request.specify_device), ("-m", request.modelarts), ("-sim", request.similar),
                                   (f"-a {request.amp_model}", request.amp_model), (f"-r {request.rule_file}", request.rule_file),
                                   ("distributed", request.distributed is not None)) if on]
    facts = html_report.PageFacts(
        name=source.name, input=str(source), output=str(target), torch_version=options.api.torch_version,
        torch_npu_version=options.api.torch_npu_version, options=" ".join(flags), tool_version=__version__,
        time=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) + f" ({time.time() - started:.1f} s)",
        notes=tuple(result.notes))
    analysis = {**{code: kind.title for code, kind in KINDS.items()}, **ADVICE}
    return html_report.write_page(report_folder, facts, result.changes, result.findings, code_files, original, migrated,
                                  html_report.explanations_of(result.rules, analysis), memo)


def _migrate_dependencies(found, entries, python, destination_of, options: Options, result: RunResult, logger) -> None:
    """Requirements, environment, pyproject, setup and Dockerfiles, once the code is migrated (see
    dependencies.phase): their rows join the code's, a torch pin other than -v's is a warning, and
    so is a package imported that needs an Ascend plugin which no dependency file lists."""
    from ..dependencies.phase import migrate_project_dependencies

    code_files = [(entry.relative, destination_of(entry).read_bytes, entry.kind) for entry in python]
    run = migrate_project_dependencies(found, entries, code_files, lambda entry: destination_of(entry).read_bytes(),
                                       options.api)
    for outcome in run.files:
        if outcome.output is not None:
            write_new(destination_of(outcome.entry), outcome.output)
        result.dependency_files += 1
        if outcome.error:
            logger.warning(f"{outcome.path}: copied unchanged, {outcome.error}")
            result.failed.append((outcome.path, outcome.error))
            result.findings.append(not_migrated_row(outcome.path, outcome.error))
            continue
        for change in outcome.changes:
            logger.info(run_log.change_line(change))
        for finding in outcome.findings:  # (a note is no warning: nothing to do)
            (logger.info if finding.report == Report.NOTE else logger.warning)(run_log.finding_line(finding))
        if outcome.output is not None and outcome.path not in result.migrated:
            result.migrated.append(outcome.path)
        result.changes.extend(outcome.changes)
        result.findings.extend(outcome.findings)
    for warning in run.warnings:
        logger.warning(warning)
        result.warnings.append(warning)


def _write_generated_package(staging: Path, package: WrittenPackage, users, logger) -> None:
    name = package.name
    if not generated_packages.copy_package(staging, name, package.files):
        logger.info(f"{name}/ is in the input already: kept as it is")
        return
    logger.info(f"wrote {name}/: {package.what}, imported by {len(users)} file{'s' if len(users) != 1 else ''} "
                f"({', '.join(users[:5])}{', ...' if len(users) > 5 else ''})")


def _log_file(logger, outcome: FileResult) -> None:
    if outcome.status == Status.FAILED:
        logger.warning(f"{outcome.path}: copied unchanged, {outcome.error}")
        return
    for change in outcome.changes:
        logger.info(run_log.change_line(change))
    for finding in outcome.findings:
        line = run_log.finding_line(finding)
        if finding.report == Report.UNSUPPORTED:
            logger.warning(line)
        else:
            logger.info(line)


def _log_summary(logger, result: RunResult) -> None:
    logger.info(
        f"{result.files} files, {result.python_files} Python, {result.script_files} notebooks and launch scripts; "
        f"{len(result.migrated)} migrated with "
        f"{len(result.changes)} changes; {len(result.failed)} could not be processed"
    )
    for code in sorted({c.rule for c in result.changes}):
        count = sum(1 for c in result.changes if c.rule == code)
        logger.info(f"rule {code} ({result.rules[code].name}): {count} changes")
