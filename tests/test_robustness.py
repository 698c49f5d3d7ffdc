"""Bad input never ends a run and nothing is lost (SPEC section 6, invariants 1 and 6).

A tree holding every kind of hostile file is migrated: the run finishes with status 3, every
entry of the input is in the output, each file that could not be processed is named in the log
with its reason, and links are reproduced as links, never followed.
"""
import os
import shutil
import stat
from pathlib import Path

import pytest

from gpu2npu.reading import source_limits as guards
from helpers import run_cli

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
CUDA_LINE = b"x = torch.zeros(1).cuda()\n"

# file name -> (content, words the log line for it must hold)
BAD_FILES = {
    "py2.py": (b'import torch\nprint "cuda"\n', "syntax error at line 2"),
    "latin1_without_cookie.py": (b"# caf\xe9\nimport torch\n" + CUDA_LINE, "cannot be decoded"),
    "utf16.py": ("import torch\nx = 'cuda'\n".encode("utf-16"), "binary content"),
    "binary.py": (bytes(range(256)) * 4 + b"cuda", "binary content (a NUL byte at offset 0)"),
    "deep_parens.py": (b"import torch\nx = " + b"(" * 3000 + b"t.cuda()" + b")" * 3000 + b"\n", "nested too deeply"),
    "deep_strings.py": (b"import torch\nx = " + b"'cuda' " * 8000 + b"\n", "nested too deeply"),
    # (deeper than CPython's own limit of 200 brackets: ast cannot read it either)
    "deep_lists.py": (b"import torch\nx = " + b"[" * 250 + b"t.cuda()" + b"]" * 250 + b"\n", "nested too deeply"),
    "large.py": (b"import torch\n" + CUDA_LINE * (guards.MAX_SOURCE_BYTES // len(CUDA_LINE) + 1), "too large to migrate"),
}


def _hostile_tree(root: Path, outside: Path) -> Path:
    project = root / "proj"
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "pkg" / "train.py").write_bytes(b"import torch\n" + CUDA_LINE)
    for number in range(16):  # enough Python files for worker processes with -j 2
        (project / "pkg" / f"filler_{number:02}.py").write_bytes(b"import torch\n" + CUDA_LINE)
    for name, (content, _) in BAD_FILES.items():
        (project / name).write_bytes(content)
    (project / "empty.py").write_bytes(b"")
    (project / "pkg" / "__init__.py").write_bytes(b"")
    (project / "broken.ipynb").write_bytes(b'{"cells": [{"cell_type": "code", "source": ["x.cuda()"')
    (project / "folder_named_like_a_file.py").mkdir()
    os.mkfifo(project / "pipe.py")
    locked = project / "locked.py"
    locked.write_bytes(b"import torch\n" + CUDA_LINE)
    locked.chmod(0)
    # links: into the tree (relative and absolute), out of it, dangling, in a loop, to a parent
    (project / "alias.py").symlink_to("pkg/train.py")
    (project / "absolute_alias.py").symlink_to(project / "pkg" / "train.py")
    (project / "outside.py").symlink_to(outside / "secret.py")
    (project / "outside_folder").symlink_to(outside)
    (project / "dangling.py").symlink_to(root / "nowhere" / "gone.py")
    (project / "loop_a").symlink_to("loop_b")
    (project / "loop_b").symlink_to("loop_a")
    (project / "pkg" / "sub" / "up").symlink_to("../..")
    return project


def _entries(root: Path):
    """Every path below root, links included but not followed."""
    found = set()
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            found.add((Path(folder) / name).relative_to(root).as_posix())
    return found


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    return folder


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_hostile_tree_is_migrated_without_losing_anything(tmp_path, outside, jobs):
    project = _hostile_tree(tmp_path, outside)
    outside_before = {p.name: p.read_bytes() for p in outside.iterdir()}
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-j", jobs)
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    target = tmp_path / "out" / "proj_msft"
    log = (target / "msFmkTranspltlog.txt").read_text()

    missing = _entries(project) - _entries(target)
    assert missing == ({"locked.py"} if not IS_ROOT else set())  # only what cannot be read at all

    for name, (content, reason) in BAD_FILES.items():
        assert (target / name).read_bytes() == content, name
        assert f"[WARNING] {name}: copied unchanged, " in log and reason in log.split(f"{name}: copied unchanged, ")[1].splitlines()[0], name
        assert f"gpu2npu: warning: {name}: copied unchanged" in result.output
    assert (target / "empty.py").read_bytes() == b"" and (target / "pkg" / "__init__.py").read_bytes() == b""
    assert (target / "broken.ipynb").read_bytes() == (project / "broken.ipynb").read_bytes()
    assert (target / "folder_named_like_a_file.py").is_dir()
    assert stat.S_ISFIFO((target / "pipe.py").lstat().st_mode)
    assert "pipe.py: not a regular file (a named pipe): reproduced as a named pipe, never read" in log
    if IS_ROOT:  # chmod 000 does not stop root: the file was read and migrated
        assert b".npu()" in (target / "locked.py").read_bytes()
    else:
        assert "locked.py: copied unchanged, cannot be read: Permission denied" in log

    # what could be processed was
    assert b".npu()" in (target / "pkg" / "train.py").read_bytes()
    assert all(b".npu()" in (target / "pkg" / f"filler_{n:02}.py").read_bytes() for n in range(16))

    # links are links, never followed out of the tree; absolute links into it point into the output
    links = {name: os.readlink(target / name) for name in
             ("alias.py", "absolute_alias.py", "outside.py", "outside_folder", "dangling.py", "loop_a", "loop_b", "pkg/sub/up")}
    assert links["alias.py"] == "pkg/train.py"
    assert links["absolute_alias.py"] == "pkg/train.py"
    assert links["outside.py"] == str(outside / "secret.py")
    assert links["outside_folder"] == str(outside)
    assert links["dangling.py"] == str(tmp_path / "nowhere" / "gone.py")
    assert (links["loop_a"], links["loop_b"], links["pkg/sub/up"]) == ("loop_b", "loop_a", "../..")
    assert "secret.py" not in log and {p.name: p.read_bytes() for p in outside.iterdir()} == outside_before
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")], "staging folder left behind"


def test_unreadable_entries_are_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    """Unreadability simulated where it happens (reading, copying, listing), since chmod 000
    does not stop root."""
    project = tmp_path / "proj"
    (project / "data").mkdir(parents=True)
    (project / "hidden").mkdir()
    (project / "hidden" / "inner.py").write_text("x = 1\n")
    (project / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    for name in ("secret.py", "secret.txt", "secret.cu"):
        (project / name).write_text("import torch\nx = torch.zeros(1).cuda()\n")
    denied = lambda path: Path(path).name.startswith("secret") or Path(path).name == "hidden"  # noqa: E731

    read_bytes, copyfile, scandir = Path.read_bytes, shutil.copyfile, os.scandir

    def refuse(function):
        def wrapper(path, *args, **kwargs):
            if denied(path):
                raise PermissionError(13, "Permission denied", str(path))
            return function(path, *args, **kwargs)
        return wrapper

    monkeypatch.setattr(Path, "read_bytes", refuse(read_bytes))
    monkeypatch.setattr(shutil, "copyfile", refuse(copyfile))
    monkeypatch.setattr(os, "scandir", refuse(scandir))
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-j", "1")
    assert result.exit_code == 3, result.output
    target = tmp_path / "out" / "proj_msft"
    log = (target / "msFmkTranspltlog.txt").read_text()
    assert "secret.py: copied unchanged, cannot be read: Permission denied" in log
    assert "secret.txt: cannot be read (Permission denied): not copied" in log
    assert "secret.cu: cannot be read (Permission denied): not copied" in log
    assert "hidden: folder cannot be listed: created empty" in log
    assert "gpu2npu: warning: secret.txt: cannot be read" in result.output
    assert (target / "train.py").read_text() == "import torch\nimport torch_npu\nx = torch.zeros(1).npu()\n"
    assert (target / "hidden").is_dir() and (target / "data").is_dir()


@pytest.mark.skipif(IS_ROOT, reason="root reads and writes whatever the mode")
def test_read_only_folders_receive_their_files_and_keep_their_mode(tmp_path):
    project = tmp_path / "proj"
    (project / "frozen").mkdir(parents=True)
    (project / "frozen" / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (project / "frozen").chmod(0o555)
    try:
        result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0")
        assert result.exit_code == 0, result.output
        frozen = tmp_path / "out" / "proj_msft" / "frozen"
        assert b".npu()" in (frozen / "train.py").read_bytes()
        assert stat.S_IMODE(frozen.stat().st_mode) == 0o555
    finally:
        (project / "frozen").chmod(0o755)
        for folder in (tmp_path / "out").rglob("frozen"):
            folder.chmod(0o755)


def test_a_statement_that_would_crash_the_parser_is_isolated():
    """The scan that decides which files are parsed in a child process errs on the side of caution."""
    assert guards.risky(b"x = " + b"(" * 1300 + b"1" + b")" * 1300)
    assert guards.risky(b"x = " + b"1 + " * 3000 + b"1\n")
    assert not guards.risky(b"x = 1\n" * 5000)
    long_string = b"x = '" + b"a" * 100000 + b"'\n"  # long, but one token: harmless
    assert not guards.risky(long_string)
    assert not guards.risky(b'"""\n' + b"((((" * 1000 + b'\n"""\n')  # brackets in a docstring are text
    assert not guards.risky(b"# " + b"[" * 5000 + b"\n" + b"x = 1\n" * 100)


def test_nesting_that_python_reads_is_migrated():
    """150 nested lists: below CPython's limit of 200 brackets, so the rules walk it too."""
    from gpu2npu.knowledge import apidata
    from gpu2npu.migration import sources
    from gpu2npu.migration.pipeline import Status
    from gpu2npu.rules import Options

    source = b"import torch\nx = " + b"[" * 150 + b"t.cuda()" + b"]" * 150 + b"\n"
    result = sources.migrate_file(sources.Kind.PYTHON, source, "deep.py", Options(api=apidata.load("2.1.0")))
    assert result.status == Status.MIGRATED, result.error
    assert result.output == b"import torch\nimport torch_npu\n" + source[len(b"import torch\n"):].replace(b"cuda", b"npu")
