"""The imitation's top-level torch_npu operators (torch_npu/_ops.py): each gives what torch_npu's
documentation says - its example's output where it prints one, else its formula, computed here
independently - with the documented signature, defaults, output shapes and dtypes, and in-place
forms returning their argument."""
import math

import pytest

torch = pytest.importorskip("torch")

from standin_runner import import_imitation  # noqa: E402


@pytest.fixture(scope="module")
def npu():
    return import_imitation()


def _gelu_erf(values):
    return torch.tensor([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in values.tolist()])


def _gelu_tanh(values):
    return torch.tensor([0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
                         for v in values.tolist()])


def _group_norm_by_hand(x, groups, weight, bias, eps):
    """(x normalized over each group of its channels and scaled per channel, the groups' means, their
    1 / standard deviations), one group at a time."""
    n_channels = x.shape[1] // groups
    normed, means, rstds = torch.empty_like(x), torch.empty(x.shape[0], groups), torch.empty(x.shape[0], groups)
    for n in range(x.shape[0]):
        for g in range(groups):
            block = x[n, g * n_channels:(g + 1) * n_channels]
            means[n, g] = block.mean()
            rstds[n, g] = 1 / torch.sqrt(((block - means[n, g]) ** 2).mean() + eps)
            for c in range(g * n_channels, (g + 1) * n_channels):
                normed[n, c] = (x[n, c] - means[n, g]) * rstds[n, g] * weight[c] + bias[c]
    return normed, means, rstds


class TestActivations:
    def test_fast_gelu_gives_the_documented_example(self, npu):
        x = torch.tensor([0.5991, 0.4094])
        assert torch.allclose(npu.fast_gelu(x), torch.tensor([0.4403, 0.2733]), atol=1e-4)

    def test_npu_fast_gelu_is_x_over_one_plus_exp(self, npu):
        x = torch.linspace(-6, 6, 25)
        expected = torch.tensor([v / (1 + math.exp(-1.702 * v)) for v in x.tolist()])
        assert torch.allclose(npu.npu_fast_gelu(x), expected, atol=1e-6)
        assert torch.equal(npu.fast_gelu(x), npu.npu_fast_gelu(x))

    def test_npu_gelu_erf_by_default_and_tanh_when_asked(self, npu):
        x = torch.linspace(-4, 4, 17)
        assert torch.allclose(npu.npu_gelu(x), _gelu_erf(x), atol=1e-6)
        tanh = npu.npu_gelu(x, approximate="tanh")
        assert torch.allclose(tanh, _gelu_tanh(x), atol=1e-6)
        assert not torch.allclose(tanh, _gelu_erf(x), atol=1e-6)
        with pytest.raises(TypeError):
            npu.npu_gelu(x, "tanh")  # approximate is keyword-only
        with pytest.raises(ValueError):
            npu.npu_gelu(x, approximate="sigmoid")

    def test_silu_and_its_in_place_form(self, npu):
        x = torch.linspace(-5, 5, 11)
        expected = torch.tensor([v / (1 + math.exp(-v)) for v in x.tolist()])
        assert torch.allclose(npu.npu_silu(x), expected, atol=1e-6)
        y = x.clone()
        assert npu.npu_silu_(y) is y and torch.allclose(y, expected, atol=1e-6)

    def test_mish_is_x_tanh_softplus(self, npu):
        x = torch.linspace(-5, 5, 11)
        expected = torch.tensor([v * math.tanh(math.log1p(math.exp(v))) for v in x.tolist()])
        assert torch.allclose(npu.npu_mish(x), expected, atol=1e-6)

    def test_geglu_gates_the_first_half_with_the_gelu_of_the_second(self, npu):
        torch.manual_seed(0)
        x = torch.randn(3, 8)
        a, b = x[:, :4], x[:, 4:]
        out, gelu = npu.npu_geglu(x)  # dim=-1, approximate=1 (tanh)
        expected_gelu = _gelu_tanh(b.flatten()).reshape(3, 4)
        assert out.shape == gelu.shape == (3, 4)
        assert torch.allclose(gelu, expected_gelu, atol=1e-6) and torch.allclose(out, a * expected_gelu, atol=1e-6)
        out, gelu = npu.npu_geglu(x, dim=-1, approximate=0, activate_left=True)
        expected_gelu = _gelu_erf(a.flatten()).reshape(3, 4)
        assert torch.allclose(gelu, expected_gelu, atol=1e-6) and torch.allclose(out, expected_gelu * b, atol=1e-6)
        out, _ = npu.npu_geglu(x.t(), dim=0)
        assert out.shape == (4, 3)

    def test_gelu_mul_gates_the_second_half_with_the_gelu_of_the_first(self, npu):
        torch.manual_seed(20)
        x = torch.randn(3, 8)
        out = npu.npu_gelu_mul(x)  # approximate="none": the erf form
        first, second = x[:, :4], x[:, 4:]
        assert out.shape == (3, 4)
        assert torch.allclose(out, _gelu_erf(first.flatten()).reshape(3, 4) * second, atol=1e-6)
        tanh = npu.npu_gelu_mul(x, approximate="tanh")
        assert torch.allclose(tanh, _gelu_tanh(first.flatten()).reshape(3, 4) * second, atol=1e-6)
        assert npu.npu_gelu_mul(torch.rand(100, 400, dtype=torch.float16)).shape == (100, 200)  # documented
        with pytest.raises(ValueError):
            npu.npu_gelu_mul(torch.randn(2, 5))
        with pytest.raises(TypeError):
            npu.npu_gelu_mul(x, "tanh")  # approximate is keyword-only

    def test_clipped_swiglu_clips_both_halves_and_splits_them_interleaved_by_default(self, npu):
        x = torch.tensor([[8.0, -9.0, 1.0, 2.0, -3.0, 0.5]])  # pairs (A, B): (8, -9), (1, 2), (-3, 0.5)
        out = npu.npu_clipped_swiglu(x)  # alpha 1.702, limit 7, bias 1, interleaved
        pairs = [(7.0, -7.0), (1.0, 2.0), (-3.0, 0.5)]  # A clipped above at 7, B to [-7, 7]
        expected = torch.tensor([[a / (1 + math.exp(-1.702 * a)) * (b + 1.0) for a, b in pairs]])
        assert out.shape == (1, 3) and torch.allclose(out, expected, atol=1e-5)
        halves = npu.npu_clipped_swiglu(x, interleaved=False, alpha=1.0, limit=2.5, bias=0.0)
        pairs = [(2.5, 2.0), (-9.0, -2.5), (1.0, 0.5)]  # A = x[:3], B = x[3:]
        expected = torch.tensor([[a / (1 + math.exp(-a)) * b for a, b in pairs]])
        assert torch.allclose(halves, expected, atol=1e-5)

    def test_clipped_swiglu_halves_dim_and_refuses_group_index(self, npu):
        torch.manual_seed(21)
        x = torch.randn(2, 4, 3)
        out = npu.npu_clipped_swiglu(x, dim=1, interleaved=False, limit=100.0, bias=0.0, alpha=1.0)
        a, b = x[:, :2], x[:, 2:]  # the halves of dim 1 (the documented [pre, cut * after] split)
        assert out.shape == (2, 2, 3) and torch.allclose(out, a * torch.sigmoid(a) * b, atol=1e-6)
        assert npu.npu_clipped_swiglu(torch.randn(6, 4), dim=0).shape == (3, 4)
        with pytest.raises(NotImplementedError):
            npu.npu_clipped_swiglu(x, group_index=torch.tensor([1]))


