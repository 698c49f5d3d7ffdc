"""Migrated fixtures really train: run them for a few steps against the CPU stand-in of
torch_npu (src/gpu2npu/dryrun/standin) and compare their losses with the original scripts run on the CPU.

The stand-in exposes only the torch_npu.npu names that the real release for the chosen version
has (from the same data the tool uses), keeps every CUDA path failing as on CPU-only torch, and
maps the "npu" device onto the CPU, so a migration that left CUDA code in the training path, or
called an API torch_npu lacks, fails here.
"""
import json

import pytest

pytest.importorskip("torch")

from gpu2npu.knowledge import apidata  # noqa: E402
from helpers import FIXTURES, migrate  # noqa: E402
from standin_runner import parse_losses, run_script  # noqa: E402

STEPS = 6
CASES = [
    pytest.param("single_gpu_loop", "train.py", [], id="single_gpu_loop"),
    pytest.param("native_amp", "train_amp.py", ["--no-amp"], id="native_amp"),
    pytest.param("data_parallel", "train_dp.py", [], id="data_parallel"),
]


def data_file(version):
    return apidata.resources.files(apidata.DATA_PACKAGE).joinpath(f"torch_npu_{version}.json")


@pytest.mark.parametrize("version", ["2.1.0", "2.8.0"])
@pytest.mark.parametrize("name, script, extra", CASES)
def test_losses_match_the_original(name, script, extra, version, tmp_path):
    source = FIXTURES / name
    args = ["--steps", STEPS, *extra]
    original = run_script(source / script, args, cwd=tmp_path, use_standin=False)
    assert original.returncode == 0, original.stderr
    target = migrate(source, tmp_path / "out", version)
    env = {"STANDIN_TORCH_NPU_DATA": str(data_file(version))}
    migrated = run_script(target / script, args, cwd=tmp_path, env_extra=env)
    assert migrated.returncode == 0, migrated.stderr
    expected = parse_losses(original.stdout)
    assert len(expected) == STEPS
    assert parse_losses(migrated.stdout) == pytest.approx(expected, rel=1e-6, abs=1e-7)
    if name == "single_gpu_loop":  # it names its device: the migrated run took the NPU path
        assert "on cpu" in original.stderr and "on npu" in migrated.stderr


def test_migrated_amp_path_runs(tmp_path):
    target = migrate(FIXTURES / "native_amp", tmp_path / "out", "2.8.0")
    env = {"STANDIN_TORCH_NPU_DATA": str(data_file("2.8.0"))}
    result = run_script(target / "train_amp.py", ["--steps", 4, "--amp"], cwd=tmp_path, env_extra=env)
    assert result.returncode == 0, result.stderr
    losses = parse_losses(result.stdout)
    assert len(losses) == 4 and all(loss == loss and loss < 100 for loss in losses)


def test_unmigrated_cuda_code_fails_on_the_standin(tmp_path):
    """The check has teeth: CUDA code is not quietly accepted by the stand-in."""
    script = tmp_path / "cuda_only.py"
    script.write_text("import torch\nimport torch_npu\nx = torch.ones(2).cuda()\nprint('step 1 loss 0.0')\n")
    result = run_script(script, [], cwd=tmp_path)
    assert result.returncode != 0


def test_standin_hides_names_torch_npu_lacks(tmp_path):
    names = json.loads(data_file("2.1.0").read_text())["modules"]["torch_npu.npu"]
    assert "nvtx" not in names
    script = tmp_path / "uses_nvtx.py"
    script.write_text("import torch\nimport torch_npu\ntorch_npu.npu.nvtx.range_push('x')\n")
    result = run_script(script, [], cwd=tmp_path, env_extra={"STANDIN_TORCH_NPU_DATA": str(data_file("2.1.0"))})
    assert result.returncode != 0 and "nvtx" in result.stderr


@pytest.mark.parametrize("device_id", ["0", "1"])
def test_specify_device_migration_runs_on_device_id(device_id, tmp_path):
    """-s: the migrated script takes its NPU from DEVICE_ID and trains as the original does."""
    source = FIXTURES / "single_gpu_loop"
    args = ["--steps", STEPS]
    original = run_script(source / "train.py", args, cwd=tmp_path, use_standin=False)
    target = migrate(source, tmp_path / "out", "2.1.0", "-s")
    assert 'os.environ.get("DEVICE_ID", "0")' in (target / "train.py").read_text()
    env = {"DEVICE_ID": device_id, "STANDIN_NPU_COUNT": "2", "STANDIN_TORCH_NPU_DATA": str(data_file("2.1.0"))}
    migrated = run_script(target / "train.py", args, cwd=tmp_path, env_extra=env)
    assert migrated.returncode == 0, migrated.stderr
    assert parse_losses(migrated.stdout) == pytest.approx(parse_losses(original.stdout), rel=1e-6, abs=1e-7)
    assert "on npu" in migrated.stderr


