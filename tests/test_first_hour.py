"""What a new user reads is true and complete: every code a report can carry is documented,
and the text speaks of real things (through the console script, as a user meets it)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.findings.affinity import find_affinity
from gpu2npu.reading.scan import FileScan
from gpu2npu.reading.discover import Kind
from gpu2npu.records.finding_kinds import KINDS
from gpu2npu.findings.report_codes import REPORT_CODES
from gpu2npu.rules import Options
from gpu2npu.migration.sources import ALL_RULES_BY_CODE, migrate_file
from helpers import ROOT

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
CODE = re.compile(r"^NPU\d{3}$")


def gpu2npu(*args):
    return subprocess.run([GPU2NPU, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def emitted_codes():
    """Every code string the package's source holds: what reports, logs, check and SARIF can carry."""
    codes = set(ALL_RULES_BY_CODE)
    for path in (ROOT / "src" / "gpu2npu").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value):
                codes.add(node.value)
    return codes


def test_every_code_is_listed_and_explained():
    codes = emitted_codes()
    assert {"NPU901", "NPU905", "NPU951", "NPU961", "NPU101", "NPU851"} <= codes
    listed = gpu2npu("rules")
    assert listed.returncode == 0
    shown = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
    assert codes - shown == set()
    for code in sorted(codes):
        explained = gpu2npu("explain", code)
        assert explained.returncode == 0, (code, explained.stderr)
        assert "Example 1" in explained.stdout, code


def _rows(report, source: str, api):
    if report.kind == "advice":
        return find_affinity(FileScan(ast.parse(source)), "example.py", api)
    options = Options(api=api, third_party_apis=report.example_apis, **dict(report.example_pins))
    return migrate_file(Kind.PYTHON, source.encode(), "example.py", options).findings


def _checked(source: str, api, folder: Path):
    """What `gpu2npu check` finds in `source` (the kinds only check reports: suppressions)."""
    from gpu2npu.commands.check import check_paths

    folder.mkdir(exist_ok=True)
    (folder / "example.py").write_text(source, encoding="utf-8")
    return check_paths([folder / "example.py"], Options(api=api)).findings


@pytest.mark.parametrize("code", sorted(REPORT_CODES))
def test_report_code_examples_produce_their_rows_and_leave_the_rest(code, tmp_path):
    from gpu2npu.records.finding_kinds import CHECK

    api = apidata.load("2.1.0")
    report = REPORT_CODES[code]
    assert report.examples
    for number, (source, name, where) in enumerate(report.examples):
        if where == CHECK:
            found = _checked(source, api, tmp_path / str(number))
            assert any(f.rule == code and name in f.message for f in found), found
            continue
        rows = _rows(report, source, api)
        assert (code, name) in {(row.rule, row.api) for row in rows}, rows
        assert where.endswith(".csv") == (not any(row.report.value == "note" for row in rows if row.rule == code))
    for number, source in enumerate(report.unchanged):
        if any(where == CHECK for _, _, where in report.examples):
            assert code not in {f.rule for f in _checked(source, api, tmp_path / f"unchanged{number}")}, source
            continue
        assert code not in {row.rule for row in _rows(report, source, api)}, source


def test_no_internal_labels_in_what_users_read():
    texts = [gpu2npu("--help").stdout, gpu2npu("rules").stdout,
             (ROOT / "README.md").read_text(encoding="utf-8")]
    for command in ("distributed", "check", "analyse", "dryrun", "explain", "rules"):
        texts.append(gpu2npu(command, "--help").stdout)
    for code in ALL_RULES_BY_CODE:
        texts.append(gpu2npu("explain", code).stdout)
    for text in texts:
        assert not re.search(r"seed\s*0\d\d", text, re.IGNORECASE)
    for path in (ROOT / "src" / "gpu2npu").rglob("*.py"):
        assert not re.search(r"seed\s*0\d\d", path.read_text(encoding="utf-8"), re.IGNORECASE), path


