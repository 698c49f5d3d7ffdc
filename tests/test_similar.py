"""-sim/--similar: calls of APIs without an NPU kernel go to the generated ascend_function package
(rule NPU252); each equivalent computes what the torch function computes."""
import dataclasses
import math

import pytest

from gpu2npu.knowledge import apidata, ascend_functions as similar
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

from helpers import FIXTURES, migrate, read_csv, run_cli, tree_files

torch = pytest.importorskip("torch")
from gpu2npu.generated import ascend_function_template as af  # noqa: E402  (imports torch)
from standin_runner import parse_losses, run_script  # noqa: E402

SPECIAL = [-3.0, -1.0, -0.0, 0.0, 0.25, 1.0, 2.5, math.inf, -math.inf, math.nan]


def same(expected, got):
    """Equal values (NaN where torch has NaN), up to rounding: two units in the last place."""
    assert expected.dtype == got.dtype and expected.shape == got.shape
    eps = torch.finfo(expected.dtype).eps if expected.dtype.is_floating_point else 0
    assert torch.allclose(expected, got, rtol=2 * eps, atol=0, equal_nan=True), (expected, got)


def grid(dtype=torch.float32):
    values = torch.tensor(SPECIAL, dtype=dtype)
    return values.repeat_interleave(len(SPECIAL)), values.repeat(len(SPECIAL))


def test_the_package_covers_what_it_says():
    assert sorted(similar.equivalents()) == sorted({**af.REPLACES, **af.ANSWERS})
    assert sorted(e.function for e in similar.equivalents().values()) == sorted(af.__all__)
    assert {api for api, e in similar.equivalents().items() if e.answers_cuda} == set(af.ANSWERS)


def test_the_cuda_questions_are_answered_from_the_npu(monkeypatch):
    from standin_runner import STANDIN_DIR

    monkeypatch.syspath_prepend(STANDIN_DIR)
    monkeypatch.delenv("TORCH_NPU_DEVICE_CAPABILITY", raising=False)
    import torch_npu

    # the stand-in computes bfloat16, as an Atlas A2 NPU does
    assert torch_npu.npu.is_bf16_supported() and af.get_device_capability() == (8, 0)
    monkeypatch.setattr(torch_npu.npu, "is_bf16_supported", lambda: False)
    assert af.get_device_capability(0) == (7, 0)
    monkeypatch.setenv("TORCH_NPU_DEVICE_CAPABILITY", "9.0")
    properties = af.get_device_properties(0)
    assert (properties.major, properties.minor) == (9, 0)
    assert properties.name == torch_npu.npu.get_device_properties(0).name
    with pytest.raises(AttributeError, match="multi_processor_count.*total_memory"):
        properties.multi_processor_count


@pytest.mark.parametrize("version", apidata.available_versions())
def test_every_covered_api_lacks_an_npu_kernel_in_the_data(version):
    api = apidata.load(version)
    assert [name for name in af.REPLACES if apidata.lacks_npu_kernel(api, name) is None] == []


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("name", ["heaviside", "fmax", "fmin", "hypot"])
def test_binary_equivalents_equal_torch(name, dtype):
    a, b = grid(dtype)
    if name == "heaviside":
        b = torch.where(torch.isnan(b), torch.zeros_like(b), b)
    same(getattr(torch, name)(a, b), getattr(af, name)(a, b))
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(3, 1, 50, generator=g).to(dtype) * 100, torch.randn(40, 50, generator=g).to(dtype) * 100
    same(getattr(torch, name)(x, y), getattr(af, name)(x, y))  # broadcasting


