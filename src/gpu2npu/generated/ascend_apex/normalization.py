"""apex.normalization's modules with apex's constructors and parameters, on the NPU."""
import numbers

import torch
import torch_npu


def _shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class FusedRMSNorm(torch.nn.Module):
    """x / sqrt(mean(x ** 2 over the normalized dims) + eps) * weight, as apex's FusedRMSNorm:
    same arguments and defaults (eps=1e-5), same parameter (`weight`, ones), so that checkpoints
    load unchanged.  One torch_npu.npu_rms_norm kernel; the weight is used in the input's dtype
    and the output has the input's dtype.  memory_efficient only chose what apex kept for the
    backward pass: the results are the same without it."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, memory_efficient=False):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.memory_efficient = memory_efficient
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.empty(*self.normalized_shape))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            torch.nn.init.ones_(self.weight)

    def forward(self, input):
        if input.shape[-len(self.normalized_shape):] != self.normalized_shape:
            raise RuntimeError(f"FusedRMSNorm over {self.normalized_shape}: the input's last dimensions are "
                               f"{tuple(input.shape[-len(self.normalized_shape):])}")
        if self.weight is None:
            weight = torch.ones(self.normalized_shape, dtype=input.dtype, device=input.device)
        else:
            weight = self.weight.to(input.dtype)
        return torch_npu.npu_rms_norm(input, weight, epsilon=self.eps)[0]

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class FusedLayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm with apex's constructor (its fourth argument is memory_efficient, which
    only chose what apex kept for the backward pass)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, memory_efficient=False):
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)
        self.memory_efficient = memory_efficient


class MixedFusedRMSNorm(FusedRMSNorm):
    """apex's MixedFusedRMSNorm: FusedRMSNorm whose weight keeps its own dtype (float32 master
    weights under bf16 activations, as Megatron keeps them) and whose output has the weight's
    dtype.  apex computes in float32 and rounds once to the weight's dtype; here both operands go
    to the wider of the two dtypes, which holds every value of the narrower one exactly, and the
    result is rounded once to the weight's dtype."""

    def __init__(self, normalized_shape, eps=1e-5, **kwargs):
        if not kwargs.pop("elementwise_affine", True):
            raise RuntimeError("MixedFusedRMSNorm does not support `elementwise_affine = False`")
        super().__init__(normalized_shape, eps=eps, elementwise_affine=True, **kwargs)

    def forward(self, input):
        if input.shape[-len(self.normalized_shape):] != self.normalized_shape:
            raise RuntimeError(f"MixedFusedRMSNorm over {self.normalized_shape}: the input's last dimensions "
                               f"are {tuple(input.shape[-len(self.normalized_shape):])}")
        compute = torch.promote_types(input.dtype, self.weight.dtype)
        output = torch_npu.npu_rms_norm(input.to(compute), self.weight.to(compute), epsilon=self.eps)[0]
        return output.to(self.weight.dtype)
