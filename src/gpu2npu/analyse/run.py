"""One `gpu2npu analyse` run: check the request, run the mode into a staging folder beside the
target, move it into place as OUTPUT/INPUT_NAME_analysis/.  Like the migration, nothing is
written before the request is known to be valid and an earlier result is replaced only with
`--force`.

- torch_apis: the migration's per-file analysis (the same engine and cache) without a migrated
  tree: change_list.csv (what the migration would edit), unsupported_api.csv, unknown_api.csv,
  cuda_op_list.csv, api_performance_advice.csv.
- affinity_apis: the same, writing affinity_api_call.csv (fused torch_npu APIs that can replace
  the project's code).
- third_party: see third_party.py.
- dynamic_shape: see dynamic_shape.py.
"""
from __future__ import annotations

import dataclasses
import os
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from .. import __version__
from ..records.change import Report
from ..findings.cuda_ops import operators_in
from ..reading.discover import Kind, inside, own_packages, walk
from ..migration.engine import Engine
from ..records.results import Status
from ..reports import csv_reports, log as run_log
from ..reports.console import counted
from ..commands.request import UsageError, checked_inputs, pinned_libraries
from ..records.options import Options
from ..records.project_config import NO_TABLE, ProjectConfig
from ..reading.discover import MIGRATED_KINDS
from ..outputs.tree_copy import move_into_place, remove_tree

MODES = ("torch_apis", "third_party", "affinity_apis", "dynamic_shape")
OUTPUT_SUFFIX = "_analysis"
LOG_NAME = "pytorch_analysis.txt"


@dataclass
class AnalyseRequest:
    input: Path
    output: Path
    version: str
    mode: str = "torch_apis"
    env: Tuple[Path, ...] = ()  # -env: more folders for jedi to import from (third_party)
    jedi_seconds: float = 120.0  # --jedi-seconds: jedi's time for what the library's source leaves open
    api_files: Tuple[Path, ...] = ()  # -api: affected third-party APIs, reported where called
    force: bool = False
    jobs: int = 0
    cache_dir: Optional[Path] = None
    config: ProjectConfig = NO_TABLE  # [tool.gpu2npu]: its exclude globs name files not analysed (torch_apis, affinity_apis)


@dataclass
class AnalyseResult:
    folder: Path  # OUTPUT/INPUT_NAME_analysis
    mode: str
    rows: Dict[str, int] = field(default_factory=dict)  # file written -> rows
    files: int = 0  # Python files analysed
    failed: List[Tuple[str, str]] = field(default_factory=list)  # (path, why it was not analysed)
    figures: Dict[str, object] = field(default_factory=dict)
    summary: List[str] = field(default_factory=list)  # what the console says after the table


def check_analyse_request(request: AnalyseRequest) -> Tuple[Path, Path, Options]:
    source, api, apis = checked_inputs(request.input, request.version, request.api_files)
    if request.mode not in MODES:
        raise UsageError(f"unknown mode {request.mode}: choose one of {', '.join(MODES)}")
    if apis and request.mode not in ("torch_apis",):
        raise UsageError(f"-api feeds affected third-party APIs into -m torch_apis (and into a migration or check), "
                         f"not into -m {request.mode}")
    for folder in request.env:
        if not env_folder(folder, source).is_dir():
            raise UsageError(f"-env {folder}: no such folder (neither as given nor inside {source})")
    output = request.output.resolve()
    target = output / f"{source.stem if source.is_file() else source.name}{OUTPUT_SUFFIX}"
    if inside(output, source if source.is_dir() else source.parent) and source.is_dir():
        raise UsageError(f"output {request.output} must not lie inside the input {request.input}")
    if target.exists() and not request.force:
        raise UsageError(f"{target} already exists: remove it, choose another output folder, or pass --force to "
                         "replace it (it is kept until the new one is complete)")
    return source, target, Options(api=api, third_party_apis=apis, **pinned_libraries(source)._asdict(),
                                   own_packages=own_packages(source))


def env_folder(folder: Path, source: Path) -> Path:
    """An -env folder as given, or (as the incumbent has it) a subfolder of the input."""
    if folder.is_dir() or folder.is_absolute():
        return folder.resolve()
    return (source / folder).resolve()


def run_analysis(request: AnalyseRequest, progress: Callable[[int, int], None] = lambda done, total: None) -> AnalyseResult:
    source, target, options = check_analyse_request(request)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        result = AnalyseResult(folder=target, mode=request.mode)
        logger = run_log.open_log(staging, LOG_NAME)
        started = time.time()
        try:
            logger.info(f"gpu2npu {__version__}: analyse -m {request.mode} {source} for PyTorch "
                        f"{options.api.torch_version} (torch_npu {options.api.torch_npu_version}) into {target}")
            if request.mode == "third_party":
                _third_party(source, staging, request, options, result, logger, progress)
            elif request.mode == "dynamic_shape":
                from .dynamic_shape import write_instrumented

                write_instrumented(source, staging, target, result, logger)
            else:
                _api_modes(source, staging, request, options, result, logger, progress)
            for path, why in result.failed:
                logger.warning(f"{path}: not analysed, {why}")
            logger.info(f"done in {time.time() - started:.1f} s: " + ", ".join(f"{name} {count} rows"
                                                                            for name, count in result.rows.items()))
        finally:
            run_log.close_log(logger)
        os.chmod(staging, stat.S_IMODE(0o755))
        move_into_place(staging, target)
        return result
    except BaseException:
        remove_tree(staging)
        raise


