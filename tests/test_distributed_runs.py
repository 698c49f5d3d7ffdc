"""`gpu2npu ... distributed` output really trains data-parallel on two processes.

The fixture `single_card_for_multi` (a plain single-card trainer) is converted with
`gpu2npu -i ... -o ... -v 2.1.0 distributed -m train.py -t model`, and the generated
`run_distributed_npu.sh` starts two ranks on the CPU against the torch_npu stand-in
(the CPU imitation in src/gpu2npu/dryrun/standin: "npu" is the CPU, "hccl" is Gloo).  `tests/multicard/sitecustomize.py`, loaded
into every rank through PYTHONPATH, records without touching the script what each rank's
DistributedSampler yielded per epoch and checksums of the DDP model's parameters (at DDP
construction, after the first optimizer step, at exit) into MULTICARD_RECORD_DIR/rank<r>.json.

Tests marked [tool] check the conversion and need the tool's distributed mode; the
[harness] tests check the instrumentation itself and pass without it.

Set MULTICARD_CONVERTED_DIR=<folder> to run the [tool] checks on a hand-converted tree (a folder
holding train.py, model.py and run_distributed_npu.sh) instead of the tool's output: that is how
the harness was developed before the tool existed.
"""
import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpu2npu.knowledge import apidata  # noqa: E402
from helpers import FIXTURES, ROOT, free_port, run_cli  # noqa: E402
from standin_runner import STANDIN_DIR, standin_env  # noqa: E402

MULTICARD_DIR = str(ROOT / "tests" / "multicard")
FIXTURE = FIXTURES / "single_card_for_multi"
VERSION = "2.1.0"
WORLD = 2
EPOCHS = 2
BATCH = 16
DATASET_LEN = 256  # train.py's training set
# 256 samples / 2 ranks / 16 per batch: 8 batches per epoch whether or not drop_last is set.
STEPS_PER_EPOCH = math.ceil(DATASET_LEN / WORLD) // BATCH
TIMEOUT = 180
STEP_RE = re.compile(r"^step (\d+) loss (\S+)$", re.MULTILINE)
# Variables a surrounding launcher (torchrun, a CI job) may have set; the ranks must see only ours.
FOREIGN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                "MASTER_ADDR", "MASTER_PORT", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "NPUS",
                "ASCEND_RT_VISIBLE_DEVICES", "MULTICARD_RECORD_DIR")


def rank_env(record_dir, extra=None):
    """Stand-in torch_npu and the recorder on PYTHONPATH, CUDA hidden, two stand-in NPUs."""
    base = {k: v for k, v in os.environ.items() if k not in FOREIGN_VARS and not k.startswith("TORCHELASTIC_")}
    env = standin_env(base=base)  # the CPU imitation first, CUDA_VISIBLE_DEVICES=""
    parts = [p for p in env["PYTHONPATH"].split(os.pathsep) if os.path.abspath(p) != MULTICARD_DIR]
    parts.insert(parts.index(STANDIN_DIR) + 1, MULTICARD_DIR)
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.update(STANDIN_NPU_COUNT=str(WORLD), MULTICARD_RECORD_DIR=str(record_dir), OMP_NUM_THREADS="1")
    env.update(extra or {})
    return env


