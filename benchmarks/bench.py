#!/usr/bin/env python3
"""Speed of a migration against a bare libcst baseline, measured in one go on the same tree.

    python benchmarks/bench.py TREE [-j 2] [-v 2.1.0]

Compiles gpu2npu's bytecode first (as `pip install` does), then runs, one after the other:
  1. baseline:   libcst `parse_module` + code generation of every .py file of TREE, with the same
                 number of processes (the least any libcst-based tool must pay);
  2. cold:       `gpu2npu -i TREE ...` with an empty cache;
  3. warm:       the same command again (unchanged tree, cache filled by the cold run);
  4. check cold: `gpu2npu check TREE` with an empty cache of its own;
  5. check warm: the same again, and `ast.parse` of every file alone, with the same number of
                 processes (start-up included): the least a check that reads every file must pay;
  6. small:      the migration and the check of one small project that ships with the repository
                 (fixtures/cuda_scripts/ddp_spawn_imagenet, an imagenet-style script), each with
                 no cache, the median of 5 runs: what a user waits for on a one-script project
                 (start-up included), beside its own baseline taken in turns with it: a Python
                 that imports libcst and parses and prints the project's files (the least a
                 libcst-based tool pays there, start-up included);
  7. large:      a generated 3 MiB Python file with a CUDA call in every third function,
                 migrated (in pieces: files above 1 MiB are not parsed whole);
  8. fifth:      where TREE has a `models/` folder (transformers), a fixed fifth of it: its
                 top-level modules and models/a* to models/d*, the baseline and a cold migration
                 of that part alone (a project of a few hundred files);
and prints the wall times, the ratios to the baseline, and the peak memory of each run
(resident memory of all its processes together, sampled every 20 ms).  Before each run the
file system's pending writes are flushed (`sync`), so that no run pays for the previous one's.  The baseline is
measured first and again last, and the ratios use the mean of the two: on a shared machine
the same work takes a quarter more or less from one minute to the next.

The figures of the speed targets were taken on transformers 5.23.0 (2,860 files):
    pip download --no-deps transformers==5.23.0 -d /tmp/tf
    python -m zipfile -e /tmp/tf/transformers-5.23.0-py3-none-any.whl /tmp/tf/tree
    python benchmarks/bench.py /tmp/tf/tree/transformers -j 2
Nothing here fails on time: it measures and prints.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


SMALL_PROJECT = Path(__file__).resolve().parent.parent / "fixtures" / "cuda_scripts" / "ddp_spawn_imagenet"


def _large_source(size: int) -> str:
    """A generated module of about `size` bytes: helpers, and every third function moves data
    to the GPU."""
    parts = ["import torch\nimport torch.nn as nn\n\nDEVICE = 'cuda'\n\n"]
    total, number = len(parts[0]), 0
    while total < size:
        number += 1
        if number % 3 == 0:
            part = (f"def step_{number}(model, x):\n    x = x.cuda()\n    torch.cuda.synchronize()\n"
                    f"    y = model(x)\n    for k in range(4):\n        y = y * {number % 7 + 1} + k\n"
                    "    return y.to('cuda:0')\n\n\n")
        else:
            part = (f"def helper_{number}(a, b):\n    total = 0\n    for k in range(a):\n"
                    f"        total += k * b + {number}\n    values = [j ** 2 for j in range(b)]\n"
                    "    return total + sum(values)\n\n\n")
        parts.append(part)
        total += len(part)
    return "".join(parts)


def _parse_and_print(path: str) -> int:
    import libcst

    try:
        return len(libcst.parse_module(Path(path).read_bytes()).code)
    except Exception:  # files libcst cannot read count as read
        return 0


def _parse_with_ast(path: str) -> int:
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (invalid escapes in strings)
        try:
            return len(ast.parse(Path(path).read_bytes()).body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return 0


def _baseline(files, jobs: int, work=_parse_and_print) -> None:
    if jobs <= 1:
        for path in files:
            work(path)
        return
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for _ in pool.imap_unordered(work, files, chunksize=4):
            pass


def _tree_rss(root_pid: int) -> int:
    """Resident bytes of `root_pid` and all its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total


