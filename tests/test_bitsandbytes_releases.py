"""bitsandbytes runs on an NPU from 0.47 on (plain PyTorch kernels for its layers and functions;
it needs torch 2.2, 0.48 on torch 2.3), through transformers from 4.48 on (8-bit: 5.0): where the
project's pins allow only such releases and the chosen torch installs one, its uses are notes, not
CUDA-only rows; its 8-bit and paged optimizers stay CUDA's; where the pins allow older releases
(or there is none), the rows stay and say what to pin."""
import json

import pytest

from gpu2npu.knowledge.bitsandbytes_devices import loading_note, package_note, requirement_note, runs_on_npu, served

from helpers import console_script


@pytest.mark.parametrize("spec, expected", [
    ("==0.47.0", True), ("==0.49.1", True), (">=0.47", True), (">=0.48,<0.50", True), ("~=0.47.0", True),
    # some release it allows has CUDA kernels only (0.46 lists the NPU but has no 4-bit kernel for it)
    (">=0.45", False), ("==0.46.1", False), ("<0.47", False), (">=0.39.0", False), ("==0.45.5", False),
    # no pin decides nothing
    (None, False), ("", False),
])
def test_the_releases_a_pin_allows(spec, expected):
    assert runs_on_npu(spec or None, "2.6.0") is expected


@pytest.mark.parametrize("spec, torch, expected", [
    ("==0.47.0", "2.2.0", True), ("==0.47.0", "2.1.0", False), ("==0.48.0", "2.2.0", False),
    ("==0.48.0", "2.3.1", True), (">=0.47", "2.2.0", True), (">=0.48", "2.1.0", False),
])
def test_a_release_the_chosen_torch_cannot_install_beside_runs_nothing(spec, torch, expected):
    # (bitsandbytes 0.47 asks for torch>=2.2, 0.48 and later for torch>=2.3: with the release's
    # torch pinned, pip installs none of them)
    assert runs_on_npu(spec, torch) is expected


@pytest.mark.parametrize("name, expected", [
    ("bitsandbytes", True), ("bitsandbytes.nn.Linear4bit", True), ("bitsandbytes.functional.dequantize_4bit", True),
    ("bitsandbytes.matmul_4bit", True), ("bitsandbytes.nn", True),
    # its 8-bit and paged optimizers have CUDA and XPU kernels only; its Triton kernels are CUDA's
    ("bitsandbytes.optim.PagedAdamW8bit", False), ("bitsandbytes.optim.AdamW8bit", False),
    ("bitsandbytes.triton.quantize_rowwise", False), ("bitsandbytes.nnx", False),
])
def test_the_parts_its_pytorch_kernels_serve(name, expected):
    assert served(name) is expected
    assert (package_note(name, "==0.49.1", "2.6.0") is not None) is expected
    assert package_note(name, ">=0.45", "2.6.0") is None


@pytest.mark.parametrize("transformers, four_bit, eight_bit", [
    ("==4.48.0", True, False), (">=4.48", True, False), ("==4.57.0", True, False), ("==5.4.0", True, True),
    (">=5.0", True, True),
    # 4.44 and earlier raise "No GPU found" without CUDA; 4.45 to 4.47 load a model given no
    # device_map onto the CPU (4.48 onto the NPU, 8-bit from 5.0); no pin decides nothing
    ("==4.44.2", False, False), ("==4.46.0", False, False), (">=4.40", False, False), (None, False, False),
])
def test_transformers_loading_needs_both_pins(transformers, four_bit, eight_bit):
    assert (loading_note("==0.47.0", transformers, "2.6.0") is not None) is four_bit
    assert (loading_note("==0.47.0", transformers, "2.6.0", eight_bit=True) is not None) is eight_bit
    assert loading_note(">=0.45", transformers, "2.6.0") is None


def test_only_bitsandbytes_requirements_get_the_note():
    assert requirement_note("bitsandbytes", "==0.48.0", "2.6.0") is not None
    assert requirement_note("bitsandbytes", ">=0.44", "2.6.0") is None
    assert requirement_note("apex", "==0.47.0", "2.6.0") is None


SOURCE = """import torch
import bitsandbytes as bnb
from bitsandbytes.functional import dequantize_4bit
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained("m", quantization_config=config)
other = AutoModelForCausalLM.from_pretrained("m", load_in_4bit=True)
layer = bnb.nn.Linear4bit(16, 16)
weight = dequantize_4bit(layer.weight.data, layer.weight.quant_state)
optimizer = bnb.optim.PagedAdamW8bit(model.parameters(), lr=1e-4)
"""


def _project(tmp_path, requirements: str, source: str = SOURCE):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(source)
    (project / "requirements.txt").write_text(requirements)
    return project


