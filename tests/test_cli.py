"""The command line: options, errors, exit statuses, what gets written."""
import html
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FIXTURES, migrate, page_of_any_run, read_csv, run_cli, tree_files

FIXTURE = FIXTURES / "single_gpu_loop"


def test_help_lists_options_and_exit_statuses():
    result = run_cli("--help")
    assert result.exit_code == 0
    for text in ("-i, --input", "-o, --output", "-v, --version", "--force", "Exit status", "2.1.0", "2.8.0"):
        assert text in result.output


def test_short_help_flag():
    assert run_cli("-h").exit_code == 0


def test_migration_writes_tree_and_reports(tmp_path):
    result = run_cli("-i", str(FIXTURE), "-o", str(tmp_path), "-v", "2.8.0")
    assert result.exit_code == 0, result.output
    target = tmp_path / "single_gpu_loop_msft"
    for report in ("change_list.csv", "unsupported_api.csv", "unknown_api.csv", "cuda_op_list.csv",
                   "msFmkTranspltlog.txt"):
        assert (target / report).is_file(), report
    assert (target / "change_list.csv").read_text().splitlines()[0].startswith(
        "File,Start Line,End Line,Operation Type,Message"
    )
    # the incumbent's columns, then the row's code (`gpu2npu explain CODE`)
    assert (target / "unsupported_api.csv").read_text().splitlines()[0] == "File,Start Line,End Line,OP,Tips,Rule"
    assert (target / "cuda_op_list.csv").read_text().splitlines()[0] == "File,Api"
    assert "change_list.csv" in result.output and "migrated" in result.output
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "staging folder left behind"


def _nothing_written(tmp_path):
    return list(tmp_path.iterdir()) == []


def test_unknown_version_is_a_usage_error(tmp_path):
    out = tmp_path / "out"
    result = run_cli("-i", str(FIXTURE), "-o", str(out), "-v", "9.9.9")
    assert result.exit_code == 2
    assert "no API data for PyTorch 9.9.9" in result.output and "2.1.0" in result.output
    assert not out.exists()


