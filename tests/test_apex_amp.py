"""-a/--amp-model: native AMP of one model becomes Ascend apex amp (rule NPU251)."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

from helpers import FIXTURES, parses, read_csv, run_cli, unexplained_differences

OPTIONS = Options(api=apidata.load("2.1.0"), amp_model="model")

TRAIN_STEP = (
    "    for x, y in loader:\n"
    "        optimizer.zero_grad()\n"
    "        with torch.cuda.amp.autocast():\n"
    "            loss = model(x).sum()\n"
    "        scaler.scale(loss).backward()\n"
    "        scaler.step(optimizer)\n"
    "        scaler.update()\n"
)


def convert(source: str, model: str = "model"):
    options = Options(api=OPTIONS.api, amp_model=model)
    result = migrate_source(source.encode(), "train.py", options, rules_for(options))
    output = (result.output or source.encode()).decode()
    assert parses(output.encode())
    rows = [{"Start Line": str(c.start_line), "End Line": str(c.end_line), "Operation Type": c.operation.value}
            for c in result.changes]
    assert unexplained_differences(source.encode(), output.encode(), rows) == []
    again = migrate_source(output.encode(), "train.py", options, rules_for(options))
    assert again.output is None and not again.changes, "a second migration must change nothing"
    return output, result


def amp_findings(result):
    return [f for f in result.findings if f.rule == "NPU251" and f.report == Report.UNSUPPORTED]


def test_a_trainer_attribute_model_and_its_methods():
    source = (
        "import torch\n"
        "class Trainer:\n"
        "    def __init__(self, net):\n"
        "        self.model = net.cuda()\n"
        "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
        "        self.scaler = torch.cuda.amp.GradScaler()\n"
        "    def step(self, x):\n"
        "        with torch.cuda.amp.autocast():\n"
        "            loss = self.model(x).mean()\n"
        "        self.scaler.scale(loss).backward()\n"
        "        self.scaler.step(self.optimizer)\n"
        "        self.scaler.update()\n"
        "        return loss\n"
    )
    output, result = convert(source, "self.model")
    assert ('self.model, self.optimizer = amp.initialize(self.model, self.optimizer, opt_level="O2", '
            'loss_scale="dynamic")\n') in output
    assert "GradScaler" not in output and "autocast" not in output and "self.scaler" not in output
    assert "        loss = self.model(x).mean()\n" in output  # dedented by one level, kept
    assert "        with amp.scale_loss(loss, self.optimizer) as scaled_loss:\n            scaled_loss.backward()\n" in output
    assert "        self.optimizer.step()\n" in output
    assert "from apex import amp\n" in output


def test_optimizer_built_after_the_scaler_gets_initialize_after_it():
    source = ("import torch\nmodel = Net()\nscaler = torch.cuda.amp.GradScaler()\n"
              "optimizer = torch.optim.Adam(model.parameters())\n" + "if True:\n" + TRAIN_STEP)
    output, _ = convert(source)
    lines = output.splitlines()
    assert lines.index("optimizer = torch.optim.Adam(model.parameters())") + 1 == lines.index(
        'model, optimizer = amp.initialize(model, optimizer, opt_level="O2", loss_scale="dynamic")')


def test_optimizer_chosen_in_branches_is_initialised_after_the_if():
    source = ("import torch\ndef main(args):\n    model = Net()\n"
              "    if args.sgd:\n        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "    else:\n        optimizer = torch.optim.Adam(model.parameters())\n"
              "    scaler = torch.cuda.amp.GradScaler()\n" + TRAIN_STEP)
    output, _ = convert(source)
    assert ("        optimizer = torch.optim.Adam(model.parameters())\n    model, optimizer = amp.initialize(") in output


def test_comments_of_removed_lines_are_kept():
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "scaler = torch.cuda.amp.GradScaler()\n"
              "with torch.autocast('cuda'):  # mixed precision\n    loss = model(x)\n"
              "scaler.scale(loss).backward()\n# gradients back to their true size\nscaler.unscale_(optimizer)\n"
              "scaler.step(optimizer)\nscaler.update()  # next scale\n")
    output, _ = convert(source)
    assert "# mixed precision\nloss = model(x)\n" in output
    assert "# gradients back to their true size\noptimizer.step()\n" in output


def test_other_items_of_a_with_statement_stay():
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "scaler = torch.cuda.amp.GradScaler()\n"
              "with torch.no_grad(), torch.cuda.amp.autocast():\n    loss = model(x)\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n")
    output, _ = convert(source)
    assert "with torch.no_grad():\n    loss = model(x)\n" in output


def test_a_file_using_the_name_amp_imports_apex_amp_under_another_name():
    source = ("import torch\nfrom torch.cuda import amp\nmodel = Net()\n"
              "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nscaler = amp.GradScaler()\n"
              "with amp.autocast():\n    loss = model(x)\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n")
    output, _ = convert(source)
    assert "from apex import amp as apex_amp\n" in output
    assert "apex_amp.initialize(model, optimizer" in output and "with apex_amp.scale_loss(loss, optimizer)" in output


def test_scaler_state_in_checkpoints_becomes_amp_state():
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "scaler = torch.cuda.amp.GradScaler()\n"
              "ckpt = torch.load('last.pt')\nscaler.load_state_dict(ckpt['scaler'])\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n"
              "torch.save({'optimizer': optimizer.state_dict(), 'scaler': scaler.state_dict()}, 'last.pt')\n")
    output, _ = convert(source)
    # old checkpoints hold GradScaler state, which apex cannot load: only the amp state is read
    assert "if 'amp' in ckpt:\n    amp.load_state_dict(ckpt['amp'])\n" in output
    assert "{'optimizer': optimizer.state_dict(), 'amp': amp.state_dict()}" in output


def test_amp_state_is_added_to_a_multiline_checkpoint_next_to_the_optimizer():
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "scaler = torch.cuda.amp.GradScaler()\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n"
              "torch.save({\n    'model': model.state_dict(),\n    'optimizer': optimizer.state_dict()\n}, 'last.pt')\n")
    output, _ = convert(source)
    assert "    'optimizer': optimizer.state_dict(),\n    'amp': amp.state_dict()\n}, 'last.pt')\n" in output


@pytest.mark.parametrize("use, why", [
    ("train(model, optimizer, scaler)\n", "is used in a way"),
    ("scaler.step(other)\n", "steps 2 optimizers"),
    ("print(scaler.get_scale())\nscaler2 = scaler\n", "is used in a way"),
])
def test_scaler_uses_not_understood_leave_everything_and_are_reported(use, why):
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "other = torch.optim.SGD(head.parameters(), lr=0.1)\nscaler = torch.cuda.amp.GradScaler()\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n" + use)
    output, result = convert(source)
    assert "apex" not in output and "scaler.scale(loss).backward()" in output
    assert "torch_npu.npu.amp.GradScaler()" in output  # migrated as native NPU AMP instead
    [finding] = amp_findings(result)
    assert why in finding.tip and finding.start_line == 5


def test_grad_scaler_options_apex_lacks_are_reported():
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "scaler = torch.cuda.amp.GradScaler(init_scale=1024)\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n")
    output, result = convert(source)
    assert "apex" not in output
    assert "init_scale=1024" in amp_findings(result)[0].tip


def test_bfloat16_autocast_is_kept_and_reported():
    source = ("import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "scaler = torch.cuda.amp.GradScaler()\n"
              "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n"
              "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()\n")
    output, result = convert(source)
    assert "with torch.autocast('npu', dtype=torch.bfloat16):" in output
    assert [f.api for f in amp_findings(result)] == ["torch.autocast"]


def test_without_a_the_amp_is_migrated_to_native_npu_amp():
    source = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    options = Options(api=OPTIONS.api)
    result = migrate_source(source.encode(), "train.py", options, rules_for(options))
    assert b"torch_npu.npu.amp.GradScaler()" in result.output and b"apex" not in result.output


# -- the command line ----------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["-a", "--amp-model"])
def test_both_spellings_convert(flag, tmp_path):
    result = run_cli("-i", str(FIXTURES / "native_amp"), "-o", str(tmp_path), "-v", "2.1.0", flag, "model")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "native_amp_msft" / "train_amp.py").read_text()
    assert "amp.initialize(model, optimizer" in text


def test_a_model_no_optimizer_is_built_from_is_a_usage_error(tmp_path):
    result = run_cli("-i", str(FIXTURES / "native_amp"), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-a", "net")
    assert result.exit_code == 2
    assert "-a net: no Python file builds an optimizer from net.parameters()" in result.output
    assert not (tmp_path / "out").exists()


def test_a_with_distributed_is_refused_before_writing(tmp_path):
    result = run_cli("-i", str(FIXTURES / "single_gpu_loop"), "-o", str(tmp_path / "out"), "-v", "2.1.0",
                     "-a", "model", "distributed", "-m", "train.py")
    assert result.exit_code == 2 and "-a cannot be combined with distributed" in result.output
    assert not (tmp_path / "out").exists()


def test_other_scalers_of_the_project_are_reported(tmp_path):
    run_cli("-i", str(FIXTURES / "native_amp"), "-o", str(tmp_path), "-v", "2.1.0", "-a", "model")
    rows = read_csv(tmp_path / "native_amp_msft" / "unsupported_api.csv")
    # (torch 2.1 lacks torch.amp.GradScaler, which another row, NPU903, says)
    [row] = [r for r in rows if r["OP"] == "torch.amp.GradScaler" and r["Rule"] == "NPU251"]
    assert row["File"] == "evaluation.py" and row["Start Line"] == "32"
    assert "opt, is not built from model.parameters()" in row["Tips"]
