"""`distributed` and `-s` on the command line, and the conversion's harder cases."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import DistributedSettings, Options

from helpers import FIXTURES, migrate, read_csv, run_cli

SETTINGS = DistributedSettings(main_file="train.py", guard_saves=True)
OPTIONS = Options(api=apidata.load("2.1.0"), distributed=SETTINGS)


def convert(source: str, path: str = "train.py"):
    result = migrate_source(source.encode(), path, OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


def test_output_folder_launcher_and_log(tmp_path):
    target = migrate(FIXTURES / "single_card_for_multi", tmp_path, "2.1.0", "distributed", "-m", "train.py")
    assert target.name == "single_card_for_multi_msft_multi"
    launcher = target / "run_distributed_npu.sh"
    text = launcher.read_text()
    assert launcher.stat().st_mode & 0o100
    for needle in ("MASTER_ADDR", "MASTER_PORT:-29688", "HCCL_WHITELIST_DISABLE=1", "RANK_SIZE", "DEVICE_ID=",
                   "RANK_ID=", '"$@"', "output_npu_", "torchrun --nproc_per_node", "train.py"):
        assert needle in text, needle
    log = (target / "msFmkTranspltlog.txt").read_text()
    assert "global batch" in log and "--split-batch" in log
    rows = read_csv(target / "change_list.csv")
    assert {"NPU301", "NPU303", "NPU304", "NPU305"} <= {row["Rule"] for row in rows}
    assert all(row["Operation Type"] == "INSERT" for row in rows if row["Rule"] == "NPU304")


def test_split_batch(tmp_path):
    target = migrate(FIXTURES / "single_card_for_multi", tmp_path, "2.1.0", "distributed", "-m", "train.py",
                     "--split-batch")
    assert "batch_size=max(1, (args.batch_size) // torch.distributed.get_world_size())" in (target / "train.py").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["distributed", "-m", "nope.py"], "no such .py file"),
        (["distributed", "-m", "train.py", "-t", "net"], "never assigns net"),
        (["distributed", "-m", "train.py", "-t", "1model"], "not a variable name"),
        (["distributed"], "Missing option '-m'"),
    ],
)
def test_usage_errors_write_nothing(args, message, tmp_path):
    out = tmp_path / "out"
    result = run_cli("-i", str(FIXTURES / "single_card_for_multi"), "-o", str(out), "-v", "2.1.0", *args)
    assert result.exit_code == 2 and message in result.output
    assert not out.exists()


def test_main_file_outside_the_input_is_refused(tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("model = 1\n")
    result = run_cli("-i", str(FIXTURES / "single_card_for_multi"), "-o", str(tmp_path / "out"), "-v", "2.1.0",
                     "distributed", "-m", str(outside))
    assert result.exit_code == 2 and "inside the input" in result.output


def test_existing_init_is_migrated_not_duplicated(tmp_path):
    target = migrate(FIXTURES / "ddp_spawn_imagenet", tmp_path, "2.1.0", "distributed", "-m", "main.py")
    text = (target / "main.py").read_text()
    assert text.count("init_process_group(") == 1 and "NPU_DEVICE_ID" not in text
    assert text.count("DistributedDataParallel(") == 1  # the script's own wrap, not a second one


def test_model_built_with_a_move_is_wrapped_once():
    output, _ = convert("import torch\nmodel = Net().to(device)\nmodel = model.cuda()\n")
    assert output.count("DistributedDataParallel(") == 1
    assert output.index("DistributedDataParallel(") < output.index("model = model.npu()\n", output.index("DistributedDataParallel("))


def test_loader_with_double_star_kwargs_is_reported_not_edited():
    source = "import torch\nfrom torch.utils.data import DataLoader\ntrain_loader = DataLoader(train_set, **kwargs)\n"
    output, result = convert(source)
    assert "train_loader = DataLoader(train_set, **kwargs)\n" in output
    assert any(f.report == Report.UNSUPPORTED and f.start_line == 3 for f in result.findings)


def test_target_never_built_is_reported():
    output, result = convert("import torch\nmodel = model.cuda()\n")
    assert "DistributedDataParallel" not in output
    assert any("no statement that builds model" in f.tip for f in result.findings)


def test_set_epoch_without_an_epoch_loop_is_reported():
    source = ("import torch\nfrom torch.utils.data import DataLoader\n"
              "train_loader = DataLoader(ds, batch_size=8, shuffle=True)\nwhile True:\n    run(train_loader)\n")
    output, result = convert(source)
    assert "set_epoch" not in output
    assert any(f.api.endswith("set_epoch") for f in result.findings)


def test_evaluation_loader_is_not_split():
    source = "import torch\nfrom torch.utils.data import DataLoader\nval_loader = DataLoader(val_set, batch_size=8)\n"
    output, _ = convert(source)
    assert "DistributedSampler" not in output and "drop_last" not in output


def test_saves_already_guarded_by_rank_stay():
    source = "import torch\nmodel = Net()\nif args.rank == 0:\n    torch.save(model.state_dict(), 'a.pt')\n"
    output, _ = convert(source)
    assert "get_rank() == 0" not in output


def test_model_built_in_both_branches_is_wrapped_after_the_if():
    source = ("import torch\ndef main(args):\n    if args.pretrained:\n        model = A(pretrained=True)\n"
              "    else:\n        model = A()\n    train(model)\n")
    output, _ = convert(source)
    lines = output.splitlines()
    assert output.count("DistributedDataParallel(") == 1
    wrap = next(i for i, line in enumerate(lines) if "DistributedDataParallel(" in line)
    assert lines[wrap - 1] == "    model = model.npu()" and lines[wrap - 2] == "        model = A()"
    assert lines[wrap + 1] == "    train(model)"


def test_model_built_in_the_main_block_is_wrapped_there():
    source = "import torch\nif __name__ == '__main__':\n    model = Net()\n    for epoch in range(3):\n        train(model)\n"
    output, _ = convert(source)
    assert "    model = Net()\n    model = model.npu()\n    model = torch.nn.parallel.DistributedDataParallel(" in output