def test_missing_input_is_a_usage_error(tmp_path):
    result = run_cli("-i", str(tmp_path / "nope"), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not (tmp_path / "out").exists()


def test_missing_options_are_named(tmp_path):
    result = run_cli("-i", str(FIXTURE))
    assert result.exit_code == 2 and "-o/--output" in result.output and "-v/--version" in result.output


def test_output_inside_input_is_refused(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("x = y.cuda()\n")
    result = run_cli("-i", str(project), "-o", str(project / "out"), "-v", "2.1.0")
    assert result.exit_code == 2 and "inside the input" in result.output
    assert sorted(p.name for p in project.iterdir()) == ["a.py"]


def test_existing_output_needs_force(tmp_path):
    target = migrate(FIXTURE, tmp_path)
    marker = target / "marker.txt"
    marker.write_text("mine")
    result = run_cli("-i", str(FIXTURE), "-o", str(tmp_path), "-v", "2.1.0")
    assert result.exit_code == 2 and "--force" in result.output
    assert marker.read_text() == "mine"
    result = run_cli("-i", str(FIXTURE), "-o", str(tmp_path), "-v", "2.1.0", "--force")
    assert result.exit_code == 0
    assert not marker.exists() and (target / "train.py").is_file()


def test_report_name_collision_stops_before_writing(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (project / "change_list.csv").write_text("the user's own file\n")
    out = tmp_path / "out"
    result = run_cli("-i", str(project), "-o", str(out), "-v", "2.1.0")
    assert result.exit_code == 2 and "--report-dir" in result.output
    assert not out.exists()
    reports = tmp_path / "reports"
    result = run_cli("-i", str(project), "-o", str(out), "-v", "2.1.0", "--report-dir", str(reports))
    assert result.exit_code == 0, result.output
    assert (out / "proj_msft" / "change_list.csv").read_text() == "the user's own file\n"
    assert read_csv(reports / "change_list.csv")


def test_single_file_input(tmp_path):
    script = tmp_path / "solo.py"
    script.write_text("import torch\nx = torch.ones(2).cuda()\n")
    result = run_cli("-i", str(script), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert result.exit_code == 0, result.output
    migrated = tmp_path / "out" / "solo_msft" / "solo.py"
    assert migrated.read_text() == "import torch\nimport torch_npu\nx = torch.ones(2).npu()\n"


def test_unparseable_file_gives_partial_status(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "ok.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (project / "old.py").write_text('print "cuda"\n')
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert result.exit_code == 3
    assert "old.py: copied unchanged" in result.output
    assert (tmp_path / "out" / "proj_msft" / "old.py").read_text() == 'print "cuda"\n'


def test_file_modes_and_symlinks_are_kept(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    script = project / "run.py"
    script.write_text("#!/usr/bin/env python\nimport torch\nx = torch.ones(1).cuda()\n")
    script.chmod(0o755)
    (project / "link.py").symlink_to("run.py")
    target = migrate(project, tmp_path / "out")
    assert (target / "run.py").stat().st_mode & 0o777 == 0o755
    assert (target / "link.py").is_symlink() and (target / "link.py").readlink().as_posix() == "run.py"


def test_rules_and_explain():
    listing = run_cli("rules")
    assert listing.exit_code == 0 and "NPU101" in listing.output and "unsafe" in listing.output
    explained = run_cli("explain", "npu103")
    assert explained.exit_code == 0 and 'torch.device("npu:0")' in explained.output
    assert run_cli("explain", "XYZ").exit_code == 2


def test_python_dash_m_without_a_terminal(tmp_path):
    command = [sys.executable, "-m", "gpu2npu", "-i", str(FIXTURE), "-o", str(tmp_path), "-v", "2.1.0"]
    first = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "already exists" in again.stderr  # no prompt, a clear message
    assert set(tree_files(tmp_path / "single_gpu_loop_msft")) >= set(tree_files(FIXTURE))


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
def test_diff_previews_exactly_the_migration_and_writes_nothing(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "aliased_imports", project)
    before = {p: p.read_bytes() for p in project.rglob("*")  if p.is_file()}
    result = run_cli("-i", str(project), "-v", "2.1.0", "--diff")
    assert result.exit_code == 0
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]
    patch = tmp_path / "changes.diff"
    patch.write_text(result.stdout)
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=project, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    target = migrate(FIXTURES / "aliased_imports", tmp_path / "out")
    for relative in ("bench.py", "launch.py"):
        assert (project / relative).read_bytes() == (target / relative).read_bytes()


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
@pytest.mark.parametrize("fixture", ["flash_attn_patch", "xformers_llama"])
def test_a_tree_patched_from_the_diff_holds_the_generated_packages_it_imports(fixture, tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / fixture, project)
    result = run_cli("-i", str(project), "-v", "2.1.0", "--diff")
    assert result.exit_code == 0
    patch = tmp_path / "changes.diff"
    patch.write_text(result.stdout)
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=project, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    target = migrate(FIXTURES / fixture, tmp_path / "out")
    migrated = {p.relative_to(target) for p in target.rglob("*.py")}
    patched = {p.relative_to(project) for p in project.rglob("*.py")}
    assert migrated == patched and any(len(p.parts) > 1 and p.parts[0].startswith("ascend_") for p in patched)
    for relative in sorted(patched):
        assert (project / relative).read_bytes() == (target / relative).read_bytes(), relative


def test_output_is_the_same_whatever_the_number_of_processes(tmp_path):
    project = tmp_path / "all_fixtures"
    shutil.copytree(FIXTURES, project, symlinks=True)  # more Python files than PARALLEL_FROM
    serial = migrate(project, tmp_path / "j1", "2.1.0", "-j", "1", "--no-cache")
    parallel = migrate(project, tmp_path / "j2", "2.1.0", "-j", "2", "--no-cache")
    one, two = tree_files(serial), tree_files(parallel)
    assert sorted(one) == sorted(two) and len([p for p in one if p.endswith(".py")]) >= 16
    for relative in one:
        if relative == "msFmkTranspltlog.txt":
            strip = lambda text: [line[20:] for line in text.splitlines()[1:]]  # noqa: E731 (times, paths)
            assert strip(one[relative].read_text()) == strip(two[relative].read_text())
        elif relative == "report.html":
            assert page_of_any_run(one[relative].read_bytes()) == page_of_any_run(two[relative].read_bytes())
        else:
            assert one[relative].read_bytes() == two[relative].read_bytes(), relative


def test_output_is_the_same_whatever_the_string_hashing(tmp_path):
    """Two runs of the console script with different hash seeds (as two runs on a machine
    have): sets of names are iterated in another order, and nothing written may show it."""
    project = tmp_path / "all_fixtures"
    shutil.copytree(FIXTURES, project, symlinks=True)
    console_script = Path(sys.executable).parent / "gpu2npu"
    trees = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"
        finished = subprocess.run([str(console_script), "-i", str(project), "-o", str(out), "-v", "2.1.0", "-j", "1",
                                   "--no-cache"], capture_output=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert finished.returncode in (0, 3), finished.stderr
        trees.append(tree_files(out / "all_fixtures_msft"))
    one, two = trees
    assert sorted(one) == sorted(two) and len(one) > 100
    for relative in one:
        if relative == "msFmkTranspltlog.txt":
            strip = lambda text: [line[20:] for line in text.splitlines()[1:]]  # noqa: E731 (times, paths)
            assert strip(one[relative].read_text()) == strip(two[relative].read_text())
        elif relative == "report.html":
            assert page_of_any_run(one[relative].read_bytes()) == page_of_any_run(two[relative].read_bytes())
        else:
            assert one[relative].read_bytes() == two[relative].read_bytes(), relative


def test_every_exit_status_is_in_help_and_readme():
    help_text = run_cli("--help").output
    readme = (FIXTURES.parent.parent / "README.md").read_text()
    for status, meaning in (("0", "every file"), ("1", "failed"), ("2", "usage error"), ("3", "could not be processed"),
                            ("130", "interrupted"), ("143", "terminated")):
        assert any(line.split()[:1] == [status] and meaning in line for line in help_text.splitlines()), status
        assert f"`{status}`" in readme, status


def test_diff_warns_of_a_torch_pin_other_than_the_release_as_the_migration_does(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (project / "requirements.txt").write_text("torch==2.4.0\n")
    shown = subprocess.run([sys.executable, "-m", "gpu2npu", "-i", str(project), "-v", "2.1.0", "--diff"],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    warning = "requirements.txt:1 asks for torch ==2.4.0, but -v 2.1.0 migrates for torch 2.1.0"
    assert warning in shown.stderr and warning not in shown.stdout
    assert shown.stderr.index("files would change") < shown.stderr.index(warning)  # last, where it is seen
    migrated = subprocess.run([sys.executable, "-m", "gpu2npu", "-i", str(project), "-o", str(tmp_path / "out"),
                               "-v", "2.1.0"], capture_output=True, text=True, timeout=120)
    assert warning in migrated.stderr


class TestAProjectWrittenForALaterTorch:
    """Many rows of APIs newer than the release's torch (NPU903) come with one line that names the
    release whose torch has them all: the -v that migrates for the project's torch."""

    @staticmethod
    def _run(tmp_path, uses: int):
        project = tmp_path / "project"
        project.mkdir()
        lines = [f"    if torch.compiler.is_compiling():\n        return {number}\n" for number in range(uses)]
        (project / "steps.py").write_text("import torch\n\n\ndef step(x):\n" + "".join(lines)
                                          + "    return torch.nn.attention.flex_attention.create_block_mask(causal, 1, 1, 8, 8)\n")
        return run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-html")

    def test_names_the_release_that_has_them_all(self, tmp_path):
        result = self._run(tmp_path, 12)
        assert result.exit_code == 0, result.output
        rows = [row for row in read_csv(tmp_path / "out" / "project_msft" / "unsupported_api.csv")
                if row["Rule"] == "NPU903"]
        [line] = [line for line in result.output.splitlines() if "NPU903" in line]
        assert line.startswith(f"{len(rows)} uses of torch APIs that torch 2.1.0")
        # (in the releases torch_npu pairs with: torch.compiler.is_compiling is 2.3.1's, flex_attention 2.5.1's)
        assert "torch 2.5.1 has all of them: -v 2.5.1 (torch_npu 2.5.1) migrates for it" in line
        log = (tmp_path / "out" / "project_msft" / "msFmkTranspltlog.txt").read_text()
        assert line in log
        # the review page's header says it too
        run_cli("-i", str(tmp_path / "project"), "-o", str(tmp_path / "paged"), "-v", "2.1.0")
        page = (tmp_path / "paged" / "project_msft" / "report.html").read_text()
        assert f'<ul class="notes"><li>{html.escape(line)}</li></ul></header>' in page

    def test_check_says_the_same(self, tmp_path):
        migrated = [line for line in self._run(tmp_path, 12).output.splitlines() if "NPU903" in line]
        done = subprocess.run([str(Path(sys.executable).parent / "gpu2npu"), "check", str(tmp_path / "project"),
                               "-v", "2.1.0", "--no-cache"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 1
        assert [line for line in done.stderr.splitlines() if "NPU903" in line] == [f"gpu2npu: note: {migrated[0]}"]

    def test_a_few_rows_speak_for_themselves(self, tmp_path):
        result = self._run(tmp_path, 2)
        assert result.exit_code == 0, result.output
        assert not [line for line in result.output.splitlines() if "NPU903" in line]