class TestNorms:
    def test_layer_norm_eval_gives_the_documented_example(self, npu):
        x = torch.tensor([[0.1863, 0.3755, 0.1115, 0.7308],
                          [0.6004, 0.6832, 0.8951, 0.2087],
                          [0.8548, 0.0176, 0.8498, 0.3703],
                          [0.5609, 0.0114, 0.5021, 0.1242],
                          [0.3966, 0.3022, 0.2323, 0.3914],
                          [0.1554, 0.0149, 0.1718, 0.4972]])
        documented = torch.tensor([[-0.6879, 0.1022, -1.0002, 1.5859],
                                   [0.0143, 0.3474, 1.1999, -1.5616],
                                   [0.9422, -1.4361, 0.9280, -0.4341],
                                   [1.1061, -1.2204, 0.8571, -0.7428],
                                   [0.9685, -0.4173, -1.4434, 0.8922],
                                   [-0.3078, -1.1025, -0.2151, 1.6255]])
        out = npu.npu_layer_norm_eval(x, x.shape[1:], torch.ones(4), torch.zeros(4), 1e-5)
        assert torch.allclose(out, documented, atol=2e-4)
        assert torch.allclose(npu.npu_layer_norm_eval(x, [4]), documented, atol=2e-4)  # None: ones and zeros

    def test_add_rms_norm_returns_y_rstd_and_the_sum(self, npu):
        torch.manual_seed(0)
        x1, x2 = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4, 8)
        gamma = torch.randn(8)
        y, rstd, x = npu.npu_add_rms_norm(x1, x2, gamma)
        total = x1 + x2
        expected_rstd = 1 / torch.sqrt((total ** 2).sum(-1, keepdim=True) / 8 + 1e-6)
        assert rstd.shape == (2, 3, 4, 1) and rstd.dtype == torch.float32  # the documented shapes
        assert torch.allclose(rstd, expected_rstd, atol=1e-5) and torch.equal(x, total)
        assert torch.allclose(y, total * expected_rstd * gamma, atol=1e-5)
        gamma2 = torch.randn(4, 8)
        y, rstd, _ = npu.npu_add_rms_norm(x1, x2, gamma2, epsilon=0.5)
        expected_rstd = 1 / torch.sqrt((total ** 2).sum((-2, -1), keepdim=True) / 32 + 0.5)
        assert rstd.shape == (2, 3, 1, 1) and torch.allclose(rstd, expected_rstd, atol=1e-5)
        assert torch.allclose(y, total * expected_rstd * gamma2, atol=1e-5)

    def test_add_rms_norm_keeps_half_precision_outputs(self, npu):
        x1, x2, gamma = torch.ones(2, 4, dtype=torch.float16), torch.ones(2, 4, dtype=torch.float16), torch.ones(4, dtype=torch.float16)
        y, rstd, x = npu.npu_add_rms_norm(x1, x2, gamma)
        assert y.dtype == x.dtype == torch.float16 and rstd.dtype == torch.float32
        assert torch.allclose(y.float(), torch.ones(2, 4), atol=1e-3)  # 2 / RMS(2) = 1

    def test_gemma_rms_norm_scales_by_one_plus_gamma(self, npu):
        torch.manual_seed(1)
        x, gamma = torch.randn(5, 3, 16), torch.randn(16)
        y, rstd = npu.npu_gemma_rms_norm(x, gamma)
        expected_rstd = 1 / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        assert y.shape == x.shape and rstd.shape == (5, 3, 1)
        assert torch.allclose(rstd, expected_rstd, atol=1e-5)
        assert torch.allclose(y, x * expected_rstd * (1 + gamma), atol=1e-5)
        assert not torch.allclose(y, x * expected_rstd * gamma, atol=1e-3)

    def test_group_norm_silu_follows_the_documented_formula(self, npu):
        torch.manual_seed(2)
        x, weight, bias = torch.randn(2, 6, 3, 3), torch.randn(6), torch.randn(6)
        out, mean, rstd = npu.npu_group_norm_silu(x, weight, bias, group=3, eps=1e-5)
        assert out.shape == x.shape and mean.shape == rstd.shape == (2, 3)
        normed, by_hand_mean, by_hand_rstd = _group_norm_by_hand(x, 3, weight, bias, 1e-5)
        assert torch.allclose(mean, by_hand_mean, atol=1e-5) and torch.allclose(rstd, by_hand_rstd, atol=1e-4)
        assert torch.allclose(out, normed / (1 + torch.exp(-normed)), atol=1e-5)
        plain, _, _ = npu.npu_group_norm_silu(x, None, None, 3)
        assert torch.allclose(plain, torch.nn.functional.silu(torch.nn.functional.group_norm(x, 3)), atol=1e-5)
        with pytest.raises(ValueError):
            npu.npu_group_norm_silu(x, weight, bias, group=4)

    def test_group_norm_swish_scales_the_swish(self, npu):
        torch.manual_seed(22)
        x, weight, bias = torch.randn(3, 4, 6), torch.randn(4), torch.randn(4)
        out, mean, rstd = npu.npu_group_norm_swish(x, 2, weight, bias, eps=1e-5, swish_scale=0.5)
        assert out.shape == x.shape and mean.shape == rstd.shape == (3, 2)
        y, by_hand_mean, by_hand_rstd = _group_norm_by_hand(x, 2, weight, bias, 1e-5)
        assert torch.allclose(mean, by_hand_mean, atol=1e-5) and torch.allclose(rstd, by_hand_rstd, atol=1e-4)
        assert torch.allclose(out, y / (1 + torch.exp(-0.5 * y)), atol=1e-5)
        half = npu.npu_group_norm_swish(x.half(), 4, weight.half(), bias.half())  # the documented call
        assert all(t.dtype == torch.float16 for t in half) and half[1].shape == (3, 4)

    def test_add_rms_norm_cast_returns_the_output_in_float32_too(self, npu):
        torch.manual_seed(23)
        x1, x2 = torch.randn(20, 10, 64, dtype=torch.float16), torch.randn(20, 10, 64, dtype=torch.float16)
        gamma = torch.randn(64, dtype=torch.float16)
        y1, y2, rstd, x = npu.npu_add_rms_norm_cast(x1, x2, gamma)
        total = (x1 + x2).float()
        expected_rstd = 1 / torch.sqrt(total.pow(2).mean(-1, keepdim=True) + 1e-6)
        assert y1.dtype == torch.float32 and y2.dtype == x.dtype == torch.float16 and rstd.dtype == torch.float32
        assert rstd.shape == (20, 10, 1) and torch.allclose(rstd, expected_rstd, rtol=1e-3)
        assert torch.equal(x, x1 + x2) and torch.equal(y1, y2.float())
        assert torch.allclose(y1, total * expected_rstd * gamma.float(), atol=1e-2)


