"""distributed: the target model moves to its NPU and is wrapped in DistributedDataParallel."""
from __future__ import annotations

from typing import List, Optional

import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Report
from .base import DistributedSettings, Example, Rule, code_of
from .names import dotted_name
from .placement import footer_lines, is_main_guard
from .walk import walk

DDP = "torch.nn.parallel.DistributedDataParallel"
# Assignments that only move or re-wrap the model: the wrap goes after the one that builds it.
_NOT_A_BUILD = ("npu", "cuda", "to", "half", "float", "DataParallel", "DistributedDataParallel", "DDP")
CHECKPOINT_METHODS = ("state_dict", "load_state_dict")


def _builds_target(statement: cst.CSTNode, target: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Assign):
        if len(small.targets) != 1 or dotted_name(small.targets[0].target) != target:
            return False
        value = small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None and dotted_name(small.target) == target:
        value = small.value
    else:
        return False
    if isinstance(value, cst.Name) and value.value == "None":
        return False
    # `model = model.cuda()` or `model = DataParallel(model)` move or wrap what is already built;
    # `model = Net().to(device)` builds it.
    while isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if name not in _NOT_A_BUILD:
            return True
        inner = func.value if isinstance(func, cst.Attribute) and name not in ("DataParallel", "DistributedDataParallel", "DDP") else (
            value.args[0].value if value.args else None)
        if inner is None:
            return True
        if dotted_name(inner) == target:
            return False
        value = inner
    return True


class _ContainsBuild(cst.CSTVisitor):
    def __init__(self, target: str) -> None:
        self.target = target
        self.found = False

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_SimpleStatementLine(self, node) -> bool:
        self.found |= _builds_target(node, self.target)
        return False


def _runs_its_body_once(statement) -> bool:
    if isinstance(statement, cst.With):
        return isinstance(statement.body, cst.IndentedBlock)
    return is_main_guard(statement)


def _find_build(statements, target: str, function=None):
    """(enclosing function or None, statement after which the model exists): the first
    statement of a function's (or the module's) own body that builds the target, or contains the
    statement that does (`if pretrained: model = A() else: model = B()`: after the whole `if`)."""
    for statement in statements:
        if isinstance(statement, cst.FunctionDef):
            found = _find_build(statement.body.body, target, statement)
        elif isinstance(statement, cst.ClassDef):
            found = _find_build(statement.body.body, target, function)
        elif _runs_its_body_once(statement):
            # `if __name__ == "__main__":` and `with ...:` bodies run straight through: the wrap
            # goes right after the build inside them.
            found = _find_build(statement.body.body, target, function)
        else:
            finder = _ContainsBuild(target)
            walk(finder, statement)
            found = (function, statement) if finder.found else None
        if found is not None:
            return found
    return None


def _torch_name(body) -> Optional[str]:
    """The name the module's own imports give torch (`import torch as th`: th), or None."""
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                name = code_of(alias.name)
                if alias.asname is not None and name == "torch":
                    return code_of(alias.asname.name)
                if alias.asname is None and name.split(".")[0] == "torch":
                    return "torch"
    return None


class WrapModelInDdp(Rule):
    """In the main file, right after the statement that builds the target model (`-t`, default
    `model`; `self.model` works too), the model moves to this process's NPU and is wrapped:

        model = Net()
        model = model.npu()
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch_npu.npu.current_device()])

    Checkpoints keep their format: `model.state_dict()` / `model.load_state_dict(...)` after the
    wrap (and in functions that receive the model as a parameter) go through `model.module`, so
    files written by the original script load, and files written now load in the original.
    A script that already wraps its model in DDP is left to do so.
    """

    code = "NPU303"
    summary = "distributed: move the target model to its NPU and wrap it in DistributedDataParallel"
    triggers = ()
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\ndef main():\n    model = Net()\n    train(model)\n"
            "def train(model):\n    torch.save(model.state_dict(), 'last.pt')\n",
            "import torch\nimport torch_npu\ndef main():\n    model = Net()\n    model = model.npu()\n"
            "    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch_npu.npu.current_device()])\n"
            "    train(model)\ndef train(model):\n    torch.save(model.module.state_dict(), 'last.pt')\n",
            distributed=DistributedSettings(main_file="example.py", project_initialises=True),
        ),
    )
    unchanged = ()

    def __init__(self, context) -> None:
        super().__init__(context)
        settings = context.options.distributed
        self.target = settings.target
        self.root = self.target.split(".")[0]
        self.active = context.path == settings.main_file
        self.build = None
        self.build_line = 0
        self.functions: List[Optional[cst.FunctionDef]] = [None]
        self.params: List[set] = [set()]

    def visit_Module(self, node: cst.Module) -> None:
        if not self.active:
            return
        if "DistributedDataParallel" in node.code or "DDP(" in node.code:
            self.active = False
            return
        self.torch = _torch_name(node.body)
        if self.torch is None:
            self.report(node, Report.UNSUPPORTED, DDP, "the main file does not `import torch`: wrap the model in "
                        "DistributedDataParallel by hand")
            self.active = False
            return
        found = _find_build(node.body, self.target)
        if found is None:
            self.report(node, Report.UNSUPPORTED, DDP,
                        f"no statement that builds {self.target} was found: move it to its NPU and wrap it in "
                        f"{DDP}(..., device_ids=[torch_npu.npu.current_device()]) by hand")
            self.active = False
            return
        self.build = found
        self.build_line = self.lines_of(found[1])[1] + footer_lines(found[1])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)
        self.params.append({p.name.value for p in node.params.params} | {p.name.value for p in node.params.kwonly_params})

    def leave_FunctionDef(self, original_node, updated_node):
        self.functions.pop()
        self.params.pop()
        return updated_node

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)
        if not self.active or self.build is None or original_node is not self.build[1]:
            return updated_node
        lines = [
            f"{self.target} = {self.target}.npu()",
            f"{self.target} = {self.torch}{DDP[len('torch'):]}({self.target}, device_ids=[torch_npu.npu.current_device()])",
        ]
        new = [cst.parse_statement(line + "\n") for line in lines]
        for statement in new:
            self.context.inserted.add(statement)
        self.record_insert(self.build_line, f"insert {self.target}.npu() and the DistributedDataParallel wrap")
        self.context.needs_torch_npu = True
        return cst.FlattenSentinel([updated_node, *new])

    def _sees_wrapped_model(self, line: int) -> bool:
        function = self.functions[-1]
        if function is self.build[0]:
            return line > self.build_line
        if self.root == "self":
            return True
        return self.root in self.params[-1]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not self.active or self.build is None:
            return updated_node
        func = original_node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in CHECKPOINT_METHODS):
            return updated_node
        if dotted_name(func.value) != self.target or not self._sees_wrapped_model(self.lines_of(original_node)[0]):
            return updated_node
        self.record(original_node, f"change {self.target}.{func.attr.value} to {self.target}.module.{func.attr.value} "
                    "(checkpoint keys as in the original)")
        new_value = cst.parse_expression(f"{self.target}.module")
        return updated_node.with_changes(func=updated_node.func.with_changes(value=new_value))