def run_group(cmd, cwd, env, timeout=TIMEOUT):
    """Run cmd in its own session; on timeout kill the whole group (the launcher's ranks too)."""
    proc = subprocess.Popen(cmd, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{cmd} did not finish in {timeout} s:\n{out}")
    return proc.returncode, out


def param_checksum(state_dict, names):
    """The recorder's checksum: sha256 of the float64 bytes of the named tensors, in order."""
    digest = hashlib.sha256()
    for name in names:
        data = state_dict[name].detach().to(device="cpu", dtype=torch.float64).clone(
            memory_format=torch.contiguous_format)
        digest.update(bytes(data.untyped_storage()))
    return digest.hexdigest()


def load_records(record_dir, world=WORLD):
    files = sorted(p.name for p in Path(record_dir).glob("rank*.json"))
    assert files == [f"rank{r}.json" for r in range(world)], files
    records = [json.loads((Path(record_dir) / f"rank{r}.json").read_text()) for r in range(world)]
    for rank, record in enumerate(records):
        assert record["errors"] == [], (rank, record["errors"])
    return records


def train_sampler(record):
    """The one shuffling DistributedSampler of a rank (the training loader's)."""
    shuffling = [s for s in record["samplers"] if s["shuffle"]]
    assert len(shuffling) == 1, record["samplers"]
    return shuffling[0]


def check_shards(records, dataset_len, epochs):
    """Per epoch: the ranks' indices are disjoint and together cover the data set."""
    samplers = [train_sampler(r) for r in records]
    world = len(records)
    for rank, sampler in enumerate(samplers):
        assert (sampler["num_replicas"], sampler["rank"], sampler["dataset_len"]) == (world, rank, dataset_len)
        # One pass over the training loader per epoch (whether set_epoch was called is
        # test_shuffle_changes_every_epoch's business).
        assert len(sampler["iterations"]) == epochs, [it["epoch"] for it in sampler["iterations"]]
    for epoch in range(epochs):
        shards = [s["iterations"][epoch]["indices"] for s in samplers]
        assert len({len(s) for s in shards}) == 1, "every rank gets the same number of samples"
        seen = set()
        for shard in shards:
            assert len(set(shard)) == len(shard) and not (seen & set(shard)), f"epoch {epoch}: shards overlap"
            seen |= set(shard)
        assert seen <= set(range(dataset_len))
        assert len(seen) >= dataset_len - dataset_len % world, f"epoch {epoch}: shards miss samples"
    return samplers


# --------------------------------------------------------------------------------------------
# [harness] the instrumentation itself, independent of the tool
# --------------------------------------------------------------------------------------------

def test_recorder_is_inert_without_its_variable(tmp_path):
    """[harness] Loaded by every interpreter on PYTHONPATH: without MULTICARD_RECORD_DIR it neither
    imports torch nor installs a hook; with it, a process that never imports torch writes nothing."""
    probe = ("import sys, sitecustomize; print(sitecustomize.__file__); "
             "print('torch' in sys.modules, any('TorchImportHook' in type(f).__name__ for f in sys.meta_path))")
    env = rank_env(tmp_path / "rec")
    env.pop("MULTICARD_RECORD_DIR")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [os.path.join(MULTICARD_DIR, "sitecustomize.py"), "False False"]
    env = rank_env(tmp_path / "rec")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[1] == "False True"
    assert not (tmp_path / "rec").exists()


KNOWN_DDP = """
import os, sys
import torch
import torch_npu
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

rank, world = int(os.environ["RANK_ID"]), int(os.environ["RANK_SIZE"])
dist.init_process_group("hccl", rank=rank, world_size=world)
torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
data = TensorDataset(torch.randn(40, 3, generator=torch.Generator().manual_seed(0)))
sampler = DistributedSampler(data, shuffle=True)
loader = DataLoader(data, batch_size=5, sampler=sampler)
# Module level, never deleted, no destroy_process_group: the recorder's exit clean-up must cope.
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2).to("npu"))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for (x,) in loader:
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
print("done", rank, flush=True)
"""


def test_recorder_on_a_known_ddp_run(tmp_path):
    """[harness] Two ranks of a hand-written DDP script: shards, epochs and checksums recorded."""
    script = tmp_path / "known_ddp.py"
    script.write_text(KNOWN_DDP)
    env = rank_env(tmp_path / "rec", {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
                                      "RANK_SIZE": str(WORLD)})
    procs = [subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env={**env, "RANK_ID": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for r in range(WORLD)]
    outputs = []
    for proc in procs:
        try:
            outputs.append((proc.communicate(timeout=TIMEOUT)[0], proc.returncode))
        except subprocess.TimeoutExpired:
            for p in procs:
                os.killpg(p.pid, signal.SIGKILL)
            pytest.fail("known DDP script timed out")
    for rank, (out, status) in enumerate(outputs):
        assert status == 0 and f"done {rank}" in out, out
    records = load_records(tmp_path / "rec")
    samplers = check_shards(records, 40, 2)
    assert samplers[0]["iterations"][0]["indices"] != samplers[0]["iterations"][1]["indices"]
    models = [r["ddp_models"] for r in records]
    assert all(len(m) == 1 for m in models)
    assert all(r["optimizer_steps"] == 8 for r in records)
    for when in ("params_at_init", "params_first_step", "params_at_exit"):
        assert models[0][0][when] == models[1][0][when], when
    assert len({models[0][0][w] for w in ("params_at_init", "params_first_step", "params_at_exit")}) == 3


# --------------------------------------------------------------------------------------------
# [tool] the conversion: need `gpu2npu ... distributed`
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """[tool] The converted fixture: OUT/single_card_for_multi_msft_multi/."""
    override = os.environ.get("MULTICARD_CONVERTED_DIR")
    if override:
        return Path(override).resolve()
    out = tmp_path_factory.mktemp("out")
    result = run_cli("-i", str(FIXTURE), "-o", str(out), "-v", VERSION, "distributed", "-m", "train.py", "-t", "model")
    assert result.exit_code == 0, result.output
    return out / "single_card_for_multi_msft_multi"


@pytest.fixture(scope="module")
def two_rank_run(converted, tmp_path_factory):
    """[tool] `NPUS=0,1 bash run_distributed_npu.sh --epochs 2 --batch-size 16`, run from a fresh
    folder; returns (exit status, launcher output, run folder, record folder)."""
    data = apidata.resources.files(apidata.DATA_PACKAGE).joinpath(f"torch_npu_{VERSION}.json")
    for attempt in range(2):  # the free port can be taken between our probe and the ranks' bind
        run_dir = tmp_path_factory.mktemp("run")
        record_dir = run_dir / "records"
        env = rank_env(record_dir, {"NPUS": ",".join(str(d) for d in range(WORLD)), "PYTHON": sys.executable,
                                    "MASTER_PORT": str(free_port()), "STANDIN_TORCH_NPU_DATA": str(data)})
        status, out = run_group(["bash", str(converted / "run_distributed_npu.sh"),
                                 "--epochs", str(EPOCHS), "--batch-size", str(BATCH)], run_dir, env)
        logs = "".join(p.read_text(errors="replace") for p in sorted(run_dir.glob("output_npu_*.log")))
        if status == 0 or "address already in use" not in logs.lower():
            break
    return status, out, run_dir, record_dir


def test_conversion_writes_launcher(converted):
    """[tool]"""
    assert (converted / "run_distributed_npu.sh").is_file()
    assert (converted / "train.py").is_file() and (converted / "model.py").is_file()
    source = (converted / "train.py").read_text()
    assert "DistributedDataParallel" in source and "DistributedSampler" in source


def test_both_ranks_train_to_the_end(two_rank_run):
    """[tool] Exit status 0, and each rank printed every step of both epochs."""
    status, out, run_dir, _ = two_rank_run
    logs = {p.name: p.read_text(errors="replace") for p in sorted(run_dir.glob("output_npu_*.log"))}
    detail = out + "".join(f"\n--- {name}\n{text[-3000:]}" for name, text in logs.items())
    assert status == 0, detail
    assert sorted(logs) == [f"output_npu_{d}.log" for d in range(WORLD)], detail
    for name, text in logs.items():
        steps = STEP_RE.findall(text)
        assert [int(i) for i, _ in steps] == list(range(1, EPOCHS * STEPS_PER_EPOCH + 1)), (name, text[-3000:])
        assert all(math.isfinite(float(loss)) for _, loss in steps), name
        assert "Traceback" not in text and "terminate called" not in text, (name, text[-3000:])


def test_ranks_get_disjoint_shards_covering_the_data(two_rank_run):
    """[tool] DistributedSampler on the training loader: per epoch, disjoint shards, full cover."""
    records = load_records(two_rank_run[3])
    check_shards(records, DATASET_LEN, EPOCHS)


def test_gradients_are_averaged(two_rank_run):
    """[tool] The ranks' parameters are identical at DDP construction, after the first optimizer
    step and at the end, although each rank trained on different samples."""
    records = load_records(two_rank_run[3])
    models = [r["ddp_models"] for r in records]
    assert all(len(m) == 1 for m in models), "exactly one DDP-wrapped model per rank"
    first, second = models[0][0], models[1][0]
    assert first["module_class"] == "Net" and first["param_names"] == second["param_names"]
    for when in ("params_at_init", "params_first_step", "params_at_exit"):
        assert first.get(when) and first.get(when) == second.get(when), when
    assert first["first_step_index"] == 1, "the first optimizer step of the run is a DDP step"
    assert first["params_first_step"] != first["params_at_init"] != first["params_at_exit"]
    assert all(r["optimizer_steps"] == EPOCHS * STEPS_PER_EPOCH for r in records)


def test_shuffle_changes_every_epoch(two_rank_run):
    """[tool] set_epoch(epoch) is called: the epochs' orders differ on every rank."""
    for rank, record in enumerate(load_records(two_rank_run[3])):
        iterations = train_sampler(record)["iterations"]
        assert [it["epoch"] for it in iterations] == list(range(EPOCHS)), \
            f"rank {rank}: sampler epochs {[it['epoch'] for it in iterations]} - set_epoch not called"
        assert iterations[0]["indices"] != iterations[1]["indices"], f"rank {rank}: same order in both epochs"


def test_checkpoint_holds_the_bare_model(two_rank_run):
    """[tool] checkpoint.pt keeps the single-card keys (no "module." prefix) and the final weights."""
    _, _, run_dir, record_dir = two_rank_run
    record = load_records(record_dir)[0]["ddp_models"][0]
    ckpt = torch.load(run_dir / "checkpoint.pt", map_location="cpu")
    assert list(ckpt["model"]) == record["param_names"]  # Net has no buffers
    assert param_checksum(ckpt["model"], record["param_names"]) == record["params_at_exit"]
    assert ckpt["epoch"] == EPOCHS - 1 and ckpt["step"] == EPOCHS * STEPS_PER_EPOCH
