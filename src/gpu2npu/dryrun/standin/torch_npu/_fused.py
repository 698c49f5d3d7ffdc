"""Fused operators of torch_npu, computed on the CPU from their documented semantics (the
torch_npu API documentation of each operator), so that migrated code calling them can be
checked against the original.

npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
    atten_mask=None, scale=1., keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647,
    inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
    gen_mask_parallel=True, sync=False)
  -> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)
  * input_layout "BSH", "SBH", "BSND", "BNSD" or "TND"; H = N * D; attention_out has the layout
    (and shape) of query.  head_num is the number of query heads; key/value may have fewer heads
    when the query's is a multiple of theirs (query head h uses key/value head h // group).
  * scores = scale * query @ key^T (+ pse), softmax over the keys that are not masked, dropout
    keeping each probability with keep_prob (scaled by 1 / keep_prob), @ value.
  * atten_mask: True (1) = the position takes no part.  sparse_mode 0 (defaultMask): without
    atten_mask nothing is masked and pre/next_tockens are ignored; with it, the full mask
    ([Sq, Skv], [B, 1, Sq, Skv] or [B, N, Sq, Skv]) applies and only keys with
    -pre_tockens <= j - i <= next_tockens are kept.  sparse_mode 1 (allMask): the full mask only.
    sparse_mode 2 (leftUpCausal) and 3 (rightDownCausal): atten_mask is the compressed
    2048x2048 upper triangle and the causal mask is aligned to the top-left, or the bottom-right,
    corner of each [Sq, Skv] block.  sparse_mode 4 (band): compressed mask, keys within
    pre_tockens before and next_tockens after the bottom-right aligned diagonal.
  * "TND": query [T, N, D], actual_seq_qlen / actual_seq_kvlen the cumulative ends of each
    sequence (host list of ints); each sequence attends to its own keys only.

npu_rms_norm(x, gamma, epsilon=1e-6) -> (y, rstd): rstd = 1 / sqrt(mean(x^2) + epsilon) over the
  trailing dimensions of gamma's shape, y = x * rstd * gamma.

npu_swiglu(x, dim=-1) -> silu(a) * b, where a, b are the two halves of x along dim.

npu_rotary_mul(input, r1, r2, rotary_mode="half") -> input * r1 + rotated * r2, where for "half"
  rotated = cat(-x2, x1) of the two halves x1, x2 of input's last dimension (rotate_half), and for
  "interleave" the pairs (x[2i], x[2i+1]) become (-x[2i+1], x[2i]); r1 and r2 (cos and sin)
  broadcast to input.
"""
import torch
import torch.nn.functional as F

__all__ = ["npu_fusion_attention", "npu_rms_norm", "npu_swiglu", "npu_rotary_mul"]

_LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
_UNLIMITED = 2147483647


def _to_bnsd(x, layout, heads):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).transpose(1, 2)
    if layout == "SBH":
        s, b, h = x.shape
        return x.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)
    raise ValueError(layout)


def _from_bnsd(x, layout):
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "BSH":
        return x.transpose(1, 2).reshape(b, s, n * d)
    if layout == "SBH":
        return x.permute(2, 0, 1, 3).reshape(s, b, n * d)
    raise ValueError(layout)


def _heads(x, layout, query_heads, query):
    """Number of heads of key/value x."""
    if layout in ("BSND", "TND"):
        return x.shape[-2]
    if layout == "BNSD":
        return x.shape[1]
    return x.shape[-1] // (query.shape[-1] // query_heads)


def _keep(sq, skv, atten_mask, sparse_mode, pre, nxt, device):
    """[.., Sq, Skv] bool: True where a query attends to a key."""
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(skv, device=device).unsqueeze(0)
    if sparse_mode == 0:
        if atten_mask is None:
            return torch.ones(sq, skv, dtype=torch.bool, device=device)
        band = (j - i >= -pre) & (j - i <= nxt)
        return ~atten_mask.bool() & band
    if sparse_mode == 1:
        return ~atten_mask.bool()
    if sparse_mode == 2:
        return j <= i
    if sparse_mode == 3:
        return j <= i + (skv - sq)
    if sparse_mode == 4:
        diagonal = i + (skv - sq)
        return (j >= diagonal - pre) & (j <= diagonal + nxt)
    raise NotImplementedError(f"sparse_mode {sparse_mode} is not implemented by the stand-in")


