"""-sim: calls of APIs without an NPU kernel go to the generated ascend_function package."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ..apidata import lacks_npu_kernel
from ..similar import PACKAGE, equivalents
from .base import Example, Rule
from .names import build_dotted, qualified_names
from .placement import insert_after_imports, top_folder_on_sys_path

COMMENT = "# gpu2npu -sim: the output's top folder holds the ascend_function package"


def _bootstrap(path: str) -> str:
    """Statements that make the package importable from a file at `path` (below the output's
    top folder)."""
    return top_folder_on_sys_path(path) + f"import {PACKAGE}\n"


class AscendFunctionEquivalents(Rule):
    """`-sim`: a call of a torch API that the chosen torch_npu release has no NPU kernel for, and
    that the generated `ascend_function` package has an exact equivalent of, calls the equivalent
    instead: `torch.heaviside(x, v)` becomes `ascend_function.heaviside(x, v)`, arguments kept.
    Each equivalent computes the same values with operators the NPU runs (see
    ascend_function/__init__.py in the output).  Only APIs the data says are unsupported for
    `-v` are rewritten; a call with arguments the equivalent does not take (`out=`) is left and
    reported.  The file gets `import ascend_function`, after a line that puts the output's top
    folder on sys.path, so the import works from files at any depth.
    """

    code = "NPU252"
    summary = "-sim: calls of APIs without an NPU kernel -> ascend_function equivalents"
    triggers = tuple(sorted({e.function for e in equivalents().values()}))
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nstep = torch.heaviside(x, torch.tensor(0.5))\n",
            "import torch\nimport os\nimport sys\n\n" + COMMENT + "\n" + _bootstrap("example.py")
            + "step = ascend_function.heaviside(x, torch.tensor(0.5))\n",
            similar=True,
        ),
        Example(
            "import torch.nn.functional as F\nfrom torch import fmax\n"
            "loss = F.huber_loss(pred, target, delta=0.5) + fmax(a, b).sum()\n",
            "import torch.nn.functional as F\nfrom torch import fmax\nimport os\nimport sys\n\n" + COMMENT + "\n"
            + _bootstrap("example.py")
            + "loss = ascend_function.huber_loss(pred, target, delta=0.5) + ascend_function.fmax(a, b).sum()\n",
            similar=True,
        ),
    )
    unchanged = (
        "import torch\ny = torch.fmax(a, b, out=c)\n",  # out= is not an argument of the equivalent
        "import torch\ny = torch.maximum(a, b)\n",  # runs on NPU: nothing to replace
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.used = False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        for name in sorted(qualified_names(self, original_node.func)):
            equivalent = equivalents().get(name)
            if equivalent is None or lacks_npu_kernel(self.context.api, name) is None:
                continue
            args = original_node.args
            if any(arg.star for arg in args):
                return updated_node
            positional = [arg for arg in args if arg.keyword is None]
            keywords = {arg.keyword.value for arg in args if arg.keyword is not None}
            if len(positional) > equivalent.positional or not keywords <= equivalent.keywords:
                return updated_node  # the analysis reports the call as unsupported
            self.record(original_node, f"change {name} to {PACKAGE}.{equivalent.function} (no NPU kernel for "
                        f"{name} in torch_npu {self.context.api.torch_npu_version}; same values, NPU operators)")
            self.used = True
            return updated_node.with_changes(func=build_dotted(f"{PACKAGE}.{equivalent.function}"))
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if not self.used or _imports_package(original_node):
            return updated_node
        needs_torch_npu = self.context.needs_torch_npu  # the package itself needs only torch
        module = insert_after_imports(self, original_node, updated_node, _bootstrap(self.context.path), (COMMENT,),
                                      f"insert import {PACKAGE} (and its folder on sys.path)", needs=("sys", "os"))
        self.context.needs_torch_npu = needs_torch_npu
        return module


# `gpu2npu explain NPU252` lists what the generated package covers, read from the package itself.
AscendFunctionEquivalents.__doc__ += "\n    Covered:\n" + "".join(
    f"    - {api} -> {PACKAGE}.{equivalent.function}\n" for api, equivalent in equivalents().items())


def _imports_package(module: cst.Module) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and any(
                    isinstance(a.name, cst.Name) and a.name.value == PACKAGE for a in small.names
                ):
                    return True
    return False
