import math

import torch


class LowerTriangularMask:
    pass


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None):
    """[B, M, H, K] -> [B, M, H, K]: softmax(q * scale @ k^T + bias) @ v per head."""
    assert p == 0.0
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    q = query.permute(0, 2, 1, 3) * scale
    k = key.permute(0, 2, 1, 3)
    v = value.permute(0, 2, 1, 3)
    scores = q @ k.transpose(-1, -2)
    if isinstance(attn_bias, LowerTriangularMask):
        future = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    elif attn_bias is not None:
        scores = scores + attn_bias
    return (scores.softmax(dim=-1) @ v).permute(0, 2, 1, 3)
