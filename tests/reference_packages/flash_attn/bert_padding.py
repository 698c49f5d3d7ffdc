import torch


def unpad_input(hidden_states, attention_mask):
    """flash-attn before 2.6: (tokens, indices, cu_seqlens, max_seqlen)."""
    keep = attention_mask.flatten().bool()
    indices = keep.nonzero().flatten()
    lengths = attention_mask.sum(dim=1)
    cu_seqlens = torch.zeros(len(lengths) + 1, dtype=torch.int32)
    cu_seqlens[1:] = lengths.cumsum(0)
    tokens = hidden_states.flatten(0, 1)[keep]
    return tokens, indices, cu_seqlens, int(lengths.max())


def pad_input(hidden_states, indices, batch, seqlen):
    out = hidden_states.new_zeros(batch * seqlen, *hidden_states.shape[1:])
    out[indices] = hidden_states
    return out.view(batch, seqlen, *hidden_states.shape[1:])
