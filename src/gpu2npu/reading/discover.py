"""Which files a run sees, in a fixed order, and how each is treated."""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, Optional, Set, Tuple

from ..knowledge.tips import CUDA_ONLY_PACKAGES, names_the_npu
from .dependency_files import CONDA, dependency_format
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


# What makes a folder a Python project's root (where its packages are imported from).
_PROJECT_FILES = ("setup.py", "pyproject.toml", "setup.cfg")


def own_packages(source: Path) -> FrozenSet[str]:
    """The CUDA-only packages (top-level names) that the project at `source` (a folder, or a
    file's folder) holds as its own: a package folder (with __init__.py) or a module file of the
    name at its root, in src/, or in a folder one down that is a Python project's root itself (a
    setup.py, pyproject.toml or setup.cfg: an unpacked sdist `name-1.0/name`, a monorepo's
    `python/name`).  Run from there, `import name` loads that code (a regular package or module
    found first on the path wins over an installed one): the project is the package, as where
    liger_kernel or flash-attn itself is migrated.  A copy kept in `third_party/name` is not:
    that folder is on no path, and `import name` loads the installed package."""
    root = source if source.is_dir() else source.parent
    folders = [root, root / "src"]
    try:
        folders += [Path(entry.path) for entry in os.scandir(root)
                    if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".")
                    and any(os.path.isfile(os.path.join(entry.path, marker)) for marker in _PROJECT_FILES)]
    except OSError:
        pass  # (an unlistable root: its own listing error is reported by the walk)
    names = {package.split(".", 1)[0] for package in CUDA_ONLY_PACKAGES}
    return frozenset(name for name in names for folder in folders
                     if (folder / name / "__init__.py").is_file() or (folder / f"{name}.py").is_file())


def packages_held(entries: Iterable[Entry]) -> Tuple[Tuple[str, FrozenSet[str]], ...]:
    """The folders among `entries` whose files load a copy of a CUDA-only package that the tree
    holds, beside the root's own (own_packages): (folder, as Entry.relative writes it; the
    package's top-level names), sorted.  A top-level package's own files load the package they
    sit in (`import name.sub` in name/x.py runs only where that `name` was imported); the files of a
    Python project kept deeper in the tree (a setup.py, pyproject.toml or setup.cfg beside
    `name/` or `src/name/`: a vendored dependency with its examples) load the package that
    project installs.  A bare copy such as third_party/name loads it for its own files only."""
    names = {package.split(".", 1)[0] for package in CUDA_ONLY_PACKAGES}
    held: Dict[str, Set[str]] = {}
    for entry in entries:
        parts = entry.relative.split("/")
        if len(parts) < 2 or parts[-1] != "__init__.py" or parts[-2] not in names:
            continue
        name, package = parts[-2], entry.absolute.parent
        if (package.parent / "__init__.py").is_file():
            continue  # (a subpackage such as diffusers/models/transformers: `import transformers` is not it)
        held.setdefault("/".join(parts[:-1]), set()).add(name)
        project, above = package.parent, parts[:-2]
        if above and above[-1] == "src":
            project, above = project.parent, above[:-1]
        if above and any((project / marker).is_file() for marker in _PROJECT_FILES):
            held.setdefault("/".join(above), set()).add(name)
    return tuple(sorted((folder, frozenset(found)) for folder, found in held.items()))


def npu_backend_files(entries: Iterable[Entry]) -> FrozenSet[str]:
    """The Python files among `entries` (as Entry.relative writes them) of the project's own NPU
    backend: a module named for the NPU, or one inside a package (a folder with __init__.py, up to
    the top of its package) named for it (knowledge.tips.names_the_npu).  Read from the files'
    folders, not from how a path was typed: `check npu_demo/kernels/add.py` and `check .` in
    npu_demo agree, and a project's root folder is no package."""
    answers: Dict[Path, bool] = {}  # folder -> whether it is in a package named for the NPU

    def in_npu_package(folder: Path) -> bool:
        if folder not in answers:
            answers[folder] = (folder / "__init__.py").is_file() and (
                names_the_npu(folder.name) or in_npu_package(folder.parent))
        return answers[folder]

    # (a folder is asked whether it is a package only where one above the file names the NPU)
    return frozenset(entry.relative for entry in entries if entry.kind == Kind.PYTHON and (
        names_the_npu(entry.absolute.stem) or (names_the_npu("_".join(entry.absolute.parent.parts))
                                               and in_npu_package(entry.absolute.parent))))


def project_modules(entries: Iterable[Entry]) -> FrozenSet[str]:
    """The top-level names that `import name` finds among `entries` run from the root or from its
    src/: a module file there, or a folder of Python files (a package, or a namespace package)."""
    names: Set[str] = set()
    for entry in entries:
        if entry.kind != Kind.PYTHON:
            continue
        parts = entry.relative.split("/")
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        name = parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0] if len(parts) > 1 else ""
        if name.isidentifier():
            names.add(name)
    return frozenset(names)


