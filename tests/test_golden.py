"""Golden trees: each fixture's whole migrated output, reports included, as reviewed by a person.

`pytest tests/test_golden.py --update-goldens` rewrites fixtures/expected/ from the current
output; read `git diff fixtures/expected` before committing it.  The log is left out of the
goldens (it holds times and absolute paths) and checked for its format instead.
"""
import re
import shutil

import pytest

from helpers import EXPECTED, FIXTURES, fixture_names, migrate, tree_files

LOG = "msFmkTranspltlog.txt"
LOG_LINE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \[(INFO|WARNING|ERROR)\] .+$")


@pytest.mark.parametrize("name", fixture_names())
def test_golden_tree(name, tmp_path, update_goldens):
    target = migrate(FIXTURES / name, tmp_path)
    log = (target / LOG).read_text(encoding="utf-8")
    assert all(LOG_LINE.match(line) for line in log.splitlines()), "log lines must follow the incumbent's format"
    (target / LOG).unlink()
    expected = EXPECTED / name
    if update_goldens:
        shutil.rmtree(expected, ignore_errors=True)
        shutil.copytree(target, expected, symlinks=True)
    got = tree_files(target)
    want = tree_files(expected)
    assert sorted(got) == sorted(want)
    for relative in sorted(want):
        assert got[relative].read_bytes() == want[relative].read_bytes(), f"{name}/{relative} differs from the golden"
