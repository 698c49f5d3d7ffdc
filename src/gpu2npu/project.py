"""A whole run: check the request, migrate every file into a staging folder, write the
reports, then move the result into place.  Nothing is written before the request is known to
be valid, and an existing result is never replaced unless asked to (`force`)."""
from __future__ import annotations

import difflib
import os
import re
import shutil
import signal
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from . import __version__, apidata, generated_packages, modelarts_package, rule_file, similar
from .change import Change, Finding, Report
from .cuda_ops import custom_operators
from .discover import Entry, Kind, walk
from .engine import Engine
from .pipeline import FileResult, Status
from .reports import csv_reports, log as run_log
from .launcher import LAUNCHER_NAME, launcher_script
from .rules import REROUTING_RULES, DistributedSettings, Options, SpecifyDeviceSettings
from .sources import ALL_RULES_BY_CODE, MIGRATED_KINDS

OUTPUT_SUFFIX = "_msft"
MULTI_SUFFIX = "_msft_multi"
TARGET_PATTERN = re.compile(r"^([a-zA-Z_]\w*\.)*([a-zA-Z_]\w*)$")
INIT_CALL = re.compile(rb"\binit_process_group\s*\(")
MAIN_GUARD = re.compile(rb"""__name__\s*==\s*['"]__main__['"]""")
SPAWN_CALL = re.compile(r"\b(mp|multiprocessing)\.(spawn|start_processes)\s*\(")


class UsageError(Exception):
    """The request cannot be carried out as given (exit status 2, nothing written)."""


@dataclass
class DistributedRequest:
    main: Path  # the training entry file, inside the input
    target: str = "model"
    split_batch: bool = False


@dataclass
class RunRequest:
    input: Path
    output: Path
    version: str
    force: bool = False
    report_dir: Optional[Path] = None
    distributed: Optional[DistributedRequest] = None
    specify_device: bool = False
    jobs: int = 0  # worker processes; 0: one per core
    cache_dir: Optional[Path] = None  # per-file results kept here between runs; None: no cache
    rule_file: Optional[Path] = None  # -r: the user's rules (JSON)
    modelarts: bool = False  # -m: route file paths through ModelArtsPathManager
    amp_model: Optional[str] = None  # -a: convert native AMP of this model to Ascend apex amp
    similar: bool = False  # -sim: unsupported APIs go to the generated ascend_function package

    @property
    def suffix(self) -> str:
        return OUTPUT_SUFFIX if self.distributed is None else MULTI_SUFFIX


@dataclass
class RunResult:
    target: Path
    report_folder: Path
    files: int = 0
    python_files: int = 0
    script_files: int = 0  # notebooks and launch scripts
    migrated: List[str] = field(default_factory=list)
    failed: List[Tuple[str, str]] = field(default_factory=list)
    not_copied: List[Tuple[str, str]] = field(default_factory=list)  # (path, what happened instead)
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    report_rows: Dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0  # Python files whose result was read back from the cache


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def check_request(request: RunRequest, writes: bool = True) -> Tuple[Path, Path, Options]:
    """Validate everything up front; returns (input root, target folder, options).  With
    `writes` False (a preview) the output folder is not looked at."""
    source = request.input
    if not source.exists():
        raise UsageError(f"input {source} does not exist")
    if not (source.is_dir() or source.suffix == ".py"):
        raise UsageError(f"input {source} must be a folder or a .py file")
    source = source.resolve()
    try:
        api = apidata.load(request.version)
    except apidata.UnknownVersionError as error:
        raise UsageError(str(error)) from None
    custom_rules = None
    if request.rule_file is not None:
        try:
            custom_rules = rule_file.load(request.rule_file)
        except rule_file.RuleFileError as error:
            raise UsageError(str(error)) from None
    package = source / modelarts_package.PACKAGE_NAME
    if request.modelarts and source.is_dir() and package.exists() and not package.is_dir():
        raise UsageError(f"-m writes the folder {modelarts_package.PACKAGE_NAME}/, but the input holds a file {package}")
    target = _check_output(request, source) if writes else source
    settings = None if request.distributed is None else _check_distributed(request.distributed, source)
    specify = _specify_device(source) if request.specify_device and settings is None else None
    if request.amp_model is not None:
        _check_amp_model(request, source)
    if request.similar and source.is_dir():
        _check_similar_package(source)
    return source, target, Options(api=api, distributed=settings, specify_device=specify,
                                   custom_rules=custom_rules, modelarts=request.modelarts,
                                   amp_model=request.amp_model, similar=request.similar)