class TestSoftmaxAndLosses:
    def test_scaled_masked_softmax_leaves_out_the_masked_positions(self, npu):
        torch.manual_seed(3)
        x = torch.randn(2, 2, 4, 4)
        mask = torch.zeros(2, 2, 4, 4, dtype=torch.bool)
        mask[..., 2:] = True
        out = npu.npu_scaled_masked_softmax(x, mask, scale=0.5)
        kept = torch.exp(0.5 * x[..., :2])
        assert out.shape == x.shape and out.dtype == x.dtype
        assert torch.allclose(out[..., :2], kept / kept.sum(-1, keepdim=True), atol=1e-6)
        assert torch.all(out[..., 2:] == 0)

    def test_scaled_masked_softmax_broadcasts_the_mask_and_keeps_the_dtype(self, npu):
        x = torch.zeros(1, 1, 3, 4, dtype=torch.float16)
        mask = torch.tensor([False, True, True, True]).reshape(1, 1, 1, 4)
        out = npu.npu_scaled_masked_softmax(x, mask)
        assert out.dtype == torch.float16 and torch.all(out[..., 0] == 1) and torch.all(out[..., 1:] == 0)
        everything = npu.npu_scaled_masked_softmax(torch.randn(1, 1, 2, 4), torch.ones(1, 1, 2, 4, dtype=torch.bool))
        assert torch.allclose(everything, torch.full((1, 1, 2, 4), 0.25))  # a finite fill, no NaN
        with pytest.raises(ValueError):
            npu.npu_scaled_masked_softmax(x, mask, 1.0, True)

    def test_softmax_cross_entropy_with_logits_gives_one_loss_per_row(self, npu):
        torch.manual_seed(4)
        features, labels = torch.rand(1, 48), torch.rand(1, 48)
        loss = npu.npu_softmax_cross_entropy_with_logits(features, labels)
        assert loss.shape == (1,)  # the documented example's shape
        features, labels = torch.randn(3, 5), torch.softmax(torch.randn(3, 5), -1)
        loss = npu.npu_softmax_cross_entropy_with_logits(features, labels)
        expected = [-sum(labels[r, i] * (features[r, i] - torch.logsumexp(features[r], 0)) for i in range(5))
                    for r in range(3)]
        assert torch.allclose(loss, torch.stack(expected), atol=1e-5)

    def test_cross_entropy_loss_follows_the_documented_formula(self, npu):
        torch.manual_seed(24)
        x, target = torch.randn(5, 7), torch.tensor([0, 3, 6, 3, 1])
        weight = torch.rand(7) + 0.1
        loss, log_prob, zloss, lse = npu.npu_cross_entropy_loss(x, target, weight, reduction="none", ignore_index=6)
        lse_n = [math.log(sum(math.exp(v) for v in row)) for row in x.tolist()]
        expected = [0.0 if y == 6 else -weight[y].item() * (x[n, y].item() - lse_n[n])
                    for n, y in enumerate(target.tolist())]
        assert loss.shape == (5,) and torch.allclose(loss, torch.tensor(expected), atol=1e-5)
        assert log_prob.shape == (5, 7) and torch.allclose(log_prob, x - torch.tensor(lse_n).unsqueeze(1), atol=1e-5)
        assert zloss.numel() == 0 and lse.numel() == 0
        mean, _, _, _ = npu.npu_cross_entropy_loss(x, target, weight, ignore_index=6)
        kept_weight = sum(weight[y].item() for y in target.tolist() if y != 6)
        assert mean.shape == (1,) and torch.allclose(mean, torch.tensor([sum(expected) / kept_weight]), atol=1e-5)
        total, _, _, _ = npu.npu_cross_entropy_loss(x, target, reduction="sum", ignore_index=-1)  # nothing ignored
        assert total.shape == (1,)
        by_torch = torch.nn.functional.cross_entropy(x, target, reduction="sum")
        assert torch.allclose(total, by_torch.reshape(1), atol=1e-5)
        plain, _, _, _ = npu.npu_cross_entropy_loss(x.half(), target)
        assert plain.dtype == torch.float16
        with pytest.raises(NotImplementedError):
            npu.npu_cross_entropy_loss(x, target, label_smoothing=0.1)
        with pytest.raises(NotImplementedError):
            npu.npu_cross_entropy_loss(x, target, return_zloss=True)

    def test_fused_cross_entropy_loss_with_max_sum_finishes_a_vocabulary_parallel_loss(self, npu):
        torch.manual_seed(25)
        logits = torch.randn(4, 12)
        target = torch.tensor([0, 5, 11, 7])
        # two vocabulary shards of 6, combined as the all-reduce would: the global max, the sum of exp
        # (x - max), and the target's logit minus the max
        logits_max = logits.max(-1).values
        sum_exp = torch.exp(logits - logits_max.unsqueeze(1)).sum(-1)
        predicted = logits.gather(1, target.unsqueeze(1)).squeeze(1) - logits_max
        loss, softmax = npu.npu_fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp, predicted)
        assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits, target, reduction="none"), atol=1e-5)
        assert softmax.numel() == 0
        shard = logits[:, :6].half()
        loss, softmax = npu.npu_fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp, predicted,
                                                                      vocab_parallel_logits=shard)
        assert softmax.dtype == torch.float32 and softmax.shape == (4, 6)
        assert torch.allclose(softmax, torch.softmax(logits, -1)[:, :6], atol=1e-3)
        with pytest.raises(ValueError):
            npu.npu_fused_cross_entropy_loss_with_max_sum(logits_max, sum_exp, predicted, label_smoothing=0.1)


