"""The launch-script rules (NPU5xx: shell scripts, Makefiles, YAML job files and the shell
commands of notebooks) and the notebook-magic rules (NPU6xx).

Every rule looks at the original text of one line and the edits of all rules are applied
together, so their order only decides the order of rows on a line.  No two rules match the same
characters: each knows the names the others handle (NPU590 leaves CUDA_VISIBLE_DEVICES to
NPU501).
"""
from __future__ import annotations

from typing import Dict, Tuple, Type

from .backend_option import NcclBackendOption
from .base import LineEdit, LineReport, ScriptExample, ScriptRule
from .cuda_tools import CudaToolsAndSettings
from .device_option import DeviceOption
from .env_magic import EnvMagicVisibleDevices
from .magic_code import CudaInMagics
from .nccl_env import NcclEnvironment
from .nvidia_smi import NvidiaSmiToNpuSmi
from .optimizer_option import BitsandbytesOptimizerOption
from .python_one_liner import PythonOneLiner
from .quantized_loading import QuantizedLoadingOption
from .transformers_attention import TransformersAttentionOption
from .visible_devices import VisibleDevicesVariable

LAUNCH_SCRIPT_RULES: Tuple[Type[ScriptRule], ...] = (
    VisibleDevicesVariable,
    NvidiaSmiToNpuSmi,
    NcclBackendOption,
    NcclEnvironment,
    DeviceOption,
    CudaToolsAndSettings,
    TransformersAttentionOption,
    BitsandbytesOptimizerOption,
    PythonOneLiner,
    QuantizedLoadingOption,
)

NOTEBOOK_MAGIC_RULES: Tuple[Type[ScriptRule], ...] = (EnvMagicVisibleDevices, CudaInMagics)

SCRIPT_RULES_BY_CODE: Dict[str, Type[ScriptRule]] = {
    rule.code: rule for rule in LAUNCH_SCRIPT_RULES + NOTEBOOK_MAGIC_RULES
}

__all__ = [
    "LAUNCH_SCRIPT_RULES",
    "NOTEBOOK_MAGIC_RULES",
    "SCRIPT_RULES_BY_CODE",
    "LineEdit",
    "LineReport",
    "ScriptExample",
    "ScriptRule",
]
