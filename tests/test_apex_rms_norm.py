"""NPU265 and the generated ascend_apex package: apex's FusedRMSNorm on torch_npu.npu_rms_norm,
checked against apex's documented computation, x / sqrt(mean(x ** 2) + eps) * weight over the
normalized dimensions, eps 1e-5 by default."""
import os
import sys

import pytest
import torch

from helpers import migrate, read_csv
from standin_runner import STANDIN_DIR, run_script

GENERATED = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gpu2npu", "generated")


@pytest.fixture(scope="module")
def normalization():
    for folder in (STANDIN_DIR, GENERATED):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import ascend_apex
    return ascend_apex.normalization


def reference(x, weight, dims, eps=1e-5):
    axes = tuple(range(x.dim() - dims, x.dim()))
    return x / torch.sqrt((x * x).mean(dim=axes, keepdim=True) + eps) * weight


@pytest.mark.parametrize("shape, normalized", [((2, 5, 16), 16), ((3, 4, 6), (4, 6))])
def test_rms_norm_matches_apex_computation(normalization, shape, normalized):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=generator)
    norm = normalization.FusedRMSNorm(normalized)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(norm.weight.shape, generator=generator) + 0.5)
    dims = 1 if isinstance(normalized, int) else len(normalized)
    assert float((norm(x) - reference(x, norm.weight, dims)).detach().abs().max()) <= 1e-5
    assert norm.eps == 1e-5 and list(norm.state_dict()) == ["weight"]


def test_without_affine_weight_and_with_apex_positions(normalization):
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))
    norm = normalization.FusedRMSNorm(8, 1e-6, False)
    assert norm.weight is None and norm.eps == 1e-6
    assert float((norm(x) - reference(x, torch.ones(8), 1, 1e-6)).abs().max()) <= 1e-5
    with pytest.raises(RuntimeError, match="last dimensions"):
        norm(torch.randn(4, 7))


def test_layer_norm_keeps_apex_constructor(normalization):
    norm = normalization.FusedLayerNorm(8, 1e-6, True, True)
    x = torch.randn(3, 8)
    want = torch.nn.functional.layer_norm(x, (8,), norm.weight, norm.bias, 1e-6)
    assert isinstance(norm, torch.nn.LayerNorm) and torch.allclose(norm(x), want)


def test_a_migrated_model_file_runs_on_the_standin(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "model.py").write_text(
        "import torch\nfrom apex.normalization import FusedLayerNorm, FusedRMSNorm\n\n"
        "x = torch.randn(2, 3, 16, generator=torch.Generator().manual_seed(0))\n"
        "rms, ln = FusedRMSNorm(16), FusedLayerNorm(16, memory_efficient=True)\n"
        "want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)\n"
        "print('max error', float((rms(x) - want).abs().max() + (ln(x) - torch.nn.functional.layer_norm(x, (16,))).abs().max()))\n")
    target = migrate(project, tmp_path / "out")
    assert "from ascend_apex.normalization import FusedLayerNorm, FusedRMSNorm" in (target / "model.py").read_text()
    assert (target / "ascend_apex" / "normalization.py").is_file()
    assert not [row for row in read_csv(target / "unsupported_api.csv") if "apex" in row["OP"]]
    result = run_script(target / "model.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.split()[-1]) <= 1e-5


def test_layer_norm_alone_still_goes_to_torch_and_a_file_on_apex_amp_keeps_its_imports(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("from apex.normalization import FusedLayerNorm\nnorm = FusedLayerNorm(8)\n")
    (project / "b.py").write_text("from apex.normalization import FusedRMSNorm\nfrom apex import amp\nnorm = FusedRMSNorm(8)\n")
    target = migrate(project, tmp_path / "out")
    assert (target / "a.py").read_text().startswith("from torch.nn import LayerNorm as FusedLayerNorm\n")
    assert (target / "b.py").read_text() == (project / "b.py").read_text()
    assert not (target / "ascend_apex").exists()
