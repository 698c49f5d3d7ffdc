"""`gpu2npu dryrun -- COMMAND...`: run the command with the CPU imitation of torch_npu.

Only the processes started here see it: their PYTHONPATH starts with boot/ (whose
sitecustomize loads the probe) and standin/ (torch_npu, Ascend apex), CUDA is hidden, the
imitation exposes the names of the chosen release (STANDIN_TORCH_NPU_DATA, the tool's own API
data), and each process writes what it saw into a private folder that this module merges.

`--nproc N` starts N ranks as the generated launcher does (RANK_ID/DEVICE_ID/RANK_SIZE and the
torchrun variables, one process each) when the command is Python; a shell launcher is started
once with NPUS=0,...,N-1 and starts its ranks itself.
"""
from __future__ import annotations

import difflib
import functools
import json
import os
import re
import shlex
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..knowledge import apidata
from ..knowledge.tips import FUSED_OPTIMIZERS
from ..knowledge.versions import major_minor
from ..reports.log import LOG_NAME, migration_of, noted_spans

HERE = Path(__file__).resolve().parent
BOOT = HERE / "boot"
STANDIN = HERE / "standin"


@dataclass
class DryRunResult:
    version: str
    torch_npu_version: str
    command: List[str]
    exit_codes: List[int] = field(default_factory=list)
    stopped: bool = False  # ended after --max-steps
    steps: Dict[str, int] = field(default_factory=dict)  # rank (or pid) -> optimizer steps
    hits: List[dict] = field(default_factory=list)  # {kind, what, where, count}
    # CUDA questions (`torch.cuda.is_available()`) asked in code the migration left as written on
    # purpose (its log's NOTE rows: the project's own NPU-aware tests): answered as on an NPU
    # machine, and no failure, as the migration's report says
    left_as_written: List[dict] = field(default_factory=list)
    exercised: Dict[str, int] = field(default_factory=dict)
    processes: int = 0
    torch_ran: str = ""  # the torch the command's processes imported ("": none did)
    environment: Dict[str, object] = field(default_factory=dict)  # --venv: the environment it ran in (venv.description)

    @property
    def torch_differs(self) -> bool:
        """Whether the torch that ran is another major.minor than the one the release is built for."""
        return bool(self.torch_ran) and major_minor(self.torch_ran) != major_minor(self.version)

    @property
    def finished(self) -> bool:
        return bool(self.exit_codes) and all(code == 0 for code in self.exit_codes)

    @property
    def ok(self) -> bool:
        return self.finished and not self.hits

    def to_json(self) -> dict:
        return {"status": "passed" if self.ok else "failed", "finished": self.finished,
                "stopped_after_max_steps": self.stopped, "exit_codes": self.exit_codes,
                "torch_version": self.version, "torch_npu_version": self.torch_npu_version,
                "torch_ran": self.torch_ran,
                "command": self.command, "processes": self.processes, "steps": self.steps,
                "hits": self.hits, "left_as_written": self.left_as_written,
                "torch_npu_apis": dict(sorted(self.exercised.items())),
                **({"environment": self.environment} if self.environment else {})}


def data_file(version: str) -> Path:
    return Path(str(apidata.resources.files(apidata.DATA_PACKAGE).joinpath(f"torch_npu_{version}.json")))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _is_python(command: Sequence[str]) -> bool:
    return Path(command[0]).name.startswith("python")


def environment(version: str, record_dir: Path, max_steps: int, npus: int, base: Optional[dict] = None) -> dict:
    env = dict(os.environ if base is None else base)
    path = [str(BOOT), str(STANDIN)] + [part for part in env.get("PYTHONPATH", "").split(os.pathsep) if part]
    env.update({
        "PYTHONPATH": os.pathsep.join(path),
        "GPU2NPU_DRYRUN": "1",
        "GPU2NPU_DRYRUN_DIR": str(record_dir),
        "GPU2NPU_DRYRUN_MAX_STEPS": str(max_steps or 0),
        "STANDIN_TORCH_NPU_DATA": str(data_file(version)),
        # (the migration's table, which the probe cannot import: it runs in the project's Python)
        "GPU2NPU_DRYRUN_FUSED_KERNELS": json.dumps(FUSED_OPTIMIZERS),
        "STANDIN_NPU_COUNT": str(npus),
        "CUDA_VISIBLE_DEVICES": "",
    })
    return env