class TestReductions:
    def test_npu_max_gives_the_documented_example(self, npu):
        x = torch.tensor([[[[-1.8135, 0.2078], [-0.6678, 0.7846]], [[0.6458, -0.0923], [-0.2124, -1.9112]]],
                          [[[-0.5800, -0.4979], [0.2580, 1.1335]], [[0.6669, 0.1876], [0.1160, -0.1061]]]])
        values, indices = npu.npu_max(x, 2)
        assert torch.equal(values, torch.tensor([[[-0.6678, 0.7846], [0.6458, -0.0923]],
                                                 [[0.2580, 1.1335], [0.6669, 0.1876]]]))
        assert indices.dtype == torch.int32 and indices.tolist() == [[[1, 1], [0, 0]], [[1, 1], [0, 0]]]
        kept = npu.npu_max(x, 2, keepdim=True)
        assert kept.values.shape == kept.indices.shape == (2, 2, 1, 2)

    def test_npu_min_gives_the_documented_example(self, npu):
        x = torch.tensor([[[[-0.9909, -0.2369], [-0.9569, -0.6223]], [[0.1157, -0.3147], [-0.7761, 0.1344]]],
                          [[[1.6292, 0.5953], [0.6940, -0.6367]], [[-1.2335, 0.2131], [1.0748, -0.7046]]]])
        values, indices = npu.npu_min(x, 2)
        assert torch.equal(values, torch.tensor([[[-0.9909, -0.6223], [-0.7761, -0.3147]],
                                                 [[0.6940, -0.6367], [-1.2335, -0.7046]]]))
        assert indices.dtype == torch.int32 and indices.tolist() == [[[0, 1], [1, 0]], [[1, 1], [0, 1]]]

    def test_sort_v2_gives_the_documented_example(self, npu):
        x = torch.tensor([[-0.0067, 1.7790, 0.5031, -1.7217],
                          [1.1685, -1.0486, -0.2938, 1.3241],
                          [0.1880, -2.7447, 1.3976, 0.7380]])
        documented = torch.tensor([[-1.7217, -0.0067, 0.5029, 1.7793],  # printed from float16 precision
                                   [-1.0488, -0.2937, 1.1689, 1.3242],
                                   [-2.7441, 0.1880, 0.7378, 1.3975]])
        out = npu.npu_sort_v2(x)
        assert torch.allclose(out, documented, atol=1e-3)
        assert torch.equal(npu.npu_sort_v2(x, descending=True), out.flip(-1))
        target = torch.empty(0)
        assert npu.npu_sort_v2(x, out=target) is target and torch.equal(target, out)
        with pytest.raises(ValueError):
            npu.npu_sort_v2(x, dim=0)


