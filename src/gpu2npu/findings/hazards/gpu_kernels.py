"""Kernels compiled for NVIDIA GPUs (NPU909): a function a kernel language compiles (`@triton.jit`,
`@cute.kernel`, `@ct.kernel`: one row at its name) and Hub kernels fetched with
`kernels.get_kernel`."""
from __future__ import annotations

import ast
from typing import Tuple

from ...records.change import Report
from ...records.finding_kinds import GPU_KERNELS
from ...knowledge.tips import KERNEL_DECORATORS, kernel_language, kernel_tip
from .view import FileView


def _spellings(module: str) -> Tuple[bytes, ...]:
    """Words any file that imports `module` holds: `a` for a module `a`; for `a.b...`, `a.b` or
    `a import b` (`import a.b`, `from a.b import c`, `from a import b`)."""
    parts = module.split(".")
    if len(parts) == 1:
        return (module.encode(),)
    return (f"{parts[0]}.{parts[1]}".encode(), f"{parts[0]} import {parts[1]}".encode())


# The Hub's kernels (the `kernels` package, and transformers' front doors to it, under the names of
# its releases: load_and_register_kernel before it became load_and_register_attn_kernel; the two that
# transformers.integrations re-exports): compiled for CUDA.
HUB_KERNEL_CALLS = {"kernels": ("get_kernel", "get_local_kernel", "kernelize"),
                    "transformers.integrations.hub_kernels": ("get_kernel", "load_and_register_attn_kernel",
                                                              "load_and_register_kernel", "lazy_load_kernel",
                                                              "kernelize"),
                    "transformers.integrations": ("lazy_load_kernel", "kernelize")}
HUB_KERNEL_TIP = ("Hub kernels are compiled for CUDA: for attention use torch_npu.npu_fusion_attention (or SDPA), for "
                  "norms and activations torch_npu.npu_rms_norm / npu_swiglu, otherwise the torch operators")

TRIGGERS = (*dict.fromkeys(function.encode() for functions in HUB_KERNEL_CALLS.values() for function in functions),
            b"kernels-community", b"use_kernels",
            *dict.fromkeys(word for decorator in KERNEL_DECORATORS for word in _spellings(decorator.rsplit(".", 1)[0])))


def _hub_kernel_call(names) -> bool:
    return any(name.rsplit(".", 1)[0] == module and name.rsplit(".", 1)[-1] in functions
               for name in names for module, functions in HUB_KERNEL_CALLS.items())


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func)
        if _hub_kernel_call(names):
            function = sorted(names)[0].rsplit(".", 1)[-1]
            repo = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            label = "kernels.get_kernel" if function == "get_kernel" else function
            self.view.add(call.func, GPU_KERNELS.code, Report.UNSUPPORTED,
                          f"{label}({repo!r})" if isinstance(repo, str) else label, HUB_KERNEL_TIP)
            return
        for keyword in call.keywords:
            value = keyword.value
            # from_pretrained(attn_implementation="kernels-community/flash-attn3"), use_kernels=True
            if (keyword.arg == "attn_implementation" and isinstance(value, ast.Constant) and isinstance(value.value, str)
                    and "/" in value.value):
                self.view.add(value, GPU_KERNELS.code, Report.UNSUPPORTED, f"attn_implementation={value.value!r}",
                              "a Hub kernel repository as the attention: " + HUB_KERNEL_TIP
                              + " (attn_implementation='sdpa' on the NPU)")
            elif keyword.arg == "use_kernels" and isinstance(value, ast.Constant) and value.value is True:
                self.view.add(value, GPU_KERNELS.code, Report.UNSUPPORTED, "use_kernels=True",
                              "replaces the model's layers with Hub kernels: " + HUB_KERNEL_TIP + " (leave use_kernels off)")

    def on_function(self, function: ast.AST) -> None:
        for decorator in function.decorator_list:  # type: ignore[attr-defined]
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            language = kernel_language(self.view.qualified(target))
            if language == "Triton" and self.view.npu_backend:
                return  # a Triton-Ascend kernel of the project's NPU backend
            if language is not None:
                self.view.add(function, GPU_KERNELS.code, Report.UNSUPPORTED, f"{language} kernel {function.name}",  # type: ignore[attr-defined]
                              kernel_tip(function.name, language))  # type: ignore[attr-defined]
                return
