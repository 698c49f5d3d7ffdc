"""NPU108: CUDA's TF32 switches become the NPU's HF32 switches, however torch is named, in the
releases that have them; the advice row that used to say so is not written for a switched line."""
import textwrap

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options


def _migrate(source, version="2.1.0"):
    options = Options(api=apidata.load(version))
    source = textwrap.dedent(source)
    result = migrate_source(source.encode(), "m.py", options, rules_for(options))
    return (result.output or source.encode()).decode(), result


def test_aliases_and_local_imports_reach_the_hf32_switches():
    output, result = _migrate("""\
        import torch.backends.cudnn as cudnn
        from torch import backends


        def setup(fast):
            import torch as th
            th.backends.cuda.matmul.allow_tf32 = fast
            cudnn.allow_tf32 = fast
            print(backends.cuda.matmul.allow_tf32)
        """)
    assert "torch_npu.npu.matmul.allow_hf32 = fast" in output
    assert "torch_npu.npu.conv.allow_hf32 = fast" in output
    assert "print(torch_npu.npu.matmul.allow_hf32)" in output
    assert "import torch_npu" in output
    assert [(c.start_line, c.rule) for c in result.changes if c.rule == "NPU108"] == [(7, "NPU108"), (8, "NPU108"), (9, "NPU108")]
    assert not [f for f in result.findings if f.rule == "NPU962"]


def test_before_the_2x_releases_the_switch_stays_and_nothing_is_claimed():
    source = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n"
    output, result = _migrate(source, "1.11.0")
    assert output == source
    assert not [c for c in result.changes if c.rule == "NPU108"]


def test_code_that_already_chooses_between_npu_and_cuda_keeps_its_switch_and_its_advice():
    source = """\
        import torch
        if hasattr(torch, "npu") and torch.npu.is_available():
            torch.npu.matmul.allow_hf32 = True
        else:
            torch.backends.cuda.matmul.allow_tf32 = True
        """
    output, result = _migrate(source)
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in output
    assert not [c for c in result.changes if c.rule == "NPU108"]


def test_other_allow_tf32_attributes_are_not_torchs_switches():
    source = "allow_tf32 = True\nconfig.allow_tf32 = allow_tf32\nsettings.backends.cudnn.allow_tf32 = False\n"
    output, result = _migrate(source)
    assert output == source
    assert not [f for f in result.findings if f.report == Report.UNSUPPORTED]


def test_torch_29_precision_settings_become_the_switches_with_their_boolean():
    output, result = _migrate("""\
        import torch
        from torch.backends import cudnn

        torch.backends.cuda.matmul.fp32_precision = "tf32"  # fast matmuls
        cudnn.conv.fp32_precision = 'ieee'
        torch.backends.cuda.matmul.fp32_precision = "none"
        torch.backends.fp32_precision = "tf32"
        mode = torch.backends.cuda.matmul.fp32_precision
        """)
    lines = output.splitlines()
    assert "torch_npu.npu.matmul.allow_hf32 = True  # fast matmuls" in lines
    assert "torch_npu.npu.conv.allow_hf32 = False" in lines
    # "none" (inherit) has no boolean; the global setting and a read are not a switch
    assert 'torch.backends.cuda.matmul.fp32_precision = "none"' in lines
    assert 'torch.backends.fp32_precision = "tf32"' in lines
    assert "mode = torch.backends.cuda.matmul.fp32_precision" in lines
    assert [c.start_line for c in result.changes if c.rule == "NPU108"] == [4, 5]
    source = "import torch\ntorch.backends.cuda.matmul.fp32_precision = 'tf32'\n"
    assert _migrate(source, "1.11.0")[0] == source
    # what stays is advised with the NPU switches, what was switched is not
    rows = {f.start_line: f.tip for f in result.findings if f.report == Report.PERFORMANCE and "fp32_precision" in f.api}
    assert sorted(rows) == [6, 7] and all("allow_hf32" in tip for tip in rows.values())


def test_a_file_whose_only_cuda_question_is_a_cudnn_switch_is_migrated():
    # "cudnn" holds no CUDA word: the scan that lets untouched files skip libcst must still see it
    for source, want in (("import torch\ntorch.backends.cudnn.allow_tf32 = True\n", "torch_npu.npu.conv.allow_hf32 = True"),
                         ("import torch\ntorch.backends.cudnn.conv.fp32_precision = 'tf32'\n",
                          "torch_npu.npu.conv.allow_hf32 = True")):
        output, result = _migrate(source)
        assert want in output.splitlines() and [c.rule for c in result.changes] == ["NPU001", "NPU108"]
