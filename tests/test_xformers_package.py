"""The generated ascend_xformers package against xformers' documented reference computation:
softmax(q * scale @ k^T + bias) @ v per head, in xformers' [batch, seqlen, heads, head_dim]
layout, with its causal masks (top-left for LowerTriangularMask, bottom-right for
LowerTriangularFromBottomRightMask); its SwiGLU feed-forward against w3(silu(w1 x + b1) * (w2 x + b2))
written out element by element."""
import math
import os
import sys

import pytest

# (every test here runs the migrated code against the CPU stand-in of torch_npu)
torch = pytest.importorskip("torch", reason="needs PyTorch (CPU build): these tests run migrated code")

from helpers import migrate
from standin_runner import STANDIN_DIR, run_script

GENERATED = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gpu2npu", "generated")


@pytest.fixture(scope="module")
def xops():
    for folder in (STANDIN_DIR, GENERATED):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import ascend_xformers
    return ascend_xformers.ops


def reference(q, k, v, bias=None, scale=None):
    """q [B, Mq, H, K], k/v [B, Mk, H, K], bias [B, H, Mq, Mk] -> [B, Mq, H, Kv], head by head."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    out = torch.empty(q.shape[0], q.shape[1], q.shape[2], v.shape[-1])
    for b in range(q.shape[0]):
        for h in range(q.shape[2]):
            scores = (q[b, :, h] * scale) @ k[b, :, h].T
            if bias is not None:
                scores = scores + bias[b, h]
            out[b, :, h] = torch.softmax(scores, dim=-1) @ v[b, :, h]
    return out


def causal_bias(mq, mk, bottom_right=False):
    offset = mk - mq if bottom_right else 0
    allowed = torch.ones(mq, mk, dtype=torch.bool).tril(diagonal=offset)
    return torch.zeros(mq, mk).masked_fill(~allowed, float("-inf"))


def tensors(b, mq, mk, h, k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, mq, h, k, generator=g), torch.randn(b, mk, h, k, generator=g), torch.randn(b, mk, h, k, generator=g)


def test_plain_attention_and_scale(xops):
    q, k, v = tensors(2, 7, 9, 3, 16)
    assert (xops.memory_efficient_attention(q, k, v) - reference(q, k, v)).abs().max() <= 1e-5
    assert (xops.memory_efficient_attention(q, k, v, scale=0.2) - reference(q, k, v, scale=0.2)).abs().max() <= 1e-5


@pytest.mark.parametrize("mq, mk", [(8, 8), (5, 9)])
def test_causal_masks_keep_their_corner(xops, mq, mk):
    q, k, v = tensors(2, mq, mk, 2, 8, seed=1)
    top_left = causal_bias(mq, mk).expand(2, 2, mq, mk)
    got = xops.memory_efficient_attention(q, k, v, attn_bias=xops.LowerTriangularMask())
    assert (got - reference(q, k, v, top_left)).abs().max() <= 1e-5
    bottom_right = causal_bias(mq, mk, bottom_right=True).expand(2, 2, mq, mk)
    got = xops.memory_efficient_attention(q, k, v, attn_bias=xops.LowerTriangularFromBottomRightMask())
    assert (got - reference(q, k, v, bottom_right)).abs().max() <= 1e-5


def test_tensor_bias_and_causal_with_bias(xops):
    q, k, v = tensors(1, 6, 6, 2, 8, seed=2)
    bias = torch.randn(1, 2, 6, 6, generator=torch.Generator().manual_seed(3))
    assert (xops.memory_efficient_attention(q, k, v, attn_bias=bias) - reference(q, k, v, bias)).abs().max() <= 1e-5
    both = xops.LowerTriangularMask().add_bias(bias)
    want = reference(q, k, v, bias + causal_bias(6, 6))
    assert (xops.memory_efficient_attention(q, k, v, attn_bias=both) - want).abs().max() <= 1e-5


def test_three_and_five_dimensional_forms(xops):
    q, k, v = tensors(2, 5, 5, 1, 8, seed=4)
    got = xops.memory_efficient_attention(q[:, :, 0], k[:, :, 0], v[:, :, 0])
    assert got.shape == (2, 5, 8) and (got - reference(q, k, v)[:, :, 0]).abs().max() <= 1e-5
    # grouped: 2 groups of 3 query heads; keys and values shared within a group (expanded)
    g = torch.Generator().manual_seed(5)
    q5 = torch.randn(1, 4, 2, 3, 8, generator=g)
    k5 = torch.randn(1, 4, 2, 1, 8, generator=g).expand(1, 4, 2, 3, 8)
    v5 = torch.randn(1, 4, 2, 1, 8, generator=g).expand(1, 4, 2, 3, 8)
    got = xops.memory_efficient_attention(q5, k5, v5, attn_bias=xops.LowerTriangularMask())
    want = reference(q5.reshape(1, 4, 6, 8), k5.reshape(1, 4, 6, 8), v5.reshape(1, 4, 6, 8),
                     causal_bias(4, 4).expand(1, 6, 4, 4)).reshape(1, 4, 2, 3, 8)
    assert got.shape == q5.shape and (got - want).abs().max() <= 1e-5


def test_other_bias_types_are_refused_and_output_dtype_is_kept(xops):
    q, k, v = tensors(1, 4, 4, 1, 8)
    with pytest.raises(NotImplementedError, match="BlockDiagonal"):
        xops.memory_efficient_attention(q, k, v, attn_bias=type("BlockDiagonalMask", (), {})())
    assert xops.memory_efficient_attention(q, k, v, output_dtype=torch.float64).dtype == torch.float64


def test_a_migrated_script_runs_on_the_standin(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "attn.py").write_text(
        "import torch\nimport xformers.ops as xops\n\n"
        "q = torch.randn(2, 6, 4, 8, generator=torch.Generator().manual_seed(0))\n"
        "out = xops.memory_efficient_attention(q, q, q, attn_bias=xops.LowerTriangularMask())\n"
        "want = torch.nn.functional.scaled_dot_product_attention(*(q.transpose(1, 2),) * 3, is_causal=True)\n"
        "print('max error', float((out - want.transpose(1, 2)).abs().max()))\n")
    target = migrate(project, tmp_path / "out")
    assert (target / "ascend_xformers" / "ops.py").is_file()
    result = run_script(target / "attn.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.split()[-1]) <= 1e-6


def swiglu_reference(x, w1, b1, w2, b2, w3, b3):
    gate = x @ w1.T + (b1 if b1 is not None else 0)
    up = x @ w2.T + (b2 if b2 is not None else 0)
    hidden = gate / (1 + torch.exp(-gate)) * up
    return hidden @ w3.T + (b3 if b3 is not None else 0)


@pytest.mark.parametrize("bias", [True, False])
def test_swiglu_module_packed_and_unpacked(xops, bias):
    torch.manual_seed(4)
    x = torch.randn(2, 5, 12)
    packed = xops.SwiGLU(12, 20, 8, bias=bias)
    w1, w2 = packed.w12.weight[:20], packed.w12.weight[20:]
    b1, b2 = (packed.w12.bias[:20], packed.w12.bias[20:]) if bias else (None, None)
    b3 = packed.w3.bias if bias else None
    want = swiglu_reference(x, w1, b1, w2, b2, packed.w3.weight, b3)
    assert float((packed(x) - want).detach().abs().max()) <= 1e-5
    names = ["w12.weight", "w3.weight"] + (["w12.bias", "w3.bias"] if bias else [])
    assert sorted(packed.state_dict()) == sorted(names)
    unpacked = xops.SwiGLU(12, 20, bias=bias, _pack_weights=False)
    assert unpacked.w12 is None and unpacked.out_features == 12
    want = swiglu_reference(x, unpacked.w1.weight, unpacked.w1.bias, unpacked.w2.weight, unpacked.w2.bias,
                            unpacked.w3.weight, unpacked.w3.bias)
    assert float((unpacked(x) - want).detach().abs().max()) <= 1e-5
    got = xops.swiglu(x, unpacked.w1.weight, unpacked.w1.bias, unpacked.w2.weight, unpacked.w2.bias,
                      unpacked.w3.weight, unpacked.w3.bias)
    assert float((got - want).detach().abs().max()) <= 1e-5
