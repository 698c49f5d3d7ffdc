"""Tests of the CPU stand-in for torch_npu (src/gpu2npu/dryrun/standin/torch_npu).

Importing the stand-in patches torch for the rest of this pytest process; that
only happens inside the ``npu`` fixture (i.e. when these tests run).  Anything
depending on environment variables or needing a fresh interpreter runs in a
subprocess through ``standin_runner.run_script``.
"""

import io
import json
import os
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from helpers import free_port  # noqa: E402
from standin_runner import import_imitation, parse_losses, run_script  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL_DATA = os.path.join(REPO, "src", "gpu2npu", "data",
                         f"torch_npu_{torch.__version__.split('+')[0]}.json")

# Names of torch_npu.npu that migrated code uses and the stand-in must provide.
REQUIRED_NPU = [
    "is_available", "device_count", "current_device", "set_device", "synchronize",
    "empty_cache", "manual_seed", "manual_seed_all", "seed", "get_device_name",
    "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
    "is_bf16_supported", "Event", "Stream", "amp", "FloatTensor",
]


@pytest.fixture(scope="module")
def npu():
    return import_imitation()


def _script(tmp_path, body, name="script.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


# --------------------------------------------------------------------------- API
def test_torch_npu_is_torch_npu_attr(npu):
    assert torch.npu is npu.npu
    assert sys.modules["torch.npu"] is npu.npu
    import torch_npu.npu.amp as amp

    assert amp is npu.npu.amp


def test_npu_functions(npu):
    n = npu.npu
    assert n.is_available() is True
    assert n.device_count() == 1
    assert n.current_device() == 0
    n.set_device(0)
    n.set_device("npu:0")
    n.set_device(torch.device("npu", 0))
    n.set_device(torch.device("npu:0"))
    with pytest.raises(RuntimeError):
        n.set_device(1)  # only one NPU unless STANDIN_NPU_COUNT says more
    with pytest.raises(ValueError):
        n.set_device("cuda:0")
    assert n.synchronize() is None and n.empty_cache() is None
    assert isinstance(n.get_device_name(), str) and isinstance(n.get_device_name(0), str)
    assert n.memory_allocated() == 0 and n.max_memory_allocated(0) == 0
    assert n.reset_peak_memory_stats() is None
    assert n.is_bf16_supported() is True
    assert n.FloatTensor is torch.FloatTensor
    assert isinstance(torch.zeros(2), n.FloatTensor)
    assert n.get_device_properties(0).total_memory > 0
    assert n.mem_get_info()[1] > 0
    assert isinstance(n.memory_stats(), dict)


def test_device_queries_take_torch_npus_parameters_only(npu):
    """torch_npu names the device of get_device_name/get_device_properties device_name, and
    can_device_access_peer's device_id and peer_device_id: CUDA's keywords raise there, and here."""
    n = npu.npu
    assert isinstance(n.get_device_name(device_name=0), str) and n.get_device_properties(device_name=0).total_memory
    assert n.is_bf16_supported(including_emulation=False) is True  # (torch_npu 2.9.0 on, as this stand-in's 2.13)
    for call in (lambda: n.get_device_name(device=0), lambda: n.get_device_properties(device=0),
                 lambda: n.can_device_access_peer(device=0, peer_device=1)):
        with pytest.raises(TypeError):
            call()


def test_device_count_env(npu, monkeypatch):
    monkeypatch.setenv("STANDIN_NPU_COUNT", "4")
    assert npu.npu.device_count() == 4
    npu.npu.set_device("npu:3")
    assert npu.npu.current_device() == 3
    with npu.npu.device(1):
        assert npu.npu.current_device() == 1
    assert npu.npu.current_device() == 3
    npu.npu.set_device(0)


def test_npu_seeding_does_not_touch_cpu_rng(npu):
    torch.manual_seed(123)
    a = torch.randn(5)
    torch.manual_seed(123)
    npu.npu.manual_seed(7)
    npu.npu.manual_seed_all(8)
    npu.npu.seed()
    b = torch.randn(5)
    assert torch.equal(a, b)
    npu.npu.manual_seed(5)
    assert npu.npu.initial_seed() == 5
    st = npu.npu.get_rng_state()
    npu.npu.set_rng_state(st)


def test_events_and_streams(npu):
    n = npu.npu
    s = n.Stream()
    cur = n.current_stream()
    s.wait_stream(cur)
    with n.stream(s):
        assert n.current_stream() is s
    assert n.current_stream() is cur
    e0, e1 = n.Event(enable_timing=True), n.Event(enable_timing=True)
    e0.record()
    x = torch.ones(3).npu()
    e1.record()
    e1.synchronize()
    assert e0.elapsed_time(e1) >= 0 and e1.query()
    x.record_stream(s)
    n.default_stream().synchronize()


# ----------------------------------------------------------------------- devices
def test_npu_devices_are_valid(npu):
    for d in (torch.device("npu"), torch.device("npu:0"), torch.device("npu", 0)):
        assert d.type == "npu"
    assert torch.device("npu", 1).index == 1
    assert torch.device(0) == torch.device("npu:0")  # int = accelerator = NPU


def test_tensor_to_and_npu(npu):
    x = torch.arange(4.0)
    dev = torch.device("npu:0")
    for y in (x.to("npu"), x.to("npu:0", non_blocking=True), x.to(dev),
              x.to(device=dev), x.to(dev, torch.float64), x.to(0),
              x.npu(), x.npu(0), x.npu(non_blocking=True), x.npu(dev)):
        assert y.device.type == "cpu" and y.is_npu
        assert torch.equal(y.double(), x.double())
    assert x.to("npu") is x  # same as x.to("cpu"): no copy, same aliasing
    assert x.to("npu", torch.float16).dtype == torch.float16


def test_module_to_and_npu(npu):
    class Args:
        gpu = 0

    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    assert m.to(torch.device("npu:0")) is m
    assert m.to("npu") is m and m.npu() is m and m.npu(Args.gpu) is m
    assert m.to("npu", torch.float64) is m and m[0].weight.dtype == torch.float64
    assert all(p.device.type == "cpu" for p in m.parameters())
    e = torch.nn.Linear(2, 2, device="meta").to_empty(device="npu")
    assert e.weight.device.type == "cpu"
    lin = torch.nn.Linear(2, 2, device="npu:0")
    assert lin.weight.device.type == "cpu"


@pytest.mark.parametrize("device", ["npu", "npu:0", "npu-device-object", "int-0"])
def test_factories(npu, device):
    dev = {"npu-device-object": torch.device("npu", 0), "int-0": 0}.get(device, device)
    like = torch.ones(2, 3)
    made = [
        torch.zeros(2, device=dev), torch.ones(2, device=dev), torch.empty(2, device=dev),
        torch.full((2,), 3.0, device=dev), torch.rand(2, device=dev),
        torch.randn(2, device=dev), torch.randint(0, 5, (2,), device=dev),
        torch.arange(5, device=dev), torch.tensor([1, 2], device=dev),
        torch.as_tensor([1.0], device=dev), torch.zeros_like(like, device=dev),
        torch.ones_like(like, device=dev), torch.empty_like(like, device=dev),
        torch.full_like(like, 2, device=dev), torch.rand_like(like, device=dev),
        torch.randn_like(like, device=dev), torch.randint_like(like, 3, device=dev),
        torch.randperm(4, device=dev), torch.linspace(0, 1, 5, device=dev),
        torch.eye(3, device=dev), like.new_zeros(2, device=dev),
        like.new_tensor([1.0], device=dev), torch.zeros(2, device=dev, pin_memory=True),
    ]
    assert all(t.device.type == "cpu" for t in made)


def test_factories_random_numbers_match_cpu(npu):
    torch.manual_seed(0)
    a = [torch.randn(3, device="npu"), torch.rand(3, device="npu:0"),
         torch.randperm(5, device=torch.device("npu"))]
    torch.manual_seed(0)
    b = [torch.randn(3), torch.rand(3), torch.randperm(5)]
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_generator(npu):
    g = torch.Generator(device="npu")
    g.manual_seed(1)
    a = torch.randn(3, generator=g, device="npu")
    g2 = torch.Generator(device=torch.device("npu:0")).manual_seed(1)
    assert torch.equal(a, torch.randn(3, generator=g2))
    assert isinstance(g, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
    assert torch.Generator().device.type == "cpu"


def test_torchscript_still_compiles_factories(npu):
    @torch.jit.script
    def f(x: torch.Tensor) -> torch.Tensor:
        return x + torch.zeros(3) + torch.ones_like(x)

    assert torch.equal(f(torch.ones(3)), torch.full((3,), 2.0))


@pytest.mark.parametrize("loc", ["npu:0", "npu", "device", "dict", "callable"])
def test_load_map_location(npu, loc):
    buf = io.BytesIO()
    torch.save({"w": torch.arange(3.0)}, buf)
    buf.seek(0)
    ml = {"device": torch.device("npu:0"), "dict": {"cpu": "npu:0"},
          "callable": lambda s, _loc: s.npu()}.get(loc, loc)
    out = torch.load(buf, map_location=ml)
    assert torch.equal(out["w"], torch.arange(3.0))


def test_is_npu_and_pin_memory(npu):
    x = torch.ones(3)
    assert x.is_npu and x.npu().is_npu
    p = x.pin_memory()
    assert torch.equal(p, x) and p.data_ptr() != x.data_ptr()
    from torch.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(torch.arange(8.0).view(4, 2), torch.arange(4))
    for workers in (0, 1):
        batches = list(DataLoader(ds, batch_size=2, pin_memory=True, num_workers=workers))
        assert torch.equal(batches[1][0], torch.tensor([[4.0, 5.0], [6.0, 7.0]]))


def test_autocast_variants(npu):
    m = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = m(x)
    for ctx in (torch.autocast("npu", dtype=torch.bfloat16),
                torch.autocast(device_type="npu"),
                torch.amp.autocast(device_type="npu"),
                torch.amp.autocast("npu", dtype=torch.bfloat16),
                npu.npu.amp.autocast(),
                npu.npu.amp.autocast(enabled=True, dtype=torch.bfloat16)):
        with ctx:
            assert torch.is_autocast_enabled("npu")
            y = m(x)
        assert y.dtype == torch.bfloat16 and torch.equal(y, ref)
    with npu.npu.amp.autocast(enabled=False):
        assert m(x).dtype == torch.float32
    with npu.npu.amp.autocast(dtype=torch.float16):
        assert m(x).dtype == torch.float16


def test_autocast_off_env(npu, monkeypatch):
    monkeypatch.setenv("STANDIN_AUTOCAST", "off")
    with torch.autocast("npu", dtype=torch.bfloat16):
        assert torch.nn.Linear(2, 2)(torch.ones(1, 2)).dtype == torch.float32


def test_gradscaler_variants(npu):
    for s in (torch.amp.GradScaler("npu"), torch.amp.GradScaler(device="npu"),
              npu.npu.amp.GradScaler(), npu.npu.amp.GradScaler(init_scale=1024.0)):
        assert s.is_enabled() and s._device == "cpu"
    off = npu.npu.amp.GradScaler(enabled=False)
    loss = torch.tensor(2.5)
    assert off.scale(loss) is loss and off.get_scale() == 1.0
    assert npu.npu.amp.GradScaler(dynamic=False).is_enabled()


def test_cudnn_flags(npu):
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = False


# ------------------------------------------------------------- CUDA keeps failing
def test_cuda_still_fails(npu):
    x = torch.ones(2)
    for bad in (lambda: x.cuda(), lambda: x.to("cuda"), lambda: x.to("cuda:0"),
                lambda: torch.zeros(2, device="cuda"), lambda: torch.nn.Linear(2, 2).cuda(),
                lambda: torch.cuda.set_device(0), lambda: torch.cuda.current_device()):
        with pytest.raises((RuntimeError, AssertionError, AttributeError)):
            bad()
    assert torch.cuda.is_available() is False
    assert not x.is_cuda


# -------------------------------------------------------------------- training
def _train(device, scaler_enabled=None, steps=3):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Dropout(0.1), torch.nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = None
    if scaler_enabled is not None:
        scaler = torch.amp.GradScaler(torch.device(device).type, enabled=scaler_enabled)
    losses = []
    for _ in range(steps):
        x = torch.randn(4, 8, device=device)
        y = torch.randn(4, 1).to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("scaler", [None, False, True])
def test_training_npu_equals_cpu(npu, scaler):
    ref = _train("cpu", scaler)
    assert _train("npu", scaler) == ref
    assert _train("npu:0", scaler) == ref


# ------------------------------------------------------- subprocess-based tests
TRAIN_SCRIPT = """
import sys
import torch
DEV = sys.argv[1]
if DEV.startswith("npu"):
    import torch_npu
    assert torch.npu.is_available()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
model = model.npu() if DEV == "npu" else model.to(DEV)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for i in range(3):
    x = torch.randn(8, 4).to(DEV, non_blocking=True)
    loss = model(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"step {i} loss {loss.item()!r}")
"""


def test_runner_runs_migrated_script(tmp_path):
    script = _script(tmp_path, TRAIN_SCRIPT)
    npu_run = run_script(script, ["npu"], cwd=tmp_path)
    assert npu_run.returncode == 0, npu_run.stderr
    cpu_run = run_script(script, ["cpu"], cwd=tmp_path, use_standin=False)
    assert cpu_run.returncode == 0, cpu_run.stderr
    losses = parse_losses(npu_run.stdout)
    assert len(losses) == 3 and losses == parse_losses(cpu_run.stdout)
    # without the stand-in there is no torch_npu; with it, forgotten CUDA fails
    assert run_script(script, ["npu"], cwd=tmp_path, use_standin=False).returncode != 0
    cuda_run = run_script(script, ["cuda"], cwd=tmp_path)
    assert cuda_run.returncode != 0 and "CUDA" in cuda_run.stderr


def test_parse_losses():
    out = "epoch 0\nstep 0 loss 1.5\nstep 1 loss 0.25\nfoo step 2 loss 3\nstep 2 loss nan\n"
    losses = parse_losses(out)
    assert losses[:2] == [1.5, 0.25] and len(losses) == 3 and losses[2] != losses[2]


def test_name_filter(tmp_path):
    data = {"modules": {"torch_npu.npu": ["is_available", "device_count", "amp"],
                        "torch_npu.npu.amp": ["autocast"]}}
    path = tmp_path / "names.json"
    path.write_text(json.dumps(data))
    script = _script(tmp_path, """
        import torch, torch_npu
        assert torch.npu.is_available() and torch_npu.npu.device_count() == 1
        assert torch_npu.npu.amp.autocast
        for mod, name in [(torch_npu.npu, "set_device"), (torch.npu, "Event"),
                          (torch_npu.npu.amp, "GradScaler")]:
            try:
                getattr(mod, name)
            except AttributeError:
                continue
            raise SystemExit(f"{name} should be hidden")
        # hidden names do not break the stand-in's own patches
        torch.zeros(2, device="npu").to("npu:0")
        with torch.autocast("npu"):
            pass
        torch.amp.GradScaler("npu", enabled=False)
        print("ok")
    """)
    res = run_script(script, [], cwd=tmp_path, env_extra={"STANDIN_TORCH_NPU_DATA": str(path)})
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr
    # unset: everything implemented is visible
    res = run_script(_script(tmp_path, "import torch_npu; torch_npu.npu.set_device(0)\n",
                             name="s2.py"), [], cwd=tmp_path)
    assert res.returncode == 0, res.stderr


@pytest.mark.skipif(not os.path.exists(REAL_DATA), reason="no real torch_npu name list")
def test_required_names_exist_in_real_torch_npu(tmp_path):
    with open(REAL_DATA, encoding="utf-8") as f:
        modules = json.load(f)["modules"]
    assert set(REQUIRED_NPU) <= set(modules["torch_npu.npu"])
    assert {"autocast", "GradScaler"} <= set(modules["torch_npu.npu.amp"])
    script = _script(tmp_path, f"""
        import torch, torch_npu
        missing = [n for n in {REQUIRED_NPU!r} if not hasattr(torch_npu.npu, n)]
        missing += [n for n in ("autocast", "GradScaler") if not hasattr(torch.npu.amp, n)]
        assert not missing, missing
        print("ok")
    """)
    res = run_script(script, [], cwd=tmp_path, env_extra={"STANDIN_TORCH_NPU_DATA": REAL_DATA})
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


def test_hccl_names(npu):
    import torch.distributed as dist

    assert dist.is_hccl_available() is True
    assert dist.Backend.HCCL == "hccl"
    assert dist.Backend("hccl") == "hccl"


DDP_SCRIPT = """
import gc, os, sys
import torch
import torch_npu
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.npu.set_device(rank)
    dist.init_process_group(backend="hccl", rank=rank, world_size=world)
    assert dist.is_initialized() and dist.get_world_size() == world
    device = torch.device("npu", rank)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).npu(rank)
    model = DDP(model, device_ids=[rank], output_device=rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        torch.manual_seed(100 + rank)
        x = torch.randn(8, 4, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    t = torch.tensor([float(rank + 1)]).to(device)
    dist.all_reduce(t)
    assert t.item() == 3.0, t
    dist.barrier()
    w = model.module.weight.detach().clone()
    gathered = [torch.zeros_like(w) for _ in range(world)]
    dist.all_gather(gathered, w)
    assert torch.equal(gathered[0], gathered[1])
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": 0}, {"rank": 1}]
    print(f"rank {rank} ok {w.sum().item()!r}", flush=True)
    # torch 2.13 + gloo, with or without the stand-in: a DDP model still alive
    # when the process exits sometimes aborts it ("terminate called without an
    # active exception").  Free it before tearing the process group down.
    del model, opt, loss
    gc.collect()
    dist.destroy_process_group()
    # ... and it still does now and then, after both ranks are done: leave without the exit-time
    # destructors, whose abort is torch's and not what this test asks about.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
"""


def test_ddp_hccl_two_processes(tmp_path):
    script = _script(tmp_path, DDP_SCRIPT)
    res = run_script(script, [free_port()], cwd=tmp_path, timeout=240,
                     env_extra={"STANDIN_NPU_COUNT": "2"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rank 0 ok" in res.stdout and "rank 1 ok" in res.stdout


def test_every_name_of_every_release_is_imitated_or_explained(npu):
    """torch_npu's operators (torch_npu.npu_*), torch_npu.npu, torch_npu.npu.amp, torch_npu.optim,
    torch_npu.profiler, torch_npu.contrib (its function and module) and torch_npu.distributed of each
    release whose data gpu2npu has: each public name has a CPU meaning in the imitation, is a
    submodule it builds from the data, or is explained (the dry run's message says why)."""
    import glob

    from torch_npu import _impl, contrib, distributed, optim, profiler
    from torch_npu.npu import amp
    from torch_npu._explained import OPERATOR_WHY, WHY, operator_why

    def public(module):
        return {n for n in vars(module) if not n.startswith("_")}

    # (made when asked for: torchvision's where it is installed; torch.distributed's modules)
    torchvision_made = {"ROIAlign", "FusedColorJitter"}
    imitated = {"torch_npu.npu": public(_impl) | {"amp"},
                "torch_npu.npu.amp": public(amp) | {"ShardedGradScaler"},  # (made when asked for)
                "torch_npu.optim": public(optim),
                "torch_npu.profiler": public(profiler),
                "torch_npu.contrib": public(contrib) | torchvision_made,
                "torch_npu.contrib.function": public(contrib.function),
                "torch_npu.contrib.module": public(contrib.module) | torchvision_made,
                "torch_npu.distributed": public(distributed) | set(distributed._TORCH_MODULES)}
    assert callable(amp.ShardedGradScaler) and optim.npu_fused_bert_adam.NpuFusedBertAdam is optim.NpuFusedBertAdam
    assert distributed.rpc.__name__ == "torch.distributed.rpc"
    unexplained = {}
    for path in sorted(glob.glob(os.path.join(REPO, "src", "gpu2npu", "data", "torch_npu_*.json"))):
        with open(path, encoding="utf-8") as handle:
            modules = json.load(handle)["modules"]
        for module, have in imitated.items():
            submodules = {name[len(module) + 1:].split(".")[0] for name in modules if name.startswith(module + ".")}
            left = sorted(set(modules.get(module, ())) - have - submodules - set(WHY))
            if left:
                unexplained[f"{os.path.basename(path)} {module}"] = left
        # torch_npu itself: every operator of the release (the names of torch.ops.npu)
        with open(path, encoding="utf-8") as handle:
            operators = {name for name in json.load(handle)["custom_functions"] if not name.startswith("_")}
        left = sorted(name for name in operators if not hasattr(npu, name) and operator_why(name) is None)
        if left:
            unexplained[f"{os.path.basename(path)} torch_npu"] = left
    assert unexplained == {}
    assert all(len(why) > 40 for why in WHY.values())
    # an operator the imitation computes is not explained away as well, and each reason says why
    imitated_and_explained = sorted(name for name in OPERATOR_WHY if hasattr(npu, name))
    assert imitated_and_explained == []
    assert all(len(why) > 40 for why in OPERATOR_WHY.values())


def test_an_operator_says_why_it_is_not_imitated_or_which_releases_have_it(tmp_path):
    """With torch_npu 2.1.0's names: an operator of the release that the imitation does not compute
    fails as not imitated, with its family's reason; one of later releases only says which have it;
    one the imitation computes but the release lacks is hidden as the release would; a name no
    release has says so."""
    script = tmp_path / "operators.py"
    script.write_text(textwrap.dedent("""
        import torch_npu
        for name in ("npu_get_float_status", "npu_moe_init_routing", "npu_add_quant_matmul", "npu_no_such_op"):
            try:
                getattr(torch_npu, name)
            except AttributeError as error:
                print(error)
        print(callable(torch_npu.npu_rms_norm), callable(torch_npu.npu_conv2d))
    """))
    data = os.path.join(REPO, "src", "gpu2npu", "data", "torch_npu_2.1.0.json")
    result = run_script(script, [], tmp_path, env_extra={"STANDIN_TORCH_NPU_DATA": data}, timeout=120)
    assert result.returncode == 0, result.stderr
    status, moe, later, nowhere, computed = result.stdout.splitlines()
    assert "torch_npu has it; the CPU imitation does not, as" in status and "overflow register" in status
    assert "torch_npu has it; the CPU imitation does not, as" in moe and "MoE kernel" in moe
    assert "(torch_npu 2.1.0" in later and "does not have it; torch_npu " in later and "and later have it" in later
    assert "no torch_npu release has it" in nowhere
    assert computed == "True True"


def test_what_the_advice_recommends_runs_with_its_documented_meaning(npu):
    """The profiler of NPU907's tip and the contrib functions of NPU956-NPU958 exist and compute what
    torch_npu documents (on the CPU: torch's profiler, torch.roll, index_put, stochastic depth)."""
    with npu.profiler.profile(activities=[npu.profiler.ProfilerActivity.CPU, npu.profiler.ProfilerActivity.NPU],
                              experimental_config=npu.profiler._ExperimentalConfig(
                                  profiler_level=npu.profiler.ProfilerLevel.Level1)) as prof:
        torch.ones(4).sum()
    assert any("aten::ones" in event.name for event in prof.events())
    x = torch.arange(16.0).reshape(1, 4, 4, 1)
    assert torch.equal(npu.contrib.function.roll(x, (-1, 1), (1, 2)), torch.roll(x, (-1, 1), (1, 2)))
    put = npu.contrib.function.npu_fast_condition_index_put(torch.ones(3), torch.tensor([True, False, True]), 0.0)
    assert put.tolist() == [0.0, 1.0, 0.0]
    drop = npu.contrib.module.NpuDropPath(0.5)
    assert torch.equal(drop.eval()(x), x)
    kept = drop.train()(torch.ones(1000, 1))
    assert set(kept.flatten().tolist()) <= {0.0, 2.0} and 400 < int(kept.sum().item() / 2) < 600
    assert npu.npu.memory.memory_snapshot() == [] and npu.npu.mstx.range_start("step") == 0
