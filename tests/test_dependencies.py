"""Dependency files: requirements, environment.yml, pyproject.toml, setup.py, setup.cfg and
Dockerfiles, migrated after the code (rules NPU851-NPU857)."""
import json
import shutil
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.dependencies import Context, dependency_format, load_table, migrate_dependencies, satisfies
from gpu2npu.dependencies.rules import DEPENDENCY_RULES
from helpers import FIXTURES, console_script, migrate, read_csv

API = apidata.load("2.1.0")
PROJECT = FIXTURES / "llm_env_project"


def run(name, text, importers=lambda modules: [], version="2.1.0"):
    context = Context(apidata.load(version), load_table(), importers)
    return migrate_dependencies(dependency_format(name), text, name, context)


EXAMPLES = [(rule, number, example) for rule in DEPENDENCY_RULES for number, example in enumerate(rule.examples, 1)]


@pytest.mark.parametrize("rule, number, example", EXAMPLES, ids=[f"{r.code}-{n}" for r, n, _ in EXAMPLES])
def test_rule_examples(rule, number, example):
    outcome = run(example.path, example.before)
    assert (outcome.output if outcome.output is not None else example.before) == example.after
    assert {c.rule for c in outcome.changes} <= {rule.code}
    if example.before != example.after:
        assert outcome.changes
    for name in example.reported:
        assert any(f.api == name and f.rule == rule.code for f in outcome.findings), name


@pytest.mark.parametrize("rule", DEPENDENCY_RULES, ids=lambda r: r.code)
def test_left_unchanged(rule):
    for text in rule.unchanged:
        assert run("requirements.txt", text).output is None


def test_requirement_lines_keep_markers_comments_and_options():
    outcome = run("requirements.txt",
                  'torch==2.0.1+cu118 ; python_version < "3.12"  # cluster\n'
                  "flash-attn==2.5.8 --no-build-isolation\n"
                  "numpy\n")
    assert outcome.output == ('torch==2.1.0 ; python_version < "3.12"  # cluster\n'
                              'torch_npu==2.1.0.post17 ; python_version < "3.12"\n'
                              "# flash-attn==2.5.8 --no-build-isolation  # removed by gpu2npu: CUDA-only\n"
                              "numpy\n")


def test_a_package_still_imported_is_kept_and_reported_with_its_importers():
    outcome = run("requirements.txt", "xformers==0.0.26\n", importers=lambda modules: ["model.py"])
    assert outcome.output is None
    [finding] = outcome.findings
    assert finding.report == Report.UNSUPPORTED and finding.rule == "NPU853"
    assert "model.py still imports xformers" in finding.tip


def test_hashes_of_a_changed_requirement_go_and_the_file_is_reported():
    text = ("torch==2.2.2 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via -r requirements.in\n"
            "einops==0.7.0 \\\n    --hash=sha256:cc\n")
    outcome = run("requirements.txt", text)
    assert outcome.output == ("torch==2.1.0\ntorch_npu==2.1.0.post17\nnumpy\n    # via -r requirements.in\n"
                              "einops==0.7.0 \\\n    --hash=sha256:cc\n")
    assert [f.api for f in outcome.findings] == ["--hash"]


def test_a_release_without_torchaudio_is_reported_not_guessed():
    outcome = run("requirements.txt", "torch\ntorchaudio\n", version="2.13.0")
    assert "torchaudio" not in (outcome.output or "").replace("torchaudio\n", "", 1)
    assert any(f.api == "torchaudio" and "no torchaudio release" in f.tip for f in outcome.findings)


def test_text_that_is_not_toml_is_reported_and_left():
    outcome = run("pyproject.toml", "[project\ndependencies = ['torch']\n")
    assert outcome.output is None and outcome.findings[0].api == "pyproject.toml"


