"""Kinds of an edit with codes of their own (`Rule.recorded_by`): torch.cuda's random
generators, streams, memory API and amp are kinds of NPU101's rename, device tests a kind of
NPU103's.  Which kind an edit is, and what a suppression, --ignore or baseline written before the
kinds had codes (naming the recording rule) still covers."""
from __future__ import annotations

import json

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.modes import rules_for
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.rules import EDIT_KINDS, RULES_BY_CODE, Options
from gpu2npu.rules.cuda_api import KINDS, TorchCudaMemoryToNpu, TorchCudaRandomToNpu, TorchCudaStreamsToNpu

from test_check_gate import codes, gpu2npu

OPTIONS = Options(api=apidata.load("2.1.0"))


def edits(source: str):
    """(line, code) of each edit the migration makes."""
    result = migrate_source(source.encode(), "example.py", OPTIONS, rules_for(OPTIONS))
    return sorted((change.start_line, change.rule) for change in result.changes if change.rule != "NPU001")


def test_each_kind_is_recorded_by_a_rule_that_runs_and_is_listed_after_it():
    listed = list(RULES_BY_CODE)
    for kind in EDIT_KINDS:
        assert kind.recorded_by in RULES_BY_CODE and not RULES_BY_CODE[kind.recorded_by].recorded_by
        assert listed.index(kind.code) > listed.index(kind.recorded_by)
        assert all(kind not in rules_for(Options(api=OPTIONS.api, **mode)) for mode in ({}, {"similar": True}))
    names = [name for kind in KINDS for name in kind.names]
    assert len(names) == len(set(names)), "a torch.cuda name of two kinds"


def test_the_kinds_of_torch_cuda_names_hold_the_names_of_torchs_own_modules():
    pytest.importorskip("torch")
    import torch.cuda.graphs
    import torch.cuda.memory
    import torch.cuda.random

    assert set(torch.cuda.random.__all__) <= TorchCudaRandomToNpu.names
    assert set(torch.cuda.memory.__all__) <= TorchCudaMemoryToNpu.names
    assert set(torch.cuda.graphs.__all__) | {"Stream", "Event", "synchronize", "current_stream"} <= TorchCudaStreamsToNpu.names


class TestTorchCudaKinds:
    def test_each_name_is_recorded_under_its_kind(self):
        source = ("import torch\nn = torch.cuda.device_count()\ntorch.cuda.manual_seed(0)\ntorch.cuda.synchronize()\n"
                  "torch.cuda.empty_cache()\nscaler = torch.cuda.amp.GradScaler()\n")
        assert edits(source) == [(2, "NPU101"), (3, "NPU112"), (4, "NPU113"), (5, "NPU114"), (6, "NPU115")]

    def test_imports_take_the_kind_of_their_module_or_of_all_their_names(self):
        source = ("from torch.cuda.amp import autocast\nfrom torch.cuda import manual_seed, seed\n"
                  "from torch.cuda import synchronize, device_count\nimport torch.cuda.memory as cuda_memory\n")
        assert edits(source) == [(1, "NPU115"), (2, "NPU112"), (3, "NPU101"), (4, "NPU114")]

    def test_a_name_through_an_alias_or_a_local_import(self):
        source = "from torch import cuda as c\n\n\ndef step():\n    import torch\n    torch.cuda.synchronize()\n    c.memory_allocated()\n"
        assert edits(source) == [(6, "NPU113"), (7, "NPU114")]


class TestDeviceTests:
    @pytest.mark.parametrize("line", [
        "ok = device_type == 'cuda'",
        "ok = 'cuda' in str(device)",
        "ok = device not in ('cuda', 'xpu')",
        "ok = x.device.type != 'cuda'",
        "ok = device.startswith('cuda')",
    ])
    def test_a_string_a_device_is_tested_against(self, line):
        assert edits(f"import torch\n{line}\n") == [(2, "NPU116")]

    def test_a_case_of_a_match(self):
        source = "import torch\nmatch device:\n    case 'cuda':\n        pass\n"
        assert edits(source) == [(3, "NPU116")]

    @pytest.mark.parametrize("line", [
        "device = 'cuda'",
        "x = torch.zeros(1, device='cuda:0')",
        "devices = ['cuda:0', 'cuda:1']",
        "device_type = 'cuda' if cuda_ok else 'cpu'",
    ])
    def test_a_string_that_chooses_a_device(self, line):
        assert {code for _, code in edits(f"import torch\n{line}\n")} == {"NPU103"}

    def test_both_on_one_line(self):
        assert edits("import torch\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n") == [(2, "NPU103"), (2, "NPU116")]


class TestWhatTheRecordingRulesCodeStillCovers:
    SOURCE = "import torch\ntorch.cuda.manual_seed(1)  # gpu2npu: ignore[NPU101]\ntorch.cuda.synchronize()\n"

    def test_a_suppression_of_the_rule_covers_its_kinds(self, tmp_path):
        (tmp_path / "a.py").write_text(self.SOURCE)
        done = gpu2npu("check", tmp_path / "a.py", "-v", "2.1.0")
        assert [code for _, _, code in codes(done)] == ["NPU113"] and done.returncode == 1

    def test_ignoring_the_rule_ignores_its_kinds_and_a_kind_alone(self, tmp_path):
        (tmp_path / "a.py").write_text(self.SOURCE.replace("  # gpu2npu: ignore[NPU101]", ""))
        assert gpu2npu("check", tmp_path / "a.py", "-v", "2.1.0", "--ignore", "NPU101").returncode == 0
        done = gpu2npu("check", tmp_path / "a.py", "-v", "2.1.0", "--ignore", "NPU112")
        assert [code for _, _, code in codes(done)] == ["NPU113"]

    def test_a_baseline_that_named_the_rule_accepts_its_kinds(self, tmp_path):
        (tmp_path / "a.py").write_text(self.SOURCE.replace("  # gpu2npu: ignore[NPU101]", ""))
        baseline = tmp_path / "baseline.json"
        assert gpu2npu("check", tmp_path / "a.py", "-v", "2.1.0", "--write-baseline", baseline).returncode == 0
        written = json.loads(baseline.read_text())
        assert sorted(entry["code"] for entry in written["findings"]) == ["NPU112", "NPU113"]
        for entry in written["findings"]:
            entry["code"] = "NPU101"  # as a baseline written before the kinds had codes
        baseline.write_text(json.dumps(written))
        assert gpu2npu("check", tmp_path / "a.py", "-v", "2.1.0", "--baseline", baseline).returncode == 0
        (tmp_path / "a.py").write_text(self.SOURCE.replace("  # gpu2npu: ignore[NPU101]", "") + "torch.cuda.empty_cache()\n")
        done = gpu2npu("check", tmp_path / "a.py", "-v", "2.1.0", "--baseline", baseline)
        assert done.returncode == 1 and [code for _, _, code in codes(done)] == ["NPU114"]
