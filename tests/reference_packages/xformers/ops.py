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


class SwiGLU(torch.nn.Module):
    """xformers' SwiGLU feed-forward: w3(silu(w1 x + b1) * (w2 x + b2)); with packed weights
    (the default) w1 and w2 are the first and second halves of w12's outputs."""

    def __init__(self, in_features, hidden_features, out_features=None, bias=True, *, _pack_weights=True):
        super().__init__()
        assert _pack_weights
        self.w12 = torch.nn.Linear(in_features, 2 * hidden_features, bias=bias)
        self.w3 = torch.nn.Linear(hidden_features, out_features or in_features, bias=bias)

    def forward(self, x):
        w1, w2 = self.w12.weight.chunk(2, dim=0)
        b1, b2 = self.w12.bias.chunk(2) if self.w12.bias is not None else (None, None)
        gate = torch.nn.functional.linear(x, w1, b1)
        up = torch.nn.functional.linear(x, w2, b2)
        return self.w3(gate * torch.sigmoid(gate) * up)