def test_conda_file_without_pip_section_gets_one():
    outcome = run("environment.yml", "dependencies:\n  - python=3.10\n  - pytorch\n  - cudatoolkit=11.3\n")
    assert outcome.output == ("dependencies:\n  - python=3.10\n  # - pytorch  # removed by gpu2npu\n"
                              "  # - cudatoolkit=11.3  # removed by gpu2npu\n  - pip\n  - pip:\n"
                              "    - torch==2.1.0\n    - torch_npu==2.1.0.post17\n    - numpy\n")


def test_dockerfiles_are_reported_never_rewritten():
    text = "FROM pytorch/pytorch:2.2.2-cuda12.1-cudnn8-runtime\nRUN pip install xformers einops\n"
    outcome = run("Dockerfile", text)
    assert outcome.output is None and not outcome.changes
    assert [f.api for f in outcome.findings] == ["FROM pytorch/pytorch:2.2.2-cuda12.1-cudnn8-runtime",
                                                 "pip install xformers"]


@pytest.mark.parametrize("name", ["Dockerfile-cu121", "Dockerfile_cuda", "Dockerfile.gpu", "gpu.Dockerfile"])
def test_a_dockerfile_variant_is_read_as_a_dockerfile(name):
    text = "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install torch\n"
    assert [f.api for f in run(name, text).findings] == ["FROM nvidia/cuda:12.1.0-devel-ubuntu22.04"]


@pytest.mark.parametrize("text, image", [
    # the image named by an ARG's default (itself read from another), as FROM reads it
    ("ARG CUDA_VERSION=11.7.1\nARG from=nvidia/cuda:${CUDA_VERSION}-cudnn8-devel-ubuntu20.04\nFROM ${from} as base\n",
     "FROM nvidia/cuda:11.7.1-cudnn8-devel-ubuntu20.04"),
    ("ARG BASE=pytorch/pytorch:2.2.2-cuda12.1-cudnn8-runtime\nFROM $BASE\n",
     "FROM pytorch/pytorch:2.2.2-cuda12.1-cudnn8-runtime"),
])
def test_a_cuda_image_chosen_by_an_arg_default_is_reported(text, image):
    assert [f.api for f in run("Dockerfile", text).findings] == [image]


def test_a_stage_built_on_a_cuda_stage_has_no_row_of_its_own():
    text = ("ARG CUDA_VERSION=12\nFROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS cuda12\n"
            "FROM nvidia/cuda:13.0.3-devel-ubuntu22.04 AS cuda13\nFROM cuda${CUDA_VERSION}\n")
    assert [(f.start_line, f.api) for f in run("Dockerfile", text).findings] == [
        (2, "FROM nvidia/cuda:12.8.1-devel-ubuntu22.04"), (3, "FROM nvidia/cuda:13.0.3-devel-ubuntu22.04")]


@pytest.mark.parametrize("text", [
    "ARG from=ubuntu:22.04\nFROM ${from}\n",
    "FROM ${BASE_IMAGE}\n",  # no default: not known
])
def test_an_image_of_no_cuda_or_unknown_is_not_reported(text):
    assert run("Dockerfile", text).findings == []


@pytest.mark.parametrize("version, spec, expected", [
    ("2.1.0", ">=2.1,<2.3", True), ("2.1.0", "==2.2.2+cu121", False), ("2.1.0", "~=2.1", True),
    ("2.1.0", "==2.1.*", True), ("2.1.0", ">2.1.0", False), ("2.1.0", "!=2.1.0", False),
    # PEP 440 reads a leading "v" as nothing
    ("4.51.0", ">=v4.51.0,<4.52", True), ("4.50.0", ">=v4.51.0,<4.52", False), ("2.1.0", "==v2.1.0", True),
])
def test_torch_specs_are_compared_with_the_chosen_release(version, spec, expected):
    assert satisfies(version, spec) is expected


