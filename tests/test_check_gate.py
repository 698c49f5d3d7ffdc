"""`gpu2npu check` as a CI gate a team keeps on, through the console script as CI runs it: the
project's [tool.gpu2npu] table and its precedence, inline suppressions, per-file ignores,
excludes, a baseline that survives moved lines, the torch version a project pins, and options
that lack their value."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
CUDA_LINE = "x = torch.zeros(1).cuda()\n"


def gpu2npu(*args, cwd=None):
    return subprocess.run([GPU2NPU, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def project(root: Path, files: dict) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def codes(done) -> list:
    """(path relative to the run's folder or as printed, line, code) of each finding printed."""
    found = []
    for line in done.stdout.splitlines():
        where, rest = line.split(": ", 1)
        path, number = where.rsplit(":", 1)
        found.append((path, int(number), rest.split()[0]))
    return found


# --- configuration -----------------------------------------------------------------------------

def test_the_version_comes_from_the_command_line_then_the_table_then_the_pin_then_the_newest(tmp_path):
    from gpu2npu.knowledge.apidata import available_versions

    root = project(tmp_path / "p", {"train.py": "import torch\n" + CUDA_LINE})
    newest = available_versions()[-1]
    done = gpu2npu("check", root)
    assert f"gpu2npu: PyTorch {newest} " in done.stderr and "no torch pin found" in done.stderr
    (root / "requirements.txt").write_text("numpy\ntorch>=2.3,<2.4\n")
    done = gpu2npu("check", root)
    assert "gpu2npu: PyTorch 2.3.1 " in done.stderr and "requirements.txt:2 (torch>=2.3,<2.4)" in done.stderr
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n\n[tool.gpu2npu]\nversion = "2.1.0"\n')
    done = gpu2npu("check", root)
    assert "gpu2npu: PyTorch 2.1.0 " in done.stderr and "[tool.gpu2npu] version of" in done.stderr
    done = gpu2npu("check", "-v", "2.6.0", root)
    assert "gpu2npu: PyTorch" not in done.stderr  # -v wins, and is not said again
    assert done.returncode == 1 and [code for _, _, code in codes(done)] == ["NPU102"]


def test_a_pre_commit_run_on_one_file_reads_the_table_of_the_project_above_it(tmp_path):
    root = project(tmp_path / "p", {"pyproject.toml": '[tool.gpu2npu]\nversion = "2.1.0"\nignore = ["NPU102"]\n',
                                    "src/pkg/train.py": "import torch\n" + CUDA_LINE})
    done = gpu2npu("check", "src/pkg/train.py", cwd=root)
    assert done.returncode == 0 and done.stdout == ""
    assert "1 finding of ignored codes" in done.stderr and "gpu2npu: PyTorch 2.1.0" in done.stderr
    # the command line wins over the table's ignore
    done = gpu2npu("check", "--ignore", "NPU905", "src/pkg/train.py", cwd=root)
    assert done.returncode == 1 and [code for _, _, code in codes(done)] == ["NPU102"]


def test_ignore_per_file_ignores_and_exclude_of_the_table(tmp_path):
    root = project(tmp_path / "p", {
        "pyproject.toml": '[tool.gpu2npu]\nversion = "2.1.0"\nexclude = ["vendor", "legacy/old_*.py"]\n'
                          'per-file-ignores = {"tests/**" = ["NPU1xx"], "tools/bench.py" = ["NPU905"]}\n',
        "train.py": "import torch\n" + CUDA_LINE,
        "tests/unit/test_model.py": "import torch\n" + CUDA_LINE,
        "tools/bench.py": "import torch\nmodel = torch.compile(model)\n" + CUDA_LINE,
        "vendor/lib/kernels.py": "import torch\n" + CUDA_LINE,
        "legacy/old_train.py": "import torch\n" + CUDA_LINE,
        "legacy/new_train.py": "import torch\n" + CUDA_LINE,
    })
    done = gpu2npu("check", ".", cwd=root)
    assert done.returncode == 1
    assert sorted((path, code) for path, _, code in codes(done)) == [
        ("legacy/new_train.py", "NPU102"), ("tools/bench.py", "NPU102"), ("train.py", "NPU102")]
    assert "2 excluded" in done.stderr and "2 findings of ignored codes" in done.stderr
    # an excluded file named on the command line (pre-commit names every changed file) stays excluded
    done = gpu2npu("check", "vendor/lib/kernels.py", cwd=root)
    assert done.returncode == 0 and "1 excluded" in done.stderr


@pytest.mark.parametrize("table, message", [
    ('ignore = ["NPU999"]', "NPU999 is no code that gpu2npu reports"),
    ('per-file-ignores = {"a.py" = ["NOPE"]}', 'per-file-ignores "a.py": NOPE is no code'),
    ('version = "2.0"', "the nearest known: 1.11.0 and 2.1.0"),
    ('select = ["NPU102"]', "[tool.gpu2npu] has no key 'select'"),
    ('ignore = "NPU102', "not valid TOML"),
])
def test_a_table_that_cannot_be_used_is_a_usage_error(tmp_path, table, message):
    root = project(tmp_path / "p", {"pyproject.toml": f"[tool.gpu2npu]\n{table}\n", "a.py": "import torch\n"})
    done = gpu2npu("check", root)
    assert done.returncode == 2 and message in done.stderr and done.stdout == ""


# --- inline suppressions -----------------------------------------------------------------------

def test_suppressions_silence_their_line_and_unused_or_unknown_ones_are_findings(tmp_path):
    root = project(tmp_path / "p", {"train.py": (
        "import torch\n"
        "a = torch.zeros(1).cuda()  # gpu2npu: ignore\n"            # every code of the line
        "b = torch.zeros(1).cuda()  # gpu2npu: ignore[NPU102]\n"    # the code named
        "c = torch.zeros(1).cuda()  # gpu2npu: ignore[NPU1xx]\n"    # a pattern
        "d = torch.zeros(1).cuda()  # gpu2npu: ignore[NPU905]\n"    # another code: d's finding stays
        "e = 1  # gpu2npu: ignore\n"                                # nothing to silence
        "f = torch.zeros(1).cuda()  # gpu2npu: ignore[NPU102,NPU999]\n"  # NPU999 exists nowhere
        "s = '# gpu2npu: ignore'\n"                                 # a string, no comment
        "g = torch.zeros(1).cuda()\n")})
    done = gpu2npu("check", "-v", "2.1.0", ".", cwd=root)
    assert done.returncode == 1
    assert codes(done) == [("train.py", 5, "NPU102"), ("train.py", 5, "NPU926"), ("train.py", 6, "NPU926"),
                           ("train.py", 7, "NPU926"), ("train.py", 9, "NPU102")]
    messages = done.stdout.splitlines()
    assert "`# gpu2npu: ignore[NPU905]`: no finding of NPU905 on this line" in messages[1]
    assert "`# gpu2npu: ignore` silences nothing" in messages[2]
    assert "NPU999 is no code that gpu2npu reports" in messages[3]
    assert "4 findings silenced by # gpu2npu: ignore" in done.stderr
    # an unused suppression is a finding the table can ignore like any other
    (root / "pyproject.toml").write_text('[tool.gpu2npu]\nignore = ["NPU926"]\n')
    done = gpu2npu("check", "-v", "2.1.0", ".", cwd=root)
    assert [code for _, _, code in codes(done)] == ["NPU102", "NPU102"]


def test_a_suppression_covers_every_line_of_a_statement_and_requirement_files_have_them_too(tmp_path):
    root = project(tmp_path / "p", {
        "train.py": "import torch\nx = torch.zeros(\n    1,\n).cuda()  # gpu2npu: ignore[NPU102]\n",
        "requirements.txt": "torch==2.1.0\nflash-attn==2.5.8  # gpu2npu: ignore\ncupy-cuda12x\n",
    })
    done = gpu2npu("check", "-v", "2.1.0", ".", cwd=root)
    assert [(path, line) for path, line, _ in codes(done)] == [("requirements.txt", 3)], done.stdout


# --- baseline ----------------------------------------------------------------------------------

def test_a_baseline_accepts_todays_findings_survives_moved_lines_and_fails_on_new_ones(tmp_path):
    root = project(tmp_path / "p", {"train.py": "import torch\n" + CUDA_LINE + "model = torch.compile(model)\n"})
    baseline = root / "gpu2npu-baseline.json"
    before = gpu2npu("check", "-v", "2.1.0", ".", cwd=root)
    assert before.returncode == 1 and len(codes(before)) == 2
    written = gpu2npu("check", "-v", "2.1.0", ".", "--write-baseline", baseline.name, cwd=root)
    assert written.returncode == 0 and "wrote 2 findings" in written.stderr
    data = json.loads(baseline.read_text())
    assert data == json.loads(json.dumps(data, sort_keys=True))  # sorted, stable for review
    assert [(entry["path"], entry["code"], entry["line"]) for entry in data["findings"]] == [
        ("train.py", "NPU102", "x = torch.zeros(1).cuda()"), ("train.py", "NPU905", "model = torch.compile(model)")]
    # lines added above: the same findings, at other lines, are not new; run from another folder too
    (root / "train.py").write_text("import torch\n\n\nimport os\n" + CUDA_LINE + "model = torch.compile(model)\n")
    done = gpu2npu("check", "-v", "2.1.0", root / "train.py", "--baseline", baseline, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "" and "2 in the baseline" in done.stderr
    # a new CUDA line fails the gate, and only it is printed (a second copy of a recorded line is new)
    (root / "train.py").write_text("import torch\n" + CUDA_LINE + "model = torch.compile(model)\n" + CUDA_LINE)
    done = gpu2npu("check", "-v", "2.1.0", ".", "--baseline", baseline.name, "--format", "json", cwd=root)
    assert done.returncode == 1
    assert [(f["path"], f["start_line"], f["rule"]) for f in json.loads(done.stdout)["findings"]] == [
        ("train.py", 4, "NPU102")]
    # fixed findings are said, so that the baseline can be written again
    (root / "train.py").write_text("import torch\n")
    done = gpu2npu("check", "-v", "2.1.0", ".", "--baseline", baseline.name, cwd=root)
    assert done.returncode == 0 and "2 recorded there no longer found" in done.stderr


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    ('{"findings": []}', "not a baseline written by"),
])
def test_a_baseline_that_cannot_be_read_is_a_usage_error(tmp_path, content, message):
    (tmp_path / "b.json").write_text(content)
    (tmp_path / "a.py").write_text("import torch\n")
    done = gpu2npu("check", "-v", "2.1.0", tmp_path / "a.py", "--baseline", tmp_path / "b.json")
    assert done.returncode == 2 and message in done.stderr
    done = gpu2npu("check", "-v", "2.1.0", tmp_path / "a.py", "--baseline", tmp_path / "missing.json")
    assert done.returncode == 2 and "cannot be read" in done.stderr


