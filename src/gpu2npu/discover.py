"""Which files a run sees, in a fixed order, and how each is treated."""
from __future__ import annotations

import enum
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .dependencies.formats import CONDA, dependency_format
from .shell_syntax import dialect_for

PYTHON_SUFFIXES = (".py",)
CUDA_SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")
NOTEBOOK_SUFFIXES = (".ipynb",)


class Kind(str, enum.Enum):
    PYTHON = "python"  # migrated
    NOTEBOOK = "notebook"  # code cells migrated, the rest kept
    LAUNCH_SCRIPT = "launch_script"  # shell script, Makefile, YAML job file: line rules
    CUDA_SOURCE = "cuda_source"  # copied, scanned for custom operators
    OTHER = "other"  # copied byte for byte
    SYMLINK = "symlink"  # reproduced as a link, never followed
    DIRECTORY = "directory"  # created (empty folders are kept too)
    SPECIAL = "special"  # named pipe, socket or device: never opened (reading a pipe would block)
    UNLISTABLE = "unlistable"  # a folder whose content cannot be listed


# The kinds whose files go through the engine (the others are copied, or read as dependencies).
MIGRATED_KINDS = (Kind.PYTHON, Kind.NOTEBOOK, Kind.LAUNCH_SCRIPT)


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` lies in `folder` (or is it), as written (resolve both first)."""
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


@dataclass(frozen=True)
class Entry:
    relative: str  # POSIX-style path below the input root
    absolute: Path
    kind: Kind


def _kind(path: Path) -> Kind:
    name = path.name.lower()
    if name.endswith(PYTHON_SUFFIXES):
        return Kind.PYTHON
    if name.endswith(NOTEBOOK_SUFFIXES):
        return Kind.NOTEBOOK
    if dialect_for(name) is not None and dependency_format(name) != CONDA:  # (a conda environment is no job file)
        return Kind.LAUNCH_SCRIPT
    if name.endswith(CUDA_SOURCE_SUFFIXES):
        return Kind.CUDA_SOURCE
    return Kind.OTHER


def kind_of(path: Path) -> Kind:
    return _kind(path)


def walk(root: Path) -> Iterator[Entry]:
    """Every file, link and folder below `root` (or `root` itself if it is a file), sorted, so
    that runs are deterministic.  Links are reported as links and never followed, so a link
    pointing outside the tree or into a loop cannot take the run elsewhere."""
    if root.is_file():
        yield Entry(root.name, root, _kind(root))
        return
    unlistable = []
    for folder, dirs, files in os.walk(root, followlinks=False, onerror=unlistable.append):
        yield from _unlistable(root, unlistable)
        dirs.sort()
        base = Path(folder)
        for name in list(dirs):
            path = base / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                dirs.remove(name)
                yield Entry(relative, path, Kind.SYMLINK)
            else:
                yield Entry(relative, path, Kind.DIRECTORY)
        for name in sorted(files):
            path = base / name
            relative = path.relative_to(root).as_posix()
            yield Entry(relative, path, _file_kind(path))
    yield from _unlistable(root, unlistable)


def _file_kind(path: Path) -> Kind:
    try:
        mode = path.lstat().st_mode
    except OSError:  # vanished since it was listed: reading it will say why
        return _kind(path)
    if stat.S_ISLNK(mode):
        return Kind.SYMLINK
    if not stat.S_ISREG(mode):
        return Kind.SPECIAL
    return _kind(path)


def _unlistable(root: Path, errors: list) -> Iterator[Entry]:
    """Folders os.walk could not list (it reports them through onerror, after their entry)."""
    while errors:
        error = errors.pop(0)
        path = Path(error.filename)
        if path == root:
            raise error  # the input itself: nothing can be migrated
        yield Entry(path.relative_to(root).as_posix(), path, Kind.UNLISTABLE)
