#!/usr/bin/env python3
"""Speed and memory of `gpu2npu analyse -m third_party` on libraries, measured in one go.

    python benchmarks/third_party.py LIBRARY [LIBRARY ...] [-j 2] [-v 2.1.0] [--jedi-seconds 120]

For each LIBRARY (an installed package folder), one after the other:
  1. cold:   the analysis with an empty cache (every module read, the engine's per-file analysis,
             jedi asked what the library's own source leaves open, within --jedi-seconds);
  2. re-run: the same command with the cache the cold run filled (the library unchanged);
  3. touched: the largest module changed (a comment appended; the runs work on a copy of the
             library), the same cache: what a change of one file costs;
and prints the wall times, the peak memory of each run (resident memory of all its processes
together, sampled every 20 ms, as benchmarks/bench.py does), and the figures of the cold run's
log: modules, call sites that may lead into the library, how many the source answered, how many
jedi was asked, gave up on or did not reach, and the affected public APIs.  Nothing here fails on
time: it measures and prints.

The figures of issue 40 were taken on (2 cores):
    pip download --no-deps transformers==5.23.0 timm==1.0.31 ultralytics==8.4.190 -d /tmp/pkgs
    python -m zipfile -e /tmp/pkgs/transformers-5.23.0-py3-none-any.whl /tmp/pkgs/tree   (and the others)
    python benchmarks/third_party.py /tmp/pkgs/tree/transformers /tmp/pkgs/tree/timm /tmp/pkgs/tree/ultralytics
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import _compile_package, _timed_child  # noqa: E402  (the same timing and memory sampling)

FIGURES = ("files", "call sites", "asked", "by the index", "by jedi", "jedi gave up", "not asked", "resolved",
           "affected public APIs", "seconds: read", "seconds: analysis", "seconds: jedi", "cached",
           "modules read (not from the cache)")


def _figures(log: Path) -> dict:
    found = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = re.match(r".*\[INFO\] ([^:]+(?:: \w+)?|modules read \(not from the cache\)): ([\d.]+)$", line)
        if match and match.group(1) in FIGURES:
            found[match.group(1)] = match.group(2)
    return found


def _reuse(figures: dict) -> str:
    return (f"{figures.get('modules read (not from the cache)', '?')} modules read, jedi's answers of "
            f"{figures.get('cached', '?')} files from the cache, {figures.get('not asked', '0')} call sites not reached")


def _command(library: Path, output: Path, cache: Path, args) -> list:
    return [sys.executable, "-m", "gpu2npu", "analyse", "-i", str(library), "-o", str(output), "-v", args.version,
            "-m", "third_party", "-j", str(args.jobs), "--cache-dir", str(cache), "--jedi-seconds",
            str(args.jedi_seconds), "--force"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("libraries", type=Path, nargs="+")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("-v", "--version", default="2.1.0")
    parser.add_argument("--jedi-seconds", type=float, default=120)
    args = parser.parse_args()
    _compile_package()
    for library in args.libraries:
        library = library.resolve()
        with tempfile.TemporaryDirectory(prefix="gpu2npu-third-party-") as scratch:
            scratch = Path(scratch)
            cache, output = scratch / "cache", scratch / "out"
            copy = scratch / library.name  # (a copy, so that one of its files can be changed)
            shutil.copytree(library, copy)
            cold, cold_peak = _timed_child(_command(copy, output, cache, args))
            log = next(output.glob("*_analysis")) / "pytorch_analysis.txt"
            figures = _figures(log)
            rerun, rerun_peak = _timed_child(_command(copy, output, cache, args))
            again = _figures(log)
            touched_file = sorted(copy.rglob("*.py"), key=lambda path: -path.stat().st_size)[0]
            with touched_file.open("a", encoding="utf-8") as handle:
                handle.write("\n# touched\n")
            touched, touched_peak = _timed_child(_command(copy, output, cache, args))
            after_change = _figures(log)
        print(f"{library.name}: {figures.get('files', '?')} modules, {figures.get('call sites', '?')} call sites, "
              f"{figures.get('asked', '?')} that may lead into the library: {figures.get('by the index', '?')} "
              f"answered from the source, {figures.get('by jedi', '?')} asked of jedi "
              f"({figures.get('jedi gave up', '0')} given up, {figures.get('not asked', '0')} not reached); "
              f"{figures.get('affected public APIs', '?')} affected public APIs")
        print(f"  cold     {cold:7.1f} s  peak {cold_peak / 2**20:6.0f} MiB  (read {figures.get('seconds: read', '?')} s, "
              f"analysis {figures.get('seconds: analysis', '?')} s, jedi {figures.get('seconds: jedi', '?')} s)")
        print(f"  re-run   {rerun:7.1f} s  peak {rerun_peak / 2**20:6.0f} MiB  ({_reuse(again)})")
        print(f"  touched  {touched:7.1f} s  peak {touched_peak / 2**20:6.0f} MiB  ({touched_file.name} changed: "
              f"{_reuse(after_change)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
