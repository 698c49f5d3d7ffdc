"""Launch scripts: shell, Makefiles and YAML job files, rewritten line by line."""
import shutil
import subprocess

import pytest

from gpu2npu.reading.discover import Kind, kind_of
from gpu2npu.migration.launch_scripts import migrate_script
from gpu2npu.migration.pipeline import Status
from gpu2npu.reading.shell_syntax import Dialect, scan

from helpers import FIXTURES, migrate, run_cli, tree_files


def rewritten(text: str, path: str = "run.sh") -> str:
    result = migrate_script(text.encode(), path)
    return text if result.output is None else result.output.decode()


@pytest.mark.parametrize("name, kind", [
    ("train.sh", Kind.LAUNCH_SCRIPT), ("x/run.BASH", Kind.LAUNCH_SCRIPT), ("Makefile", Kind.LAUNCH_SCRIPT),
    ("rules.mk", Kind.LAUNCH_SCRIPT), ("job.yml", Kind.LAUNCH_SCRIPT), ("conf.yaml", Kind.LAUNCH_SCRIPT),
    ("nb.ipynb", Kind.NOTEBOOK), ("notes.txt", Kind.OTHER), ("train.py", Kind.PYTHON),
])
def test_which_files_are_launch_scripts(name, kind):
    from pathlib import Path

    assert kind_of(Path(name)) == kind


@pytest.mark.parametrize("source, expected", [
    # comments are prose: untouched
    ("echo hi  # CUDA_VISIBLE_DEVICES=0\n", "echo hi  # CUDA_VISIBLE_DEVICES=0\n"),
    # `$#` and `${#a[@]}` are not comments
    ("n=$#; m=${#a[@]} CUDA_VISIBLE_DEVICES=0 x\n", "n=$#; m=${#a[@]} ASCEND_RT_VISIBLE_DEVICES=0 x\n"),
    ('echo "# $CUDA_VISIBLE_DEVICES"\n', 'echo "# $ASCEND_RT_VISIBLE_DEVICES"\n'),
    ("python run.py --backend=nccl --dist-backend 'nccl'\n", "python run.py --backend=hccl --dist-backend 'hccl'\n"),
    ("python run.py --backend NCCL\n", "python run.py --backend HCCL\n"),
    ("echo backend nccl is fast\n", "echo backend nccl is fast\n"),
    ("sudo nvidia-smi; (nvidia-smi) && echo ok\n", "sudo npu-smi info; (npu-smi info) && echo ok\n"),
    ("which nvidia-smi\n", "which nvidia-smi\n"),
    ("x=$(nvidia-smi -L | wc -l)\n", "x=$(nvidia-smi -L | wc -l)\n"),
    ("/usr/bin/nvidia-smi\n", "/usr/bin/nvidia-smi\n"),
    ("echo 'CUDA_VISIBLE_DEVICES'\n", "echo 'CUDA_VISIBLE_DEVICES'\n"),
    ("cat <<'EOF'\nCUDA_VISIBLE_DEVICES=1\nEOF\nCUDA_VISIBLE_DEVICES=2 x\n", "cat <<'EOF'\nCUDA_VISIBLE_DEVICES=1\nEOF\nASCEND_RT_VISIBLE_DEVICES=2 x\n"),
    ("python -c '\nimport os\nos.environ[\"CUDA_VISIBLE_DEVICES\"]\n'\n", "python -c '\nimport os\nos.environ[\"CUDA_VISIBLE_DEVICES\"]\n'\n"),
])
def test_shell(source, expected):
    assert rewritten(source) == expected


def test_literals_and_non_commands_are_reported():
    result = migrate_script(b"which nvidia-smi\ncat <<EOF\nexport CUDA_VISIBLE_DEVICES=1\nEOF\nnvidia-smi | grep MiB\n", "a.sh")
    assert {(f.start_line, f.api) for f in result.findings} == {(1, "nvidia-smi"), (3, "CUDA_VISIBLE_DEVICES"), (5, "nvidia-smi")}


