"""A compute-capability gate that chooses bfloat16 -> the NPU's bf16 support test."""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from .base import Example, Rule
from .names import nodes_within, qualified_names

BF16_SUPPORTED = "torch_npu.npu.is_bf16_supported"
CAPABILITY = frozenset({"torch.cuda.get_device_capability", "torch_npu.npu.get_device_capability"})
PROPERTIES = frozenset({"torch.cuda.get_device_properties", "torch_npu.npu.get_device_properties"})
BF16_DTYPES = frozenset({"torch.bfloat16"})
BF16_WORDS = frozenset({"bf16", "bfloat16"})
# Ampere (compute capability 8.0) brought bf16 to NVIDIA GPUs: a gate at another threshold asks
# something else (tensor cores at 7.0, FP8 at 8.9 or 9.0) and is left for the report.
AMPERE_INTEGERS = {("GreaterThanEqual", "8"), ("GreaterThan", "7")}
AMPERE_TUPLES = {("GreaterThanEqual", ("8", "0")), ("GreaterThanEqual", ("8",)), ("GreaterThan", ("7", "9"))}


class Bf16CapabilityGateToNpu(Rule):
    """`torch.bfloat16 if torch.cuda.get_device_capability()[0] >= 8 else torch.float16` chooses
    bf16 where the GPU is Ampere or newer, the first to compute in bf16.  NPUs have no CUDA compute
    capability: get_device_capability returns None there (so `None[0]` raises), and the properties
    have no `major`.  Where the capability test decides between bf16 and something else (the
    conditional expression `bf16 if test else other`, or an `if test:` whose body only assigns
    bf16), the comparison asks the NPU instead: `torch_npu.npu.is_bf16_supported()`.  Comparisons
    accepted: `get_device_capability(...)[0] >= 8` (or `> 7`), `get_device_capability(...) >=
    (8, 0)`, `get_device_properties(...).major >= 8`; inside an `and` chain the other operands
    stay.  Other thresholds (7.0 tensor cores, 9.0 FP8) and gates whose choice is not bf16 are
    reported, not rewritten.
    """

    code = "NPU111"
    summary = "a capability >= 8.0 test that chooses bf16 -> torch_npu.npu.is_bf16_supported()"
    triggers = ("get_device_capability", "get_device_properties")
    examples = (
        Example(
            "import torch\n\n"
            "dtype = torch.bfloat16 if torch.cuda.get_device_capability()[0] >= 8 else torch.float16\n",
            "import torch\nimport torch_npu\n\n"
            "dtype = torch.bfloat16 if torch_npu.npu.is_bf16_supported() else torch.float16\n",
        ),
        Example(
            "import torch\n\n"
            "if torch.cuda.is_available() and torch.cuda.get_device_properties(0).major >= 8:\n"
            "    args.precision = 'bf16'\nelse:\n    args.precision = 'fp16'\n",
            "import torch\nimport torch_npu\n\n"
            "if torch_npu.npu.is_available() and torch_npu.npu.is_bf16_supported():\n"
            "    args.precision = 'bf16'\nelse:\n    args.precision = 'fp16'\n",
        ),
    )
    unchanged = (
        # the capability wanted for itself, or for another feature
        "import torch\nmajor, minor = torch.cuda.get_device_capability()\n",
        "import torch\nuse_flash = torch.cuda.get_device_capability()[0] >= 8\n",
        "import torch\ndtype = torch.float8_e4m3fn if torch.cuda.get_device_capability() >= (9, 0) else torch.bfloat16\n",
        # a test that `or`s the capability with something else decides more than bf16
        "import torch\ndtype = torch.bfloat16 if force or torch.cuda.get_device_capability()[0] >= 8 else torch.float16\n",
        # the branch does more than choose bf16
        "import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    dtype = torch.bfloat16\n    tf32 = True\n",
    )

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp):
        return self._gate(original_node, updated_node)

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        return self._gate(original_node, updated_node)

    def _gate(self, original_node, updated_node):
        # names are resolved on the original nodes, which carry the metadata; the rules before
        # this one leave the test's shape as it was
        path = bf16_gate(self, original_node)
        if path is None:
            return updated_node
        self.record(original_node.test, _MESSAGE)
        return updated_node.with_changes(test=_replaced(updated_node.test, path))