def test_specify_device_rejects_a_device_that_is_not_there(tmp_path):
    target = migrate(FIXTURES / "single_gpu_loop", tmp_path / "out", "2.1.0", "-s")
    env = {"DEVICE_ID": "3", "STANDIN_NPU_COUNT": "2"}
    result = run_script(target / "train.py", ["--steps", 1], cwd=tmp_path, env_extra=env)
    assert result.returncode != 0  # set_device(3) on a 2-NPU machine: DEVICE_ID is really used


@pytest.mark.parametrize("amp_flag", ["--amp", "--no-amp"])
def test_apex_amp_migration_trains_like_the_original(amp_flag, tmp_path):
    """-a model: the migrated script trains through apex amp (stand-in: src/gpu2npu/dryrun/standin/apex,
    which scales the loss by 2**16 and unscales the gradients, exactly, and casts nothing), so
    its losses are those of the original on the CPU; its checkpoint holds the amp state."""
    import torch

    source = FIXTURES / "native_amp"
    args = ["--steps", STEPS, amp_flag, "--log-every", 3]
    original = run_script(source / "train_amp.py", args, cwd=tmp_path, use_standin=False)
    assert original.returncode == 0, original.stderr
    target = migrate(source, tmp_path / "out", "2.8.0", "-a", "model")
    assert "amp.initialize(model, optimizer" in (target / "train_amp.py").read_text()
    env = {"STANDIN_TORCH_NPU_DATA": str(data_file("2.8.0"))}
    checkpoint = tmp_path / "last.pt"
    migrated = run_script(target / "train_amp.py", [*args, "--save", checkpoint], cwd=tmp_path, env_extra=env)
    assert migrated.returncode == 0, migrated.stderr
    expected = parse_losses(original.stdout)
    assert len(expected) == STEPS
    assert parse_losses(migrated.stdout) == pytest.approx(expected, rel=1e-6, abs=1e-7)
    state = torch.load(checkpoint)
    assert "scaler" not in state
    if amp_flag == "--amp":  # AMP on: the scale apex used is logged and saved
        assert state["amp"] == {"loss_scaler0": {"loss_scale": 2.0 ** 16, "unskipped": STEPS}}
        assert "scale=65536.0" in migrated.stderr
    else:
        assert state["amp"] == {}


REFERENCE_PACKAGES = str(FIXTURES.parent.parent / "tests" / "reference_packages")


@pytest.mark.parametrize("version", ["2.1.0", "2.8.0"])
@pytest.mark.parametrize("name, package", [("flash_attn_patch", "ascend_flash_attn"), ("xformers_llama", "ascend_xformers")])
def test_llm_fixtures_train_like_the_original(name, package, version, tmp_path):
    """The original runs on the CPU with reference flash-attn, xformers and apex packages
    (tests/reference_packages, written from their documented computations); the migrated project
    runs the generated packages on the stand-in (npu_fusion_attention for flash-attn: unpadded
    varlen batches with packed keys and values, GQA, causal; SDPA for xformers' causal attention)
    and torch.nn.LayerNorm for apex's.  Same losses."""
    source = FIXTURES / name
    args = ["--steps", STEPS]
    original = run_script(source / "train.py", args, cwd=tmp_path, use_standin=False,
                          env_extra={"PYTHONPATH": REFERENCE_PACKAGES})
    assert original.returncode == 0, original.stderr
    target = migrate(source, tmp_path / "out", version)
    assert (target / package / "__init__.py").is_file()
    env = {"STANDIN_TORCH_NPU_DATA": str(data_file(version))}
    migrated = run_script(target / "train.py", args, cwd=tmp_path, env_extra=env)
    assert migrated.returncode == 0, migrated.stderr
    expected = parse_losses(original.stdout)
    assert len(expected) == STEPS
    assert parse_losses(migrated.stdout) == pytest.approx(expected, abs=1e-5)
    # without the migration the project does not even import on a machine without those packages
    unmigrated = run_script(source / "train.py", args, cwd=tmp_path)
    assert unmigrated.returncode != 0 and "No module named" in unmigrated.stderr
