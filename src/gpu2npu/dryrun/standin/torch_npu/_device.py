"""Device-argument helpers shared by the stand-in's patches (see package docstring)."""

import torch

CPU = torch.device("cpu")


def is_npu_device(d):
    """True for anything that names an NPU: "npu", "npu:1", torch.device("npu", 1)."""
    if isinstance(d, torch.device):
        return d.type == "npu"
    if isinstance(d, str):
        return d == "npu" or d.startswith("npu:")
    return False


def is_npu_or_index(d):
    """Like is_npu_device, but a bare int index also counts: with real torch_npu the
    accelerator is the NPU, so ``x.to(0)`` / ``device=rank`` mean ``npu:<i>``."""
    if isinstance(d, int) and not isinstance(d, bool):
        return True
    return is_npu_device(d)


def npu_index(d, default=None):
    """Index named by an NPU spec (int, "npu:1", torch.device); ``default`` if none."""
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    if isinstance(d, str):
        d = torch.device(d)
    if isinstance(d, torch.device):
        if d.type != "npu":
            raise ValueError(f"Expected an npu device, got {d}")
        return default if d.index is None else d.index
    if d is None:
        return default
    raise TypeError(f"Invalid npu device spec: {d!r}")


def map_device(d):
    return CPU if is_npu_or_index(d) else d


def map_kwargs(kwargs, key="device"):
    d = kwargs.get(key)
    if d is not None and is_npu_or_index(d):
        kwargs[key] = CPU
    return kwargs
