"""Python ends a line at \\n, \\r\\n or \\r only.  A form feed, a vertical tab, \\x1c-\\x1e, \\x85 or
U+2028/U+2029 inside a line (page breaks in comments, separators in strings) must not shift the
line numbers of the reports, the review page or the `--diff`, which str.splitlines would do."""
import json
import re
import shutil
import subprocess

import pytest
from hypothesis import given, strategies as st

from helpers import read_csv, run_cli
from gpu2npu.reading.linemap import source_lines

SOURCE = ('# tools\x0c\n# more\x0c\x0b\n"""a\u2028b\x85c"""\nimport torch\nimport torch.nn as nn\n'
          'model = nn.DataParallel(nn.Linear(2, 2))\nx = torch.cuda.nvtx.range_push("a\u2029")\n'
          'y = torch.zeros(1).cuda()  # \x1c\x1d\x1e\n')


def _project(tmp_path):
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    (project / "t.py").write_bytes(SOURCE.encode("utf-8"))
    return project


def _line(number: int) -> str:
    return SOURCE.encode("utf-8").split(b"\n")[number - 1].decode("utf-8")


def test_rows_name_the_lines_python_numbers(tmp_path):
    project = _project(tmp_path)
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.exit_code == 0, result.output
    target = tmp_path / "out" / "proj_msft"
    changes = read_csv(target / "change_list.csv")
    modified = {row["Rule"]: int(row["Start Line"]) for row in changes if row["Operation Type"] == "MODIFY"}
    assert "nn.DataParallel(" in _line(modified["NPU202"]) and ".cuda()" in _line(modified["NPU102"])
    [unsupported] = read_csv(target / "unsupported_api.csv")
    assert "torch.cuda.nvtx.range_push" in _line(int(unsupported["Start Line"]))
    # the page numbers the lines of its diff the same way
    page = (target / "report.html").read_text(encoding="utf-8")
    shown = sorted({int(n) for n in re.findall(r'id="f-t\.py-L(\d+)"', page)})
    assert shown and shown[-1] == SOURCE.count("\n")


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
def test_the_diff_applies_with_patch_and_gives_the_migration(tmp_path):
    project = _project(tmp_path)
    result = run_cli("-i", str(project), "-v", "2.1.0", "--diff", "--no-cache")
    assert result.exit_code == 0, result.output
    (tmp_path / "changes.diff").write_bytes(result.stdout_bytes)
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(tmp_path / "changes.diff")], cwd=project,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    migrated = run_cli("-i", str(_project(tmp_path / "again")), "-o", str(tmp_path / "out"), "-v", "2.1.0",
                       "--no-cache")
    assert migrated.exit_code == 0, migrated.output
    assert (project / "t.py").read_bytes() == (tmp_path / "out" / "proj_msft" / "t.py").read_bytes()


@given(st.text(alphabet="ab \n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029", max_size=40))
def test_source_lines_end_only_at_python_line_ends(text):
    lines = source_lines(text, keepends=True)
    assert "".join(lines) == text
    assert len(lines) == len(re.findall(r"\r\n|\r|\n", text)) + (1 if re.search(r"[^\r\n]\Z", text) else 0)
    assert all(not re.search(r"\r\n|\r|\n", line.rstrip("\r\n")) for line in lines)
    assert source_lines(text) == [line.rstrip("\r\n") for line in lines]
    if not re.search("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]", text):
        assert lines == text.splitlines(keepends=True)


def test_a_notebook_cell_with_such_characters_is_migrated_on_its_lines(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    cell = ["import torch\n", 's = "a\u2028b"  # page\x0cbreak\n', "x = torch.zeros(1).cuda()\n",
            "print(torch.cuda.nvtx)"]
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": cell}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (project / "n.ipynb").write_text(json.dumps(notebook))
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.exit_code == 0, result.output
    target = tmp_path / "out" / "proj_msft"
    [modified] = [row for row in read_csv(target / "change_list.csv") if row["Operation Type"] == "MODIFY"]
    assert ".cuda()" in cell[int(modified["Start Line"]) - 1]
    [unsupported] = read_csv(target / "unsupported_api.csv")
    assert "torch.cuda.nvtx" in cell[int(unsupported["Start Line"]) - 1]
    source = "".join(json.loads((target / "n.ipynb").read_text())["cells"][0]["source"])
    assert 's = "a\u2028b"  # page\x0cbreak\n' in source and ".npu()" in source