def npu_count(nproc: int, npus: int, env: dict) -> int:
    """How many NPUs the imitation says the machine has: --npus, else one per rank, and at least
    enough for the DEVICE_ID the environment gives (a `-s` migration sets that device)."""
    count = npus or max(nproc, 1)
    device = env.get("DEVICE_ID", "")
    if device.isdigit():
        count = max(count, int(device) + 1)
    return count


def dry_run(command: Sequence[str], version: str, nproc: int = 0, max_steps: int = 0,
            cwd: Optional[Path] = None, timeout: Optional[float] = None, npus: int = 0,
            python: Optional[Path] = None) -> DryRunResult:
    """`python`: the interpreter that `python` and `python3` mean in the command and in what it
    starts (a launcher's `python train.py`)."""
    api = apidata.load(version)  # UnknownVersionError for the caller to tell
    command = list(command)
    if python is not None and re.fullmatch(r"python(\d+(\.\d+)?)?", command[0]):
        command[0] = str(python)
    result = DryRunResult(api.torch_version, api.torch_npu_version, list(command))
    with tempfile.TemporaryDirectory(prefix="gpu2npu-dryrun-") as folder:
        record_dir = Path(folder)
        npus = npu_count(nproc, npus, os.environ)
        env = environment(version, record_dir, max_steps, npus)
        if python is not None:
            env["PATH"] = os.pathsep.join([str(_python_folder(record_dir, python)), env.get("PATH", "")])
        env.setdefault("MASTER_ADDR", "127.0.0.1")
        env["MASTER_PORT"] = str(_free_port())
        processes: List[subprocess.Popen] = []
        try:
            if nproc and _is_python(command):
                for rank in range(nproc):
                    rank_env = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                                    RANK_ID=str(rank), DEVICE_ID=str(rank), RANK_SIZE=str(nproc))
                    processes.append(subprocess.Popen(command, cwd=cwd, env=rank_env))
            else:
                if nproc:
                    env["NPUS"] = ",".join(str(rank) for rank in range(nproc))
                processes.append(subprocess.Popen(command, cwd=cwd, env=env))
            for process in processes:
                result.exit_codes.append(process.wait(timeout=timeout))
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        _merge(record_dir, result, npus)
    _set_aside_what_the_migration_left(result, Path(cwd) if cwd is not None else Path.cwd())
    return result


def _set_aside_what_the_migration_left(result: DryRunResult, cwd: Path) -> None:
    """Moves the CUDA questions asked on lines that the migration's log notes as left as written
    on purpose (its NOTE rows) from the hits to `left_as_written`.  The log is the one in `cwd` or
    the nearest folder above; its rows give lines of the original files, which its first line
    names: a hit's line of the migrated file is matched to the original's by their text (code left
    as written reads the same in both).  Without the original files nothing is set aside."""
    if not any(hit["kind"] == "cuda query" for hit in result.hits):
        return
    folder = next((folder for folder in (cwd, *cwd.parents) if (folder / LOG_NAME).is_file()), None)
    migration = migration_of(folder) if folder is not None else None
    if migration is None:
        return
    source, target = migration
    spans = noted_spans(folder)
    kept = []
    for hit in result.hits:
        original_line = (_original_line(hit["where"], cwd, source, target, spans) if hit["kind"] == "cuda query"
                         else None)
        noted = original_line is not None and any(start <= original_line[1] <= end
                                                  for start, end in spans[original_line[0]])
        (result.left_as_written if noted else kept).append(hit)
    result.hits = kept


