"""flash-attn -> the generated ascend_flash_attn package (flash-attn's API on npu_fusion_attention)."""
from __future__ import annotations

from typing import Dict, FrozenSet, List

import libcst as cst

from ..knowledge.generated_packages import PROVIDED as GENERATED
from ..knowledge.tips import FLASH_ATTN_FUNCTIONS
from .base import Example
from .names import qualified_names
from .placement import top_folder_on_sys_path
from .reroute import RerouteToGenerated, comment_line

PACKAGE = "ascend_flash_attn"
SHORT = "flash-attn on the NPU"
COMMENT = comment_line(PACKAGE, SHORT)

_FUNCTIONS = FLASH_ATTN_FUNCTIONS
# flash-attn's modules the package mirrors -> the names each one provides.
PROVIDED: Dict[str, FrozenSet[str]] = GENERATED["flash_attn"]
# Arguments the NPU operator has no counterpart for: the values that mean "not used", and what
# to do instead.
REFUSED = {
    "softcap": ((0, 0.0), "softcap: cap the scores with softcap * tanh(scores / softcap) in plain attention"),
    "alibi_slopes": ((None,), "alibi_slopes: build the ALiBi bias and pass it as pse to torch_npu.npu_fusion_attention"),
    "return_attn_probs": ((False,), "return_attn_probs: compute softmax(q @ k^T * scale) yourself where the "
                                    "probabilities are needed"),
    "block_table": ((None,), "block_table: a paged KV cache is decoding; use torch_npu.npu_incre_flash_attention"),
}


def refused_arguments(call: cst.Call) -> List[str]:
    """The arguments of a flash-attn call that the NPU operator cannot honour (the package
    raises NotImplementedError for them), as written."""
    found = []
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value not in REFUSED:
            continue
        value = arg.value
        if isinstance(value, cst.Name) and value.value in ("None", "False"):
            constant = None if value.value == "None" else False
        elif isinstance(value, (cst.Integer, cst.Float)):
            constant = value.evaluated_value
        else:
            constant = "unknown"
        if constant not in REFUSED[arg.keyword.value][0]:
            found.append(f"{arg.keyword.value}={cst.Module(body=()).code_for_node(value)}")
    return found


