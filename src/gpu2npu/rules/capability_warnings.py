"""A check of CUDA's compute capability that decides only a message -> removed."""
from __future__ import annotations

from typing import List, Optional, Sequence, Set

import libcst as cst

from ..reading.file_facts import MESSAGE_CALLS
from .base import Example, Rule
from .bf16_capability import CAPABILITY
from .dotted_names import last_name
from .names import nodes_within, qualified_names
from .placement import record_removal, remove_statement

_MESSAGE = "remove a check of CUDA's compute capability that only decides a message (an NPU has none)"


class CapabilityMessageRemoved(Rule):
    """`major, minor = torch.cuda.get_device_capability()` followed by `if major < 8:
    warnings.warn("... only supported on A100 or H100 ...")` (the monkey patches that put
    flash-attn into a model) asks which NVIDIA GPU generation runs, only to warn or log.  An NPU
    has no compute capability: torch.cuda's query raises on an Ascend machine, torch_npu's returns
    None (its TORCH_NPU_DEVICE_CAPABILITY from 2.7.1), so the patch stops at the check although
    what it patches runs there.  Where the capability's only readers are the tests of `if`s right
    after it whose branches only print, warn or log (or an `if` whose test calls the query itself),
    the check and its messages are removed: they speak of NVIDIA's generations, and nothing else
    depends on them.  A check that raises, chooses something, or whose answer is read elsewhere
    (returned, compared to choose a data type or a kernel) stays, reported (NPU917).
    """

    code = "NPU119"
    summary = "a compute-capability check that only decides a message -> removed"
    triggers = ("get_device_capability",)
    examples = (
        Example(
            "import warnings\nimport torch\n\n\ndef patch():\n    major, minor = torch.cuda.get_device_capability()\n"
            "    if major < 8:\n        warnings.warn('flash attention needs an A100 or H100')\n    apply_patch()\n",
            "import warnings\nimport torch\n\n\ndef patch():\n    apply_patch()\n",
        ),
        Example(
            "import logging\nimport torch\n\nif torch.cuda.get_device_capability()[0] < 8:\n"
            "    logging.warning('this GPU is older than Ampere')\nrun()\n",
            "import logging\nimport torch\nrun()\n",
        ),
    )
    unchanged = (
        # the answer chooses something, is returned, or stops the program
        "import torch\nmajor, minor = torch.cuda.get_device_capability()\nif major < 8:\n    use_flash = False\n",
        "import torch\n\n\ndef capability():\n    major, minor = torch.cuda.get_device_capability()\n"
        "    if major < 8:\n        print('old GPU')\n    return major\n",
        "import torch\nif torch.cuda.get_device_capability()[0] < 8:\n    raise RuntimeError('needs Ampere')\n",
        "import torch\nif torch.cuda.is_available() and torch.cuda.get_device_capability()[0] < 8:\n    pass\n",
        # read by something other than the tests right after it
        "import torch\nmajor, _ = torch.cuda.get_device_capability()\nif major < 8:\n    print('old')\n"
        "dtype = 'bf16' if major >= 8 else 'fp16'\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._removed: Set[int] = set()  # ids of the original statements to remove

    def visit_Module(self, node: cst.Module) -> None:
        self._find(node.body, node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self._find(node.body.body, node)

    def _find(self, body: Sequence[cst.CSTNode], scope: cst.CSTNode) -> None:
        """The checks among the statements of a function's (or the module's) top block."""
        index = 0
        while index < len(body):
            statement = body[index]
            if isinstance(statement, cst.If) and self._compares_capability(statement.test) and _messages_only(statement):
                self._removed.add(id(statement))
            names = self._capability_names(statement)
            if names:
                tests: List[cst.If] = []
                for following in body[index + 1:]:
                    if not (isinstance(following, cst.If) and _messages_only(following)
                            and _reads_only(following.test, names)):
                        break
                    tests.append(following)
                if tests and _reads_elsewhere(scope, names, [statement, *tests]) == 0:
                    self._removed.update(id(node) for node in (statement, *tests))
                    index += len(tests)
            index += 1

    def _compares_capability(self, test: cst.BaseExpression) -> bool:
        """Whether the test only compares the query's answer (`get_device_capability()[0] < 8`,
        `get_device_capability() < (8, 0)`, joined by `and`/`or`) with numbers."""
        if isinstance(test, cst.BooleanOperation):
            return self._compares_capability(test.left) and self._compares_capability(test.right)
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return False
        asked = test.left.value if isinstance(test.left, cst.Subscript) else test.left
        return (self._queries_capability(asked)
                and not any(isinstance(node, (cst.Name, cst.Call)) for node in nodes_within(
                    test.comparisons[0].comparator, cst.CSTNode)))

    def _queries_capability(self, node: cst.BaseExpression) -> bool:
        """Whether `node` calls get_device_capability (torch.cuda's, or torch_npu.npu's)."""
        return isinstance(node, cst.Call) and bool(qualified_names(self, node.func) & CAPABILITY)

    def _capability_names(self, statement: cst.CSTNode) -> Set[str]:
        """The names `major, minor = torch.cuda.get_device_capability()` (or `cap = ...`,
        `major = ...()[0]`) binds, or none."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1):
            return set()
        assign = statement.body[0]
        value = assign.value
        if isinstance(value, cst.Subscript):
            value = value.value
        if not self._queries_capability(value):
            return set()
        target = assign.targets[0].target
        targets = [element.value for element in target.elements] if isinstance(target, cst.Tuple) else [target]
        if not all(isinstance(name, cst.Name) for name in targets):
            return set()
        return {name.value for name in targets}

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine):
        return self._remove(original_node, updated_node)

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        return self._remove(original_node, updated_node)

    def _remove(self, original_node, updated_node):
        if id(original_node) not in self._removed:
            return updated_node
        record_removal(self, original_node, _MESSAGE)
        return remove_statement(original_node, updated_node)


def _messages_only(statement: cst.If) -> bool:
    """Whether every branch of the `if` (and of its `elif`s and `else`) only prints, warns or logs
    (or passes), and one of them does."""
    if not any(isinstance(small, cst.Expr) for line in nodes_within(statement, cst.SimpleStatementLine)
               for small in line.body):
        return False
    branch: Optional[cst.CSTNode] = statement
    while branch is not None:
        block = branch.body
        if not isinstance(block, cst.IndentedBlock) or not all(_a_message(line) for line in block.body):
            return False
        branch = branch.orelse if isinstance(branch, cst.If) else None
        if isinstance(branch, cst.Else):
            return isinstance(branch.body, cst.IndentedBlock) and all(_a_message(line) for line in branch.body.body)
    return True


def _a_message(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Pass):
            continue
        call = small.value if isinstance(small, cst.Expr) else None
        if not isinstance(call, cst.Call):
            return False
        if last_name(call.func) not in MESSAGE_CALLS:
            return False
    return True


def _reads_only(test: cst.BaseExpression, names: Set[str]) -> bool:
    """Whether the test reads some of `names` and nothing else but numbers and comparisons."""
    read = False
    for node in nodes_within(test, cst.CSTNode):
        if isinstance(node, cst.Name):
            if node.value not in names:
                return False
            read = True
        elif isinstance(node, (cst.Call, cst.Attribute, cst.Subscript, cst.Lambda, cst.NamedExpr)):
            return False
    return read


def _reads_elsewhere(scope: cst.CSTNode, names: Set[str], checked: Sequence[cst.CSTNode]) -> int:
    """How often `names` stand in `scope` outside the statements of the check (a variable, not an
    attribute's or a keyword's name)."""
    not_variables = {id(node.attr) for node in nodes_within(scope, cst.Attribute)}
    not_variables |= {id(node.keyword) for node in nodes_within(scope, cst.Arg) if node.keyword is not None}
    inside = {id(node) for statement in checked for node in nodes_within(statement, cst.Name)}
    return sum(1 for node in nodes_within(scope, cst.Name)
               if node.value in names and id(node) not in not_variables and id(node) not in inside)