def test_hypot_does_not_overflow_in_half_precision_and_has_the_same_gradient():
    a = torch.tensor([300.0, 3e4, 1e-4], dtype=torch.float16)
    b = torch.tensor([400.0, 4e4, 1e-4], dtype=torch.float16)
    same(torch.hypot(a, b), af.hypot(a, b))
    generator = torch.Generator().manual_seed(0)  # fixed inputs: the comparison is to the last bits
    x = torch.randn(20, dtype=torch.float64, generator=generator).requires_grad_()
    y = torch.randn(20, dtype=torch.float64, generator=generator)
    expected, = torch.autograd.grad(torch.hypot(x, y).sum(), x)
    got, = torch.autograd.grad(af.hypot(x, y).sum(), x)
    same(expected, got)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_lcm_equals_torch(dtype):
    a = torch.arange(-30, 31, dtype=dtype).repeat_interleave(61)
    b = torch.arange(-30, 31, dtype=dtype).repeat(61)
    assert torch.equal(torch.lcm(a, b), af.lcm(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_entr_equals_torch(dtype):
    x = torch.tensor(SPECIAL) if dtype.is_floating_point else torch.arange(-3, 4)
    x = x.to(dtype)
    same(torch.special.entr(x), af.entr(x))


@pytest.mark.parametrize("size", [0, 1, 3, 4, 9])
@pytest.mark.parametrize("fill_value", [-1, 7])
def test_nonzero_static_equals_torch(size, fill_value):
    x = torch.tensor([[0, 1, 0], [2, 0, 3], [0, 0, 4]])
    assert torch.equal(torch.nonzero_static(x, size=size, fill_value=fill_value),
                       af.nonzero_static(x, size=size, fill_value=fill_value))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("delta", [1.0, 0.3, 2.0])
def test_huber_loss_and_its_gradient_equal_torch(reduction, delta):
    g = torch.Generator().manual_seed(1)
    prediction = torch.randn(8, 5, generator=g, dtype=torch.float64, requires_grad=True)
    target = torch.randn(8, 5, generator=g, dtype=torch.float64) * 2
    target[0, :2] = prediction[0, :2].detach() + torch.tensor([delta, -delta], dtype=torch.float64)  # on the edge
    expected = torch.nn.functional.huber_loss(prediction, target, reduction=reduction, delta=delta)
    got = af.huber_loss(prediction, target, reduction=reduction, delta=delta)
    same(expected, got)
    same(torch.autograd.grad(expected.sum(), prediction)[0], torch.autograd.grad(got.sum(), prediction)[0])
    with pytest.raises(ValueError):
        af.huber_loss(prediction, target, reduction="avg")


def rewrite(source, api=None):
    options = Options(api=api or apidata.load("2.1.0"), similar=True)
    result = migrate_source(source.encode(), "pkg/deep/ops.py", options, rules_for(options))
    return (result.output or source.encode()).decode(), result


def test_an_api_the_release_runs_on_the_npu_is_not_rewritten():
    api = apidata.load("2.1.0")
    with_kernel = dataclasses.replace(api, native_functions=api.native_functions | {"heaviside"})
    source = "import torch\ny = torch.heaviside(x, v) + torch.fmax(x, v)\n"
    output, _ = rewrite(source, with_kernel)
    assert "torch.heaviside(x, v)" in output and "ascend_function.fmax(x, v)" in output


def test_calls_with_arguments_the_equivalent_lacks_are_left_and_reported():
    output, result = rewrite("import torch\ntorch.fmax(a, b, out=c)\ntorch.nonzero_static(x, size=3, fill_value=0)\n")
    assert "torch.fmax(a, b, out=c)" in output and "ascend_function.nonzero_static(x, size=3, fill_value=0)" in output
    assert [f.api for f in result.findings] == ["torch.fmax"]


def test_nested_files_find_the_package_from_anywhere(tmp_path):
    target = migrate(FIXTURES / "similar_ops", tmp_path / "out", "2.1.0", "-sim")
    assert (target / "ascend_function" / "__init__.py").read_text() == similar.package_text()
    nested = target / "losses" / "robust.py"
    text = nested.read_text()
    assert "sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))\n" in text
    # run the nested module on its own, from a folder outside the output: only the inserted
    # sys.path line lets it import ascend_function
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_script(nested, [], cwd=elsewhere).returncode == 0
    without = nested.with_name("robust_without_path.py")
    without.write_text("".join(line for line in text.splitlines(keepends=True) if not line.startswith("sys.path")))
    broken = run_script(without, [], cwd=elsewhere)
    assert broken.returncode != 0 and "ascend_function" in broken.stderr


def test_migrated_fixture_trains_like_the_original(tmp_path):
    source = FIXTURES / "similar_ops"
    original = run_script(source / "train.py", ["--steps", 5], cwd=tmp_path, use_standin=False)
    target = migrate(source, tmp_path / "out", "2.1.0", "--similar")
    migrated = run_script(target / "train.py", ["--steps", 5], cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert parse_losses(migrated.stdout) == pytest.approx(parse_losses(original.stdout), rel=1e-6, abs=1e-7)
    assert original.stdout.splitlines()[-1] == migrated.stdout.splitlines()[-1]
    rows = read_csv(target / "change_list.csv")
    assert {r["Message"].split(" (")[0] for r in rows if r["Rule"] == "NPU252"} == {
        "change torch.hypot to ascend_function.hypot", "change torch.heaviside to ascend_function.heaviside",
        "change torch.nn.functional.huber_loss to ascend_function.huber_loss", "insert import ascend_function"}
    assert [r["OP"] for r in read_csv(target / "unsupported_api.csv")] == ["torch.fmax"]


def test_without_sim_nothing_is_replaced(tmp_path):
    target = migrate(FIXTURES / "similar_ops", tmp_path / "out", "2.1.0")
    assert not (target / "ascend_function").exists()
    assert "ascend_function" not in "".join(p.read_text() for r, p in tree_files(target).items() if r.endswith(".py"))
    ops = sorted(r["OP"] for r in read_csv(target / "unsupported_api.csv"))
    assert ops == ["torch.fmax", "torch.heaviside", "torch.hypot", "torch.nn.functional.huber_loss"]


def test_the_projects_own_ascend_function_folder_is_not_overwritten(tmp_path):
    project = tmp_path / "project"
    (project / "ascend_function").mkdir(parents=True)
    (project / "ascend_function" / "__init__.py").write_text("VALUE = 1\n")
    (project / "train.py").write_text("import torch\ny = torch.heaviside(x, v)\n")
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-sim")
    assert result.exit_code == 2 and "already has its own" in result.output
    assert not (tmp_path / "out").exists()


def test_explain_lists_every_covered_api():
    result = run_cli("explain", "NPU252")
    assert result.exit_code == 0
    for api, name in af.REPLACES.items():
        assert f"{api} -> ascend_function.{name}" in result.output


@pytest.mark.parametrize("flag", ["-sim", "--similar"])
def test_both_spellings_parse(flag, tmp_path):
    result = run_cli("-i", str(FIXTURES / "similar_ops"), "-o", str(tmp_path), "-v", "2.8.0", flag)
    assert result.exit_code == 0, result.output
    assert "ascend_function.heaviside(" in (tmp_path / "similar_ops_msft" / "losses" / "robust.py").read_text()


def test_a_capability_gate_runs_on_the_npu_with_sim_and_is_reported_without(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "precision.py").write_text(
        "import torch\n\n"
        "flash = torch.cuda.get_device_capability() >= (8, 0)  # (a gate choosing bf16 is NPU111's)\n"
        "props = torch.cuda.get_device_properties(torch.cuda.current_device())\n"
        "print(flash, props.major, props.minor, props.name)\n")
    target = migrate(project, tmp_path / "out", "2.1.0", "-sim")
    result = run_script(target / "precision.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:3] == ["True", "8", "0"]
    assert not read_csv(target / "unsupported_api.csv")
    # without -sim the gate is left and reported: torch_npu answers None, which a comparison refuses
    target = migrate(project, tmp_path / "plain", "2.1.0")
    apis = {row["OP"] for row in read_csv(target / "unsupported_api.csv")}
    assert {"torch.cuda.get_device_capability", "device properties .major, .minor"} <= apis
    failed = run_script(target / "precision.py", [], cwd=tmp_path)
    assert failed.returncode != 0
