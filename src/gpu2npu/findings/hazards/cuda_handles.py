"""Raw CUDA handles (NPU908): a stream's CUDA pointer, a tensor shared between processes by its
CUDA IPC handle."""
from __future__ import annotations

import ast
from typing import Optional, Set

from ...knowledge.tips import REDUCE_TENSOR, cuda_only_package, shares_npu_tensors
from ...records.change import Report
from ...records.finding_kinds import CUDA_HANDLES
from .view import FileView

TRIGGERS = (b"cuda_stream", b"reduce_tensor")

CUDA_STREAM_TIP = ("the raw CUDA stream handle, which CUDA libraries take (cuda-python, CuTe, CUTLASS, cupy): an NPU "
                   "stream has none (its handle, .npu_stream, is for ACL and AscendC code), so the code it is given "
                   "to needs an NPU counterpart (torch operators or torch_npu fused ones)")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view
        self._given_to_cuda_only: Optional[Set[int]] = None  # (found when a handle is first read)

    def on_reference(self, node: ast.AST) -> None:
        if isinstance(node, ast.Attribute) and node.attr == "cuda_stream" and not self._given_to_a_cuda_only_call(node):
            self.view.add(node, CUDA_HANDLES.code, Report.UNSUPPORTED, "Stream.cuda_stream", CUDA_STREAM_TIP)

    def _given_to_a_cuda_only_call(self, node: ast.AST) -> bool:
        """Whether the handle is an argument of a call of a CUDA-only package (cuda-python's
        `cuda.CUstream(stream.cuda_stream)`, cupy's `ExternalStream`): that call's row stands at the
        place and says what replaces both."""
        if self._given_to_cuda_only is None:
            self._given_to_cuda_only = {
                id(argument) for call in self.view.groups.get(ast.Call, ())
                if any(cuda_only_package(name) for name in self.view.qualified(call.func))
                for argument in (*call.args, *(keyword.value for keyword in call.keywords))}
        return id(node) in self._given_to_cuda_only

    def on_call(self, call: ast.Call) -> None:
        api = self.view.api
        if REDUCE_TENSOR in self.view.qualified(call.func) and not shares_npu_tensors(api):
            self.view.add(call.func, CUDA_HANDLES.code, Report.UNSUPPORTED, REDUCE_TENSOR,
                          f"{self.view.release} cannot share NPU tensors between processes (it has "
                          "no torch_npu.multiprocessing.reductions, which later releases install on import): the handle "
                          "of an NPU tensor cannot be made; send the weights through a collective (dist.broadcast, "
                          "vllm-ascend's PyHcclCommunicator) or as CPU tensors, or choose a release that shares them")
