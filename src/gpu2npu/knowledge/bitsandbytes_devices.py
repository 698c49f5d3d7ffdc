"""Which bitsandbytes releases run on an NPU, and through which transformers releases (read by the
rows of bitsandbytes' imports and calls, NPU916, and of its front doors, NPU912).

Read off the released wheels: bitsandbytes lists "npu" among its `supported_torch_devices` from
0.46.0, and registers plain PyTorch implementations ("default" kernels, for any device it has no
kernels of its own for) of its int8 operators from 0.46.0, of its 4-bit and blockwise
quantization from 0.47.0 and of its 32-bit optimizer step from 0.48.0.  Its 8-bit and paged
optimizers have CUDA (and XPU) kernels only, in every release up to 0.49.1.  Those releases need
torch 2.2 (0.47) or 2.3 (0.48 on): with an older torch, pip installs none.  transformers checks a
bitsandbytes of that kind against the devices it supports from 4.45.0 on (4.44 and earlier raise
"No GPU found" without CUDA before loading anything), and loads a 4-bit model given no device_map
onto the NPU from 4.48.0 on, an 8-bit one from 5.0.0 on (before, onto the CPU, where it would
train).
"""
from __future__ import annotations

import functools
import re
from typing import Optional

from .versions import allowed_releases, release_numbers

# The first bitsandbytes whose 4-bit and 8-bit layers and functions all have plain PyTorch kernels.
PYTORCH_KERNELS_FROM = (0, 47)
# The torch each release from there needs (its Requires-Dist): (release from, torch from), newest first.
_TORCH_NEEDED = (((0, 48), (2, 3)), ((0, 47), (2, 2)))
# The first transformers that quantizes with such a bitsandbytes onto the NPU: 4-bit, 8-bit.
TRANSFORMERS_FROM = {False: (4, 48), True: (5, 0)}

# The row of a quantized loading where the pins do not run it on the NPU (NPU912: the Python
# code's load_in_4bit=True and BitsAndBytesConfig, a launch script's --load_in_4bit).
QUANTIZED_LOADING_TIP = (
    "4/8-bit loading quantizes the weights with bitsandbytes' kernels, CUDA's only before bitsandbytes 0.47: pin "
    "bitsandbytes>=0.47 and transformers>=4.48 (5.0 for 8-bit; bitsandbytes 0.47 needs torch 2.2: its plain PyTorch "
    "kernels then run on the NPU, unfused), "
    "or load the model in bfloat16 (torch_dtype=torch.bfloat16) and fine-tune it with LoRA without "
    "quantization (more device memory: about 2 bytes per weight instead of 0.5-1)")

# The releases a requirement is tried on, with any it names itself.
_BITSANDBYTES_TRIED = ("0.37.0", "0.39.0", "0.41.3", "0.42.0", "0.43.1", "0.43.3", "0.44.1", "0.45.5", "0.46.0",
                       "0.46.1", "0.47.0", "0.48.2", "0.49.1", "1.0.0")
_TRANSFORMERS_TRIED = tuple(f"4.{minor}.0" for minor in range(30, 58)) + ("4.44.2", "4.47.1", "4.57.6", "5.0.0",
                                                                          "6.0.0")

# The parts of bitsandbytes those kernels serve: its layers, its functions and the package itself
# (`bnb.matmul_4bit`); not its optimizers (bitsandbytes.optim: the 8-bit and paged ones are CUDA's),
# its Triton kernels or its research code.
_SERVED = re.compile(r"bitsandbytes(?:\.(?:nn|functional|autograd)(?:\..*)?|\.matmul(?:_4bit)?|\.MatmulLtState)?$")


def _every_allowed_from(spec: Optional[str], tried, first) -> bool:
    """Whether every release that `spec` allows (of `tried`, and those it names) is `first` or later."""
    allowed = allowed_releases(spec, tried)
    return bool(allowed) and all(release_numbers(version) >= first for version in allowed)


def _installs_with(release: str, torch_version: str) -> bool:
    number = release_numbers(release)
    return next((release_numbers(torch_version)[:2] >= torch for since, torch in _TORCH_NEEDED if number >= since), True)


@functools.lru_cache(maxsize=8)
def runs_on_npu(bitsandbytes: Optional[str], torch_version: str) -> bool:
    """Whether every bitsandbytes release the project's requirement `bitsandbytes` allows runs its
    layers and functions on the NPU, and one of them installs beside torch `torch_version` (None:
    no pin, which decides nothing)."""
    return (_every_allowed_from(bitsandbytes, _BITSANDBYTES_TRIED, PYTORCH_KERNELS_FROM)
            and any(_installs_with(release, torch_version) for release in allowed_releases(bitsandbytes, _BITSANDBYTES_TRIED)))


def served(name: str) -> bool:
    """Whether the qualified `name` of bitsandbytes is one that its plain PyTorch kernels serve."""
    return _SERVED.match(name) is not None


def package_note(name: str, bitsandbytes: Optional[str], torch_version: str) -> Optional[str]:
    """The note for a use of bitsandbytes' `name` where the project's pin runs it on the NPU beside
    torch `torch_version`; None where it does not (the row stays a CUDA-only package's)."""
    if not served(name) or not runs_on_npu(bitsandbytes, torch_version):
        return None
    return (f"bitsandbytes{bitsandbytes}, which the project pins, runs its 4-bit and 8-bit layers and functions on "
            "the NPU with plain PyTorch kernels (0.47 and later): it works unfused, slower than bf16 weights; its "
            "8-bit and paged optimizers still need CUDA")


def requirement_note(name: str, spec: Optional[str], torch_version: str) -> Optional[str]:
    """The note for a requirement on bitsandbytes (`name` normalised) whose every release `spec`
    allows runs on the NPU (beside torch `torch_version`); None for any other."""
    if name != "bitsandbytes" or not runs_on_npu(spec or None, torch_version):
        return None
    return (f"bitsandbytes{spec}: every release it allows runs its 4-bit and 8-bit layers and functions on the NPU "
            "with plain PyTorch kernels (0.47 and later), unfused; its 8-bit and paged optimizers still need CUDA")


@functools.lru_cache(maxsize=16)
def loading_note(bitsandbytes: Optional[str], transformers: Optional[str], torch_version: str,
                 eight_bit: bool = False) -> Optional[str]:
    """The note for transformers' quantized loading (BitsAndBytesConfig, load_in_4bit; `eight_bit`:
    load_in_8bit, or either) where the project's pins run it on the NPU beside torch
    `torch_version`; None where they do not, or do not say."""
    first = TRANSFORMERS_FROM[eight_bit]
    if not runs_on_npu(bitsandbytes, torch_version) or not _every_allowed_from(transformers, _TRANSFORMERS_TRIED, first):
        return None
    return (f"bitsandbytes{bitsandbytes} and transformers{transformers}, which the project pins, quantize the "
            f"weights on the NPU with bitsandbytes' plain PyTorch kernels (bitsandbytes 0.47 and transformers "
            f"{'.'.join(map(str, first))} on): it runs, unfused, slower than bf16 weights with LoRA where the memory "
            "allows them")
