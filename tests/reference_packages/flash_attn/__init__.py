"""A CPU reference of flash-attn 2.5's public functions, for running unmigrated fixtures in the
tests (the real flash-attn needs CUDA).  Written from flash-attn's documented contract with
torch's scaled_dot_product_attention; it shares no code with gpu2npu's ascend_flash_attn."""
from .flash_attn_interface import flash_attn_func, flash_attn_varlen_func, flash_attn_varlen_kvpacked_func

__version__ = "2.5.9"
