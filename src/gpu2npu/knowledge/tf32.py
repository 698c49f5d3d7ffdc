"""CUDA's TF32 switches and the NPU's HF32 switches that do the same, by release."""
from __future__ import annotations

from typing import Optional

from .apidata import ApiData

# CUDA's TF32 switches and the HF32 switch that does the same on the NPU (matmul off, conv on by
# default, as TF32's): the advice (TF32_ADVICE) names it, NPU108 (rules/tf32_switches.py) writes it.
TF32_SWITCHES = {
    "torch.backends.cuda.matmul.allow_tf32": ("torch_npu.npu.matmul.allow_hf32", "matmuls", "False"),
    "torch.backends.cudnn.allow_tf32": ("torch_npu.npu.conv.allow_hf32", "convolutions", "True"),
}


def hf32_switch(api: ApiData, tf32_switch: Optional[str]) -> Optional[str]:
    """The NPU's HF32 switch for one of CUDA's TF32 switches, when `api`'s release has it (the
    HF32 switches came with the torch_npu 2.x releases); else None."""
    if tf32_switch not in TF32_SWITCHES or int(api.torch_version.split(".")[0]) < 2:
        return None
    switch = TF32_SWITCHES[tf32_switch][0]
    return switch if api.has(switch.rsplit(".", 1)[0]) else None
