"""torch.random.fork_rng forks CUDA's generators unless told another device type -> device_type="npu"."""
from __future__ import annotations

import libcst as cst

from .base import Example, Rule, code_of
from .loaders import append_keyword, keyword_value
from .names import qualified_names

FORK_RNG = frozenset({"torch.random.fork_rng"})
# fork_rng's parameters in order: (devices, enabled, _caller, _devices_kw, device_type)
_DEVICE_TYPE_POSITION = 4
# The torch release whose fork_rng first takes device_type (before it, CUDA's generators only).
DEVICE_TYPE_SINCE = (2, 1)


class ForkRngOnNpu(Rule):
    """`torch.random.fork_rng(devices=...)` saves and restores the generators of the devices it is
    given, of the device type it is told, "cuda" by default in the torch releases torch_npu pairs
    with.  On the NPU that default forks nothing (no CUDA device: the NPU's random numbers drawn
    inside the block are not restored after it), or raises where the devices given are NPUs (a
    device test that chose them now says "npu": `torch.cuda.get_rng_state(npu:0)`).  The call gets
    `device_type="npu"`: the NPU's generators, as the GPU's were.

    Left where the call names its device type, passes `**kwargs` (which may), forks no device
    (`devices=[]`) or is switched off (`enabled=False`); torch releases before 2.1 have no
    device_type.
    """

    code = "NPU117"
    summary = 'torch.random.fork_rng(devices=...) -> fork_rng(devices=..., device_type="npu")'
    triggers = ("fork_rng",)
    examples = (
        Example(
            "import torch\ndevices = [device] if device.type == 'cuda' else []\n"
            "with torch.random.fork_rng(devices=devices):\n    torch.manual_seed(seed)\n",
            "import torch\nimport torch_npu\ndevices = [device] if device.type == 'npu' else []\n"
            "with torch.random.fork_rng(devices=devices, device_type=\"npu\"):\n    torch.manual_seed(seed)\n",
        ),
        Example(
            "import torch\nfrom torch.random import fork_rng\nwith fork_rng():\n    noise = torch.randn(4, device='cuda')\n",
            "import torch\nimport torch_npu\nfrom torch.random import fork_rng\nwith fork_rng(device_type=\"npu\"):\n"
            "    noise = torch.randn(4, device='npu')\n",
        ),
    )
    unchanged = (
        "import torch\nwith torch.random.fork_rng(devices=[device], device_type=device.type):\n    pass\n",
        "import torch\nwith torch.random.fork_rng(devices=[]):\n    pass\n",
        "import torch\nwith torch.random.fork_rng(**fork_kwargs):\n    pass\n",
        "import torch\nwith torch.random.fork_rng(enabled=False):\n    pass\n",
    )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if self.context.api.version_tuple[:2] < DEVICE_TYPE_SINCE:
            return updated_node
        if not qualified_names(self, original_node.func) & FORK_RNG or not _forks_by_default_type(original_node):
            return updated_node
        self.record(original_node, f'add device_type="npu" to {code_of(original_node.func)}: it forks CUDA\'s '
                                   "generators by default")
        self.context.needs_torch_npu = True  # (torch.npu, which fork_rng looks up, is torch_npu's)
        return updated_node.with_changes(args=append_keyword(list(updated_node.args), "device_type",
                                                             cst.SimpleString('"npu"')))


def _forks_by_default_type(call: cst.Call) -> bool:
    """Whether the call forks some device's generators of fork_rng's default device type."""
    if any(arg.star for arg in call.args) or keyword_value(call, "device_type") is not None:
        return False
    positional = [arg.value for arg in call.args if arg.keyword is None]
    if len(positional) > _DEVICE_TYPE_POSITION:
        return False
    devices = positional[0] if positional else keyword_value(call, "devices")
    enabled = positional[1] if len(positional) > 1 else keyword_value(call, "enabled")
    if isinstance(devices, (cst.List, cst.Tuple)) and not devices.elements:
        return False
    return not (isinstance(enabled, cst.Name) and enabled.value == "False")
