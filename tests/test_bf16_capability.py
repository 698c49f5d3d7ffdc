"""NPU111: a compute-capability test that chooses bf16 asks the NPU's bf16 support instead; the
device test beside it is migrated with it (it no longer guards anything CUDA-only), and
capability tests that ask something else stay, reported."""
from helpers import migrate, read_csv
from standin_runner import run_script

SOURCE = '''import torch


def choose(args):
    dtype = torch.bfloat16 if torch.cuda.get_device_capability()[0] >= 8 else torch.float16
    amp = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0) else torch.float16
    if torch.cuda.get_device_properties(torch.cuda.current_device()).major >= 8:
        precision = "bf16"
    else:
        precision = "fp16"
    return dtype, amp, precision


def fp8_ready():
    return torch.cuda.get_device_capability() >= (9, 0)


if __name__ == "__main__":
    print(*choose(None))
'''


def test_bf16_gates_ask_the_npu_and_other_capability_tests_are_reported(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "precision.py").write_text(SOURCE)
    target = migrate(project, tmp_path / "out")
    lines = (target / "precision.py").read_text().splitlines()
    assert lines[5] == "    dtype = torch.bfloat16 if torch_npu.npu.is_bf16_supported() else torch.float16"
    assert lines[6] == ("    amp = torch.bfloat16 if torch_npu.npu.is_available() and torch_npu.npu.is_bf16_supported() "
                        "else torch.float16")
    assert lines[7] == "    if torch_npu.npu.is_bf16_supported():"
    assert lines[15] == "    return torch.cuda.get_device_capability() >= (9, 0)"
    changes = [(row["Start Line"], row["Rule"]) for row in read_csv(target / "change_list.csv") if row["Rule"] == "NPU111"]
    assert changes == [("5", "NPU111"), ("6", "NPU111"), ("7", "NPU111")]
    rows = [(row["Start Line"], row["OP"]) for row in read_csv(target / "unsupported_api.csv")]
    assert rows == [("15", "torch.cuda.get_device_capability")]
    # on the stand-in (an NPU that computes in bf16) every gate chooses bf16
    result = run_script(target / "precision.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["torch.bfloat16", "torch.bfloat16", "bf16"]
