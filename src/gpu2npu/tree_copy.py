"""The output tree: the input's files, folders and links reproduced as they are (the migrated
Python files written in their place), and the finished tree moved into place in one step."""
from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
from pathlib import Path
from typing import Optional, Sequence, Tuple

from .discover import Entry, Kind
from .results import FileResult, Status
from .request import inside


def copy_entry(entry: Entry, destination: Path, source: Path) -> Optional[str]:
    """Reproduce one non-Python entry; returns what was done instead when it could not be
    copied as it is (None when it was).  Folder modes are applied at the end
    (`copy_folder_modes`): a read-only folder must still receive its files."""
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
            shutil.copy2(entry.absolute, destination)
        except OSError as error:
            return f"cannot be read ({error.strerror or error}): not copied"
    return None


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


def write_python(entry: Entry, destination: Path, result: FileResult) -> None:
    if result.output is None:
        try:
            shutil.copy2(entry.absolute, destination)
        except OSError as error:
            if result.status != Status.FAILED:
                raise
            result.error += f"; not copied either: {error.strerror or error}"
    else:
        destination.write_bytes(result.output)
        shutil.copymode(entry.absolute, destination)


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


