"""Affinity and performance advice (gpu2npu.findings.affinity): each pattern found in the spellings real
code uses, not found in its near misses, with the right lines, only when the chosen torch_npu
release has the replacement; and written to the incumbent's CSVs."""
import ast
import csv
import dataclasses
import textwrap

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.findings.affinity import find_affinity
from gpu2npu.reading.scan import FileScan
from gpu2npu.records.change import Report
from gpu2npu.commands.check import check_paths
from gpu2npu.migration.pipeline import Status, migrate_source
from gpu2npu.rules import Options

from helpers import migrate

API = apidata.load("2.1.0")


def advice(code, api=API, rule=None):
    findings = find_affinity(FileScan(ast.parse(textwrap.dedent(code))), "m.py", api)
    return [f for f in findings if rule is None or f.rule == rule]


def lines(code, rule, api=API):
    return [(f.start_line, f.end_line) for f in advice(code, api, rule)]


# -- RMSNorm -------------------------------------------------------------------------------------

RMS_NORMS = [
    # LLaMA: the mean of squares in a variable, then rsqrt
    ("""\
     import torch
     from torch import nn
     class LlamaRMSNorm(nn.Module):
         def forward(self, hidden_states):
             variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
             hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
             return self.weight * hidden_states
     """, (5, 6)),
    # one expression, aliased torch, x * x, torch.mean with dim=
    ("""\
     import torch as th
     def rms_norm(x, weight, eps=1e-6):
         return x * th.rsqrt(th.mean(x * x, dim=-1, keepdim=True) + eps) * weight
     """, (3, 3)),
    # method-style rsqrt and square
    ("""\
     import torch
     def norm(x, eps):
         return x * (x.square().mean(dim=-1, keepdim=True) + eps).rsqrt()
     """, (3, 3)),
    # division by a square root, x ** 2, rsqrt imported by name
    ("""\
     import torch
     def norm(x, g):
         ms = (x ** 2).mean(-1, keepdim=True)
         return g * x / torch.sqrt(ms + 1e-8)
     """, (3, 4)),
]


@pytest.mark.parametrize("code, span", RMS_NORMS)
def test_rms_norm_found_with_its_lines(code, span):
    found = advice(code, rule="NPU951")
    assert [(f.start_line, f.end_line) for f in found] == [span]
    assert found[0].report == Report.AFFINITY and found[0].replacement == "torch_npu.npu_rms_norm"
    assert found[0].api_type == "special" and "[0]" in found[0].tip


RMS_NEAR_MISSES = [
    # LayerNorm: centred before squaring
    """\
    import torch
    def layer_norm(x, eps):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return (x - u) / torch.sqrt(s + eps)
    """,
    """\
    import torch
    def layer_norm(x, eps):
        return (x - x.mean(-1, keepdim=True)) * torch.rsqrt((x - x.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True) + eps)
    """,
    # a mean over the batch, not over features
    """\
    import torch
    def batch_scale(x):
        return x * torch.rsqrt(x.pow(2).mean(0, keepdim=True))
    """,
    # rsqrt of something else
    """\
    import torch
    def scale(x, d):
        return x * torch.rsqrt(torch.tensor(d))
    """,
    # already NPU-aware
    """\
    import torch, torch_npu
    def norm(x, w, eps):
        if x.device.type == "npu":
            return torch_npu.npu_rms_norm(x, w, eps)[0]
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    """,
]


@pytest.mark.parametrize("code", RMS_NEAR_MISSES)
def test_rms_norm_near_misses(code):
    assert advice(code, rule="NPU951") == []


def test_torch_rms_norm_module_points_to_the_fused_kernel():
    code = """\
    import torch.nn as nn
    import torch.nn.functional as F
    norm = nn.RMSNorm(512)
    y = F.rms_norm(x, (512,))
    """
    found = advice(code, rule="NPU961")
    assert [(f.start_line, f.api, f.api_type) for f in found] == [
        (3, "torch.nn.RMSNorm", "torch"), (4, "torch.nn.functional.rms_norm", "torch")]