def test_the_table_pairs_torchvision_by_its_release_scheme():
    # torchvision 0.(minor + 15).patch is built for torch 2.minor.patch (their METADATA says so)
    for torch_version, pair in load_table().torch_pairs.items():
        major, minor, patch = (int(p) for p in torch_version.split("."))
        if major == 2:
            assert pair["torchvision"] == f"0.{minor + 15}.{patch}", torch_version


@pytest.fixture(scope="module")
def migrated_project(tmp_path_factory):
    return migrate(PROJECT, tmp_path_factory.mktemp("deps"), "2.1.0")


def _requirement_lines(path):
    """The requirement lines of a requirements file, continuation lines joined, as pip reads them."""
    text = path.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        code = line.split(" #")[0].strip()
        if code and not code.startswith(("#", "-")):
            yield code.split(" --")[0]


def test_migrated_requirements_parse_and_pin_torch_npu(migrated_project):
    names = {}
    for relative in ("requirements.txt", "common.txt", "constraints.txt", "requirements-lock.txt"):
        for line in _requirement_lines(migrated_project / relative):
            requirement = Requirement(line)  # raises on a line pip could not read
            names[requirement.name.lower().replace("_", "-")] = requirement
    assert str(names["torch-npu"].specifier) == "==2.1.0.post17"
    assert str(names["torch"].specifier) == "==2.1.0"
    assert str(names["torchvision"].specifier) == "==0.16.0"
    for gone in ("flash-attn", "xformers", "nvidia-ml-py", "nvidia-nccl-cu12", "triton", "faiss-gpu"):
        assert gone not in names, gone
    assert "faiss-cpu" in names
    # cupy is still imported by tinylm/kernels.py: kept, and reported with that file
    assert "cupy-cuda12x" in names
    rows = read_csv(migrated_project / "unsupported_api.csv")
    assert any(r["File"] == "requirements.txt" and r["OP"] == "cupy-cuda12x" and "tinylm/kernels.py" in r["Tips"]
               for r in rows)


def test_migrated_pyproject_and_setup_files_say_what_was_meant(migrated_project):
    import tomlkit

    project = tomlkit.parse((migrated_project / "pyproject.toml").read_text()).unwrap()["project"]
    assert project["dependencies"] == ["torch==2.1.0", "torch_npu==2.1.0.post17", "numpy", "sentencepiece"]
    assert project["optional-dependencies"] == {"search": ["faiss-cpu==1.7.2", "tqdm"], "quant": []}
    poetry = tomlkit.parse((migrated_project / "tools" / "pyproject.toml").read_text()).unwrap()["tool"]["poetry"]
    assert poetry["dependencies"]["torch"] == {"version": "2.1.0", "source": "torch-cu121"}
    assert poetry["dependencies"]["torch-npu"] == "2.1.0.post17" and "pynvml" not in poetry["dependencies"]
    assert poetry["source"][0]["url"] == "https://download.pytorch.org/whl/cpu"
    setup = (migrated_project / "setup.py").read_text()
    namespace = {}
    exec(compile(setup.replace("setup(", "dict(", 1).replace("find_packages()", "[]"), "setup.py", "exec"), namespace)
    assert namespace["INSTALL_REQUIRES"] == ["torch==2.1.0", "torch_npu==2.1.0.post17", "numpy", "einops"]


def test_the_console_warns_of_a_torch_pin_other_than_the_chosen_release(tmp_path):
    process = subprocess.run([sys.executable, "-m", "gpu2npu", "-i", str(PROJECT), "-o", str(tmp_path), "-v", "2.1.0",
                              "--no-cache"], capture_output=True, text=True)
    assert process.returncode == 0, process.stderr
    assert ("requirements.txt:6 asks for torch ==2.2.2+cu121, but -v 2.1.0 migrates for torch 2.1.0" in process.stderr)
    assert "-v 2.2.0 is torch_npu's release for torch 2.2" in process.stderr
    assert "10 dependency files" in process.stdout
    log = (tmp_path / "llm_env_project_msft" / "msFmkTranspltlog.txt").read_text()
    assert "asks for torch ==2.2.2+cu121" in log


