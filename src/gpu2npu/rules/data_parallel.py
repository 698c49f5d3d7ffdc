"""torch.nn.DataParallel -> a single-NPU stand-in that keeps `.module` and checkpoint keys."""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import PositionProvider

from .base import Example, Rule, code_of
from .names import qualified_names
from .placement import after_imports, bound_names, line_before, module_names, pair_with_originals

DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}
WRAPPER = "SingleNpuDataParallel"

WRAPPER_SOURCE = '''
class {name}({base}):
    """torch.nn.DataParallel does not run on Ascend NPUs; on one NPU it only has to call the
    wrapped model.  Subclassing it keeps `.module`, the "module."-prefixed state_dict keys of
    existing checkpoints and isinstance checks working.  For several NPUs use
    `gpu2npu ... distributed`, which converts the script to DistributedDataParallel."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super({base}, self).__init__()
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
'''


class DataParallelToSingleNpu(Rule):
    """`DataParallel` is not supported on Ascend (seeds 001/002: use DDP).  On a single card the
    model is wrapped instead in a small subclass defined once in the file, which calls the model
    directly: `model.module`, `isinstance(model, nn.DataParallel)` and the "module." prefix of
    saved state_dict keys all keep working, so old checkpoints still load.  Multi-card runs come
    from the `distributed` command.
    """

    code = "NPU202"
    summary = "nn.DataParallel(model) -> single-NPU wrapper keeping .module and checkpoint keys"
    triggers = ("DataParallel",)
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nfrom torch import nn\n\nmodel = nn.DataParallel(model).cuda()\n",
            "import torch\nimport torch_npu\nfrom torch import nn\n\n"
            + WRAPPER_SOURCE.format(name=WRAPPER, base="nn.DataParallel")
            + "\nmodel = SingleNpuDataParallel(model).npu()\n",
        ),
    )
    unchanged = (
        "import torch\nfrom torch import nn\nif isinstance(model, nn.DataParallel):\n    model = model.module\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._base: Optional[cst.BaseExpression] = None
        self._module_names = set()

    def visit_Module(self, node: cst.Module) -> None:
        self._module_names = module_names(node.body)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not (qualified_names(self, original_node.func) & DATA_PARALLEL):
            return updated_node
        root = original_node.func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or root.value not in self._module_names:
            return updated_node  # bound by a local import: the analysis reports it
        if self._base is None:
            self._base = original_node.func
        self.record(original_node, f"change {code_of(original_node.func)} to {WRAPPER} (DataParallel is not supported on NPU)")
        self.context.needs_torch_npu = True
        return updated_node.with_changes(func=cst.Name(WRAPPER))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self._base is None:
            return updated_node
        base_code = code_of(self._base)
        root = base_code.split(".")[0]
        body = list(updated_node.body)
        index = after_imports(body)
        for position, statement in enumerate(body):
            if root in bound_names(statement):
                index = max(index, position + 1)
        # The docstring's line breaks are inside one token, which libcst writes as it is: they
        # must already be the file's own (CRLF files stay CRLF throughout).
        source = WRAPPER_SOURCE.format(name=WRAPPER, base=base_code).replace("\n", updated_node.default_newline)
        class_def = cst.parse_module(source, config=updated_node.config_for_parsing).body[0]
        class_def = class_def.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        pairs = pair_with_originals(body, original_node.body, self.context.inserted, self.context.removed)
        anchor = line_before(pairs, index, self.lines_of, len(original_node.header))
        body.insert(index, class_def)
        self.context.inserted.add(class_def)
        self.record_insert(anchor, f"insert class {WRAPPER}({base_code}) for single-NPU runs")
        return updated_node.with_changes(body=body)
