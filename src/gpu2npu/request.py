"""What a run is asked to do, and everything checked before anything is written: the version,
the rule file, the output folder and report folder, and what each mode needs of the project
(the main file of `distributed`, the entry files of `-s`, the folders -m and -sim write)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from . import apidata, modelarts_package, rule_file, similar
from .discover import Entry, Kind, walk
from .reports import csv_reports, log as run_log
from .rules import DistributedSettings, Options, SpecifyDeviceSettings

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
    html: bool = True  # write report.html beside the CSVs (--no-html: not)
    api_files: Tuple[Path, ...] = ()  # -api: a library's affected APIs (analyse -m third_party)

    @property
    def suffix(self) -> str:
        return OUTPUT_SUFFIX if self.distributed is None else MULTI_SUFFIX


def inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def checked_inputs(path: Path, version: str, api_files: Tuple[Path, ...]):
    """What every run that reads a project checks first (the migration, `analyse`): the input
    (a folder or a .py file; resolved), the API data of `version`, and the -api files read."""
    from .analyse.affected_apis import ApiFileError, read_api_files

    if not path.exists():
        raise UsageError(f"input {path} does not exist")
    if not (path.is_dir() or path.suffix == ".py"):
        raise UsageError(f"input {path} must be a folder or a .py file")
    try:
        api = apidata.load(version)
    except apidata.UnknownVersionError as error:
        raise UsageError(str(error)) from None
    try:
        third_party_apis = read_api_files(api_files)
    except ApiFileError as error:
        raise UsageError(str(error)) from None
    return path.resolve(), api, third_party_apis


def check_request(request: RunRequest, writes: bool = True) -> Tuple[Path, Path, Options]:
    """Validate everything up front; returns (input root, target folder, options).  With
    `writes` False (a preview) the output folder is not looked at."""
    source, api, third_party_apis = checked_inputs(request.input, request.version, request.api_files)
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
                                   amp_model=request.amp_model, similar=request.similar,
                                   third_party_apis=third_party_apis)


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
    if source.is_dir() and inside(output, folder):
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
    if request.report_dir is not None and inside(request.report_dir.resolve(), folder) and source.is_dir():
        raise UsageError(f"report folder {request.report_dir} lies inside the input: choose a folder outside it")
    earlier = earlier_reports(request.report_dir) if request.report_dir is not None else []
    if earlier and not request.force:
        raise UsageError(f"report folder {request.report_dir} holds the reports of an earlier run "
                         f"({', '.join(path.name for path in earlier[:4])}{', ...' if len(earlier) > 4 else ''}): "
                         "choose another folder, or pass --force to replace them all")
    if request.cache_dir is not None:
        cache_dir = request.cache_dir.resolve()
        if (source.is_dir() and inside(cache_dir, folder)) or inside(cache_dir, target):
            raise UsageError(f"cache folder {request.cache_dir} lies inside the input or the output: "
                             "choose a folder outside both (or --no-cache)")
    return target


def earlier_reports(folder: Path) -> list:
    """The files of a run's reports already in `folder`: the CSVs, the review page and the log
    with its rotated parts (a re-run with --force replaces them all, not some)."""
    from .reports.html_report import FILE_NAME as PAGE

    names = set(csv_reports.REPORT_NAMES) | {PAGE, run_log.LOG_NAME}
    names |= {f"{run_log.LOG_NAME}.{number}" for number in range(1, run_log.BACKUPS + 1)}
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.name in names)


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
    if not inside(main, source):
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


