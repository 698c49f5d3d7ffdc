"""torch_npu's convolution operators, computed on the CPU.  torch_npu documents them as torch's
convolutions with every argument given and the transposed ones' arguments in another order:

npu_conv2d / npu_conv3d / npu_convolution(input, weight, bias, stride, padding, dilation, groups):
  the 2-D, 3-D, or (by the input's rank) 2-D or 3-D convolution; weight (out, in / groups, k...).
npu_conv_transpose2d / npu_convolution_transpose(input, weight, bias, padding, output_padding,
  stride, dilation, groups): the transposed convolution, weight (in, out / groups, k...); padding
  means dilation * (kernel_size - 1) - padding zeros on each side, as torch's conv_transpose.
"""
import torch.nn.functional as F

__all__ = ["npu_conv2d", "npu_conv3d", "npu_convolution", "npu_conv_transpose2d", "npu_convolution_transpose"]


def npu_conv2d(input, weight, bias, stride, padding, dilation, groups):
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def npu_conv3d(input, weight, bias, stride, padding, dilation, groups):
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def npu_convolution(input, weight, bias, stride, padding, dilation, groups):
    convolve = F.conv3d if input.dim() == 5 else F.conv2d
    return convolve(input, weight, bias, stride, padding, dilation, groups)


def npu_conv_transpose2d(input, weight, bias, padding, output_padding, stride, dilation, groups):
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def npu_convolution_transpose(input, weight, bias, padding, output_padding, stride, dilation, groups):
    convolve = F.conv_transpose3d if input.dim() == 5 else F.conv_transpose2d
    return convolve(input, weight, bias, stride, padding, output_padding, groups, dilation)
