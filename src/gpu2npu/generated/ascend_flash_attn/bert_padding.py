"""flash-attn's `bert_padding` helpers in plain PyTorch (they run on the NPU as they are).

`unpad_input` returns five values, as flash-attn 2.6 and later do; code written for four has
its call sliced with `[:4]` by gpu2npu.
"""
import torch
import torch.nn.functional as F

__all__ = ["index_first_axis", "index_put_first_axis", "pad_input", "unpad_input"]


def index_first_axis(input, indices):
    """input[indices] along the first axis (gradients flow back to the gathered rows)."""
    return input[indices]


def index_put_first_axis(values, indices, first_axis_dim):
    """A zero tensor of first_axis_dim rows with `values` at the rows `indices`."""
    output = torch.zeros((first_axis_dim, *values.shape[1:]), device=values.device, dtype=values.dtype)
    return output.index_put((indices,), values)


def unpad_input(hidden_states, attention_mask, unused_mask=None):
    """hidden_states [batch, seqlen, ...] and attention_mask [batch, seqlen] (1 = a real token) ->
    (the real tokens [total, ...], their indices in batch*seqlen, cu_seqlens [batch + 1] int32,
    the longest sequence, the lengths of the used tokens [batch])."""
    all_masks = attention_mask + unused_mask if unused_mask is not None else attention_mask
    seqlens_in_batch = all_masks.sum(dim=-1, dtype=torch.int32)
    used_seqlens_in_batch = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(all_masks.flatten(), as_tuple=False).flatten()
    max_seqlen_in_batch = int(seqlens_in_batch.max().item())
    cu_seqlens = F.pad(torch.cumsum(seqlens_in_batch, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return index_first_axis(flat, indices), indices, cu_seqlens, max_seqlen_in_batch, used_seqlens_in_batch


def pad_input(hidden_states, indices, batch, seqlen):
    """The inverse of unpad_input: [total, ...] -> [batch, seqlen, ...], zeros where padded."""
    output = index_put_first_axis(hidden_states, indices, batch * seqlen)
    return output.reshape(batch, seqlen, *hidden_states.shape[1:])
