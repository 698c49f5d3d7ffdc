"""xformers' memory-efficient attention and SwiGLU on Ascend NPUs, written by gpu2npu into a
migrated project.

The migrated code imports this package where it imported `xformers`: `ops.memory_efficient_attention`
takes xformers' arguments and layout and computes the same attention with
torch.nn.functional.scaled_dot_product_attention, which torch_npu runs on the NPU; `ops.SwiGLU`
and `ops.swiglu` compute xformers' feed-forward with torch_npu.npu_swiglu.
"""
from . import ops

# The xformers release whose signatures this package follows.
__version__ = "0.0.28"

__all__ = ["ops"]
