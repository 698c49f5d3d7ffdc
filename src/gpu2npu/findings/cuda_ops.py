"""Custom CUDA operators declared in C++/CUDA sources (cuda_op_list.csv).

Operators bound with pybind11 (`PYBIND11_MODULE(..., m) { m.def("name", ...); }`) or registered
with the dispatcher (`TORCH_LIBRARY(ns, m) { m.def("name(Tensor x) -> Tensor"); }`,
`TORCH_LIBRARY_IMPL(ns, CUDA, m) { m.impl("name", ...); }`) have no NPU kernel until someone
writes one.  Read as text: the sources are never compiled or run.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List

_BLOCK_START = re.compile(r"\b(PYBIND11_MODULE|TORCH_LIBRARY|TORCH_LIBRARY_FRAGMENT|TORCH_LIBRARY_IMPL)\s*\(([^)]*)\)\s*\{")
_REGISTRATION = re.compile(r"\b(\w+)\s*\.\s*(def|impl)\s*\(\s*(?:TORCH_SELECTIVE_SCHEMA\s*\(\s*)?\"([^\"]+)\"")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _block(text: str, open_brace: int) -> str:
    depth = 0
    for index in range(open_brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[open_brace + 1 : index]
    return text[open_brace + 1 :]


def custom_operators(source: str) -> List[str]:
    """Operator names registered in one C++/CUDA source, in order of appearance."""
    text = _COMMENTS.sub("", source)
    names: List[str] = []
    for match in _BLOCK_START.finditer(text):
        module_var = match.group(2).split(",")[-1].strip()
        for registration in _REGISTRATION.finditer(_block(text, match.end() - 1)):
            if registration.group(1) != module_var:
                continue
            name = re.split(r"[(.]", registration.group(3).split("::")[-1], maxsplit=1)[0].strip()
            if name and name not in names:
                names.append(name)
    return names


def operators_in(path: Path) -> List[str]:
    """custom_operators of a C++/CUDA source file (read as UTF-8, undecodable bytes replaced)."""
    return custom_operators(path.read_bytes().decode("utf-8", errors="replace"))
