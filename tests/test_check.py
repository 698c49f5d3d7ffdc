"""`gpu2npu check`: right on both sides, with exit statuses and machine-readable output, the same
findings for any number of processes, cached or not."""
import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from gpu2npu.records.finding_kinds import KINDS
from gpu2npu.migration.sources import ALL_RULES_BY_CODE
from helpers import FIXTURES, fixture_names, migrate, read_csv, run_cli

# Fixtures with nothing CUDA-only to find: code that already handles NPU.
CLEAN = {"npu_aware"}


@pytest.mark.parametrize("name", sorted(set(fixture_names()) - CLEAN))
def test_flags_the_original_and_only_known_unsupported_after_migration(name, tmp_path):
    before = run_cli("check", "-v", "2.1.0", "--format", "json", str(FIXTURES / name))
    assert before.exit_code == 1
    assert json.loads(before.stdout)["count"] > 0
    target = migrate(FIXTURES / name, tmp_path)
    after = run_cli("check", "-v", "2.1.0", "--format", "json", str(target))
    findings = json.loads(after.stdout)["findings"]
    # what is left: CUDA constructs without an NPU form, in the code (the kinds of finding_kinds), the
    # launch scripts and notebooks, or the dependency files (a package still imported, a CUDA base
    # image): errors all, reported with a code that `explain` knows; nothing the migration would fix
    assert all(f["level"] == "error" and (f["rule"] in KINDS or f["rule"] in ALL_RULES_BY_CODE)
               for f in findings), findings
    # Lines differ (the output has inserted lines; the report speaks of the input's), the API not.
    reported = {(row["File"], row["OP"]) for row in read_csv(target / "unsupported_api.csv")}
    for finding in findings:
        relative = finding["path"][len(str(target)) + 1:]
        # (a file that could not be read is its own row: NPU925, "file not migrated")
        op = "file not migrated" if finding["rule"] == "NPU925" else finding["message"].split(" has no NPU equivalent")[0]
        assert (relative, op) in reported, finding
    assert after.exit_code == (1 if findings else 0)


def test_clean_code_exits_zero(tmp_path):
    result = run_cli("check", str(FIXTURES / "npu_aware"))
    assert result.exit_code == 0 and result.stdout == ""


def test_text_output_names_file_line_and_rule():
    result = run_cli("check", "-v", "2.1.0", str(FIXTURES / "single_gpu_loop" / "train.py"))
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first.startswith(f"{FIXTURES / 'single_gpu_loop' / 'train.py'}:") and " NPU10" in first


def test_sarif_is_well_formed():
    result = run_cli("check", "-v", "2.1.0", "--format", "sarif", str(FIXTURES / "nanogpt_style"))
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert run["results"] and all(r["ruleId"] in rule_ids for r in run["results"])
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith(".py") and location["region"]["startLine"] >= 1
    assert {r["level"] for r in run["results"]} <= {"error", "warning"}


@pytest.mark.parametrize("args", [["check"], ["check", "nowhere"], ["check", "-v", "0.0.1", "."], ["check", "--format", "xml", "."]])
def test_usage_errors_exit_two(args):
    assert run_cli(*args).exit_code == 2