def _check_similar_package(source: Path) -> None:
    """-sim writes ascend_function/ at the top of the output: an input folder of that name must be
    one gpu2npu wrote (a migrated tree migrated again), never the project's own."""
    existing = source / similar.PACKAGE
    if not (existing.exists() or existing.is_symlink()):
        return
    files = sorted(p.relative_to(existing).as_posix() for p in existing.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts) if existing.is_dir() else []
    ours = existing.is_dir() and (files == [] or files == ["__init__.py"] and (existing / "__init__.py").read_text(
        encoding="utf-8", errors="replace") == similar.package_text())
    if not ours:
        raise UsageError(f"-sim writes {similar.PACKAGE}/ into the output, but the input already has its own "
                         f"{existing}: rename it, or migrate without -sim")


def _check_amp_model(request: RunRequest, source: Path) -> None:
    """-a names the model whose optimizer the GradScaler steps: a name no file builds an
    optimizer from is a mistake, caught before anything is written."""
    model = request.amp_model
    if not TARGET_PATTERN.match(model):
        raise UsageError(f"-a {model}: not a variable name (e.g. model or self.model)")
    if request.distributed is not None:
        raise UsageError("-a cannot be combined with distributed yet: amp.initialize must run before the "
                         "DistributedDataParallel wrap, which gpu2npu does not order yet; migrate with -a alone, "
                         "or convert AMP by hand")
    parameters = re.compile(rb"\b" + re.escape(model.encode()) + rb"\s*\.\s*parameters\s*\(\s*\)")
    python = [entry for entry in walk(source) if entry.kind == Kind.PYTHON]
    if not any(parameters.search(entry.absolute.read_bytes()) for entry in python):
        raise UsageError(
            f"-a {model}: no Python file builds an optimizer from {model}.parameters(); "
            "name the variable that holds the model (e.g. -a net or -a self.model)"
        )


def _check_output(request: RunRequest, source: Path) -> Path:
    """The folder the run will write (OUTPUT/<name>_msft), once nothing stands in its way."""
    folder = source if source.is_dir() else source.parent
    output = request.output.resolve()
    if source.is_dir() and _inside(output, folder):
        raise UsageError(f"output {request.output} lies inside the input {request.input}: choose a folder outside it")
    if output.exists() and not output.is_dir():
        raise UsageError(f"output {request.output} is not a folder")
    name = source.name if source.is_dir() else source.stem
    target = output / f"{name}{request.suffix}"
    if target.exists() and not request.force:
        raise UsageError(f"{target} already exists: remove it, choose another output folder, or pass --force to replace it")
    if request.report_dir is None and source.is_dir():
        reserved = set(csv_reports.REPORT_NAMES) | {run_log.LOG_NAME}
        clashes = sorted(entry.name for entry in source.iterdir() if entry.name in reserved)
        if clashes:
            raise UsageError(
                f"the input's top folder holds {', '.join(clashes)}, which a report would overwrite: "
                "pass --report-dir to write the reports elsewhere"
            )
    if request.report_dir is not None and _inside(request.report_dir.resolve(), folder) and source.is_dir():
        raise UsageError(f"report folder {request.report_dir} lies inside the input: choose a folder outside it")
    if request.cache_dir is not None:
        cache_dir = request.cache_dir.resolve()
        if (source.is_dir() and _inside(cache_dir, folder)) or _inside(cache_dir, target):
            raise UsageError(f"cache folder {request.cache_dir} lies inside the input or the output: "
                             "choose a folder outside both (or --no-cache)")
    return target


