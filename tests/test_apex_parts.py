"""NPU265 and the generated ascend_apex package: apex's FusedRMSNorm on torch_npu.npu_rms_norm,
checked against apex's documented computation, x / sqrt(mean(x ** 2) + eps) * weight over the
normalized dimensions, eps 1e-5 by default; apex's FusedAdam, FusedSGD and FusedAdagrad on
torch.optim, checked against their documented updates written out as tensor arithmetic;
apex.parallel on torch's DistributedDataParallel and SyncBatchNorm, run on two ranks."""
import copy
import json
import os
import sys

import pytest

# (every test here runs the migrated code against the CPU stand-in of torch_npu)
torch = pytest.importorskip("torch", reason="needs PyTorch (CPU build): these tests run migrated code")

from helpers import free_port, migrate, read_csv
from standin_runner import STANDIN_DIR, run_script

GENERATED = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gpu2npu", "generated")


@pytest.fixture(scope="module")
def normalization():
    for folder in (STANDIN_DIR, GENERATED):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import ascend_apex
    return ascend_apex.normalization


@pytest.fixture(scope="module")
def optimizers(normalization):
    import ascend_apex
    return ascend_apex.optimizers


def reference(x, weight, dims, eps=1e-5):
    axes = tuple(range(x.dim() - dims, x.dim()))
    return x / torch.sqrt((x * x).mean(dim=axes, keepdim=True) + eps) * weight


@pytest.mark.parametrize("shape, normalized", [((2, 5, 16), 16), ((3, 4, 6), (4, 6))])
def test_rms_norm_matches_apex_computation(normalization, shape, normalized):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=generator)
    norm = normalization.FusedRMSNorm(normalized)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(norm.weight.shape, generator=generator) + 0.5)
    dims = 1 if isinstance(normalized, int) else len(normalized)
    assert float((norm(x) - reference(x, norm.weight, dims)).detach().abs().max()) <= 1e-5
    assert norm.eps == 1e-5 and list(norm.state_dict()) == ["weight"]


def test_without_affine_weight_and_with_apex_positions(normalization):
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))
    norm = normalization.FusedRMSNorm(8, 1e-6, False)
    assert norm.weight is None and norm.eps == 1e-6
    assert float((norm(x) - reference(x, torch.ones(8), 1, 1e-6)).abs().max()) <= 1e-5
    with pytest.raises(RuntimeError, match="last dimensions"):
        norm(torch.randn(4, 7))


@pytest.mark.parametrize("input_dtype, weight_dtype", [(torch.bfloat16, torch.float32), (torch.float32, torch.bfloat16),
                                                        (torch.float16, torch.bfloat16), (torch.float32, torch.float32)])
def test_mixed_rms_norm_computes_in_float32_and_answers_in_the_weights_dtype(normalization, input_dtype, weight_dtype):
    # apex's mixed-dtype kernel: statistics and product in float32, one rounding to the weight's dtype
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(3, 5, 16, generator=generator).to(input_dtype)
    norm = normalization.MixedFusedRMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(16, generator=generator) + 0.5)
    norm.to(weight_dtype)
    output = norm(x)
    want = reference(x.float(), norm.weight.detach().float(), 1, 1e-6).to(weight_dtype)
    assert output.dtype == weight_dtype
    assert float((output.detach().float() - want.float()).abs().max()) <= 1e-5
    output.float().sum().backward()
    assert norm.weight.grad is not None and norm.weight.grad.dtype == weight_dtype


def test_mixed_rms_norm_keeps_apex_constructor(normalization):
    norm = normalization.MixedFusedRMSNorm((4, 6), 1e-6, memory_efficient=True)
    assert norm.normalized_shape == (4, 6) and norm.eps == 1e-6 and list(norm.state_dict()) == ["weight"]
    assert isinstance(norm, normalization.FusedRMSNorm)
    with pytest.raises(RuntimeError, match="elementwise_affine = False"):
        normalization.MixedFusedRMSNorm(8, elementwise_affine=False)


def test_layer_norm_keeps_apex_constructor(normalization):
    norm = normalization.FusedLayerNorm(8, 1e-6, True, True)
    x = torch.randn(3, 8)
    want = torch.nn.functional.layer_norm(x, (8,), norm.weight, norm.bias, 1e-6)
    assert isinstance(norm, torch.nn.LayerNorm) and torch.allclose(norm(x), want)


