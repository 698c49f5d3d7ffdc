"""device_map="auto" with an accelerate that counts no NPU (before 0.26) loads the model onto the
CPU on an Ascend machine: where the project pins only such releases, each such device_map is a
row (NPU935); where it pins a newer one, or none, nothing is said."""
import json

import pytest

from gpu2npu.knowledge.accelerate_devices import places_on_the_cpu

from helpers import console_script


@pytest.mark.parametrize("spec, expected", [
    ("==0.21.0", True), ("<0.26", True), (">=0.20,<0.24", True), ("~=0.25.0", True),
    ("==0.26.0", False), (">=0.21", False), (">=0.26", False), (None, False), ("", False),
])
def test_the_releases_a_pin_allows(spec, expected):
    assert places_on_the_cpu(spec) is expected


SOURCE = """import torch
from transformers import AutoModelForCausalLM


def load_pretrained_model(path, load_8bit=False, device_map="auto", device="cuda"):
    kwargs = {"device_map": device_map}
    if device != "cuda":
        kwargs["device_map"] = {"": device}
    return AutoModelForCausalLM.from_pretrained(path, **kwargs)


balanced = AutoModelForCausalLM.from_pretrained("m", device_map="balanced_low_0")
settings = {"device_map": "sequential", "torch_dtype": torch.float16}
placed = AutoModelForCausalLM.from_pretrained("m", device_map={"": 0})
chosen = AutoModelForCausalLM.from_pretrained("m", device_map=args.device_map)
plain = AutoModelForCausalLM.from_pretrained("m")
"""


def _check(tmp_path, requirements: str):
    project = tmp_path / "project"
    project.mkdir()
    (project / "builder.py").write_text(SOURCE)
    (project / "requirements.txt").write_text(requirements)
    result = console_script("check", str(project), "-v", "2.1.0", "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    return {(f["start_line"], f["message"].split(" ")[0]) for f in findings if f["rule"] == "NPU935"}, findings


def test_a_pin_before_0_26_reports_each_counted_map(tmp_path):
    found, findings = _check(tmp_path, "torch==2.1.0\ntransformers==4.37.2\naccelerate==0.21.0\n")
    assert found == {(5, 'device_map="auto"'), (12, 'device_map="balanced_low_0"'), (13, 'device_map="sequential"')}
    message = next(f["message"] for f in findings if f["rule"] == "NPU935")
    assert "accelerate==0.21.0" in message and "pin accelerate>=0.26" in message


@pytest.mark.parametrize("requirements", ["torch==2.1.0\naccelerate>=0.26\n", "torch==2.1.0\naccelerate>=0.21\n",
                                          "torch==2.1.0\ntransformers==4.37.2\n"])
def test_a_newer_pin_or_none_says_nothing(tmp_path, requirements):
    found, _ = _check(tmp_path, requirements)
    assert found == set()


def test_explain_shows_the_pin_of_its_examples():
    explained = console_script("explain", "NPU935")
    assert explained.returncode == 0
    assert "(in a project that pins accelerate==0.21.0)" in explained.stdout
