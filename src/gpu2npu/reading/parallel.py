"""One function mapped over many files in worker processes, for what reads the whole project
before any file is migrated (kernel_launchers.project_launchers): done in this process alone, that
reading is the part of a parallel run that the other processes wait for."""
from __future__ import annotations

import multiprocessing
import signal
from typing import Callable, List, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Below this many items, starting worker processes costs more than it saves (a file's reading
# costs about a millisecond, a forked worker some ten).
PARALLEL_FROM = 200


def mapped(function: Callable[[T], R], items: Sequence[T], jobs: int) -> List[R]:
    """[function(item) for item in items], in that order, in `jobs` processes where there are
    enough items.  `function` must be a module-level function and its results picklable."""
    if jobs <= 1 or len(items) < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items]
    # (forked: the workers have the parent's modules already, and start in milliseconds)
    with multiprocessing.get_context("fork").Pool(jobs, initializer=ignore_interrupts) as pool:
        return pool.map(function, items, chunksize=max(1, len(items) // (jobs * 8)))


def ignore_interrupts() -> None:
    """What a forked worker does first: Ctrl-C reaches every process of the terminal's group, and
    the parent alone handles it (and stops the workers); the parent's SIGTERM handler, which the
    fork copied, must not run here either."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
