"""The CI integrations of `gpu2npu check` do what the README says: the pre-commit hook is given
the files check reads (requirement files too, never README.md), the composite action installs
gpu2npu from its own checkout, writes SARIF and fails on findings after writing it, and the
README's GitHub Actions, GitLab CI and pre-commit examples run as written."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu2npu.reading.dependency_files import dependency_format
from gpu2npu.reading.discover import MIGRATED_KINDS, Kind, kind_of
from helpers import ROOT

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
(HOOK,) = [hook for hook in HOOKS if hook["id"] == "gpu2npu-check"]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))

CUDA = "import torch\nx = torch.zeros(1).cuda()\n"
CLEAN = "import torch\nx = torch.zeros(1)\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


def gpu2npu(*args, cwd=None):
    return subprocess.run([GPU2NPU, *args], capture_output=True, text=True, timeout=60, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def write(root: Path, files: dict) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


# --- the pre-commit hook ------------------------------------------------------------------------

# pre-commit picks a hook's files with the tags of the `identify` library, which is no dependency
# of gpu2npu (nor of its tests): the tags the hook uses are worked out here as identify does.
# "file": any regular file; "text"/"binary": identify's test of the first KiB (only these bytes:
# text), which it applies when the name does not say (for the names the hook accepts -- .py, .txt,
# .toml, .yml, Dockerfile, ... -- identify's name table says "text" as well).
KNOWN_TAGS = {"file", "text", "binary"}
TEXT_BYTES = bytes([7, 8, 9, 10, 11, 12, 13, 27]) + bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0x100))


def identify_tags(path: Path) -> set:
    return {"file", "binary" if path.read_bytes()[:1024].translate(None, TEXT_BYTES) else "text"}


def pre_commit_selects(hook: dict, relative: str, path: Path) -> bool:
    """Whether pre-commit gives the file `relative` (from the repository root, `/`-separated) to
    `hook`, as its Classifier decides: `files` searched and `exclude` not found in the path, then
    every tag of `types`, one of `types_or` (if any), none of `exclude_types`."""
    if not re.search(hook.get("files", ""), relative) or re.search(hook.get("exclude", "^$"), relative):
        return False
    tags = identify_tags(path)
    return (set(hook.get("types", ["file"])) <= tags
            and (not hook.get("types_or") or bool(tags & set(hook["types_or"])))
            and not tags & set(hook.get("exclude_types", [])))


def check_reads(relative: str) -> bool:
    """Whether `gpu2npu check .` reads the file, by gpu2npu's own discovery (discover.py, formats.py)."""
    kind = kind_of(Path(relative))
    return kind in MIGRATED_KINDS or (kind == Kind.OTHER and dependency_format(relative) is not None)


SELECTED = [
    "requirements.txt", "requirements/dev.txt", "constraints.txt", "pyproject.toml", "setup.cfg",
    "setup.py", "environment.yml", "train.py", "notebooks/explore.ipynb", "run.sh",
    "requirements-dev.txt", "dev-requirements.txt", "test_requirements.txt", "requirements.in",
    "reqs/base.txt", "sub/requirement/gpu.txt", "conda/environment-gpu.yaml", "conda.yaml", "ci/my_env.yml",
    "Dockerfile", "docker/Dockerfile.gpu", "gpu.dockerfile", "Containerfile", "Makefile", "rules.mk",
    "scripts/launch.bash", "configs/train.yaml", "pkg/Setup.py", "REQUIREMENTS.TXT",
]
NOT_SELECTED = [
    "README.md", "docs/logo.png", "LICENSE", "notes.txt", "docs/requirements.md", "csrc/kernel.cu",
    "csrc/op.cpp", "data.json", "Cargo.toml", "tox.ini", "setup.cfg.orig", "pyproject.toml.bak",
    "requirements.txt.orig", "typings/torch.pyi",
]


def test_the_hook_uses_only_tags_this_test_knows_and_passes_files_one_run_at_a_time():
    used = set(HOOK.get("types", [])) | set(HOOK.get("types_or", [])) | set(HOOK.get("exclude_types", []))
    assert used <= KNOWN_TAGS
    assert HOOK["entry"] == "gpu2npu check"
    assert HOOK["language"] == "python"
    assert HOOK.get("pass_filenames", True) is True
    assert HOOK["require_serial"] is True


