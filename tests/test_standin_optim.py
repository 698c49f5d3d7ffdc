"""torch_npu.optim in the CPU imitation: each NpuFused optimizer computes what its algorithm
documents (checked against torch's optimizer of the same algorithm where torch has one, else
against the algorithm's defining property or its formula for one step)."""
from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")

from helpers import free_port  # noqa: E402
from standin_runner import STANDIN_DIR, import_imitation, run_script  # noqa: E402


@pytest.fixture(scope="module")
def optim():
    return import_imitation().optim


def _stepped(optimizer_class, weight, grad, steps=1, **arguments):
    """The weight after `steps` steps of the optimizer, each with the gradient `grad`."""
    parameter = torch.nn.Parameter(weight.clone())
    optimizer = optimizer_class([parameter], **arguments)
    for _ in range(steps):
        parameter.grad = grad.clone()
        optimizer.step()
    return parameter.detach()


class TestTorchAlgorithms:
    def test_adadelta_is_torchs(self, optim):
        weight, grad = torch.randn(3, 4), torch.randn(3, 4)
        ours = _stepped(optim.NpuFusedAdadelta, weight, grad, steps=3, lr=0.5, weight_decay=0.1)
        torchs = _stepped(torch.optim.Adadelta, weight, grad, steps=3, lr=0.5, weight_decay=0.1)
        assert torch.allclose(ours, torchs)

    def test_adamp_without_projection_is_adam(self, optim):
        """A vector is never projected: AdamP without weight decay is Adam."""
        weight, grad = torch.randn(6), torch.randn(6)
        ours = _stepped(optim.NpuFusedAdamP, weight, grad, steps=3, lr=0.01)
        torchs = _stepped(torch.optim.Adam, weight, grad, steps=3, lr=0.01)
        assert torch.allclose(ours, torchs)


class TestDefiningProperties:
    def test_adamp_removes_the_radial_part_of_the_update_of_a_matrix(self, optim):
        """A gradient orthogonal to each row of the weight: the update is orthogonal to it too, and
        the weight decay is scaled by wd_ratio."""
        weight = torch.ones(2, 4)
        grad = torch.tensor([[3.0, -1.0, -1.0, -1.0], [-1.0, 3.0, -1.0, -1.0]])
        moved = _stepped(optim.NpuFusedAdamP, weight, grad, lr=0.1) - weight
        assert torch.allclose((moved * weight).sum(dim=1), torch.zeros(2), atol=1e-6)
        assert moved.abs().sum() > 0.1
        decayed = _stepped(optim.NpuFusedAdamP, weight, grad, lr=0.1, weight_decay=0.5, wd_ratio=0.1)
        assert torch.allclose(decayed, weight * (1 - 0.1 * 0.5 * 0.1) + moved, atol=1e-6)  # decay, then the step

    @pytest.mark.parametrize("scale", [0.5, 100.0])
    def test_lamb_moves_each_weight_by_lr_times_its_clamped_norm(self, optim, scale):
        """LAMB's trust ratio ||w|| / ||step||: each step has length lr * min(||w||, 10)."""
        weight, grad = torch.randn(5, 5) * scale, torch.randn(5, 5)
        moved = _stepped(optim.NpuFusedLamb, weight, grad, lr=0.01) - weight
        assert math.isclose(moved.norm().item(), 0.01 * min(weight.norm().item(), 10.0), rel_tol=1e-4)

    def test_lamb_with_adam_true_takes_the_plain_step(self, optim):
        weight, grad = torch.randn(4), torch.randn(4)
        moved = _stepped(optim.NpuFusedLamb, weight, grad, lr=0.01, adam=True) - weight
        expected = -0.01 * (0.1 * grad) / ((0.001 * grad * grad).sqrt() + 1e-6)  # no bias correction
        assert torch.allclose(moved, expected, atol=1e-6)

    @pytest.mark.parametrize("size, divided", [(0.1, False), (50.0, True)])
    def test_lamb_with_the_global_norm_divides_gradients_above_norm_one_by_it(self, optim, size, divided):
        a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
        optimizer = optim.NpuFusedLamb([a, b], lr=0.01, use_global_grad_norm=True)
        a.grad, b.grad = torch.full((2,), size), torch.full((2,), -size)
        optimizer.step()
        norm = 2 * size  # of the four gradients together
        assert torch.allclose(optimizer.state[a]["exp_avg"], 0.1 * torch.full((2,), size / norm if divided else size))


    def test_rmsprop_tf_starts_its_average_at_one_and_puts_eps_in_the_root(self, optim):
        weight, grad = torch.randn(4), torch.randn(4)
        moved = _stepped(optim.NpuFusedRMSpropTF, weight, grad, lr=0.01, alpha=0.9, eps=1e-3) - weight
        square_avg = 1 + 0.1 * (grad * grad - 1)
        assert torch.allclose(moved, -0.01 * grad / (square_avg + 1e-3).sqrt(), atol=1e-6)

    def test_rmsprop_tf_accumulates_the_learning_rate_in_its_momentum(self, optim):
        weight, grad = torch.randn(4), torch.randn(4)
        moved = _stepped(optim.NpuFusedRMSpropTF, weight, grad, steps=2, lr=0.01, momentum=0.9) - weight
        first = 0.01 * grad / (1 + 0.1 * (grad * grad - 1) + 1e-10).sqrt()
        square_avg = 1 + 0.1 * (grad * grad - 1)
        square_avg = square_avg + 0.1 * (grad * grad - square_avg)
        second = 0.9 * first + 0.01 * grad / (square_avg + 1e-10).sqrt()
        assert torch.allclose(moved, -(first + second), atol=1e-6)

    def test_bert_adam_clips_then_steps_without_bias_correction(self, optim):
        weight, grad = torch.randn(3), torch.tensor([3.0, 4.0, 0.0])  # norm 5, clipped to 1
        moved = _stepped(optim.NpuFusedBertAdam, weight, grad, lr=0.1, weight_decay=0.0) - weight
        clipped = grad / (5 + 1e-6)
        expected = -0.1 * (0.1 * clipped) / ((0.001 * clipped * clipped).sqrt() + 1e-6)
        assert torch.allclose(moved, expected, atol=1e-6)

    def test_bert_adam_schedules_the_learning_rate(self, optim):
        """warmup_linear: the rate grows from 0 over the warmup fraction of t_total."""
        weight, grad = torch.randn(3), torch.randn(3)
        first = _stepped(optim.NpuFusedBertAdam, weight, grad, lr=0.1, warmup=0.1, t_total=100)
        assert torch.equal(first, weight)  # step 0 of the warmup: rate 0


