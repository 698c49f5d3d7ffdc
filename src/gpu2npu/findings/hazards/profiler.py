"""torch's profiler asked for CUDA activity (NPU907): it records nothing of the NPU."""
from __future__ import annotations

import ast

from ...knowledge.tips import PROFILER_CUDA_ACTIVITY
from ...records.change import Report
from ...records.finding_kinds import PROFILER
from .view import FileView

TRIGGERS = (b"ProfilerActivity", b"use_cuda", b"use_device")

PROFILERS = frozenset({"torch.autograd.profiler.profile", "torch.profiler.profile", "torch.autograd.profile",
                       "torch.autograd.profiler.record_function"})


def profiler_tip(view: FileView) -> str:
    if view.api.module_has("torch_npu.profiler", "profile"):
        return ("torch's profiler records no NPU activity: profile with torch_npu.profiler.profile(activities="
                "[torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU], "
                "on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(folder)) (torch_npu "
                f"{view.api.torch_npu_version} has it; its traces open in MindStudio Insight or TensorBoard)")
    return (f"torch's profiler records no NPU activity, and {view.release} has no "
            "torch_npu.profiler: profile the CPU side only, or choose a release that has it")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_reference(self, node: ast.AST) -> None:
        name = next((name for name in sorted(self.view.qualified(node)) if name in PROFILER_CUDA_ACTIVITY), None)
        if name is not None:
            self.view.add(node, PROFILER.code, Report.UNSUPPORTED, name, profiler_tip(self.view))

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func) & PROFILERS
        if not names:
            return
        for keyword in call.keywords:
            cuda = (keyword.arg == "use_cuda" and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)) or (
                keyword.arg == "use_device" and isinstance(keyword.value, ast.Constant) and keyword.value.value == "cuda")
            if cuda:
                self.view.add(keyword.value, PROFILER.code, Report.UNSUPPORTED, f"{sorted(names)[0]}({keyword.arg}=)",
                              profiler_tip(self.view))
