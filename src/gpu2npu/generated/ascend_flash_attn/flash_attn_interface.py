"""flash-attn's attention functions on torch_npu.npu_fusion_attention.

How each flash-attn argument is carried over (see the torch_npu API documentation of
npu_fusion_attention):
- layout: [batch, seqlen, heads, head_dim] tensors are "BSND"; the varlen forms' [total, heads,
  head_dim] tensors are "TND" with the cumulative sequence ends (cu_seqlens without its leading 0)
  as actual_seq_qlen / actual_seq_kvlen;
- softmax_scale: passed as scale, 1/sqrt(head_dim) when None (the NPU operator's own default is 1);
- dropout_p: keep_prob = 1 - dropout_p;
- causal: flash-attn aligns the causal mask to the bottom-right corner when the query is shorter
  than the keys: sparse_mode 3 (rightDownCausal) with the operator's 2048x2048 mask;
- window_size (left, right): sparse_mode 4 (band, aligned to the bottom-right corner as flash-attn's
  window is) with pre_tockens = left and next_tockens = right (-1: the operator's unlimited
  default) and the same 2048x2048 mask: no mask of the sequence's size is built (a dense
  one would take seqlen_q x seqlen_k bytes, a gigabyte at 32k);
- fewer key/value heads than query heads (GQA, MQA): passed as they are; head_num is the query's.
"""
import math

import torch
import torch_npu

__all__ = [
    "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func", "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func",
    "flash_attn_unpadded_func", "flash_attn_unpadded_kvpacked_func", "flash_attn_unpadded_qkvpacked_func",
]

RIGHT_DOWN_CAUSAL = 3  # sparse_mode: lower triangle aligned to the bottom-right corner
BAND = 4  # sparse_mode: keys from pre_tockens before to next_tockens after the bottom-right diagonal
UNLIMITED = 2147483647  # pre_tockens / next_tockens: the operator's default, no limit
_COMPRESSED_MASKS = {}  # device -> the 2048x2048 upper triangle the causal and band sparse modes take


def _causal_mask(device):
    mask = _COMPRESSED_MASKS.get(device)
    if mask is None:
        mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=device), diagonal=1)
        _COMPRESSED_MASKS[device] = mask
    return mask


def _refuse(function, softcap, alibi_slopes, return_attn_probs, block_table=None):
    missing = []
    if softcap:
        missing.append(f"softcap={softcap} (tanh capping of the scores)")
    if alibi_slopes is not None:
        missing.append("alibi_slopes (ALiBi biases: pass them as pse to torch_npu.npu_fusion_attention yourself)")
    if return_attn_probs:
        missing.append("return_attn_probs=True (the operator returns no attention probabilities)")
    if block_table is not None:
        missing.append("block_table (a paged KV cache)")
    if missing:
        raise NotImplementedError(
            f"{function} on the NPU (torch_npu.npu_fusion_attention) cannot take " + "; ".join(missing))


def _attend(q, k, v, dropout_p, softmax_scale, causal, window_size, cu_seqlens_q=None, cu_seqlens_k=None):
    head_dim = q.shape[-1]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
    left, right = window_size
    if causal:
        right = 0
    options = dict(scale=scale, keep_prob=1.0 - dropout_p)
    varlen = cu_seqlens_q is not None
    if varlen:
        options.update(input_layout="TND", actual_seq_qlen=[int(n) for n in cu_seqlens_q[1:].tolist()],
                       actual_seq_kvlen=[int(n) for n in cu_seqlens_k[1:].tolist()])
    else:
        options.update(input_layout="BSND")
    if left < 0 and right < 0:
        pass  # no mask
    elif left < 0 and right == 0:
        options.update(atten_mask=_causal_mask(q.device), sparse_mode=RIGHT_DOWN_CAUSAL)
    elif varlen:
        raise NotImplementedError(
            f"window_size={tuple(window_size)} with variable-length sequences is not mapped to "
            "torch_npu.npu_fusion_attention: pad the batch and call flash_attn_func")
    else:
        # flash-attn's sliding window: query i sees key j when
        # i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q + right (-1: no limit)
        options.update(atten_mask=_causal_mask(q.device), sparse_mode=BAND,
                       pre_tockens=left if left >= 0 else UNLIMITED, next_tockens=right if right >= 0 else UNLIMITED)
    return torch_npu.npu_fusion_attention(q, k, v, q.shape[-2], **options)[0]


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q [batch, seqlen_q, heads, head_dim], k and v [batch, seqlen_k, heads_k, head_dim] -> out like q."""
    _refuse("flash_attn_func", softcap, alibi_slopes, return_attn_probs)
    return _attend(q, k, v, dropout_p, softmax_scale, causal, window_size)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """qkv [batch, seqlen, 3, heads, head_dim] -> out [batch, seqlen, heads, head_dim]."""
    _refuse("flash_attn_qkvpacked_func", softcap, alibi_slopes, return_attn_probs)
    q, k, v = qkv.unbind(dim=2)
    return _attend(q, k, v, dropout_p, softmax_scale, causal, window_size)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q [batch, seqlen_q, heads, head_dim], kv [batch, seqlen_k, 2, heads_k, head_dim] -> out like q."""
    _refuse("flash_attn_kvpacked_func", softcap, alibi_slopes, return_attn_probs)
    k, v = kv.unbind(dim=2)
    return _attend(q, k, v, dropout_p, softmax_scale, causal, window_size)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """q [total_q, heads, head_dim], k and v [total_k, heads_k, head_dim], cu_seqlens_* [batch + 1]
    (cumulative sequence lengths from 0) -> out like q."""
    _refuse("flash_attn_varlen_func", softcap, alibi_slopes, return_attn_probs, block_table)
    return _attend(q, k, v, dropout_p, softmax_scale, causal, window_size, cu_seqlens_q, cu_seqlens_k)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """qkv [total, 3, heads, head_dim] -> out [total, heads, head_dim]."""
    _refuse("flash_attn_varlen_qkvpacked_func", softcap, alibi_slopes, return_attn_probs)
    q, k, v = qkv.unbind(dim=1)
    return _attend(q, k, v, dropout_p, softmax_scale, causal, window_size, cu_seqlens, cu_seqlens)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q [total_q, heads, head_dim], kv [total_k, 2, heads_k, head_dim] -> out like q."""
    _refuse("flash_attn_varlen_kvpacked_func", softcap, alibi_slopes, return_attn_probs)
    k, v = kv.unbind(dim=1)
    return _attend(q, k, v, dropout_p, softmax_scale, causal, window_size, cu_seqlens_q, cu_seqlens_k)


# flash-attn 1.x's names of the varlen functions, with its signatures.

def flash_attn_unpadded_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                             softmax_scale=None, causal=False, return_attn_probs=False):
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                  softmax_scale, causal, return_attn_probs=return_attn_probs)


def flash_attn_unpadded_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p, softmax_scale=None, causal=False,
                                       return_attn_probs=False):
    return flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p, softmax_scale, causal,
                                            return_attn_probs=return_attn_probs)


def flash_attn_unpadded_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                      softmax_scale=None, causal=False, return_attn_probs=False):
    return flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                           softmax_scale, causal, return_attn_probs=return_attn_probs)
