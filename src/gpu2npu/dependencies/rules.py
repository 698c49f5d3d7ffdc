"""The dependency rules as `gpu2npu rules` lists them and `gpu2npu explain` shows them: codes,
summaries and examples (each example is run by the tests, with -v 2.1.0 and no Python file
importing anything).  The decisions themselves are in `decide`, the data in `table`."""
from __future__ import annotations

from ..script_rules.base import ScriptExample
from . import decide


class DependencyRule:
    code = ""
    summary = ""
    fix_safety = "safe"
    examples: tuple = ()
    unchanged: tuple = ()


class TorchPinnedForNpu(DependencyRule):
    """torch_npu is built for one torch release (the CPU build on x86): the project's torch
    requirement becomes that release, and torch_npu of the chosen release (-v) is added after it,
    with the modules it imports without declaring them (numpy for some releases).  The marker of
    the torch line is kept on both.  A pin that differs from the torch the project asked for is
    also a warning of the run: the reports speak of the chosen release.

    In a file that pins hashes, the changed and added lines have none: regenerate them."""

    code = decide.TORCH_RULE
    summary = "dependencies: torch pinned to the release torch_npu -v is built for; torch_npu added"
    examples = (
        ScriptExample("torch==2.0.1+cu118  # cluster build\n",
                      "torch==2.1.0  # cluster build\ntorch_npu==2.1.0.post17\nnumpy\n", path="requirements.txt"),
        ScriptExample('[project]\ndependencies = [\n    "torch>=2.0",\n]\n',
                      '[project]\ndependencies = [\n    "torch==2.1.0",\n    "torch_npu==2.1.0.post17",\n    "numpy",\n]\n',
                      path="pyproject.toml"),
    )
    unchanged = ("torch==2.1.0\ntorch_npu==2.1.0.post17\nnumpy\n",)


class TorchvisionPaired(DependencyRule):
    """torchvision and torchaudio are built for one torch release each: they become the
    releases built for the torch that torch_npu needs.  Where no release is built for it
    (torchaudio after 2.11), the requirement is kept and reported."""

    code = decide.PAIRED_RULE
    summary = "dependencies: torchvision/torchaudio pinned to the releases built for that torch"
    examples = (ScriptExample("torchvision==0.15.2+cu118\ntorchaudio>=2.0\n", "torchvision==0.16.0\ntorchaudio==2.1.0\n",
                              path="requirements.txt"),)


class CudaOnlyPackageRemoved(DependencyRule):
    """A package with CUDA kernels only (flash-attn, xformers, triton, bitsandbytes, apex, cupy,
    pynvml, nvidia-* CUDA libraries, ... the table data/dependencies.json lists them) is
    commented out where no migrated file imports its modules anymore (gpu2npu points flash_attn,
    xformers, apex and bitsandbytes imports at generated packages).  Where a migrated file still
    imports it, it is kept and reported with the files; packages that run on Ascend through a
    plugin (vllm) are reported with the way."""

    code = decide.CUDA_ONLY_RULE
    summary = "dependencies: CUDA-only packages removed where no migrated file imports them, else reported"
    examples = (
        ScriptExample("flash-attn==2.5.8\nnvidia-cudnn-cu12==8.9.2.26\n",
                      "# flash-attn==2.5.8  # removed by gpu2npu: CUDA-only\n"
                      "# nvidia-cudnn-cu12==8.9.2.26  # removed by gpu2npu: CUDA-only\n", path="requirements.txt"),
        ScriptExample("vllm==0.9.1\n", "vllm==0.9.1\n", path="requirements.txt", reported=("vllm",)),
    )


class CpuTwin(DependencyRule):
    """A CUDA build of a package that has a build without CUDA under another name, with the same
    module (faiss-gpu -> faiss-cpu, onnxruntime-gpu -> onnxruntime): the name changes, the
    version constraint stays."""

    code = decide.TWIN_RULE
    summary = "dependencies: CUDA builds replaced by their CPU twins (faiss-gpu -> faiss-cpu)"
    examples = (ScriptExample("faiss-gpu==1.7.2\n", "faiss-cpu==1.7.2\n", path="requirements.txt"),)


class CudaWheelIndex(DependencyRule):
    """PyTorch's index of CUDA builds (download.pytorch.org/whl/cu118, ...) becomes its index of
    CPU builds: torch_npu requires the CPU build of torch on x86.  NVIDIA's own index
    (pypi.nvidia.com) is reported."""

    code = decide.INDEX_RULE
    summary = "dependencies: CUDA wheel indexes -> PyTorch's CPU index"
    examples = (ScriptExample("--extra-index-url https://download.pytorch.org/whl/cu121\n",
                              "--extra-index-url https://download.pytorch.org/whl/cpu\n", path="requirements.txt"),)


class CondaCudaPackages(DependencyRule):
    """In a conda environment file, the nvidia channel and conda's CUDA packages (pytorch-cuda,
    cudatoolkit, cudnn, nccl) are commented out, and conda's pytorch/torchvision/torchaudio too:
    torch_npu installs with pip on the pip build of torch, so torch, torch_npu and torchvision
    are listed in the environment's pip section (made where there is none)."""

    code = decide.CONDA_RULE
    summary = "dependencies: conda's CUDA packages and nvidia channel removed; torch and torch_npu from pip"
    examples = (ScriptExample(
        "channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - python=3.10\n  - pytorch=2.0.1\n  - pytorch-cuda=11.8\n",
        "channels:\n  - pytorch\n  # - nvidia  # removed by gpu2npu\ndependencies:\n  - python=3.10\n"
        "  # - pytorch=2.0.1  # removed by gpu2npu\n  # - pytorch-cuda=11.8  # removed by gpu2npu\n"
        "  - pip\n  - pip:\n    - torch==2.1.0\n    - torch_npu==2.1.0.post17\n    - numpy\n",
        path="environment.yml"),)


class DockerCudaImage(DependencyRule):
    """A Dockerfile built FROM a CUDA image (nvidia/cuda, pytorch/pytorch:*-cuda*, nvcr.io), or
    installing CUDA-only packages, is reported with the Ascend way, never rewritten: the Ascend
    image depends on the NPU model and CANN release of the machine."""

    code = decide.DOCKER_RULE
    summary = "dependencies: Dockerfiles with CUDA base images or CUDA packages reported"
    fix_safety = "report"
    examples = (ScriptExample("FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install flash-attn\n",
                              "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install flash-attn\n",
                              path="Dockerfile",
                              reported=("FROM nvidia/cuda:12.1.0-devel-ubuntu22.04", "pip install flash-attn")),)


DEPENDENCY_RULES = (TorchPinnedForNpu, TorchvisionPaired, CudaOnlyPackageRemoved, CpuTwin, CudaWheelIndex,
                    CondaCudaPackages, DockerCudaImage)
DEPENDENCY_RULES_BY_CODE = {rule.code: rule for rule in DEPENDENCY_RULES}
