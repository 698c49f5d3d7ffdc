"""`torch.cuda.X` where `torch` is a parameter or local variable of the function, not the file's
import of torch (NPU923): left as written, since what it holds is not certain, and said."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ...records.change import Report
from ...records.finding_kinds import LOCAL_TORCH_CUDA
from ...knowledge.tips import migratable_cuda_path
from .view import FileView

if TYPE_CHECKING:
    from ...reading.scan import FileScan

TRIGGERS = ()


def might_be_in(data: bytes, file_scan: "FileScan") -> bool:
    """Only a file with names that depend on the place (a scope model) has such a local."""
    scopes = file_scan.imports.scopes
    return scopes is not None and b".cuda." in data and any(
        "torch" in file_scan.imports.aliases.get(name, ()) for name in scopes.names)


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_reference(self, node: ast.AST) -> None:
        if node.__class__ is not ast.Attribute:
            return
        parts = []
        root = node
        while root.__class__ is ast.Attribute:
            parts.append(root.attr)  # type: ignore[attr-defined]
            root = root.value  # type: ignore[attr-defined]
        imports = self.view.imports
        scopes = imports.scopes
        if (root.__class__ is not ast.Name or len(parts) < 2 or parts[-1] != "cuda" or scopes is None
                or root.id not in scopes.names or scopes.of_node(root)  # type: ignore[attr-defined]
                or "torch" not in imports.aliases.get(root.id, ())):  # type: ignore[attr-defined]
            return
        path = list(reversed(parts[:-1]))
        if not migratable_cuda_path(self.view.api, path):
            return  # (no NPU counterpart: the leftover analysis says what to do, NPU917)
        rest = ".".join(path)
        written = f"{root.id}.cuda.{rest}"  # type: ignore[attr-defined]
        self.view.add(node, LOCAL_TORCH_CUDA.code, Report.UNSUPPORTED, written,
                      f"{root.id} is a parameter or variable here, not the torch the file imports, so gpu2npu "  # type: ignore[attr-defined]
                      f"leaves {written} as written: if it holds the torch module, call torch_npu.npu.{rest} "
                      "(after import torch_npu) where the release has it; CUDA's has no device on an NPU machine")