def test_tf32_switches_point_to_hf32_through_aliases_and_in_functions():
    code = """\
    import torch
    import torch.backends.cuda as backends_cuda
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = False
    backends_cuda.matmul.allow_tf32 = True
    def setup():
        torch.backends.cuda.matmul.allow_tf32 = False
    allow = torch.backends.cuda.matmul.allow_tf32   # read, not a switch
    torch.backends.cudnn.benchmark = True           # not a precision switch
    """
    found = advice(code, rule="NPU962")
    assert [(f.start_line, f.api, f.replacement, f.report) for f in found] == [
        (3, "torch.backends.cuda.matmul.allow_tf32", "torch_npu.npu.matmul.allow_hf32", Report.PERFORMANCE),
        (4, "torch.backends.cudnn.allow_tf32", "torch_npu.npu.conv.allow_hf32", Report.PERFORMANCE),
        (5, "torch.backends.cuda.matmul.allow_tf32", "torch_npu.npu.matmul.allow_hf32", Report.PERFORMANCE),
        (7, "torch.backends.cuda.matmul.allow_tf32", "torch_npu.npu.matmul.allow_hf32", Report.PERFORMANCE)]
    assert "False by default" in found[0].tip and "True by default" in found[1].tip
    assert advice(code, api=apidata.load("1.11.0"), rule="NPU962") == []  # no HF32 switches before 2.x


# -- rotary embedding ----------------------------------------------------------------------------

ROTARY = """\
import torch

def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)

def apply_rotary_pos_emb(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (
        rotate_half(k) * sin
    )
    return q_embed, k_embed
"""


def test_rotary_found_for_each_application():
    assert lines(ROTARY, "NPU952") == [(9, 9), (10, 12)]
    assert all(f.replacement == "torch_npu.npu_rotary_mul" for f in advice(ROTARY, rule="NPU952"))


def test_rotary_with_rotate_half_imported_or_named_otherwise():
    imported = """\
    from ..llama.modeling_llama import rotate_half
    import torch
    def apply(x, cos, sin):
        return x * cos + rotate_half(x) * sin
    """
    renamed = """\
    import torch
    def _swap(t):
        a, b = t.chunk(2, dim=-1)
        return torch.cat([-b, a], dim=-1)
    class Rope:
        def forward(self, x, cos, sin):
            return (x * cos) + (self._swap(x) * sin)
    """
    assert lines(imported, "NPU952") == [(4, 4)]
    assert lines(renamed, "NPU952") == [(7, 7)]


@pytest.mark.parametrize("body", [
    "x1 = x[..., 0::2]\n    x2 = x[..., 1::2]\n    return torch.stack((-x2, x1), dim=-1).flatten(-2)",  # interleaved
    "x1, x2 = x.chunk(2, dim=-1)\n    return torch.cat((x2, -x1), dim=-1)",  # the other direction
])
def test_rotary_near_misses_other_layouts(body):
    code = f"import torch\ndef rotate_half(x):\n    {body}\ndef apply(q, cos, sin):\n    return q * cos + rotate_half(q) * sin\n"
    assert advice(code, rule="NPU952") == []


def test_sum_of_products_without_rotation_is_not_rotary():
    assert advice("import torch\ndef lerp(a, b, w):\n    return a * (1 - w) + b * w\n", rule="NPU952") == []


# -- SwiGLU ----------------------------------------------------------------------------------------

def test_swiglu_with_two_projections_function_style():
    code = """\
    import torch
    from torch.nn import functional as F
    class MLP(torch.nn.Module):
        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
    """
    found = advice(code, rule="NPU953")
    assert [(f.start_line, f.end_line) for f in found] == [(5, 5)]
    assert "one Linear" in found[0].tip and found[0].replacement == "torch_npu.npu_swiglu"


def test_swiglu_with_an_nn_silu_module():
    code = """\
    import torch.nn as nn
    class FeedForward(nn.Module):
        def __init__(self, dim, hidden):
            super().__init__()
            self.act = nn.SiLU()
            self.w1 = nn.Linear(dim, hidden)
            self.w3 = nn.Linear(dim, hidden)
        def forward(self, x):
            return self.w2(self.act(self.w1(x)) * self.w3(x))
    """
    assert lines(code, "NPU953") == [(9, 9)]


@pytest.mark.parametrize("split", ["x.chunk(2, dim=-1)", "torch.chunk(x, 2, dim=-1)"])
def test_swiglu_on_the_halves_of_one_tensor_spans_the_split(split):
    code = f"""\
    import torch
    import torch.nn.functional as F
    def swiglu(x):
        gate, up = {split}
        return F.silu(gate) * up
    """
    found = advice(code, rule="NPU953")
    assert [(f.start_line, f.end_line) for f in found] == [(4, 5)]
    assert "two halves of one tensor" in found[0].tip