class TestMatrixProducts:
    def test_linear_is_input_times_weight_transposed_plus_bias(self, npu):
        torch.manual_seed(5)
        x, w, b = torch.rand(2, 16), torch.rand(4, 16), torch.rand(4)
        out = npu.npu_linear(x, w, b)
        expected = torch.tensor([[sum(x[i, k] * w[j, k] for k in range(16)) + b[j] for j in range(4)] for i in range(2)])
        assert out.shape == (2, 4) and torch.allclose(out, expected, atol=1e-5)
        assert torch.allclose(npu.npu_linear(x, w), expected - b, atol=1e-5)

    def test_bmmv2_multiplies_batches_and_broadcasts_them(self, npu):
        torch.manual_seed(6)
        a, b = torch.randn(10, 3, 4), torch.randn(10, 4, 5)
        out = npu.npu_bmmV2(a, b, [])
        assert out.shape == (10, 3, 5)  # the documented example
        assert torch.allclose(out, torch.einsum("bik,bkj->bij", a, b), atol=1e-5)
        shared = torch.randn(4, 5)
        assert torch.allclose(npu.npu_bmmV2(a, shared, []), torch.einsum("bik,kj->bij", a, shared), atol=1e-5)

    def test_transpose_batchmatmul_permutes_before_and_after(self, npu):
        torch.manual_seed(26)
        x1, x2 = torch.randn(3, 2, 4), torch.randn(2, 4, 5)  # (M, B, K), (B, K, N)
        out = npu.npu_transpose_batchmatmul(x1, x2, perm_x1=[1, 0, 2], perm_y=[1, 0, 2])
        expected = torch.tensor([[[sum(x1[m, b, k] * x2[b, k, n] for k in range(4)) for n in range(5)]
                                  for b in range(2)] for m in range(3)])
        assert out.shape == (3, 2, 5) and torch.allclose(out, expected, atol=1e-5)
        plain = npu.npu_transpose_batchmatmul(x1.transpose(0, 1).contiguous(), x2)  # [B, M, K]; perm_y [1, 0, 2]
        assert torch.allclose(plain, expected, atol=1e-5)
        with pytest.raises(NotImplementedError):
            npu.npu_transpose_batchmatmul(x1, x2, perm_x1=[1, 0, 2], batch_split_factor=5)
        with pytest.raises(NotImplementedError):
            npu.npu_transpose_batchmatmul(x1, x2, perm_x1=[1, 0, 2], scale=torch.ones(10, dtype=torch.int64))
        with pytest.raises(ValueError):
            npu.npu_transpose_batchmatmul(x1, x2, perm_x1=[1, 0, 2], perm_y=[0, 1, 2])


class TestSequenceMixing:
    def test_masked_causal_conv1d_sums_the_window_ending_at_each_step(self, npu):
        torch.manual_seed(27)
        x, weight = torch.randn(5, 2, 3), torch.randn(3, 3)  # [S, B, H], [W, H]
        out = npu.npu_masked_causal_conv1d(x, weight)
        expected = torch.zeros(5, 2, 3)
        for s in range(5):
            for k in range(3):
                if s - (2 - k) >= 0:
                    expected[s] += weight[k] * x[s - (2 - k)]
        assert out.shape == x.shape and torch.allclose(out, expected, atol=1e-6)
        mask = torch.tensor([[True, False, True, True, False], [True, True, True, True, True]])  # [B, S]
        masked = npu.npu_masked_causal_conv1d(x, weight, mask=mask)
        assert torch.all(masked[1, 0] == 0) and torch.all(masked[4, 0] == 0)
        assert torch.allclose(masked[:, 1], expected[:, 1], atol=1e-6) and torch.allclose(masked[2, 0], expected[2, 0])
        assert npu.npu_masked_causal_conv1d(x.bfloat16(), weight.bfloat16()).dtype == torch.bfloat16

    def test_mhc_post_mixes_the_streams_and_adds_the_layer_output(self, npu):
        torch.manual_seed(28)
        x, h_res = torch.randn(2, 3, 4, 8), torch.rand(2, 3, 4, 4)  # [B, S, n, D], [B, S, n, n]
        h_out, h_post = torch.randn(2, 3, 8), torch.rand(2, 3, 4)
        out = npu.npu_mhc_post(x, h_res, h_out, h_post)
        b, s = 1, 2
        for i in range(4):
            row = sum(h_res[b, s, i, j] * x[b, s, j] for j in range(4)) + h_post[b, s, i] * h_out[b, s]
            assert torch.allclose(out[b, s, i], row, atol=1e-5)
        assert out.shape == x.shape
        skip = npu.npu_mhc_post(x.half(), None, h_out.half(), h_post)
        assert skip.dtype == torch.float16
        assert torch.allclose(skip.float(), x + h_post.unsqueeze(-1) * h_out.unsqueeze(-2), atol=1e-2)


class TestConvolutions:
    """torch_npu documents its convolutions as torch's with every argument given; the transposed
    ones take padding and output_padding before stride."""

    def test_conv2d_is_the_sum_over_each_window(self, npu):
        x = torch.arange(16.0).reshape(1, 1, 4, 4)
        weight = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        out = npu.npu_conv2d(x, weight, torch.tensor([0.5]), [2, 2], [0, 0], [1, 1], 1)
        by_hand = torch.tensor([[sum(x[0, 0, 2 * i + a, 2 * j + b] * weight[0, 0, a, b] for a in range(2) for b in range(2))
                                 + 0.5 for j in range(2)] for i in range(2)])
        assert out.shape == (1, 1, 2, 2) and torch.equal(out[0, 0], by_hand)
        assert torch.equal(npu.npu_convolution(x, weight, torch.tensor([0.5]), [2, 2], [0, 0], [1, 1], 1), out)

    def test_conv3d_and_convolution_of_a_five_dimensional_input(self, npu):
        x = torch.ones(1, 2, 3, 3, 3)
        weight = torch.ones(4, 1, 1, 1, 1)  # groups 2: two output channels per input channel
        out = npu.npu_conv3d(x, weight, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], 2)
        assert out.shape == (1, 4, 5, 5, 5)
        assert out[0, :, 0].sum() == 0 and torch.all(out[0, :, 1:4, 1:4, 1:4] == 1)
        assert torch.equal(npu.npu_convolution(x, weight, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], 2), out)

    def test_transposed_convolution_takes_padding_before_stride(self, npu):
        x = torch.ones(1, 1, 3, 3)
        weight = torch.ones(1, 1, 3, 3)
        # stride 2, no padding, output_padding 1: (3 - 1) * 2 + 3 + 1 = 8 on each side
        out = npu.npu_conv_transpose2d(x, weight, None, [0, 0], [1, 1], [2, 2], [1, 1], 1)
        assert out.shape == (1, 1, 8, 8)
        assert out[0, 0, 0, 0] == 1 and out[0, 0, 2, 2] == 4 and out[0, 0, 7, 7] == 0  # overlaps add up
        assert torch.equal(npu.npu_convolution_transpose(x, weight, None, [0, 0], [1, 1], [2, 2], [1, 1], 1), out)