def test_a_migrated_model_file_runs_on_the_standin(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "model.py").write_text(
        "import torch\nfrom apex.normalization import FusedLayerNorm, FusedRMSNorm, MixedFusedRMSNorm\n\n"
        "x = torch.randn(2, 3, 16, generator=torch.Generator().manual_seed(0))\n"
        "rms, ln = FusedRMSNorm(16), FusedLayerNorm(16, memory_efficient=True)\n"
        "mixed = MixedFusedRMSNorm(16)\n"
        "want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)\n"
        "xb = x.bfloat16().float()\n"
        "error = (rms(x) - want).abs().max()\n"
        "error += (mixed(x.bfloat16()) - xb * torch.rsqrt(xb.pow(2).mean(-1, keepdim=True) + 1e-5)).abs().max()\n"
        "print('max error', float(error + (ln(x) - torch.nn.functional.layer_norm(x, (16,))).abs().max()))\n")
    target = migrate(project, tmp_path / "out")
    assert ("from ascend_apex.normalization import FusedLayerNorm, FusedRMSNorm, MixedFusedRMSNorm"
            in (target / "model.py").read_text())
    assert (target / "ascend_apex" / "normalization.py").is_file()
    assert not [row for row in read_csv(target / "unsupported_api.csv") if "apex" in row["OP"]]
    result = run_script(target / "model.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.split()[-1]) <= 1e-5


def test_layer_norm_alone_still_goes_to_torch_and_a_file_on_apex_amp_keeps_its_imports(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("from apex.normalization import FusedLayerNorm\nnorm = FusedLayerNorm(8)\n")
    (project / "b.py").write_text("from apex.normalization import FusedRMSNorm\nfrom apex import amp\nnorm = FusedRMSNorm(8)\n")
    target = migrate(project, tmp_path / "out")
    assert (target / "a.py").read_text().startswith("from torch.nn import LayerNorm as FusedLayerNorm\n")
    assert (target / "b.py").read_text() == (project / "b.py").read_text()
    assert not (target / "ascend_apex").exists()


def _parameters(seed=3):
    generator = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 4, generator=generator)),
            torch.nn.Parameter(torch.randn(4, generator=generator))]


def _gradients(step, parameters):
    generator = torch.Generator().manual_seed(100 + step)
    return [torch.randn(p.shape, generator=generator) for p in parameters]


def _run(optimizer, parameters, steps=6):
    for step in range(steps):
        optimizer.zero_grad()
        for p, g in zip(parameters, _gradients(step, parameters)):
            p.grad = g.clone()
        optimizer.step()
    return [p.detach().clone() for p in parameters]


def _adam_reference(values, lr, betas, eps, weight_decay, decoupled, steps=6):
    """apex's FusedAdam: m, v moving averages of g and g*g, both bias-corrected; adam_w_mode=True
    subtracts lr * weight_decay * p with the update, adam_w_mode=False adds weight_decay * p to g."""
    values = [v.detach().clone() for v in values]
    m = [torch.zeros_like(v) for v in values]
    s = [torch.zeros_like(v) for v in values]
    for step in range(steps):
        t = step + 1
        for i, g in enumerate(_gradients(step, values)):
            if not decoupled:
                g = g + weight_decay * values[i]
            m[i] = betas[0] * m[i] + (1 - betas[0]) * g
            s[i] = betas[1] * s[i] + (1 - betas[1]) * g * g
            update = (m[i] / (1 - betas[0] ** t)) / ((s[i] / (1 - betas[1] ** t)).sqrt() + eps)
            if decoupled:
                update = update + weight_decay * values[i]
            values[i] = values[i] - lr * update
    return values


@pytest.mark.parametrize("adam_w_mode", [True, False])
def test_fused_adam_computes_apex_update(optimizers, adam_w_mode):
    parameters = _parameters()
    want = _adam_reference(parameters, 1e-2, (0.8, 0.95), 1e-6, 0.1, adam_w_mode)
    optimizer = optimizers.FusedAdam(parameters, 1e-2, True, (0.8, 0.95), 1e-6, adam_w_mode, 0.1)
    got = _run(optimizer, parameters)
    assert max(float((a - b).abs().max()) for a, b in zip(got, want)) <= 1e-6
    base = torch.optim.AdamW if adam_w_mode else torch.optim.Adam
    assert isinstance(optimizer, optimizers.FusedAdam) and isinstance(optimizer, base)


def test_fused_adam_defaults_are_apex_ones(optimizers):
    parameters = _parameters()
    optimizer = optimizers.FusedAdam(parameters)
    group = optimizer.param_groups[0]
    # apex: lr 1e-3, eps 1e-8, weight decay 0.0 (torch's AdamW defaults to 1e-2), decoupled
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (1e-3, (0.9, 0.999), 1e-8, 0.0)
    assert optimizer.adam_w_mode and optimizer.set_grad_none
    for p in parameters:
        p.grad = torch.ones_like(p)
    optimizer.zero_grad()
    assert all(p.grad is None for p in parameters)


