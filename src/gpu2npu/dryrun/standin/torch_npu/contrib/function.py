"""``torch_npu.contrib.function`` stand-in: the functions gpu2npu's advice names, with the results
torch_npu documents for them, computed by torch on the CPU; the others fail as not imitated."""

import torch as _torch

from .. import _names


def roll(input, shifts, dims):
    """torch.roll's result (torch_npu computes it with a faster kernel for swin's window shifts)."""
    return _torch.roll(input, shifts, dims)


def npu_fast_condition_index_put(x, condition, value):
    """`x[condition] = value`, in place, and x returned."""
    x[condition] = value
    return x


def matmul_transpose(tensor1, tensor2):
    """tensor1 @ tensor2 transposed in its last two dimensions."""
    return _torch.matmul(tensor1, tensor2.transpose(-2, -1))


_names.apply_filter(__name__, globals())