# --- options without their value ---------------------------------------------------------------

def test_an_option_without_its_value_is_a_usage_error(tmp_path):
    source = project(tmp_path / "src", {"train.py": "import torch\n" + CUDA_LINE})
    for args in (("-i", source, "-o", tmp_path / "out", "-v"), ("-i", source, "-v", "-o", tmp_path / "out"),
                 ("-i", source, "-o", tmp_path / "out", "-v", "")):
        done = gpu2npu(*args)
        assert done.returncode == 2 and "-v/--version needs a torch version" in done.stderr, args
        assert not (tmp_path / "out").exists()
    done = gpu2npu("check", "-v", "", source)
    assert done.returncode == 2 and "needs a torch version" in done.stderr
    done = gpu2npu("check", source, "-v")
    assert done.returncode == 2 and "requires an argument" in done.stderr


def test_the_migration_and_analyse_take_the_version_and_exclude_of_the_table(tmp_path):
    root = project(tmp_path / "p", {"pyproject.toml": '[tool.gpu2npu]\nversion = "2.1"\nexclude = ["vendor/"]\n',
                                    "train.py": "import torch\n" + CUDA_LINE,
                                    "vendor/kernels.py": "import torch\n" + CUDA_LINE})
    done = gpu2npu("-i", root, "-o", tmp_path / "out", "--no-html")
    assert done.returncode == 0, done.stderr
    assert "-v 2.1 from [tool.gpu2npu] version of" in done.stderr and "1 excluded by [tool.gpu2npu]" in done.stdout
    target = tmp_path / "out" / "p_msft"
    assert (target / "vendor" / "kernels.py").read_text() == (root / "vendor" / "kernels.py").read_text()
    assert ".npu()" in (target / "train.py").read_text()
    assert "vendor/kernels.py" not in (target / "change_list.csv").read_text()
    assert "excluded by [tool.gpu2npu] exclude" in (target / "msFmkTranspltlog.txt").read_text()
    # -v wins over the table
    done = gpu2npu("-i", root, "-o", tmp_path / "out26", "-v", "2.6.0", "--no-html")
    assert done.returncode == 0 and "from [tool.gpu2npu]" not in done.stderr
    done = gpu2npu("analyse", "-i", root, "-o", tmp_path / "analysis")
    assert done.returncode == 0 and "-v 2.1 from [tool.gpu2npu]" in done.stderr
    changes = (tmp_path / "analysis" / "p_analysis" / "change_list.csv").read_text()
    assert "train.py" in changes and "vendor" not in changes
    # without the table, -v is still required
    (root / "pyproject.toml").unlink()
    done = gpu2npu("analyse", "-i", root, "-o", tmp_path / "analysis2")
    assert done.returncode == 2 and "missing option -v/--version" in done.stderr