def test_fused_adam_keeps_groups_state_and_schedulers_working(optimizers):
    parameters = _parameters()
    optimizer = optimizers.FusedAdam([{"params": parameters[:1]}, {"params": parameters[1:], "weight_decay": 0.0}],
                                     lr=1e-2, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    _run(optimizer, parameters, steps=2)
    scheduler.step()
    assert [g["lr"] for g in optimizer.param_groups] == [5e-3, 5e-3]
    clone = copy.deepcopy(optimizer)
    assert type(clone) is type(optimizer) and clone.adam_w_mode
    others = _parameters()
    fresh = optimizers.FusedAdam([{"params": others[:1]}, {"params": others[1:]}])
    fresh.load_state_dict(optimizer.state_dict())
    assert int(fresh.state_dict()["state"][0]["step"]) == 2
    assert [g["weight_decay"] for g in fresh.param_groups] == [0.1, 0.0]


@pytest.mark.parametrize("arguments, error, match", [
    ({"amsgrad": True}, RuntimeError, "AMSGrad"),
    ({"bias_correction": False}, NotImplementedError, "bias_correction=False"),
    ({"master_weights": True}, NotImplementedError, "master_weights=True"),
])
def test_fused_adam_refuses_what_torch_does_not_compute(optimizers, arguments, error, match):
    with pytest.raises(error, match=match):
        optimizers.FusedAdam(_parameters(), **arguments)


def test_fused_sgd_computes_apex_update(optimizers):
    """apex's FusedSGD with wd_after_momentum=False: g += wd * p; buf = g at the first step, then
    momentum * buf + (1 - dampening) * g; nesterov steps along g + momentum * buf."""
    for nesterov, dampening in ((False, 0.1), (True, 0.0)):
        parameters = _parameters()
        values = [p.detach().clone() for p in parameters]
        buffers = [None] * len(values)
        for step in range(6):
            for i, g in enumerate(_gradients(step, values)):
                g = g + 0.01 * values[i]
                buffers[i] = g if buffers[i] is None else 0.9 * buffers[i] + (1 - dampening) * g
                direction = g + 0.9 * buffers[i] if nesterov else buffers[i]
                values[i] = values[i] - 0.05 * direction
        optimizer = optimizers.FusedSGD(parameters, 0.05, 0.9, dampening, 0.01, nesterov)
        got = _run(optimizer, parameters)
        assert max(float((a - b).abs().max()) for a, b in zip(got, values)) <= 1e-6
        assert isinstance(optimizer, torch.optim.SGD) and not optimizer.set_grad_none
    with pytest.raises(NotImplementedError, match="wd_after_momentum=True"):
        optimizers.FusedSGD(_parameters(), 0.1, wd_after_momentum=True)
    with pytest.raises(TypeError):
        optimizers.FusedSGD(_parameters())  # apex's lr has no default


def test_fused_adagrad_computes_apex_update(optimizers):
    """apex's FusedAdagrad (adagrad_w_mode=False): g += wd * p; h += g * g; p -= lr * g / (sqrt(h) + eps)."""
    parameters = _parameters()
    values = [p.detach().clone() for p in parameters]
    sums = [torch.zeros_like(v) for v in values]
    for step in range(6):
        for i, g in enumerate(_gradients(step, values)):
            g = g + 0.05 * values[i]
            sums[i] = sums[i] + g * g
            values[i] = values[i] - 0.1 * g / (sums[i].sqrt() + 1e-10)
    optimizer = optimizers.FusedAdagrad(parameters, 0.1, weight_decay=0.05)
    got = _run(optimizer, parameters)
    assert max(float((a - b).abs().max()) for a, b in zip(got, values)) <= 1e-6
    with pytest.raises(NotImplementedError, match="adagrad_w_mode=True"):
        optimizers.FusedAdagrad(_parameters(), adagrad_w_mode=True)


def test_a_file_on_apex_optimizers_and_normalization_migrates_and_one_on_lamb_stays(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(
        "import torch\nimport apex.optimizers\nfrom apex.normalization import FusedRMSNorm\n\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 8), FusedRMSNorm(8))\n"
        "opt = apex.optimizers.FusedAdam(model.parameters(), lr=1e-2, weight_decay=0.1)\n"
        "losses = []\n"
        "for _ in range(3):\n"
        "    opt.zero_grad()\n"
        "    loss = model(torch.ones(2, 8)).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    losses.append(loss.item())\n"
        "opt.zero_grad()\n"
        "print(isinstance(opt, apex.optimizers.FusedAdam), isinstance(opt, torch.optim.AdamW),\n"
        "      all(p.grad is None for p in model.parameters()), losses[0] > losses[1] > losses[2])\n")
    (project / "lamb.py").write_text("from apex.optimizers import FusedAdam, FusedLAMB\n")
    target = migrate(project, tmp_path / "out")
    text = (target / "train.py").read_text()
    assert "import ascend_apex.optimizers\n" not in text and "import ascend_apex as apex\n" in text
    assert "from ascend_apex.normalization import FusedRMSNorm\n" in text
    assert (target / "lamb.py").read_text() == (project / "lamb.py").read_text()
    rows = read_csv(target / "unsupported_api.csv")
    assert {row["OP"] for row in rows if row["File"] == "train.py" and "apex" in row["OP"]} == set()
    assert any(row["File"] == "lamb.py" and "FusedLAMB" in row["OP"] and "NpuFusedLamb" in row["Tips"] for row in rows)
    result = run_script(target / "train.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"] * 4


DDP_SCRIPT = '''import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from apex.parallel import DistributedDataParallel as DDP


def batch(rank):
    return torch.randn(6, 4, generator=torch.Generator().manual_seed(10 + rank))


def worker(rank, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=rank, world_size=2)
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)))
    model(batch(rank)).pow(2).sum().backward()
    linear, norm = model.module
    # one write per rank: print() writes the line and its end separately, and the ranks share stdout
    sys.stdout.write(json.dumps({"rank": rank, "weight": linear.weight.tolist(), "grad": linear.weight.grad.tolist(),
                                 "running_mean": norm.running_mean.tolist()}) + "\\n")
    sys.stdout.flush()
    dist.barrier()  # neither leaves while the other still talks to it
    dist.destroy_process_group()
    # without Python's finalization: gloo's worker thread may still be freeing the barrier's work
    # and would abort the process ("terminate called without an active exception")
    os._exit(0)


if __name__ == "__main__":
    mp.spawn(worker, args=(int(sys.argv[1]),), nprocs=2)
'''


def test_apex_ddp_migrates_and_keeps_apex_semantics_on_two_ranks(tmp_path):
    """apex's DistributedDataParallel: rank 0's parameters on every rank, gradients averaged over
    the ranks, buffers (BatchNorm running statistics) left to each rank."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train_ddp.py").write_text(DDP_SCRIPT)
    target = migrate(project, tmp_path / "out")
    assert "from ascend_apex.parallel import DistributedDataParallel as DDP\n" in (target / "train_ddp.py").read_text()
    result = run_script(target / "train_ddp.py", [free_port()], cwd=tmp_path, timeout=240)
    assert result.returncode == 0, result.stderr
    ranks = {row["rank"]: row for row in map(json.loads, result.stdout.splitlines())}
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    grads, means = [], []
    for rank in (0, 1):
        model = copy.deepcopy(reference)
        model(torch.randn(6, 4, generator=torch.Generator().manual_seed(10 + rank))).pow(2).sum().backward()
        grads.append(model[0].weight.grad)
        means.append(model[1].running_mean)
    for rank in (0, 1):
        assert torch.allclose(torch.tensor(ranks[rank]["weight"]), reference[0].weight, atol=1e-7)
        assert torch.allclose(torch.tensor(ranks[rank]["grad"]), (grads[0] + grads[1]) / 2, atol=1e-6)
        assert torch.allclose(torch.tensor(ranks[rank]["running_mean"]), means[rank], atol=1e-6)
    assert not torch.allclose(means[0], means[1])


def test_apex_parallel_refuses_what_torch_does_not_compute(optimizers):
    import ascend_apex

    parallel = ascend_apex.parallel
    with pytest.raises(NotImplementedError, match="gradient_average=False"):
        parallel.DistributedDataParallel(torch.nn.Linear(2, 2), gradient_average=False)
    with pytest.raises(ValueError, match="shared_param"):
        parallel.DistributedDataParallel(torch.nn.Linear(2, 2), shared_param=True)
    with pytest.raises(NotImplementedError, match="channel_last=True"):
        parallel.SyncBatchNorm(8, channel_last=True)
    with pytest.raises(NotImplementedError, match="channel_last=True"):
        parallel.convert_syncbn_model(torch.nn.BatchNorm2d(8), channel_last=True)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 1), torch.nn.BatchNorm2d(8))
    with torch.no_grad():
        model[1].running_mean.fill_(0.5)
    converted = parallel.convert_syncbn_model(model)
    assert isinstance(converted[1], torch.nn.SyncBatchNorm) and float(converted[1].running_mean[0]) == 0.5
    norm = parallel.SyncBatchNorm(8, 1e-3, 0.2)
    assert isinstance(norm, torch.nn.SyncBatchNorm) and (norm.eps, norm.momentum) == (1e-3, 0.2)