def test_check_writes_nothing(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    result = run_cli("check", str(project))
    assert result.exit_code == 1
    assert [p.name for p in tmp_path.iterdir()] == ["p"] and [p.name for p in project.iterdir()] == ["a.py"]


def _check_command(*args):
    # the console script as CI runs it: a process of its own, a real process pool
    command = [sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--format", "json", *args]
    return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)


def test_findings_are_the_same_for_any_number_of_processes_cached_or_not(tmp_path):
    project = tmp_path / "all_fixtures"
    shutil.copytree(FIXTURES, project, symlinks=True)  # more Python files than the engine's PARALLEL_FROM
    cache_folder = tmp_path / "cache"
    serial = _check_command("-j", "1", "--no-cache", str(project))
    cold = _check_command("-j", "2", "--cache-dir", str(cache_folder), str(project))
    with sqlite3.connect(cache_folder / "results.sqlite") as db:
        stored = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    warm = _check_command("-j", "2", "--cache-dir", str(cache_folder), str(project))
    assert serial.returncode == cold.returncode == warm.returncode == 1, serial.stderr
    assert json.loads(serial.stdout)["count"] > 0
    assert serial.stdout == cold.stdout == warm.stdout
    assert serial.stderr == cold.stderr == warm.stderr
    # one result per file checked (the unparseable one's too), read back by the warm run
    from gpu2npu.reading.discover import MIGRATED_KINDS, walk

    assert stored == len([entry for entry in walk(project) if entry.kind in MIGRATED_KINDS]) >= 16


def test_a_warm_check_reads_results_back_instead_of_computing_them(tmp_path, monkeypatch):
    from gpu2npu.knowledge import apidata
    from gpu2npu.migration import sources
    from gpu2npu.commands.check import check_paths
    from gpu2npu.rules import Options

    options = Options(api=apidata.load("2.1.0"))
    cold = check_paths([FIXTURES / "single_gpu_loop"], options, 1, tmp_path / "cache")

    def refuse(*args):
        raise AssertionError("a file was migrated again although its result is cached")

    monkeypatch.setattr(sources, "migrate_file", refuse)  # (what the engine calls)
    warm = check_paths([FIXTURES / "single_gpu_loop"], options, 1, tmp_path / "cache")
    assert warm.findings == cold.findings and warm.files == cold.files > 0


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses a `type` statement")
def test_a_file_this_python_cannot_parse_fails_the_check_as_partly_checked(tmp_path):
    source = tmp_path / "typed.py"
    source.write_text("import torch\n\ntype Batch = list[torch.Tensor]\n\nx = torch.zeros(2).cuda()\n")
    done = subprocess.run([sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--no-cache", str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert f"{source}:5: NPU102" in done.stdout  # the .cuda() that libcst reads is found all the same
    # and the API calls and hazards that were not looked at are an error of their own
    [partly] = [line for line in done.stdout.splitlines() if " NPU901 " in line]
    assert partly.startswith(f"{source}:3: NPU901 partly checked: Python 3.") and "(invalid syntax here)" in partly
    # machines read it too: JSON's warnings, SARIF's failed invocation and its notification
    for output_format in ("json", "sarif"):
        done = subprocess.run([sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--no-cache", "--format",
                               output_format, str(source)], capture_output=True, text=True)
        assert done.returncode == 1
        report = json.loads(done.stdout)
        if output_format == "json":
            texts = report["warnings"]
            assert {f["rule"]: f["level"] for f in report["findings"]}["NPU901"] == "error"
        else:
            [invocation] = report["runs"][0]["invocations"]
            assert invocation["executionSuccessful"] is False
            assert {note["level"] for note in invocation["toolExecutionNotifications"]} == {"warning"}
            texts = [note["message"]["text"] for note in invocation["toolExecutionNotifications"]]
            assert {(r["ruleId"], r["level"]) for r in report["runs"][0]["results"]} >= {("NPU901", "error")}
        assert texts == [partly.replace(" NPU901 ", " ", 1)]


@pytest.mark.parametrize("content, why", [
    (b"import torch\nx = torch.zeros(1).cuda()\nprint 'done'\n", "syntax error at line 3"),  # Python 2
    (b"import torch\nx = '\xff\xfe'.cuda()\n", "cannot be decoded"),
])
def test_a_file_that_cannot_be_parsed_fails_the_check_in_every_format(tmp_path, content, why):
    (tmp_path / "old.py").write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--no-cache", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "no CUDA-only code found" not in done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith(f"{tmp_path / 'old.py'}:") and " NPU925 file not checked: " in line and why in line
    report = json.loads(subprocess.run([sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--format", "json",
                                        str(tmp_path)], capture_output=True, text=True).stdout)
    assert [(f["rule"], f["level"]) for f in report["findings"]] == [("NPU925", "error")] and len(report["warnings"]) == 1
    sarif = json.loads(subprocess.run([sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--format", "sarif",
                                       str(tmp_path)], capture_output=True, text=True).stdout)["runs"][0]
    assert [(r["ruleId"], r["level"]) for r in sarif["results"]] == [("NPU925", "error")]
    [invocation] = sarif["invocations"]
    assert invocation["executionSuccessful"] is False and why in invocation["toolExecutionNotifications"][0]["message"]["text"]
    assert "NPU925" in {rule["id"] for rule in sarif["tool"]["driver"]["rules"]}


def test_a_dependency_file_that_cannot_be_read_fails_the_check(tmp_path):
    (tmp_path / "requirements.txt").write_bytes(b"torch==2.1.0\n\xff\xfe\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    done = subprocess.run([sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--no-cache", "--format", "json",
                           str(tmp_path)], capture_output=True, text=True)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["count"] == 2  # the .cuda() is checked all the same
    assert {f["rule"] for f in report["findings"]} == {"NPU102", "NPU925"}
    [warning] = report["warnings"]
    assert warning.startswith(f"{tmp_path / 'requirements.txt'}:1: file not checked: not UTF-8 text")


def test_sarif_carries_help_for_every_code_a_result_names():
    result = run_cli("check", "-v", "2.1.0", "--format", "sarif", str(FIXTURES / "nanogpt_style"))
    run = json.loads(result.stdout)["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    used = {r["ruleId"] for r in run["results"]}
    assert used & set(KINDS) and used - set(KINDS)  # both report kinds and rules' edits
    for code in used:
        rule = rules[code]
        assert rule["shortDescription"]["text"] != code and rule["fullDescription"]["text"], code
        # why, the NPU way and an example, for a report kind; documentation and an example, for a rule
        assert "Example" in rule["help"]["text"] or "Before:" in rule["help"]["text"], code
        if code in KINDS:
            assert "On the NPU:" in rule["help"]["text"], code


def test_a_folder_named_absolutely_is_read_as_its_own_project(tmp_path, monkeypatch):
    # the kernel and its launcher in one module, the device test around its call in another: `check`
    # reads the folder's modules as the migration does, named from anywhere
    from helpers import write_project
    project = write_project(tmp_path / "proj", {
        "pkg/__init__.py": "",
        "pkg/kernels.py": ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _add_kernel(x, y, out):\n"
                           "    pass\n\n\ndef add(x, y):\n    out = x.new_empty(x.shape)\n    _add_kernel[(1,)](x, y, out)\n"
                           "    return out\n"),
        "pkg/model.py": ("import torch\nfrom pkg.kernels import add\n\n\ndef forward(x, y):\n    if x.is_cuda:\n"
                         "        return add(x, y)\n    return x + y\n"),
    })
    found = []
    for path in (str(project), str(project.relative_to(tmp_path)), "."):
        monkeypatch.chdir(project if path == "." else tmp_path)
        result = run_cli("check", "-v", "2.1.0", "--format", "json", "--no-cache", path)
        found.append(sorted((f["path"].rsplit("pkg/", 1)[-1], f["start_line"], f["rule"], f["level"])
                            for f in json.loads(result.stdout)["findings"]))
    assert found[0] == found[1] == found[2]
    assert ("model.py", 6, "NPU914", "error") in found[0], found[0]