FIXTURE = ROOT / "fixtures" / "cuda_scripts"


def test_version_prefixes_and_local_suffixes_name_one_release(tmp_path):
    for given in ("2.1", "2.1.0+cu121"):
        done = gpu2npu("-i", str(FIXTURE / "single_gpu_loop"), "-o", str(tmp_path / given), "-v", given, "--no-html")
        assert done.returncode == 0, done.stderr
        assert f"gpu2npu: -v {given}: PyTorch 2.1.0 (torch_npu 2.1.0.post17)" in done.stderr
        assert "torch_npu" in (tmp_path / given / "single_gpu_loop_msft" / "train.py").read_text()
    exact = gpu2npu("check", "-v", "2.1.0", str(FIXTURE / "npu_aware"))
    # (a finding, not a usage error: the fixture's torch.amp.GradScaler came with torch 2.3)
    assert exact.returncode == 1 and "-v 2.1.0:" not in exact.stderr and "NPU903" in exact.stdout
    ambiguous = gpu2npu("-i", str(FIXTURE / "single_gpu_loop"), "-o", str(tmp_path / "x"), "-v", "2.9")
    assert ambiguous.returncode == 2 and "2.9.0, 2.9.1; give one of them" in ambiguous.stderr
    unknown = gpu2npu("check", "-v", "2.0", str(FIXTURE / "npu_aware"))
    assert unknown.returncode == 2 and "the nearest known: 1.11.0 and 2.1.0" in unknown.stderr
    assert not (tmp_path / "x").exists()


def test_version_without_a_value_prints_the_tools_version():
    from gpu2npu import __version__

    for spelling in ("--version", "-V", "--tool-version"):
        done = gpu2npu(spelling)
        assert done.returncode == 0 and done.stdout.strip() == f"gpu2npu {__version__}"


def test_check_levels_put_manual_work_highest_and_count_files_with_findings():
    import json

    done = gpu2npu("check", "-v", "2.1.0", "--format", "sarif", str(FIXTURE / "flash_attn_patch"))
    assert done.returncode == 1
    results = json.loads(done.stdout)["runs"][0]["results"]
    levels = {(result["ruleId"], result["level"]) for result in results}
    # the kinds of row a human must act on are errors; the rules' edits, warnings
    assert ("NPU914", "error") in levels and ("NPU261", "warning") in levels
    assert all(level == ("error" if KINDS.get(rule) else "warning") for rule, level in levels)
    files = {result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for result in results}
    manual = sum(1 for result in results if result["level"] == "error")
    text = gpu2npu("check", "-v", "2.1.0", str(FIXTURE / "flash_attn_patch"))
    assert (f"{len(results)} findings in {len(files)} files (3 files checked): {manual} to do by hand (error), "
            f"{len(results) - manual} that gpu2npu migrates (warning)") in text.stderr
    clean = gpu2npu("check", str(FIXTURE / "npu_aware"))
    assert clean.returncode == 0 and "no CUDA-only code found (2 files checked)" in clean.stderr


