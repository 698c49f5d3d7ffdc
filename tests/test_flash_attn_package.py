"""The generated ascend_flash_attn package against an independent reference.

The package maps flash-attn's functions onto torch_npu.npu_fusion_attention; the stand-in
torch_npu computes that operator from its documentation.  The reference here is flash-attn's
own contract written with torch's scaled_dot_product_attention on the original arguments
(per-sequence loops for varlen, repeated heads for GQA, an explicit mask for bottom-right
causal alignment and sliding windows), so a wrong layout, scale, mask alignment or head
grouping in the package shows up as a numeric difference.
"""
import math
import os
import sys

import pytest

# (every test here runs the migrated code against the CPU stand-in of torch_npu)
torch = pytest.importorskip("torch", reason="needs PyTorch (CPU build): these tests run migrated code")
F = torch.nn.functional

from standin_runner import STANDIN_DIR

GENERATED = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gpu2npu", "generated")


@pytest.fixture(scope="module")
def fa():
    for folder in (STANDIN_DIR, GENERATED):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import torch_npu
    assert getattr(torch_npu, "IS_STANDIN", False)
    import ascend_flash_attn
    return ascend_flash_attn


def reference(q, k, v, causal=False, window=(-1, -1), scale=None):
    """flash-attn's result for q [B, Sq, H, D], k/v [B, Sk, Hk, D]."""
    sq, sk = q.shape[1], k.shape[1]
    group = q.shape[2] // k.shape[2]
    k = k.repeat_interleave(group, dim=2)
    v = v.repeat_interleave(group, dim=2)
    # query i sits at key position i + sk - sq (bottom-right alignment)
    rows = torch.arange(sq).unsqueeze(1) + sk - sq
    cols = torch.arange(sk).unsqueeze(0)
    allowed = torch.ones(sq, sk, dtype=torch.bool)
    left, right = window
    if causal:
        right = 0
    if left >= 0:
        allowed &= cols >= rows - left
    if right >= 0:
        allowed &= cols <= rows + right
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         attn_mask=allowed, scale=scale)
    return out.transpose(1, 2)


def tensors(b, sq, sk, h, hk, d, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(b, sq, h, d, generator=generator)
    k = torch.randn(b, sk, hk, d, generator=generator)
    v = torch.randn(b, sk, hk, d, generator=generator)
    return q, k, v


CASES = [  # (sq, sk, heads, kv heads, causal, window)
    (16, 16, 4, 4, False, (-1, -1)),
    (16, 16, 4, 4, True, (-1, -1)),
    (16, 16, 8, 2, True, (-1, -1)),      # GQA
    (16, 16, 8, 1, False, (-1, -1)),     # MQA
    (6, 16, 4, 4, True, (-1, -1)),       # shorter query: causal aligned bottom-right
    (16, 16, 4, 4, False, (3, 0)),       # sliding window, causal
    (16, 16, 4, 2, False, (4, 2)),       # window on both sides, GQA
    (5, 12, 4, 4, True, (2, -1)),        # causal window with a shorter query
]


@pytest.mark.parametrize("sq, sk, h, hk, causal, window", CASES)
def test_flash_attn_func_matches_flash_attn_semantics(fa, sq, sk, h, hk, causal, window):
    q, k, v = tensors(2, sq, sk, h, hk, 32)
    got = fa.flash_attn_func(q, k, v, causal=causal, window_size=window)
    want = reference(q, k, v, causal, window)
    assert got.shape == q.shape
    assert (got - want).abs().max().item() <= 1e-5


def test_softmax_scale_is_passed_and_defaults_to_one_over_sqrt_head_dim(fa):
    q, k, v = tensors(1, 8, 8, 2, 2, 16)
    assert (fa.flash_attn_func(q, k, v) - reference(q, k, v, scale=1 / math.sqrt(16))).abs().max() <= 1e-5
    assert (fa.flash_attn_func(q, k, v, 0.0, 0.3) - reference(q, k, v, scale=0.3)).abs().max() <= 1e-5


def test_packed_forms_match(fa):
    q, k, v = tensors(2, 10, 10, 4, 4, 8, seed=1)
    want = reference(q, k, v, causal=True)
    qkv = torch.stack((q, k, v), dim=2)
    assert (fa.flash_attn_qkvpacked_func(qkv, causal=True) - want).abs().max() <= 1e-5
    kv = torch.stack((k, v), dim=2)
    assert (fa.flash_attn_kvpacked_func(q, kv, causal=True) - want).abs().max() <= 1e-5


def varlen_batch(lengths, h, hk, d, seed=2):
    generator = torch.Generator().manual_seed(seed)
    total = sum(lengths)
    q = torch.randn(total, h, d, generator=generator)
    k = torch.randn(total, hk, d, generator=generator)
    v = torch.randn(total, hk, d, generator=generator)
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    return q, k, v, cu


def varlen_reference(q, k, v, cu_q, cu_k, causal):
    parts = []
    for i in range(len(cu_q) - 1):
        qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        parts.append(reference(q[qs].unsqueeze(0), k[ks].unsqueeze(0), v[ks].unsqueeze(0), causal).squeeze(0))
    return torch.cat(parts)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("h, hk", [(4, 4), (4, 2)])
def test_varlen_with_ragged_sequences(fa, causal, h, hk):
    q, k, v, cu = varlen_batch([3, 9, 1, 6], h, hk, 16)
    got = fa.flash_attn_varlen_func(q, k, v, cu, cu, 9, 9, causal=causal)
    assert (got - varlen_reference(q, k, v, cu, cu, causal)).abs().max() <= 1e-5
    qkv = torch.stack((q, k, v), dim=1) if h == hk else None
    if qkv is not None:
        packed = fa.flash_attn_varlen_qkvpacked_func(qkv, cu, 9, causal=causal)
        assert (packed - got).abs().max() <= 1e-5
        assert (fa.flash_attn_unpadded_qkvpacked_func(qkv, cu, 9, 0.0, causal=causal) - got).abs().max() <= 1e-5
    kv = torch.stack((k, v), dim=1)
    assert (fa.flash_attn_varlen_kvpacked_func(q, kv, cu, cu, 9, 9, causal=causal) - got).abs().max() <= 1e-5


def test_varlen_with_longer_keys_aligns_causal_bottom_right(fa):
    q, _, _, cu_q = varlen_batch([2, 3], 2, 2, 8, seed=3)
    _, k, v, cu_k = varlen_batch([5, 4], 2, 2, 8, seed=4)
    got = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 3, 5, causal=True)
    assert (got - varlen_reference(q, k, v, cu_q, cu_k, True)).abs().max() <= 1e-5


