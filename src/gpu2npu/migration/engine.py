"""Every command's way through the files: each one read, migrated in a process pool (or in
this process when there are few), read back from the content-hash cache where it was seen
before, and handed on in the order of the files, whatever the number of processes, so that
what a command prints or writes is identical with -j 1 and -j N, cached or not.

With a cache, this process reads each file for its key and the worker that migrates it reads it
again, keying the result on the bytes it migrated.  Handing the bytes read here to the workers
instead costs more than the second read: this process then spends 0.4 s more CPU on the 2,860
files of transformers, beside the workers, on a machine whose cores they already fill.

The commands differ only in what they do with the results: the migration writes a tree and
the reports, `--diff` prints diffs, `check` prints findings.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import os
from pathlib import Path
from typing import Generator, Iterator, List, Optional, Sequence, Tuple

from . import cache
from ..knowledge.generated_packages import kept_by_some_file
from ..reading.discover import Entry, modules_beside, npu_backend_files, packages_held, project_modules
from ..reading.kernel_launchers import project_launchers
from ..reading.parallel import ignore_interrupts
from ..reading.project_options import backend_options_kept_in, scripts_with_own_option
from ..records.results import FileResult, Status, with_not_migrated_row
from ..reading.suppressions import suppressions_in
from ..records.options import Options


class Engine:
    """The per-file work of one run: `results(entries)` yields (entry, FileResult) in order.
    With a cache folder, results are read back and stored there (see `cache`); `close()`
    saves them and `problem` tells why the cache could not be used, if so."""

    def __init__(self, options: Options, jobs: int = 0, cache_folder: Optional[Path] = None) -> None:
        self.options = options
        self.jobs = jobs
        self.cache = cache.ResultCache(cache_folder, cache.salt_for(options)) if cache_folder is not None else None
        self._running: List[Generator] = []

    def results(self, entries: Sequence[Entry]) -> Iterator[Tuple[Entry, FileResult]]:
        # What a file loads as its own, which modules are the project's and what a script's options
        # mean depend on the tree: so do the results.  (check names its entries from its command
        # line: it gives the project's modules itself.)
        backend = npu_backend_files(entries)
        # (a file read by an earlier run, of the same size and time, is not read again)
        known = self.cache.project_kernels(entries) if self.cache is not None else None
        kernels = project_launchers(entries, backend, known, self.jobs or os.cpu_count() or 1)
        if self.cache is not None:
            self.cache.put_project_kernels(entries, kernels.read)
        options = dataclasses.replace(self.options, packages_held=packages_held(entries),
                                      backend_options_kept=backend_options_kept_in(entries, kernels.foreign_backends),
                                      scripts_with_own_tf32=scripts_with_own_option(entries, "--tf32"),
                                      project_modules=self.options.project_modules or project_modules(entries),
                                      modules_beside=modules_beside(entries),
                                      npu_backend_files=backend | kernels.triton_ascend_files,
                                      kernel_launchers=kernels.launchers, python_operators=kernels.operators,
                                      npu_constants=kernels.constants, kernel_questions=kernels.kernel_questions,
                                      foreign_backends=kernels.foreign_backends,
                                      enum_parameters=kernels.enum_parameters, npu_marks=kernels.npu_marks,
                                      environment_reads=kernels.environment_reads,
                                      reroute_kept=kept_by_some_file(kernels.package_imports))
        if self.cache is not None:
            self.cache.salt = cache.salt_for(options)
        computed = migrate_all(entries, options, self.jobs, self.cache)
        self._running.append(computed)
        return zip(entries, computed)

    @property
    def hits(self) -> int:
        return self.cache.hits if self.cache is not None else 0

    @property
    def misses(self) -> int:
        return self.cache.misses if self.cache is not None else 0

    @property
    def problem(self) -> Optional[str]:
        return self.cache.problem if self.cache is not None else None

    def close(self) -> None:
        # A run stopped part way (Ctrl-C while a result is written) leaves its generators
        # suspended; closed here, their clean-up (the collector's state, the worker pool) runs
        # now, not at interpreter exit, when the modules it calls may already be torn down.
        for computed in self._running:
            computed.close()
        self._running.clear()
        if self.cache is not None:
            self.cache.close()


def _migrate_entry(entry: Entry, options: Options, salt: Optional[str] = None):
    """Read and migrate one Python file, notebook or launch script (in a worker process when
    running in parallel); with a cache salt, also the cache key of the bytes actually migrated."""
    try:
        data = entry.absolute.read_bytes()
    except OSError as error:
        return None, with_not_migrated_row(
            FileResult(entry.relative, Status.FAILED, error=f"cannot be read: {error.strerror or error}"))
    from .sources import migrate_file  # (libcst and the rules: only where a file is migrated)

    result = migrate_file(entry.kind, data, entry.relative, options)
    result.suppressions = suppressions_in(entry.kind, data)
    return (cache.key_for(salt, entry.relative, data) if salt else None), result


_WORKER_OPTIONS: Optional[Options] = None
_WORKER_SALT: Optional[str] = None


def _init_worker(options: Options, salt: Optional[str]) -> None:
    global _WORKER_OPTIONS, _WORKER_SALT, _freezing_survivors
    _WORKER_OPTIONS, _WORKER_SALT = options, salt
    ignore_interrupts()
    _freezing_survivors = True  # (until the worker ends)
    gc.freeze()  # see _long_lived_frozen


def _work(entry: Entry):
    with _collecting_rarely():
        return _migrate_entry(entry, _WORKER_OPTIONS, _WORKER_SALT)


# Syntax trees are millions of short-lived objects without cycles, freed by reference counting;
# the cyclic collector's passes over them cost a quarter of the migration time.  It runs every
# this many files instead, which keeps the memory bounded.
COLLECT_EVERY = 50
_files_since_collection = 0
# Whether what survives a pass is frozen (see _long_lived_frozen): true in a worker and while a
# run in this process has frozen what existed before it, which it unfreezes at its end.
_freezing_survivors = False


@contextlib.contextmanager
def _collecting_rarely():
    global _files_since_collection
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        _files_since_collection += 1
        if _files_since_collection >= COLLECT_EVERY:
            _files_since_collection = 0
            gc.collect()
            if _freezing_survivors:
                gc.freeze()
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _long_lived_frozen():
    """What exists before the first file (modules, the API data, the options) is left out of the
    collector's passes while files are migrated: each pass would otherwise go through all of it
    again, a tenth of a second per hundred files.  So is what survives each pass (the tables and
    caches that the first files load): together a fifth of a second per hundred files."""
    global _freezing_survivors
    gc.collect()
    gc.freeze()
    _freezing_survivors = True
    # (held here: a run interrupted while its generator waits here is closed at interpreter exit,
    # when the gc module's names may already be None; the function itself still works)
    unfreeze = gc.unfreeze
    try:
        yield
    finally:
        _freezing_survivors = False
        unfreeze()


# Below this many Python files to migrate, starting worker processes costs more than it saves.
PARALLEL_FROM = 16


def migrate_all(entries: Sequence[Entry], options: Options, jobs: int,
                results: Optional[cache.ResultCache] = None) -> Iterator[FileResult]:
    """FileResults in the order of `entries`, whatever the number of processes, so that output
    and reports are identical with -j 1 and -j N.  With a cache, files whose bytes and options
    were seen before are read back instead of migrated."""
    cached: List[Optional[FileResult]] = []
    for entry in entries:
        hit = None
        if results is not None:
            try:
                hit = results.get(results.key(entry.relative, entry.absolute.read_bytes()))
            except OSError:
                hit = None  # migrated (and its read error reported) like any other miss
        cached.append(hit)
    misses = [entry for entry, hit in zip(entries, cached) if hit is None]
    salt = results.salt if results is not None else None
    computed = _compute(misses, options, jobs, salt)
    try:
        for hit in cached:
            if hit is not None:
                yield hit
                continue
            key, result = next(computed)
            if key is not None and results is not None:
                results.put(key, result)
            yield result
    finally:
        computed.close()


def _compute(entries: Sequence[Entry], options: Options, jobs: int, salt: Optional[str]):
    from . import sources  # noqa: F401 (imported once here, before the workers fork, not in each)

    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(entries) < PARALLEL_FROM:
        with _long_lived_frozen() if len(entries) > COLLECT_EVERY else contextlib.nullcontext():
            for entry in entries:
                with _collecting_rarely():
                    outcome = _migrate_entry(entry, options, salt)
                yield outcome
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with context.Pool(jobs, initializer=_init_worker, initargs=(options, salt)) as pool:
        yield from pool.imap(_work, entries, chunksize=2)