@pytest.mark.parametrize("expression", [
    "F.silu(x) * 2.0",  # a scale, not a gate
    "x * F.silu(x)",  # the silu of its own input
    "F.gelu(self.g(x)) * self.u(x)",  # GeGLU, another activation
    "self.act_fn(self.g(x)) * self.u(x)",  # an activation chosen by configuration
    "F.silu(x) * self.scale",
    "hidden * F.silu(gate)",  # a gate on another value (Mamba's gated norm), not a gated projection
    "F.silu(self.g(x)) * self.g(x)",
])
def test_swiglu_near_misses(expression):
    code = f"import torch\nimport torch.nn.functional as F\nclass M:\n    def forward(self, x):\n        return {expression}\n"
    assert advice(code, rule="NPU953") == []


def test_clamped_halves_are_not_plain_swiglu():
    code = """\
    import torch.nn.functional as F
    def gate(x, limit):
        gate, up = x.chunk(2, dim=-1)
        gate = gate.clamp(max=limit)
        return F.silu(gate) * up
    """
    assert advice(code, rule="NPU953") == []


# -- attention -------------------------------------------------------------------------------------

NANOGPT_ATTENTION = """\
import math
import torch.nn as nn
from torch.nn import functional as F

class CausalSelfAttention(nn.Module):
    def forward(self, q, k, v, T):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        return y
"""


def test_attention_over_several_statements_spans_qk_to_pv():
    found = advice(NANOGPT_ATTENTION, rule="NPU954")
    assert [(f.start_line, f.end_line) for f in found] == [(7, 11)]
    assert found[0].replacement == "torch_npu.npu_fusion_attention"
    assert "True = masked out" in found[0].tip and "scaled_dot_product_attention" in found[0].tip


@pytest.mark.parametrize("code, span", [
    ("""\
     import torch
     def attend(q, k, v, scale):
         return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(2, 3)) * scale, dim=-1), v)
     """, (3, 3)),
    ("""\
     import torch as th
     def attend(q, k, v):
         kt = k.permute(0, 2, 1)
         w = th.bmm(q, kt)
         p = w.softmax(dim=-1)
         return th.bmm(p, v)
     """, (4, 6)),
    ("""\
     import torch
     def attend(q, k, v):
         sim = torch.einsum("b h i d, b h j d -> b h i j", q, k)
         attn = sim.softmax(dim=-1)
         return torch.einsum("b h i j, b h j d -> b h i d", attn, v)
     """, (3, 5)),
])
def test_attention_spellings(code, span):
    assert lines(code, "NPU954") == [span]


@pytest.mark.parametrize("code", [
    # a classifier's softmax: no q @ k^T before it
    "import torch.nn.functional as F\ndef predict(self, x):\n    return F.softmax(self.head(x), dim=-1)\n",
    # scores without the value product (e.g. returned as similarity)
    "import torch\ndef sim(a, b):\n    return torch.softmax(a @ b.transpose(-2, -1), dim=-1)\n",
    # softmax over a plain projection, then a product
    "import torch\ndef mix(x, w, v):\n    return torch.softmax(x @ w, dim=-1) @ v\n",
    # the written-out path is the fallback of SDPA, which the NPU takes
    "import torch.nn.functional as F\ndef attn(self, q, k, v):\n    if self.flash:\n"
    "        return F.scaled_dot_product_attention(q, k, v)\n"
    "    return F.softmax(q @ k.transpose(-2, -1), dim=-1) @ v\n",
])
def test_attention_near_misses(code):
    assert advice(code, rule="NPU954") == []


def test_sdpa_is_advised_only_for_a_release_without_its_own_kernel():
    code = "import torch.nn.functional as F\ny = F.scaled_dot_product_attention(q, k, v)\n"
    assert advice(code, rule="NPU954") == []  # every release we know implements it
    without = dataclasses.replace(API, native_functions=API.native_functions - {"scaled_dot_product_attention"})
    assert [(f.start_line, f.api) for f in advice(code, without, "NPU954")] == [
        (2, "torch.nn.functional.scaled_dot_product_attention")]


# -- optimizers (performance advice) ------------------------------------------------------------

@pytest.mark.parametrize("code, api_name, fused", [
    ("import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-4)\n", "torch.optim.AdamW", "NpuFusedAdamW"),
    ("from torch.optim import SGD\nopt = SGD(params, lr=0.1, momentum=0.9)\n", "torch.optim.SGD", "NpuFusedSGD"),
    ("import torch.optim as optim\nopt = optim.Adam(params)\n", "torch.optim.Adam", "NpuFusedAdam"),
    ("from torch import optim\nopt = optim.RMSprop(params)\n", "torch.optim.RMSprop", "NpuFusedRMSprop"),
])
def test_optimizers_get_their_fused_counterpart(code, api_name, fused):
    found = advice(code, rule="NPU955")
    assert [(f.start_line, f.report, f.api, f.replacement) for f in found] == [
        (2, Report.PERFORMANCE, api_name, f"torch_npu.optim.{fused}")]
    assert "bfloat16" in found[0].tip


