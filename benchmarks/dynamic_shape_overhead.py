#!/usr/bin/env python3
"""What the dynamic-shape instrumentation costs a training step.

    python benchmarks/dynamic_shape_overhead.py [--steps 300] [--repeat 3]

Writes the instrumented copy of fixtures/dynamic_shapes/varlen_lm (`gpu2npu analyse -m
dynamic_shape`), runs the original and the copy for --steps steps each (CPU), --repeat times
alternately, and prints the time per step of each (best of the repeats; timed from the first
step's output line to the last, so start-up does not count), the overhead per step in milliseconds and as a ratio,
and whether the losses printed are identical.  Nothing here fails on time: it measures and prints.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "dynamic_shapes" / "varlen_lm"


def _run(folder: Path, steps: int):
    """(seconds per step, loss lines): the time between the first and the last step's line as
    they arrive (unbuffered output), so that start-up and the first step's warm-up do not count."""
    stamps, lines = [], []
    with subprocess.Popen([sys.executable, "-u", "train.py", "--steps", str(steps)], cwd=folder,
                          stdout=subprocess.PIPE, text=True) as process:
        for line in process.stdout:
            if line.startswith("step "):
                stamps.append(time.perf_counter())
                lines.append(line.rstrip("\n"))
    if process.returncode:
        raise SystemExit(f"{folder}/train.py failed ({process.returncode})")
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="gpu2npu-shape-bench-"))
    try:
        gpu2npu = Path(sys.executable).parent / "gpu2npu"
        subprocess.run([str(gpu2npu), "analyse", "-i", str(PROJECT), "-o", str(out), "-v", "2.1.0", "-m",
                        "dynamic_shape"], check=True, capture_output=True)
        copy = out / "varlen_lm_analysis" / "varlen_lm"
        times = {"original": [], "instrumented": []}
        losses = {}
        for _ in range(args.repeat):
            for name, folder in (("original", PROJECT), ("instrumented", copy)):
                per_step, losses[name] = _run(folder, args.steps)
                times[name].append(per_step)
        original, instrumented = min(times["original"]), min(times["instrumented"])
        print(f"steps: {args.steps}, repeats: {args.repeat}")
        print(f"original:     {original * 1000:.3f} ms/step")
        print(f"instrumented: {instrumented * 1000:.3f} ms/step")
        print(f"overhead:     {(instrumented - original) * 1000:.3f} ms/step ({instrumented / original:.2f}x)")
        print(f"losses identical: {losses['original'] == losses['instrumented']} ({len(losses['original'])} steps)")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
