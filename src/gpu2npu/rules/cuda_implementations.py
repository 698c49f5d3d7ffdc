"""A framework's CUDA implementation of its device abstraction, left whole.

Frameworks that run on several devices write one class per device behind one interface
(Lightning's `CUDAAccelerator(Accelerator)`, DeepSpeed's `CUDA_Accelerator(DeepSpeedAccelerator)`,
vLLM's `CudaPlatform(Platform)`) and choose one by the device they find, by its name ("cuda") in
registries, flags and comparisons all over the framework.  Migrated, the CUDA class would answer
for the NPU under CUDA's name while the rest of the framework still names CUDA: Lightning's
Fabric() and Trainer() stopped at start-up on an Ascend machine (its `setup_device` refused every
device), where the original fell back to the CPU.  On an Ascend machine such a framework needs its
NPU implementation of the interface (DeepSpeed's NPU_Accelerator, an Ascend plugin); the CUDA one
is left as written, and said so once.
"""
from __future__ import annotations

import re
from typing import Dict, Iterator, List, NamedTuple, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..knowledge.device_words import CUDA_CLASS_WORDS, interface_of, is_named_for_cuda
from .dotted_names import dotted_name
from .names import nodes_within
from .npu_aware import Span, span_of

# A module-level function named for CUDA (is_cuda_available, num_cuda_devices, _get_gpu_id).
_CUDA_FUNCTION_NAME = re.compile(r"(^|_)(cuda|gpu|nvidia|nvml)(_|$)", re.IGNORECASE)
# (a file without such a class statement is not walked)
_CLASS_LINE = re.compile(rf"^[ \t]*class[ \t]+\w*({CUDA_CLASS_WORDS})\w*[ \t]*\(", re.MULTILINE)


class Implementation(NamedTuple):
    """What the note about a part of a framework's CUDA implementation says."""

    name: str  # the class's, or a helper function's
    interface: str
    helper_of: Optional[str] = None  # for a module-level function of the class's module that is part of it
    called: bool = True  # the class calls it (itself or through another); else named for CUDA beside it


def cuda_implementations(wrapper: MetadataWrapper, code: str) -> Dict[Span, Implementation]:
    """The spans of the file's classes that are a framework's CUDA implementation of a device
    interface, of the module's functions they call (`num_cuda_devices()` in Lightning's
    `CUDAAccelerator.is_available`: migrated alone, the class would find the NPUs), itself or
    through another, and of the module's functions named for CUDA beside them (Lightning's
    `is_cuda_available()`, which its profiler asks before recording CUDA activity: migrated, it
    says yes on an Ascend machine), with the functions those call -> what the note about each says."""
    if _CLASS_LINE.search(code) is None:
        return {}
    found: Dict[Span, Implementation] = {}
    positions = None
    functions = {statement.name.value: statement for statement in wrapper.module.body
                 if isinstance(statement, cst.FunctionDef)}
    for node in _classes(wrapper.module.body):
        interface = _cuda_implementation_of(node)
        if interface is None:
            continue
        positions = positions if positions is not None else wrapper.resolve(PositionProvider)
        found[span_of(positions[node], node)] = Implementation(node.name.value, interface)
        for helper in _helpers(node, functions):
            # (its body: the analysis of the file keeps account of the functions it enters)
            found.setdefault(span_of(positions[helper.body], helper.body),
                             Implementation(helper.name.value, interface, node.name.value))
        for name, function in functions.items():
            if _CUDA_FUNCTION_NAME.search(name) is None:
                continue
            found.setdefault(span_of(positions[function.body], function.body),
                             Implementation(name, interface, node.name.value, called=False))
            for helper in _helpers(function, functions):
                found.setdefault(span_of(positions[helper.body], helper.body),
                                 Implementation(helper.name.value, interface, name))
    return found


def _helpers(node: cst.CSTNode, functions: Dict[str, cst.FunctionDef]) -> List[cst.FunctionDef]:
    """The module-level functions `node` calls by name (`num_cuda_devices()`), itself or through
    one of them."""
    found: Dict[str, cst.FunctionDef] = {}
    pending = [node]
    while pending:
        for call in nodes_within(pending.pop(), cst.Call):
            name = call.func.value if isinstance(call.func, cst.Name) else None
            helper = functions.get(name)
            if helper is not None and name not in found:
                found[name] = helper
                pending.append(helper)
    return list(found.values())


def _cuda_implementation_of(node: cst.ClassDef):
    """The interface `node` implements for CUDA (its base's name), or None."""
    if not is_named_for_cuda(node.name.value):
        return None
    for base in node.bases:
        name = (dotted_name(base.value) or "").rsplit(".", 1)[-1] if base.keyword is None else ""
        if interface_of(name):
            return name
    return None


def _classes(body) -> Iterator[cst.ClassDef]:
    """The module's classes: at its top level, and in its `if` and `try` blocks."""
    for statement in body:
        if isinstance(statement, cst.ClassDef):
            yield statement
        elif isinstance(statement, (cst.If, cst.Try, cst.Else)):
            yield from _classes(statement.body.body)
            orelse = getattr(statement, "orelse", None)
            if orelse is not None:
                yield from _classes([orelse])
