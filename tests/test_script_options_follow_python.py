"""A launch script passes an option the way the project's Python code declares it: where the
migration leaves an option's "nccl" as written (its value goes to Ray's collective groups, not
torch's process groups), `--sync-backend nccl` in a script stays too, and is reported; an option
that reaches torch's process groups is renamed on both sides.  Run through the console script."""
import json
import subprocess
import sys

from helpers import write_project

TRAIN = (
    "import argparse\nimport torch.distributed as dist\nimport ray.util.collective as col\n\n\n"
    "class WeightSync:\n    def __init__(self, backend='nccl'):\n        if backend == 'nccl':\n"
    "            col.init_collective_group(4, 0, backend=backend, group_name='sync')\n\n\n"
    "def main():\n    p = argparse.ArgumentParser()\n"
    "    p.add_argument('--sync-backend', default='nccl', choices=['nccl', 'gloo'])\n"
    "    p.add_argument('--dist-backend', default='nccl')\n    args = p.parse_args()\n"
    "    dist.init_process_group(backend=args.dist_backend)\n    return WeightSync(backend=args.sync_backend)\n"
)
LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --sync-backend nccl --dist-backend nccl\n"


def _gpu2npu(*args: str):
    return subprocess.run([sys.executable, "-m", "gpu2npu", *args], capture_output=True, text=True, timeout=120)


def test_a_script_keeps_the_nccl_of_an_option_the_python_code_keeps(tmp_path):
    source = write_project(tmp_path / "proj", {"train.py": TRAIN, "scripts/run.sh": LAUNCH})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    train = (out / "train.py").read_text()
    assert "add_argument('--sync-backend', default='nccl', choices=['nccl', 'gloo'])" in train
    assert "add_argument('--dist-backend', default='hccl')" in train
    assert (out / "scripts" / "run.sh").read_text() == LAUNCH.replace("--dist-backend nccl", "--dist-backend hccl")
    rows = (out / "unsupported_api.csv").read_text()
    assert "scripts/run.sh,2,2,--sync-backend nccl," in rows and "no HCCL backend" in rows

    # `check` says the same of the script
    checked = _gpu2npu("check", str(source), "-v", "2.1.0", "--format", "json", "--no-cache")
    findings = [f for f in json.loads(checked.stdout)["findings"] if f["path"].endswith("run.sh")]
    assert sorted((f["start_line"], f["rule"], f["level"]) for f in findings) == [
        (2, "NPU503", "error"), (2, "NPU503", "warning")]
    assert "--sync-backend nccl" in next(f["message"] for f in findings if f["level"] == "error")


def test_without_a_foreign_library_the_script_and_the_code_are_renamed_together(tmp_path):
    plain = TRAIN.replace("import ray.util.collective as col\n", "").replace(
        "            col.init_collective_group(4, 0, backend=backend, group_name='sync')\n", "            pass\n")
    source = write_project(tmp_path / "proj", {"train.py": plain, "run.sh": LAUNCH})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert "default='hccl', choices=['hccl', 'gloo']" in (out / "train.py").read_text()
    assert (out / "run.sh").read_text() == LAUNCH.replace("nccl", "hccl")


OWN_TF32 = ("import argparse\nimport torch\np = argparse.ArgumentParser()\n"
            "p.add_argument('--tf32', type=bool, default=False)\nargs = p.parse_args()\n")
HF_TF32 = ("from transformers import HfArgumentParser, TrainingArguments\n"
           "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")


def test_a_scripts_own_tf32_option_is_no_transformers_option(tmp_path):
    """transformers raises for --tf32 True without CUDA: the row is for the scripts that parse it with
    HfArgumentParser, not for one that declares --tf32 itself.  `check` says the same."""
    launch = ("#!/bin/bash\ntorchrun --nproc_per_node 8 tools/train.py --bf16 True --tf32 True\n"
              "deepspeed finetune.py --tf32 True\n")
    source = write_project(tmp_path / "proj", {"tools/train.py": OWN_TF32, "finetune.py": HF_TF32, "run.sh": launch})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    rows = (tmp_path / "out" / "proj_msft" / "unsupported_api.csv").read_text().splitlines()
    assert [row.split(",")[:4] for row in rows if ",--tf32," in row] == [["run.sh", "3", "3", "--tf32"]]
    checked = _gpu2npu("check", str(source), "-v", "2.1.0", "--format", "json", "--no-cache")
    assert [f["start_line"] for f in json.loads(checked.stdout)["findings"] if "--tf32" in f["message"]] == [3]


# An RL trainer's configuration module declares its backends; its trainer hands one to torch's
# process groups and the other to Ray's collective groups
CONFIG = ("import argparse\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass TrainerConfig:\n"
          "    weight_sync_backend: str = 'nccl'\n    dist_backend: str = 'nccl'\n\n\n"
          "def parse():\n    p = argparse.ArgumentParser()\n"
          "    p.add_argument('--weight-sync-backend', default='nccl', choices=['nccl', 'gloo'])\n"
          "    p.add_argument('--dist-backend', default='nccl')\n    return p.parse_args()\n")
TRAINER = ("import ray.util.collective as col\nimport torch.distributed as dist\n\n\nclass Trainer:\n"
           "    def __init__(self, cfg):\n        self.cfg = cfg\n\n    def setup(self, world, rank):\n"
           "        dist.init_process_group(backend=self.cfg.dist_backend)\n"
           "        if self.cfg.weight_sync_backend == 'nccl':\n"
           "            col.init_collective_group(world, rank, backend=self.cfg.weight_sync_backend, group_name='sync')\n")
