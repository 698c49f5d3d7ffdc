"""Kernels compiled for NVIDIA GPUs (NPU909): a function a kernel language compiles (`@triton.jit`,
`@cute.kernel`, `@ct.kernel`: one row at its name) and Hub kernels fetched with
`kernels.get_kernel`."""
from __future__ import annotations

import ast
from typing import Tuple

from ..change import Report
from ..finding_kinds import GPU_KERNELS
from ..tips import KERNEL_DECORATORS, kernel_language, kernel_tip
from .view import FileView


def _spellings(module: str) -> Tuple[bytes, ...]:
    """Words any file that imports `module` holds: `a` for a module `a`; for `a.b...`, `a.b` or
    `a import b` (`import a.b`, `from a.b import c`, `from a import b`)."""
    parts = module.split(".")
    if len(parts) == 1:
        return (module.encode(),)
    return (f"{parts[0]}.{parts[1]}".encode(), f"{parts[0]} import {parts[1]}".encode())


TRIGGERS = (b"get_kernel", *dict.fromkeys(word for decorator in KERNEL_DECORATORS
                                          for word in _spellings(decorator.rsplit(".", 1)[0])))


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        if any(name.endswith(".get_kernel") and name.split(".")[0] == "kernels" for name in self.view.qualified(call.func)):
            repo = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            self.view.add(call.func, GPU_KERNELS.code, Report.UNSUPPORTED,
                          f"kernels.get_kernel({repo!r})" if repo else "kernels.get_kernel",
                          "Hub kernels are compiled for CUDA: for attention use torch_npu.npu_fusion_attention (or "
                          "SDPA), for norms and activations torch_npu.npu_rms_norm / npu_swiglu, otherwise the torch "
                          "operators")

    def on_function(self, function: ast.AST) -> None:
        for decorator in function.decorator_list:  # type: ignore[attr-defined]
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            language = kernel_language(self.view.qualified(target))
            if language is not None:
                self.view.add(function, GPU_KERNELS.code, Report.UNSUPPORTED, f"{language} kernel {function.name}",  # type: ignore[attr-defined]
                              kernel_tip(function.name, language))  # type: ignore[attr-defined]
                return