def test_check_fails_on_a_cuda_only_dependency(tmp_path):
    (tmp_path / "requirements.txt").write_text("einops\nflash-attn==2.5.8\n")
    process = subprocess.run([sys.executable, "-m", "gpu2npu", "check", str(tmp_path), "-v", "2.1.0", "--no-cache",
                              "--format", "json"], capture_output=True, text=True)
    assert process.returncode == 1, process.stderr
    findings = json.loads(process.stdout)
    found = findings["findings"] if isinstance(findings, dict) else findings
    assert [(f["path"].split("/")[-1], f["start_line"], f["rule"]) for f in found] == [("requirements.txt", 2, "NPU853")]


def test_check_of_the_migrated_project_finds_only_what_is_still_there(migrated_project, tmp_path):
    process = subprocess.run([sys.executable, "-m", "gpu2npu", "check", str(migrated_project), "-v", "2.1.0",
                              "--no-cache"], capture_output=True, text=True)
    reported = [line for line in process.stdout.splitlines() if ": NPU85" in line]
    # what no rule can take out: cupy (still imported), the Dockerfile, a CUDA-only package on
    # setup.cfg's option line is not in this fixture
    assert all("cupy-cuda12x" in line or "Dockerfile" in line for line in reported), reported
    assert any("cupy-cuda12x" in line for line in reported)


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
def test_diff_shows_the_dependency_files_as_the_migration_writes_them(migrated_project, tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    process = subprocess.run([sys.executable, "-m", "gpu2npu", "-i", str(project), "-v", "2.1.0", "--diff",
                              "--no-cache"], capture_output=True, text=True)
    assert process.returncode == 0, process.stderr
    assert process.stdout.count("+++ b/setup.py") == 1
    (tmp_path / "changes.diff").write_text(process.stdout)
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(tmp_path / "changes.diff")], cwd=project,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    for path in project.rglob("*"):
        if path.is_file():
            relative = path.relative_to(project)
            assert path.read_bytes() == (migrated_project / relative).read_bytes(), relative


def test_unusual_requirement_lines():
    text = ("-e .\n./vendor/local_pkg\n--trusted-host pypi.example.com\n"
            'torch;python_version<"3.12"\n'
            "Torch_Vision >= 0.15\n"  # another name than torchvision (PEP 503): left
            "local-pkg @ file:///opt/pkgs/local_pkg-1.0.whl\n"
            "-e git+https://github.com/Dao-AILab/flash-attention.git@v2.5.8#egg=flash-attn\n"
            "https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp311-cp311-linux_x86_64.whl\n"
            "requests   # http client\n")
    outcome = run("requirements.txt", text)
    assert outcome.output == (
        "-e .\n./vendor/local_pkg\n--trusted-host pypi.example.com\n"
        'torch==2.1.0;python_version<"3.12"\ntorch_npu==2.1.0.post17;python_version<"3.12"\n'
        'numpy;python_version<"3.12"\n'
        "Torch_Vision >= 0.15\n"
        "local-pkg @ file:///opt/pkgs/local_pkg-1.0.whl\n"
        "# -e git+https://github.com/Dao-AILab/flash-attention.git@v2.5.8#egg=flash-attn  # removed by gpu2npu: CUDA-only\n"
        "torch==2.1.0\n"
        "requests   # http client\n")
    assert run("requirements.txt", outcome.output).output is None