@pytest.mark.parametrize("relative", SELECTED)
def test_the_hook_is_given_what_check_reads(tmp_path, relative):
    path = write(tmp_path, {relative: "x = 1\n"}) / relative
    assert check_reads(relative), relative  # (the list is of files check reads)
    assert pre_commit_selects(HOOK, relative, path)


@pytest.mark.parametrize("relative", NOT_SELECTED)
def test_the_hook_is_not_given_what_check_does_not_read(tmp_path, relative):
    path = write(tmp_path, {relative: PNG if relative.endswith(".png") else "# text\n"}) / relative
    assert not check_reads(relative), relative
    assert not pre_commit_selects(HOOK, relative, path)


def test_a_binary_file_with_a_name_check_reads_is_not_given_to_the_hook(tmp_path):
    # (check would read it as Python and fail it: NPU925)
    path = write(tmp_path, {"model.py": PNG}) / "model.py"
    assert not pre_commit_selects(HOOK, "model.py", path)


def test_a_file_of_no_kind_check_reads_is_passed_over_saying_so_and_the_hook_does_not_select_it(tmp_path):
    """A README that mentions CUDA is not code: check names it as not checked and passes; a script
    without .py whose first line runs Python is read as Python, as the hook's old `types: [python]` did."""
    write(tmp_path, {"README.md": "Call x.cuda() to move it.\nimport torch\n",
                     "train": "#!/usr/bin/env python3\nimport torch\nx = torch.zeros(1).cuda()\n"})
    done = gpu2npu("check", "-v", "2.1.0", "README.md", cwd=tmp_path)
    assert done.returncode == 0 and "README.md: not checked, not a kind of file gpu2npu reads" in done.stderr
    assert not pre_commit_selects(HOOK, "README.md", tmp_path / "README.md")
    done = gpu2npu("check", "-v", "2.1.0", "train", cwd=tmp_path)
    assert done.returncode == 1 and "train:3: NPU102" in done.stdout


def test_check_dot_does_not_walk_into_environments_and_tool_folders(tmp_path):
    cuda = "import torch\nx = torch.zeros(1).cuda()\n"
    write(tmp_path, {"train.py": "import torch\n", ".venv/lib/site-packages/torch/cuda.py": cuda,
                     "env/pyvenv.cfg": "home = /usr/bin\n", "env/lib/python3.11/site-packages/x.py": cuda,
                     "node_modules/a.py": cuda, ".git/hooks/h.py": cuda, ".tox/py/x.py": cuda})
    done = gpu2npu("check", "-v", "2.1.0", ".", cwd=tmp_path)
    assert done.returncode == 0 and "(1 file checked)" in done.stderr, done.stdout


def hook_run(project: Path, args=()):
    """The hook as pre-commit runs it in `project`: its entry (the console script for `gpu2npu`),
    its args, then every file of the project it selects."""
    files = sorted(path.relative_to(project).as_posix() for path in project.rglob("*") if path.is_file())
    chosen = [relative for relative in files if pre_commit_selects(HOOK, relative, project / relative)]
    program, *entry = HOOK["entry"].split()
    assert program == "gpu2npu"
    return chosen, subprocess.run([GPU2NPU, *entry, *args, *chosen], capture_output=True, text=True, timeout=60,
                                  cwd=project, stdin=subprocess.DEVNULL)


