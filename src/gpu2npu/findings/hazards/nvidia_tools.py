"""NVIDIA's command-line tools run from Python (NPU924): `subprocess.run(["nvidia-smi", ...])`,
`os.system("nvidia-smi -L")`, `os.popen("nvidia-smi --query-gpu=...")`, and a command the file
writes once under a name (`NVSMI = ["nvidia-smi", "-L"]; subprocess.run(NVSMI)`).  An Ascend machine has
none, and a program that runs one at module level stops at start.  A call made only after asking
whether the tool is there (`if shutil.which("nvidia-smi")`) is not reached there: a note."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional

from ...reading.scan.reading import caught_names
from ...records.change import Report
from ...records.finding_kinds import LEFT_ON_PURPOSE, NVIDIA_TOOLS
from .view import FileView

TOOLS = ("nvidia-smi",)
TRIGGERS = tuple(tool.encode() for tool in TOOLS)

# What runs a command: its first argument (a string, or a list whose first item is the program).
RUNNERS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                     "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.system",
                     "os.popen", "os.execvp", "os.execlp"})


def _program(node: ast.AST) -> Optional[str]:
    """The program a command names: the first word of a string, the first item of a list."""
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        node = node.elts[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split():
        return node.value.split()[0].rsplit("/", 1)[-1]
    return None


# What a `try` catches where a missing program is expected (FileNotFoundError is an OSError).
_CAUGHT = frozenset({"FileNotFoundError", "OSError", "Exception", "BaseException", "SubprocessError",
                     "CalledProcessError", "EnvironmentError"})


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view
        # calls in a `try` that expects the program may be missing (an environment report): no crash
        self.expected = {id(node) for statement in view.groups.get(ast.Try, ()) if caught_names(statement) & _CAUGHT
                         for part in statement.body for node in ast.walk(part) if isinstance(node, ast.Call)}
        # commands the file writes once under a name (`NVSMI = ["nvidia-smi", "-L"]`, `cmd = "nvidia-smi"`)
        assigned: Dict[str, List[ast.AST]] = {}
        for statement in view.groups.get(ast.Assign, ()):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(statement.value)
        self.commands = {name: values[0] for name, values in assigned.items()
                         if len(values) == 1 and _program(values[0]) is not None}

    def on_call(self, call: ast.Call) -> None:
        if not call.args or id(call) in self.expected or not self.view.qualified(call.func) & RUNNERS:
            return
        command = call.args[0]
        program = _program(self.commands.get(command.id, command) if isinstance(command, ast.Name) else command)
        if program not in TOOLS:
            return
        where = self.view.package_tests.question(call.lineno, call.end_lineno or call.lineno, program)
        if where:  # (`if shutil.which("nvidia-smi")`, or what follows `if not ...: return`)
            self.view.add(call, LEFT_ON_PURPOSE.code, Report.NOTE, program,
                          f"runs only {where}: {program} is not on an Ascend machine, so this is not reached there "
                          "and fails nothing; to ask the NPU: npu-smi info, or torch_npu.npu.get_device_name()")
        else:
            self.view.add(call, NVIDIA_TOOLS.code, Report.UNSUPPORTED, program,
                          f"{program} is not on an Ascend machine: this call fails there (FileNotFoundError, or "
                          "status 127 from a shell); ask the NPU with npu-smi info (other columns and format) or, "
                          "in Python, torch_npu.npu.mem_get_info() / memory_allocated() / get_device_name()")