class TestLayout:
    def test_format_cast_gives_the_documented_formats(self, npu):
        x = torch.rand(2, 3, 4, 5)
        assert npu.get_npu_format(x) == 0  # the documented example: a 4-D tensor is NCHW
        x1 = npu.npu_format_cast(x, 29)
        assert npu.get_npu_format(x1) == 29 and npu.get_npu_format(x) == 0
        assert x1 is not x and torch.equal(x1, x)  # only the NPU's storage format changes
        assert npu.npu_format_cast(x1, 29) is x1
        like = npu.npu_format_cast(x, x1)  # the overload taking a tensor's format
        assert npu.get_npu_format(like) == 29 and torch.equal(like, x)

    def test_format_cast_in_place_returns_its_argument(self, npu):
        x = torch.rand(2, 3, 4, 5)
        values = x.clone()
        assert npu.npu_format_cast_(x, 2) is x and npu.get_npu_format(x) == 2  # the documented example
        assert torch.equal(x, values)
        y = torch.rand(6, 7)
        assert npu.npu_format_cast_(y, npu.npu_format_cast(torch.rand(6, 7), 29)) is y
        assert npu.get_npu_format(y) == 29

    def test_base_formats_of_other_ranks(self, npu):
        assert npu.get_npu_format(torch.rand(6, 7)) == 2  # ND
        assert npu.get_npu_format(torch.rand(3)) == 2
        assert npu.get_npu_format(torch.rand(1, 2, 3, 4, 5)) == 30  # NCDHW

    def test_dtype_cast_gives_the_documented_example(self, npu):
        out = npu.npu_dtype_cast(torch.tensor([0, 0.5, -1.0]), dtype=torch.int)
        assert out.dtype == torch.int32 and out.tolist() == [0, 0, -1]
        x = torch.rand(3)
        same = npu.npu_dtype_cast(x, torch.float32)
        assert same is not x and torch.equal(same, x)
        assert npu.npu_dtype_cast(x, torch.float16).dtype == torch.float16

    def test_confusion_transpose_gives_the_documented_shapes(self, npu):
        x = torch.rand(2, 3, 4, 6)
        y = npu.npu_confusion_transpose(x, (0, 2, 1, 3), (2, 4, 18), True)
        assert y.shape == (2, 4, 18) and y.is_contiguous()
        assert torch.equal(y[1, 2, 6:12], x[1, 1, 2])  # transposed first: [b, h, c * 6 + w] = x[b, c, h, w]
        y2 = npu.npu_confusion_transpose(x, (0, 2, 1), (2, 12, 6), False)
        assert y2.shape == (2, 6, 12)
        flat = x.flatten()
        assert y2[1, 5, 7] == flat[72 + 7 * 6 + 5]  # reshaped first: [b, j, i] = reshaped[b, i, j]

    def test_transpose_and_broadcast(self, npu):
        x = torch.randn(2, 3, 5)
        x1 = npu.npu_transpose(x, (2, 0, 1))
        assert x1.shape == (5, 2, 3) and x1.is_contiguous() and x1[4, 1, 2] == x[1, 2, 4]
        b = npu.npu_broadcast(torch.tensor([[1], [2], [3]]), [3, 4])
        assert b.tolist() == [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]] and b.is_contiguous()
        assert npu.npu_broadcast(torch.tensor([1, 2]), [2, 2]).tolist() == [[1, 2], [1, 2]]  # new leading dims

    def test_reshape_gives_the_documented_example(self, npu):
        a = torch.rand(2, 8)
        out = npu.npu_reshape(a, (4, 4))
        assert out.shape == (4, 4) and torch.equal(out.flatten(), a.flatten())
        out[0, 0] = -1.0
        assert a[0, 0] != -1.0  # a tensor of its own, as the NPU's

    def test_pad_gives_the_documented_example_and_pads_dimensions_in_order(self, npu):
        x = torch.tensor([[20, 20, 10, 10]], dtype=torch.float16)
        out = npu.npu_pad(x, [1, 1, 1, 1])
        assert out.dtype == torch.float16 and out.tolist() == [[0, 0, 0, 0, 0, 0],
                                                               [0, 20, 20, 10, 10, 0],
                                                               [0, 0, 0, 0, 0, 0]]
        out = npu.npu_pad(torch.ones(1, 2), [2, 0, 0, 1])  # dimension 0: 2 before; dimension 1: 1 after
        assert out.tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 0]]
        assert npu.npu_pad(torch.ones(1, 2), [1]).shape == (2, 2)

    def test_slice_gives_the_documented_example(self, npu):
        x = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], dtype=torch.float16)
        out = npu.npu_slice(x, [0, 0], [2, 2])
        assert out.dtype == torch.float16 and out.tolist() == [[1, 2], [6, 7]]
        assert npu.npu_slice(x, [1, 2], [1, 3]).tolist() == [[8, 9, 10]]
        with pytest.raises(ValueError):
            npu.npu_slice(x, [0, 4], [1, 2])

    def test_one_hot_gives_the_documented_example(self, npu):
        out = npu.npu_one_hot(torch.IntTensor([5, 3, 2, 1]), depth=5)
        assert out.dtype == torch.float32 and out.tolist() == [[0, 0, 0, 0, 0],
                                                               [0, 0, 0, 1, 0],
                                                               [0, 0, 1, 0, 0],
                                                               [0, 1, 0, 0, 0]]
        out = npu.npu_one_hot(torch.tensor([[0], [2]]), depth=3, on_value=4, off_value=-1)
        assert out.shape == (2, 1, 3) and out.tolist() == [[[4, -1, -1]], [[-1, -1, 4]]]
        with pytest.raises(NotImplementedError):
            npu.npu_one_hot(torch.tensor([[0], [2]]), num_classes=0, depth=3)

    def test_masked_fill_range_gives_the_documented_example(self, npu):
        a = torch.tensor([[0.9419, 0.4919, 0.2874, 0.6560],
                          [0.6691, 0.6668, 0.0330, 0.1006],
                          [0.3888, 0.7011, 0.7141, 0.7878],
                          [0.0366, 0.9738, 0.4689, 0.0979]])
        start = torch.tensor([[0, 1, 2]], dtype=torch.int32)
        end = torch.tensor([[1, 2, 3]], dtype=torch.int32)
        out = npu.npu_masked_fill_range(a, start, end, torch.tensor([1.0]), 1)
        expected = a.clone()
        expected[0, 0] = expected[1, 1] = expected[2, 2] = 1.0
        assert torch.equal(out, expected) and a[0, 0] == 0.9419
        two = npu.npu_masked_fill_range(a, torch.tensor([[0, 0], [1, 3]]), torch.tensor([[2, 0], [3, 4]]),
                                        torch.tensor([7.0, 8.0]))
        assert two[0].tolist() == [7.0, 8.0, 8.0, a[0, 3].item()]  # the later range wins where they meet
        assert two[1].tolist() == [*a[1, :3].tolist(), 8.0] and torch.equal(two[2:], a[2:])


