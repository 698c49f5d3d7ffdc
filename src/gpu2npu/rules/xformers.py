"""xformers -> the generated ascend_xformers package (memory-efficient attention on SDPA)."""
from __future__ import annotations

from ..knowledge.generated_packages import PROVIDED as GENERATED
from .base import Example
from .placement import top_folder_on_sys_path
from .reroute import RerouteToGenerated, comment_line

PACKAGE = "ascend_xformers"
SHORT = "xformers on the NPU"


class XformersToSdpa(RerouteToGenerated):
    """xformers' kernels are CUDA-only; `xformers.ops.memory_efficient_attention` computes what
    `torch.nn.functional.scaled_dot_product_attention` computes, which torch_npu runs on the NPU.
    The imports of `memory_efficient_attention`, `LowerTriangularMask` and
    `LowerTriangularFromBottomRightMask` (`from xformers.ops import ...`, `import xformers.ops as
    xops`, `import xformers.ops`) are pointed at the generated `ascend_xformers` package, written
    at the top of the output when a file uses it: the same arguments and layout ([batch, seqlen,
    heads, head_dim], 3-D and 5-D grouped forms), scale, dropout p, a tensor bias added to the
    scaled scores, the causal masks with their corner alignment.  `SwiGLU` and `swiglu` compute
    xformers' feed-forward w3(silu(w1 x) * (w2 x)) with torch_npu.npu_swiglu, with xformers'
    parameters (packed w12, or w1 and w2; w3).  The calls are unchanged.  A file that uses
    anything else of xformers (`fmha.BlockDiagonalMask` batches, its components) keeps all its
    xformers imports, reported with the NPU way.
    """

    ROOT = "xformers"
    PACKAGE = PACKAGE
    PROVIDED = GENERATED["xformers"]
    FILES = ("__init__.py", "ops.py")
    WHAT = "xformers' attention on torch.nn.functional.scaled_dot_product_attention, SwiGLU on torch_npu.npu_swiglu"
    SHORT = SHORT

    code = "NPU263"
    summary = "xformers memory_efficient_attention, SwiGLU -> generated ascend_xformers (SDPA, npu_swiglu)"
    triggers = ("xformers",)
    examples = (
        Example(
            "import torch\nimport xformers.ops as xops\n\n"
            "def attend(q, k, v):\n    return xops.memory_efficient_attention(q, k, v, attn_bias=xops.LowerTriangularMask())\n",
            "import torch\nimport os\nimport sys\n\n" + comment_line(PACKAGE, SHORT) + "\n"
            + top_folder_on_sys_path("example.py") + "import ascend_xformers.ops as xops\n\n"
            "def attend(q, k, v):\n    return xops.memory_efficient_attention(q, k, v, attn_bias=xops.LowerTriangularMask())\n",
        ),
        Example(
            "import os\nimport sys\nfrom xformers.ops import memory_efficient_attention\n"
            "out = memory_efficient_attention(q, k, v, p=0.1)\n",
            "import os\nimport sys\n\n" + comment_line(PACKAGE, SHORT) + "\n" + top_folder_on_sys_path("example.py")
            + "from ascend_xformers.ops import memory_efficient_attention\nout = memory_efficient_attention(q, k, v, p=0.1)\n",
        ),
    )
    unchanged = (
        "import xformers.ops as xops\nbias = xops.fmha.BlockDiagonalMask.from_seqlens(lengths)\n"
        "out = xops.memory_efficient_attention(q, k, v, attn_bias=bias)\n",
        "from xformers.ops import SwiGLU, fmha\n",
    )
