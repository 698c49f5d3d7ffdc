"""A re-run with --force links the files it copies unchanged from the result it replaces, where
that result holds an untouched copy of the same input file: the new tree must come out exactly
as a fresh run writes it, separate from the input and from anything else, and the result it
replaces must stay as it was until the new one is complete."""
import os
import shutil
import stat

from helpers import FIXTURES, run_cli, tree_files
from gpu2npu.outputs import tree_copy

PROJECT = FIXTURES / "llm_env_project"


def _copy_of_project(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    (project / "README.md").write_text("# notes\n")
    (project / "data").mkdir()
    (project / "data" / "vocab.txt").write_text("a\nb\n")
    (project / "data" / "labels.txt").write_text("cat\ndog\n")
    (project / "tools" / "run.sh").write_text("#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\npython train.py\n")
    os.chmod(project / "tools" / "run.sh", 0o750)
    return project


def _run(project, out, *extra):
    result = run_cli("-i", str(project), "-o", str(out), "-v", "2.1.0", "--no-cache", "--no-html", *extra)
    assert result.exit_code == 0, result.output
    return out / f"{project.name}_msft"


def _facts(root):
    """Every file's bytes, mode and modification time; the run log aside (it holds times)."""
    return {relative: (path.read_bytes(), stat.S_IMODE(path.stat().st_mode), path.stat().st_mtime_ns)
            for relative, path in tree_files(root).items() if relative != "msFmkTranspltlog.txt"}


def test_a_rerun_writes_the_tree_a_fresh_run_writes_with_every_file_its_own(tmp_path):
    project = _copy_of_project(tmp_path)
    target = _run(project, tmp_path / "out")
    first_inodes = {relative: path.stat().st_ino for relative, path in tree_files(target).items()}
    again = _run(project, tmp_path / "out", "--force")
    fresh = _run(project, tmp_path / "fresh")
    files = _facts(again)
    # a migrated file is written anew (its time is the run's); every copy keeps the input's time
    assert {k: v[:2] for k, v in files.items()} == {k: v[:2] for k, v in _facts(fresh).items()}
    copied = [relative for relative, path in tree_files(again).items()
              if (project / relative).is_file() and path.read_bytes() == (project / relative).read_bytes()]
    assert "data/vocab.txt" in copied and "README.md" in copied
    for relative in copied:
        assert files[relative][2] == (project / relative).stat().st_mtime_ns, relative
    # linked, not copied: the re-run reuses the replaced result's copies ...
    reused = [relative for relative in copied if tree_files(again)[relative].stat().st_ino == first_inodes[relative]]
    assert "data/vocab.txt" in reused and "README.md" in reused
    # ... which are its own once that result is gone: one name each, none shared with the input
    for relative, path in tree_files(again).items():
        assert path.stat().st_nlink == 1, relative
        if (project / relative).exists():
            assert not os.path.samefile(path, project / relative), relative
    assert not [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")], "old result left behind"


def test_an_edited_or_shared_copy_in_the_replaced_result_is_not_reused(tmp_path):
    project = _copy_of_project(tmp_path)
    target = _run(project, tmp_path / "out")
    # the user edited one copy of the previous result (same size: only its time tells) ...
    edited = target / "data" / "vocab.txt"
    edited.write_text("x\ny\n")
    # ... and linked another one elsewhere; an input file got another mode
    shared = tmp_path / "kept_elsewhere.md"
    os.link(target / "README.md", shared)
    shared_text = shared.read_bytes()
    os.chmod(project / "data" / "labels.txt", 0o600)  # (same bytes and time, another mode)
    again = _run(project, tmp_path / "out", "--force")
    assert (again / "data" / "vocab.txt").read_text() == "a\nb\n"
    assert not os.path.samefile(again / "README.md", shared)
    assert shared.read_bytes() == shared_text and shared.stat().st_nlink == 1
    assert stat.S_IMODE((again / "data" / "labels.txt").stat().st_mode) == 0o600


def test_a_file_written_over_a_reused_copy_leaves_the_replaced_result_as_it_was(tmp_path):
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / "requirements.txt").write_text("torch\nflash-attn\n")
    source = tmp_path / "requirements.txt"
    shutil.copy2(previous / "requirements.txt", source)
    staging = tmp_path / "staging"
    staging.mkdir()
    tree_copy.copy_file(source, staging / "requirements.txt", previous / "requirements.txt")
    assert os.path.samefile(staging / "requirements.txt", previous / "requirements.txt")
    tree_copy.write_new(staging / "requirements.txt", b"torch\n")
    assert (staging / "requirements.txt").read_bytes() == b"torch\n"
    assert (previous / "requirements.txt").read_text() == "torch\nflash-attn\n"
