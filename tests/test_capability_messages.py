"""NPU119: a check of CUDA's compute capability whose answer only decides a message (the warning
of a flash-attn monkey patch about A100s) is removed with its messages, since an NPU has no
compute capability and torch.cuda's query raises on an Ascend machine; a check whose answer
chooses, stops or is read elsewhere stays, with its NPU917 row."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "patch.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


class TestACapabilityCheckThatOnlyWarns:
    PATCH = ("import warnings\nimport torch\n\n\ndef replace_attention():\n"
             "    cuda_major, cuda_minor = torch.cuda.get_device_capability()\n    if cuda_major < 8:\n"
             "        warnings.warn('flash attention is only supported on A100 or H100 GPUs')\n"
             "    Model.forward = forward\n")

    def test_the_patch_no_longer_stops_at_the_check(self):
        output, result = _migrate(self.PATCH)
        assert "get_device_capability" not in output and "Model.forward = forward" in output
        assert [(c.start_line, c.end_line, c.operation.value, c.rule) for c in result.changes] == [
            (6, 6, "DELETE", "NPU119"), (7, 8, "DELETE", "NPU119")]
        assert not [f for f in result.findings if "get_device_capability" in f.api]

    @pytest.mark.parametrize("check", [
        "    if torch.cuda.get_device_capability()[0] < 8:\n        print('older than Ampere')\n",
        "    major, minor = torch.cuda.get_device_capability(0)\n    if major < 8 or minor < 0:\n"
        "        logger.warning('old GPU')\n    elif major >= 9:\n        logger.info('Hopper')\n    else:\n        pass\n",
        "    capability = torch.cuda.get_device_capability()\n    if capability < (8, 0):\n        print('old')\n",
    ])
    def test_every_shape_of_such_a_check_goes(self, check):
        source = f"import logging\nimport torch\nlogger = logging.getLogger()\n\n\ndef setup():\n{check}    run()\n"
        output, _ = _migrate(source)
        assert "get_device_capability" not in output and "    run()\n" in output

    @pytest.mark.parametrize("check", [
        # the answer chooses something, stops the program, or is read elsewhere (later, returned, in a closure)
        "    major, minor = torch.cuda.get_device_capability()\n    if major < 8:\n        use_flash = False\n",
        "    if torch.cuda.get_device_capability()[0] < 8:\n        raise RuntimeError('needs Ampere')\n",
        "    major, minor = torch.cuda.get_device_capability()\n    if major < 8:\n        print('old')\n"
        "    dtype = 'bf16' if major >= 8 else 'fp16'\n",
        "    major, minor = torch.cuda.get_device_capability()\n    if major < 8:\n        print('old')\n"
        "    def later():\n        return minor\n",
        # another question beside it in the test
        "    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 8:\n        print('old')\n",
        # a check whose branch does nothing: no message to speak of
        "    if torch.cuda.get_device_capability()[0] < 8:\n        pass\n",
    ])
    def test_a_check_that_decides_more_stays_reported(self, check):
        source = f"import torch\n\n\ndef setup():\n{check}    run()\n"
        output, result = _migrate(source)
        assert "torch.cuda.get_device_capability" in output
        assert not [c for c in result.changes if c.rule == "NPU119"]