# -- what is a bf16 choice, what an Ampere test (for the rule and for device_guards) ------------
def _is_bf16(visitor, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value in BF16_WORDS
    return isinstance(node, (cst.Attribute, cst.Name)) and bool(qualified_names(visitor, node) & BF16_DTYPES)


def _assigns_bf16_only(visitor, block: cst.BaseSuite) -> bool:
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return False
    for statement in block.body:
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return False
        small = statement.body[0]
        if not (isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None
                and _is_bf16(visitor, small.value)):
            return False
    return True


def _called(visitor, node: cst.BaseExpression, names: frozenset) -> bool:
    return isinstance(node, cst.Call) and bool(qualified_names(visitor, node.func) & names)


def _is_ampere_test(visitor, node: cst.BaseExpression) -> bool:
    if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
        return False
    operator = type(node.comparisons[0].operator).__name__
    left, right = node.left, node.comparisons[0].comparator
    if isinstance(right, cst.Integer):
        first = (isinstance(left, cst.Subscript) and _called(visitor, left.value, CAPABILITY)
                 and len(left.slice) == 1 and isinstance(left.slice[0].slice, cst.Index)
                 and isinstance(left.slice[0].slice.value, cst.Integer) and left.slice[0].slice.value.value == "0")
        major = isinstance(left, cst.Attribute) and left.attr.value == "major" and _called(visitor, left.value, PROPERTIES)
        return (first or major) and (operator, right.value) in AMPERE_INTEGERS
    if isinstance(right, cst.Tuple) and _called(visitor, left, CAPABILITY):
        values = tuple(e.value.value if isinstance(e.value, cst.Integer) else None for e in right.elements)
        return (operator, values) in AMPERE_TUPLES
    return False


def _mentions_capability(visitor, node: cst.CSTNode) -> bool:
    return any(_called(visitor, call, CAPABILITY | PROPERTIES) for call in nodes_within(node, cst.Call))


def _ampere_path(visitor, test: cst.BaseExpression) -> Optional[Tuple[str, ...]]:
    """Where the one Ampere comparison of `test` stands ("left"/"right" steps down an `and`
    chain), or None where `test` is no such test."""
    if _is_ampere_test(visitor, test):
        return ()
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        left, right = _ampere_path(visitor, test.left), _ampere_path(visitor, test.right)
        if left is not None and right is None and not _mentions_capability(visitor, test.right):
            return ("left", *left)
        if right is not None and left is None and not _mentions_capability(visitor, test.left):
            return ("right", *right)
    return None


def bf16_gate(visitor, node: cst.CSTNode) -> Optional[Tuple[str, ...]]:
    """For an `if` or conditional expression that chooses bf16 on an Ampere test: where that
    test's comparison stands in node.test (see _ampere_path); None for anything else."""
    if isinstance(node, cst.IfExp) and _is_bf16(visitor, node.body):
        return _ampere_path(visitor, node.test)
    if isinstance(node, cst.If) and not isinstance(node.orelse, cst.If) and _assigns_bf16_only(visitor, node.body):
        return _ampere_path(visitor, node.test)
    return None


def gate_comparison(test: cst.BaseExpression, path: Tuple[str, ...]) -> cst.BaseExpression:
    for step in path:
        test = getattr(test, step)
    return test


def _replaced(test: cst.BaseExpression, path: Tuple[str, ...]) -> cst.BaseExpression:
    if not path:
        return cst.parse_expression(f"{BF16_SUPPORTED}()").with_changes(lpar=test.lpar, rpar=test.rpar)
    return test.with_changes(**{path[0]: _replaced(getattr(test, path[0]), path[1:])})


_MESSAGE = ("ask the NPU whether it computes in bf16 (torch_npu.npu.is_bf16_supported()) where the test asked for "
            "CUDA compute capability 8.0, the first with bf16 (NPUs have no compute capability)")
