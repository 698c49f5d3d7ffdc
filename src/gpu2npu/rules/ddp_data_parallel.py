"""distributed: DataParallel wrapping is removed; the model is wrapped in DDP instead."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from .base import DistributedSettings, Example, Rule, code_of
from .data_parallel import DATA_PARALLEL
from .names import qualified_names
from .placement import record_removal, remove_statement


class DataParallelRemoved(Rule):
    """Under `distributed`, one process drives one NPU and the model is wrapped in
    DistributedDataParallel (WrapModelInDdp), so `nn.DataParallel(model, ...)` becomes just
    `model`.  DDP has `.module` too, so code that reaches through `model.module` keeps working.
    """

    code = "NPU302"
    summary = "distributed: nn.DataParallel(model) -> model (wrapped in DDP instead)"
    triggers = ("DataParallel",)
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nfrom torch import nn\nmodel = nn.DataParallel(model).cuda()\n"
            "model.features = nn.DataParallel(model.features)\n",
            "import torch\nimport torch_npu\nfrom torch import nn\nmodel = model.npu()\n",
            distributed=DistributedSettings(main_file="example.py", project_initialises=True),
        ),
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._edits_before_statement = len(self.edits)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        """`model.features = DataParallel(model.features)` would become a self-assignment: the
        statement goes instead (libcst writes `pass` if a block would be left empty)."""
        if len(self.edits) == getattr(self, "_edits_before_statement", len(self.edits)):
            return updated_node
        small = updated_node.body[0] if len(updated_node.body) == 1 else None
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
            return updated_node
        if code_of(small.targets[0].target) != code_of(small.value):
            return updated_node
        del self.edits[self._edits_before_statement:]
        record_removal(self, original_node, f"delete {code_of(small.targets[0].target)} = DataParallel(...): one process per NPU")
        return remove_statement(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not (qualified_names(self, original_node.func) & DATA_PARALLEL):
            return updated_node
        if not updated_node.args or updated_node.args[0].keyword is not None:
            return updated_node
        module = updated_node.args[0].value
        self.record(original_node, f"remove {code_of(original_node.func)}: one process per NPU, DDP wraps the model")
        return module.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar) if updated_node.lpar else module