def _original_line(where: str, cwd: Path, source: Path, target: Path, spans) -> Optional[Tuple[str, int]]:
    """(file relative to the migration's root, line of the original file) of a hit's "file:line"
    in the migrated tree, where that line is one the migration left as it was and the file has
    NOTE rows (`spans`); else None."""
    path, _, line = where.rpartition(":")
    try:
        migrated = (cwd / path).resolve()
        relative = migrated.relative_to(target.resolve()).as_posix()
        if relative not in spans:
            return None
        original = source if source.is_file() else source / relative
        old = original.read_text(encoding="utf-8", errors="replace").splitlines()
        new = migrated.read_text(encoding="utf-8", errors="replace").splitlines()
    except (ValueError, OSError):
        return None
    number = int(line) if line.isdigit() else 0
    for old_start, new_start, size in difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks():
        if new_start < number <= new_start + size:
            return relative, old_start + number - new_start
    return None


def _python_folder(record_dir: Path, python: Path) -> Path:
    """A folder whose `python` and `python3` are `python`, to put first on PATH."""
    folder = record_dir / "bin"
    folder.mkdir()
    for name in ("python", "python3"):  # (a script, not a link: a venv's python finds its pyvenv.cfg by its own path)
        script = folder / name
        script.write_text(f"#!/bin/sh\nexec {shlex.quote(str(python))} \"$@\"\n", encoding="utf-8")
        script.chmod(0o755)
    return folder


def _merge(record_dir: Path, result: DryRunResult, npus: int = 0) -> None:
    hits: Dict[Tuple[str, str, str], int] = {}
    ranks: Dict[str, dict] = {}  # rank -> its report, where the process had one
    for path in sorted(record_dir.glob("*.json"), key=lambda path: int(path.stem) if path.stem.isdigit() else 0):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        result.processes += 1
        result.torch_ran = result.torch_ran or report.get("torch", "")
        if str(report.get("rank", "")).isdigit():
            ranks[str(report["rank"])] = report
        if report.get("steps"):
            result.steps[report.get("rank") or str(report["pid"])] = report["steps"]
        result.stopped = result.stopped or report.get("stopped", False)
        for hit in report.get("hits", ()):
            key = (hit["kind"], hit["what"], hit["where"])
            hits[key] = hits.get(key, 0) + hit["count"]
        for name, count in report.get("exercised", {}).items():
            result.exercised[name] = result.exercised.get(name, 0) + count
    for (kind, what, where) in _rank_collisions(ranks, npus):
        hits[(kind, what, where)] = hits.get((kind, what, where), 0) + 1
    # in the order the processes met them (the first CUDA line of the run first)
    result.hits = [{"kind": kind, "what": what, "where": where, "count": count}
                   for (kind, what, where), count in hits.items()]


def _rank_collisions(ranks: Dict[str, dict], npus: int = 0) -> List[Tuple[str, str, str]]:
    """What ranks of one run do that only one rank may: select the same NPU (where the imitation
    reports an NPU for each: with fewer, `rank % device_count()` shares them by its doing), or take
    the same samples from a training loader in its first epoch (no DistributedSampler)."""
    found: List[Tuple[str, str, str]] = []
    if len(ranks) < 2:
        return found
    order = sorted(ranks, key=int)
    by_npu: Dict[int, List[str]] = {}
    for rank in order if not npus or npus >= len(ranks) else ():
        chosen = ranks[rank].get("npu")
        if chosen:
            by_npu.setdefault(chosen[0], []).append(rank)
    for npu, sharing in sorted(by_npu.items()):
        if len(sharing) > 1:
            where = ranks[sharing[0]]["npu"][1]
            found.append(("ranks", f"ranks {', '.join(sharing)} all use NPU {npu} (each rank needs its own: "
                                   "set_device(LOCAL_RANK), or DEVICE_ID per rank)", where))
    sites = sorted({site for rank in order for site in (ranks[rank].get("samples") or {})})
    for site in sites:
        taken = {rank: tuple(ranks[rank].get("samples", {}).get(site, ())) for rank in order}
        same = [rank for rank in order if taken[rank] and list(taken.values()).count(taken[rank]) > 1]
        if same:
            found.append(("ranks", f"ranks {', '.join(same)} train on the same samples from this loader (give it a "
                                   "DistributedSampler, with set_epoch each epoch)", site))
    return found


