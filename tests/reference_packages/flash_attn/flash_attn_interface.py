import torch
import torch.nn.functional as F


def _one(q, k, v, scale, causal):
    """q [sq, h, d], k/v [sk, hk, d]; causal aligned to the bottom-right corner."""
    sq, sk = q.shape[0], k.shape[0]
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    mask = None
    if causal:
        mask = torch.ones(sq, sk, dtype=torch.bool).tril(diagonal=sk - sq)
    out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                         attn_mask=mask, scale=scale)
    return out.transpose(0, 1)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, **unused):
    assert dropout_p == 0.0
    return torch.stack([_one(q[b], k[b], v[b], softmax_scale, causal) for b in range(q.shape[0])])


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, **unused):
    assert dropout_p == 0.0
    outs = []
    for i in range(len(cu_seqlens_q) - 1):
        qs = slice(int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1]))
        ks = slice(int(cu_seqlens_k[i]), int(cu_seqlens_k[i + 1]))
        outs.append(_one(q[qs], k[ks], v[ks], softmax_scale, causal))
    return torch.cat(outs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, **unused):
    return flash_attn_varlen_func(q, kv[:, 0], kv[:, 1], cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                  dropout_p, softmax_scale, causal)