def test_gradients_flow_like_the_reference(fa):
    q, k, v = tensors(1, 8, 8, 4, 2, 8, seed=5)
    for tensor in (q, k, v):
        tensor.requires_grad_(True)
    fa.flash_attn_func(q, k, v, causal=True).square().sum().backward()
    got = [t.grad.clone() for t in (q, k, v)]
    for tensor in (q, k, v):
        tensor.grad = None
    reference(q, k, v, causal=True).square().sum().backward()
    for mine, theirs in zip(got, (q.grad, k.grad, v.grad)):
        assert (mine - theirs).abs().max() <= 1e-5


@pytest.mark.parametrize("keywords, says", [
    ({"softcap": 30.0}, "softcap=30.0"),
    ({"alibi_slopes": torch.ones(4)}, "alibi_slopes"),
    ({"return_attn_probs": True}, "return_attn_probs=True"),
])
def test_what_the_operator_cannot_do_raises_at_the_call(fa, keywords, says):
    q, k, v = tensors(1, 4, 4, 4, 4, 8)
    with pytest.raises(NotImplementedError, match="flash_attn_func on the NPU .*" + says.replace("(", r"\(")):
        fa.flash_attn_func(q, k, v, **keywords)


def test_varlen_window_is_refused_not_guessed(fa):
    q, k, v, cu = varlen_batch([3, 4], 2, 2, 8)
    with pytest.raises(NotImplementedError, match="window_size"):
        fa.flash_attn_varlen_func(q, k, v, cu, cu, 4, 4, window_size=(2, 0))


def test_bert_padding_round_trip_and_unpadded_attention(fa):
    padding = fa.bert_padding
    generator = torch.Generator().manual_seed(6)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    x = torch.randn(3, 5, 2, 4, generator=generator)
    unpadded, indices, cu, longest, used = padding.unpad_input(x, mask)
    assert unpadded.shape == (9, 2, 4) and longest == 5
    assert cu.tolist() == [0, 3, 8, 9] and cu.dtype == torch.int32 and used.tolist() == [3, 5, 1]
    back = padding.pad_input(unpadded, indices, 3, 5)
    assert torch.equal(back, x * mask[:, :, None, None])
    assert torch.equal(padding.index_first_axis(x.reshape(15, 2, 4), indices), unpadded)
    # attention over the unpadded tokens = attention of each sequence on its own
    out = fa.flash_attn_varlen_func(unpadded, unpadded, unpadded, cu, cu, longest, longest, causal=True)
    for b, length in enumerate(mask.sum(1).tolist()):
        seq = x[b, :length].unsqueeze(0)
        want = reference(seq, seq, seq, causal=True).squeeze(0)
        got = padding.pad_input(out, indices, 3, 5)[b, :length]
        assert (got - want).abs().max() <= 1e-5


class TestSlidingWindowsNeedNoMaskOfTheSequencesSize:
    """A sliding window is the operator's band mode (sparse_mode 4) on its 2048x2048 mask, not a
    dense seqlen_q x seqlen_k mask (a gigabyte at 32k)."""

    def calls(self, fa, monkeypatch, **keywords):
        import torch_npu

        seen = []
        real = torch_npu.npu_fusion_attention

        def recording(*args, **options):
            seen.append(options)
            return real(*args, **options)

        monkeypatch.setattr(torch_npu, "npu_fusion_attention", recording)
        q, k, v = tensors(1, 40, 40, 2, 2, 8)
        fa.flash_attn_func(q, k, v, **keywords)
        return seen

    def test_a_window_is_the_band_mode_with_its_bounds(self, fa, monkeypatch):
        (options,) = self.calls(fa, monkeypatch, window_size=(8, 0))
        assert options["sparse_mode"] == 4 and (options["pre_tockens"], options["next_tockens"]) == (8, 0)
        assert options["atten_mask"].shape == (2048, 2048)

    def test_an_open_side_is_the_operators_unlimited_default(self, fa, monkeypatch):
        (options,) = self.calls(fa, monkeypatch, window_size=(-1, 3))
        assert (options["pre_tockens"], options["next_tockens"]) == (2147483647, 3)

    def test_no_window_and_causal_keep_their_modes(self, fa, monkeypatch):
        (plain,) = self.calls(fa, monkeypatch)
        (causal,) = self.calls(fa, monkeypatch, causal=True)
        assert "atten_mask" not in plain and causal["sparse_mode"] == 3
