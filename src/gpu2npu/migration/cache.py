"""A content-hash cache of per-file results, so that re-running a migration redoes only what
changed.

The key of a file is the hash of its bytes, its path in the project (reports name it) and a salt
made of everything else a result depends on: the tool's own code and data (so a new version, or
a modified checkout, never reads old results), the Python minor version (its parser decides which
files get API rows) and the run's options (torch version, mode, rule files...).  A changed file or
option therefore misses; everything else is read back as it was computed.  The cache lives
outside the migrated tree (by default in the user's cache folder) in one SQLite file, written by
the main process only; a cache that cannot be opened or written is reported once and the run goes
on without it.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import pickle
import sqlite3
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

from .. import __version__

FILE_NAME = "results.sqlite"
_TABLES = ("results", "derived", "projects")
# Results are written in batches: one transaction per file would dominate a warm run.  A batch is
# kept in memory until then and written in one short transaction, so that another run using the
# same cache (a `check` beside a migration, parallel CI jobs) waits for the database at most that
# long, never for the whole of this run.
COMMIT_EVERY = 200
# How long a run waits for another's short write before it goes on without the cache.
LOCK_SECONDS = 10
# What `_read` answers when nothing usable is kept (None is a value like any other).
_MISSING = object()


def default_folder() -> Path:
    configured = os.environ.get("GPU2NPU_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu2npu"


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """Hash of the installed package's own sources and data: any change to rules or API data
    changes every key."""
    root = Path(__file__).resolve().parent.parent  # the package gpu2npu, not this folder
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file():
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _canonical(value: Any) -> Any:
    """A JSON-able form of an options object that does not depend on set order or identity."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if type(value).__name__ == "ApiData":
            return {"torch": value.torch_version, "torch_npu": value.torch_npu_version}
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda item: str(item[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def salt_for(options: Any) -> str:
    text = json.dumps(_canonical(options), sort_keys=True, default=str)
    # Which syntax Python's own parser reads (and so which files get API rows) is the running
    # Python's: a result is read back only by the Python minor version that computed it.
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return hashlib.sha256(f"{code_fingerprint()}\n{python}\n{text}".encode()).hexdigest()


def key_for(salt: str, relative: str, data: bytes) -> str:
    digest = hashlib.sha256(salt.encode())
    digest.update(relative.encode("utf-8", "surrogateescape"))
    digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest()


class ResultCache:
    def __init__(self, folder: Path, salt: str) -> None:
        self.folder = folder
        self.salt = salt
        self.hits = 0
        self.misses = 0
        self.problem: Optional[str] = None
        self._pending: Dict[Tuple[str, str], bytes] = {}  # (table, key) -> value, not yet written
        self._db: Optional[sqlite3.Connection] = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(folder / FILE_NAME), timeout=LOCK_SECONDS)
            try:  # (readers never wait for a writer; not every file system offers it)
                self._db.execute("PRAGMA journal_mode=WAL")
            except sqlite3.Error:
                pass
            with self._db:
                for table in _TABLES:
                    self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        except (OSError, sqlite3.Error) as error:
            self._disable(error)

    def _disable(self, error: Exception) -> None:
        self.problem = f"cache {self.folder} not used: {error}"
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None

    def key(self, relative: str, data: bytes) -> str:
        return key_for(self.salt, relative, data)

    def get(self, key: str):
        result = self._read("results", key)
        if result is _MISSING:
            if self._db is not None:  # (not when the cache just went out of use)
                self.misses += 1
            return None
        self.hits += 1
        return result

    def put(self, key: str, result) -> None:
        self._write("results", key, result)

    def derived(self, name: str, build: Callable[[], Any]) -> Any:
        """What `build()` makes from gpu2npu's own code alone (the rule catalogue), kept under the
        code fingerprint: built once per version of the code, read back by later runs.  Not
        counted among the files' hits and misses."""
        key = hashlib.sha256(f"{code_fingerprint()}\0{name}".encode()).hexdigest()
        value = self._read("derived", key)
        if value is _MISSING:
            value = build()
            self._write("derived", key, value)
        return value

    def project_kernels(self, entries) -> Optional[dict]:
        """What an earlier run of this code read of the same tree's files for the project's
        kernels (reading.kernel_launchers.project_launchers), or None."""
        value = self._read("projects", self._project_key(entries))
        return None if value is _MISSING else value

    def put_project_kernels(self, entries, read: dict) -> None:
        self._write("projects", self._project_key(entries), read)

    @staticmethod
    def _project_key(entries) -> str:
        # (the tree's root, as the first entry's absolute path less its relative one: a cache
        # folder serves many projects)
        first = next(iter(entries), None)
        root = str(first.absolute)[:-len(first.relative)] if first is not None and first.relative else ""
        return hashlib.sha256(f"{code_fingerprint()}\0project kernels\0{root}".encode()).hexdigest()

    def _read(self, table: str, key: str) -> Any:
        """The value kept under `key` in `table`, or _MISSING: none kept, one written by an
        incompatible interpreter (computed again), or no cache in use."""
        if self._db is None:
            return _MISSING
        pending = self._pending.get((table, key))
        try:
            row = (pending,) if pending is not None else self._db.execute(
                f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as error:
            self._disable(error)
            return _MISSING
        if row is None:
            return _MISSING
        try:
            return pickle.loads(row[0])
        except Exception:
            return _MISSING

    def _write(self, table: str, key: str, value: Any) -> None:
        if self._db is None:
            return
        self._pending[(table, key)] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if len(self._pending) >= COMMIT_EVERY:
            try:
                self._flush()
            except sqlite3.Error as error:
                self._disable(error)

    def _flush(self) -> None:
        """Write the pending values in one transaction."""
        by_table: Dict[str, list] = {}
        for (table, key), value in self._pending.items():
            by_table.setdefault(table, []).append((key, value))
        with self._db:
            for table, rows in by_table.items():
                self._db.executemany(f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)", rows)
        self._pending.clear()

    def close(self) -> None:
        if self._db is None:
            return
        try:
            self._flush()
            self._db.close()
        except sqlite3.Error as error:
            self.problem = f"cache {self.folder}: results not saved: {error}"
        self._db = None