def test_a_defect_of_check_is_not_reported_as_findings(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import gpu2npu.cli as cli

    (tmp_path / "a.py").write_text("import torch\n")

    def broken(*args, **kwargs):
        raise KeyError("an internal mistake")

    monkeypatch.setattr(cli, "check_paths", broken)
    done = CliRunner().invoke(cli.main, ["check", "-v", "2.1.0", str(tmp_path)])
    assert done.exit_code == 3 and "check failed (KeyError: 'an internal mistake'); please report it" in done.output


def test_a_notebook_cell_has_its_suppressions_and_its_baseline_lines(tmp_path):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": ["import torch\n", "x = torch.zeros(1).cuda()  # gpu2npu: ignore\n", "y = torch.zeros(1).cuda()\n"]}]
    (tmp_path / "a.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    done = gpu2npu("check", "-v", "2.1.0", "a.ipynb", "--write-baseline", "b.json", cwd=tmp_path)
    assert done.returncode == 0 and "wrote 1 finding (1 entry)" in done.stderr  # (the suppressed one is not recorded)
    [entry] = json.loads((tmp_path / "b.json").read_text())["findings"]
    assert (entry["path"], entry["code"], entry["line"]) == ("a.ipynb", "NPU102", "y = torch.zeros(1).cuda()")
    assert gpu2npu("check", "-v", "2.1.0", "a.ipynb", "--baseline", "b.json", cwd=tmp_path).returncode == 0