def test_a_report_folder_of_an_earlier_run_is_replaced_whole_or_not_at_all(tmp_path):
    reports = tmp_path / "reports"
    first = gpu2npu("-i", str(FIXTURE / "single_gpu_loop"), "-o", str(tmp_path / "a"), "-v", "2.1.0",
                    "--report-dir", str(reports))
    assert first.returncode == 0, first.stderr
    log = reports / "msFmkTranspltlog.txt"
    before = {path.name: path.read_bytes() for path in reports.iterdir()}
    assert {"change_list.csv", "report.html", "msFmkTranspltlog.txt"} <= set(before)
    (reports / "msFmkTranspltlog.txt.1").write_text("an older rotation\n")
    again = gpu2npu("-i", str(FIXTURE / "single_gpu_loop"), "-o", str(tmp_path / "b"), "-v", "2.1.0",
                    "--report-dir", str(reports))
    assert again.returncode == 2 and "holds the reports of an earlier run" in again.stderr
    assert not (tmp_path / "b").exists() and log.read_bytes() == before["msFmkTranspltlog.txt"]
    forced = gpu2npu("-i", str(FIXTURE / "single_gpu_loop"), "-o", str(tmp_path / "b"), "-v", "2.1.0",
                     "--report-dir", str(reports), "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (reports / "msFmkTranspltlog.txt.1").exists()  # the whole earlier log went, not just some files
    assert log.read_text().count("migrating") == 1  # one run's log, not two appended


PROFILED = """\
import torch
from torch.profiler import ProfilerActivity, profile

with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    y = torch.ones(2) * 2
with torch.autograd.profiler.profile(use_cuda=True) as old_style:
    y = torch.ones(2) * 2
with torch.autograd.profiler.profile(use_cuda=False) as cpu_only:
    y = torch.ones(2) * 2
"""


def test_cuda_profiling_is_reported_with_the_npu_profiler(tmp_path):
    project = tmp_path / "profiled"
    project.mkdir()
    (project / "bench.py").write_text(PROFILED, encoding="utf-8")
    done = gpu2npu("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-html")
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "out" / "profiled_msft" / "unsupported_api.csv").read_text().splitlines()[1:]
    assert [row.split(",")[1:4] for row in rows] == [
        ["4", "4", "torch.profiler.ProfilerActivity.CUDA"], ["6", "6", "torch.autograd.profiler.profile(use_cuda=)"]]
    assert all("torch_npu.profiler.ProfilerActivity.NPU" in row for row in rows)
    checked = gpu2npu("check", "-v", "2.1.0", str(project))
    assert checked.returncode == 1 and "bench.py:4: NPU907 torch.profiler.ProfilerActivity.CUDA" in checked.stdout


def test_time_left_comes_from_bytes_and_only_once_it_means_something():
    from gpu2npu.reports.progress import format_progress

    # 10 files of 100 in 4 s holding 1% of the bytes: too early to tell (by files it would say 0:36)
    assert "left" not in format_progress(10, 100, 4.0, 1_000, 100_000)
    # 10 files holding 10% of the bytes: 36 s; 10 files holding half the bytes: 4 s, not 36
    assert format_progress(10, 100, 4.0, 10_000, 100_000).endswith("about 0:36 left")
    assert format_progress(10, 100, 4.0, 50_000, 100_000).endswith("about 0:04 left")
    assert format_progress(50, 100, 4.0, 90_000, 100_000).endswith("about 0:00 left")
    assert "left" not in format_progress(90, 100, 1.0, 90_000, 100_000)  # a second in: too early
    assert "left" not in format_progress(10, 100, 10.0)  # no bytes, no guess


def test_distributed_says_what_it_did_and_diff_shows_the_launcher(tmp_path):
    done = gpu2npu("-i", str(FIXTURE / "single_card_for_multi"), "-o", str(tmp_path), "-v", "2.1.0", "--no-html",
                   "distributed", "-m", "train.py", "-t", "model")
    assert done.returncode == 0, done.stderr
    launcher = tmp_path / "single_card_for_multi_msft_multi" / "run_distributed_npu.sh"
    assert launcher.is_file()
    assert f"distributed: launcher {launcher}: NPUS=0,1,... bash run_distributed_npu.sh" in done.stdout
    assert "distributed: HCCL process group initialised in train.py (train.py:" in done.stdout
    assert "distributed: model variable 'model' wrapped in DistributedDataParallel (train.py:" in done.stdout
    log = (launcher.parent / "msFmkTranspltlog.txt").read_text()
    assert "distributed: model variable 'model' wrapped" in log
    diff = gpu2npu("-i", str(FIXTURE / "single_card_for_multi"), "-v", "2.1.0", "--diff",
                   "distributed", "-m", "train.py", "-t", "model")
    assert diff.returncode == 0
    assert "--- /dev/null\n+++ b/run_distributed_npu.sh\n" in diff.stdout
    assert launcher.read_text() in "".join(line[1:] + "\n" for line in diff.stdout.split("+++ b/run_distributed_npu.sh\n")[1]
                                           .splitlines()[1:])