def test_every_cuda_only_package_of_the_table_is_one_in_the_code_too():
    # a project that lists mamba-ssm hears about it in requirements.txt; its `import mamba_ssm`
    # must be reported in the code as well (unsupported_api.csv, check)
    from gpu2npu.knowledge.tips import CUDA_ONLY_PACKAGES, tip_for

    runs_on_ascend = {"vllm"}  # through the vllm-ascend plugin
    namespaces = {"nvidia"}  # CUDA runtime libraries; their Python parts are listed one by one (nvidia.dali)
    for package in load_table().packages:
        if package.action == "replace":  # (a twin without CUDA provides the same module)
            continue
        for module in package.imports:
            if module in runs_on_ascend | namespaces:
                continue
            assert module in CUDA_ONLY_PACKAGES, (module, package.names)
            assert tip_for(module) != tip_for("an.unknown.name"), module


def test_a_torch_pinned_per_platform_gets_torch_npu_on_each_linux_line_and_none_elsewhere():
    outcome = run("requirements.txt",
                  'torch==2.4.0+cu121 ; sys_platform == "linux" and platform_machine == "x86_64"\n'
                  'torch==2.4.0 ; sys_platform == "linux" and platform_machine == "aarch64"\n'
                  'torch==2.4.0 ; sys_platform == "darwin"\n'
                  "numpy\n")
    assert outcome.output == ('torch==2.1.0 ; sys_platform == "linux" and platform_machine == "x86_64"\n'
                              'torch_npu==2.1.0.post17 ; sys_platform == "linux" and platform_machine == "x86_64"\n'
                              'torch==2.1.0 ; sys_platform == "linux" and platform_machine == "aarch64"\n'
                              'torch_npu==2.1.0.post17 ; sys_platform == "linux" and platform_machine == "aarch64"\n'
                              'torch==2.4.0 ; sys_platform == "darwin"\n'
                              "numpy\n")


def test_a_torch_line_for_macos_or_windows_alone_is_left_as_written():
    for text in ('torch==2.2.2 ; platform_system == "Darwin"\n', "torch>=2.0 ; sys_platform == 'win32'\n",
                 'torch ; os_name == "nt"\n'):
        assert run("requirements.txt", text).output is None, text


MARKERS = [
    'sys_platform == "linux"', 'sys_platform == "darwin"', "sys_platform != 'darwin'",
    'platform_system == "Linux" and platform_machine == "aarch64"', 'platform_machine == "arm64"',
    "platform_system == 'Darwin' or platform_system == 'Windows'", 'sys_platform in "linux darwin"',
    "os_name == 'nt'", "platform_machine != 'x86_64' and sys_platform == 'linux'",
    "(sys_platform == 'darwin' and platform_machine == 'arm64') or sys_platform == 'win32'",
]


@pytest.mark.parametrize("marker", MARKERS)
def test_the_platform_of_a_marker_is_read_as_pip_reads_it(marker):
    from packaging.markers import Marker, default_environment

    from gpu2npu.dependencies.decide import ASCEND_HOSTS, ascend_hosts_of

    expected = tuple(index for index, host in enumerate(ASCEND_HOSTS)
                     if Marker(marker).evaluate({**default_environment(), **host}))
    assert ascend_hosts_of(f" ; {marker}") == expected


@pytest.mark.parametrize("array, expected", [
    ('["flash-attn>=2.5; platform_system == \'Linux\'", "bitsandbytes"]', "[]"),  # every one of them
    ('["accelerate", "flash-attn", "bitsandbytes"]', '["accelerate", ]'),  # the last two: one comma between
    ('["flash-attn", "accelerate", "bitsandbytes"]', '["accelerate"]'),
])
def test_several_cuda_only_requirements_removed_from_one_inline_array_leave_valid_toml(array, expected):
    import tomlkit

    text = f'[project]\nname = "p"\nversion = "0.1"\ndependencies = ["torch==2.1.0"]\n\n[project.optional-dependencies]\ngpu = {array}\n'
    outcome = run("pyproject.toml", text)
    assert not [f for f in outcome.findings if "valid TOML" in f.tip], outcome.findings
    assert outcome.output.endswith(f"gpu = {expected}\n")
    tomlkit.parse(outcome.output)