def test_the_hook_fails_on_a_cuda_only_requirement_and_passes_without_it(tmp_path):
    write(tmp_path, {"requirements.txt": "numpy\nflash-attn==2.5.8\n", "train.py": CLEAN,
                     "README.md": "Install flash-attn, then call x.cuda().\nimport torch\n", "docs/logo.png": PNG})
    chosen, run = hook_run(tmp_path)
    assert chosen == ["requirements.txt", "train.py"]
    assert run.returncode == 1, run.stderr
    assert re.search(r"^requirements\.txt:2: NPU853 flash-attn", run.stdout, re.M), run.stdout
    (tmp_path / "requirements.txt").write_text("numpy\n", encoding="utf-8")
    chosen, run = hook_run(tmp_path)
    assert chosen == ["requirements.txt", "train.py"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == ""


def test_the_hook_reads_a_requirements_folder_as_check_dot_does(tmp_path):
    write(tmp_path, {"requirements/dev.txt": "-r ../requirements.txt\ntorch>=2.1\nflash-attn==2.5.8\n",
                     "requirements.txt": "numpy\n"})
    whole = gpu2npu("check", ".", cwd=tmp_path)
    assert "requirements/dev.txt:3: NPU853" in whole.stdout
    chosen, run = hook_run(tmp_path)
    assert "requirements/dev.txt" in chosen
    assert run.stdout == whole.stdout


# --- the composite action -----------------------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def resolve(value: str, inputs: dict, steps: dict) -> str:
    """`${{ inputs.X }}` and `${{ steps.ID.outputs.X }}` in `value`, as GitHub evaluates them
    (a missing output is an empty string)."""
    def one(match):
        words = match.group(1).split(".")
        if words[0] == "inputs" and len(words) == 2:
            return inputs[words[1]]
        if words[0] == "steps" and len(words) == 4 and words[2] == "outputs":
            return steps.get(words[1], {}).get(words[3], "")
        raise AssertionError(f"an expression this test does not evaluate: {match.group(0)}")
    return EXPRESSION.sub(one, value)


def run_action(tmp_path: Path, workspace: Path, **given):
    """Every step of action.yml in order, as a runner runs a composite action: each `run:` written
    to a file and run by `bash --noprofile --norc -eo pipefail` in the workspace, with the step's
    env (inputs substituted), GITHUB_ACTION_PATH the repository root and a GITHUB_OUTPUT file of
    its own; a step after a failed one is skipped. The `python` input is a stand-in that records a
    `-m pip` call instead of downloading and runs the test's Python for anything else."""
    pip_log = tmp_path / "pip.log"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then\n'
                      f'  shift 2; printf "%s\\n" "$@" >> "{pip_log}"; exit 0\nfi\n'
                      f'exec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(inputs)
    assert not unknown, unknown
    inputs.update(given, python=given.get("python", str(python)))
    # the action runs gpu2npu as `$PYTHON -m gpu2npu`: the console script's folder need not be on PATH
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(folder for folder in os.environ["PATH"].split(os.pathsep) if folder != venv_bin)
    steps, statuses, logs = {}, [], []
    for number, step in enumerate(ACTION["runs"]["steps"]):
        assert step["shell"] == "bash"
        output = tmp_path / f"output-{number}"
        output.write_text("", encoding="utf-8")
        script = tmp_path / f"step-{number}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = dict(os.environ, PATH=path, GITHUB_ACTION_PATH=str(ROOT), GITHUB_OUTPUT=str(output),
                   GITHUB_WORKSPACE=str(workspace))
        env.update({name: resolve(str(value), inputs, steps) for name, value in step.get("env", {}).items()})
        run = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                             env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        statuses.append(run.returncode)
        logs.append(run)
        lines = output.read_text(encoding="utf-8").splitlines()
        assert all("=" in line and "<<" not in line.split("=")[0] for line in lines), lines
        steps[step.get("id", f"step{number}")] = dict(line.split("=", 1) for line in lines)
        if run.returncode != 0:
            break
    outputs = {name: resolve(spec["value"], inputs, steps) for name, spec in ACTION["outputs"].items()}
    installed = pip_log.read_text(encoding="utf-8").splitlines() if pip_log.exists() else []
    return statuses, outputs, installed, logs


def sarif_results(path: str):
    log = json.loads(Path(path).read_text(encoding="utf-8"))
    assert log["version"] == "2.1.0"
    return [(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             result["locations"][0]["physicalLocation"]["region"]["startLine"], result["ruleId"])
            for result in log["runs"][0]["results"]]


