"""xformers.ops.memory_efficient_attention and its causal masks on scaled_dot_product_attention.

Layout: xformers takes [batch, seqlen, heads, head_dim] (or [batch, seqlen, head_dim], or
[batch, seqlen, groups, heads, head_dim] for grouped keys and values); SDPA takes
[batch, heads, seqlen, head_dim]: the tensors are transposed in and out.  The scale (default
1/sqrt(head_dim)) and the dropout probability p pass as they are; a tensor attn_bias is added to
the scaled scores, as in xformers.  LowerTriangularMask is causal from the top-left corner (SDPA's
is_causal), LowerTriangularFromBottomRightMask from the bottom-right one.  Other bias types
(block-diagonal masks of variable-length batches) raise NotImplementedError.

SwiGLU (module) and swiglu (function): w3(silu(w1 x + b1) * (w2 x + b2)) as xformers computes
it, with torch_npu.npu_swiglu for silu(a) * b; the module keeps xformers' parameters (w12 packed
as [w1; w2], or w1 and w2 with _pack_weights=False, and w3), so that checkpoints load unchanged.
"""
import torch
import torch.nn.functional as F
import torch_npu

__all__ = ["memory_efficient_attention", "LowerTriangularMask", "LowerTriangularFromBottomRightMask",
           "SwiGLU", "swiglu"]


class LowerTriangularMask:
    """Query i attends to keys 0..i (aligned to the top-left corner); add_bias adds a tensor."""

    def __init__(self, bias=None):
        self._bias = bias

    def add_bias(self, bias):
        return type(self)(bias if self._bias is None else self._bias + bias)

    def _allowed(self, seqlen_q, seqlen_k, device):
        return torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=device).tril()

    def materialize(self, shape, dtype=torch.float32, device="cpu"):
        seqlen_q, seqlen_k = shape[-2], shape[-1]
        mask = torch.zeros(seqlen_q, seqlen_k, dtype=dtype, device=device)
        mask = mask.masked_fill(~self._allowed(seqlen_q, seqlen_k, device), float("-inf"))
        mask = mask.expand(shape)
        return mask if self._bias is None else mask + self._bias.to(dtype)


class LowerTriangularFromBottomRightMask(LowerTriangularMask):
    """Causal aligned to the bottom-right corner: query i attends to keys 0..i + seqlen_k - seqlen_q."""

    def _allowed(self, seqlen_q, seqlen_k, device):
        return torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=device).tril(diagonal=seqlen_k - seqlen_q)


def _heads_first(x, rank):
    if rank == 3:
        x = x.unsqueeze(2)
    elif rank == 5:
        x = x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3], x.shape[4])
    return x.transpose(1, 2)


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *, op=None, output_dtype=None):
    """xformers.ops.memory_efficient_attention: softmax(query @ key^T * scale + bias) @ value, with
    dropout p; `op` (the kernel choice) has no meaning here."""
    rank = query.dim()
    if rank not in (3, 4, 5):
        raise ValueError(f"memory_efficient_attention takes 3-, 4- or 5-D tensors, got {rank}-D")
    q, k, v = (_heads_first(x, rank) for x in (query, key, value))
    mask, causal = None, False
    if isinstance(attn_bias, torch.Tensor):
        mask = attn_bias.reshape(*attn_bias.shape[:-4], -1, *attn_bias.shape[-2:]) if rank == 5 else attn_bias
    elif type(attn_bias) is LowerTriangularMask and attn_bias._bias is None:
        causal = True
    elif isinstance(attn_bias, LowerTriangularMask):
        shape = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
        mask = attn_bias.materialize(shape, q.dtype, q.device)
    elif attn_bias is not None:
        raise NotImplementedError(
            f"memory_efficient_attention on the NPU (scaled_dot_product_attention) cannot take an attn_bias of type "
            f"{type(attn_bias).__name__}: pass a tensor bias or a LowerTriangularMask, or unpad and pad the batch")
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal, scale=scale)
    out = out.transpose(1, 2)
    if rank == 3:
        out = out.squeeze(2)
    elif rank == 5:
        out = out.reshape(*query.shape[:4], out.shape[-1])
    return out if output_dtype is None else out.to(output_dtype)


def _silu_gate(a, b):
    """silu(a) * b in one NPU kernel: npu_swiglu takes both halves as one tensor."""
    return torch_npu.npu_swiglu(torch.cat((a, b), dim=-1), dim=-1)


def swiglu(x, w1, b1, w2, b2, w3, b3, *, op=None):
    """xformers.ops.swiglu: F.linear(silu(F.linear(x, w1, b1)) * F.linear(x, w2, b2), w3, b3).
    op chose one of xformers' CUDA kernels: on the NPU there is one."""
    return F.linear(_silu_gate(F.linear(x, w1, b1), F.linear(x, w2, b2)), w3, b3)


class SwiGLU(torch.nn.Module):
    """xformers.ops.SwiGLU: in_features -> hidden_features (gate and up) -> out_features (default
    in_features).  With _pack_weights (xformers' default) the gate and up projections are one
    Linear, w12, whose first hidden_features outputs are the gate: its output goes to npu_swiglu
    as it is."""

    def __init__(self, in_features, hidden_features, out_features=None, bias=True, *, _pack_weights=True):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        if _pack_weights:
            self.w12 = torch.nn.Linear(in_features, 2 * hidden_features, bias=bias)
        else:
            self.w12 = None
            self.w1 = torch.nn.Linear(in_features, hidden_features, bias=bias)
            self.w2 = torch.nn.Linear(in_features, hidden_features, bias=bias)
        self.w3 = torch.nn.Linear(hidden_features, out_features, bias=bias)
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.out_features = out_features
        self.op = None

    def forward(self, x):
        if self.w12 is not None:
            hidden = torch_npu.npu_swiglu(self.w12(x), dim=-1)
        else:
            hidden = _silu_gate(self.w1(x), self.w2(x))
        return self.w3(hidden)
