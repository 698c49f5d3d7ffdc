"""``torch_npu.profiler`` stand-in: torch_npu's profiler API over torch's own CPU profiler.

torch_npu documents ``torch_npu.profiler.profile`` as torch.profiler's with NPU activity added
(the same ``schedule``, ``on_trace_ready``, ``record_shapes``, ``profile_memory``, ``with_stack``,
``step()``, ``export_chrome_trace``) plus ``experimental_config`` (profiler level, AI Core
metrics, export type), which has no CPU meaning and is accepted as given.  On the CPU the NPU
activity is the CPU's: a program that profiles with it runs and writes a trace of its CPU ops.
"""

import enum as _enum

import torch as _torch

from . import _names


class ProfilerActivity(_enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


class ProfilerLevel:
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"


class ExportType:
    Text = "text"
    Db = "db"


class HostSystem:
    CPU = "cpu"
    MEM = "mem"
    DISK = "disk"
    NETWORK = "network"
    OSRT = "osrt"


ProfilerAction = _torch.profiler.ProfilerAction


class _ExperimentalConfig:
    """Accepted as given: what it selects (NPU profiler level, AI Core metrics, L2 cache, export
    type) has no CPU counterpart."""

    def __init__(self, **settings):
        self.settings = dict(settings)


def _torch_activities(activities):
    if activities is None:
        return None
    # the NPU's activity is recorded as the CPU's on the CPU (the run's only device)
    return sorted({_torch.profiler.ProfilerActivity.CPU for _ in activities} or
                  {_torch.profiler.ProfilerActivity.CPU}, key=str)


class profile(_torch.profiler.profile):
    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, use_cuda=None):
        self.experimental_config = experimental_config
        super().__init__(activities=_torch_activities(activities), schedule=schedule, on_trace_ready=on_trace_ready,
                         record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)


def schedule(wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
    return _torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)


def tensorboard_trace_handler(dir_name=None, worker_name=None, analyse_flag=True, async_mode=False):
    """torch's handler: a Chrome trace per step in `dir_name` (torch_npu writes its own layout there,
    which MindStudio Insight reads; `analyse_flag` and `async_mode` steer that analysis)."""
    return _torch.profiler.tensorboard_trace_handler(dir_name or "./", worker_name)


def supported_activities():
    return [ProfilerActivity.CPU, ProfilerActivity.NPU]


def supported_profiler_level():
    return {ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2, ProfilerLevel.Level_none}


def supported_ai_core_metrics():
    return {value for name, value in vars(AiCMetrics).items() if not name.startswith("_")}


def supported_export_type():
    return {ExportType.Text, ExportType.Db}


_names.apply_filter(__name__, globals())
