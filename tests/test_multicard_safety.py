"""The multi-card modes never produce a program that starts and does the wrong thing: where a
program manages its own processes or devices they keep its way or refuse, naming the reason and
what to run instead.  Run through the console script, as a user meets it."""
import re
import subprocess
import sys

from helpers import free_port, write_project


def _gpu2npu(*args: str):
    return subprocess.run([sys.executable, "-m", "gpu2npu", *args], capture_output=True, text=True, timeout=120)


PREPARE = 'import json\n\ndef main():\n    json.dump({"n": 3}, open("data.json", "w"))\n\nif __name__ == "__main__":\n    main()\n'


def test_s_sets_the_device_where_training_starts_not_in_a_data_script(tmp_path):
    source = write_project(tmp_path / "proj", {
        "prepare_data.py": PREPARE,
        "train.py": "import torch\nfrom engine import setup\n\ndef main():\n    setup(0)\n"
                    "    model = torch.nn.Linear(2, 2).cuda()\n\nif __name__ == '__main__':\n    main()\n",
        "engine.py": "import torch\n\ndef setup(gpu):\n    torch.cuda.set_device(gpu)\n",
    })
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-s")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (out / "prepare_data.py").read_text() == PREPARE
    train = (out / "train.py").read_text()
    assert 'torch_npu.npu.set_device(int(os.environ.get("DEVICE_ID", "0")))' in train
    # the selection in the module the training calls is kept, from DEVICE_ID, never deleted
    engine = (out / "engine.py").read_text()
    assert 'torch_npu.npu.set_device(int(os.environ.get("DEVICE_ID", "0")))' in engine
    assert "import os" in engine and "torch.cuda" not in engine


def test_s_refuses_a_program_that_spawns_its_workers(tmp_path):
    source = write_project(tmp_path / "proj", {
        "main.py": "import torch\nimport torch.multiprocessing as mp\n\ndef worker(gpu, args):\n"
                   "    torch.cuda.set_device(gpu)\n\nif __name__ == '__main__':\n"
                   "    mp.spawn(worker, nprocs=2, args=(None,))\n",
    })
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-s")
    assert result.returncode == 2
    assert "main.py starts its worker processes itself (line 8" in result.stderr
    assert "Migrate without -s" in result.stderr
    assert not (tmp_path / "out" / "proj_msft").exists()
    # without -s each worker keeps choosing its NPU from its index
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert result.returncode == 0
    assert "torch_npu.npu.set_device(gpu)" in (tmp_path / "out" / "proj_msft" / "main.py").read_text()


TORCHRUN_SCRIPT = ("import os\nimport torch\nimport torch.distributed as dist\n\n"
                   "local_rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl')\n"
                   "torch.cuda.set_device(local_rank)\nmodel = torch.nn.Linear(2, 2).to(local_rank)\n")


def test_s_refuses_a_program_started_once_per_card(tmp_path):
    # torchrun (or a launcher of the project's own) starts one process per card, each choosing
    # its card from LOCAL_RANK: with -s they would all share the one DEVICE_ID NPU
    for name, text in [("train.py", TORCHRUN_SCRIPT),
                       ("main.py", "import argparse\nimport torch\np = argparse.ArgumentParser()\n"
                                   "p.add_argument('--local-rank', type=int, default=0)\n"
                                   "torch.cuda.set_device(p.parse_args().local_rank)\n"),
                       ("launch.py", "import os\nimport subprocess\nimport torch\nfor rank in range(torch.cuda.device_count()):\n"
                                     "    subprocess.Popen(['python', 'w.py'], env={**os.environ, 'LOCAL_RANK': str(rank)})\n"),
                       # the card chosen from the process's rank
                       ("ranked.py", "import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
                                     "device_id = dist.get_rank() % torch.cuda.device_count()\n"
                                     "torch.cuda.set_device(device_id)\n"),
                       ("slurm.py", "import os\nimport torch\n\nrank = int(os.environ['SLURM_PROCID'])\n"
                                    "model = torch.nn.Linear(2, 2).to(f'cuda:{rank}')\n"),
                       ("ddp.py", "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n"
                                  "def wrap(model, rank):\n    return DDP(model.cuda(), device_ids=[rank])\n")]:
        source = write_project(tmp_path / name[:-3], {name: text})
        out = tmp_path / f"out_{name[:-3]}"
        result = _gpu2npu("-i", str(source), "-o", str(out), "-v", "2.1.0", "-s")
        assert result.returncode == 2, result.stderr
        assert f"{name} runs one process per card (line" in result.stderr and "Migrate without -s" in result.stderr
        assert not out.exists()
    # without -s each process keeps selecting its NPU from LOCAL_RANK
    result = _gpu2npu("-i", str(tmp_path / "train"), "-o", str(tmp_path / "plain"), "-v", "2.1.0")
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "plain" / "train_msft" / "train.py").read_text()
    assert "torch_npu.npu.set_device(local_rank)" in migrated and '.to(f"npu:{local_rank}")' in migrated


def test_s_still_sets_the_device_of_a_program_that_reads_its_rank_for_other_things(tmp_path):
    # one process on one card that logs as rank 0 of a group of one: no card chosen from the rank
    source = write_project(tmp_path / "proj", {
        "train.py": "import torch\nimport torch.distributed as dist\n\ndef main():\n"
                    "    rank = dist.get_rank() if dist.is_initialized() else 0\n"
                    "    model = torch.nn.Linear(2, 2).cuda()\n    if rank == 0:\n        print('ready')\n\n"
                    "if __name__ == '__main__':\n    main()\n",
    })
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-s")
    assert result.returncode == 0, result.stderr
    assert 'set_device(int(os.environ.get("DEVICE_ID", "0")))' in (tmp_path / "out" / "proj_msft" / "train.py").read_text()


