"""A framework's CUDA implementation of a device interface (rules/cuda_implementations.py) is left
whole, with one note; a class that merely uses CUDA is migrated as before."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.records.change import Report
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "accelerators/cuda.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


BODY = ("    def setup_device(self, device):\n        if device.type != \"cuda\":\n            raise ValueError(device)\n"
        "        torch.cuda.set_device(device)\n\n    @staticmethod\n    def is_available():\n"
        "        return torch.cuda.is_available()\n\n    @staticmethod\n    def name():\n        return \"cuda\"\n")


@pytest.mark.parametrize("head, name", [
    # Lightning-style, DeepSpeed-style, vLLM-style (a base class of its own, inside a try block)
    ("import torch\nfrom lightning.fabric.accelerators import Accelerator\n\n\nclass CUDAAccelerator(Accelerator):\n",
     "CUDAAccelerator"),
    ("import torch\nfrom .abstract_accelerator import DeepSpeedAccelerator\n\n\n"
     "class CUDA_Accelerator(DeepSpeedAccelerator):\n", "CUDA_Accelerator"),
    ("import torch\nfrom .interface import Platform\n\ntry:\n    import pynvml\nexcept ImportError:\n    pynvml = None\n"
     "else:\n    class CudaPlatformBase(Platform):\n", "CudaPlatformBase"),
    ("import torch\nimport vllm.platforms.interface as interface\n\n\nclass NvidiaPlatform(interface.Platform):\n",
     "NvidiaPlatform"),
    ("import torch\nfrom .base import DeviceCommunicatorBase\n\n\nclass CudaCommunicator(DeviceCommunicatorBase):\n",
     "CudaCommunicator"),
])
def test_a_framework_s_cuda_implementation_is_left_whole_with_a_note(head, name):
    indent = "    " if head.endswith("Base(Platform):\n") else ""
    source = head + "".join(indent + line + "\n" if line else "\n" for line in BODY.split("\n")[:-1])
    output, result = _migrate(source)
    assert output == source
    notes = [f for f in result.findings if f.api == f"class {name}"]
    assert len(notes) == 1 and notes[0].report == Report.NOTE and notes[0].rule == "NPU915"
    assert "CUDA implementation" in notes[0].tip and "NPU implementation" in notes[0].tip
    assert not [f for f in result.findings if f.report == Report.UNSUPPORTED]


@pytest.mark.parametrize("head", [
    # a class that uses CUDA but implements no device interface, or implements one for no CUDA
    "import torch\n\n\nclass CUDAGraphRunner(torch.nn.Module):\n",
    "import torch\n\n\nclass GpuTimer:\n",
    "import torch\nfrom lightning.fabric.accelerators import Accelerator\n\n\nclass MyAccelerator(Accelerator):\n",
    "import torch\nfrom trainer import Trainer\n\n\nclass GPUTrainer(Trainer):\n",
])
def test_a_class_that_is_no_cuda_implementation_is_migrated(head):
    output, result = _migrate(head + BODY)
    assert "torch_npu.npu.set_device(device)" in output and 'return "npu"' in output
    assert not [f for f in result.findings if f.api.startswith("class ")]


def test_the_module_s_functions_it_calls_are_part_of_it():
    # Lightning's CUDAAccelerator.is_available() counts with num_cuda_devices(): migrated alone, the
    # class would find the NPUs and claim them under CUDA's name
    source = ("import torch\nfrom lightning.fabric.accelerators import Accelerator\n\n\n"
              "class CUDAAccelerator(Accelerator):\n    @staticmethod\n    def is_available():\n"
              "        return num_cuda_devices() > 0\n\n\ndef num_cuda_devices():\n    return _count()\n\n\n"
              "def _count():\n    return torch.cuda.device_count()\n\n\ndef sync():\n    torch.cuda.synchronize()\n")
    output, result = _migrate(source)
    assert "return torch.cuda.device_count()" in output and "torch_npu.npu.synchronize()" in output
    notes = sorted(f.api for f in result.findings if f.rule == "NPU915")
    assert notes == ["class CUDAAccelerator", "function _count", "function num_cuda_devices"]
    assert any("which CUDAAccelerator calls, is part of" in f.tip for f in result.findings if f.api == "function _count")


def test_the_code_beside_it_is_migrated():
    source = ("import torch\nfrom lightning.fabric.accelerators import Accelerator\n\n\n"
              "class CUDAAccelerator(Accelerator):\n" + BODY + "\n\ndef sync():\n    torch.cuda.synchronize()\n")
    output, _ = _migrate(source)
    assert output.count("torch.cuda.") == 2 and "torch_npu.npu.synchronize()" in output


def test_the_module_s_functions_named_for_cuda_are_part_of_it():
    # Lightning's is_cuda_available() beside CUDAAccelerator, asked by its profiler before it records
    # CUDA activity: migrated, it says yes on an Ascend machine; find_usable_cuda_devices() probes
    # "cuda" devices through a helper of its own
    source = ("import torch\nfrom lightning.fabric.accelerators import Accelerator\n\n\n"
              "class CUDAAccelerator(Accelerator):\n    @staticmethod\n    def is_available():\n"
              "        return torch.cuda.device_count() > 0\n\n\ndef is_cuda_available():\n"
              "    return torch.cuda.is_available()\n\n\ndef find_usable_cuda_devices(n):\n"
              "    return [i for i in range(n) if _probe(i)]\n\n\ndef _probe(i):\n"
              "    return torch.tensor(0, device=torch.device(\"cuda\", i)) is not None\n\n\n"
              "def _get_gpu_id(i):\n    return os.environ[\"CUDA_VISIBLE_DEVICES\"].split(\",\")[i]\n\n\n"
              "def sync():\n    torch.cuda.synchronize()\n")
    output, result = _migrate(source)
    assert output.count("torch.cuda.") == 2 and '"cuda"' in output and '"CUDA_VISIBLE_DEVICES"' in output
    assert "torch_npu.npu.synchronize()" in output
    notes = sorted(f.api for f in result.findings if f.rule == "NPU915")
    assert notes == ["class CUDAAccelerator", "function _get_gpu_id", "function _probe",
                     "function find_usable_cuda_devices", "function is_cuda_available"]
    assert any("named for CUDA beside CUDAAccelerator, is part of" in f.tip
               for f in result.findings if f.api == "function is_cuda_available")
    assert any("which find_usable_cuda_devices calls, is part of" in f.tip for f in result.findings if f.api == "function _probe")


@pytest.mark.parametrize("name", ["is_cuda_available", "cuda_sync", "get_gpu_memory"])
def test_a_function_named_for_cuda_without_such_a_class_is_migrated(name):
    source = f"import torch\n\n\nclass GpuTimer:\n    pass\n\n\ndef {name}():\n    return torch.cuda.is_available()\n"
    output, result = _migrate(source)
    assert "torch_npu.npu.is_available()" in output
    assert not [f for f in result.findings if f.rule == "NPU915"]
