"""The output tree: the input's files, folders and links reproduced as they are (the migrated
Python files written in their place), and the finished tree moved into place in one step.

A re-run with --force builds the whole new tree beside the result it replaces, then swaps the
two.  A file copied unchanged that the replaced result holds already, as its own copy of the same
input file, is linked from there instead of copied again: the new tree is complete and separate
all the same once the replaced one is removed (each such file then has one name again), and a
re-run of an unchanged project neither writes nor frees the data of thousands of files."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
from pathlib import Path
from typing import Optional, Sequence, Tuple

from ..reading.discover import Entry, Kind, inside
from ..records.results import FileResult, Status


def copy_entry(entry: Entry, destination: Path, source: Path, previous: Optional[Path] = None) -> Optional[str]:
    """Reproduce one non-Python entry; returns what was done instead when it could not be
    copied as it is (None when it was).  Folder modes are applied at the end
    (`copy_folder_modes`): a read-only folder must still receive its files.  `previous`: where
    the result being replaced holds this entry (see `copy_file`)."""
    if entry.kind == Kind.DIRECTORY:
        destination.mkdir(exist_ok=True)
    elif entry.kind == Kind.UNLISTABLE:
        destination.mkdir(exist_ok=True)
        return "folder cannot be listed: created empty, its content is not in the output"
    elif entry.kind == Kind.SYMLINK:
        os.symlink(_link_target(entry, source), destination)
    elif entry.kind == Kind.SPECIAL:
        mode = entry.absolute.lstat().st_mode
        if stat.S_ISFIFO(mode):
            os.mkfifo(destination, stat.S_IMODE(mode))
            return "not a regular file (a named pipe): reproduced as a named pipe, never read"
        return "not a regular file (a socket or device): not copied"
    else:
        try:
            copy_file(entry.absolute, destination, previous)
        except OSError as error:
            return f"cannot be read ({error.strerror or error}): not copied"
    return None


def copy_file(source: Path, destination: Path, previous: Optional[Path] = None) -> None:
    """`shutil.copy2(source, destination)`; or, where `previous` (the same file in the result
    that --force replaces) is a copy of `source` as it is now, a new link to `previous`."""
    if previous is not None and _unchanged_copy(source, previous):
        try:
            os.link(previous, destination)
            return
        except OSError:
            pass  # (another file system, or one without links: copied)
    shutil.copy2(source, destination)


def _unchanged_copy(source: Path, previous: Path) -> bool:
    """Whether `previous` is what `shutil.copy2(source, ...)` would make now: a regular file of
    ours with the size, modification time (copied to the nanosecond) and mode of `source`, and no
    other name (a file linked elsewhere, by the user or into the input, is never shared)."""
    try:
        now, copied = os.stat(source), os.lstat(previous)
    except OSError:
        return False
    return (stat.S_ISREG(copied.st_mode) and copied.st_nlink == 1 and copied.st_uid == _OWNER
            and (copied.st_size, copied.st_mtime_ns, copied.st_mode) == (now.st_size, now.st_mtime_ns, now.st_mode))


# Who owns the files this run writes (a copy belongs to whoever copies; where the system has no
# user ids, st_uid is 0).
_OWNER = os.geteuid() if hasattr(os, "geteuid") else 0


def _link_target(entry: Entry, source: Path) -> str:
    """A link is reproduced as a link, never followed.  An absolute link into the input tree is
    made relative, so that the output's link points into the output, not back into the input."""
    target = os.readlink(entry.absolute)
    if os.path.isabs(target) and inside(Path(target), source):
        return os.path.relpath(target, entry.absolute.parent)
    return target


def copy_folder_modes(folders: Sequence[Tuple[Entry, Path]]) -> None:
    for entry, destination in reversed(folders):  # deepest first
        try:
            shutil.copymode(entry.absolute, destination)
        except OSError:
            pass  # the folder's content is what matters


def write_python(entry: Entry, destination: Path, result: FileResult, previous: Optional[Path] = None) -> None:
    if result.output is None:
        try:
            copy_file(entry.absolute, destination, previous)
        except OSError as error:
            if result.status != Status.FAILED:
                raise
            result.error += f"; not copied either: {error.strerror or error}"
    else:
        write_new(destination, result.output)
        shutil.copymode(entry.absolute, destination)


def write_new(path: Path, data: bytes) -> None:
    """Write `data` at `path` of the tree being built as a file of its own: one there already
    (copied, or linked from the result being replaced) is unlinked first, never written through."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    path.write_bytes(data)


def previous_result(target: Path) -> Optional[Path]:
    """The result that this run replaces (--force), where files may be linked from; None when
    there is none (or it is not a plain folder)."""
    return target if target.is_dir() and not target.is_symlink() else None


def move_into_place(staging: Path, target: Path) -> None:
    # An interrupt between the two renames would leave neither the old result nor the new
    # one: Ctrl-C and SIGTERM wait until both are done.
    blocked = {signal.SIGINT, signal.SIGTERM}
    masking = hasattr(signal, "pthread_sigmask")
    if masking:
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    old = None
    replaced = False
    try:
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / target.name)
        os.replace(staging, target)
        replaced = True
    finally:
        try:
            if masking:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)  # a pending interrupt is raised here
        finally:
            if old is not None and replaced:
                remove_tree(old)
            elif old is not None and not target.exists():  # the new result could not be moved: keep the old
                os.replace(old / target.name, target)
                old.rmdir()


def remove_tree(path: Path) -> None:
    """Remove a folder the run made, read-only folders copied from the input included."""
    def make_writable_and_retry(function, name, _):
        try:
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            function(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=make_writable_and_retry)


