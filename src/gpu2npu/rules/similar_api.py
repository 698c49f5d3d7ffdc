"""-sim: calls of APIs without an NPU kernel go to the generated ascend_function package."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge.apidata import lacks_npu_kernel
from ..knowledge.ascend_functions import PACKAGE, equivalents
from .base import Example, Rule
from .names import build_dotted, qualified_names
from .placement import insert_after_imports, top_folder_on_sys_path
from .walk import walk

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
    Two CUDA questions go there in every release: `torch.cuda.get_device_capability()` (None on
    the NPU, so `>= (8, 0)` raises) and `torch.cuda.get_device_properties(i)` (no `major` on the
    NPU) are answered with the capability whose features the NPU has: TORCH_NPU_DEVICE_CAPABILITY
    where set, else (8, 0) where it computes bfloat16 and (7, 0) where it does not.
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
        Example(
            "import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    use_flash = True\n"
            "sms = torch.cuda.get_device_properties(torch.cuda.current_device()).major\n",
            "import torch\nimport torch_npu\nimport os\nimport sys\n\n" + COMMENT + "\n" + _bootstrap("example.py")
            + "if ascend_function.get_device_capability()[0] >= 8:\n    use_flash = True\n"
            "sms = ascend_function.get_device_properties(torch_npu.npu.current_device()).major\n",
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

    def visit_Module(self, node: cst.Module) -> None:
        # The CUDA questions are answered here, not renamed to torch_npu's (NPU101): their callee
        # is this rule's, the arguments stay every rule's.
        calls = _Calls()
        walk(calls, node)
        for call in calls.found:
            if any(equivalent is not None and equivalent.answers_cuda and _takes(equivalent, call)
                   for equivalent in map(equivalents().get, qualified_names(self, call.func))):
                self.context.claimed[id(call.func)] = self.code

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        for name in sorted(qualified_names(self, original_node.func)):
            equivalent = equivalents().get(name)
            if equivalent is None:
                continue
            if equivalent.answers_cuda:
                if self.context.claimed.get(id(original_node.func)) != self.code:
                    continue
            elif lacks_npu_kernel(self.context.api, name) is None:
                continue
            if not _takes(equivalent, original_node):
                return updated_node  # the analysis reports the call as unsupported
            if equivalent.answers_cuda:
                why = ("an NPU has no CUDA compute capability; answered with the one whose features it has: "
                       "TORCH_NPU_DEVICE_CAPABILITY where set, else (8, 0) with bfloat16, (7, 0) without")
            else:
                why = (f"no NPU kernel for {name} in torch_npu {self.context.api.torch_npu_version}; same values, "
                       "NPU operators")
            self.record(original_node, f"change {name} to {PACKAGE}.{equivalent.function} ({why})")
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


def _takes(equivalent, call: cst.Call) -> bool:
    """Whether the equivalent takes the call's arguments as written."""
    if any(arg.star for arg in call.args):
        return False
    positional = [arg for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
    return len(positional) <= equivalent.positional and keywords <= equivalent.keywords


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = []

    def visit_Call(self, node: cst.Call) -> None:
        self.found.append(node)


def _imports_package(module: cst.Module) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and any(
                    isinstance(a.name, cst.Name) and a.name.value == PACKAGE for a in small.names
                ):
                    return True
    return False