def test_makefile_and_yaml_syntax():
    make = "X = 1 # CUDA_VISIBLE_DEVICES\nrun:\n\t@nvidia-smi  # show the cards\n\t-CUDA_VISIBLE_DEVICES=$(G) python t.py --backend $(B)\n"
    assert rewritten(make, "Makefile") == (
        "X = 1 # CUDA_VISIBLE_DEVICES\nrun:\n\t@npu-smi info  # show the cards\n\t-ASCEND_RT_VISIBLE_DEVICES=$(G) python t.py --backend $(B)\n")
    yaml = "env: {CUDA_VISIBLE_DEVICES: '0'}  # CUDA_VISIBLE_DEVICES\nnote: \"a # b nccl\"\nsteps:\n  - nvidia-smi\n  - run: 'nvidia-smi'\n"
    assert rewritten(yaml, "ci.yml") == (
        "env: {ASCEND_RT_VISIBLE_DEVICES: '0'}  # CUDA_VISIBLE_DEVICES\nnote: \"a # b nccl\"\nsteps:\n  - npu-smi info\n  - run: 'npu-smi info'\n")


class TestMakefileVariables:
    """A Makefile's own CUDA_* variables are make names, not CUDA's settings; the ones CUDA and
    its toolkit read are still reported wherever they stand."""

    def reported(self, source: str, path: str = "Makefile"):
        return sorted((f.start_line, f.api) for f in migrate_script(source.encode(), path).findings)

    def test_a_makefiles_own_variable_is_not_reported(self):
        make = "CUDA_OUTPUT_FILE = -o $@\ntrain: train.cu\n\t$(NVCC) $< $(CUDA_OUTPUT_FILE)\n"
        assert self.reported(make) == []

    def test_cudas_own_variables_are_reported_in_a_makefile(self):
        make = "CUDA_HOME ?= /usr/local/cuda\nrun:\n\tCUDA_MODULE_LOADING=LAZY CUDA_CACHE_PATH=/tmp/c python t.py\n"
        assert self.reported(make) == [(1, "CUDA_HOME"), (3, "CUDA_CACHE_PATH"), (3, "CUDA_MODULE_LOADING")]

    def test_a_shell_scripts_cuda_variables_are_reported(self):
        assert self.reported("export CUDA_OUTPUT_FILE=out\n", "run.sh") == [(1, "CUDA_OUTPUT_FILE")]


def test_scanner_carries_quotes_and_heredocs_across_lines():
    lines = ["echo 'a", "b' c # d", "cat <<-END", "\tx", "\tEND", "y # z"]
    scanned = list(scan(lines, Dialect.SHELL))
    assert [line.code for line in scanned] == ["echo 'a", "b' c ", "cat <<-END", "\tx", "\tEND", "y "]
    assert scanned[0].literal == [(5, 7)] and scanned[1].literal == [(0, 2)] and scanned[3].literal == [(0, 2)]


def test_line_endings_and_undecodable_bytes_are_kept():
    data = b"# caf\xe9 (latin-1)\r\nexport CUDA_VISIBLE_DEVICES=0\r\nnvidia-smi\r\necho done"
    result = migrate_script(data, "a.sh")
    assert result.output == b"# caf\xe9 (latin-1)\r\nexport ASCEND_RT_VISIBLE_DEVICES=0\r\nnpu-smi info\r\necho done"
    assert [(c.start_line, c.rule) for c in result.changes] == [(2, "NPU501"), (3, "NPU502")]


def test_binary_and_irrelevant_files_are_not_touched():
    assert migrate_script(b"CUDA_VISIBLE_DEVICES=0\0\x01", "blob.sh").status == Status.SKIPPED
    assert migrate_script(b"echo hello\n", "a.sh").status == Status.SKIPPED