class FlashAttnToNpu(RerouteToGenerated):
    """flash-attn's kernels are CUDA-only; its attention functions have an NPU counterpart,
    `torch_npu.npu_fusion_attention`.  The imports of flash-attn's attention functions
    (`flash_attn_func`, `flash_attn_varlen_func`, the packed forms, the 1.x `unpadded` names) and
    of its `bert_padding` helpers are pointed at the generated `ascend_flash_attn` package,
    written at the top of the output when a file uses it, which implements the same signatures on
    npu_fusion_attention for the chosen release: layout BSND (TND with cumulative sequence ends for
    varlen), the scale (1/sqrt(head_dim) by default), keep_prob = 1 - dropout_p, causal as the
    bottom-right aligned causal sparse mode, window_size as a band mask, fewer key/value heads
    (GQA).  The calls themselves are unchanged.  What the operator cannot do (softcap, ALiBi
    slopes, return_attn_probs, a paged KV cache, a window with varlen) raises NotImplementedError
    at the call, and calls passing those are listed in unsupported_api.csv.  An import naming
    anything else of flash-attn (`flash_attn_with_kvcache`, its layers and losses) is left as
    written and reported, and so are the file's other flash-attn imports (it needs flash-attn
    anyway).  `a, b, c, d = unpad_input(...)` (flash-attn before 2.6 returned four
    values; the package returns five, as 2.6 and later) becomes `unpad_input(...)[:4]`.  The file
    gets a line that puts the output's top folder on sys.path before its first such import.
    In such a file, `importlib.util.find_spec("flash_attn")` (None on an NPU machine, which would
    keep the migrated code from running) asks for `ascend_flash_attn`, unless the file also names
    flash_attn in another string (`import_module("flash_attn")` would then run where it fails).
    """

    ROOT = "flash_attn"
    PACKAGE = PACKAGE
    PROVIDED = PROVIDED
    REEXPORTED = {"flash_attn.modules.mha": "flash_attn"}
    FILES = ("__init__.py", "flash_attn_interface.py", "bert_padding.py")
    WHAT = "flash-attn's functions on torch_npu.npu_fusion_attention"
    SHORT = SHORT

    code = "NPU261"
    summary = "flash-attn attention functions -> generated ascend_flash_attn on torch_npu.npu_fusion_attention"
    triggers = ("flash_attn",)
    examples = (
        Example(
            "import torch\nfrom flash_attn import flash_attn_func\n\n"
            "def attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
            "import torch\nimport os\nimport sys\n\n" + COMMENT + "\n" + top_folder_on_sys_path("example.py")
            + "from ascend_flash_attn import flash_attn_func\n\n"
            "def attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
        ),
        Example(
            "import os\nimport sys\ntry:\n"
            "    from flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func\n"
            "    from flash_attn.bert_padding import pad_input, unpad_input\nexcept ImportError:\n"
            "    flash_attn_varlen_qkvpacked_func = None\n\n"
            "def forward(x, mask):\n    x_unpad, indices, cu_seqlens, max_s = unpad_input(x, mask)\n"
            "    return pad_input(x_unpad, indices, x.shape[0], x.shape[1])\n",
            "import os\nimport sys\n\n" + COMMENT + "\n" + top_folder_on_sys_path("example.py") + "try:\n"
            "    from ascend_flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func\n"
            "    from ascend_flash_attn.bert_padding import pad_input, unpad_input\nexcept ImportError:\n"
            "    flash_attn_varlen_qkvpacked_func = None\n\n"
            "def forward(x, mask):\n    x_unpad, indices, cu_seqlens, max_s = unpad_input(x, mask)[:4]\n"
            "    return pad_input(x_unpad, indices, x.shape[0], x.shape[1])\n",
        ),
        Example(
            "import flash_attn\nfrom packaging import version\n"
            "NEW = version.parse(flash_attn.__version__) >= version.parse('2.1')\n"
            "out = flash_attn.flash_attn_func(q, k, v)\n",
            "import os\nimport sys\n\n" + COMMENT + "\n" + top_folder_on_sys_path("example.py")
            + "import ascend_flash_attn as flash_attn\nfrom packaging import version\n"
            "NEW = version.parse(flash_attn.__version__) >= version.parse('2.1')\n"
            "out = flash_attn.flash_attn_func(q, k, v)\n",
        ),
        Example(
            "import importlib.util\nimport torch\n\nHAS_FLASH = importlib.util.find_spec(\"flash_attn\") is not None\n"
            "if HAS_FLASH:\n    from flash_attn import flash_attn_func\n",
            "import importlib.util\nimport torch\nimport os\nimport sys\n\n" + COMMENT + "\n"
            + top_folder_on_sys_path("example.py")
            + "\nHAS_FLASH = importlib.util.find_spec(\"ascend_flash_attn\") is not None\n"
            "if HAS_FLASH:\n    from ascend_flash_attn import flash_attn_func\n",
        ),
    )
    unchanged = (
        # the probe of a file without imports to point at the package (reported)
        "import importlib.util\nHAS = importlib.util.find_spec('flash_attn') is not None\n",
        # a name the package does not provide: the whole statement stays, and is reported
        "from flash_attn import flash_attn_func, flash_attn_with_kvcache\n",
        # ... and the file's other flash-attn imports with it
        "from flash_attn.bert_padding import pad_input\nfrom flash_attn.cute import flash_attn_func\n",
        "import flash_attn\nfrom flash_attn.layers.rotary import apply_rotary_emb\nx = flash_attn.ops.rms_norm\n",
        "from flash_attn.losses.cross_entropy import CrossEntropyLoss\n",
    )

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        # flash-attn < 2.6 returned four values from unpad_input; the package returns five.
        target = original_node.targets[0].target if len(original_node.targets) == 1 else None
        call = original_node.value
        if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 4 and isinstance(call, cst.Call)
                and "flash_attn.bert_padding.unpad_input" in self.plan.names
                and "flash_attn.bert_padding.unpad_input" in qualified_names(self, call.func)):
            return updated_node
        self.record(call, "take the first four values of unpad_input (ascend_flash_attn returns five, "
                    "as flash-attn 2.6 and later)")
        sliced = cst.Subscript(value=updated_node.value, slice=[cst.SubscriptElement(
            slice=cst.Slice(lower=None, upper=cst.Integer("4")))])
        return updated_node.with_changes(value=sliced)