def _check(project, version="2.6.0"):
    result = console_script("check", str(project), "-v", version, "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    return result.returncode, {(f["path"].rsplit("/", 1)[-1], f["start_line"], f["rule"]) for f in findings}


class TestThroughTheConsoleScript:
    def test_pins_that_run_it_leave_only_the_optimizer(self, tmp_path):
        project = _project(tmp_path, "torch==2.6.0\ntransformers==4.48.0\nbitsandbytes==0.47.0\n")
        status, found = _check(project)
        assert status == 1
        assert found == {("train.py", 11, "NPU916")}, found  # the paged 8-bit optimizer alone
        out = tmp_path / "out"
        result = console_script("-i", str(project), "-o", str(out), "-v", "2.6.0")
        assert result.returncode == 0, result.stderr
        migrated = out / "project_msft"
        assert "bitsandbytes==0.47.0" in (migrated / "requirements.txt").read_text()  # kept: it runs there
        unsupported = (migrated / "unsupported_api.csv").read_text()
        assert "PagedAdamW8bit" in unsupported and "BitsAndBytesConfig" not in unsupported
        assert "dequantize_4bit" not in unsupported and "load_in_4bit" not in unsupported
        log = (migrated / "msFmkTranspltlog.txt").read_text()
        assert "BitsAndBytesConfig: bitsandbytes==0.47.0 and transformers==4.48.0, which the project pins" in log
        assert "[INFO] requirements.txt line: 3" in log and "[WARNING] requirements.txt line: 3" not in log

    @pytest.mark.parametrize("requirements", [
        "torch==2.6.0\ntransformers==4.46.0\nbitsandbytes>=0.45\n",  # some release it allows has no NPU kernels
        "torch==2.6.0\ntransformers==4.44.2\nbitsandbytes==0.47.0\n",  # its transformers needs CUDA to quantize
        "torch==2.6.0\ntransformers==4.46.0\nbitsandbytes==0.47.0\n",  # and this one loads onto the CPU
        "torch==2.6.0\n",  # nothing pinned
        "torch==2.1.0\ntransformers==4.48.0\nbitsandbytes==0.47.0\n",  # torch 2.1 installs no such bitsandbytes
    ])
    def test_other_pins_keep_the_rows_and_say_what_to_pin(self, tmp_path, requirements):
        project = _project(tmp_path, requirements)
        status, found = _check(project, version="2.1.0" if "torch==2.1.0" in requirements else "2.6.0")
        assert status == 1
        codes = {(line, code) for _, line, code in found}
        assert {(6, "NPU912"), (8, "NPU912"), (11, "NPU916")} <= codes, found
        result = console_script("check", str(project), "-v", "2.1.0")
        assert "pin bitsandbytes>=0.47" in result.stdout
        if "bitsandbytes>=0.45" in requirements or "transformers" not in requirements or "2.1.0" in requirements:
            assert {(2, "NPU916"), (9, "NPU916")} <= codes  # the layers have CUDA kernels only
        else:
            assert (2, "NPU916") not in codes  # the package itself runs; its transformers does not


def test_eight_bit_loading_needs_a_newer_transformers(tmp_path):
    """transformers 4.48 to 4.57 load a 4-bit model onto the NPU, an 8-bit one onto the CPU."""
    project = _project(tmp_path, "transformers==4.57.0\nbitsandbytes==0.49.1\n",
                       "from transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
                       "four = AutoModelForCausalLM.from_pretrained('m', load_in_4bit=True)\n"
                       "eight = AutoModelForCausalLM.from_pretrained('m', load_in_8bit=True)\n"
                       "config = BitsAndBytesConfig(load_in_8bit=True)\n"
                       "settings = BitsAndBytesConfig(**choices)\n"
                       "plain = BitsAndBytesConfig(load_in_4bit=True, load_in_8bit=False)\n")
    _, found = _check(project)
    assert {line for _, line, code in found if code == "NPU912"} == {3, 4, 5}, found


class TestLaunchScriptsAndConfigs:
    """`--load_in_4bit True` or a YAML `load_in_4bit: true` quantizes as the Python code's keyword
    does: the same row (NPU912), or the same note where the pins run it (NPU915)."""

    @staticmethod
    def _findings(text: str, path: str, **pins):
        from gpu2npu.knowledge import apidata
        from gpu2npu.migration.launch_scripts import migrate_script
        from gpu2npu.records.options import Options

        result = migrate_script(text.encode(), path, options=Options(api=apidata.load("2.6.0"), **pins))
        assert result.output is None or result.output == text.encode()  # (nothing is edited)
        return {(finding.api, finding.rule) for finding in result.findings}

    @pytest.mark.parametrize("text, path, api", [
        ("model_name_or_path: org/model\nload_in_4bit: true\n", "recipes/config_qlora.yaml", "load_in_4bit"),
        ("model:\n  load_in_8bit: True\n", "config.yaml", "load_in_8bit"),
        ("torchrun train.py --load_in_4bit True --lora_r 16\n", "train.sh", "load_in_4bit"),
        ("torchrun train.py --load-in-8bit --lora_r 16\n", "train.sh", "load_in_8bit"),
        ("python train.py --load_in_4bit=true\n", "train.sh", "load_in_4bit"),
    ])
    def test_a_request_for_quantized_weights_is_reported(self, text, path, api):
        assert self._findings(text, path) == {(api, "NPU912")}
        # where the pins run it on the NPU: a note, as for the Python code
        running = self._findings(text, path, bitsandbytes="==0.49.1", transformers="==5.4.0")
        assert running == {(api, "NPU915")}

    @pytest.mark.parametrize("text, path", [
        ("load_in_4bit: false\n", "config.yaml"),
        ("python train.py --load_in_4bit False\n", "train.sh"),
        ("# load_in_4bit: true saves memory\n", "config.yaml"),
        ("python train.py --no_load_in_4bit_warning\n", "train.sh"),
    ])
    def test_no_request_says_nothing(self, text, path):
        assert self._findings(text, path) == set()
