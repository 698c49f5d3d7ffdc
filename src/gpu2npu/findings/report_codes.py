"""Codes of report rows that no rewrite rule makes: the kinds of what the migration cannot change
(NPU901-NPU928, declared in finding_kinds: unsupported_api.csv / unknown_api.csv, and `check`
errors) and the advice codes NPU951-NPU962 (affinity_api_call.csv, api_performance_advice.csv).
`gpu2npu rules` lists them beside the rules and `gpu2npu explain CODE` prints them with their
examples; tests run every example and check that it produces its row."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

from .affinity import ADVICE
from ..records.finding_kinds import KINDS


@dataclass(frozen=True)
class ReportCode:
    code: str
    kind: str  # "report" (a human must act) or "advice" (a faster NPU API; nothing is wrong)
    summary: str
    description: str
    # (source, the OP / Api Call Name of the row it produces, the report file)
    examples: Tuple[Tuple[str, str, str], ...]
    unchanged: Tuple[str, ...] = ()  # sources that produce no row of this code
    level: str = ""  # what `check` makes of its rows (finding_kinds.ERROR, NOT_CHECKED); advice: nothing
    name: str = "Advice"
    example_apis: Tuple[Tuple[str, str], ...] = ()  # -api rows the examples are read with
    example_pins: Tuple[Tuple[str, str], ...] = ()  # what the project pins where they stand (library, requirement)


_ADVICE_FILES = "affinity_api_call.csv"
_PERFORMANCE = "api_performance_advice.csv"

_EXAMPLES: Dict[str, Tuple[Tuple[str, str, str], ...]] = {
    "NPU951": (("import torch\n\n\ndef rms_norm(x, weight, eps=1e-6):\n"
                "    variance = x.pow(2).mean(-1, keepdim=True)\n"
                "    return weight * (x * torch.rsqrt(variance + eps))\n",
                "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight", _ADVICE_FILES),),
    "NPU952": (("import torch\n\n\ndef rotate_half(x):\n    x1, x2 = x.chunk(2, dim=-1)\n"
                "    return torch.cat((-x2, x1), dim=-1)\n\n\ndef apply_rotary(q, cos, sin):\n"
                "    return q * cos + rotate_half(q) * sin\n", "x * cos + rotate_half(x) * sin", _ADVICE_FILES),),
    "NPU953": (("import torch.nn.functional as F\n\n\ndef mlp(x, w_gate, w_up):\n"
                "    return F.silu(w_gate(x)) * w_up(x)\n", "silu(gate) * up", _ADVICE_FILES),),
    "NPU954": (("import math\nimport torch\n\n\ndef attention(q, k, v):\n"
                "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                "    return torch.softmax(scores, dim=-1) @ v\n", "softmax(q @ k^T * scale + mask) @ v", _ADVICE_FILES),),
    "NPU955": (("import torch\n\nopt = torch.optim.AdamW(model.parameters(), lr=1e-4)\n", "torch.optim.AdamW",
                _PERFORMANCE),),
    "NPU956": (("import torch\n\nshifted = torch.roll(x, shifts=(-3, -3), dims=(1, 2))\n", "torch.roll", _ADVICE_FILES),),
    "NPU957": (("import torch\n\n\ndef clip(x: torch.Tensor):\n    x[x < 0] = 0.0\n    return x\n",
                "input[condition] = value", _ADVICE_FILES),),
    "NPU958": (("import torch.nn as nn\n\n\nclass DropPath(nn.Module):\n    def __init__(self, p=0.1):\n"
                "        super().__init__()\n        self.p = p\n\n    def forward(self, x):\n        return x\n\n\n"
                "block = DropPath(0.1)\n", "DropPath", _ADVICE_FILES),),
    "NPU959": (("import torch\n\n\ndef multiclass_nms(boxes, scores, score_thr, nms_cfg, max_num=-1):\n"
                "    return boxes\n", "multiclass_nms", _ADVICE_FILES),),
    "NPU960": (("from torchvision.ops import RoIAlign\n\npool = RoIAlign((7, 7), spatial_scale=1 / 16, sampling_ratio=2)\n",
                "torchvision.ops.RoIAlign", _ADVICE_FILES),),
    "NPU961": (("import torch\n\nnorm = torch.nn.RMSNorm(512, eps=1e-6)\n", "torch.nn.RMSNorm", _ADVICE_FILES),),
    # (a migration rewrites these switches itself, NPU108, and then shows no such row)
    "NPU962": (("import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
                "torch.backends.cuda.matmul.allow_tf32", _PERFORMANCE),),
}

REPORT_CODES: Dict[str, ReportCode] = {
    code: ReportCode(code, "report", kind.title, kind.description, kind.examples, kind.unchanged, kind.level, kind.name,
                     kind.example_apis, kind.example_pins)
    for code, kind in KINDS.items()}
for _code, _summary in ADVICE.items():
    REPORT_CODES[_code] = ReportCode(
        _code, "advice", _summary,
        f"Advice, never an edit: {_summary}.  The row names the code found and the torch_npu API that computes "
        "the same on the NPU faster, with what to check before replacing it (argument layout, dtypes, the "
        "release that has it).  The original code runs on the NPU as it is.",
        _EXAMPLES.get(_code, ()))
