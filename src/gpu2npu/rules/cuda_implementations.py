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
from typing import Dict, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .dotted_names import dotted_name
from .npu_aware import Span, span_of

# A class named for CUDA or NVIDIA's GPUs (CUDAAccelerator, CUDA_Accelerator, CudaPlatformBase).
_CUDA_NAME = re.compile(r"(^|_)(CUDA|Cuda|GPU|Gpu|NVIDIA|Nvidia)(?=[A-Z_0-9]|$)")
# The interfaces frameworks implement once per device, by the last word of their name.
_INTERFACE = re.compile(r"(Accelerator|Platform|Communicator)(Base)?$")
# (a file without such a class statement is not walked)
_CLASS_LINE = re.compile(r"^[ \t]*class[ \t]+\w*(CUDA|Cuda|GPU|Gpu|NVIDIA|Nvidia)\w*[ \t]*\(", re.MULTILINE)


def cuda_implementations(wrapper: MetadataWrapper, code: str) -> Dict[Span, str]:
    """The spans of the file's classes that are a framework's CUDA implementation of a device
    interface -> "<class>, ... of <interface>", what the note about each says."""
    if _CLASS_LINE.search(code) is None:
        return {}
    found: Dict[Span, str] = {}
    positions = None
    for node in _classes(wrapper.module.body):
        interface = _cuda_implementation_of(node)
        if interface is not None:
            positions = positions if positions is not None else wrapper.resolve(PositionProvider)
            found[span_of(positions[node], node)] = f"{node.name.value}, its CUDA implementation of {interface}"
    return found


def _cuda_implementation_of(node: cst.ClassDef):
    """The interface `node` implements for CUDA (its base's name), or None."""
    if _CUDA_NAME.search(node.name.value) is None:
        return None
    for base in node.bases:
        name = (dotted_name(base.value) or "").rsplit(".", 1)[-1] if base.keyword is None else ""
        if _INTERFACE.search(name):
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