class TestTorchNpusInterface:
    def test_a_trained_bfloat16_parameter_is_refused_at_the_step_and_a_frozen_one_is_not(self, optim):
        frozen = torch.nn.Parameter(torch.ones(2, dtype=torch.bfloat16), requires_grad=False)
        trained = torch.nn.Parameter(torch.ones(2))
        optimizer = optim.NpuFusedAdamW([frozen, trained], lr=0.1)
        trained.grad = torch.ones(2)
        optimizer.step()
        half = torch.nn.Parameter(torch.ones(2, dtype=torch.bfloat16))
        for optimizer_class in (optim.NpuFusedAdamW, optim.NpuFusedLamb):
            optimizer = optimizer_class([half], lr=0.1)
            half.grad = torch.ones(2, dtype=torch.bfloat16)
            with pytest.raises(TypeError, match="float32 or float16"):
                optimizer.step()

    def test_sgd_needs_a_learning_rate(self, optim):
        with pytest.raises(ValueError, match="required optimization parameter lr"):
            optim.NpuFusedSGD([torch.nn.Parameter(torch.ones(2))])

    def test_clip_grad_norm_fused_clips_all_gradients_together(self, optim):
        a, b = torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))
        optimizer = optim.NpuFusedLamb([a, b], lr=0.1)
        a.grad, b.grad = torch.tensor([3.0]), torch.tensor([4.0])
        total = optimizer.clip_grad_norm_fused_(1.0)
        assert math.isclose(float(total), 5.0, rel_tol=1e-6)
        assert math.isclose(math.hypot(a.grad.item(), b.grad.item()), 1.0, rel_tol=1e-4)

    def test_each_class_is_in_its_module_as_in_torch_npu(self, optim):
        from torch_npu.optim.npu_fused_lamb import NpuFusedLamb
        from torch_npu.optim.npu_fused_optim_base import NpuFusedOptimizerBase

        assert NpuFusedLamb is optim.NpuFusedLamb and issubclass(NpuFusedLamb, NpuFusedOptimizerBase)
        assert optim.npu_fused_rmsprop_tf.NpuFusedRMSpropTF is optim.NpuFusedRMSpropTF


SHARDED_SCALER = """
import torch, torch_npu
import torch.distributed as dist
dist.init_process_group("gloo", rank=0, world_size=1)
from torch_npu.npu.amp.sharded_grad_scaler import ShardedGradScaler
model = torch.nn.Linear(3, 1).to("npu")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = ShardedGradScaler(init_scale=4.0)
scaler.scale(model(torch.ones(2, 3).to("npu")).sum()).backward()
scaler.step(optimizer)
scaler.update()
print("scale", scaler.get_scale(), "grad", model.weight.grad.tolist())
"""


def test_sharded_grad_scaler_unscales_what_it_scaled(tmp_path):
    """torch_npu.npu.amp.ShardedGradScaler (FSDP's scaler; public in torch_npu 2.2.0, whose data the
    imitation reads here) scales the loss and hands the optimizer the true gradients; made when first
    asked for, as importing FSDP is slow."""
    script = tmp_path / "scaler.py"
    script.write_text(SHARDED_SCALER)
    done = run_script(script, [], cwd=tmp_path, env_extra={
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": free_port(),
        "STANDIN_TORCH_NPU_DATA": os.path.join(STANDIN_DIR, "..", "..", "data", "torch_npu_2.2.0.json")})
    assert done.returncode == 0, done.stderr
    assert "scale 4.0 grad [[2.0, 2.0, 2.0]]" in done.stdout
