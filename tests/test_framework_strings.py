"""Device strings handed to other frameworks' own options are not torch devices, and report rows
fit their line (no Tensor.cuda row for an argparse flag)."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


@pytest.mark.parametrize("source", [
    'import lightning as L\ntrainer = L.Trainer(accelerator="cuda", devices=2)\n',
    'from lightning.fabric import Fabric\nfabric = Fabric(accelerator="cuda")\n',
    'accelerator = "cuda"\n',
    'cfg.accelerator = "cuda"\n',
    'import argparse\np = argparse.ArgumentParser()\np.add_argument("--accelerator", default="cuda")\n',
    # the names a check allows, a test compares or an annotation lists: renamed alone, they would refuse
    # the "cuda" that the rest of the code still passes
    'allowed_accelerators = {"cpu", "gpu", "cuda", "mps", "auto"}\n',
    'if accelerator not in ("cuda", "gpu"):\n    pass\n',
    'if args.accelerator == "cuda":\n    pass\n',
    'from typing import Literal\ndef load(accelerator: Literal["cpu", "cuda", "auto"] = "auto"):\n    pass\n',
    # keyword arguments gathered before the call (`L.Fabric(**kwargs)`)
    'kwargs["accelerator"] = "cuda"\n',
    'trainer_args = {"max_epochs": 3, "accelerator": "cuda"}\n',
    'if cfg["accelerator"] == "cuda":\n    pass\n',
    'if cfg.get("accelerator") in ("cuda", "gpu"):\n    pass\n',
])
def test_lightning_accelerator_names_are_left_and_reported(source):
    output, result = _migrate(source)
    assert output == source
    rows = [f for f in result.findings if f.report == Report.UNSUPPORTED]
    assert len(rows) == 1 and rows[0].api == "accelerator='cuda'" and "Lightning" in rows[0].tip


def test_torch_device_strings_beside_them_are_migrated():
    source = ('import torch\nimport argparse\np = argparse.ArgumentParser()\np.add_argument("--device", default="cuda")\n'
              'x = torch.ones(2, device="cuda:0")\n')
    output, _ = _migrate(source)
    assert 'default="npu"' in output and 'device="npu:0"' in output


def test_lightning_cuda_accelerator_is_reported():
    source = "from lightning.pytorch.accelerators import CUDAAccelerator\nn = CUDAAccelerator.auto_device_count()\n"
    _, result = _migrate(source)
    assert [f.start_line for f in result.findings if "CUDAAccelerator" in f.api] == [2]


def test_an_argparse_flag_named_cuda_is_no_tensor_use():
    source = ("import torch\nimport argparse\np = argparse.ArgumentParser()\np.add_argument('--cuda', action='store_true')\n"
              "opt = p.parse_args()\nif opt.cuda and args.cuda:\n    x = torch.ones(2).cuda()\n")
    output, result = _migrate(source)
    assert "torch.ones(2).npu()" in output
    assert not [f for f in result.findings if f.api.startswith("Tensor.cuda")]


def test_vllm_device_is_left_and_reported():
    source = 'from vllm import LLM\nllm = LLM(model="m", device="cuda")\nx = torch.ones(2, device="cuda")\n'
    output, result = _migrate(source)
    assert 'LLM(model="m", device="cuda")' in output and 'torch.ones(2, device="npu")' in output
    assert [f.api for f in result.findings if f.report == Report.UNSUPPORTED] == ["device='cuda'"]


def test_ray_gpu_resources_that_stay_are_reported_with_the_npu_resource():
    # NPU110 rewrites the plain requests (tests/test_ray_resources.py); these pass resources or **kwargs
    source = ("import ray\n\n@ray.remote(num_gpus=1, resources={'ssd': 1})\ndef work(x):\n    return x\n\n"
              "ray.init(num_gpus=2, **cluster)\nref = work.options(num_gpus=1, resources=r).remote(3)\n"
              "plot(num_gpus=4)\n")
    output, result = _migrate(source)
    assert output == source
    rows = [f for f in result.findings if f.api == "ray num_gpus"]
    assert [f.start_line for f in rows] == [3, 7, 8]
    assert all('resources={"NPU": N}' in f.tip for f in rows)


@pytest.mark.parametrize("source", [
    'import torch\nkwargs = {"accelerator": "cpu"}\nif torch.cuda.is_available():\n    kwargs["accelerator"] = "cuda"\n',
    'import torch\nif torch.cuda.is_available():\n    fabric = L.Fabric(**{"accelerator": "cuda", "devices": 1})\n',
])
def test_a_device_test_choosing_a_gathered_accelerator_is_left_as_written(source):
    # renamed, the test would hand Lightning "cuda" on the NPU, which fails at start; as written it
    # falls back to the CPU there, as on any machine without CUDA
    output, result = _migrate(source)
    assert output == source
    assert any(f.api == "device test torch.cuda.is_available()" for f in result.findings)


@pytest.mark.parametrize("source, expected", [
    # keys that are no option: devices of torch
    ('import torch\nsettings = {"device": "cuda"}\nx = torch.ones(2, device=settings["device"])\n', '"device": "npu"'),
    ('import torch\nplacement["device"] = "cuda:1"\n', 'placement["device"] = "npu:1"'),
])
def test_other_keys_keep_their_device_strings_migrated(source, expected):
    output, _ = _migrate(source)
    assert expected in output
