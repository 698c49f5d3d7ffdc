"""Ray asked for GPUs (NPU911): an Ascend node has none; Ray schedules NPUs as a resource."""
from __future__ import annotations

import ast

from ...records.change import Report
from ...records.finding_kinds import RAY_GPUS
from .view import FileView

TRIGGERS = (b"get_gpu_ids", b"use_gpu")

RAY_SCALING_CONFIGS = frozenset({"ray.train.ScalingConfig", "ray.air.ScalingConfig", "ray.air.config.ScalingConfig"})


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func)
        if "ray.get_gpu_ids" in names:
            self.view.add(call.func, RAY_GPUS.code, Report.UNSUPPORTED, "ray.get_gpu_ids",
                          "the GPU ids Ray gave the task: none on an Ascend node; the NPU ids are "
                          "ray.get_runtime_context().get_accelerator_ids()['NPU'] (ids as strings; a "
                          "CUDA_VISIBLE_DEVICES set from them becomes ASCEND_RT_VISIBLE_DEVICES)")
        elif names & RAY_SCALING_CONFIGS and any(
                k.arg == "use_gpu" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords):
            self.view.add(call.func, RAY_GPUS.code, Report.UNSUPPORTED, "ScalingConfig(use_gpu=...)",
                          "use_gpu reserves a GPU per worker and sets the workers up for CUDA: on an Ascend node ask "
                          "for resources_per_worker={'NPU': 1} instead (use_gpu=False) and train with "
                          "TorchConfig(backend='hccl')")