def test_idempotent_on_the_fixture(tmp_path):
    first = migrate(FIXTURES / "notebook_and_scripts", tmp_path / "one")
    for name in ("train.sh", "Makefile", "config.yaml"):
        again = migrate_script((first / name).read_bytes(), name)
        assert not again.changes and again.output is None, name


def test_check_reports_notebooks_and_launch_scripts(tmp_path):
    result = run_cli("check", "-v", "2.1.0", str(FIXTURES / "notebook_and_scripts"))
    assert result.exit_code == 1
    text = result.stdout
    for expected in ("train.sh:4", "NPU501", "Makefile:10", "NPU502", "fit_line.ipynb:", "NPU601", "NPU101", "NPU590"):
        assert expected in text, expected
    project = tmp_path / "p"
    project.mkdir()
    (project / "run.sh").write_text("echo hi\n")
    assert run_cli("check", str(project)).exit_code == 0


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
def test_diff_covers_notebooks_and_scripts(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "notebook_and_scripts", project)
    result = run_cli("-i", str(project), "-v", "2.1.0", "--diff")
    assert result.exit_code == 0
    for name in ("fit_line.ipynb", "train.sh", "Makefile", "config.yaml"):
        assert f"+++ b/{name}" in result.stdout
    patch = tmp_path / "changes.diff"
    patch.write_text(result.stdout)
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=project, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    target = migrate(FIXTURES / "notebook_and_scripts", tmp_path / "out")
    for relative, path in tree_files(project).items():
        assert path.read_bytes() == (target / relative).read_bytes(), relative


class TestTrainerSettingsInConfigs:
    """What a launch script or config hands to transformers' trainer fails as the Python code's
    same setting does: a bitsandbytes optimizer name (NPU910, the Python code's code) and tf32."""

    @pytest.mark.parametrize("text, path, api", [
        ("torchrun train.py --optim adamw_bnb_8bit --bf16 True\n", "run.sh", "optim='adamw_bnb_8bit'"),
        ("accelerate launch train.py --optim=paged_adamw_8bit\n", "run.sh", "optim='paged_adamw_8bit'"),
        ("base_model: llama\noptim: 'adamw_8bit'\n", "config.yml", "optim='adamw_8bit'"),
        ("bf16: true\ntf32: true   # Ampere\n", "config.yaml", "tf32: true"),
    ])
    def test_reported(self, text, path, api):
        result = migrate_script(text.encode(), path)
        assert [finding.api for finding in result.findings] == [api]
        if api.startswith("optim"):
            assert result.findings[0].rule == "NPU910" and "use optim='adamw_torch'" in result.findings[0].tip

    @pytest.mark.parametrize("text, path", [
        ("torchrun train.py --optim adamw_torch_fused\n", "run.sh"),
        ("optim: adamw_torch\ntf32: false\n", "config.yaml"),
        ("echo 'tf32: true'\n", "run.sh"),  # (a YAML key only in a YAML file)
        ("# optim: paged_adamw_8bit on a GPU\n", "config.yaml"),
    ])
    def test_not_reported(self, text, path):
        result = migrate_script(text.encode(), path)
        assert result.findings == []

    def test_check_gives_the_python_codes_code(self, tmp_path):
        (tmp_path / "config.yaml").write_text("optim: paged_adamw_8bit\n")
        (tmp_path / "train.py").write_text("from transformers import TrainingArguments\n"
                                           "args = TrainingArguments(output_dir='o', optim='paged_adamw_8bit')\n")
        found = run_cli("check", "-v", "2.1.0", "--no-cache", str(tmp_path)).output
        assert [line.split()[1] for line in found.splitlines() if "paged_adamw_8bit" in line] == ["NPU910", "NPU910"]


def _migrate_script(tmp_path, script: str):
    """(output, changes, findings) of `script` as train.sh, with the options of a -v 2.1.0 run."""
    from gpu2npu.knowledge import apidata
    from gpu2npu.records.options import Options

    result = migrate_script(script.encode(), "train.sh", options=Options(api=apidata.load("2.1.0")))
    output = result.output.decode() if result.output is not None else script
    return output, result.changes, result.findings