def test_setup_py_requirements_added_together_are_each_migrated():
    text = ('from setuptools import setup\n\nREQUIRED = ["torch>=2.0", "flash-attn>=2.3"]\n\n'
            'setup(name="p", install_requires=REQUIRED + ["einops"] + ["bitsandbytes"])\n')
    outcome = run("setup.py", text)
    assert 'REQUIRED = ["torch==2.1.0", "torch_npu==2.1.0.post17", "numpy"]' in outcome.output
    assert 'install_requires=REQUIRED + ["einops"] + []' in outcome.output


class TestAPackageThatNeedsAnAscendPlugin:
    """vLLM runs on Ascend only through the vllm-ascend plugin.  Where a dependency file lists vllm
    its row says so; where the code imports vllm and none lists it, the run warns (console and
    log), not where the project is vLLM or its plugin, nor where the code imports the plugin."""

    @staticmethod
    def _migrate(project, out):
        process = subprocess.run([sys.executable, "-m", "gpu2npu", "-i", str(project), "-o", str(out), "-v", "2.1.0",
                                  "--no-cache"], capture_output=True, text=True)
        assert process.returncode == 0, process.stderr
        return process.stderr

    def test_code_importing_it_without_a_listing_is_warned_of(self, tmp_path):
        project = tmp_path / "grpo"
        project.mkdir()
        (project / "generate.py").write_text("from vllm import LLM, SamplingParams\nllm = LLM(model='m')\n")
        (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
        warned = self._migrate(project, tmp_path / "out")
        assert "1 file import vllm (generate.py), which no dependency file lists" in warned
        assert "vllm-ascend" in warned
        log = (tmp_path / "out" / "grpo_msft" / "msFmkTranspltlog.txt").read_text()
        assert "which no dependency file lists" in log

    @pytest.mark.parametrize("files", [
        # listed: its row says so instead
        {"requirements.txt": "vllm==0.9.1\n", "generate.py": "import vllm\n"},
        # the project is vLLM
        {"vllm/__init__.py": "", "vllm/engine.py": "from vllm.config import Config\n"},
        # the code uses the plugin, in the same file or another
        {"generate.py": "import vllm\nimport vllm_ascend\n"},
        {"generate.py": "from vllm import LLM\n", "main.py": "import vllm_ascend  # noqa: F401\n"},
        # a mention that imports nothing
        {"notes.py": "# served with vllm in production\nDOC = 'from vllm import LLM'\n"},
        # nothing imports it
        {"train.py": "import torch\nx = torch.ones(2).cuda()\n"},
    ])
    def test_no_warning_where_it_is_listed_or_not_needed(self, tmp_path, files):
        project = tmp_path / "project"
        for name, text in files.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        assert "which no dependency file lists" not in self._migrate(project, tmp_path / "out")


class TestAProjectThatPinsTorchNpuItself:
    """A project that supports Ascend keeps its own torch_npu pin (requirements/npu.txt).  A
    torch_npu line the migration adds to another of its files asks for that release where it is
    built for the run's torch: two different pins of one package cannot be installed together.
    A pin for another torch is not followed (the run's torch pin is what the line goes with)."""

    @staticmethod
    def _added(tmp_path, npu_txt, version="2.10.0"):
        project = tmp_path / "project"
        (project / "requirements").mkdir(parents=True)
        (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\ndependencies = [\n'
                                                '    "torch>=2.4.0",\n    "numpy",\n]\n')
        if npu_txt is not None:
            (project / "requirements" / "npu.txt").write_text(npu_txt)
        (project / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
        process = console_script("-i", str(project), "-o", str(tmp_path / "out"), "-v", version, "--no-cache")
        assert process.returncode == 0, process.stderr
        out = tmp_path / "out" / "project_msft"
        pyproject = (out / "pyproject.toml").read_text()
        rows = [row for row in read_csv(out / "change_list.csv") if row["File"] == "pyproject.toml"]
        return [line.strip().strip('",') for line in pyproject.splitlines() if "torch_npu" in line], rows

    @pytest.mark.parametrize("pin", ["torch-npu==2.10.0.post2", "torch_npu == 2.10.0.post2", "TORCH-NPU==2.10.0.post2"])
    def test_the_line_added_asks_for_the_projects_release(self, tmp_path, pin):
        added, rows = self._added(tmp_path, f"torch==2.10.0\n{pin}\ntorchvision==0.25.0\n")
        assert added == ["torch_npu==2.10.0.post2"]
        assert any("requirements/npu.txt pins" in row["Message"] for row in rows), rows

    @pytest.mark.parametrize("npu_txt", [
        None,  # no pin of its own
        "torch==2.1.0\ntorch-npu==2.1.0.post17\n",  # a pin for another torch
        "torch-npu>=2.10.0\n",  # a range, no release
    ])
    def test_otherwise_the_line_asks_for_the_runs_release(self, tmp_path, npu_txt):
        added, rows = self._added(tmp_path, npu_txt)
        assert added == [f"torch_npu=={apidata.load('2.10.0').torch_npu_version}"]
        assert not any("pins, for the same torch" in row["Message"] for row in rows), rows

    def test_a_pin_of_its_own_for_another_torch_moves_with_torch(self, tmp_path):
        self._added(tmp_path, "torch==2.1.0\ntorch-npu==2.1.0.post17  # Atlas\n")
        npu_txt = (tmp_path / "out" / "project_msft" / "requirements" / "npu.txt").read_text()
        wanted = apidata.load("2.10.0").torch_npu_version
        assert "torch==2.10.0\n" in npu_txt and f"torch-npu=={wanted}  # Atlas\n" in npu_txt

    @pytest.mark.parametrize("line", ["torch-npu==2.10.0.post2", "torch-npu>=2.5", "torch-npu"])
    def test_a_pin_of_its_own_for_the_runs_torch_or_a_range_stays(self, line):
        outcome = run("requirements.txt", f"torch==2.10.0\n{line}\n", version="2.10.0")
        assert outcome.output is None or f"{line}\n" in outcome.output

    def test_what_a_file_with_torch_npu_already_gets_says_only_why(self, tmp_path):
        # requirements/npu.txt lists torch_npu: the line it gets is what torch_npu imports undeclared
        self._added(tmp_path, "torch==2.10.0\ntorch-npu==2.10.0.post2\n")
        rows = [row for row in read_csv(tmp_path / "out" / "project_msft" / "change_list.csv")
                if row["File"] == "requirements/npu.txt" and row["Operation Type"] == "INSERT"]
        assert rows and all(row["Message"].startswith("add packaging: torch_npu ") and "imports packaging without "
                            "declaring it" in row["Message"] and "NPU build" not in row["Message"] for row in rows), rows


class TestWhatTorchBuildTorchNpuRunsOn:
    """torch_npu runs on torch's CPU build on x86 (from https://download.pytorch.org/whl/cpu; PyPI's
    x86 wheels are CUDA builds) and on PyPI's on aarch64.  A torch line re-pinned says so; a torch
    line that already asks for the release says so where torch_npu is added, unless it names the CPU
    build already or installs only on aarch64."""

    @staticmethod
    def _messages(text):
        return [change.message for change in run("requirements.txt", text).changes]

    @pytest.mark.parametrize("text", ["torch==2.1.0\n", "torch == 2.1.0 ; sys_platform == 'linux'\n"])
    def test_said_where_torch_npu_is_added_beside_the_projects_own_pin(self, text):
        messages = self._messages(text)
        assert [m for m in messages if m.startswith("add torch_npu") and "CPU build on x86" in m], messages

    @pytest.mark.parametrize("text", ["torch==2.1.0+cpu\n", "torch==2.1.0; platform_machine == 'aarch64'\n"])
    def test_not_where_the_line_names_the_cpu_build_or_installs_on_aarch64_only(self, text):
        assert not [m for m in self._messages(text) if "CPU build" in m]

    def test_said_once_where_torch_is_re_pinned(self):
        messages = self._messages("torch>=2.0\n")
        assert [m for m in messages if "CPU build on x86" in m] == [m for m in messages if m.startswith("torch >=2.0")]


class TestAProjectWhoseDependencyFilesNameNoTorch:
    """A requirements file that lists neither torch (torch_npu is added beside each torch line) nor
    torch_npu installs no torch_npu, and the migrated code's first `import torch_npu` fails: the run
    says so, with the two lines to add.  Not where a file lists either, nor where no file of
    dependencies exists, nor where no migrated file imports torch_npu."""

    @staticmethod
    def _warnings(tmp_path, requirements, code="import torch\nx = torch.ones(2).cuda()\n"):
        project = tmp_path / "project"
        project.mkdir()
        if requirements is not None:
            (project / "requirements.txt").write_text(requirements)
        (project / "train.py").write_text(code)
        done = console_script("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
        assert done.returncode == 0, done.stderr
        return [line for line in done.stderr.splitlines() if "import torch_npu" in line and "no dependency" in line]

    def test_the_run_says_what_to_add(self, tmp_path):
        [warning] = self._warnings(tmp_path, "transformers>=4.28.0\naccelerate\n")
        assert "1 migrated file import torch_npu (train.py)" in warning
        assert f"torch==2.1.0 and torch_npu=={API.torch_npu_version}" in warning and "CPU build on x86" in warning

    @pytest.mark.parametrize("requirements, code", [
        ("torch\ntransformers\n", "import torch\nx = torch.ones(2).cuda()\n"),  # torch_npu is added beside it
        ("torch-npu==2.1.0.post17\n", "import torch\nx = torch.ones(2).cuda()\n"),
        (None, "import torch\nx = torch.ones(2).cuda()\n"),
        ("numpy\n", "import numpy\nx = numpy.ones(2)\n"),
    ])
    def test_not_where_torch_or_torch_npu_is_listed_or_nothing_needs_it(self, tmp_path, requirements, code):
        assert self._warnings(tmp_path, requirements, code) == []

    @staticmethod
    def _autoload_warnings(tmp_path, requirements, code, version):
        project = tmp_path / "project"
        project.mkdir()
        (project / "requirements.txt").write_text(requirements)
        (project / "train.py").write_text(code)
        done = console_script("-i", str(project), "-o", str(tmp_path / "out"), "-v", version, "--no-cache")
        assert done.returncode == 0, done.stderr
        return [line for line in done.stderr.splitlines() if "loads torch_npu itself" in line]

    # Code that migrates to nothing (transformers chooses the device) imports only torch: from torch
    # 2.5 torch_npu loads itself where it is installed, and where it is not there is no NPU.
    TRAINER = "import torch\nfrom transformers import Trainer\nTrainer(model=torch.nn.Linear(2, 2)).train()\n"

    def test_where_torch_loads_torch_npu_itself_code_importing_torch_needs_it_listed(self, tmp_path):
        [warning] = self._autoload_warnings(tmp_path, "transformers>=4.50\n", self.TRAINER, "2.6.0")
        assert "imports torch (train.py)" in warning and "add torch_npu==2.6.0" in warning

    @pytest.mark.parametrize("requirements, code, version", [
        ("transformers>=4.50\n", TRAINER, "2.1.0"),  # (before torch 2.5 only an import of torch_npu needs it: above)
        ("transformers>=4.50\ntorch_npu==2.6.0\n", TRAINER, "2.6.0"),
        ("numpy\n", "import numpy\nx = numpy.ones(2)\n", "2.6.0"),
    ])
    def test_not_before_that_torch_nor_where_listed_or_torch_unused(self, tmp_path, requirements, code, version):
        assert self._autoload_warnings(tmp_path, requirements, code, version) == []
