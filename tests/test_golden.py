"""Golden trees: each fixture's whole migrated output, reports included, as reviewed by a person
(fixtures/expected/<fixture>/; `distributed` conversions in fixtures/expected/distributed/, -s
migrations in fixtures/expected/specify_device/, -m ones in fixtures/expected/modelarts/).

A mode's golden holds only the files the mode writes differently from the plain migration, and
the list of the files its output has (MANIFEST): one rule change then rewrites one golden file,
not one per mode.

`pytest tests/test_golden.py --update-goldens` rewrites fixtures/expected/ from the current
output (the plain goldens before the modes', which refer to them); read `git diff
fixtures/expected` before committing it.  The log is left out of the goldens (it holds times and
absolute paths) and checked for its format instead.
"""
import re
import shutil

import pytest

from helpers import (
    DISTRIBUTED_CASES,
    EXPECTED,
    FIXTURES,
    SPECIFY_DEVICE_CASES,
    fixture_names,
    migrate,
    mode_args,
    tree_files,
)

LOG = "msFmkTranspltlog.txt"
PAGE = "report.html"
MANIFEST = ".golden-files"
LOG_LINE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \[(INFO|WARNING|ERROR)\] .+$")


CASES = (
    [pytest.param(name, "single", id=name) for name in fixture_names()]
    + [pytest.param(name, "distributed", id=f"{name}-distributed") for name in sorted(DISTRIBUTED_CASES)]
    + [pytest.param(name, "specify", id=f"{name}-specify") for name in SPECIFY_DEVICE_CASES]
    + [pytest.param("modelarts_job", "modelarts", id="modelarts_job-modelarts")]
)
FOLDERS = {"single": EXPECTED, "distributed": EXPECTED / "distributed", "specify": EXPECTED / "specify_device",
           "modelarts": EXPECTED / "modelarts"}


@pytest.mark.parametrize("name, mode", CASES)
def test_golden_tree(name, mode, tmp_path, update_goldens):
    target = migrate(FIXTURES / name, tmp_path, "2.1.0", *mode_args(name, mode))
    log = (target / LOG).read_text(encoding="utf-8")
    assert all(LOG_LINE.match(line) for line in log.splitlines()), "log lines must follow the incumbent's format"
    (target / LOG).unlink()
    # the review page holds the time of the run: checked in tests/test_html_report.py
    assert (target / PAGE).is_file()
    (target / PAGE).unlink()
    expected = FOLDERS[mode] / name
    got = tree_files(target)
    if update_goldens:
        _write_golden(expected, target, got, name, mode)
    want = _golden_files(expected, name, mode)
    assert sorted(got) == sorted(want)
    for relative in sorted(want):
        assert got[relative].read_bytes() == want[relative].read_bytes(), f"{name}/{relative} differs from the golden"


def _golden_files(expected, name, mode):
    """relative path -> the golden file: a mode's own copy where it has one, else the plain one."""
    if mode == "single":
        return tree_files(expected)
    listed = (expected / MANIFEST).read_text(encoding="utf-8").splitlines()
    return {relative: expected / relative if (expected / relative).is_file() else EXPECTED / name / relative
            for relative in listed}


def _write_golden(expected, target, got, name, mode):
    shutil.rmtree(expected, ignore_errors=True)
    if mode == "single":
        shutil.copytree(target, expected, symlinks=True)
        return
    expected.mkdir(parents=True)
    plain = tree_files(EXPECTED / name)
    for relative, path in got.items():
        if relative not in plain or plain[relative].read_bytes() != path.read_bytes():
            (expected / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, expected / relative)
    (expected / MANIFEST).write_text("".join(f"{relative}\n" for relative in sorted(got)), encoding="utf-8")