def _specify_device(source: Path) -> SpecifyDeviceSettings:
    """-s sets the device once per program: in the files that start one and use a device (a
    data-preparation script with a `__main__` block of its own is no place to choose the NPU)."""
    python = [entry for entry in walk(source) if entry.kind == Kind.PYTHON]
    texts = {entry.relative: _read(entry) for entry in python}
    for relative, text in texts.items():
        spawn = SPAWN_CALL.search(text.decode("utf-8", "replace"))
        if spawn is not None:
            line = text[:spawn.start()].count(b"\n") + 1
            raise UsageError(
                f"-s: {relative} starts its worker processes itself (line {line}: {spawn.group(0)}...) and each "
                "worker selects its card from its index; with -s every worker would run on the one DEVICE_ID "
                "NPU. Migrate without -s: each worker then selects its own NPU from its index, as it did its GPU.")
    starts = [relative for relative, text in texts.items() if MAIN_GUARD.search(text)]
    entries = frozenset(relative for relative in starts if DEVICE_USE.search(texts[relative]))
    if not entries:  # scripts without a __main__ block: the top-level ones that use a device
        entries = frozenset(relative for relative, text in texts.items()
                            if "/" not in relative and DEVICE_USE.search(text))
    return SpecifyDeviceSettings(entry_files=entries)


# What a program that picks a device mentions.
DEVICE_USE = re.compile(rb"cuda|\.to\(|device|set_device")

# Frameworks that start the processes or place the model themselves: `distributed` must not
# wrap their model in DDP.  (pattern on the main file, what it is, what to do instead)
SELF_MANAGED = (
    (re.compile(rb"^\s*(from\s+(transformers|trl)\b[^\n]*\b\w*Trainer\b|import\s+(transformers|trl)\b)", re.M),
     re.compile(rb"\b\w*Trainer\s*\("),
     "trains with a transformers/TRL Trainer, which starts its processes and wraps the model in DDP itself",
     "migrate it without `distributed` and start the result with `torchrun --nproc_per_node=N {main} ...` "
     "(the Trainer then runs one process per NPU over HCCL)"),
    (re.compile(rb"^\s*(from|import)\s+(lightning|pytorch_lightning)\b", re.M),
     re.compile(rb"\b(Trainer|Fabric)\s*\("),
     "trains with Lightning, which starts its processes and wraps the model itself",
     "migrate it without `distributed` and configure Lightning's own multi-device strategy"),
    (re.compile(rb"^\s*(from|import)\s+accelerate\b", re.M),
     re.compile(rb"\bAccelerator\s*\("),
     "trains with accelerate's Accelerator, which prepares the model for several processes itself",
     "migrate it without `distributed` and start it with `accelerate launch` or `torchrun --nproc_per_node=N {main} ...`"),
    (re.compile(rb"."),
     re.compile(rb"\bdevice_map\s*=\s*(?!None\b)"),
     "loads a model with device_map=..., which places its layers across devices itself; DDP cannot wrap it",
     "migrate it without `distributed`; for data parallel training load the model without device_map and "
     "convert again"),
)


