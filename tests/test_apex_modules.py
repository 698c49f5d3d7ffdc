"""NPU262: apex modules with an exact torch twin are imported from torch; the rest is reported
with the torch / torch_npu way."""
from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


def test_twins_imported_from_torch_and_the_file_needs_no_apex():
    output, result = _migrate("import torch\nfrom apex.normalization import FusedLayerNorm as LN\n"
                              "from apex.parallel import SyncBatchNorm\n"
                              "layers = [LN(16), SyncBatchNorm(8, 1e-5, 0.1, True, True, None)]\n")
    assert "from torch.nn import LayerNorm as LN\n" in output and "from torch.nn import SyncBatchNorm\n" in output
    assert "apex" not in output
    assert [c.rule for c in result.changes] == ["NPU262", "NPU262"]
    assert not [f for f in result.findings if f.report == Report.UNSUPPORTED]


def test_the_twin_computes_what_apex_documents():
    # FusedLayerNorm(normalized_shape, eps, elementwise_affine) is layer normalisation over the
    # trailing dimensions: (x - mean) / sqrt(var + eps) * weight + bias
    import torch
    from torch.nn import LayerNorm
    x = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(0))
    norm = LayerNorm(16, 1e-6, True)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    assert (norm(x) - (x - mean) / torch.sqrt(var + 1e-6)).abs().max() <= 1e-5


def test_what_has_no_twin_stays_and_is_reported_with_the_way():
    output, result = _migrate("from apex.normalization import FusedLayerNorm, FusedRMSNorm\n"
                              "from apex.optimizers import FusedLAMB\n"
                              "opt = FusedLAMB(model.parameters(), lr=1e-3)\n")
    assert output.startswith("from apex.normalization import FusedLayerNorm, FusedRMSNorm\n")
    tips = {f.api: f.tip for f in result.findings if f.report == Report.UNSUPPORTED}
    lamb = [tip for api, tip in tips.items() if api.startswith("apex.optimizers")]
    assert lamb and "NpuFusedLamb" in lamb[0] and "use_global_grad_norm=True" in lamb[0]
    norm = [tip for api, tip in tips.items() if api.startswith("apex.normalization")]
    assert norm and "torch.nn.RMSNorm" in norm[0] and "eps=1e-5" in norm[0]