def test_the_action_passes_inputs_through_env_only():
    """`${{ }}` in a script is pasted into it before the shell runs: an input could inject code."""
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "version", "sarif-file", "args", "python"} <= set(ACTION["inputs"])
    assert ACTION["inputs"]["paths"]["default"] == "."
    assert ACTION["inputs"]["version"]["default"] == ""
    assert ACTION["inputs"]["sarif-file"]["default"] == "gpu2npu.sarif"
    assert ACTION["inputs"]["python"]["default"] == "python3"
    assert "upload-sarif@v3" in ACTION["description"] and "always()" in ACTION["description"]


def test_the_action_writes_sarif_then_fails_on_findings(tmp_path):
    workspace = write(tmp_path / "workspace", {"train.py": CUDA, "README.md": "# x\n"})
    statuses, outputs, installed, logs = run_action(tmp_path, workspace)
    assert installed == ["install", str(ROOT)]  # its own checkout, no index
    assert statuses == [0, 0, 1], [log.stderr for log in logs]
    assert outputs == {"exit-code": "1", "sarif-file": str(workspace / "gpu2npu.sarif")}
    assert sarif_results(outputs["sarif-file"]) == [("train.py", 2, "NPU102")]
    assert "train.py:2: NPU102 CUDA-only: change .cuda() to .npu()" in logs[1].stdout  # the findings in the log
    assert "1 finding in 1 file" in logs[1].stderr


def test_the_action_passes_a_clean_project(tmp_path):
    workspace = write(tmp_path / "workspace", {"train.py": CLEAN})
    statuses, outputs, installed, logs = run_action(tmp_path, workspace)
    assert installed == ["install", str(ROOT)]
    assert statuses == [0, 0, 0], [log.stderr for log in logs]
    assert outputs["exit-code"] == "0"
    assert sarif_results(outputs["sarif-file"]) == []


def test_the_action_gives_check_its_version_and_args(tmp_path):
    workspace = write(tmp_path / "workspace", {"train.py": CUDA})
    statuses, outputs, _, logs = run_action(tmp_path, workspace, version="2.1.0", args="--ignore NPU102")
    assert statuses == [0, 0, 0]
    assert "1 finding of ignored codes" in logs[1].stderr
    assert "from the newest release" not in logs[1].stderr  # (said where no -v is given)
    assert sarif_results(outputs["sarif-file"]) == []
    statuses, outputs, _, logs = run_action(tmp_path, workspace, version="9.9.9")  # usage errors fail the job too
    assert statuses == [0, 0, 2]
    assert outputs["exit-code"] == "2"
    assert "no API data for PyTorch 9.9.9" in logs[1].stderr
    statuses, outputs, _, logs = run_action(tmp_path, workspace, args="--ignore 'NPU1 NPU2'")
    assert statuses == [0, 0, 2]
    assert "--ignore: NPU1 NPU2 is no code" in logs[1].stderr  # (one word: split as a shell would)
    statuses, _, _, logs = run_action(tmp_path, workspace)
    assert statuses == [0, 0, 1]
    assert "from the newest release" in logs[1].stderr


def test_the_action_splits_paths_as_a_shell_would_in_its_working_directory(tmp_path):
    workspace = write(tmp_path / "workspace", {"project/src dir/train.py": CUDA, "project/other.py": CUDA,
                                               "gpu2npu/fixture.py": CUDA})
    statuses, outputs, _, _ = run_action(tmp_path, workspace, paths='"src dir"', **{"working-directory": "project",
                                                                                    "sarif-file": "out/g.sarif"})
    assert statuses == [0, 0, 1]
    assert outputs["sarif-file"] == str(workspace / "project" / "out" / "g.sarif")
    assert sarif_results(outputs["sarif-file"]) == [("src dir/train.py", 2, "NPU102")]


# --- the README's examples ----------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_block(first_line: str) -> dict:
    """The README's ```yaml block whose first line is `first_line`, parsed."""
    blocks = [block for block in re.findall(r"^```yaml\n(.*?)^```$", README, re.M | re.S)
              if block.splitlines()[0] == first_line]
    assert len(blocks) == 1, first_line
    return yaml.safe_load(blocks[0])


def test_the_readme_states_the_one_substitution():
    prose = " ".join(README.split())
    assert "gpu2npu is on no package index" in prose
    assert "replace `OWNER/gpu2npu` with the repository you cloned gpu2npu from" in prose
    assert "pip install gpu2npu" not in README  # (an index that does not have it)


