"""-m/--modelarts: paths routed through ModelArtsPathManager, the generated package, and the
migrated job really running, both locally (no moxing: the manager does nothing) and against a
stand-in of the ModelArts SDK (tests/fake_moxing: object storage is a local folder)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from gpu2npu.reports import csv_reports

from gpu2npu.knowledge import apidata
from gpu2npu.outputs.modelarts_package import FILES, PACKAGE_NAME
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options
from helpers import FIXTURES, migrate, read_csv, run_cli, tree_files, unexplained_differences
from standin_runner import parse_losses, run_script, standin_env

OPTIONS = Options(api=apidata.load("2.1.0"), modelarts=True)
FAKE_MOXING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_moxing")
JOB = FIXTURES / "modelarts_job"
STEPS = 5
MAPPING = """PATH_MAPPING_CONFIG = {
    'input': {'./data': 'obs://bucket/job/data'},
    'output': {'./output': 'obs://bucket/job/output'},
}
"""


def wrapped(source: str, path: str = "example.py"):
    result = migrate_source(source.encode(), path, OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


@pytest.mark.parametrize("call, argument", [
    ("open(p, 'w')", "p"),
    ("os.makedirs(d, exist_ok=True)", "d"),
    ("os.path.exists(d)", "d"),
    ("shutil.copyfile(a, dst=b)", "a"),
    ("glob.glob(pattern)", "pattern"),
    ("pathlib.Path(d)", "d"),
    ("np.load(p)", "p"),
    ("pd.read_csv(p)", "p"),
    ("torch.load(p, map_location='cpu')", "p"),
    ("torch.save(state, p)", "p"),
    ("torchvision.datasets.MNIST(p, download=True)", "p"),
    ("frame.to_csv(p)", "p"),
])
def test_path_arguments_are_wrapped(call, argument):
    source = ("import os, shutil, glob, pathlib, torch, torchvision\nimport numpy as np\nimport pandas as pd\n"
              f"x = {call}\n")
    output, result = wrapped(source)
    assert f"ModelArtsPathManager().get_path({argument})" in output
    assert "from ascend_modelarts_function import ModelArtsPathManager\n" in output
    assert [c.rule for c in result.changes if c.rule == "NPU801"]


def test_both_paths_of_a_copy_and_none_twice():
    output, _ = wrapped("import shutil\nshutil.copyfile(a, dst=b)\n")
    assert "copyfile(ModelArtsPathManager().get_path(a), dst=ModelArtsPathManager().get_path(b))" in output
    again, second = wrapped(output)
    assert again == output and not second.changes


@pytest.mark.parametrize("source", [
    "import torch, io\ntorch.save(state, io.BytesIO())\n",  # a file object
    "import torch\ntorch.save(state, open(p, 'wb'))\n",  # open() is wrapped, not its result
    "import os\nos.listdir(*folders)\n",
    "import pathlib\nhere = pathlib.Path(__file__).parent\n",
    "import os\nos.path.join(a, b)\n",  # composes a path, touches nothing
])
def test_what_is_not_a_path_is_left_alone(source):
    output, _ = wrapped(source)
    assert output.count("get_path(") == source.count("open(")


def test_the_package_itself_is_never_wrapped():
    source = "import os\nos.makedirs(cache, exist_ok=True)\n"
    _, result = wrapped(source, f"{PACKAGE_NAME}/modelarts_path_manager.py")
    assert not result.changes


def test_without_modelarts_nothing_is_wrapped():
    options = Options(api=OPTIONS.api)
    source = "import torch\ntorch.save(state, 'a.pt')\nx = torch.ones(1).cuda()\n"
    result = migrate_source(source.encode(), "example.py", options, rules_for(options))
    assert b"ModelArtsPathManager" not in result.output


def test_run_writes_the_package_and_reports_each_wrap(tmp_path):
    target = migrate(JOB, tmp_path / "out", "2.1.0", "-m")
    package = target / PACKAGE_NAME
    assert sorted(p.name for p in package.iterdir()) == sorted(FILES)
    config = (package / "path_mapping_config.py").read_text()
    assert "PATH_MAPPING_CONFIG = {" in config and "'input': {" in config and "'output': {" in config
    assert "<local path>" not in config and "format: '<path as the script names it>': '<obs or s3 path>'" in config
    rows = read_csv(target / "change_list.csv")
    for relative in ("train.py", "data_utils.py"):
        before, after = (JOB / relative).read_bytes(), (target / relative).read_bytes()
        assert unexplained_differences(before, after, [r for r in rows if r["File"] == relative]) == []
    assert sum(r["Rule"] == "NPU801" and r["Operation Type"] == "MODIFY" for r in rows) == 8
    assert "wrote ascend_modelarts_function/" in (target / "msFmkTranspltlog.txt").read_text()


def test_second_migration_keeps_the_users_mapping(tmp_path):
    first = migrate(JOB, tmp_path / "one", "2.1.0", "-m")
    (first / PACKAGE_NAME / "path_mapping_config.py").write_text(MAPPING)
    for name in (*csv_reports.REPORT_NAMES, "msFmkTranspltlog.txt", "report.html"):
        (first / name).unlink(missing_ok=True)
    second = migrate(first, tmp_path / "two", "2.1.0", "-m")
    assert read_csv(second / "change_list.csv") == []
    assert (second / PACKAGE_NAME / "path_mapping_config.py").read_text() == MAPPING
    for relative, path in tree_files(first).items():
        assert (second / relative).read_bytes() == path.read_bytes(), relative


def test_modelarts_before_distributed_and_main_after_it(tmp_path):
    """-m before `distributed` is ModelArts, -m after it the main file."""
    result = run_cli("-i", str(FIXTURES / "single_card_for_multi"), "-o", str(tmp_path / "out"), "-v", "2.1.0",
                     "-m", "distributed", "-m", "train.py")
    assert result.exit_code == 0, result.output
    target = tmp_path / "out" / "single_card_for_multi_msft_multi"
    assert (target / PACKAGE_NAME / "modelarts_path_manager.py").is_file()
    assert (target / "run_distributed_npu.sh").is_file()
    main = (target / "train.py").read_text()
    assert "DistributedDataParallel(" in main and "ModelArtsPathManager().get_path(" in main


def _original_losses(tmp_path):
    copy = tmp_path / "original"
    shutil.copytree(JOB, copy)
    result = run_script(copy / "train.py", ["--steps", STEPS], cwd=copy, use_standin=False)
    assert result.returncode == 0, result.stderr
    return parse_losses(result.stdout)


def test_migrated_job_runs_locally_without_moxing(tmp_path):
    target = migrate(JOB, tmp_path / "out", "2.1.0", "-m")
    (target / PACKAGE_NAME / "path_mapping_config.py").write_text(MAPPING)  # ignored without moxing
    result = run_script(target / "train.py", ["--steps", STEPS], cwd=target)
    assert result.returncode == 0, result.stderr
    assert parse_losses(result.stdout) == pytest.approx(_original_losses(tmp_path), rel=1e-6, abs=1e-7)
    assert json.loads((target / "output" / "metrics.json").read_text())["steps"] == STEPS
    assert (target / "output" / "model.pt").is_file()
    resumed = run_script(target / "train.py", ["--steps", 1, "--resume"], cwd=target)
    assert resumed.returncode == 0, resumed.stderr


def test_migrated_job_downloads_inputs_and_uploads_outputs_with_moxing(tmp_path):
    target = migrate(JOB, tmp_path / "out", "2.1.0", "-m")
    (target / PACKAGE_NAME / "path_mapping_config.py").write_text(MAPPING)
    obs = tmp_path / "obs"
    shutil.copytree(target / "data", obs / "bucket" / "job" / "data")
    shutil.rmtree(target / "data")  # the data is only in object storage now
    log = tmp_path / "moxing.jsonl"
    cache = tmp_path / "cache"
    base = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [FAKE_MOXING, os.environ.get("PYTHONPATH")])))
    env = standin_env({"FAKE_OBS_ROOT": obs, "FAKE_MOXING_LOG": log, "MODELARTS_CACHE_DIR": cache}, base=base)
    result = subprocess.run([sys.executable, str(target / "train.py"), "--steps", str(STEPS)], cwd=target, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert parse_losses(result.stdout) == pytest.approx(_original_losses(tmp_path), rel=1e-6, abs=1e-7)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(c["call"], c["source"]) for c in calls] == [
        ("copy_parallel", "obs://bucket/job/data"),  # before the first read
        ("copy_parallel", str(cache / "output" / "0" / "output")),  # at exit
    ]
    assert calls[0]["files"] == ["shard_a.csv", "shard_b.csv"]
    assert calls[1]["destination"] == "obs://bucket/job/output"
    # uploaded after training: the metrics written at the very end were there
    assert calls[1]["files"] == ["metrics.json", "model.pt"]
    uploaded = obs / "bucket" / "job" / "output"
    assert json.loads((uploaded / "metrics.json").read_text())["steps"] == STEPS
    assert not (target / "output").exists()  # written to the cache, not next to the script


def _fake_modelarts_env(tmp_path, obs):
    base = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [FAKE_MOXING, os.environ.get("PYTHONPATH")])))
    return standin_env({"FAKE_OBS_ROOT": obs, "FAKE_MOXING_LOG": tmp_path / "moxing.jsonl",
                        "MODELARTS_CACHE_DIR": tmp_path / "cache"}, use_standin=False, base=base)


MANAGER_CHECKS = """
import io, os, pathlib
from ascend_modelarts_function import ModelArtsPathManager
manager = ModelArtsPathManager()
assert manager is ModelArtsPathManager()
cache = os.environ["MODELARTS_CACHE_DIR"]
mapped = manager.get_path("./data/shard_a.csv")
assert mapped == os.path.join(cache, "input", "0", "data", "shard_a.csv"), mapped
assert open(mapped).read().startswith("a,b,c,y")
assert manager.get_path(mapped) == mapped  # a mapped path is not mapped again
assert manager.get_path(pathlib.Path("data")) == pathlib.Path(cache, "input", "0", "data")
assert manager.get_path("./data_other/x") == "./data_other/x"  # a prefix of a name is not a folder
buffer = io.BytesIO()
assert manager.get_path(buffer) is buffer and manager.get_path(3) == 3 and manager.get_path(b"data") == b"data"
assert manager.get_path("output/m.pt") == os.path.join(cache, "output", "0", "output", "m.pt")
print("checked")
"""


def test_path_manager_maps_only_what_the_config_lists(tmp_path):
    target = migrate(JOB, tmp_path / "out", "2.1.0", "-m")
    (target / PACKAGE_NAME / "path_mapping_config.py").write_text(MAPPING)
    shutil.copytree(target / "data", tmp_path / "obs" / "bucket" / "job" / "data")
    result = subprocess.run([sys.executable, "-c", MANAGER_CHECKS], cwd=target, text=True, capture_output=True,
                            env=_fake_modelarts_env(tmp_path, tmp_path / "obs"), timeout=120)
    assert result.returncode == 0 and "checked" in result.stdout, result.stderr


def test_processes_of_one_launch_download_once(tmp_path):
    target = migrate(JOB, tmp_path / "out", "2.1.0", "-m")
    (target / PACKAGE_NAME / "path_mapping_config.py").write_text(MAPPING)
    shutil.copytree(target / "data", tmp_path / "obs" / "bucket" / "job" / "data")
    env = _fake_modelarts_env(tmp_path, tmp_path / "obs")
    script = ("from ascend_modelarts_function import ModelArtsPathManager\n"
              "print(open(ModelArtsPathManager().get_path('data/shard_b.csv')).readline().strip())\n")
    processes = [subprocess.Popen([sys.executable, "-c", script], cwd=target, env=dict(env, RANK_ID=str(rank)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in range(3)]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert all(process.returncode == 0 for process in processes), outputs
    assert all(out.strip() == "a,b,c,y" for out, _ in outputs)
    calls = [json.loads(line) for line in (tmp_path / "moxing.jsonl").read_text().splitlines()]
    assert [c["call"] for c in calls] == ["copy_parallel"]  # one download, and nothing to upload
