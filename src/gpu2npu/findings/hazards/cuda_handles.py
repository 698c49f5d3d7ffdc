"""Raw CUDA handles (NPU908): a stream's CUDA pointer, a tensor shared between processes by its
CUDA IPC handle."""
from __future__ import annotations

import ast

from ...records.change import Report
from ...records.finding_kinds import CUDA_HANDLES
from .view import FileView

TRIGGERS = (b"cuda_stream", b"reduce_tensor")

CUDA_STREAM_TIP = ("the raw CUDA stream handle, which CUDA libraries take (cuda-python, CuTe, CUTLASS, cupy): an NPU "
                   "stream has none (its handle, .npu_stream, is for ACL and AscendC code), so the code it is given "
                   "to needs an NPU counterpart (torch operators or torch_npu fused ones)")
REDUCE_TENSOR = "torch.multiprocessing.reductions.reduce_tensor"


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_reference(self, node: ast.AST) -> None:
        if isinstance(node, ast.Attribute) and node.attr == "cuda_stream":
            self.view.add(node, CUDA_HANDLES.code, Report.UNSUPPORTED, "Stream.cuda_stream", CUDA_STREAM_TIP)

    def on_call(self, call: ast.Call) -> None:
        api = self.view.api
        if REDUCE_TENSOR in self.view.qualified(call.func) and not api.module_has(
                "torch_npu.multiprocessing.reductions", "rebuild_npu_tensor"):
            self.view.add(call.func, CUDA_HANDLES.code, Report.UNSUPPORTED, REDUCE_TENSOR,
                          f"{self.view.release} cannot share NPU tensors between processes (it has "
                          "no torch_npu.multiprocessing.reductions, which later releases install on import): the handle "
                          "of an NPU tensor cannot be made; send the weights through a collective (dist.broadcast, "
                          "vllm-ascend's PyHcclCommunicator) or as CPU tensors, or choose a release that shares them")
