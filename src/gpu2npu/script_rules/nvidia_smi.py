"""nvidia-smi -> npu-smi info, where the command is run on its own."""
from __future__ import annotations

import re

from ..records.change import Report
from .base import LITERAL_TIP, LineEdit, LineReport, ScriptExample, ScriptRule, in_command_position

# `-` may stand before it (a Makefile recipe's ignore-errors prefix); whether it is the command
# run is decided by `in_command_position`.
PATTERN = re.compile(r"(?<![\w.])((?:[\w.~-]*/)+)?nvidia-smi(?![\w-])")
# What may follow a command that runs with no arguments and writes to the terminal or a file.
# A closing quote, bracket or comma ends a YAML scalar (`- run: 'nvidia-smi'`, `[nvidia-smi]`).
ENDS_COMMAND = re.compile(r"\s*($|;|&&|\|\||&(?!&)|\)|`|\}|>|2>|[\"'\],])")
PIPED = re.compile(r"\s*\|(?!\|)")
QUERY_TIP = ("no npu-smi equivalent for this form: npu-smi info -t <type> -i <npu id> queries one value "
             "(e.g. -t usages for memory and utilisation), with a different output format")
PIPE_TIP = "piped into another program: npu-smi info prints a different table, so the consumer needs adapting"
PATH_TIP = "run by its path: use npu-smi info (installed with the Ascend driver) instead"
MENTION_TIP = "names nvidia-smi without running it (e.g. which/echo): use npu-smi on Ascend machines"


class NvidiaSmiToNpuSmi(ScriptRule):
    """`npu-smi info` is the Ascend counterpart of `nvidia-smi`: a table of the devices, their
    health, memory and the processes using them.

    Only the plain command is rewritten, where it is run on its own (first on its line, after a
    separator or after `watch`/`sudo`/`time`), writing to the terminal or a file.  Forms whose
    output is read by a program have no equivalent with the same output and are reported:
    `nvidia-smi --query-gpu=... --format=csv`, `nvidia-smi -L`, `nvidia-smi | grep ...`.
    """

    code = "NPU502"
    summary = "launch scripts: nvidia-smi -> npu-smi info (queries and pipelines reported)"
    triggers = ("nvidia-smi",)
    examples = (
        ScriptExample("nvidia-smi\nwatch -n 1 nvidia-smi\n", "npu-smi info\nwatch -n 1 npu-smi info\n"),
        ScriptExample("nvidia-smi > gpu_state.txt && python train.py\n", "npu-smi info > gpu_state.txt && python train.py\n"),
        ScriptExample(
            "FREE=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader)\n",
            "FREE=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader)\n",
            reported=("nvidia-smi --query-gpu=memory.free --format=csv,noheader",),
        ),
        ScriptExample(
            "nvidia-smi | grep MiB\n",
            "nvidia-smi | grep MiB\n",
            reported=("nvidia-smi",),
        ),
    )
    unchanged = ("# check nvidia-smi first\n", "pip install nvidia-smi-exporter\n")

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match in PATTERN.finditer(line.code):
            rest = line.code[match.end():]
            if line.in_literal(match.start()):
                reports.append(LineReport(Report.UNSUPPORTED, "nvidia-smi", LITERAL_TIP))
            elif not in_command_position(line, match.start(), dialect):
                reports.append(LineReport(Report.UNSUPPORTED, "nvidia-smi", MENTION_TIP))
            elif match.group(1) is None and ENDS_COMMAND.match(rest):
                edits.append(LineEdit(match.start(), match.end(), "npu-smi info", "change nvidia-smi to npu-smi info"))
            elif match.group(1) is not None:
                reports.append(LineReport(Report.UNSUPPORTED, match.group(0), PATH_TIP))
            elif PIPED.match(rest):
                reports.append(LineReport(Report.UNSUPPORTED, "nvidia-smi", PIPE_TIP))
            else:
                arguments = re.match(r"[^;&|)`]*", rest).group(0).rstrip()
                reports.append(LineReport(Report.UNSUPPORTED, f"nvidia-smi{arguments}", QUERY_TIP))
        return edits, reports
