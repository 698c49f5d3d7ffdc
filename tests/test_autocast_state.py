"""torch's no-argument questions about autocast are CUDA's: after migration the program autocasts
on the NPU, so they become torch_npu.npu's (NPU118); the device-neutral forms keep their call
(their device string is renamed), and a local named torch is not the module."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options


def _migrate(source: str, version: str = "2.1.0"):
    options = Options(api=apidata.load(version))
    result = migrate_source(source.encode(), "m.py", options, rules_for(options))
    output = (result.output or source.encode()).decode()
    return output, [change for change in result.changes if change.rule == "NPU118"]


class TestCudasAutocastQuestions:
    @pytest.mark.parametrize("source, expected", [
        ("import torch\nok = torch.is_autocast_enabled()\n", "ok = torch_npu.npu.is_autocast_enabled()"),
        ("import torch\ndt = torch.get_autocast_gpu_dtype()\n", "dt = torch_npu.npu.get_autocast_dtype()"),
        ("import torch\ntorch.set_autocast_gpu_dtype(torch.bfloat16)\n", "torch_npu.npu.set_autocast_dtype(torch.bfloat16)"),
        ("import torch\ntorch.set_autocast_enabled(False)\n", "torch_npu.npu.set_autocast_enabled(False)"),
        ("import torch as th\n\ndef f(x):\n    return x.half() if th.is_autocast_enabled() else x\n",
         "torch_npu.npu.is_autocast_enabled()"),
        ("from torch import get_autocast_gpu_dtype\ndt = get_autocast_gpu_dtype()\n",
         "dt = torch_npu.npu.get_autocast_dtype()"),
    ])
    def test_become_the_npus(self, source, expected):
        output, changes = _migrate(source)
        assert expected in output and "import torch_npu" in output and changes

    @pytest.mark.parametrize("source", [
        "import torch\nok = torch.is_autocast_enabled('cpu')\n",
        "import torch\nok = torch.is_autocast_enabled(device_type='cpu')\n",
        "import torch\nok = torch.is_autocast_cpu_enabled()\n",
        "import torch\ndt = torch.get_autocast_dtype('cpu')\n",
        "def f(torch):\n    return torch.is_autocast_enabled()\n",
        "import torch\n\ndef f(is_autocast_enabled):\n    return is_autocast_enabled()\n",
        "import torch\nflag = model.is_autocast_enabled()\n",
    ])
    def test_the_device_neutral_forms_and_other_names_stay(self, source):
        output, changes = _migrate(source)
        assert output == source and not changes

    def test_a_device_type_given_is_a_device_string(self):
        output, changes = _migrate("import torch\nok = torch.is_autocast_enabled('cuda')\n")
        assert "torch.is_autocast_enabled('npu')" in output and not changes

    def test_a_release_without_the_npu_form_leaves_it(self):
        output, changes = _migrate("import torch\nok = torch.is_autocast_enabled()\n", "1.11.0")
        assert "torch.is_autocast_enabled()" in output and not changes


class TestADtypeFunctionHandedOn:
    """`dtype = torch.get_autocast_gpu_dtype` called later (DeepSpeed's linear cross-entropy picks
    the getter per device): the NPU's getter, as where it is called here.  Migrated with only the
    question beside it, the NPU's autocast read as enabled and CUDA's dtype (float16) as its dtype."""

    @pytest.mark.parametrize("source, expected", [
        ("import torch\nenabled, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype\n",
         "enabled, dtype = torch_npu.npu.is_autocast_enabled(), torch_npu.npu.get_autocast_dtype\n"),
        ("import torch\nsetters = [torch.set_autocast_gpu_dtype]\n", "setters = [torch_npu.npu.set_autocast_dtype]\n"),
        ("from torch import get_autocast_gpu_dtype\nGETTER = get_autocast_gpu_dtype\n",
         "GETTER = torch_npu.npu.get_autocast_dtype\n"),
    ])
    def test_the_npu_getter(self, source, expected):
        output, changes = _migrate(source)
        assert expected in output and changes

    @pytest.mark.parametrize("source", [
        # what a question handed on is called with is not seen (maybe a device type)
        "import torch\nask = torch.is_autocast_enabled\n",
        "import torch\nfrom torch import get_autocast_gpu_dtype\n",
    ])
    def test_a_question_handed_on_and_an_import_stay(self, source):
        output, changes = _migrate(source)
        assert output == source and not changes