class TestPositionEncoding:
    def test_apply_rotary_pos_emb_half_updates_query_and_key_in_place(self, npu):
        torch.manual_seed(7)
        query, key = torch.randn(1, 3, 2, 4), torch.randn(1, 3, 1, 4)
        cos, sin = torch.randn(1, 3, 1, 4), torch.randn(1, 3, 1, 4)
        q0, k0 = query.clone(), key.clone()
        q_out, k_out = npu.npu_apply_rotary_pos_emb(query, key, cos, sin)
        assert q_out is query and k_out is key
        for x0, out in ((q0, q_out), (k0, k_out)):
            rotated = torch.stack((-x0[..., 2], -x0[..., 3], x0[..., 0], x0[..., 1]), dim=-1)
            assert torch.allclose(out, x0 * cos + rotated * sin, atol=1e-6)

    def test_apply_rotary_pos_emb_quarter_and_interleave(self, npu):
        torch.manual_seed(8)
        x, cos, sin = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)
        q, k = x.clone(), x.clone()
        npu.npu_apply_rotary_pos_emb(q, k, cos, sin, layout="BSND", rotary_mode="quarter")
        idx = [2, 3, 0, 1, 6, 7, 4, 5]
        sign = torch.tensor([-1.0, -1, 1, 1, -1, -1, 1, 1])
        assert torch.allclose(q, x * cos + x[..., idx] * sign * sin, atol=1e-6) and torch.equal(q, k)
        q, k = x.clone(), x.clone()
        npu.npu_apply_rotary_pos_emb(q, k, cos, sin, rotary_mode="interleave")
        idx = [1, 0, 3, 2, 5, 4, 7, 6]
        sign = torch.tensor([-1.0, 1, -1, 1, -1, 1, -1, 1])
        assert torch.allclose(q, x * cos + x[..., idx] * sign * sin, atol=1e-6)
        with pytest.raises(ValueError):
            npu.npu_apply_rotary_pos_emb(x.clone(), x.clone(), cos, sin, rotary_mode="third")

    def test_anchor_response_flags(self, npu):
        assert npu.npu_anchor_response_flags(torch.rand(100, 4), [60, 60], [2, 2], 9).shape == (32400,)  # documented
        # centres (3, 1) and (9, 5) on a 3 x 4 map with stride (4, 2): cells x=0, y=0 and x=2, y=2
        boxes = torch.tensor([[2.0, 0.0, 4.0, 2.0], [8.0, 4.0, 10.0, 6.0], [100.0, 100.0, 102.0, 102.0]])
        flags = npu.npu_anchor_response_flags(boxes, [3, 4], [4, 2], 2)
        expected = torch.zeros(12, dtype=torch.uint8)
        expected[[0, 2 * 4 + 2, 2 * 4 + 3]] = 1  # the far box is clamped into the last cell
        assert flags.dtype == torch.uint8 and torch.equal(flags, expected.repeat_interleave(2))

    def test_interleave_rope_deinterleaves_then_rotates_the_halves(self, npu):
        torch.manual_seed(29)
        x = torch.randn(2, 3, 1, 8)
        cos, sin = torch.randn(2, 1, 1, 8), torch.randn(2, 1, 1, 8)
        out = npu.npu_interleave_rope(x, cos, sin)
        q = x[..., [0, 2, 4, 6, 1, 3, 5, 7]]  # the even elements, then the odd ones
        rotated = torch.cat((-q[..., 4:], q[..., :4]), dim=-1)
        assert out.shape == x.shape and torch.allclose(out, q * cos + rotated * sin, atol=1e-6)
        assert npu.npu_interleave_rope(x.half(), cos.half(), sin.half()).dtype == torch.float16
        # the documented RotateHalf example: [1, 2, 3, 4] -> [-3, -4, 1, 2] (here with q = [1, 3, 2, 4] as x)
        one = npu.npu_interleave_rope(torch.tensor([1.0, 2.0, 3.0, 4.0]).reshape(1, 1, 1, 4),
                                      torch.zeros(1, 1, 1, 4), torch.ones(1, 1, 1, 4))
        assert one.flatten().tolist() == [-2.0, -4.0, 1.0, 3.0]