def test_optimizer_keywords_the_fused_class_lacks_are_named():
    code = "import torch\nopt = torch.optim.AdamW(p, lr=1e-3, fused=True, foreach=False, weight_decay=0.1)\n"
    tip = advice(code, rule="NPU955")[0].tip
    assert "takes no fused, foreach" in tip and "weight_decay" not in tip.split("takes no")[1].split(":")[0]


@pytest.mark.parametrize("code", [
    "import torch\nopt = torch.optim.LBFGS(params)\n",  # no fused counterpart
    "class Adam:\n    pass\nopt = Adam(params)\n",  # the project's own class
    "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 30)\n",
])
def test_optimizer_near_misses(code):
    assert advice(code, rule="NPU955") == []


@pytest.mark.parametrize("code", [
    # the CUDA fused optimizer first, torch's where it is missing (as on an NPU machine)
    "try:\n    from apex.optimizers import FusedSGD as SGD\nexcept ImportError:\n"
    "    from torch.optim import SGD\nopt = SGD(params, lr=0.1)\n",
    # torch's first, the project's own fallback for an older torch
    "try:\n    from torch.optim import SGD\nexcept ImportError:\n"
    "    from .compat import SGD\nopt = SGD(params, lr=0.1)\n",
])
def test_a_name_imported_as_several_things_is_advised_on_as_torch_s(code):
    # Either import may be the one that runs; the NPU runs torch's wherever it is (the scan's
    # resolution: a name stands for everything the file's imports bind it to).
    assert [(f.start_line, f.api) for f in advice(code, rule="NPU955")] == [(5, "torch.optim.SGD")]


def test_a_relatively_imported_module_is_no_tensor():
    # `shifts.roll(...)` of a module of the project is not Tensor.roll
    code = ("from . import shifts\ndef window(x):\n    return shifts.roll(x, shifts=(-3, -3), dims=(1, 2))\n")
    assert advice(code, rule="NPU956") == []
    assert advice(code.replace("from . import shifts\n", "shifts = x\n"), rule="NPU956") != []


# -- torch_npu.contrib replacements -------------------------------------------------------------

def test_swin_roll_and_its_near_misses():
    code = """\
    import torch
    def shift(x, s):
        shifted = torch.roll(x, shifts=(-s, -s), dims=(1, 2))
        back = x.roll((s, s), (1, 2))
        other = torch.roll(x, shifts=1, dims=0)
        cols = torch.roll(x, shifts=(s, s), dims=(2, 3))
    """
    assert lines(code, "NPU956") == [(3, 3), (4, 4)]


CONDITION_PUTS = """\
import numpy as np
import torch

def clean(x, labels: np.ndarray, scores):
    x[x < 0] = 0
    mask = (scores > 0.5) & (scores < 0.9)
    scores[~mask] = -1.0
    arr = np.zeros(10)
    arr[arr < 1] = 2
    labels[labels == 0] = 255
    first = labels.copy()
    first[first == 1] = 3
    x[0] = 1
    x[x > 1] = scores
    return x
"""


def test_condition_index_put_on_tensors_only():
    found = advice(CONDITION_PUTS, rule="NPU957")
    assert [(f.start_line, f.api) for f in found] == [(5, "input[condition] = value"), (7, "input[condition] = value")]
    assert found[0].replacement == "torch_npu.contrib.function.npu_fast_condition_index_put"


def test_condition_index_put_needs_torch_in_the_file():
    assert advice("def f(a):\n    a[a < 0] = 0\n", rule="NPU957") == []


def test_user_definitions_and_torchvision_roi_align():
    code = """\
    import torch
    import torchvision
    from torchvision.ops import RoIAlign
    class DropPath(torch.nn.Module):
        pass
    def multiclass_nms(boxes, scores, thr):
        pass
    pool = RoIAlign((7, 7), 1 / 16, 2)
    out = torchvision.ops.roi_align(feat, rois, 7)
    """
    found = advice(code)
    assert [(f.rule, f.start_line, f.api_type, f.api, f.replacement) for f in found] == [
        ("NPU958", 4, "class", "DropPath", "torch_npu.contrib.module.NpuDropPath"),
        ("NPU959", 6, "function", "multiclass_nms", "torch_npu.contrib.function.npu_multiclass_nms"),
        ("NPU960", 8, "torchvision", "torchvision.ops.RoIAlign", "torch_npu.contrib.module.ROIAlign"),
        ("NPU960", 9, "torchvision", "torchvision.ops.roi_align", "torch_npu.contrib.module.ROIAlign"),
    ]
    assert "enable_droppath_ensemble" in found[0].tip and "aligned" in found[2].tip


