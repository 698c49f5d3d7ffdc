"""-s/--specify-device: the NPU comes from DEVICE_ID at run time, set once per program."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from ..change import Operation
from .base import Example, Rule, SpecifyDeviceSettings, code_of
from .names import qualified_names
from .placement import insert_after_imports

SET_DEVICE = ("torch.cuda.set_device", "torch_npu.npu.set_device", "torch.npu.set_device")
COMMENT = ("# -s: this process runs on the NPU named by the DEVICE_ID environment variable (default 0).",)
SOURCE = 'torch_npu.npu.set_device(int(os.environ.get("DEVICE_ID", "0")))\n'


class DeviceFromEnvironment(Rule):
    """With `-s`, the NPU a process uses is chosen when it starts, from `DEVICE_ID` (default 0).

    Each file that starts a program (`if __name__ == "__main__":`; without any, the files at the
    top of the project) sets the device once, right after its imports.  Device expressions then
    name no index: `"cuda:1"` and `.to(1)` become `"npu"`, `.cuda(args.gpu, non_blocking=True)`
    becomes `.npu(non_blocking=True)` (keyword arguments are kept), and the script's own
    `torch.cuda.set_device(...)` statements go, as they would move the process elsewhere.
    """

    code = "NPU401"
    summary = "-s: set the NPU once from DEVICE_ID; device expressions use it"
    triggers = ()
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)
    examples = (
        Example(
            "import torch\n\ndef main(args):\n    torch.cuda.set_device(args.gpu)\n"
            "    x = batch.cuda(args.gpu, non_blocking=True)\n\nif __name__ == \"__main__\":\n    main(parse())\n",
            "import torch\nimport torch_npu\nimport os\n\n" + COMMENT[0] + "\n" + SOURCE
            + "\ndef main(args):\n    x = batch.npu(non_blocking=True)\n\nif __name__ == \"__main__\":\n    main(parse())\n",
            specify_device=SpecifyDeviceSettings(entry_files=frozenset({"example.py"})),
        ),
    )

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node):
        if len(original_node.body) != 1 or not isinstance(original_node.body[0], cst.Expr):
            return updated_node
        call = original_node.body[0].value
        if not (isinstance(call, cst.Call) and qualified_names(self, call.func) & set(SET_DEVICE)):
            return updated_node
        if "DEVICE_ID" in code_of(call):
            return updated_node  # already reads DEVICE_ID (a migrated file)
        self.record(original_node, "delete set_device(...): -s sets the NPU from DEVICE_ID at start-up",
                    Operation.DELETE)
        if any(line.comment is not None for line in original_node.leading_lines):
            return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=updated_node.leading_lines)
        return cst.RemoveFromParent()

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self.context.path not in self.context.options.specify_device.entry_files:
            return updated_node
        if "DEVICE_ID" in original_node.code:
            return updated_node  # the device is read from DEVICE_ID already
        return insert_after_imports(self, original_node, updated_node, SOURCE, COMMENT,
                                    "insert torch_npu.npu.set_device from DEVICE_ID (-s)")
