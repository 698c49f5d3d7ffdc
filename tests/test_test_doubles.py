"""A test double of a torch.cuda attribute, written with the module object
(`monkeypatch.setattr(torch.cuda, "is_available", ...)`), stays as the same patch written with a
string (`patch("torch.cuda.is_available")`) does: it replaces what the code under test reads, and
that code keeps torch.cuda where it asks about CUDA itself (a capability, a CUDA-only branch).
Retargeted to torch_npu.npu, the double would no longer reach that code and the test would check
the machine instead.  The log says so (NPU915)."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.records.change import Report
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "tests/test_utils.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result.findings


HEAD = "import torch\nfrom unittest import mock\nfrom unittest.mock import patch\n\n\n"


class TestTheModuleAPatchIsGiven:
    @pytest.mark.parametrize("double, patched", [
        ('def test_a(monkeypatch):\n    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)\n',
         "torch.cuda.is_available"),
        ('def test_a(mp):\n    mp.setattr(torch.cuda, "get_device_capability", lambda: (9, 0))\n',
         "torch.cuda.get_device_capability"),
        ('def test_a(monkeypatch):\n    monkeypatch.delattr(torch.cuda, "is_bf16_supported")\n',
         "torch.cuda.is_bf16_supported"),
        ('def test_a():\n    with mock.patch.object(torch.cuda, "is_available", return_value=False):\n        run()\n',
         "torch.cuda.is_available"),
        ('@patch.object(torch.cuda, "device_count", return_value=8)\ndef test_a(count):\n    run()\n',
         "torch.cuda.device_count"),
        ('def test_a(mocker):\n    mocker.patch.object(torch.cuda, "synchronize")\n', "torch.cuda.synchronize"),
        ('def test_a(monkeypatch):\n    monkeypatch.setattr(torch.cuda.amp, "autocast", fake)\n',
         "torch.cuda.amp.autocast"),
    ])
    def test_stays_with_a_note(self, double, patched):
        output, findings = _migrate(HEAD + double)
        assert output == HEAD + double
        notes = [f for f in findings if f.report == Report.NOTE and f.api == patched]
        assert notes and notes[0].rule == "NPU915" and "test double" in notes[0].tip, findings

    def test_the_string_form_stays_too(self):
        source = HEAD + 'def test_a():\n    with patch("torch.cuda.is_available", return_value=True):\n        run()\n'
        output, _ = _migrate(source)
        assert output == source

    @pytest.mark.parametrize("source, expected", [
        # the code the test runs is migrated around the double
        (HEAD + 'def test_a(monkeypatch):\n    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)\n'
         "    torch.cuda.synchronize()\n",
         "    torch_npu.npu.synchronize()\n"),
        # the module handed on as a value is the device's module
        (HEAD + "device_module = torch.cuda\n", "device_module = torch_npu.npu\n"),
        # an attribute of it as the patched object's value, not the patched object
        (HEAD + 'def test_a(monkeypatch):\n    monkeypatch.setattr(utils, "count", torch.cuda.device_count)\n',
         'monkeypatch.setattr(utils, "count", torch_npu.npu.device_count)\n'),
    ])
    def test_what_is_no_patched_module_is_migrated(self, source, expected):
        output, _ = _migrate(source)
        assert expected in output