def _assert_reported_and_left(tmp_path, script: str, reported: str) -> None:
    output, changes, findings = _migrate_script(tmp_path, script)
    assert output == script and not changes
    assert reported in {finding.api for finding in findings}


class TestPythonRunFromAScript:
    """`python -c CODE` in a launch script runs Python: its torch.cuda calls whose NPU answer
    means the same to the script (a count, a yes or no) are migrated as a Python file's, with
    torch_npu imported first in the code; other calls are reported, not edited."""

    @pytest.mark.parametrize("script, expected", [
        ("GPUS=$(python -c 'import torch; print(torch.cuda.device_count())')\n",
         "GPUS=$(python -c 'import torch_npu; import torch; print(torch_npu.npu.device_count())')\n"),
        ('N=`python3 -c "import torch; print(torch.cuda.device_count())"`\n',
         'N=`python3 -c "import torch_npu; import torch; print(torch_npu.npu.device_count())"`\n'),
        ("/usr/bin/python3.10 -u -c 'import torch; assert torch.cuda.is_available()' && torchrun train.py\n",
         "/usr/bin/python3.10 -u -c 'import torch_npu; import torch; assert torch_npu.npu.is_available()' && "
         "torchrun train.py\n"),
        # (torch_npu imported already: not again)
        ("python -c 'import torch, torch_npu; print(torch.cuda.device_count())'\n",
         "python -c 'import torch, torch_npu; print(torch_npu.npu.device_count())'\n"),
    ])
    def test_the_code_is_migrated(self, tmp_path, script, expected):
        output, changes, _ = _migrate_script(tmp_path, script)
        assert output == expected
        assert changes and all(change.rule == "NPU508" for change in changes)

    @pytest.mark.parametrize("script, reported", [
        # an answer the script may read otherwise (None on the NPU), a name the release lacks
        ("CAP=$(python -c 'import torch; print(torch.cuda.get_device_capability())')\n", "torch.cuda.get_device_capability"),
        ("python -c 'import torch; print(torch.cuda.get_arch_list())'\n", "torch.cuda.get_arch_list"),
    ])
    def test_other_calls_are_reported_and_left(self, tmp_path, script, reported):
        _assert_reported_and_left(tmp_path, script, reported)

    @pytest.mark.parametrize("script", [
        "python -c 'import torch; print(torch.__version__)'\n",
        "python train.py --note torch.cuda.device_count\n",
        "echo 'python -c torch.cuda.device_count()'\n",
    ])
    def test_no_code_asking_cuda_is_left(self, tmp_path, script):
        output, changes, _ = _migrate_script(tmp_path, script)
        assert output == script and not changes


class TestContainersGivenNvidiaGpus:
    """`docker run --gpus all` (or --runtime=nvidia) asks NVIDIA's container runtime for the GPUs,
    which an Ascend machine has not: reported with how its NPUs are given to a container."""

    @pytest.mark.parametrize("script, reported", [
        ("docker run --gpus all -it qwenllm/qwen:cu117 python cli_demo.py\n", "--gpus all"),
        ("sudo docker run -d --gpus \"device=0\" --rm image\n", "--gpus device=0"),
        ("podman run --gpus=all image\n", "--gpus all"),
        ("docker run --runtime=nvidia image\n", "--runtime nvidia"),
    ])
    def test_the_option_is_reported(self, tmp_path, script, reported):
        _assert_reported_and_left(tmp_path, script, reported)

    @pytest.mark.parametrize("script", [
        "python train.py --gpus 8\n",  # a program's own option
        "docker run image python train.py --gpus 8\n",  # the containerized program's
        "docker run --runtime=runc image\n",
        "docker ps --gpus\n",
    ])
    def test_other_gpus_options_are_not(self, tmp_path, script):
        _, _, findings = _migrate_script(tmp_path, script)
        assert not any(finding.api.startswith(("--gpus", "--runtime")) for finding in findings)
