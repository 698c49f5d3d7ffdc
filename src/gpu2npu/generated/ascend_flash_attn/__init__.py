"""flash-attn's public attention API on Ascend NPUs, written by gpu2npu into a migrated project.

The migrated code imports this package where it imported `flash_attn`: the functions take the
arguments of flash-attn 2.x (`flash_attn_func`, `flash_attn_varlen_func`, their packed forms, the
1.x `unpadded` names, and the `bert_padding` helpers) and compute the same attention with
`torch_npu.npu_fusion_attention`.  What that operator cannot do (softcap, ALiBi slopes, the
attention probabilities, a paged KV cache) raises NotImplementedError at the call.
"""
from . import bert_padding, flash_attn_interface
from .flash_attn_interface import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func,
                                   flash_attn_unpadded_func, flash_attn_unpadded_kvpacked_func,
                                   flash_attn_unpadded_qkvpacked_func, flash_attn_varlen_func,
                                   flash_attn_varlen_kvpacked_func, flash_attn_varlen_qkvpacked_func)

# The flash-attn release whose signatures this package follows (code that checks the version
# of `flash_attn` reads this).
__version__ = "2.6.3"

__all__ = [
    "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func", "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func",
    "flash_attn_unpadded_func", "flash_attn_unpadded_kvpacked_func", "flash_attn_unpadded_qkvpacked_func",
]