class TestIndexingAndScattering:
    def test_indexing_gives_the_documented_example(self, npu):
        x = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=torch.int32)
        out = npu.npu_indexing(x, [0, 0], [2, 2], [1, 1])
        assert out.dtype == torch.int32 and out.tolist() == [[1, 2], [5, 6]]

    def test_indexing_masks_follow_the_strided_slice_bits(self, npu):
        x = torch.arange(24).reshape(2, 3, 4)
        assert npu.npu_indexing(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]).tolist() == x[:, 1:3, 0:4:2].tolist()
        assert npu.npu_indexing(x, [1, 2, 3], [0, 0, 0], [1, 1, 1], begin_mask=0b011, end_mask=0b111).tolist() == \
            x[:, :, 3:].tolist()
        shrunk = npu.npu_indexing(x, [1, 0, 1], [2, 3, 3], [1, 1, 1], shrink_axis_mask=0b001)
        assert shrunk.tolist() == x[1, :, 1:3].tolist()
        assert npu.npu_indexing(x, [0, 0], [1, 2], [1, 1], new_axis_mask=0b01).shape == (1, 2, 3, 4)
        assert npu.npu_indexing(x, [0, 1], [0, 3], [1, 1], ellipsis_mask=0b01).tolist() == x[..., 1:3].tolist()
        assert npu.npu_indexing(x, [0, 3], [0, 0], [1, -2], ellipsis_mask=0b01, end_mask=0b10).tolist() == \
            x[..., [3, 1]].tolist()  # a negative stride walks back from begin
        assert npu.npu_indexing(x, [-1], [0], [1], shrink_axis_mask=1).tolist() == x[-1].tolist()
        with pytest.raises(ValueError):
            npu.npu_indexing(x, [0], [1], [0])

    def test_gather_sparse_index_takes_rows_of_dimension_zero(self, npu):
        torch.manual_seed(30)
        inputs, index = torch.randn(16, 32), torch.randint(0, 16, [2, 3])
        out = npu.npu_gather_sparse_index(inputs, index)
        assert out.shape == (2, 3, 32)  # the documented shapes
        assert all(torch.equal(out[i, j], inputs[index[i, j]]) for i in range(2) for j in range(3))
        with pytest.raises(IndexError):
            npu.npu_gather_sparse_index(inputs, torch.tensor([-1]))

    def test_scatter_gives_the_documented_example(self, npu):
        x = torch.tensor([[1.6279, 0.1226], [0.9041, 1.0980]])
        out = npu.npu_scatter(x, torch.tensor([0, 1], dtype=torch.int32), torch.tensor([-1.1993, -1.5247]), 0)
        assert out.tolist() == torch.tensor([[-1.1993, 0.1226], [0.9041, -1.5247]]).tolist()
        assert x[0, 0].item() == pytest.approx(1.6279)  # not in place
        along_1 = npu.npu_scatter(torch.zeros(2, 3), torch.tensor([2, 0]), torch.tensor([5.0, 6.0]), 1)
        assert along_1.tolist() == [[0, 0, 5], [6, 0, 0]]
        with pytest.raises(NotImplementedError):  # only the documented form: indices of self's rank - 1
            npu.npu_scatter(torch.zeros(2, 3), torch.tensor([[2], [0]]), torch.tensor([[5.0], [6.0]]), -1)
        assert torch.equal(npu.npu_scatter(x, torch.tensor([], dtype=torch.int32), torch.tensor([]), 0), x)

    def test_scatter_nd_update_writes_slices_at_the_indexed_positions(self, npu):
        torch.manual_seed(31)
        var, updates = torch.rand(4, 5, 6), torch.rand(3, 6)
        indices = torch.tensor([[0, 1], [3, 4], [2, 0]], dtype=torch.int32)  # the documented (3, 2) -> (3, 6)
        out = npu.npu_scatter_nd_update(var, indices, updates)
        expected = var.clone()
        for p, (i, j) in enumerate(indices.tolist()):
            expected[i, j] = updates[p]
        assert torch.equal(out, expected) and not torch.equal(var, expected)
        rows = torch.tensor([[[1], [3]]])  # indices [1, 2, 1]: whole rows of a [4, 2] input
        assert npu.npu_scatter_nd_update(torch.zeros(4, 2), rows, torch.ones(1, 2, 2)).tolist() == \
            [[0, 0], [1, 1], [0, 0], [1, 1]]
        assert npu.npu_scatter_nd_update_(var, indices, updates) is var and torch.equal(var, expected)
        with pytest.raises(ValueError):
            npu.npu_scatter_nd_update(var, indices, torch.rand(3, 5))

    def test_one_fills_in_place(self, npu):
        x = torch.rand(2, 3)
        assert npu.one_(x) is x and x.tolist() == [[1.0] * 3] * 2

    def test_sign_bits_pack_and_unpack_give_the_documented_examples(self, npu):
        a = torch.tensor([5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2], dtype=torch.float32)
        packed = npu.npu_sign_bits_pack(a, 2)
        assert packed.dtype == torch.uint8 and packed.tolist() == [[159], [15]]
        unpacked = npu.npu_sign_bits_unpack(torch.tensor([159, 15], dtype=torch.uint8), 2, torch.float32)
        assert unpacked.dtype == torch.float32 and unpacked.tolist() == [[1, 1, 1, 1, 1, -1, -1, 1],
                                                                         [1, 1, 1, 1, -1, -1, -1, -1]]
        assert npu.npu_sign_bits_unpack(packed.flatten(), 1, torch.float16).dtype == torch.float16
        torch.manual_seed(32)
        signs = torch.randn(64).half()
        round_trip = npu.npu_sign_bits_unpack(npu.npu_sign_bits_pack(signs, 4).flatten(), 1, torch.float32)
        assert torch.equal(round_trip.flatten(), torch.where(signs >= 0, 1.0, -1.0))
        with pytest.raises(ValueError):
            npu.npu_sign_bits_pack(a, 3)  # 2 bytes do not make 3 rows
        with pytest.raises(ValueError):
            npu.npu_sign_bits_unpack(packed.flatten(), 1, torch.bfloat16)


def test_the_module_lists_exactly_what_it_implements(npu):
    from torch_npu import _ops

    assert len(set(_ops.__all__)) == len(_ops.__all__)
    for name in _ops.__all__:
        assert callable(getattr(_ops, name)) and getattr(npu, name) is getattr(_ops, name)
