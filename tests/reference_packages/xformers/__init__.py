"""A CPU reference of xformers' memory-efficient attention and SwiGLU, for running unmigrated fixtures in the
tests (the real kernels need CUDA).  Written from xformers' documented reference computation; it
shares no code with gpu2npu's ascend_xformers."""
from . import ops
