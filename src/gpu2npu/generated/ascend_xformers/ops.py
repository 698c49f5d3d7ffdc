"""xformers.ops.memory_efficient_attention and its causal masks on scaled_dot_product_attention.

Layout: xformers takes [batch, seqlen, heads, head_dim] (or [batch, seqlen, head_dim], or
[batch, seqlen, groups, heads, head_dim] for grouped keys and values); SDPA takes
[batch, heads, seqlen, head_dim]: the tensors are transposed in and out.  The scale (default
1/sqrt(head_dim)) and the dropout probability p pass as they are; a tensor attn_bias is added to
the scaled scores, as in xformers.  LowerTriangularMask is causal from the top-left corner (SDPA's
is_causal), LowerTriangularFromBottomRightMask from the bottom-right one.  Other bias types
(block-diagonal masks of variable-length batches) raise NotImplementedError.
"""
import torch
import torch.nn.functional as F

__all__ = ["memory_efficient_attention", "LowerTriangularMask", "LowerTriangularFromBottomRightMask"]


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
