"""A project that selects its tests by device with a pytest mark of its own, and gives some of them
"npu" (`@pytest.mark.runs_on(["cuda", "npu"])`), says with `runs_on(["cuda"])` that a test is
CUDA's only: that "cuda" stays, in every file.  Where no test of the project gives the mark
"npu", its "cuda" goes with the tests to the NPU as any device does.  Run through the console
script, as a project (the marks are in several files)."""
import pytest

from helpers import console_script, write_project

BOTH = "import pytest\n\n\n@pytest.mark.runs_on([\"cuda\", \"npu\"])\ndef test_train():\n    assert True\n"
CUDA_ONLY = ("import pytest\nimport torch\n\n\n@pytest.mark.runs_on([\"cuda\"])\ndef test_kernel():\n"
             "    x = torch.ones(2, device=\"cuda\")\n    assert x.sum() == 2\n\n\n"
             "pytestmark = pytest.mark.runs_on(\"cuda\")\n\n\n"
             "@pytest.mark.parametrize(\"device\", [\"cpu\", \"cuda\"])\ndef test_move(device):\n"
             "    assert torch.ones(1).to(device).device.type == device\n")


def _migrated(tmp_path, files):
    source = write_project(tmp_path / "proj", files)
    result = console_script("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    return (tmp_path / "out" / "proj_msft" / "tests" / "test_kernel.py").read_text()


def test_a_mark_the_project_gives_npu_keeps_its_cuda(tmp_path):
    text = _migrated(tmp_path, {"tests/test_train.py": BOTH, "tests/test_kernel.py": CUDA_ONLY})
    assert '@pytest.mark.runs_on(["cuda"])' in text and 'pytestmark = pytest.mark.runs_on("cuda")' in text
    # the tensors of the test and pytest's own parametrize are devices: they move
    assert 'device="npu"' in text and '["cpu", "npu"]' in text


@pytest.mark.parametrize("other", [
    "import pytest\n\n\n@pytest.mark.runs_on([\"cuda\", \"cpu\"])\ndef test_train():\n    assert True\n",
    # "npu" given to another mark, or to pytest's own parametrize, says nothing of runs_on
    "import pytest\n\n\n@pytest.mark.needs([\"npu\"])\ndef test_train():\n    assert True\n",
    "import pytest\n\n\n@pytest.mark.parametrize(\"d\", [\"npu\"])\ndef test_train(d):\n    assert d\n",
])
def test_elsewhere_the_marks_cuda_moves_with_the_tests(tmp_path, other):
    text = _migrated(tmp_path, {"tests/test_train.py": other, "tests/test_kernel.py": CUDA_ONLY})
    assert '@pytest.mark.runs_on(["npu"])' in text and 'pytestmark = pytest.mark.runs_on("npu")' in text
