"""Words that stand beside "cuda" in code: the devices torch knows, and the labels of GPU platforms,
builds and implementations that no torch device is.

A "cuda" among such labels (`("cpu", "cuda", "vulkan", "metal")`, `Literal["torch", "cuda",
"proton"]`, `backend == "rocm"` elsewhere for the same variable) names CUDA as a platform or an
implementation: an installer's bundle, a profiler, a kernel library.  Renamed to "npu", it no longer
matches what the rest of the program (or a manifest, an asset's name) says.
"""
from __future__ import annotations

import re

# What an option that chooses a device offers: device types and the words for a choice of one.
DEVICE_CHOICES = frozenset({"cpu", "cuda", "gpu", "npu", "mps", "xpu", "xla", "tpu", "hpu", "meta", "auto", "mtia",
                            "ipu", "hip", "musa", "mlu", "none"})

# Labels of GPU vendors, platforms, graphics APIs and kernel implementations: never a torch device.
PLATFORM_LABELS = frozenset({
    "rocm", "nvidia", "amd", "intel", "apple", "vulkan", "metal", "opencl", "sycl", "dml", "directml", "webgpu",
    "wgpu", "tensorrt", "trt", "openvino", "coreml", "onnxruntime", "triton", "proton", "cutlass", "cudnn",
    "cublas", "hipblas", "llvm", "ptx", "mlx", "torch", "eager", "inductor", "flashinfer", "cutile", "cute",
    "cutedsl",
})
# The implementations among them that run on NVIDIA's GPUs alone (CUTLASS and its CuTe DSL, cuTile,
# cuDNN, cuBLAS, TensorRT, FlashInfer, PTX): the devices one declares are CUDA's, whatever runs.
CUDA_ONLY_IMPLEMENTATIONS = frozenset({"cutlass", "cute", "cutedsl", "cutile", "cudnn", "cublas", "tensorrt", "trt",
                                       "flashinfer", "ptx"})
# A platform's build: CUDA 12 ("cuda12", "cuda-12.4"), a wheel tag ("cu121"), a ROCm release.
_VERSIONED_PLATFORM = re.compile(r"^(cuda[-_]?\d[\d.]*|cu\d{2,3}|rocm[-_]?\d[\d.]*)$")


def is_platform_label(text: object) -> bool:
    """Whether `text` labels a GPU platform, build or implementation (no torch device)."""
    return isinstance(text, str) and (text.lower() in PLATFORM_LABELS or _VERSIONED_PLATFORM.match(text.lower()) is not None)


# A framework's class for CUDA behind its device interface (Lightning's CUDAAccelerator, DeepSpeed's
# CUDA_Accelerator, vLLM's CudaPlatformBase, CudaCommunicator): named for CUDA or NVIDIA's GPUs,
# with the interface's last word.
CUDA_CLASS_WORDS = "CUDA|Cuda|GPU|Gpu|NVIDIA|Nvidia"
_CUDA_CLASS_NAME = re.compile(rf"(^|_)({CUDA_CLASS_WORDS})(?=[A-Z_0-9]|$)")
_INTERFACE_NAME = re.compile(r"(Accelerator|Platform|Communicator)(Base)?$")


def is_named_for_cuda(class_name: str) -> bool:
    """Whether a class's name names CUDA or NVIDIA's GPUs (CUDAGraphRunner, GpuTimer, CUDA_Accelerator)."""
    return _CUDA_CLASS_NAME.search(class_name) is not None


def interface_of(base_name: str):
    """The device interface a base class's name says (`Accelerator`, `PlatformBase`), or None."""
    found = _INTERFACE_NAME.search(base_name)
    return found.group(0) if found else None


def names_a_cuda_implementation(class_name: str) -> bool:
    """Whether a class's name alone says it is a framework's CUDA implementation of a device
    interface (`CUDAAccelerator`, `CudaPlatform`): where the class is not in sight (imported)."""
    return is_named_for_cuda(class_name) and interface_of(class_name) is not None
