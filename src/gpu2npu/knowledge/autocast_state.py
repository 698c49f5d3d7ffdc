"""torch's functions that ask about or set CUDA's autocast (no device type given: "gpu" is CUDA)
and torch_npu.npu's that do the same for the NPU, same arguments: NPU118 (rules/autocast_state.py)
writes them, the scan's words (reading/scan/words.py) send a file holding one to the rules."""
from __future__ import annotations

# torch's function -> torch_npu.npu's, and how many arguments the CUDA form takes (None: any;
# `torch.is_autocast_enabled("cuda")`, `torch.set_autocast_enabled("cuda", True)` are the
# device-neutral forms)
CUDA_AUTOCAST_STATE = {
    "torch.is_autocast_enabled": ("is_autocast_enabled", 0),
    "torch.set_autocast_enabled": ("set_autocast_enabled", 1),
    "torch.get_autocast_gpu_dtype": ("get_autocast_dtype", None),
    "torch.set_autocast_gpu_dtype": ("set_autocast_dtype", None),
}

# the functions' own names, as a file spells them (`from torch import is_autocast_enabled`)
CUDA_AUTOCAST_FUNCTIONS = tuple(name.rsplit(".", 1)[-1] for name in CUDA_AUTOCAST_STATE)
