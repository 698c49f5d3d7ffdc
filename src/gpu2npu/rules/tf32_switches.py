"""CUDA's TF32 switches -> the NPU's HF32 switches."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge.tf32 import hf32_switch
from .base import Example, Rule
from .names import build_dotted, qualified_names
from .walk import ParentNodeProvider

# torch 2.9's precision settings for float32 matmuls and convolutions -> the TF32 switch each
# replaces ("tf32": allowed, "ieee": not; "none", inherit the parent's, has no boolean)
FP32_PRECISION = {"torch.backends.cuda.matmul.fp32_precision": "torch.backends.cuda.matmul.allow_tf32",
                  "torch.backends.cudnn.conv.fp32_precision": "torch.backends.cudnn.allow_tf32"}
_PRECISION_VALUES = {"tf32": "True", "ieee": "False"}


class Tf32ToHf32(Rule):
    """`torch.backends.cuda.matmul.allow_tf32` and `torch.backends.cudnn.allow_tf32` choose
    whether CUDA may compute float32 matmuls and convolutions in TF32 (a shorter mantissa, for
    speed).  On the NPU they change nothing; the same choice is HF32, made with
    `torch_npu.npu.matmul.allow_hf32` and `torch_npu.npu.conv.allow_hf32` (off and on by
    default, as TF32's are).  Every reference, set or read, names the NPU switch instead, in the
    torch_npu 2.x releases that have it.  torch 2.9's form, `torch.backends.cuda.matmul.
    fp32_precision = "tf32"` (or `"ieee"`; `torch.backends.cudnn.conv.fp32_precision` for
    convolutions), becomes `torch_npu.npu.matmul.allow_hf32 = True` (or False) where it assigns one
    of those two strings; reads and other values stay.
    """

    code = "NPU108"
    summary = "allow_tf32 switches -> torch_npu.npu.matmul/conv.allow_hf32"
    triggers = ("allow_tf32", "fp32_precision")
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True\n",
            "import torch\nimport torch_npu\ntorch_npu.npu.matmul.allow_hf32 = True\n"
            "torch_npu.npu.conv.allow_hf32 = True\n",
        ),
        Example(
            "import torch\nprint('tf32:', torch.backends.cuda.matmul.allow_tf32)\n",
            "import torch\nimport torch_npu\nprint('tf32:', torch_npu.npu.matmul.allow_hf32)\n",
        ),
        Example(
            "import torch\ntorch.backends.cuda.matmul.fp32_precision = \"tf32\"\n"
            "torch.backends.cudnn.conv.fp32_precision = 'ieee'\n",
            "import torch\nimport torch_npu\ntorch_npu.npu.matmul.allow_hf32 = True\n"
            "torch_npu.npu.conv.allow_hf32 = False\n",
        ),
    )
    unchanged = (
        "import torch\ntorch.backends.cudnn.benchmark = True\n",
        "allow_tf32 = True\nconfig.allow_tf32 = allow_tf32\n",
        "import torch\ntorch.backends.cuda.matmul.fp32_precision = 'none'\nprint(torch.backends.fp32_precision)\n",
    )

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        if original_node.attr.value != "allow_tf32":
            return updated_node
        # The defaults of the two agree (matmuls off, convolutions on), so a program that sets
        # neither behaves as before and one that sets either gets the same choice on the NPU.
        for name in sorted(qualified_names(self, original_node)):
            switch = hf32_switch(self.context.api, name)
            if switch is not None:
                self.record(original_node, f"change {name} to {switch}")
                self.context.needs_torch_npu = True
                return build_dotted(switch).with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if len(original_node.targets) != 1 or not isinstance(original_node.value, cst.SimpleString):
            return updated_node
        target = original_node.targets[0].target
        value = _PRECISION_VALUES.get(original_node.value.evaluated_value)
        if not isinstance(target, cst.Attribute) or target.attr.value != "fp32_precision" or value is None:
            return updated_node
        for name in sorted(qualified_names(self, target)):
            switch = hf32_switch(self.context.api, FP32_PRECISION.get(name))
            if switch is not None:
                self.record(original_node, f"change {name} = {original_node.value.value} to {switch} = {value}")
                self.context.needs_torch_npu = True
                new_target = updated_node.targets[0].with_changes(target=build_dotted(switch))
                return updated_node.with_changes(targets=[new_target], value=cst.Name(value))
        return updated_node