def _check_distributed(request: DistributedRequest, source: Path) -> DistributedSettings:
    if not source.is_dir():
        raise UsageError("distributed needs a project folder as input (-i)")
    main = request.main if request.main.is_absolute() else source / request.main
    if not main.is_file() and (Path.cwd() / request.main).is_file():
        main = Path.cwd() / request.main
    main = main.resolve()
    if not main.is_file() or main.suffix != ".py":
        raise UsageError(f"distributed -m {request.main}: no such .py file in {source}")
    if not _inside(main, source):
        raise UsageError(f"distributed -m {request.main}: the main file must lie inside the input {source}")
    if not TARGET_PATTERN.match(request.target):
        raise UsageError(f"distributed -t {request.target}: not a variable name (e.g. model or self.model)")
    main_text = main.read_text(encoding="utf-8", errors="replace")
    assignment = re.compile(rf"^\s*{re.escape(request.target)}\s*(:[^=]+)?=[^=]", re.M)
    if not assignment.search(main_text):
        raise UsageError(
            f"distributed -t {request.target}: {main.relative_to(source)} never assigns {request.target}; "
            "name the variable that holds the model"
        )
    _refuse_self_managed(main.relative_to(source).as_posix(), main.read_bytes())
    spawns = bool(SPAWN_CALL.search(main_text))
    initialises = any(
        INIT_CALL.search(_read(entry)) for entry in walk(source) if entry.kind == Kind.PYTHON
    )
    return DistributedSettings(
        main_file=main.relative_to(source).as_posix(),
        target=request.target,
        split_batch=request.split_batch,
        project_initialises=initialises,
        main_spawns=spawns,
        guard_saves=not initialises,
    )


def _refuse_self_managed(relative: str, text: bytes) -> None:
    """`distributed` on a program whose framework manages processes or devices itself would
    produce a program that crashes at start: say so and what to run instead."""
    for imported, used, what, instead in SELF_MANAGED:
        if not imported.search(text):
            continue
        use = used.search(text)
        if use is not None:
            line = text[:use.start()].count(b"\n") + 1
            raise UsageError(f"distributed -m {relative}: {relative} {what} (line {line}); adding DDP would break it. "
                             f"Instead, {instead.format(main=relative)}.")


def _read(entry: Entry) -> bytes:
    """A file's bytes for a look before the run (b"" if it cannot be read: the run reports it)."""
    try:
        return entry.absolute.read_bytes()
    except OSError:
        return b""


def _copy_entry(entry: Entry, destination: Path, source: Path) -> Optional[str]:
    """Reproduce one non-Python entry; returns what was done instead when it could not be
    copied as it is (None when it was).  Folder modes are applied at the end
    (`_copy_folder_modes`): a read-only folder must still receive its files."""
    if entry.kind == Kind.DIRECTORY:
        destination.mkdir(exist_ok=True)
    elif entry.kind == Kind.UNLISTABLE:
        destination.mkdir(exist_ok=True)
        return "folder cannot be listed: created empty, its content is not in the output"
    elif entry.kind == Kind.SYMLINK:
        os.symlink(_link_target(entry, source), destination)
    elif entry.kind == Kind.SPECIAL:
        mode = entry.absolute.lstat().st_mode
        if stat.S_ISFIFO(mode):
            os.mkfifo(destination, stat.S_IMODE(mode))
            return "not a regular file (a named pipe): reproduced as a named pipe, never read"
        return "not a regular file (a socket or device): not copied"
    else:
        try:
            shutil.copy2(entry.absolute, destination)
        except OSError as error:
            return f"cannot be read ({error.strerror or error}): not copied"
    return None


def _link_target(entry: Entry, source: Path) -> str:
    """A link is reproduced as a link, never followed.  An absolute link into the input tree is
    made relative, so that the output's link points into the output, not back into the input."""
    target = os.readlink(entry.absolute)
    if os.path.isabs(target) and _inside(Path(target), source):
        return os.path.relpath(target, entry.absolute.parent)
    return target


def _copy_folder_modes(folders: Sequence[Tuple[Entry, Path]]) -> None:
    for entry, destination in reversed(folders):  # deepest first
        try:
            shutil.copymode(entry.absolute, destination)
        except OSError:
            pass  # the folder's content is what matters


def _write_python(entry: Entry, destination: Path, result: FileResult) -> None:
    if result.output is None:
        try:
            shutil.copy2(entry.absolute, destination)
        except OSError as error:
            if result.status != Status.FAILED:
                raise
            result.error += f"; not copied either: {error.strerror or error}"
    else:
        destination.write_bytes(result.output)
        shutil.copymode(entry.absolute, destination)


