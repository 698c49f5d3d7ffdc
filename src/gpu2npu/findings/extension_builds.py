"""Whether a `torch.utils.cpp_extension.load` / `load_inline` call builds CUDA code.

Both build a C++ extension at run time.  CUDA comes in only through what they are given
(torch's documentation): `load` adds CUDA when a source ends in .cu or .cuh or `with_cuda=True`,
`load_inline` when `cuda_sources` is given or `with_cuda=True`.  An extension of C++ sources
alone is a host build: it compiles and runs on an Ascend machine as it is (its ATen calls
dispatch to whatever device the tensors are on), so it is no CUDA construct to report.
"""
from __future__ import annotations

import enum
from typing import Optional, Sequence

import libcst as cst

from ..rules.names import dotted_name, string_text

LOAD = "torch.utils.cpp_extension.load"
LOAD_INLINE = "torch.utils.cpp_extension.load_inline"
BUILDERS = (LOAD, LOAD_INLINE)

CUDA_SUFFIXES = (".cu", ".cuh")

CUDA_TIP = {
    LOAD: "its .cu sources (or with_cuda=True) build CUDA kernels: port them to Ascend C custom operators "
          "or use torch_npu operators",
    LOAD_INLINE: "its cuda_sources (or with_cuda=True) build CUDA kernels: port them to Ascend C custom operators "
                 "or use torch_npu operators",
}
UNDECIDED_TIP = {
    LOAD: "builds CUDA kernels if its sources include .cu/.cuh files or with_cuda=True (not known from the code "
          "here): port those to Ascend C; C++ sources alone build a host extension that needs no change",
    LOAD_INLINE: "builds CUDA kernels if it is given cuda_sources or with_cuda=True (not known from the code here): "
                 "port those to Ascend C; cpp_sources alone build a host extension that needs no change",
}


class Build(enum.Enum):
    CUDA = "cuda"  # certainly compiles CUDA code
    HOST = "host"  # certainly C++ only
    UNDECIDED = "undecided"  # what it is given is not written in the call


def build_of(name: str, call: Optional[cst.Call]) -> Build:
    """What `call`, a call of `name` (one of BUILDERS), builds; `call` is None for a reference to
    `name` that is not a call (handed on: what it builds is not known here)."""
    if call is None or any(arg.star for arg in call.args):
        return Build.UNDECIDED
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    positional = [arg.value for arg in call.args if arg.keyword is None]
    with_cuda = _constant(keywords.get("with_cuda"))
    if with_cuda is True:
        return Build.CUDA
    # (with_cuda comes ninth or later in every torch release: a call passing that many arguments
    # by position is not read)
    if (with_cuda is not None and with_cuda is not False) or len(positional) > 8:
        return Build.UNDECIDED
    if name == LOAD_INLINE:
        cuda_sources = keywords.get("cuda_sources", positional[2] if len(positional) > 2 else None)
        # (torch compiles them when they are truthy)
        if _constant(cuda_sources) is None:  # not given, or None
            return Build.HOST
        if isinstance(cuda_sources, (cst.List, cst.Tuple)):
            return Build.CUDA if cuda_sources.elements else Build.HOST
        if isinstance(cuda_sources, cst.SimpleString) and string_text(cuda_sources) is not None:
            return Build.CUDA if string_text(cuda_sources) else Build.HOST
        if isinstance(cuda_sources, (cst.ConcatenatedString, cst.FormattedString)):
            return Build.CUDA
        return Build.UNDECIDED  # a variable, which may hold None
    sources = keywords.get("sources", positional[1] if len(positional) > 1 else None)
    suffixes = _suffixes(sources)
    if suffixes is None:
        return Build.UNDECIDED
    if any(suffix.endswith(CUDA_SUFFIXES) for suffix in suffixes):  # (as torch tells them: case matters)
        return Build.CUDA
    return Build.HOST


def _constant(node: Optional[cst.BaseExpression]):
    """True, False or None for those names; the node itself for anything else; None when absent."""
    if node is None:
        return None
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return node


def _suffixes(sources: Optional[cst.BaseExpression]) -> Optional[Sequence[str]]:
    """The known ending of each source path of `sources` (a path or a list/tuple of them), or
    None when one of them is not written out (a variable, a call other than os.path.join)."""
    if sources is None:
        return None
    if isinstance(sources, (cst.List, cst.Tuple)):
        if any(isinstance(element, cst.StarredElement) for element in sources.elements):
            return None
        items = [element.value for element in sources.elements]
    else:
        items = [sources]
    endings = []
    for item in items:
        ending = _path_ending(item)
        if ending is None:
            return None
        endings.append(ending)
    return endings


def _path_ending(node: cst.BaseExpression) -> Optional[str]:
    """The literal text a path expression ends with: a string, the last part of an f-string or
    of a concatenation, the last argument of os.path.join; None when it does not end in text."""
    if isinstance(node, cst.SimpleString):
        return string_text(node)
    if isinstance(node, cst.ConcatenatedString):
        return _path_ending(node.right)
    if isinstance(node, cst.FormattedString):
        last = node.parts[-1] if node.parts else None
        return last.value if isinstance(last, cst.FormattedStringText) else None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _path_ending(node.right)
    if isinstance(node, cst.Call) and dotted_name(node.func) in ("os.path.join", "path.join", "osp.join") and node.args \
            and not node.args[-1].star:
        return _path_ending(node.args[-1].value)
    return None
