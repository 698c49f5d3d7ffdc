"""CUDA assumptions that survive a migration silently: code that runs on the NPU but decides
otherwise, or fails later, because it asks CUDA questions.

The rules cannot rewrite these (what the code wants is not certain), and the leftover analysis
looks for CUDA names, which these are not: `torch.version.cuda` is None on an NPU machine, a
device's `major` does not exist there, `torch.compile`'s default backend and its modes, inductor
settings and Triton kernels are CUDA code generation, bitsandbytes is reached through other
libraries' options (`optim="paged_adamw_32bit"`, `load_in_4bit=True`), and a probe for a CUDA-only
package by name (`find_spec("flash_attn")`, `importlib.metadata.version("flash-attn")`) is None or
raises where that package is not installed.  Each is reported once per line with what it does on
the NPU and the NPU way.

One module per kind of question (its code in finding_kinds).  Each declares the words a file
must hold for it to find anything (TRIGGERS; `might_be_in(data)` where a word is not enough) and
a `Detector` with the hooks it needs: `on_assign`, `on_reference` (the top of each name or
attribute chain), `on_call`, `on_string` (not documentation), `on_module` (the whole tree) and
`on_function`.  A file none of whose bytes hold a trigger is not walked: the words are the union
of the detectors' own, so a new detector cannot be missed by the quick test.

It reads the original file with `ast` (every file, changed or not, like the advice), so its
line numbers are the input's.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Optional, Tuple

from ...knowledge.apidata import ApiData
from ...records.change import Finding
from ...records.options import ProjectPins
from . import (auto_device_map, compiler, cuda_handles, framework_options, fused_optimizers, gpu_identity, gpu_kernels,
               library_devices, lightning_accelerator, local_torch_cuda, npu_dtypes, nvidia_tools, package_probes,
               profiler, quantization, ray_gpus, tf32, torch_refusal)
from .compiler import compile_tip
from .view import FileView

if TYPE_CHECKING:
    from ...reading.scan import FileScan

__all__ = ["DETECTORS", "compile_tip", "hazards_for_source", "might_have_hazard"]

DETECTORS = (local_torch_cuda, profiler, gpu_identity, compiler, cuda_handles, tf32, gpu_kernels, fused_optimizers,
             ray_gpus, package_probes, quantization, nvidia_tools, framework_options, lightning_accelerator, npu_dtypes,
             torch_refusal, library_devices, auto_device_map)

TRIGGERS: Tuple[bytes, ...] = tuple(dict.fromkeys(word for detector in DETECTORS for word in detector.TRIGGERS))

# Words holding one of these parts are looked for only where the part is: a file without "cuda"
# is searched once for it, not once for each of the words holding it.  (A byte search costs a
# fifth of a regular expression's search through the same file.)
_SHARED_PARTS = (b"cuda", b"precision", b"bit", b"fused")
_SEARCHES = tuple((part, tuple(word for word in TRIGGERS if part in word)) for part in _SHARED_PARTS
                  if any(part in word for word in TRIGGERS)) + tuple(
    (word, ()) for word in TRIGGERS if not any(part in word for part in _SHARED_PARTS))


def might_have_hazard(data: bytes) -> bool:
    """Whether any detector's words are in `data` (or, for `.compile`, its look at the bytes)."""
    for part, words in _SEARCHES:
        if part in data and (not words or any(word in data for word in words)):
            return True
    return compiler.might_be_in(data)


def _active(data: bytes, file_scan: "FileScan"):
    """The detectors that can find something in `data`: those whose words it holds."""
    for module in DETECTORS:
        if any(word in data for word in module.TRIGGERS):
            yield module
        elif module is compiler and compiler.might_be_in(data):
            yield module
        elif module is local_torch_cuda and local_torch_cuda.might_be_in(data, file_scan):
            yield module


def hazards_for_source(data: bytes, file_scan: Optional["FileScan"], path: str, api: ApiData,
                       similar: bool = False, npu_backend: bool = False,
                       pins: ProjectPins = ProjectPins()) -> List[Finding]:
    """The rows for one parsed file ([] when nothing in its bytes can be one), from its scan
    (None: the file could not be parsed); `similar`: a -sim run; `npu_backend`: the file is part
    of the project's own NPU backend (reading.discover.npu_backend_files); `pins`: what the project
    pins of the libraries whose releases decide what runs on the NPU."""
    if file_scan is None or not (might_have_hazard(data) or local_torch_cuda.might_be_in(data, file_scan)):
        return []
    try:
        view = FileView(file_scan, path, api, similar, npu_backend, pins)
        return sorted(set(_walk(view, file_scan, list(_active(data, file_scan)))))
    except RecursionError:
        return []


def _walk(view: FileView, file_scan: "FileScan", modules) -> List[Finding]:
    detectors = [module.Detector(view) for module in modules]

    def hooks(name: str):
        return [getattr(detector, name) for detector in detectors if hasattr(detector, name)]

    # The scan's nodes by class give what the detectors read: documentation, assignments, and
    # which names and attributes are the top of their chain.
    groups = file_scan.groups
    attributes = groups.get(ast.Attribute, ())
    inner = {id(node.value) for node in attributes}  # the `a.b` of `a.b.c`: not the top of its chain
    documentation = {id(node.value) for node in groups.get(ast.Expr, ()) if node.value.__class__ is ast.Constant}
    for node in groups.get(ast.ClassDef, ()):
        # a class attribute holding a name (`PAGED_ADAMW = "paged_adamw_32bit"` of an enum)
        # defines the name; it is reported where it is chosen
        documentation.update(id(statement.value) for statement in node.body if isinstance(statement, ast.Assign))
    for hook in hooks("on_assign"):  # first: what names hold is known before they are read
        for assign in groups.get(ast.Assign, ()):
            hook(assign)
    on_reference = hooks("on_reference")
    for node in [*attributes, *groups.get(ast.Name, ())] if on_reference else ():
        if id(node) not in inner:
            for hook in on_reference:
                hook(node)
    on_call = hooks("on_call")
    for call in file_scan.calls:
        for hook in on_call:
            hook(call)
    on_string = hooks("on_string")
    for node in groups.get(ast.Constant, ()) if on_string else ():
        if node.value.__class__ is str and id(node) not in documentation:
            for hook in on_string:
                hook(node)
    for hook in hooks("on_module"):
        hook(file_scan.tree)
    on_function = hooks("on_function")
    for function in file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef) if on_function else ():
        for hook in on_function:
            hook(function)
    return view.findings