def modules_beside(entries: Iterable[Entry]) -> Tuple[Tuple[str, FrozenSet[str]], ...]:
    """(folder, the modules `import name` finds there) for each folder below the root, other than
    src/, that holds Python files and is no package (no __init__.py): a folder of scripts, run as
    `python scripts/sample.py`, whose sibling modules are on sys.path when they run."""
    files: Dict[str, Set[str]] = {}  # folder -> the names of its Python files
    for entry in entries:
        if entry.kind == Kind.PYTHON and "/" in entry.relative:
            folder, name = entry.relative.rsplit("/", 1)
            files.setdefault(folder, set()).add(name)
    inner: Dict[str, Set[str]] = {}  # folder -> its folders that hold Python files
    for folder in files:
        if "/" in folder:
            above, name = folder.rsplit("/", 1)
            inner.setdefault(above, set()).add(name)
    found = []
    for folder, names in files.items():
        if "__init__.py" in names or folder == "src":
            continue
        modules = {name[:-3] for name in names if name[:-3].isidentifier()}
        modules |= {name for name in inner.get(folder, ()) if name.isidentifier()}
        if modules:
            found.append((folder, frozenset(modules)))
    return tuple(sorted(found))


def modules_in(folders: Iterable[Path]) -> FrozenSet[str]:
    """The modules `import name` finds in `folders` (a module file, or a folder holding Python
    files): what project_modules finds in a tree, read from the folders alone, one level deep."""
    names: Set[str] = set()
    for folder in folders:
        try:
            with os.scandir(folder) as found:
                for entry in found:
                    name = entry.name[:-3] if entry.name.endswith(".py") and entry.is_file() else entry.name
                    if not name.isidentifier() or name in names:
                        continue
                    if entry.name.endswith(".py") or (entry.is_dir(follow_symlinks=False) and _holds_python(entry.path)):
                        names.add(name)
        except OSError:
            continue  # (no such folder, or not listable: nothing importable from it)
    return frozenset(names)


def _holds_python(folder: str) -> bool:
    try:
        with os.scandir(folder) as found:
            return any(entry.name.endswith(".py") for entry in found)
    except OSError:
        return False


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


def walk(root: Path, prune: Optional[Callable[[str, str], bool]] = None) -> Iterator[Entry]:
    """Every file, link and folder below `root` (or `root` itself if it is a file), sorted, so
    that runs are deterministic: a folder's subfolders, then its files, then what each subfolder
    holds.  Links are reported as links and never followed, so a link pointing outside the tree
    or into a loop cannot take the run elsewhere.  `prune(name, path)`: a folder it is true of is
    neither given nor entered."""
    if root.is_file():
        yield Entry(root.name, root, _kind(root))
        return
    unlistable: list = []
    # (os.scandir's entries tell folders, links and regular files apart without a stat each)
    pending = [(os.fspath(root), "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            with os.scandir(folder) as listing:
                children = sorted(listing, key=lambda child: child.name)
        except OSError as error:
            unlistable.append(error)
            yield from _unlistable(root, unlistable)
            continue
        folders, files = [], []
        for child in children:
            try:
                is_folder = child.is_dir()
            except OSError:
                is_folder = False
            (folders if is_folder else files).append(child)
        descend = []
        for child in folders:
            relative = prefix + child.name
            if prune is not None and prune(child.name, child.path):
                continue
            if _is_link(child):
                yield Entry(relative, Path(child.path), Kind.SYMLINK)
            else:
                yield Entry(relative, Path(child.path), Kind.DIRECTORY)
                descend.append((child.path, relative + "/"))
        for child in files:
            yield Entry(prefix + child.name, Path(child.path), _file_kind(child))
        pending.extend(reversed(descend))


def _is_link(child: os.DirEntry) -> bool:
    try:
        return child.is_symlink()
    except OSError:
        return False


def _file_kind(child: os.DirEntry) -> Kind:
    try:
        if child.is_symlink():
            return Kind.SYMLINK
        regular = child.is_file(follow_symlinks=False)
    except OSError:  # vanished since it was listed: reading it will say why
        return _kind(Path(child.name))
    return _kind(Path(child.name)) if regular else Kind.SPECIAL


def _unlistable(root: Path, errors: list) -> Iterator[Entry]:
    """Folders os.walk could not list (it reports them through onerror, after their entry)."""
    while errors:
        error = errors.pop(0)
        path = Path(error.filename)
        if path == root:
            raise error  # the input itself: nothing can be migrated
        yield Entry(path.relative_to(root).as_posix(), path, Kind.UNLISTABLE)