def run(request: RunRequest, progress: Callable[[int, int], None] = lambda done, total: None) -> RunResult:
    """Migrate the project; `progress(done, total)` is called after each Python file."""
    source, target, options = check_request(request)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        result = _run_into(source, staging, target, request, options, progress)
        if source.is_dir():  # mkdtemp made it private; the result gets the input folder's mode
            os.chmod(staging, stat.S_IMODE(source.stat().st_mode) | stat.S_IRWXU)
        _move_into_place(staging, target)
        if request.report_dir is None:
            result.report_folder = target
        return result
    except BaseException:
        _remove_tree(staging)
        raise


def _run_into(source: Path, staging: Path, target: Path, request: RunRequest, options: Options, progress) -> RunResult:
    report_folder = staging if request.report_dir is None else request.report_dir.resolve()
    report_folder.mkdir(parents=True, exist_ok=True)
    result = RunResult(target=target, report_folder=report_folder)
    logger = run_log.open_log(report_folder)
    cuda_ops: List[Tuple[str, str]] = []
    try:
        logger.info(
            f"gpu2npu {__version__}: migrating {source} for PyTorch {options.api.torch_version} "
            f"(torch_npu {options.api.torch_npu_version}) into {target}"
        )
        def destination_of(entry: Entry) -> Path:
            return staging / entry.relative if source.is_dir() else staging / source.name

        python: List[Entry] = []
        folders: List[Tuple[Entry, Path]] = []
        for entry in walk(source):  # folders come before what they hold
            if entry.kind in MIGRATED_KINDS:
                python.append(entry)
                continue
            if entry.kind == Kind.DIRECTORY:
                folders.append((entry, destination_of(entry)))
            else:
                result.files += 1
            instead = _copy_entry(entry, destination_of(entry), source)
            if instead is not None:
                result.not_copied.append((entry.relative, instead))
                logger.warning(f"{entry.relative}: {instead}")
                continue
            if entry.kind == Kind.CUDA_SOURCE:
                text = entry.absolute.read_bytes().decode("utf-8", errors="replace")
                cuda_ops.extend((entry.relative, name) for name in custom_operators(text))
        engine = Engine(options, request.jobs, request.cache_dir)
        for done, (entry, outcome) in enumerate(engine.results(python), 1):
            result.files += 1
            if entry.kind == Kind.PYTHON:
                result.python_files += 1
            else:
                result.script_files += 1
            _write_python(entry, destination_of(entry), outcome)
            _log_file(logger, outcome)
            if outcome.status == Status.FAILED:
                result.failed.append((outcome.path, outcome.error))
            elif outcome.status == Status.MIGRATED:
                result.migrated.append(outcome.path)
            result.changes.extend(outcome.changes)
            result.findings.extend(outcome.findings)
            progress(done, len(python))
        if engine.cache is not None:
            engine.close()
            result.cache_hits = engine.hits
            if engine.problem:
                logger.warning(engine.problem)
            logger.info(f"cache {engine.cache.folder}: {engine.hits} files read back, {engine.misses} migrated")
        _copy_folder_modes(folders)
        for relative, name in cuda_ops:
            logger.info(f"{relative}: custom CUDA operator {name} needs an NPU implementation")
        if options.distributed is not None:
            _write_launcher(staging, options.distributed, logger)
        if options.modelarts:
            _write_modelarts_package(staging, logger)
        for rule in REROUTING_RULES:
            users = sorted({c.file for c in result.changes if c.rule == rule.code})
            if users:
                _write_generated_package(staging, rule, users, logger)
        if options.similar:
            similar.write_package(staging)
            used = sorted({c.file for c in result.changes if c.rule == "NPU252"})
            logger.info(f"wrote {similar.PACKAGE}/ (-sim): equivalents of {', '.join(sorted(similar.equivalents()))}; "
                        f"used by {len(used)} files")
        result.report_rows = csv_reports.write_all(report_folder, result.changes, result.findings, cuda_ops)
        _log_summary(logger, result)
    finally:
        run_log.close_log(logger)
    return result