RL_LAUNCH = "#!/bin/bash\npython -m rl.train --weight-sync-backend nccl --dist-backend nccl\n"


def test_a_name_another_file_hands_to_another_library_keeps_its_nccl_everywhere(tmp_path):
    source = write_project(tmp_path / "proj", {"rl/__init__.py": "", "rl/config.py": CONFIG, "rl/trainer.py": TRAINER,
                                               "run.sh": RL_LAUNCH})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    config = (out / "rl" / "config.py").read_text()
    assert "weight_sync_backend: str = 'nccl'" in config and "dist_backend: str = 'hccl'" in config
    assert "'--weight-sync-backend', default='nccl', choices=['nccl', 'gloo']" in config
    assert "'--dist-backend', default='hccl'" in config
    assert "weight_sync_backend == 'nccl'" in (out / "rl" / "trainer.py").read_text()
    assert (out / "run.sh").read_text() == RL_LAUNCH.replace("--dist-backend nccl", "--dist-backend hccl")
    rows = (out / "unsupported_api.csv").read_text()
    assert "rl/config.py,7,7,backend 'nccl'," in rows and "rl/trainer.py,11,11,backend 'nccl'," in rows

    # `check` of the folder, named absolutely or from inside it, says the same
    findings = []
    for path, cwd in ((str(source), None), (".", source)):
        checked = subprocess.run([sys.executable, "-m", "gpu2npu", "check", path, "-v", "2.1.0", "--format", "json",
                                  "--no-cache"], capture_output=True, text=True, timeout=120, cwd=cwd)
        findings.append(sorted((f["path"].rsplit("proj/", 1)[-1].lstrip("./"), f["start_line"], f["level"])
                               for f in json.loads(checked.stdout)["findings"] if f["rule"] == "NPU105"))
    assert findings[0] == findings[1]
    assert ("rl/config.py", 7, "error") in findings[0] and ("rl/config.py", 8, "warning") in findings[0]


def test_a_name_handed_to_torch_somewhere_is_renamed_though_another_file_hands_it_to_ray(tmp_path):
    # `backend` reaches torch's process groups in one file and Ray's in another: as in a file alone,
    # torch's wins (the rename is what makes the program start)
    launcher = "import torch.distributed as dist\n\n\ndef setup(backend='nccl'):\n    dist.init_process_group(backend=backend)\n"
    sync = ("import ray.util.collective as col\n\n\ndef join(backend):\n    col.init_collective_group(2, 0, backend=backend)\n")
    options = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--backend', default='nccl')\n"
    source = write_project(tmp_path / "proj", {"launcher.py": launcher, "sync.py": sync, "options.py": options})
    result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert "def setup(backend='hccl')" in (out / "launcher.py").read_text()
    assert "default='hccl'" in (out / "options.py").read_text()


class TestAnOptionReadThroughGetattrAndHandedToRay:
    """OpenRLHF's `--vllm.sync_backend` (default "nccl") is read as `backend = getattr(args.vllm,
    "sync_backend", "nccl")` in the trainer, which hands `backend` to Ray's collective groups and
    compares it with "nccl" to choose CUDA IPC: the option, each getattr default, each comparison
    and the launch scripts keep "nccl" (renamed, the comparison silently chose the other path and
    Ray refused "hccl"), with rows; a getattr default whose answer reaches torch moves."""

    CLI = ("import argparse\np = argparse.ArgumentParser()\n"
           "p.add_argument('--vllm.sync_backend', type=str, default='nccl')\n")
    ACTOR = ("import os\nimport ray.util.collective as collective\n\n\nclass Actor:\n    def setup(self, args):\n"
             "        backend = getattr(args.vllm, 'sync_backend', 'nccl')\n"
             "        self.use_ipc = backend == 'nccl' and args.colocate\n        if not self.use_ipc:\n"
             "            collective.init_collective_group(world_size=2, rank=0, backend=backend, group_name='g')\n\n"
             "    def env(self, args):\n        if getattr(args.vllm, 'sync_backend', 'nccl') == 'nccl':\n"
             "            os.environ['NCCL_CUMEM_ENABLE'] = '0'\n")
    LAUNCH = "#!/bin/bash\npython -m cli --vllm.sync_backend nccl\n"

    def test_every_spelling_keeps_nccl_with_rows(self, tmp_path):
        source = write_project(tmp_path / "proj", {"cli.py": self.CLI, "actor.py": self.ACTOR, "run.sh": self.LAUNCH})
        result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
        assert result.returncode == 0, result.stderr
        out = tmp_path / "out" / "proj_msft"
        assert (out / "cli.py").read_text() == self.CLI
        assert "getattr(args.vllm, 'sync_backend', 'nccl') == 'nccl'" in (out / "actor.py").read_text()
        assert "backend = getattr(args.vllm, 'sync_backend', 'nccl')" in (out / "actor.py").read_text()
        assert (out / "run.sh").read_text() == self.LAUNCH
        rows = (out / "unsupported_api.csv").read_text()
        assert all(f"{where},backend 'nccl'," in rows for where in ("cli.py,3,3", "actor.py,7,7", "actor.py,13,13"))

    def test_a_getattr_default_that_reaches_torch_moves(self, tmp_path):
        source = write_project(tmp_path / "proj", {"train.py": (
            "import torch.distributed as dist\n\n\ndef setup(args):\n"
            "    backend = getattr(args, 'dist_backend', 'nccl')\n    dist.init_process_group(backend=backend)\n")})
        result = _gpu2npu("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
        assert result.returncode == 0, result.stderr
        assert "getattr(args, 'dist_backend', 'hccl')" in (tmp_path / "out" / "proj_msft" / "train.py").read_text()
