"""`gpu2npu dryrun`, through the console script: migrated fixtures run on the CPU imitation of
torch_npu, what is left of CUDA fails naming its line, the chosen release decides which
torch_npu names exist, ranks start as the generated launcher starts them, and the losses are the
original's."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from helpers import FIXTURES, migrate, write_project  # noqa: E402
from standin_runner import STANDIN_DIR, parse_losses  # noqa: E402

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
TIMEOUT = 240


def dryrun(*args, cwd, env=None):
    environment = dict(os.environ if env is None else env)
    environment.pop("GPU2NPU_DRYRUN", None)  # set by conftest for the tests' own runs; a user has none
    # `python` in the command is this interpreter, as it is in an activated environment
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    return subprocess.run([GPU2NPU, "dryrun", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT, env=environment, stdin=subprocess.DEVNULL)


def original_run(script: Path, args, cwd):
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment["CUDA_VISIBLE_DEVICES"] = ""
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT, env=environment)


# Fixture, entry script, its arguments: the migrated project must dry-run to the end.
PASSING = [
    ("single_gpu_loop", "train.py", ["--steps", "4"]),
    ("native_amp", "train_amp.py", ["--no-amp"]),
    ("data_parallel", "train_dp.py", []),
    ("aliased_imports", "launch.py", []),
    ("llama_style", "train.py", []),
    ("llm_env_project", "train.py", []),
    ("modelarts_job", "train.py", []),
    ("npu_aware", "train.py", []),
    ("similar_ops", "train.py", []),
    ("single_card_for_multi", "train.py", ["--epochs", "1"]),
    ("xformers_llama", "train.py", []),
]
# Need torchvision, which has no build for the torch of the tests here.
NEEDS_TORCHVISION = [("ddp_spawn_imagenet", "main.py", ["--dummy", "-a", "resnet18", "-b", "4", "--epochs", "1"]),
                     ("multi_module_package", "train.py", [])]


def _torchvision() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.parametrize("fixture, script, args", PASSING + [pytest.param(*case, marks=pytest.mark.skipif(
    not _torchvision(), reason="needs torchvision")) for case in NEEDS_TORCHVISION], ids=lambda value: str(value))
def test_migrated_fixture_dry_runs_to_the_end(fixture, script, args, tmp_path):
    migrated = migrate(FIXTURES / fixture, tmp_path / "out", "2.1.0", "--no-html")
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--max-steps", "3", "--report", report, "--", "python", script, *args, cwd=migrated)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "PASSED" in done.stderr and "CPU imitation of torch_npu 2.1.0" in done.stderr
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert facts["status"] == "passed" and facts["hits"] == [] and facts["finished"]


# The torch the release is built for (torch 2.1.0 for -v 2.1.0): a Python of an environment that has
# it, where one is at hand (`gpu2npu dryrun --venv DIR` makes one); the tests' own torch is 2.13.
RELEASE_TORCH_PYTHON = os.environ.get("GPU2NPU_TORCH_2_1_PYTHON")


@pytest.mark.skipif(not RELEASE_TORCH_PYTHON, reason="set GPU2NPU_TORCH_2_1_PYTHON to a Python with torch 2.1.0")
@pytest.mark.parametrize("fixture, script, args", PASSING + [("native_amp", "train_amp.py", [])], ids=str)
def test_migrated_fixture_dry_runs_on_the_releases_own_torch(fixture, script, args, tmp_path):
    """The imitation runs on the torch the release pairs with, not only on the newest: torch 2.1 has
    no torch.amp.GradScaler, no device-taking autocast state functions, no Python PrivateUse1 hooks."""
    migrated = migrate(FIXTURES / fixture, tmp_path / "out", "2.1.0", "--no-html")
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--python", RELEASE_TORCH_PYTHON, "--max-steps", "3", "--report", report, "--",
                  "python", script, *args, cwd=migrated)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert facts["status"] == "passed" and facts["torch_ran"].startswith("2.1.0")


def test_cuda_the_migration_reported_fails_the_dry_run_where_the_report_says(tmp_path):
    """flash_attn_patch: the migration leaves a CUDA capability test it cannot translate and
    reports it; the dry run goes on (the test answers False, as on an NPU) and fails on it."""
    migrated = migrate(FIXTURES / "flash_attn_patch", tmp_path / "out", "2.1.0", "--no-html")
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--max-steps", "2", "--report", report, "--", "python", "train.py", cwd=migrated)
    assert done.returncode == 1
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert facts["finished"] and facts["steps"]  # it trained: the branch is not taken on the NPU
    [hit] = facts["hits"]
    assert hit["what"] == "torch.cuda.is_available" and hit["where"].startswith("flash_attn_patch.py:")
    line = int(hit["where"].split(":")[1])
    assert "torch.cuda.is_available()" in (migrated / "flash_attn_patch.py").read_text().splitlines()[line - 1]
    assert "device test torch.cuda.is_available()" in (migrated / "unsupported_api.csv").read_text()


def test_apex_parts_ascend_apex_lacks_fail_as_reported(tmp_path):
    migrated = migrate(FIXTURES / "apex_amp", tmp_path / "out", "2.1.0", "--no-html")
    done = dryrun("-v", "2.1.0", "--max-steps", "2", "--", "python", "train_apex.py", cwd=migrated)
    assert done.returncode == 1 and "No module named 'apex.parallel'" in done.stderr
    assert "apex.parallel.DistributedDataParallel" in (migrated / "unsupported_api.csv").read_text()


def test_the_original_cuda_script_fails_naming_its_first_cuda_line(tmp_path):
    done = dryrun("-v", "2.1.0", "--max-steps", "2", "--", "python", "train.py", "--steps", "2",
                  cwd=FIXTURES / "single_gpu_loop")
    assert done.returncode == 1 and "FAILED" in done.stderr
    first = next(line for line in done.stderr.splitlines() if "CUDA left" in line)
    assert first.strip() == "train.py:41: torch.cuda.is_available: CUDA left (1x)"
    lines = (FIXTURES / "single_gpu_loop" / "train.py").read_text().splitlines()
    assert "torch.cuda" in lines[40] and not any("torch.cuda" in line or ".cuda()" in line for line in lines[:40])


def test_cuda_calls_fail_loudly_with_the_users_line(tmp_path):
    script = tmp_path / "left.py"
    script.write_text("import torch\nimport torch_npu\n\nx = torch.ones(2)\ny = x.to('npu')\nz = y.cuda()\n")
    done = dryrun("--", "python", "left.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "left.py:6: Tensor.cuda() is CUDA, which the NPU does not have" in done.stderr
    nccl = tmp_path / "nccl.py"
    nccl.write_text("import torch.distributed as dist\n"
                    "dist.init_process_group('nccl', init_method='tcp://127.0.0.1:1', rank=0, world_size=1)\n")
    done = dryrun("--", "python", "nccl.py", cwd=tmp_path)
    assert done.returncode == 1 and "nccl.py:2: the nccl backend is CUDA" in done.stderr


def test_the_release_decides_which_torch_npu_names_exist(tmp_path):
    """torch_npu.npu.get_per_process_memory_fraction: in torch_npu 2.8.0, not in 2.1.0."""
    script = tmp_path / "train.py"
    script.write_text("import torch\nimport torch_npu\n\ntorch_npu.npu.set_per_process_memory_fraction(0.5)\n"
                      "print('fraction', torch_npu.npu.get_per_process_memory_fraction())\n")
    newer = dryrun("-v", "2.8.0", "--", "python", "train.py", cwd=tmp_path)
    assert newer.returncode == 0 and "fraction 0.5" in newer.stdout
    assert "torch_npu.npu.get_per_process_memory_fraction (1x)" in newer.stderr  # exercised
    older = dryrun("-v", "2.1.0", "--", "python", "train.py", cwd=tmp_path)
    assert older.returncode == 1
    assert ("train.py:5: torch_npu.npu.get_per_process_memory_fraction: not in this torch_npu release"
            in older.stderr)
    assert "torch_npu 2.1.0.post17 does not have it" in older.stderr
    guarded = tmp_path / "guarded.py"  # asking is not using
    guarded.write_text("import torch_npu\nprint(hasattr(torch_npu.npu, 'get_per_process_memory_fraction'))\n")
    asked = dryrun("-v", "2.1.0", "--", "python", "guarded.py", cwd=tmp_path)
    assert asked.returncode == 0 and asked.stdout.strip() == "False"


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    return migrate(FIXTURES / "single_card_for_multi", tmp_path_factory.mktemp("multi"), "2.1.0", "--no-html",
                   "distributed", "-m", "train.py", "-t", "model")


def dryrun_ranks(*args, cwd):
    """A run of several ranks; again once if the free port dryrun chose was taken before the ranks
    bound it (another test's ranks on this machine)."""
    for attempt in range(2):
        done = dryrun(*args, cwd=cwd)
        logs = done.stderr + "".join(p.read_text(errors="replace") for p in Path(cwd).glob("output_npu_*.log"))
        if done.returncode == 0 or "address already in use" not in logs.lower():
            return done
    return done


def test_two_ranks_of_a_distributed_migration_stop_after_k_steps(multi, tmp_path):
    report = tmp_path / "report.json"
    done = dryrun_ranks("-v", "2.1.0", "--nproc", "2", "--max-steps", "3", "--report", report, "--",
                        "python", "train.py", "--epochs", "1", cwd=multi)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert facts["stopped_after_max_steps"] and facts["steps"] == {"0": 3, "1": 3} and facts["processes"] == 2
    assert "torch_npu.npu.set_device" in facts["torch_npu_apis"]
    # three steps printed by each rank (two processes writing to one pipe: lines may interleave)
    assert sorted(re.findall(r"step (\d) loss", done.stdout)) == ["1", "1", "2", "2", "3", "3"]


def test_the_generated_launcher_dry_runs_its_ranks(multi, tmp_path):
    done = dryrun_ranks("-v", "2.1.0", "--nproc", "2", "--max-steps", "2", "--", "bash",
                        multi / "run_distributed_npu.sh", "--epochs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "optimizer steps: rank 0: 2, rank 1: 2" in done.stderr
    assert sorted(path.name for path in tmp_path.glob("output_npu_*.log")) == ["output_npu_0.log", "output_npu_1.log"]


@pytest.mark.parametrize("fixture, script, args", [
    ("single_gpu_loop", "train.py", ["--steps", "6"]),
    ("native_amp", "train_amp.py", ["--no-amp"]),
    ("data_parallel", "train_dp.py", []),
])
def test_dry_run_losses_are_the_originals(fixture, script, args, tmp_path):
    original = original_run(FIXTURES / fixture / script, args, tmp_path)
    assert original.returncode == 0, original.stderr
    migrated = migrate(FIXTURES / fixture, tmp_path / "out", "2.1.0", "--no-html")
    done = dryrun("-v", "2.1.0", "--", "python", script, *args, cwd=migrated)
    assert done.returncode == 0, done.stderr[-3000:]
    expected, got = parse_losses(original.stdout), parse_losses(done.stdout)
    assert expected and len(got) == len(expected)
    assert all(abs(a - b) <= 1e-5 for a, b in zip(expected, got))


def test_the_imitation_is_not_torch_npu_outside_a_dry_run(tmp_path):
    environment = {key: value for key, value in os.environ.items() if key != "GPU2NPU_DRYRUN"}
    environment["PYTHONPATH"] = STANDIN_DIR
    done = subprocess.run([sys.executable, "-c", "import torch_npu"], capture_output=True, text=True,
                          env=environment, timeout=TIMEOUT)
    assert done.returncode == 1 and "CPU imitation of torch_npu, not torch_npu" in done.stderr
    done = subprocess.run([sys.executable, "-c", "import gpu2npu.dryrun.standin.torch_npu"], capture_output=True,
                          text=True, env=dict(os.environ, GPU2NPU_DRYRUN="1"), timeout=TIMEOUT)
    assert done.returncode == 1 and "CPU imitation of torch_npu, not torch_npu" in done.stderr


def test_usage_errors(tmp_path):
    assert dryrun("-v", "9.9.9", "--", "python", "-c", "pass", cwd=tmp_path).returncode == 2
    missing = dryrun("--", "no-such-program-here", cwd=tmp_path)
    assert missing.returncode == 2 and "cannot start no-such-program-here" in missing.stderr


def test_fused_optimizers_are_their_torch_algorithm_with_torch_npus_signature(tmp_path):
    script = tmp_path / "opt.py"
    script.write_text(
        "import torch\nimport torch_npu\n\n"
        "torch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2).to('npu')\nreference = torch.nn.Linear(4, 2)\n"
        "reference.load_state_dict(model.state_dict())\n"
        "pairs = [(model, torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=0.1)),\n"
        "         (reference, torch.optim.AdamW(reference.parameters(), lr=0.1))]\n"
        "for step in range(3):\n    x = torch.randn(8, 4)\n    for m, o in pairs:\n"
        "        o.zero_grad()\n        m(x.to('npu')).pow(2).mean().backward()\n        o.step()\n"
        "print('same', all(torch.equal(a, b) for a, b in zip(model.parameters(), reference.parameters())))\n"
        "torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.1, foreach=True)\n")
    done = dryrun("-v", "2.1.0", "--", "python", "opt.py", cwd=tmp_path)
    assert "same True" in done.stdout
    assert done.returncode == 1 and "NpuFusedSGD.__init__() got an unexpected keyword argument 'foreach'" in done.stderr
    assert ("opt.py:17: torch_npu.optim.NpuFusedSGD(foreach=): an argument this torch_npu release does not take"
            in done.stderr)
    assert "torch_npu.optim.NpuFusedAdamW (1x)" in done.stderr


def test_rotary_mul_is_the_documented_rotation(tmp_path):
    script = tmp_path / "rope.py"
    script.write_text(
        "import torch\nimport torch_npu\n\ntorch.manual_seed(0)\nx = torch.randn(2, 5, 3, 8)\n"
        "cos, sin = torch.randn(1, 5, 1, 8), torch.randn(1, 5, 1, 8)\n"
        "half = torch.cat((-x[..., 4:], x[..., :4]), dim=-1)\n"
        "print('half', torch.allclose(torch_npu.npu_rotary_mul(x, cos, sin), x * cos + half * sin))\n"
        "pairs = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).reshape(x.shape)\n"
        "print('interleave', torch.allclose(torch_npu.npu_rotary_mul(x, cos, sin, rotary_mode='interleave'),\n"
        "                                   x * cos + pairs * sin))\n")
    done = dryrun("-v", "2.8.0", "--", "python", "rope.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["half", "True", "interleave", "True"]


def test_a_specify_device_migration_dry_runs_on_its_device_id(tmp_path):
    migrated = migrate(FIXTURES / "single_gpu_loop", tmp_path / "out", "2.1.0", "--no-html", "-s")
    environment = dict(os.environ, DEVICE_ID="1")  # the imitation then has two NPUs
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--max-steps", "2", "--report", report, "--", "python", "train.py", cwd=migrated,
                  env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert facts["status"] == "passed" and "torch_npu.npu.set_device" in facts["torch_npu_apis"]


def test_the_environments_own_sitecustomize_still_runs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['FROM_USER_SITE'] = 'yes'\n")
    environment = dict(os.environ, PYTHONPATH=str(site))
    done = dryrun("--", "python", "-c", "import os; print(os.environ.get('FROM_USER_SITE'))", cwd=tmp_path,
                  env=environment)
    assert done.returncode == 0 and done.stdout.strip() == "yes"


def test_scripted_traced_and_fx_code_runs_as_without_the_dry_run_and_eager_cuda_is_still_caught(tmp_path):
    # torch's own scripted code (ZeroRedundancyOptimizer's module) and the project's: the factory
    # functions the dry run watches compile to the same operators
    (tmp_path / "scripted.py").write_text(
        "import torch\nimport torch_npu\nfrom torch.distributed.optim import ZeroRedundancyOptimizer\n\n\n"
        "@torch.jit.script\ndef make(n: int):\n"
        "    a = torch.zeros(n) + torch.ones(n) + torch.arange(n) + torch.full([n], 2.0) + torch.zeros_like(torch.empty(n))\n"
        "    return a + torch.tensor([1.0, 2.0, 3.0])[:n] + torch.eye(n)[0] + torch.linspace(0, 1, n)\n\n\n"
        "traced = torch.jit.trace(lambda x: torch.ones_like(x) + x, torch.ones(3))\n"
        "graph = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(3, 3)))\n"
        "print(round(make(3).sum().item(), 3), traced(torch.ones(3)).sum().item(), graph(torch.ones(1, 3)).shape)\n"
        "torch.zeros(2, device='cuda')\n")
    (tmp_path / "plain.py").write_text((tmp_path / "scripted.py").read_text().split("torch.zeros(2, device")[0]
                                       .replace("import torch_npu\n", ""))
    plain = subprocess.run([sys.executable, "plain.py"], capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    done = dryrun("--", "python", "scripted.py", cwd=tmp_path)
    assert done.stdout == plain.stdout, done.stderr[-3000:]
    assert "TypeError" not in done.stderr
    assert done.returncode == 1 and "scripted.py:15: torch.zeros(cuda device): CUDA left (1x)" in done.stderr


def test_the_report_names_the_torch_that_ran_and_warns_when_it_is_not_the_releases(tmp_path):
    import json

    import torch

    (tmp_path / "tiny.py").write_text("import torch\nimport torch_npu\nprint(torch.ones(2).to('npu').sum().item())\n")
    done = dryrun("-v", "2.1.0", "--report", "report.json", "--", "python", "tiny.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"built for torch 2.1.0; torch {torch.__version__} ran): PASSED" in done.stderr
    differs = tuple(torch.__version__.split(".")[:2]) != ("2", "1")
    assert (f"warning: torch {torch.__version__} ran, not the torch 2.1.0" in done.stderr) is differs
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["torch_version"], report["torch_ran"]) == ("2.1.0", torch.__version__)
    # the project's pin chooses the release, as check's does, and says so
    (tmp_path / "requirements.txt").write_text("torch==2.6.0\n")
    done = dryrun("--", "python", "tiny.py", cwd=tmp_path)
    assert "gpu2npu: PyTorch 2.6.0 (torch_npu" in done.stderr and "requirements.txt:1" in done.stderr
    assert "built for torch 2.6.0;" in done.stderr


def test_a_python_without_torch_is_named_as_the_cause(tmp_path):
    (tmp_path / "uses_torch.py").write_text("import torch\n")
    done = dryrun("-v", "2.1.0", "--", "python", "-S", "uses_torch.py", cwd=tmp_path)  # -S: no site-packages
    assert done.returncode == 1 and "No module named 'torch'" in done.stderr
    assert "no process imported torch: if `python -c 'import torch'` fails, this is why" in done.stderr


def test_compile_fails_where_the_report_says_the_release_cannot_and_runs_where_it_can(tmp_path):
    (tmp_path / "compiled.py").write_text(
        "import torch\nimport torch_npu\n\nmodel = torch.nn.Linear(3, 3)\n"
        "print(torch.compile(model, backend='npu')(torch.ones(1, 3)).shape)\n"
        "print(torch.compile(model)(torch.ones(1, 3)).shape)\n")
    # the report of the same code says so: NPU905 under 2.1.0, nothing under 2.6.0
    reported = subprocess.run([GPU2NPU, "check", "-v", "2.1.0", str(tmp_path / "compiled.py")], capture_output=True,
                              text=True, timeout=TIMEOUT)
    assert "compiled.py:6: NPU905" in reported.stdout and "compiled.py:5:" not in reported.stdout
    done = dryrun("-v", "2.1.0", "--", "python", "compiled.py", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout.count("torch.Size([1, 3])") == 1  # the 'npu' backend ran
    assert "compiled.py:6: torch.compile(backend='inductor'): a compiler this torch_npu release does not have" in done.stderr
    done = dryrun("-v", "2.6.0", "--", "python", "compiled.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.count("torch.Size([1, 3])") == 2, done.stderr[-2000:]


FUSED_TRAINER = """\
import sys
import torch
import torch_npu

model = torch.nn.Linear(4, 1).npu()
if sys.argv[1] == "adam":
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, fused=True)
else:
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, fused=True)
for step in range(2):
    loss = model(torch.randn(8, 4).npu()).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained", sys.argv[1])
"""


def test_a_fused_optimizer_fails_where_the_report_says_the_release_has_no_kernel_and_runs_where_it_has(tmp_path):
    """torch_npu 2.1.0 has an NPU kernel for AdamW's fused update, not for Adam's: the report says
    so (NPU910) and the dry run agrees, on any torch (torch 2.1 has no CPU kernel: the update runs
    unfused there)."""
    (tmp_path / "train.py").write_text(FUSED_TRAINER)
    original = tmp_path / "original" / "train.py"  # the CUDA program it was migrated from
    original.parent.mkdir()
    original.write_text(FUSED_TRAINER.replace("import torch_npu\n", "").replace(".npu()", ".cuda()"))
    reported = subprocess.run([GPU2NPU, "check", "-v", "2.1.0", str(original)], capture_output=True,
                              text=True, timeout=TIMEOUT)
    assert "train.py:6: NPU910 torch.optim.Adam(fused=True)" in reported.stdout, reported.stdout
    assert "AdamW(fused=True)" not in reported.stdout
    done = dryrun("-v", "2.1.0", "--", "python", "train.py", "adamw", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "trained adamw", done.stderr[-2000:]
    done = dryrun("-v", "2.1.0", "--", "python", "train.py", "adam", cwd=tmp_path)
    assert done.returncode == 1 and "trained" not in done.stdout
    assert ("train.py:7: torch.optim.Adam(fused=True): a fused optimizer update this torch_npu release has no NPU "
            "kernel for") in done.stderr
    done = dryrun("-v", "2.10.0", "--", "python", "train.py", "adam", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "trained adam", done.stderr[-2000:]


RANKED = '''import os
import sys

import torch
import torch_npu
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

flaw = sys.argv[1]
dist.init_process_group("hccl")
rank = int(os.environ["LOCAL_RANK"])
torch.manual_seed(0)
torch_npu.npu.set_device(0 if flaw == "same-npu" else rank)
model = torch.nn.Linear(4, 1).to(f"npu:{torch_npu.npu.current_device()}")
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0 if flaw == "wrong-ddp" else rank])
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
if flaw == "no-sampler":
    loader = DataLoader(data, batch_size=8, shuffle=True)
else:
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=True, seed=0))
evaluation = DataLoader(data, batch_size=16)  # every rank evaluates on all of it: no collision
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
for x, y in loader:
    device = f"npu:{1 - rank}" if flaw == "other-npu" else f"npu:{rank}"
    loss = torch.nn.functional.mse_loss(ddp(x.to(device)), y.npu())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
with torch.no_grad():
    total = sum(float(model(x).sum()) for x, _ in evaluation)
dist.destroy_process_group()
'''


@pytest.mark.parametrize("flaw, expected", [
    ("none", []),
    # (rank 1's DDP and batches then name its own index, which is not the NPU it selected)
    ("same-npu", ["train.py:14: ranks 0, 1 all use NPU 0",
                  "train.py:16: DistributedDataParallel(device_ids=[1]) in the rank whose NPU is 0",
                  "train.py:26: a tensor (.to) put on NPU 1 by the rank whose NPU is 0"]),
    ("wrong-ddp", ["train.py:16: DistributedDataParallel(device_ids=[0]) in the rank whose NPU is 1"]),
    ("other-npu", ["train.py:26: a tensor (.to) put on NPU 1 by the rank whose NPU is 0",
                   "train.py:26: a tensor (.to) put on NPU 0 by the rank whose NPU is 1"]),
    ("no-sampler", ["train.py:19: ranks 0, 1 train on the same samples from this loader"]),
])
def test_ranks_that_collide_are_hits_with_file_and_line(flaw, expected, tmp_path):
    (tmp_path / "train.py").write_text(RANKED)
    done = dryrun_ranks("-v", "2.1.0", "--nproc", "2", "--", "python", "train.py", flaw, cwd=tmp_path)
    hits = [line.strip() for line in done.stderr.splitlines()
            if line.startswith("  train.py:") and ("rank" in line or "NPU" in line)]
    assert len(hits) == len(expected), done.stderr[-3000:]
    assert all(hit.startswith(want) for hit, want in zip(sorted(hits), sorted(expected))), hits
    assert done.returncode == (0 if not expected else 1)


def test_python_names_the_interpreter_of_the_command_and_of_what_it_starts(tmp_path):
    (tmp_path / "one.py").write_text("import torch\nimport torch_npu\nprint(torch.ones(2).npu().sum().item())\n")
    (tmp_path / "launch.sh").write_text("python one.py\n")
    environment = {key: value for key, value in os.environ.items() if key not in ("GPU2NPU_DRYRUN", "PYTHONPATH")}
    environment["PATH"] = "/usr/bin:/bin"  # no `python` with torch on it
    for command in (["python", "one.py"], ["bash", "launch.sh"]):
        done = subprocess.run([GPU2NPU, "dryrun", "-v", "2.1.0", "--python", sys.executable, "--", *command],
                              cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, env=environment)
        assert done.returncode == 0 and done.stdout.strip() == "2.0", done.stderr[-2000:]
    done = subprocess.run([GPU2NPU, "dryrun", "--python", str(tmp_path / "none"), "--", "python", "one.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, env=environment)
    assert done.returncode == 2 and "does not exist" in done.stderr


class TestVenv:
    """--venv DIR: the dry run in an environment made (or reused) with the release's torch and the
    project's requirement files; what does not install is a hit.  pip runs without an index here
    (PIP_NO_INDEX), so that what installs is what the environment already has."""

    PROGRAM = "import torch\nimport torch_npu\nprint(torch.ones(2).to('npu').sum().item())\n"

    @staticmethod
    def release_of_this_torch() -> str:
        import torch

        from gpu2npu.knowledge import apidata

        version = ".".join(torch.__version__.split("+")[0].split(".")[:2]) + ".0"
        if version not in apidata.available_versions():
            pytest.skip(f"no torch_npu release data for torch {version}")
        return version

    @staticmethod
    def environment_with_this_torch(folder: Path) -> Path:
        """A virtual environment that sees this interpreter's packages (torch, numpy) through a .pth file."""
        import torch

        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=TIMEOUT)
        site = next(folder.glob("lib/python*/site-packages"))
        (site / "outer.pth").write_text(str(Path(torch.__file__).parent.parent) + "\n")
        return folder

    def run(self, tmp_path, folder, requirements: str, version: str):
        (tmp_path / "train.py").write_text(self.PROGRAM)
        (tmp_path / "requirements.txt").write_text(requirements)
        env = dict(os.environ, PIP_NO_INDEX="1")
        done = dryrun("-v", version, "--venv", folder, "--report", "report.json", "--", "python", "train.py",
                      cwd=tmp_path, env=env)
        return done, json.loads((tmp_path / "report.json").read_text())

    def test_a_project_whose_requirements_install_runs_in_the_reused_environment(self, tmp_path):
        version = self.release_of_this_torch()
        folder = self.environment_with_this_torch(tmp_path / "env")
        done, report = self.run(tmp_path, folder, f"numpy\ntorch_npu=={version}  # the imitation stands in\n", version)
        assert done.returncode == 0, done.stderr
        assert report["environment"]["made"] is False and report["environment"]["not_installed"] == []
        assert report["torch_ran"] == report["environment"]["torch"] != ""
        assert f"environment {folder} (reused, torch" in done.stderr and "PASSED" in done.stderr

    def test_a_requirement_that_does_not_install_is_a_hit_with_its_line(self, tmp_path):
        version = self.release_of_this_torch()
        folder = self.environment_with_this_torch(tmp_path / "env")
        done, report = self.run(tmp_path, folder, "numpy\ngpu2npu-no-such-package==1.0\n", version)
        assert done.returncode == 1 and "FAILED" in done.stderr
        assert [(hit["kind"], hit["where"]) for hit in report["hits"]] == [("install", "requirements.txt:2")]
        assert "requirements.txt:2: gpu2npu-no-such-package==1.0 (" in done.stderr
        assert "does not install in the dry run's environment" in done.stderr

    def test_an_environment_made_without_the_releases_torch_runs_nothing(self, tmp_path):
        done, report = self.run(tmp_path, tmp_path / "new-env", "numpy\n", "2.1.0")
        assert (tmp_path / "new-env" / "pyvenv.cfg").is_file()
        assert done.returncode == 1 and report["exit_codes"] == [] and report["environment"]["made"] is True
        assert report["hits"][0]["where"] == "torch" and "torch==2.1.0" in report["hits"][0]["what"]
        assert "command not started: its environment has no torch" in done.stderr

    def test_venv_and_python_together_are_a_usage_error(self, tmp_path):
        done = dryrun("-v", "2.1.0", "--venv", tmp_path / "env", "--python", sys.executable, "--", "python", "x.py",
                      cwd=tmp_path)
        assert done.returncode == 2 and "--venv and --python name two environments" in done.stderr


CONTRIB_TRAINER = """\
import torch
import torch_npu
from torch_npu.contrib.function import npu_multiclass_nms
from torch_npu.contrib.module import FastBatchNorm2d, LabelSmoothingCrossEntropy

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), FastBatchNorm2d(4), torch.nn.Flatten(),
                            torch.nn.Linear(4 * 6 * 6, 5)).npu()
loss_of = LabelSmoothingCrossEntropy(num_classes=5, smooth_factor=0.1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    images, labels = torch.randn(8, 3, 8, 8).npu(), torch.randint(0, 5, (8,)).npu()
    loss = loss_of(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
boxes, labels = npu_multiclass_nms(torch.rand(10, 4) * 10, torch.rand(10, 3), max_num=5)
print(tuple(boxes.shape), tuple(labels.shape))
if __import__("sys").argv[1:] == ["--focus"]:
    from torch_npu.contrib.module import Focus
"""


def test_what_torch_npu_contrib_documents_runs_and_what_it_cannot_says_why(tmp_path):
    """A program on torch_npu.contrib's fast batch norm, label-smoothing loss and NMS trains in a
    dry run for torch_npu 2.1.0; one that imports Focus fails, naming the file, line and why."""
    (tmp_path / "train.py").write_text(CONTRIB_TRAINER)
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--report", report, "--", "python", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "step 2 loss" in done.stdout and "(5, 5) (5,)" in done.stdout
    assert json.loads(report.read_text(encoding="utf-8"))["hits"] == []
    focus = dryrun("-v", "2.1.0", "--report", report, "--", "python", "train.py", "--focus", cwd=tmp_path)
    assert focus.returncode == 1
    [hit] = json.loads(report.read_text(encoding="utf-8"))["hits"]
    line = CONTRIB_TRAINER.splitlines().index("    from torch_npu.contrib.module import Focus") + 1
    assert hit["what"] == "torch_npu.contrib.module.Focus" and hit["where"] == f"train.py:{line}", hit
    assert "slicing" in focus.stderr


OPERATOR_TRAINER = """\
import sys
import torch
import torch_npu

layer = torch.nn.Linear(8, 8).npu()
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
gamma = torch.ones(8).npu()
for step in range(2):
    hidden = torch_npu.npu_fast_gelu(layer(torch.randn(4, 8).npu()))
    normed, _ = torch_npu.npu_rms_norm(hidden, gamma)
    loss = normed.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
if sys.argv[1:] == ["--quantized"]:
    torch_npu.npu_quant_matmul(hidden.to(torch.int8), torch.ones(8, 8, dtype=torch.int8), torch.ones(1))
"""


def test_an_operator_of_the_release_runs_and_one_without_a_cpu_meaning_says_why(tmp_path):
    """torch_npu's own operators: npu_fast_gelu and npu_rms_norm train in a dry run for torch_npu
    2.1.0; npu_quant_matmul fails, and the summary names the file, line and why."""
    (tmp_path / "train.py").write_text(OPERATOR_TRAINER)
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--report", report, "--", "python", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "step 1 loss" in done.stdout
    assert json.loads(report.read_text(encoding="utf-8"))["hits"] == []
    quantized = dryrun("-v", "2.1.0", "--report", report, "--", "python", "train.py", "--quantized", cwd=tmp_path)
    assert quantized.returncode == 1
    [hit] = json.loads(report.read_text(encoding="utf-8"))["hits"]
    line = OPERATOR_TRAINER.splitlines().index(
        "    torch_npu.npu_quant_matmul(hidden.to(torch.int8), torch.ones(8, 8, dtype=torch.int8), torch.ones(1))") + 1
    assert hit["what"] == "torch_npu.npu_quant_matmul" and hit["where"] == f"train.py:{line}", hit
    assert hit["kind"] == "not imitated" and "int8/int4 quantized kernels" in quantized.stderr


TWIN_TESTS = {
    "devices.py": ("import torch\n\n\ndef is_npu_available():\n    try:\n        import torch_npu  # noqa: F401\n"
                   "    except ImportError:\n        return False\n    return torch.npu.is_available()\n\n\n"
                   "def is_cuda_available():\n    return torch.cuda.is_available()\n\n\n"
                   "def seed(n):\n    torch.cuda.manual_seed_all(n)\n"),
    "train.py": ("import torch\nfrom devices import is_cuda_available, is_npu_available\n\n"
                 "device = 'cuda' if is_cuda_available() else 'npu' if is_npu_available() else 'cpu'\n"
                 "model = torch.nn.Linear(4, 1).to(device)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "for step in range(2):\n    loss = model(torch.randn(8, 4).to(device)).pow(2).mean()\n"
                 "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n"
                 "    print(f'step {step} loss {loss.item():.4f}')\n"),
}


def test_a_cuda_test_the_migration_left_on_purpose_is_no_failure(tmp_path):
    """A project that asks each device its own question (`is_cuda_available` beside
    `is_npu_available`): the migration leaves the CUDA one as written and its log says so (a NOTE
    row); the dry run answers it False, as an NPU machine does, lists it apart and passes.  The
    same question in code the migration did not read (no log: the original project) is a hit."""
    source = write_project(tmp_path / "project", TWIN_TESTS)
    migrated = migrate(source, tmp_path / "out", "2.1.0", "--no-html")
    lines = (migrated / "devices.py").read_text().splitlines()
    # (the log's rows give the original's lines: one line above it was inserted, import torch_npu)
    assert lines[1] == "import torch_npu" and lines[13] == "    return torch.cuda.is_available()"
    assert "devices.py line: 13 ~ 13 Operation Type: NOTE" in (migrated / "msFmkTranspltlog.txt").read_text()
    report = tmp_path / "report.json"
    done = dryrun("-v", "2.1.0", "--report", report, "--", "python", "train.py", cwd=migrated)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "step 1 loss" in done.stdout
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert facts["hits"] == []
    [asked] = facts["left_as_written"]
    assert asked["what"] == "torch.cuda.is_available" and asked["where"] == "devices.py:14", asked
    assert "asked where the migration left the project's own device test as written" in done.stderr
    # the same question in the original project (no log): a hit; and where the original files the log
    # names are gone, a line of the migrated file cannot be matched to a row: kept as a hit
    for cwd in (source, migrated):
        if cwd == migrated:
            source.rename(tmp_path / "moved")
        again = dryrun("-v", "2.1.0", "--report", report, "--", "python", "train.py", cwd=cwd)
        assert again.returncode == 1
        hits = json.loads(report.read_text(encoding="utf-8"))["hits"]
        line = 13 if cwd == source else 14
        assert [(h["kind"], h["what"], h["where"]) for h in hits] == [("cuda query", "torch.cuda.is_available",
                                                                        f"devices.py:{line}")]


ZERO_TRAINER = """\
import os
import torch
import torch_npu
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group("hccl")
torch_npu.npu.set_device(int(os.environ["LOCAL_RANK"]))
model = torch.nn.Linear(4, 1).npu()
optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=0.01)
for step in range(3):
    loss = model(torch.randn(8, 4).npu()).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"rank {dist.get_rank()} step {step + 1}", flush=True)
del optimizer  # (torch 2.13's Gloo aborts about one rank in five that tears down with a ZeRO optimizer alive)
dist.destroy_process_group()
"""


def test_a_step_of_an_optimizer_that_wraps_another_is_one_step(tmp_path):
    """ZeroRedundancyOptimizer takes its inner AdamW's step inside its own (llm.c's --zero_stage 1):
    one step per rank, so --max-steps 2 stops each rank after two, not one."""
    (tmp_path / "train.py").write_text(ZERO_TRAINER)
    report = tmp_path / "report.json"
    done = dryrun_ranks("-v", "2.1.0", "--nproc", "2", "--report", report, "--", "python", "train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(report.read_text(encoding="utf-8"))["steps"] == {"0": 3, "1": 3}
    stopped = dryrun_ranks("-v", "2.1.0", "--nproc", "2", "--max-steps", "2", "--report", report, "--",
                           "python", "train.py", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    assert json.loads(report.read_text(encoding="utf-8"))["steps"] == {"0": 2, "1": 2}
    assert sorted(re.findall(r"rank \d step (\d)", stopped.stdout)) == ["1", "1", "2", "2"]


def test_the_migration_a_rotated_log_names_is_read_from_its_oldest_file(tmp_path):
    """The run log rotates at 1 MiB (a large project): its first line, which names the original
    and migrated folders, is then in the last backup, and its NOTE rows are spread over all files."""
    from gpu2npu.reports.log import LOG_NAME, header, migration_of, noted_spans

    row = "2026-11-27 10:00:00 [INFO] {} line: {} ~ {} Operation Type: NOTE Message: NPU-aware code: left as written\n"
    (tmp_path / f"{LOG_NAME}.2").write_text("2026-11-27 10:00:00 [INFO] " + header("0.1.0", Path("/src/p"), "2.1.0",
                                                                                  "2.1.0.post17", Path("/out/p_msft"))
                                             + "\n" + row.format("a.py", 3, 4))
    (tmp_path / f"{LOG_NAME}.1").write_text(row.format("b.py", 7, 7))
    (tmp_path / LOG_NAME).write_text(row.format("a.py", 9, 9))
    (tmp_path / f"{LOG_NAME}.old").write_text(row.format("c.py", 1, 1))  # (not one of the log's files)
    assert migration_of(tmp_path) == (Path("/src/p"), Path("/out/p_msft"))
    spans = noted_spans(tmp_path)
    assert sorted(spans) == ["a.py", "b.py"] and sorted(spans["a.py"]) == [(3, 4), (9, 9)]