# -- per-version availability ----------------------------------------------------------------------

EVERYTHING = "\n".join([ROTARY, NANOGPT_ATTENTION.replace("import math", "import math, torch"), CONDITION_PUTS, """
import torch
import torch.nn.functional as F
def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
def glu(x):
    a, b = x.chunk(2, dim=-1)
    return F.silu(a) * b
opt = torch.optim.AdamW(p)
y = torch.roll(x, shifts=(1, 1), dims=(1, 2))
class DropPath(torch.nn.Module):
    pass
"""])


@pytest.mark.parametrize("version", apidata.available_versions())
def test_every_suggestion_exists_in_the_chosen_release(version):
    api = apidata.load(version)
    found = advice(EVERYTHING, api)
    expected = {"NPU951", "NPU952", "NPU953", "NPU954", "NPU955", "NPU956", "NPU957", "NPU958"}
    if version == "1.11.0":  # its yaml has no npu_fusion_attention custom op (NPU954's replacement)
        expected.discard("NPU954")
    assert {f.rule for f in found} >= expected
    assert all(api.has(f.replacement) for f in found)


def test_nothing_is_suggested_that_the_release_lacks():
    lacking = dataclasses.replace(
        API,
        custom_functions=API.custom_functions - {"npu_swiglu", "npu_rms_norm"},
        modules={name: names for name, names in API.modules.items() if name != "torch_npu.optim"},
    )
    rules = {f.rule for f in advice(EVERYTHING, lacking)}
    assert "NPU953" not in rules and "NPU951" not in rules and "NPU955" not in rules
    assert {"NPU952", "NPU954"} <= rules


# -- reports and the pipeline ----------------------------------------------------------------------

def test_model_code_without_cuda_still_gets_advice():
    result = migrate_source(NANOGPT_ATTENTION.encode(), "model.py", Options(api=API))
    assert result.status == Status.UNCHANGED and result.output is None  # read, nothing to migrate
    assert [(f.report, f.start_line) for f in result.findings] == [(Report.AFFINITY, 7)]


@pytest.mark.parametrize("data, status", [
    (b"import torch\nx = torch.softmax(y, -1)\ndef f(:\n", Status.SKIPPED),
    (b"import torch\nx = torch.softmax(y, -1).cuda()\ndef f(:\n", Status.FAILED),
])
def test_unparsable_file_gets_no_advice(data, status):
    result = migrate_source(data, "bad.py", Options(api=API))
    assert result.status == status
    # a failure says why in the run's list of failures; a skipped file that mentions torch gets
    # the row saying that its API calls were not analysed, and no advice either way
    expected = [] if status == Status.FAILED else [(Report.UNKNOWN, 3, "syntax this Python cannot parse")]
    assert [(f.report, f.start_line, f.api) for f in result.findings] == expected


def test_csv_reports(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "model.py").write_text(NANOGPT_ATTENTION, encoding="utf-8")
    (project / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\nmodel = Net().cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nval_loader = DataLoader(val_set, batch_size=8)\n",
        encoding="utf-8")
    target = migrate(project, tmp_path / "out")
    with open(target / "affinity_api_call.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["File", "Start Line", "End Line", "Api Type", "Api Call Name", "Affinity Api Name", "Tips"]
    assert [row[:6] for row in rows[1:]] == [
        ["model.py", "7", "11", "special", "softmax(q @ k^T * scale + mask) @ v", "torch_npu.npu_fusion_attention"]]
    with open(target / "api_performance_advice.csv", newline="", encoding="utf-8") as handle:
        performance = list(csv.reader(handle))
    # the incumbent's five columns, then the row's code
    assert performance[0] == ["File", "Start Line", "End Line", "OP", "Tips", "Rule"]
    assert {(row[0], row[1], row[3], row[5]) for row in performance[1:]} == {
        ("train.py", "4", "torch.optim.SGD", "NPU955"), ("train.py", "5", "torch.utils.data.DataLoader", "NPU201")}
    log = (target / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "model.py line: 7 ~ 11 Operation Type: SUGGESTION" in log


def test_check_ignores_advice(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(NANOGPT_ATTENTION + "import torch\nopt = torch.optim.AdamW(p)\n", encoding="utf-8")
    result = check_paths([model], Options(api=API))
    assert result.findings == [] and result.files == 1


def test_explain_knows_the_advice_codes():
    from helpers import run_cli
    result = run_cli("explain", "NPU951")
    assert result.exit_code == 0 and "torch_npu.npu_rms_norm" in result.output
