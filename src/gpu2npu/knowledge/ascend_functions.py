"""-sim: the generated `ascend_function` package, read from our own template.

`generated/ascend_function_template.py` is the package's text, written verbatim into the output; this
module reads it as data (it imports torch, and the tool never imports what it writes) to learn
which torch APIs it replaces and which arguments each equivalent accepts.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Dict, FrozenSet

PACKAGE = "ascend_function"
TEMPLATE = "ascend_function_template.py"


@dataclass(frozen=True)
class Equivalent:
    api: str  # the torch API replaced, e.g. torch.heaviside
    function: str  # its name in ascend_function
    positional: int  # how many arguments may be passed by position
    keywords: FrozenSet[str]  # the argument names
    answers_cuda: bool = False  # a CUDA question (ANSWERS): replaced in every release, not for a kernel


@functools.lru_cache(maxsize=None)
def package_text() -> str:
    return resources.files("gpu2npu.generated").joinpath(TEMPLATE).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def equivalents() -> Dict[str, Equivalent]:
    """torch API -> its equivalent, from the template's REPLACES and ANSWERS tables and signatures."""
    tree = ast.parse(package_text())
    tables: Dict[str, Dict[str, str]] = {"REPLACES": {}, "ANSWERS": {}}
    functions = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if getattr(target, "id", None) in tables:
                    tables[target.id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.FunctionDef):
            functions[node.name] = node.args
    result = {}
    for table, answers_cuda in (("REPLACES", False), ("ANSWERS", True)):
        for api, name in tables[table].items():
            args = functions[name]
            positional = [a.arg for a in args.posonlyargs + args.args]
            result[api] = Equivalent(api, name, len(positional),
                                     frozenset(positional + [a.arg for a in args.kwonlyargs]), answers_cuda)
    return result