def test_s_chooses_the_device_in_the_scripts_not_in_the_modules_they_import(tmp_path):
    source = write_project(tmp_path / "proj", {
        "train.py": "import torch\nfrom model import GPT\nmodel = GPT().to('cuda')\n",
        "sample.py": "import torch\nfrom model import GPT\nmodel = GPT().to('cuda')\n",
        "model.py": "import torch\n\nclass GPT(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return torch.zeros(1, device=x.device)\n",
    })
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-s")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    for script in ("train.py", "sample.py"):
        assert 'set_device(int(os.environ.get("DEVICE_ID", "0")))' in (out / script).read_text(), script
    assert (out / "model.py").read_text() == (source / "model.py").read_text()


TRAINER = ("import torch\nfrom transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n\n"
           "model = AutoModelForCausalLM.from_pretrained('m')\nmodel.cuda()\n"
           "trainer = Trainer(model=model, args=TrainingArguments('out'), train_dataset=ds)\ntrainer.train()\n")
DEVICE_MAP = ("import torch\nfrom transformers import AutoModelForCausalLM\n\n"
              "model = AutoModelForCausalLM.from_pretrained('m', device_map='auto')\n"
              "loader = torch.utils.data.DataLoader(ds, batch_size=4)\n")


def test_distributed_refuses_a_trainer_script(tmp_path):
    source = write_project(tmp_path / "proj", {"train.py": TRAINER})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "distributed", "-m", "train.py")
    assert result.returncode == 2
    assert "transformers/TRL Trainer" in result.stderr and "(line 6)" in result.stderr
    assert "torchrun --nproc_per_node=N train.py" in result.stderr
    assert not (tmp_path / "out" / "proj_msft_multi").exists()


def test_distributed_refuses_a_model_placed_by_device_map(tmp_path):
    source = write_project(tmp_path / "proj", {"train.py": DEVICE_MAP})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "distributed", "-m", "train.py")
    assert result.returncode == 2
    assert "device_map" in result.stderr and "(line 4)" in result.stderr


def test_distributed_still_converts_a_plain_script_that_imports_transformers(tmp_path):
    plain = ("import torch\nfrom transformers import AutoTokenizer\n\ntok = AutoTokenizer.from_pretrained('t')\n"
             "model = torch.nn.Linear(2, 2).cuda()\nloader = torch.utils.data.DataLoader(ds, batch_size=4)\n")
    source = write_project(tmp_path / "proj", {"train.py": plain})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "distributed", "-m", "train.py")
    assert result.returncode == 0, result.stderr


SPAWN_WORKERS = '''import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(gpu, world_size, port):
    torch.cuda.set_device(gpu)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=gpu, world_size=world_size)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).cuda(gpu)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    x = torch.full((8, 4), float(gpu + 1)).cuda(gpu, non_blocking=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    grad = model.module.weight.grad.sum().item()
    print(f"worker {gpu} device {torch.cuda.current_device()} grad {grad:.6f}", flush=True)
    dist.barrier()  # neither leaves while the other still talks to it
    dist.destroy_process_group()
    # Leave without Python's finalization: gloo's worker thread may still be freeing the barrier's
    # work, which takes the GIL, and a thread that meets a finalizing interpreter aborts the
    # process ("terminate called without an active exception", seen about once in 20 runs).
    os._exit(0)


if __name__ == "__main__":
    import sys
    mp.spawn(worker, nprocs=2, args=(2, int(sys.argv[1])))
'''


def test_a_spawning_program_migrated_without_s_runs_each_worker_on_its_own_npu(tmp_path):
    """What the -s refusal recommends: every worker keeps selecting its NPU from its index; run
    with two workers on the stand-in, they sit on NPUs 0 and 1 and average their gradients."""
    import pytest
    pytest.importorskip("torch")
    from standin_runner import run_script
    from test_migrated_runs import data_file

    source = write_project(tmp_path / "proj", {"main.py": SPAWN_WORKERS})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "proj_msft" / "main.py"
    text = migrated.read_text()
    assert "torch_npu.npu.set_device(gpu)" in text and '"hccl"' in text and ".npu(gpu" in text
    env = {"STANDIN_NPU_COUNT": "2", "STANDIN_TORCH_NPU_DATA": str(data_file("2.1.0"))}
    run = run_script(migrated, [free_port()], cwd=tmp_path, env_extra=env, timeout=240)
    assert run.returncode == 0, run.stderr
    # (the workers share one stdout: their lines may interleave, so they are found, not split)
    reports = sorted(re.findall(r"worker (\d) device (\d) grad (-?\d+\.\d{6})", run.stdout))
    assert [(worker, device) for worker, device, _ in reports] == [("0", "0"), ("1", "1")], run.stdout
    assert len({grad for _, _, grad in reports}) == 1, run.stdout  # DDP averaged their different gradients


def test_distributed_says_so_when_the_script_wraps_its_model_itself(tmp_path):
    source = write_project(tmp_path / "proj", {"train.py": (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\ndef main():\n"
        "    dist.init_process_group('nccl')\n    model = torch.nn.Linear(2, 2).cuda()\n"
        "    model = DDP(model, device_ids=[int(os.environ['LOCAL_RANK'])])\n\n\n"
        "if __name__ == '__main__':\n    main()\n")})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "distributed", "-m", "train.py")
    assert result.returncode == 0, result.stderr
    assert "train.py wraps its model for data parallelism itself (DDP)" in result.stdout
    assert "no model variable" not in result.stdout
    migrated = (tmp_path / "out" / "proj_msft_multi" / "train.py").read_text()
    assert migrated.count("DDP(") == 1
