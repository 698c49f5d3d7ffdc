"""The content-hash cache: a re-run reads results back instead of migrating, and gives exactly
the same tree and reports; a changed file, option or tool misses; a broken cache costs nothing
but time."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from gpu2npu.migration import cache
from gpu2npu.commands.project import run
from gpu2npu.commands.request import RunRequest, UsageError

from helpers import FIXTURES, page_of_any_run, tree_files

PROJECT = "multi_module_package"


def _run(source: Path, out: Path, cache_dir: Path, version: str = "2.1.0", jobs: int = 1):
    return run(RunRequest(input=source, output=out, version=version, force=True, cache_dir=cache_dir, jobs=jobs))


def _migrated_kinds(result) -> int:
    """Files that go through a migration (Python files, notebooks, launch scripts)."""
    return result.python_files + result.script_files


def _snapshot(root: Path):
    return {name: page_of_any_run(path.read_bytes()) if name == "report.html" else path.read_bytes()
            for name, path in tree_files(root).items() if not name.startswith("msFmkTranspltlog")}


@pytest.fixture
def project(tmp_path):
    source = tmp_path / "src" / PROJECT
    shutil.copytree(FIXTURES / PROJECT, source, symlinks=True)
    return source


def test_a_rerun_reads_every_file_back_and_writes_the_same_tree(project, tmp_path):
    cold = _run(project, tmp_path / "cold", tmp_path / "cache")
    cold_tree = _snapshot(cold.target)
    warm = _run(project, tmp_path / "warm", tmp_path / "cache")
    assert cold.cache_hits == 0 and warm.cache_hits == _migrated_kinds(warm) > 0
    assert _snapshot(warm.target) == cold_tree
    uncached = _run(project, tmp_path / "plain", None)
    assert _snapshot(uncached.target) == cold_tree


def test_a_rerun_reads_the_review_pages_diffs_back(project, tmp_path, monkeypatch):
    from gpu2npu.reports import html_report

    cold = _run(project, tmp_path / "cold", tmp_path / "cache")
    assert cold.migrated
    monkeypatch.setattr(html_report, "_diff", lambda *args: pytest.fail("a diff made again on a re-run"))
    warm = _run(project, tmp_path / "warm", tmp_path / "cache")
    assert page_of_any_run((warm.target / "report.html").read_bytes()) == \
        page_of_any_run((cold.target / "report.html").read_bytes())


def test_a_changed_file_is_migrated_again_and_nothing_else(project, tmp_path):
    _run(project, tmp_path / "out", tmp_path / "cache")
    changed = sorted(project.rglob("*.py"))[0]
    changed.write_bytes(changed.read_bytes() + b"\nimport torch\nx = torch.cuda.device_count()\n")
    again = _run(project, tmp_path / "out", tmp_path / "cache")
    assert again.cache_hits == _migrated_kinds(again) - 1
    migrated = (again.target / changed.relative_to(project)).read_bytes()
    assert migrated.endswith(b"x = torch_npu.npu.device_count()\n")


def test_other_options_or_another_tool_miss(project, tmp_path, monkeypatch):
    _run(project, tmp_path / "out", tmp_path / "cache", version="2.1.0")
    assert _run(project, tmp_path / "out", tmp_path / "cache", version="2.8.0").cache_hits == 0
    assert _run(project, tmp_path / "out", tmp_path / "cache", version="2.1.0").cache_hits > 0
    monkeypatch.setattr(cache, "code_fingerprint", lambda: "another build of the tool")
    assert _run(project, tmp_path / "out", tmp_path / "cache", version="2.1.0").cache_hits == 0


def test_a_damaged_cache_is_reported_and_the_run_goes_on(project, tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / cache.FILE_NAME).write_bytes(b"this is not a database" * 100)
    result = _run(project, tmp_path / "out", cache_dir)
    assert result.cache_hits == 0 and len(result.failed) == 1  # the Python 2 file, as without a cache
    log = (result.target / "msFmkTranspltlog.txt").read_text()
    assert "not used" in log and str(cache_dir) in log


def test_the_cache_may_not_live_in_the_input_or_output(project, tmp_path):
    with pytest.raises(UsageError, match="cache folder"):
        _run(project, tmp_path / "out", project / ".cache")
    with pytest.raises(UsageError, match="cache folder"):
        _run(project, tmp_path / "out", tmp_path / "out" / f"{PROJECT}_msft" / "c")


def test_parallel_workers_fill_the_cache_with_the_same_results(project, tmp_path, monkeypatch):
    import gpu2npu.migration.engine as engine_module

    monkeypatch.setattr(engine_module, "PARALLEL_FROM", 1)
    cold = _run(project, tmp_path / "cold", tmp_path / "cache", jobs=2)
    warm = _run(project, tmp_path / "warm", tmp_path / "cache", jobs=1)
    assert warm.cache_hits == _migrated_kinds(warm)
    assert _snapshot(warm.target) == _snapshot(cold.target)


def test_another_python_misses(project, tmp_path, monkeypatch):
    # its parser reads other syntax: which files get API rows is the running Python's
    _run(project, tmp_path / "out", tmp_path / "cache")
    monkeypatch.setattr(cache.sys, "version_info", (3, 99, 0))
    assert _run(project, tmp_path / "out", tmp_path / "cache").cache_hits == 0


def test_a_run_beside_another_on_the_same_cache_neither_waits_nor_loses_it(project, tmp_path, monkeypatch):
    # another run (a migration, a `check` in a parallel CI job) holds results it has not written
    # yet: this one opens, reads and writes the cache at once, and both keep what they found
    monkeypatch.setattr(cache, "LOCK_SECONDS", 2, raising=False)
    first = cache.ResultCache(tmp_path / "cache", "salt")
    for number in range(cache.COMMIT_EVERY - 1):  # (a batch short of being written)
        first.put(f"first{number}", number)
    started = time.monotonic()
    second = cache.ResultCache(tmp_path / "cache", "salt")
    second.put("second", "value")
    second.close()
    assert time.monotonic() - started < 1.5 and second.problem is None
    assert first.get("first3") == 3  # (its own pending result, read back before it is written)
    first.close()
    assert first.problem is None
    again = cache.ResultCache(tmp_path / "cache", "salt")
    assert again.get("second") == "value" and again.get(f"first{cache.COMMIT_EVERY - 2}") == cache.COMMIT_EVERY - 2
    again.close()
