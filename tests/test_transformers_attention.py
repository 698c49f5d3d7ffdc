"""transformers' attn_implementation="flash_attention_2": decided by the transformers the project
pins, through the console script (migration, check), by classes of pins and places."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpu2npu.knowledge.transformers_attention import runs_on_npu, sdpa_runs, verdict
from helpers import read_csv

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
TRAIN = ("from transformers import AutoModelForCausalLM, TrainingArguments\n\n"
         "model = AutoModelForCausalLM.from_pretrained('m', attn_implementation='flash_attention_2')\n"
         "if model.config._attn_implementation == 'flash_attention_2':\n    print('fast path')\n")


@pytest.mark.parametrize("version, runs", [
    ("4.50.3", False), ("4.51.0", True), ("4.53.3", True), ("4.54.0", False), ("4.55.2", False),
    ("4.55.3", True), ("4.57.1", True), ("5.23.0", True), ("4.36.2", False),
])
def test_the_releases_that_run_it_on_the_npu(version, runs):
    assert runs_on_npu(version) is runs


@pytest.mark.parametrize("spec, decided", [
    ("==4.45.0", False), ("<4.51", False), (">=4.54,<4.55", False), ("==4.55.1", False),
    ("==4.52.4", True), (">=4.51,<4.54", True), (">=4.55.3", True), ("~=4.56", True),
    (None, None), (">=4.40", None), (">=4.51", None), ("<4.56", None),
    (">=v4.51.0,<4.52", True), ("==v4.45.0", False),  # (a leading "v", as PEP 440 allows)
])
def test_a_pin_decides_only_where_every_release_it_allows_agrees(spec, decided):
    assert verdict(spec) is decided


def _project(root: Path, requirement: str) -> Path:
    root.mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    if requirement:
        (root / "requirements.txt").write_text(f"torch==2.1.0\n{requirement}\n")
    return root


def _run(*args):
    return subprocess.run([GPU2NPU, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("version, pin, value", [
    ("2.1.0", "==4.50.0", "sdpa"),  # 4.48 on runs sdpa with torch 2.1.0 on an NPU
    # before 4.48, sdpa wants torch 2.1.1, and torch_npu 2.1.0 is built for 2.1.0: torch's own attention
    ("2.1.0", "==4.45.0", "eager"),
    ("2.2.0", "==4.45.0", "sdpa"),
])
def test_a_pin_that_cannot_run_it_gets_what_runs_with_the_runs_torch_and_a_change_row(tmp_path, version, pin, value):
    source = _project(tmp_path / "old", f"transformers{pin}")
    done = _run("-i", source, "-o", tmp_path / "out", "-v", version, "--no-html")
    assert done.returncode == 0, done.stderr
    migrated = (tmp_path / "out" / "old_msft" / "train.py").read_text()
    assert f"attn_implementation='{value}'" in migrated
    assert "== 'flash_attention_2'" in migrated  # a comparison reads it: left as written
    [row] = [r for r in read_csv(tmp_path / "out" / "old_msft" / "change_list.csv") if r["Rule"] == "NPU266"]
    assert row["Start Line"] == "3" and f"-> {value}: transformers {pin} needs the flash-attn package" in row["Message"]
    assert not read_csv(tmp_path / "out" / "old_msft" / "unsupported_api.csv")
    # check says the same of the original project: a finding the migration fixes
    done = _run("check", "-v", version, source)
    assert done.returncode == 1 and f"{source / 'train.py'}:3: NPU266" in done.stdout


@pytest.mark.parametrize("spec, torch, runs", [
    ("==4.45.0", "2.1.0", False), ("==4.47.1", "2.1.0", False), (">=4.40,<4.50", "2.1.0", False),
    ("==4.48.0", "2.1.0", True), (">=4.54,<4.55", "2.1.0", True), ("==4.45.0", "2.1.1", True),
    ("==4.45.0", "2.2.0", True), ("==4.45.0", "2.10.0", True),
])
def test_sdpa_runs_where_every_release_the_pin_allows_runs_it_with_the_runs_torch(spec, torch, runs):
    assert sdpa_runs(spec, torch) is runs


def test_a_pin_that_runs_it_leaves_it_and_the_log_says_why(tmp_path):
    source = _project(tmp_path / "new", "transformers>=4.55.3")
    done = _run("-i", source, "-o", tmp_path / "out", "-v", "2.1.0", "--no-html")
    assert done.returncode == 0, done.stderr
    target = tmp_path / "out" / "new_msft"
    assert (target / "train.py").read_text() == TRAIN
    assert not [r for r in read_csv(target / "change_list.csv") if r["Rule"] == "NPU266"]
    assert not read_csv(target / "unsupported_api.csv")
    assert "transformers >=4.55.3 runs it on the NPU" in (target / "msFmkTranspltlog.txt").read_text()
    assert _run("check", "-v", "2.1.0", source).returncode == 0


@pytest.mark.parametrize("requirement", ["", "transformers>=4.40"])
def test_no_deciding_pin_leaves_it_and_reports_it(tmp_path, requirement):
    source = _project(tmp_path / "open", requirement)
    done = _run("-i", source, "-o", tmp_path / "out", "-v", "2.1.0", "--no-html")
    assert done.returncode == 0, done.stderr
    target = tmp_path / "out" / "open_msft"
    assert (target / "train.py").read_text() == TRAIN
    [row] = read_csv(target / "unsupported_api.csv")
    assert (row["Start Line"], row["Rule"]) == ("3", "NPU927") and "pin transformers>=4.55.3" in row["Tips"]
    done = _run("check", "-v", "2.1.0", target)
    assert done.returncode == 1 and "NPU927" in done.stdout


@pytest.mark.parametrize("source", [
    # a variable of the program's own choice, compared and changed by it (vLLM's attention selection)
    "attn_implementation = 'flash_attention_2'\nif attn_implementation == 'flash_attention_2' and not ok:\n"
    "    attn_implementation = 'sdpa'\n",
    # prose and a comparison
    "HELP = 'flash_attention_2'\nuse_fa = args.attn_implementation == 'flash_attention_2'\n",
])
def test_what_is_not_handed_to_transformers_stays_even_under_a_pin_that_cannot_run_it(source):
    from gpu2npu.knowledge import apidata
    from gpu2npu.modes import rules_for
    from gpu2npu.records.options import Options
    from gpu2npu.migration.pipeline import migrate_source

    options = Options(api=apidata.load("2.1.0"), transformers="==4.45.0")
    result = migrate_source(source.encode(), "example.py", options, rules_for(options))
    assert result.output is None and not [row for row in result.findings if row.rule in ("NPU266", "NPU927")]


LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --attn_implementation flash_attention_2 --bf16 True\n"
CONFIG = "model_name: m\nattn_implementation: flash_attention_2\n"


@pytest.mark.parametrize("requirement, value, row", [
    ("transformers==4.50.0", "sdpa", None),  # none of its releases runs it: sdpa, as in the Python code
    ("transformers==4.45.0", "eager", None),  # ... nor sdpa with torch 2.1.0: eager, as in the Python code
    ("transformers>=4.55.3", None, None),  # every one runs it: left, a note in the log
    ("", None, "NPU927"),  # not pinned: left and reported, as in the Python code
])
def test_a_launch_script_and_a_config_choose_it_as_the_python_code_does(tmp_path, requirement, value, row):
    source = _project(tmp_path / "p", requirement)
    (source / "run.sh").write_text(LAUNCH)
    (source / "config.yaml").write_text(CONFIG)
    done = _run("-i", source, "-o", tmp_path / "out", "-v", "2.1.0", "--no-html")
    assert done.returncode == 0, done.stderr
    target = tmp_path / "out" / "p_msft"
    python = (target / "train.py").read_text()
    for name, text in (("run.sh", LAUNCH), ("config.yaml", CONFIG)):
        assert (target / name).read_text() == (text.replace("flash_attention_2", value) if value else text)
        assert (f"attn_implementation='{value}'" in python) if value else (python == TRAIN)
    rows = [(r["File"], r["Rule"]) for r in read_csv(target / "unsupported_api.csv")]
    assert rows == ([("config.yaml", row), ("run.sh", row), ("train.py", row)] if row else [])
