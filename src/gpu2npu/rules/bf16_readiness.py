"""A bf16 readiness test that also asks for a CUDA version: the version part goes."""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from .base import Example, Rule
from .names import qualified_names
from .walk import ParentNodeProvider

BF16_SUPPORT = ("torch.cuda.is_bf16_supported", "torch_npu.npu.is_bf16_supported")
CUDA_VERSION = "torch.version.cuda"
# What may stand beside torch.version.cuda in a test of its value: conversions and version parsers.
VERSION_HELPERS = frozenset({
    "builtins.int", "builtins.float", "builtins.str", "builtins.tuple", "builtins.map", "builtins.len", "builtins.None",
    "packaging.version.parse", "packaging.version.Version", "distutils.version.LooseVersion",
    "pkg_resources.parse_version", "looseversion.LooseVersion",
})


class _Roots(cst.CSTVisitor):
    """The names an expression reads, outermost name of each attribute chain."""

    def __init__(self) -> None:
        super().__init__()
        self.roots: List[cst.CSTNode] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        chain = node
        while isinstance(chain, cst.Attribute):
            chain = chain.value
        if isinstance(chain, cst.Name):
            self.roots.append(node)
            return False
        node.value.visit(self)  # `parse(v).release`: the call inside holds the names, `release` is none
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.roots.append(node)


class Bf16ReadinessWithoutCudaVersion(Rule):
    """`torch.version.cuda and torch.cuda.is_bf16_supported() and int(torch.version.cuda.split('.')[0]) >= 11`
    asks whether bf16 can be used: CUDA 11 brought bf16 to the GPU.  On an NPU machine
    `torch.version.cuda` is None, so the test is False (bf16 silently off) or raises while parsing
    None.  In an `and` chain that calls `is_bf16_supported()`, the operands that only test
    torch.version.cuda (its value, its parsed version) are dropped: what remains asks the NPU
    (`torch_npu.npu.is_bf16_supported()`) and whatever else the chain asked.  Any other use of
    torch.version.cuda is reported.
    """

    code = "NPU109"
    summary = "drop torch.version.cuda tests from a bf16 readiness check (None on the NPU)"
    triggers = ("is_bf16_supported",)
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "import torch\n"
            "bf16 = torch.version.cuda and torch.cuda.is_bf16_supported() and int(torch.version.cuda.split('.')[0]) >= 11\n",
            "import torch\nimport torch_npu\nbf16 = torch_npu.npu.is_bf16_supported()\n",
        ),
        Example(
            "import torch\nfrom packaging import version\nimport torch.distributed as dist\n"
            "bf16_ready = (\n    torch.version.cuda\n    and torch.cuda.is_bf16_supported()\n"
            "    and version.parse(torch.version.cuda).release >= (11, 0)\n    and dist.is_initialized()\n)\n",
            "import torch\nimport torch_npu\nfrom packaging import version\nimport torch.distributed as dist\n"
            "bf16_ready = (\n    torch_npu.npu.is_bf16_supported()\n    and dist.is_initialized()\n)\n",
        ),
    )
    unchanged = (
        # no bf16 question: the CUDA version is wanted for itself (reported)
        "import torch\nnew_cuda = torch.version.cuda and int(torch.version.cuda.split('.')[0]) >= 12\n",
        # `or`: what the version test decides cannot be dropped
        "import torch\nok = torch.version.cuda is None or torch.cuda.is_bf16_supported()\n",
        # the version operand reads something else too
        "import torch\nok = torch.cuda.is_bf16_supported() and torch.version.cuda >= min_cuda\n",
    )

    def _operands(self, node: cst.BaseExpression) -> Optional[List[Tuple[Optional[cst.And], cst.BaseExpression]]]:
        """The operands of an unparenthesized `and` chain, each with the operator before it."""
        if not (isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And)):
            return None
        left = node.left
        if isinstance(left, cst.BooleanOperation) and isinstance(left.operator, cst.And) and not left.lpar:
            operands = self._operands(left)
        else:
            operands = [(None, left)]
        return operands + [(node.operator, node.right)]

    def _asks_bf16(self, operand: cst.BaseExpression) -> bool:
        return (isinstance(operand, cst.Call)
                and any(name in BF16_SUPPORT for name in qualified_names(self, operand.func)))

    def _tests_cuda_version_only(self, operand: cst.BaseExpression) -> bool:
        roots = _Roots()
        operand.visit(roots)
        mentions = False
        for root in roots.roots:
            names = qualified_names(self, root)
            if any(name == CUDA_VERSION or name.startswith(CUDA_VERSION + ".") for name in names):
                mentions = True
            elif not names & VERSION_HELPERS:
                return False
        return mentions

    def leave_BooleanOperation(self, original_node: cst.BooleanOperation, updated_node: cst.BooleanOperation):
        parent = self.get_metadata(ParentNodeProvider, original_node, None)
        if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And) and not original_node.lpar:
            return updated_node  # the whole chain is judged where it ends
        originals = self._operands(original_node)
        updated = self._operands(updated_node)
        if originals is None or updated is None or len(originals) != len(updated):
            return updated_node
        if not any(self._asks_bf16(operand) for _, operand in originals):
            return updated_node
        keep = [not self._tests_cuda_version_only(operand) for _, operand in originals]
        if all(keep):
            return updated_node
        kept = [(operator, operand) for (operator, operand), wanted in zip(updated, keep) if wanted]
        result = kept[0][1]  # the first operand kept has no operator before it, whichever it was
        for operator, operand in kept[1:]:
            result = cst.BooleanOperation(left=result, operator=operator, right=operand)
        self.record(original_node, "remove the torch.version.cuda test from the bf16 check "
                    "(torch.version.cuda is None on the NPU; is_bf16_supported() answers there)")
        # the chain's parentheses stay around what is left of it (and the operand's own inside)
        return result.with_changes(lpar=[*updated_node.lpar, *result.lpar], rpar=[*result.rpar, *updated_node.rpar])