def _api_modes(source: Path, staging: Path, request: AnalyseRequest, options: Options, result: AnalyseResult,
               logger, progress) -> None:
    affinity = request.mode == "affinity_apis"
    entries = [entry for entry in walk(source) if not request.config.excluded(entry.absolute)]
    code = [entry for entry in entries if entry.kind in MIGRATED_KINDS]
    cuda_ops: List[Tuple[str, str]] = []
    for entry in entries:
        if entry.kind == Kind.CUDA_SOURCE:
            try:
                cuda_ops.extend((entry.relative, name) for name in operators_in(entry.absolute))
            except OSError:
                continue
    changes, findings = [], []
    engine = Engine(dataclasses.replace(options, advice=affinity or options.advice), request.jobs, request.cache_dir)
    try:
        for done, (entry, outcome) in enumerate(engine.results(code), 1):
            result.files += 1
            if outcome.status == Status.FAILED:
                result.failed.append((entry.relative, outcome.error))
            changes.extend(outcome.changes)
            findings.extend(outcome.findings)
            progress(done, len(code))
    finally:
        engine.close()
    folder = staging
    if affinity:
        rows = [f for f in findings if f.report == Report.AFFINITY]
        result.rows[csv_reports.AFFINITY] = csv_reports.write_affinity(folder, rows)
        for row in rows:
            logger.info(run_log.finding_line(row))
        result.summary.append(f"{len(rows)} places where a fused torch_npu API can replace the code "
                              f"({csv_reports.AFFINITY})")
        return
    result.rows.update(csv_reports.write_analysis(folder, changes, findings, cuda_ops))
    for change in changes:
        logger.info(run_log.change_line(change))
    for finding in findings:
        if finding.report in (Report.UNSUPPORTED, Report.UNKNOWN, Report.PERFORMANCE):
            logger.info(run_log.finding_line(finding))
    third = [f for f in findings if f.report == Report.UNSUPPORTED and f.tip.startswith("third-party API affected")]
    if options.third_party_apis:
        result.summary.append(f"-api: {len(options.third_party_apis)} affected third-party APIs, "
                              f"{len(third)} calls of them in the project (unsupported_api.csv)")


def _third_party(source: Path, staging: Path, request: AnalyseRequest, options: Options, result: AnalyseResult,
                 logger, progress) -> None:
    from . import call_graph, third_party

    env = [env_folder(folder, source) for folder in request.env]
    # the per-file analysis of the library: no advice, only what cannot run
    engine = Engine(dataclasses.replace(options, advice=False), request.jobs, request.cache_dir)

    def engine_results(entries):
        for entry, outcome in engine.results(entries):
            result.files += 1
            if outcome.status == Status.FAILED:
                result.failed.append((entry.relative, outcome.error))
            yield entry, outcome

    try:
        # (the progress line counts the files jedi is asked about, the long part)
        found = third_party.analyse_library(source, options, env, request.jobs, request.cache_dir, engine_results,
                                            progress, jedi_seconds=request.jedi_seconds)
    finally:
        engine.close()
    for name, rows in found.rows.items():
        columns = third_party.FULL_COLUMNS if name == third_party.FULL_RESULTS else (
            third_party.CUDA_OP_COLUMNS if name == third_party.CUDA_OP else third_party.OP_COLUMNS)
        result.rows[name] = csv_reports.write_rows(staging / name, columns, rows)
    for path in found.unparsed:
        result.files += 1
        result.failed.append((path, "not parsed as Python"))
    for hit in found.hits:
        logger.info(f"{hit.path} line: {hit.line} {third_party.CATEGORY_WORDS[hit.category]}: {hit.api}: {hit.tip}")
    for name, message in found.affected.items():
        logger.info(f"affected: {name}: {message}")
    for key, value in found.figures.items():
        logger.info(f"{key}: {value}")
    result.figures = found.figures
    result.summary.append(
        f"{counted(found.figures['affected public APIs'], 'public API')} "
        f"{'reaches' if found.figures['affected public APIs'] == 1 else 'reach'} code that cannot run on the NPU as it is "
        f"({counted(found.figures['hits'], 'call site')} in {counted(found.figures['files'], 'module')}; "
        f"{found.figures['resolved']} of {counted(found.figures['asked'], 'call site')} that may lead into the library "
        f"resolved: {found.figures['by the index']} from its source, {found.figures['by jedi']} by jedi"
        + (f" (the answers of {counted(found.figures['cached'], 'file')} from the cache)" if found.figures["cached"] else "")
        + (f"; jedi gave up on {counted(found.figures['jedi gave up'], 'call site')} after "
           f"{call_graph.JEDI_SECONDS:g} s each" if found.figures["jedi gave up"] else "")
        + (f"; {counted(found.figures['not asked'], 'call site')} not asked: --jedi-seconds "
           f"{request.jedi_seconds:g} ran out (a re-run with the cache goes on from there)"
           if found.figures["not asked"] else "")
        + ")")
    result.summary.append(f"feed them into the project's migration or check: gpu2npu ... -api "
                          f"{result.folder / third_party.FULL_RESULTS}")
