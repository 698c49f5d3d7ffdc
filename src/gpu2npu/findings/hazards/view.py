"""What every hazard detector reads of one file: its scan's names, which nodes are called, and
where a row is added.  Built once per file and handed to each detector."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List, Optional, Set

from ...knowledge.apidata import ApiData
from ...reading.package_tests import PackageTests
from ...records.change import Finding, Report
from ...records.options import ProjectPins

if TYPE_CHECKING:
    from ...reading.scan import FileScan


class FileView:
    def __init__(self, file_scan: "FileScan", path: str, api: ApiData, similar: bool, npu_backend: bool = False,
                 pins: ProjectPins = ProjectPins()) -> None:
        self.path = path
        # what the project pins of the libraries whose releases decide what runs on the NPU
        self.pins = pins
        self.npu_backend = npu_backend  # a file of the project's own NPU backend (its Triton is Triton-Ascend)
        self.api = api
        # -sim answers torch.cuda.get_device_properties(...).major/.minor (ascend_function)
        self.similar = similar
        self.imports = file_scan.imports  # (the scan resolved the file's imports already)
        self.groups = file_scan.groups  # the file's nodes by class
        self.findings: List[Finding] = []
        self._callees = {id(call.func) for call in file_scan.calls}
        # code that runs only where the torch release has what it needs (FileScan.release_guarded)
        self.release_guarded = file_scan.release_guarded
        self._qualified: Dict[int, Set[str]] = {}
        self._package_tests: Optional[PackageTests] = None

    def add(self, node: ast.AST, code: str, report: Report, api_name: str, tip: str, api_type: str = "") -> None:
        """A row of the kind `code` (finding_kinds) about `node`."""
        # a function is reported at its def line, not over its body
        end = node.lineno if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else node.end_lineno or node.lineno
        self.findings.append(Finding(self.path, node.lineno, end, report, api_name, tip, code, api_type=api_type))

    def qualified(self, node: ast.AST) -> Set[str]:
        """What `node` stands for (the scan's answer, kept: several detectors ask of one node)."""
        key = id(node)
        names = self._qualified.get(key)
        if names is None:
            names = self._qualified[key] = self.imports.qualified(node)
        return names

    @property
    def package_tests(self) -> PackageTests:
        """Where the file runs only after a package test (read when first asked)."""
        if self._package_tests is None:
            self._package_tests = PackageTests(self.groups)
        return self._package_tests

    def is_called(self, node: ast.AST) -> bool:
        return id(node) in self._callees

    @property
    def release(self) -> str:
        return f"torch_npu {self.api.torch_npu_version}"