def _why_not_imitated(what: str) -> Optional[str]:
    """Why the imitation does not implement `what` (a qualified torch_npu name), as the dry run's
    own message says it."""
    module_name, _, name = what.rpartition(".")
    return _explained_reasons()(module_name, name)


@functools.lru_cache(maxsize=None)
def _explained_reasons() -> Callable[[str, str], Optional[str]]:
    """torch_npu/_explained.py's `why`, read once, as a file: the imitation's package loads only under
    the name torch_npu, in the processes a dry run starts."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu2npu_dryrun_explained", HERE / "standin" / "torch_npu" /
                                                  "_explained.py")
    explained = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(explained)
    return explained.why


def summary(result: DryRunResult) -> str:
    """What the console says at the end of a dry run."""
    ran = f"; torch {result.torch_ran} ran" if result.torch_ran else "; no process imported torch"
    lines = [f"gpu2npu dryrun (CPU imitation of torch_npu {result.torch_npu_version}, built for torch {result.version}{ran}): "
             + ("PASSED" if result.ok else "FAILED")]
    if result.torch_differs:
        lines.append(f"  warning: torch {result.torch_ran} ran, not the torch {result.version} this torch_npu release is "
                     f"built for: what torch {result.version} lacks or takes otherwise is not exercised (run the dry run "
                     f"where `pip install torch=={result.version} --index-url https://download.pytorch.org/whl/cpu` "
                     "installed it)")
    if result.environment:
        made = "made" if result.environment["made"] else "reused"
        torch = f"torch {result.environment['torch']}" if result.environment["torch"] else "no torch"
        lines.append(f"  environment {result.environment['path']} ({made}, {torch}; the project's requirement files "
                     "installed into it, torch_npu left to the imitation)")
    codes = ", ".join(str(code) for code in result.exit_codes)
    finished = ("ended after the --max-steps optimizer steps" if result.stopped
                else "finished" if result.finished else
                "not started: its environment has no torch" if not result.exit_codes else
                f"did not finish (exit status {codes})")
    lines.append(f"  command {finished}; {result.processes} Python process{'es' if result.processes != 1 else ''} "
                 "watched")
    if not result.torch_ran and result.exit_codes and not result.finished and _is_python(result.command):
        lines.append(f"  no process imported torch: if `{result.command[0]} -c 'import torch'` fails, this is why; run "
                     "the dry run in the project's environment, name its Python with --python PATH, or let --venv DIR "
                     "make one with the release's torch and the project's requirements")
    if result.steps:
        lines.append("  optimizer steps: " + ", ".join(f"rank {rank}: {steps}" if rank.isdigit() and len(rank) < 4
                                                       else f"{steps}" for rank, steps in sorted(result.steps.items())))
    for hit in result.hits:
        why = _why_not_imitated(hit["what"]) if hit["kind"] == "not imitated" else None
        label = {"cuda": "CUDA left", "cuda query": "CUDA left", "missing": "not in this torch_npu release",
                 "keyword": "an argument this torch_npu release does not take",
                 "not imitated": f"not imitated on the CPU, as {why} (torch_npu has it; try it on the NPU)" if why
                 else "not imitated on the CPU (torch_npu has it; try it on the NPU)",
                 "compile": "a compiler this torch_npu release does not have for the NPU",
                 "fused": "a fused optimizer update this torch_npu release has no NPU kernel for",
                 "rank": "a rank using another rank's NPU", "ranks": "ranks that collide",
                 "install": "does not install in the dry run's environment"}.get(hit["kind"], hit["kind"])
        lines.append(f"  {hit['where']}: {hit['what']}: {label} ({hit['count']}x)")
    for hit in result.left_as_written:
        lines.append(f"  {hit['where']}: {hit['what']}: asked where the migration left the project's own device test "
                     f"as written (its log's NOTE row): answered as on an NPU machine, not a failure ({hit['count']}x)")
    if result.exercised:
        lines.append("  torch_npu APIs called: " + ", ".join(f"{name} ({count}x)" for name, count
                                                         in sorted(result.exercised.items())))
    return "\n".join(lines)
