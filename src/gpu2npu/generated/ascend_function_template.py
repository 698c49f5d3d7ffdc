"""NPU-friendly equivalents of PyTorch operators that torch_npu has no NPU kernel for.

Written by `gpu2npu -sim` into the migrated project (as ascend_function/__init__.py); the calls
that gpu2npu rewrote use it as `ascend_function.<name>(...)`.  Each function computes the same
values as the torch function it replaces (same arguments, same broadcasting and result dtype,
same special values), using only operators that run on the NPU, so the call no longer falls
back to the CPU.  Gradients follow from the operators used.

It also answers two CUDA questions that torch_npu answers otherwise: get_device_capability and
get_device_properties, whose CUDA compute capability an NPU does not have (see their docstrings).
"""
import math
import os

import torch

__all__ = ["heaviside", "fmax", "fmin", "hypot", "lcm", "entr", "nonzero_static", "huber_loss",
           "get_device_capability", "get_device_properties"]

# The torch API each function replaces.
REPLACES = {
    "torch.heaviside": "heaviside",
    "torch.fmax": "fmax",
    "torch.fmin": "fmin",
    "torch.hypot": "hypot",
    "torch.lcm": "lcm",
    "torch.special.entr": "entr",
    "torch.nonzero_static": "nonzero_static",
    "torch.nn.functional.huber_loss": "huber_loss",
}

# The CUDA questions each function answers for the NPU (rewritten whatever the release).
ANSWERS = {
    "torch.cuda.get_device_capability": "get_device_capability",
    "torch.cuda.get_device_properties": "get_device_properties",
}


def heaviside(input, values):
    """torch.heaviside: 0 where input < 0, values where input == 0, 1 where input > 0 (NaN -> 0)."""
    return torch.where(input == 0, values, (input > 0).to(input.dtype))


def fmax(input, other):
    """torch.fmax: the element-wise maximum, ignoring NaN unless both are NaN."""
    return torch.where(torch.isnan(other), input, torch.where(torch.isnan(input), other, torch.maximum(input, other)))


def fmin(input, other):
    """torch.fmin: the element-wise minimum, ignoring NaN unless both are NaN."""
    return torch.where(torch.isnan(other), input, torch.where(torch.isnan(input), other, torch.minimum(input, other)))


def hypot(input, other):
    """torch.hypot: sqrt(input**2 + other**2) without overflow in between; infinite if either
    is infinite.  Half-precision inputs are computed in float32 and rounded once, as torch does."""
    dtype = torch.result_type(input, other)
    if dtype in (torch.float16, torch.bfloat16):
        return hypot(input.float(), other.float()).to(dtype)
    a, b = torch.abs(input), torch.abs(other)
    big, small = torch.maximum(a, b), torch.minimum(a, b)
    ratio = small / torch.where(big == 0, torch.ones_like(big), big)
    result = big * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(a) | torch.isinf(b), torch.full_like(result, math.inf), result)


def lcm(input, other):
    """torch.lcm: the least common multiple of integers, 0 when either is 0."""
    divisor = torch.gcd(input, other)
    return torch.abs(input // torch.where(divisor == 0, torch.ones_like(divisor), divisor) * other)


def entr(input):
    """torch.special.entr: -x * ln(x) for x > 0, 0 at 0, -inf for x < 0, NaN for NaN."""
    positive = input > 0
    safe = torch.where(positive, input, torch.ones_like(input))
    value = -safe * torch.log(safe)
    value = torch.where(positive, value,
                        torch.where(input == 0, torch.zeros_like(value), torch.full_like(value, -math.inf)))
    return torch.where(torch.isnan(input), input.to(value.dtype), value)


def nonzero_static(input, *, size, fill_value=-1):
    """torch.nonzero_static: the indices of the first `size` non-zero elements, padded with
    `fill_value` rows when there are fewer."""
    found = torch.nonzero(input)
    if found.shape[0] >= size:
        return found[:size]
    padding = torch.full((size - found.shape[0], found.shape[1]), fill_value, dtype=found.dtype, device=found.device)
    return torch.cat([found, padding])


def huber_loss(input, target, reduction="mean", delta=1.0):
    """torch.nn.functional.huber_loss: 0.5 * d**2 where |d| < delta, else delta * (|d| - delta / 2),
    with d = input - target; reduced by "mean", "sum" or "none"."""
    difference = torch.abs(input - target)
    loss = torch.where(difference < delta, 0.5 * difference * difference, delta * (difference - 0.5 * delta))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def get_device_capability(device=None):
    """torch.cuda.get_device_capability for an NPU, which has no CUDA compute capability.  Code
    asks it to decide on features: from (8, 0) it uses bfloat16 (and fused attention, TF32).
    The answer is TORCH_NPU_DEVICE_CAPABILITY ("major.minor") where it is set, as torch_npu 2.7.1
    and later read it; otherwise (8, 0) where the NPU computes bfloat16 (Atlas A2 and later) and
    (7, 0) where it does not.  `device` chooses nothing: every NPU of a machine is the same."""
    import torch_npu

    configured = os.environ.get("TORCH_NPU_DEVICE_CAPABILITY")
    if configured:
        major, _, minor = configured.strip().partition(".")
        return int(major), int(minor or 0)
    return (8, 0) if torch_npu.npu.is_bf16_supported() else (7, 0)


class _DeviceProperties:
    """torch_npu's properties of one NPU (name, total_memory, ...) with `major` and `minor` from
    get_device_capability.  CUDA's multiprocessor fields have no NPU meaning: reading one raises
    AttributeError, naming the NPU's own fields."""

    def __init__(self, properties):
        self._properties = properties
        self.major, self.minor = get_device_capability()

    def __getattr__(self, name):
        try:
            return getattr(self._properties, name)
        except AttributeError:
            raise AttributeError(f"an NPU's properties have no {name} (a CUDA device's field); they hold "
                                 f"{', '.join(n for n in dir(self._properties) if not n.startswith('_'))}") from None

    def __repr__(self):
        return f"{self._properties!r} (major={self.major}, minor={self.minor})"


def get_device_properties(device=None):
    """torch.cuda.get_device_properties for an NPU: torch_npu's properties, and `major`/`minor` as
    get_device_capability answers them."""
    import torch_npu

    return _DeviceProperties(torch_npu.npu.get_device_properties(device))
