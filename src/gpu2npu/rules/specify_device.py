"""-s/--specify-device: the NPU comes from DEVICE_ID at run time, set once per program."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from .base import Example, Rule, SpecifyDeviceSettings, code_of
from .names import qualified_names
from .placement import insert_after_imports, is_main_guard, module_names, pair_with_originals, record_removal, remove_statement

SET_DEVICE = ("torch.cuda.set_device", "torch_npu.npu.set_device", "torch.npu.set_device")
COMMENT = ("# -s: this process runs on the NPU named by the DEVICE_ID environment variable (default 0).",)
SOURCE = 'torch_npu.npu.set_device(int(os.environ.get("DEVICE_ID", "0")))\n'


class DeviceFromEnvironment(Rule):
    """With `-s`, the NPU a process uses is chosen when it starts, from `DEVICE_ID` (default 0).

    Each file that starts a program sets the device once, as the first statement of its
    `if __name__ == "__main__":` block (after the module's own top-level code, which may set
    ASCEND_RT_VISIBLE_DEVICES); a project without such a block sets it after the imports of
    the files at its top.  Device expressions then
    name no index: `"cuda:1"` and `.to(1)` become `"npu"`, `.cuda(args.gpu, non_blocking=True)`
    becomes `.npu(non_blocking=True)` (keyword arguments are kept), and the script's own
    `torch.cuda.set_device(...)` statements go, as they would move the process elsewhere.  In a
    file that does not start the program (a training module driven from elsewhere) such a
    statement instead sets the NPU from DEVICE_ID, so that no program loses its device selection.
    A `__main__` block that uses no device (data preparation) is no place to set it.
    """

    code = "NPU401"
    summary = "-s: set the NPU once from DEVICE_ID; device expressions use it"
    triggers = ()
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\n\ndef main(args):\n    torch.cuda.set_device(args.gpu)\n"
            "    x = batch.cuda(args.gpu, non_blocking=True)\n\nif __name__ == \"__main__\":\n    main(parse())\n",
            "import torch\nimport torch_npu\nimport os\n\ndef main(args):\n    x = batch.npu(non_blocking=True)\n\n"
            "if __name__ == \"__main__\":\n    " + COMMENT[0] + "\n    " + SOURCE + "    main(parse())\n",
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
        if self.context.path not in self.context.options.specify_device.entry_files:
            # Not a file where the program starts (or one -s does not know as such): the
            # selection stays here, from DEVICE_ID, so that the program never loses it.
            self.record(original_node, "set the NPU from DEVICE_ID instead of the script's index (-s)")
            self.context.needs_torch_npu = True
            self._needs_os = True
            return updated_node.with_changes(body=[cst.Expr(cst.parse_expression(SOURCE.strip()))])
        record_removal(self, original_node, "delete set_device(...): -s sets the NPU from DEVICE_ID at start-up")
        return remove_statement(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self.context.path not in self.context.options.specify_device.entry_files:
            if getattr(self, "_needs_os", False) and "os" not in module_names(updated_node.body):
                return insert_after_imports(self, original_node, updated_node, "import os\n", (), "insert import os",
                                            needs=())
            return updated_node
        if "DEVICE_ID" in original_node.code:
            return updated_node  # the device is read from DEVICE_ID already
        pairs = pair_with_originals(updated_node.body, original_node.body, self.context.inserted, self.context.removed)
        guard = next((index for index, (statement, original) in enumerate(pairs)
                      if original is not None and is_main_guard(statement)), None)
        if guard is None:
            return insert_after_imports(self, original_node, updated_node, SOURCE, COMMENT,
                                        "insert torch_npu.npu.set_device from DEVICE_ID (-s)", needs=("os",))
        # First thing when the program starts, after the module's own top-level code (which may
        # set ASCEND_RT_VISIBLE_DEVICES, read before the device is opened).
        statement, original = pairs[guard]
        call = cst.parse_statement(SOURCE).with_changes(
            leading_lines=[cst.EmptyLine(indent=True, comment=cst.Comment(line)) for line in COMMENT]
        )
        self.context.inserted.add(call)
        block = statement.body.with_changes(body=(call, *statement.body.body))
        body = list(updated_node.body)
        body[guard] = statement.with_changes(body=block)
        self.record_insert(self.lines_of(original)[0], "insert torch_npu.npu.set_device from DEVICE_ID (-s)")
        self.context.needs_torch_npu = True
        module = updated_node.with_changes(body=body)
        if "os" not in module_names(body):
            module = insert_after_imports(self, original_node, module, "import os\n", (), "insert import os", needs=())
        return module