def _attention(q, k, v, keep, pse, scale, keep_prob):
    """q [B, N, Sq, D], k/v [B, N2, Skv, D] -> [B, N, Sq, D]."""
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if pse is not None:
        scores = scores + pse
    scores = scores.masked_fill(~keep, float("-inf"))
    probabilities = torch.softmax(scores, dim=-1)
    probabilities = torch.nan_to_num(probabilities, nan=0.0)  # rows with every key masked
    if keep_prob < 1.0:
        probabilities = F.dropout(probabilities, p=1.0 - keep_prob)
    return torch.matmul(probabilities, v), scores


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1.0, keep_prob=1.0, pre_tockens=_UNLIMITED, next_tockens=_UNLIMITED, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False):
    if input_layout not in _LAYOUTS:
        raise ValueError(f"input_layout must be one of {_LAYOUTS}, got {input_layout!r}")
    if sparse_mode in (2, 3, 4) and (atten_mask is None or tuple(atten_mask.shape) != (2048, 2048)):
        raise ValueError(f"sparse_mode {sparse_mode} takes the compressed 2048x2048 atten_mask")
    if sparse_mode == 1 and atten_mask is None:
        raise ValueError("sparse_mode 1 takes a full atten_mask")
    if input_layout == "TND":
        if actual_seq_qlen is None or actual_seq_kvlen is None:
            raise ValueError("input_layout TND takes actual_seq_qlen and actual_seq_kvlen")
        outputs, maxima, sums = [], [], []
        q_start = kv_start = 0
        for q_end, kv_end in zip(actual_seq_qlen, actual_seq_kvlen):
            q = query[q_start:q_end].transpose(0, 1).unsqueeze(0)
            k = key[kv_start:kv_end].transpose(0, 1).unsqueeze(0)
            v = value[kv_start:kv_end].transpose(0, 1).unsqueeze(0)
            mask = atten_mask if sparse_mode in (0, 1) and atten_mask is not None else None
            if mask is not None:
                mask = mask[..., : q.shape[2], : k.shape[2]]
            keep = _keep(q.shape[2], k.shape[2], mask, sparse_mode, pre_tockens, next_tockens, query.device)
            out, scores = _attention(q, k, v, keep, None, scale, keep_prob)
            outputs.append(out.squeeze(0).transpose(0, 1))
            maxima.append(scores.amax(-1).squeeze(0).transpose(0, 1))
            sums.append(torch.exp(scores - scores.amax(-1, keepdim=True)).sum(-1).squeeze(0).transpose(0, 1))
            q_start, kv_start = q_end, kv_end
        out = torch.cat(outputs)
        softmax_max = torch.cat(maxima).float().unsqueeze(-1).expand(-1, -1, 8)
        softmax_sum = torch.cat(sums).float().unsqueeze(-1).expand(-1, -1, 8)
    else:
        kv_heads = _heads(key, input_layout, head_num, query)
        q = _to_bnsd(query, input_layout, head_num)
        k = _to_bnsd(key, input_layout, kv_heads)
        v = _to_bnsd(value, input_layout, kv_heads)
        if head_num % k.shape[1]:
            raise ValueError(f"head_num {head_num} is not a multiple of the key/value heads {k.shape[1]}")
        keep = _keep(q.shape[2], k.shape[2], atten_mask if sparse_mode in (0, 1) else None, sparse_mode,
                     pre_tockens, next_tockens, query.device)
        out, scores = _attention(q, k, v, keep, pse, scale, keep_prob)
        out = _from_bnsd(out, input_layout)
        softmax_max = scores.amax(-1).float().unsqueeze(-1).expand(-1, -1, -1, 8)
        softmax_sum = torch.exp(scores - scores.amax(-1, keepdim=True)).sum(-1).float().unsqueeze(-1).expand(-1, -1, -1, 8)
    return out, softmax_max, softmax_sum, torch.empty(0, dtype=query.dtype), 0, 0, 0


def npu_rms_norm(x, gamma, epsilon=1e-6):
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return x * rstd * gamma, rstd


def npu_swiglu(x, dim=-1):
    a, b = x.chunk(2, dim=dim)
    return F.silu(a) * b


def npu_rotary_mul(input, r1, r2, rotary_mode="half"):
    if rotary_mode not in ("half", "interleave"):
        raise ValueError(f"rotary_mode must be 'half' or 'interleave', not {rotary_mode!r}")
    return input * r1 + rotated(input, rotary_mode) * r2


def rotated(x, rotary_mode):
    """x's last dimension turned as the rotary embeddings of torch_npu turn it: "half" cat(-x2, x1)
    of its halves, "quarter" cat(-x2, x1, -x4, x3) of its quarters, "interleave" each pair
    (x[2i], x[2i+1]) to (-x[2i+1], x[2i]) (npu_rotary_mul, npu_apply_rotary_pos_emb...)."""
    if rotary_mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    if rotary_mode == "quarter":
        x1, x2, x3, x4 = x.chunk(4, dim=-1)
        return torch.cat((-x2, x1, -x4, x3), dim=-1)
    if rotary_mode == "interleave":
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack((-odd, even), dim=-1).reshape(x.shape)
    raise ValueError(f"rotary_mode must be 'half', 'quarter' or 'interleave', not {rotary_mode!r}")
