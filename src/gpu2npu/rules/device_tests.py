"""Device tests `x.device.type == "cuda"` -> "npu": a kind of NPU103's edit."""
from __future__ import annotations

import libcst as cst

from .base import Example, Rule
from .names import argument_of_method
from .walk import ParentNodeProvider

# Calls whose string argument is tested against a device name.
_TESTING_METHODS = frozenset({"startswith", "endswith"})


class DeviceTypeTests(Rule):
    """A device string that code tests a device against (`x.device.type == "cuda"`,
    `"cuda" in str(device)`, `device_type in ("cuda", "xpu")`, `device.startswith("cuda")`,
    a `case "cuda":`) names the NPU, so that the test asks about the device the code now runs on.

    A kind of NPU103's edit (CudaDeviceStrings finds every device string in one walk), with a
    code of its own because it is reviewed differently: a test decides which branch runs, and
    after the edit the branch that was written for CUDA runs on the NPU.  Read that branch:
    what it turns on must exist there (a fused optimizer the release lacks, `pin_memory`,
    float16 where the model trains in bfloat16); choosing a device (NPU103) only moves the work.
    """

    code = "NPU116"
    recorded_by = "NPU103"
    summary = 'device tests x.device.type == "cuda", "cuda" in device -> "npu" (the CUDA branch runs on the NPU)'
    examples = (
        Example(
            "import torch\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n"
            "use_fused = fused_available and device_type == 'cuda'\n",
            "import torch\nimport torch_npu\ndevice_type = 'npu' if 'npu' in device else 'cpu'\n"
            "use_fused = fused_available and device_type == 'npu'\n",
        ),
        Example(
            "import torch\nif x.device.type in ('cuda', 'xpu'):\n    torch.cuda.synchronize()\n",
            "import torch\nimport torch_npu\nif x.device.type in ('npu', 'xpu'):\n    torch_npu.npu.synchronize()\n",
        ),
    )
    unchanged = (
        'import torch\ndevice = torch.device("cuda")\n',
        'import torch\nif "cuda" in state:\n    restore(state["cuda"])\n',
    )


def is_device_test(rule: Rule, node: cst.CSTNode) -> bool:
    """Whether the string `node` is what a device is tested against.  `rule` declares
    ParentNodeProvider."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Set)):  # ("cuda", "xpu")
        parent = rule.get_metadata(ParentNodeProvider, parent, None)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.MatchValue)):
        return True
    return argument_of_method(rule, parent, _TESTING_METHODS)