RMS = """\
import torch
import torch.nn as nn


class {name}(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))
"""


def test_advice_only_for_device_code_once_per_source_of_truth(tmp_path):
    project = tmp_path / "zoo"
    (project / "models").mkdir(parents=True)
    (project / "models" / "modular_tiny.py").write_text(RMS.format(name="TinyRMSNorm"))
    generated = ("#                🚨🚨🚨 This file was automatically generated from models/modular_tiny.py.\n"
                 "#                Do NOT edit this file manually as any edits will be overwritten.\n")
    (project / "models" / "modeling_tiny.py").write_text(generated + RMS.format(name="TinyRMSNorm"))
    copied = RMS.format(name="OtherRMSNorm").replace("class OtherRMSNorm",
                                                     "# Copied from models.modular_tiny.TinyRMSNorm\nclass OtherRMSNorm")
    (project / "models" / "modeling_other.py").write_text(copied)
    (project / "models" / "image_processing_tiny.py").write_text(
        "import torch\n\n\ndef clip(pixels: torch.Tensor):\n    pixels[pixels < 0] = 0.0\n    return pixels\n")
    (project / "models" / "losses.py").write_text(
        "import torch\n\n\ndef masked(labels: torch.Tensor, padding):\n    labels[labels == padding] = -100\n"
        "    return labels\n")
    done = gpu2npu("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.8.0", "--no-html")
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "out" / "zoo_msft" / "affinity_api_call.csv").read_text().splitlines()[1:]
    assert sorted(row.split(",")[0] for row in rows) == ["models/losses.py", "models/modular_tiny.py"]
    [special] = [row for row in rows if row.startswith("models/losses.py")]
    assert "here: `labels.masked_fill_(labels == padding, -100)`" in special


def test_code_for_another_accelerator_behind_its_test_is_not_unknown(tmp_path):
    project = tmp_path / "multi_accel"
    project.mkdir()
    (project / "rng.py").write_text(
        "import torch\n\n\ndef states():\n    out = {}\n    if hasattr(torch, 'hpu') and torch.hpu.is_available():\n"
        "        out['hpu'] = torch.hpu.random.get_rng_state()\n    return out\n\n\ndef hpu_count():\n"
        "    if not is_torch_hpu_available():\n        return 0\n    return torch.hpu.device_count()\n\n\n"
        "def unguarded():\n    return torch.hpu.random.get_rng_state()\n")
    done = gpu2npu("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.8.0", "--no-html")
    assert done.returncode == 0, done.stderr
    # torch.hpu is Habana's extension's module, which the GPU the code ran on had not either:
    # nothing to migrate, unguarded too (api_rows._plugin_module)
    rows = (tmp_path / "out" / "multi_accel_msft" / "unknown_api.csv").read_text().splitlines()[1:]
    assert rows == []


def test_every_row_of_the_expected_reports_carries_an_explained_code():
    import csv

    known = set(ALL_RULES_BY_CODE) | set(REPORT_CODES)
    seen = set()
    for path in (ROOT / "fixtures" / "expected").rglob("*.csv"):
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        if path.name in ("unsupported_api.csv", "unknown_api.csv", "api_performance_advice.csv", "change_list.csv"):
            assert all(row["Rule"] in known for row in rows), path
            seen.update(row["Rule"] for row in rows)
    assert {"NPU914", "NPU917", "NPU955"} <= seen


def test_the_readme_names_the_releases_the_data_covers():
    """The releases are known once, by the data files; the README's list is checked against them."""
    import re as _re

    from gpu2npu.knowledge import apidata as _apidata

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = _re.search(r"data for ((?:\d+\.\d+\.\d+, )+\d+\.\d+\.\d+)", text)
    assert listed is not None
    assert listed.group(1).split(", ") == _apidata.available_versions()