class PeakMemory:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(self.pid))
            time.sleep(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _timed_child(argv) -> tuple:
    # What the previous run wrote is flushed first: a warm run must not pay for the writeback of
    # the cold run's tree (the same 60 MB of files, written a second before).
    if hasattr(os, "sync"):
        os.sync()
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with PeakMemory(process.pid) as memory:
        _, err = process.communicate()
    elapsed = time.perf_counter() - started
    if process.returncode not in (0, 1, 3):  # check exits 1 when it finds CUDA-only code
        sys.exit(f"command failed ({process.returncode}): {' '.join(argv)}\n{err.decode(errors='replace')}")
    return elapsed, memory.peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("-v", "--version", default="2.1.0")
    args = parser.parse_args()
    files = sorted(str(p) for p in args.tree.rglob("*.py") if p.is_file() and not p.is_symlink())
    print(f"tree: {args.tree} ({len(files)} Python files), {args.jobs} processes")
    _compile_package()

    work = Path(tempfile.mkdtemp(prefix="gpu2npu-bench-"))
    try:
        baseline_argv = [sys.executable, __file__, "--baseline-only", str(args.tree), str(args.jobs)]
        baseline, baseline_peak = _timed_child(baseline_argv)
        command = [sys.executable, "-m", "gpu2npu", "-i", str(args.tree), "-o", str(work / "out"), "-v", args.version,
                   "-j", str(args.jobs), "--cache-dir", str(work / "cache"), "--force"]
        cold, cold_peak = _timed_child(command)
        warm, warm_peak = _timed_child(command)
        check = [sys.executable, "-m", "gpu2npu", "check", str(args.tree), "-v", args.version, "-j", str(args.jobs),
                 "--cache-dir", str(work / "check-cache")]
        check_cold, check_cold_peak = _timed_child(check)
        check_warm, check_warm_peak = _timed_child(check)
        ast_only, ast_only_peak = _timed_child([sys.executable, __file__, "--ast-only", str(args.tree), str(args.jobs)])
        small_runs = {"baseline": [sys.executable, __file__, "--baseline-only", str(SMALL_PROJECT), "1"],
                      "migration": [sys.executable, "-m", "gpu2npu", "-i", str(SMALL_PROJECT), "-o",
                                    str(work / "small"), "-v", args.version, "--no-cache", "--force"],
                      "check": [sys.executable, "-m", "gpu2npu", "check", str(SMALL_PROJECT), "-v", args.version,
                                "--no-cache"]}
        small_times = {name: [] for name in small_runs}
        for _ in range(5):  # in turns: a slow minute weighs on each alike
            for name, argv in small_runs.items():
                small_times[name].append(_timed_child(argv)[0])
        small = {name: sorted(times)[len(times) // 2] for name, times in small_times.items()}
        large_project = work / "large"
        large_project.mkdir()
        (large_project / "generated.py").write_text(_large_source(3 * 1024 * 1024))
        large, large_peak = _timed_child([sys.executable, "-m", "gpu2npu", "-i", str(large_project), "-o",
                                          str(work / "large_out"), "-v", args.version, "--no-cache"])
        written = work / "large_out" / "large_msft" / "generated.py"
        migrated = written.is_file() and written.read_text() != (large_project / "generated.py").read_text()
        fifth = None
        if (args.tree / "models").is_dir():
            part = _fifth_of(args.tree, work / "fifth" / args.tree.name)
            fifth_files = sum(1 for _ in part.rglob("*.py"))
            fifth_baseline = _timed_child([sys.executable, __file__, "--baseline-only", str(part), str(args.jobs)])[0]
            fifth_cold = _timed_child([sys.executable, "-m", "gpu2npu", "-i", str(part), "-o", str(work / "fifth_out"),
                                       "-v", args.version, "-j", str(args.jobs), "--no-cache"])[0]
            fifth = (fifth_files, fifth_baseline, fifth_cold)
        baseline_again, _ = _timed_child(baseline_argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    first_baseline, baseline = baseline, (baseline + baseline_again) / 2

    def row(name, seconds, peak):
        return f"{name:<11} {seconds:8.1f} s  {seconds / baseline:6.3f} x baseline  peak {peak / 2**20:7.0f} MiB"

    print(f"baseline measured {first_baseline:.1f} s first and {baseline_again:.1f} s last: the mean is the baseline")
    print(row("baseline", baseline, baseline_peak))
    print(row("cold", cold, cold_peak))
    print(row("warm", warm, warm_peak))
    print(row("check cold", check_cold, check_cold_peak))
    print(row("check warm", check_warm, check_warm_peak))
    print(row("ast.parse", ast_only, ast_only_peak) + "  (alone: the least a check that reads every file pays)")
    for name, seconds in small.items():
        print(f"small {name:<9} {seconds:6.2f} s wall  {seconds / small['baseline']:6.2f} x its baseline  "
              f"(median of 5, {SMALL_PROJECT.name})")
    print(f"large 3 MiB file {large:6.1f} s  peak {large_peak / 2**20:7.0f} MiB  "
          f"{'migrated' if migrated else 'NOT migrated (copied unchanged, or no output)'}")
    if fifth is not None:
        files_, fifth_baseline, fifth_cold = fifth
        print(f"fifth ({files_} files): baseline {fifth_baseline:.1f} s, cold {fifth_cold:.1f} s, "
              f"{fifth_cold / fifth_baseline:.3f} x its baseline")
    return 0


def _compile_package() -> None:
    """Compile gpu2npu's bytecode, as `pip install` does: from a source checkout (an editable
    install) under PYTHONDONTWRITEBYTECODE every run would compile every module again, a tenth
    of a second that no installed copy pays."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("gpu2npu")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        compileall.compile_dir(folder, quiet=1)


def _fifth_of(tree: Path, part: Path) -> Path:
    """The top-level modules of `tree` and its models/a* to models/d* folders, copied to `part`."""
    part.mkdir(parents=True)
    for path in tree.glob("*.py"):
        shutil.copy2(path, part / path.name)
    (part / "models").mkdir()
    for folder in sorted((tree / "models").iterdir()):
        if folder.is_dir() and folder.name[:1] in "abcd":
            shutil.copytree(folder, part / "models" / folder.name)
    return part


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] in ("--baseline-only", "--ast-only"):
        tree, jobs = Path(sys.argv[2]), int(sys.argv[3])
        _baseline(sorted(str(p) for p in tree.rglob("*.py") if p.is_file() and not p.is_symlink()), jobs,
                  _parse_and_print if sys.argv[1] == "--baseline-only" else _parse_with_ast)
        sys.exit(0)
    sys.exit(main())
