"""torch's questions about CUDA's autocast -> torch_npu.npu's: `torch.is_autocast_enabled()`,
`torch.get_autocast_gpu_dtype()` and their setters."""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge.autocast_state import CUDA_AUTOCAST_FUNCTIONS, CUDA_AUTOCAST_STATE
from .base import Example, Rule, code_of
from .names import build_dotted, qualified_names
from .walk import ParentNodeProvider


class AutocastStateOnNpu(Rule):
    """`torch.is_autocast_enabled()` and `torch.get_autocast_gpu_dtype()` (and their setters) ask
    about CUDA's autocast, in every torch release ("gpu" is CUDA; the device-neutral forms take a
    device type, `torch.is_autocast_enabled("cuda")`, which is a device string).  After migration
    the program autocasts on the NPU (`torch.autocast("npu")`, torch_npu.npu.amp.autocast), so the
    CUDA questions answer False and float16 whatever the NPU does: a custom autograd function that
    casts its inputs to the autocast dtype when autocast is on computes in float32 instead, or
    mixes dtypes.  torch_npu.npu has the NPU's questions under the same names
    (`get_autocast_dtype`/`set_autocast_dtype` for the "gpu" ones), same arguments.

    The dtype functions handed on uncalled (`dtype = torch.get_autocast_gpu_dtype`, called later)
    are the NPU's too; the others are not, as what they are called with is not seen.
    Left where the call gives a device type (`torch.is_autocast_enabled("cuda")`,
    `torch.set_autocast_enabled("cuda", True)`: the device string is renamed) and where the
    release's torch_npu lacks the NPU form.
    """

    code = "NPU118"
    summary = "torch.is_autocast_enabled() / torch.get_autocast_gpu_dtype() (CUDA's) -> torch_npu.npu's"
    triggers = CUDA_AUTOCAST_FUNCTIONS
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "import torch\n\ndef forward(ctx, x):\n    if torch.is_autocast_enabled():\n"
            "        x = x.to(torch.get_autocast_gpu_dtype())\n    return x\n",
            "import torch\nimport torch_npu\n\ndef forward(ctx, x):\n    if torch_npu.npu.is_autocast_enabled():\n"
            "        x = x.to(torch_npu.npu.get_autocast_dtype())\n    return x\n",
        ),
        Example(
            "import torch\nenabled, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype\n",
            "import torch\nimport torch_npu\nenabled, dtype = torch_npu.npu.is_autocast_enabled(), torch_npu.npu.get_autocast_dtype\n",
        ),
        Example(
            "import torch\nfrom torch import set_autocast_gpu_dtype\nset_autocast_gpu_dtype(torch.bfloat16)\n",
            "import torch\nimport torch_npu\nfrom torch import set_autocast_gpu_dtype\n"
            "torch_npu.npu.set_autocast_dtype(torch.bfloat16)\n",
        ),
    )
    unchanged = (
        "import torch\nok = torch.is_autocast_enabled('cpu')\n",
        "import torch\nok = torch.is_autocast_cpu_enabled()\n",
        "import torch\ntorch.set_autocast_enabled('cuda', True)\n",
        "def check(torch):\n    return torch.is_autocast_enabled()\n",
        # (what a question handed on is called with is not seen: maybe a device type)
        "import torch\nask = torch.is_autocast_enabled\n",
    )

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        return self._handed_on(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name):
        return self._handed_on(original_node, updated_node)

    def _handed_on(self, original_node, updated_node):
        """A dtype function referred to without being called here (`dtype = torch.get_autocast_gpu_dtype`)."""
        parent = self.get_metadata(ParentNodeProvider, original_node, None)
        if (isinstance(parent, cst.Call) and parent.func is original_node) or (
                isinstance(parent, cst.Attribute) and parent.value is original_node) or isinstance(
                parent, (cst.ImportAlias, cst.ImportFrom, cst.Import)):
            return updated_node
        name = next((name for name in qualified_names(self, original_node) if name in CUDA_AUTOCAST_STATE), None)
        if name is None or CUDA_AUTOCAST_STATE[name][1] is not None:
            return updated_node
        npu = self._npu_form(original_node, original_node, name, "it answers for CUDA's autocast")
        return npu if npu is not None else updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        name = next((name for name in qualified_names(self, original_node.func) if name in CUDA_AUTOCAST_STATE), None)
        if name is None:
            return updated_node
        arguments = CUDA_AUTOCAST_STATE[name][1]
        if arguments is not None and (len(original_node.args) != arguments
                                      or any(arg.keyword is not None or arg.star for arg in original_node.args)):
            return updated_node  # (a device type given: the device-neutral form)
        npu = self._npu_form(original_node, original_node.func, name, "it asks about CUDA's autocast")
        return updated_node.with_changes(func=npu) if npu is not None else updated_node

    def _npu_form(self, original_node: cst.CSTNode, spelled: cst.CSTNode, name: str,
                  why: str) -> Optional[cst.BaseExpression]:
        """torch_npu.npu's function for torch's `name` (spelled so, recorded at `original_node`), or
        None where the release lacks it."""
        npu_name = CUDA_AUTOCAST_STATE[name][0]
        if not self.context.api.npu_has([npu_name]):
            return None
        self.record(original_node, f"change {code_of(spelled)} to torch_npu.npu.{npu_name}: {why}, the program's "
                                   "is the NPU's")
        self.context.needs_torch_npu = True
        return build_dotted(f"torch_npu.npu.{npu_name}")