def test_the_readme_pre_commit_example_names_the_hook_and_its_args_parse(tmp_path):
    config = readme_block("# .pre-commit-config.yaml")
    (repo,) = config["repos"]
    assert repo["repo"] == "https://github.com/OWNER/gpu2npu" and repo["rev"] == "REV"
    assert [hook["id"] for hook in repo["hooks"]] == [HOOK["id"]]
    args = [str(arg) for arg in repo["hooks"][0]["args"]]
    assert args == ["-v", "2.1.0"]
    write(tmp_path, {"train.py": CLEAN, "requirements.txt": "numpy\n"})
    _, run = hook_run(tmp_path, args)
    assert run.returncode == 0, run.stderr
    assert "from the newest release" not in run.stderr  # (-v given: no note on the choice)
    (tmp_path / "requirements.txt").write_text("flash-attn\n", encoding="utf-8")
    _, run = hook_run(tmp_path, args)
    assert run.returncode == 1 and "requirements.txt:1: NPU853" in run.stdout


def gitlab_job(project: Path):
    (job,) = readme_block("# .gitlab-ci.yml").values()
    install, *script = job["script"]
    assert install == 'pip install "git+${GPU2NPU_REPO}"'
    assert job["artifacts"] == {"when": "always", "paths": ["gpu2npu.sarif"]}
    # GitLab runs a job's lines as one bash script that stops at the first failing line
    env = dict(os.environ, PATH=str(Path(GPU2NPU).parent) + os.pathsep + os.environ["PATH"])
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(script)], cwd=project,
                          env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_readme_gitlab_job_runs_as_written(tmp_path):
    write(tmp_path, {"train.py": CLEAN, "requirements.txt": "numpy\n"})
    run = gitlab_job(tmp_path)
    assert run.returncode == 0, run.stderr
    assert sarif_results(str(tmp_path / "gpu2npu.sarif")) == []
    (tmp_path / "train.py").write_text(CUDA, encoding="utf-8")
    run = gitlab_job(tmp_path)
    assert run.returncode == 1
    assert "train.py:2: NPU102" in run.stdout  # the log
    assert sarif_results(str(tmp_path / "gpu2npu.sarif")) == [("train.py", 2, "NPU102")]  # the artifact


def test_the_readme_github_workflow_uses_the_action_as_it_is(tmp_path):
    (job,) = readme_block("# .github/workflows/gpu2npu.yml")["jobs"].values()
    steps = job["steps"]
    project, gpu2npu_checkout = [step["with"] for step in steps if step.get("uses") == "actions/checkout@v4"]
    assert "repository" not in project
    assert gpu2npu_checkout == {"repository": "OWNER/gpu2npu", "ref": "REV", "path": "gpu2npu"}
    (action,) = [step for step in steps if step.get("uses") == "./" + gpu2npu_checkout["path"]]
    given = {name: str(value) for name, value in action.get("with", {}).items()}
    assert set(given) <= set(ACTION["inputs"])
    assert given["working-directory"] == project["path"]
    (upload,) = [step for step in steps if step.get("uses") == "github/codeql-action/upload-sarif@v3"]
    assert steps.index(upload) > steps.index(action) and upload["if"] == "always()"
    assert job["permissions"]["security-events"] == "write"
    # the action run as the workflow gives it, in a workspace laid out as the two checkouts leave it:
    # the SARIF is where upload-sarif looks, and gpu2npu's own checkout is not checked
    workspace = write(tmp_path / "workspace", {"project/train.py": CUDA, "gpu2npu/fixture.py": CUDA,
                                               "gpu2npu/requirements.txt": "flash-attn\n"})
    statuses, outputs, installed, _ = run_action(tmp_path, workspace, **given)
    assert statuses == [0, 0, 1]
    assert outputs["sarif-file"] == str(workspace / upload["with"]["sarif_file"])
    assert upload["with"]["checkout_path"] == project["path"]
    assert sarif_results(outputs["sarif-file"]) == [("train.py", 2, "NPU102")]
