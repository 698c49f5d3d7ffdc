"""distributed: only the first process writes checkpoints."""
from __future__ import annotations

from typing import List

import libcst as cst
from libcst.metadata import PositionProvider

from .base import DistributedSettings, Example, Rule
from .names import qualified_names

GUARD = "torch.distributed.get_rank() == 0"


class SaveOnRankZero(Rule):
    """Every process holds the same weights after a step, so one copy is enough, and several
    processes writing one file at once can leave it corrupt.  A `torch.save(...)` statement
    becomes `if torch.distributed.get_rank() == 0: torch.save(...)` (the Ascend imagenet multi-card guide, step 12, does the
    same with its own rank test).  Only when gpu2npu adds the process group: a script that
    initialises one itself is trusted to choose who saves.
    """

    code = "NPU305"
    summary = "distributed: torch.save(...) only on rank 0"
    triggers = ("save",)
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nmodel = Net()\ntorch.save(model.state_dict(), 'last.pt')\n",
            "import torch\nimport torch_npu\nmodel = Net()\nmodel = model.npu()\n"
            "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch_npu.npu.current_device()])\n"
            "if torch.distributed.get_rank() == 0:\n    torch.save(model.module.state_dict(), 'last.pt')\n",
            distributed=DistributedSettings(main_file="example.py", project_initialises=True, guard_saves=True),
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.active = context.options.distributed.guard_saves
        self._conditions: List[str] = []

    def visit_If(self, node: cst.If) -> None:
        self._conditions.append(cst.Module(body=()).code_for_node(node.test))

    def leave_If(self, original_node, updated_node):
        self._conditions.pop()
        return updated_node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node):
        if not self.active or len(original_node.body) != 1 or not isinstance(original_node.body[0], cst.Expr):
            return updated_node
        call = original_node.body[0].value
        if not (isinstance(call, cst.Call) and "torch.save" in qualified_names(self, call.func)):
            return updated_node
        if any("rank" in condition for condition in self._conditions):
            return updated_node  # already decided who saves
        start, _ = self.lines_of(original_node)
        self.record_insert(start - 1, f"insert `if {GUARD}:` (every process holds the same weights)")
        self.record(original_node, "indent torch.save(...) under the rank-0 guard")
        guarded = cst.If(
            test=cst.parse_expression(GUARD),
            body=cst.IndentedBlock(body=[updated_node.with_changes(leading_lines=())]),
            leading_lines=updated_node.leading_lines,
        )
        return guarded