def preview(request: RunRequest) -> Iterator[Tuple[str, str]]:
    """`--diff`: (path, unified diff, "") for every file the migration would change and
    (path, None, reason) for one that could not be processed; nothing is written but the cache."""
    source, _, options = check_request(request, writes=False)
    engine = Engine(options, request.jobs, request.cache_dir)
    try:
        for entry, result in engine.results([entry for entry in walk(source) if entry.kind in MIGRATED_KINDS]):
            if result.status == Status.FAILED:
                yield entry.relative, None, result.error
            elif result.output is not None:
                data = entry.absolute.read_bytes()
                before = data.decode("utf-8", errors="replace").splitlines(keepends=True)
                after = result.output.decode("utf-8", errors="replace").splitlines(keepends=True)
                diff = difflib.unified_diff(before, after, f"a/{entry.relative}", f"b/{entry.relative}")
                yield entry.relative, "".join(line if line.endswith("\n") else line + "\n" for line in diff), ""
    finally:
        engine.close()


def _write_launcher(staging: Path, settings: DistributedSettings, logger) -> None:
    launcher = staging / LAUNCHER_NAME
    if launcher.exists():
        launcher = staging / f"gpu2npu_{LAUNCHER_NAME}"
    launcher.write_text(launcher_script(settings.main_file, settings.main_spawns), encoding="utf-8")
    launcher.chmod(0o750)
    logger.info(
        f"wrote {launcher.name}: NPUS=0,1,... bash {launcher.name} [arguments of {settings.main_file}] "
        "starts one process per NPU (or use torchrun --nproc_per_node=N)"
    )
    logger.info(
        "batch size: every process uses the batch size it is given, so the global batch is the number of "
        "NPUs times larger than on one card" + ("" if settings.split_batch else
        "; pass --split-batch to divide training batch sizes by the number of processes (seed 002)")
    )
    if settings.main_spawns:
        logger.info(f"{settings.main_file} starts its own processes: {launcher.name} runs it once on the NPUs in NPUS")
    if settings.project_initialises:
        logger.info("the project initialises its process group itself: that call was migrated, none was added")


def _write_modelarts_package(staging: Path, logger) -> None:
    if not modelarts_package.write_package(staging):
        logger.info(f"{modelarts_package.PACKAGE_NAME}/ is in the input already: kept as it is")
        return
    logger.info(
        f"wrote {modelarts_package.PACKAGE_NAME}/: before training on ModelArts, list in its path_mapping_config.py "
        "the local paths to download from and upload to object storage; run the scripts from this folder"
    )


def _write_generated_package(staging: Path, rule, users, logger) -> None:
    name = rule.PACKAGE
    if not generated_packages.copy_package(staging, name, rule.FILES):
        logger.info(f"{name}/ is in the input already: kept as it is")
        return
    logger.info(f"wrote {name}/: {rule.WHAT}, imported by {len(users)} file{'s' if len(users) != 1 else ''} "
                f"({', '.join(users[:5])}{', ...' if len(users) > 5 else ''})")


def _move_into_place(staging: Path, target: Path) -> None:
    # An interrupt between the two renames would leave neither the old result nor the new
    # one: Ctrl-C and SIGTERM wait until both are done.
    blocked = {signal.SIGINT, signal.SIGTERM}
    masking = hasattr(signal, "pthread_sigmask")
    if masking:
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    old = None
    replaced = False
    try:
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / target.name)
        os.replace(staging, target)
        replaced = True
    finally:
        try:
            if masking:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)  # a pending interrupt is raised here
        finally:
            if old is not None and replaced:
                _remove_tree(old)
            elif old is not None and not target.exists():  # the new result could not be moved: keep the old
                os.replace(old / target.name, target)
                old.rmdir()


def _remove_tree(path: Path) -> None:
    """Remove a folder the run made, read-only folders copied from the input included."""
    def make_writable_and_retry(function, name, _):
        try:
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            function(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=make_writable_and_retry)


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
        logger.info(f"rule {code} ({ALL_RULES_BY_CODE[code].__name__}): {count} changes")
