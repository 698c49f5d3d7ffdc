"""torch.random.fork_rng forks the generators of "cuda" unless told another device type (torch
2.1 to 2.12): a migrated call names the NPU's, and the migrated code restores the NPU's numbers."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options


def migrated(source: str, version: str = "2.1.0"):
    options = Options(api=apidata.load(version))
    result = migrate_source(source.encode(), "m.py", options, rules_for(options))
    return (result.output or source.encode()).decode(), [(c.start_line, c.rule) for c in result.changes if c.rule == "NPU117"]


@pytest.mark.parametrize("call, written", [
    ("torch.random.fork_rng(devices=devices)", 'torch.random.fork_rng(devices=devices, device_type="npu")'),
    ("torch.random.fork_rng([device], True)", 'torch.random.fork_rng([device], True, device_type="npu")'),
    ("torch.random.fork_rng()", 'torch.random.fork_rng(device_type="npu")'),
    ("torch.random.fork_rng(devices=[0], enabled=seed is not None)",
     'torch.random.fork_rng(devices=[0], enabled=seed is not None, device_type="npu")'),
    # the module imported under another name, the function imported from it
    ("rng.fork_rng(devices=devices)", 'rng.fork_rng(devices=devices, device_type="npu")'),
    ("fork_rng(devices=devices)", 'fork_rng(devices=devices, device_type="npu")'),
])
def test_a_fork_of_the_default_device_type_forks_the_npus_generators(call, written):
    source = ("import torch\nimport torch.random as rng\nfrom torch.random import fork_rng\n"
              f"with {call}:\n    torch.manual_seed(0)\n")
    output, edits = migrated(source)
    assert f"with {written}:\n" in output and edits == [(4, "NPU117")]
    assert "import torch_npu\n" in output  # (torch.npu, which fork_rng looks up, is torch_npu's)


@pytest.mark.parametrize("call", [
    "torch.random.fork_rng(devices=[device], device_type=device.type)",  # the author chose the type
    "torch.random.fork_rng(devices, True, 'fork_rng', 'devices', 'xpu')",  # positionally
    "torch.random.fork_rng(**fork_kwargs)",  # may name it
    "torch.random.fork_rng(*arguments)",
    "torch.random.fork_rng(devices=[])",  # forks no device: the CPU's generator only
    "torch.random.fork_rng(devices=())",
    "torch.random.fork_rng(enabled=False)",
    "accelerator.random().fork_rng(devices=[device])",  # not torch's
    "fork_rng(devices=devices)",  # the project's own, defined below
])
def test_a_fork_that_names_its_device_type_or_forks_no_device_stays(call):
    source = f"import torch\nwith {call}:\n    pass\n\n\ndef fork_rng(devices):\n    return devices\n"
    output, edits = migrated(source)
    assert edits == [] and f"with {call}:\n" in output


def test_torch_releases_before_2_1_have_no_device_type():
    output, edits = migrated("import torch\nwith torch.random.fork_rng(devices=[0]):\n    pass\n", "1.11.0")
    assert edits == [] and "fork_rng(devices=[0]):" in output


def test_the_migrated_fork_restores_the_npus_numbers_on_the_imitation(tmp_path):
    """The device test chooses the NPU's generator to fork: after the block the NPU draws the
    numbers it would have drawn without it (the CPU imitation of torch_npu, as `dryrun` runs it)."""
    pytest.importorskip("torch")
    source = (
        "import torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "devices = [device] if device.type == 'cuda' else []\n"
        "torch.manual_seed(0)\n"
        "with torch.random.fork_rng(devices=devices):\n"
        "    torch.manual_seed(123)\n"
        "    inside = torch.randn(3, device=device)\n"
        "after = torch.randn(3, device=device)\n"
        "torch.manual_seed(0)\n"
        "assert torch.equal(after.cpu(), torch.randn(3, device=device).cpu())\n"
        "print('restored on', device)\n"
    )
    output, edits = migrated(source)
    assert edits == [(5, "NPU117")]
    (tmp_path / "train.py").write_text(output)
    done = subprocess.run([str(Path(sys.executable).parent / "gpu2npu"), "dryrun", "-v", "2.1.0", "--python",
                           sys.executable, "--", "python", "train.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "restored on npu"
