"""`distributed`: a single-card training script converted to one process per NPU (the Ascend
imagenet multi-card guide): HCCL process group, DistributedSampler, the model wrapped in
DistributedDataParallel, saves on rank 0, and a launcher script beside it."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Tuple

from ..records.change import Change
from ..reading.discover import Entry, Kind, inside, walk
from ..outputs.launcher import LAUNCHER_NAME, launcher_script
from ..records.options import DistributedSettings
from ..records.usage import UsageError

TARGET_PATTERN = re.compile(r"^([a-zA-Z_]\w*\.)*([a-zA-Z_]\w*)$")
INIT_CALL = re.compile(rb"\binit_process_group\s*\(")
MAIN_GUARD = re.compile(rb"""__name__\s*==\s*['"]__main__['"]""")
SPAWN_CALL = re.compile(r"\b(mp|multiprocessing)\.(spawn|start_processes)\s*\(")

# The conversion reasons across the whole main file (where the model is built, where the loop
# starts): files are migrated whole.
CUTS = False


def active(options) -> bool:
    return options.distributed is not None


def settings(request, source: Path) -> Optional[DistributedSettings]:
    """The checked settings of `distributed` (None without it)."""
    if request.distributed is None:
        return None
    return _check_distributed(request.distributed, source)


def place(rules, options):
    from ..rules import DISTRIBUTED_RULES

    return DISTRIBUTED_RULES


def write(staging, target, options, result, logger) -> List[str]:
    launcher = _write_launcher(staging, options, logger)
    try:
        main_text = (staging / options.distributed.main_file).read_text(encoding="utf-8", errors="replace")
    except OSError:
        main_text = ""
    return _distributed_notes(target / launcher.name, options.distributed, result.changes, main_text)


def _check_distributed(request, source: Path) -> DistributedSettings:
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


# A model wrapped for data parallelism by the script itself.
WRAPS_ITSELF = re.compile(r"\b(DistributedDataParallel|DDP|FullyShardedDataParallel|FSDP|fully_shard)\s*\(")


def _distributed_notes(launcher: Path, settings: DistributedSettings, changes: List[Change],
                       main_text: str = "") -> List[str]:
    """What `distributed` did, for the console: the launcher, the entry file, the model."""
    def lines_of(code: str) -> List[str]:
        return sorted({f"{c.file}:{c.start_line}" for c in changes if c.rule == code},
                      key=lambda where: (where.rsplit(":", 1)[0], int(where.rsplit(":", 1)[1])))

    wrapped, initialised = lines_of("NPU303"), lines_of("NPU304")
    notes = [f"distributed: launcher {launcher}: NPUS=0,1,... bash {launcher.name} [arguments of {settings.main_file}] "
             "starts one process per NPU"]
    if settings.project_initialises:
        notes.append("distributed: the project initialises its process group itself: that call was migrated (hccl)")
    elif initialised:
        notes.append(f"distributed: HCCL process group initialised in {settings.main_file} ({', '.join(initialised)})")
    if wrapped:
        notes.append(f"distributed: model variable '{settings.target}' wrapped in DistributedDataParallel "
                     f"({', '.join(wrapped)})")
    elif WRAPS_ITSELF.search(main_text):
        notes.append(f"distributed: {settings.main_file} wraps its model for data parallelism itself "
                     f"({WRAPS_ITSELF.search(main_text).group(1)}): left as it is, nothing was wrapped again")
    else:
        notes.append(f"distributed: no model variable '{settings.target}' found to wrap in DistributedDataParallel: "
                     "pass -t with the variable that holds the model (self.model allowed); nothing was wrapped")
    samplers = lines_of("NPU301")
    if samplers:
        notes.append(f"distributed: DistributedSampler for the training DataLoaders ({', '.join(samplers)})")
    return notes


def new_files(folder: Path, options) -> List[Tuple[str, str]]:
    """The launcher beside the project's files: (name, text); a project file of that name is
    kept and the launcher takes another."""
    settings = options.distributed
    name = LAUNCHER_NAME if not (folder / LAUNCHER_NAME).exists() else f"gpu2npu_{LAUNCHER_NAME}"
    return [(name, launcher_script(settings.main_file, settings.main_spawns))]


def _write_launcher(staging: Path, options, logger) -> Path:
    settings = options.distributed
    [(name, text)] = new_files(staging, options)
    launcher = staging / name
    launcher.write_text(text, encoding="utf-8")
    launcher.chmod(0o750)
    logger.info(
        f"wrote {launcher.name}: NPUS=0,1,... bash {launcher.name} [arguments of {settings.main_file}] "
        "starts one process per NPU (or use torchrun --nproc_per_node=N)"
    )
    logger.info(
        "batch size: every process uses the batch size it is given, so the global batch is the number of "
        "NPUs times larger than on one card" + ("" if settings.split_batch else
        "; pass --split-batch to divide training batch sizes by the number of processes (as the Ascend imagenet multi-card guide does)")
    )
    if settings.main_spawns:
        logger.info(f"{settings.main_file} starts its own processes: {launcher.name} runs it once on the NPUs in NPUS")
    if settings.project_initialises:
        logger.info("the project initialises its process group itself: that call was migrated, none was added")
    return launcher


def _read(entry: Entry) -> bytes:
    """A file's bytes for a look before the run (b"" if it cannot be read: the run reports it)."""
    try:
        return entry.absolute.read_bytes()
    except OSError:
        return b""
