"""The generated ascend_bitsandbytes package: bitsandbytes' optimizer classes, arguments and
defaults, computing the 32-bit algorithm with torch's optimizers."""
import os
import sys
import warnings

import pytest

# (every test here runs the migrated code against the CPU stand-in of torch_npu)
torch = pytest.importorskip("torch", reason="needs PyTorch (CPU build): these tests run migrated code")

from helpers import migrate, read_csv
from standin_runner import run_script

GENERATED = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gpu2npu", "generated")


@pytest.fixture(scope="module")
def bnb():
    if GENERATED not in sys.path:
        sys.path.insert(0, GENERATED)
    import ascend_bitsandbytes
    return ascend_bitsandbytes


def trained(make_optimizer, steps=5):
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    optimizer = make_optimizer(model.parameters())
    data = torch.randn(8, 6, generator=torch.Generator().manual_seed(1))
    for _ in range(steps):
        optimizer.zero_grad()
        model(data).square().mean().backward()
        optimizer.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.mark.parametrize("name, reference", [
    ("AdamW8bit", lambda p: torch.optim.AdamW(p, lr=1e-2)),                    # weight_decay 1e-2 by default
    ("PagedAdamW32bit", lambda p: torch.optim.AdamW(p, lr=1e-2)),
    ("Adam8bit", lambda p: torch.optim.Adam(p, lr=1e-2)),                      # weight_decay 0 by default
    ("PagedAdam", lambda p: torch.optim.Adam(p, lr=1e-2)),
])
def test_adam_families_keep_bitsandbytes_defaults(bnb, name, reference):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = trained(lambda p: getattr(bnb.optim, name)(p, lr=1e-2))
    assert torch.allclose(got, trained(reference), atol=1e-7)


def test_weight_decay_of_the_adam_class_is_decoupled_as_in_bitsandbytes_kernel(bnb):
    got = trained(lambda p: bnb.optim.Adam32bit(p, 1e-2, (0.9, 0.999), 1e-8, 0.1))
    assert torch.allclose(got, trained(lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1)), atol=1e-7)


def test_sgd_rmsprop_adagrad_take_the_same_positions(bnb):
    assert torch.allclose(trained(lambda p: bnb.optim.SGD8bit(p, 0.1, 0.9)),
                          trained(lambda p: torch.optim.SGD(p, 0.1, 0.9)))
    assert torch.allclose(trained(lambda p: bnb.optim.RMSprop32bit(p, 0.01, 0.9)),
                          trained(lambda p: torch.optim.RMSprop(p, 0.01, 0.9)))
    assert torch.allclose(trained(lambda p: bnb.optim.Adagrad(p, 0.1)), trained(lambda p: torch.optim.Adagrad(p, 0.1)))


def test_what_has_no_torch_counterpart_raises_and_8bit_warns_about_memory(bnb):
    params = [torch.nn.Parameter(torch.zeros(2))]
    with pytest.raises(NotImplementedError, match="percentile_clipping"):
        bnb.optim.AdamW8bit(params, percentile_clipping=5)
    with pytest.warns(UserWarning, match="4x the memory"):
        bnb.optim.Adagrad8bit(params, 0.1)  # (once per class and process)


def test_a_qlora_style_script_is_migrated_and_trains(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(
        "import torch\nimport bitsandbytes as bnb\n\n"
        "torch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2).cuda() if torch.cuda.is_available() else torch.nn.Linear(4, 2)\n"
        "optimizer = bnb.optim.PagedAdamW8bit(model.parameters(), lr=1e-2, weight_decay=0.0)\n"
        "x = torch.ones(3, 4)\nfor step in range(3):\n    optimizer.zero_grad()\n"
        "    loss = model(x.to(next(model.parameters()).device)).square().mean()\n    loss.backward()\n"
        "    optimizer.step()\n    print(f'step {step} loss {loss.item():.6f}')\n")
    target = migrate(project, tmp_path / "out")
    assert (target / "ascend_bitsandbytes" / "optim.py").is_file()
    assert "import ascend_bitsandbytes as bnb" in (target / "train.py").read_text()
    assert any(r["Rule"] == "NPU264" for r in read_csv(target / "change_list.csv"))
    migrated = run_script(target / "train.py", [], cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    reference = tmp_path / "reference.py"
    reference.write_text((project / "train.py").read_text().replace("import bitsandbytes as bnb\n", "").replace(
        "bnb.optim.PagedAdamW8bit", "torch.optim.AdamW"))
    expected = run_script(reference, [], cwd=tmp_path, use_standin=False)
    assert expected.returncode == 0, expected.stderr
    assert migrated.stdout == expected.stdout and "step 2 loss" in migrated.stdout
