"""CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES in launch scripts."""
from __future__ import annotations

from ..records.change import Report
import re

from .base import LITERAL_TIP, LineEdit, LineReport, ScriptExample, ScriptRule, code_matches

CUDA_VARIABLE = "CUDA_VISIBLE_DEVICES"
NPU_VARIABLE = "ASCEND_RT_VISIBLE_DEVICES"
# A variable name: `$`, `-` (a Makefile recipe prefix) or punctuation may stand before it.
PATTERN = re.compile(rf"(?<!\w){CUDA_VARIABLE}(?!\w)")


class VisibleDevicesVariable(ScriptRule):
    """Ascend's runtime reads `ASCEND_RT_VISIBLE_DEVICES` to restrict the devices a process sees,
    with the same comma-separated list of indices.

    Every mention of `CUDA_VISIBLE_DEVICES` in code names the Ascend variable instead: an
    assignment before a command, `export`, an expansion (`"$CUDA_VISIBLE_DEVICES"`), a Makefile
    variable, a YAML `env:` entry.  Comments are left alone; inside single quotes and
    here-documents the name is reported, not changed.
    """

    code = "NPU501"
    summary = "launch scripts: CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES"
    triggers = (CUDA_VARIABLE,)
    examples = (
        ScriptExample(
            "CUDA_VISIBLE_DEVICES=0,1 python train.py\n",
            "ASCEND_RT_VISIBLE_DEVICES=0,1 python train.py\n",
        ),
        ScriptExample(
            'export CUDA_VISIBLE_DEVICES=3  # the free card\necho "using $CUDA_VISIBLE_DEVICES"\n',
            'export ASCEND_RT_VISIBLE_DEVICES=3  # the free card\necho "using $ASCEND_RT_VISIBLE_DEVICES"\n',
        ),
        ScriptExample(
            "train:\n\tCUDA_VISIBLE_DEVICES=$(GPUS) python train.py\n",
            "train:\n\tASCEND_RT_VISIBLE_DEVICES=$(GPUS) python train.py\n",
            path="Makefile",
        ),
        ScriptExample(
            "env:\n  - name: CUDA_VISIBLE_DEVICES\n    value: \"0\"\n",
            "env:\n  - name: ASCEND_RT_VISIBLE_DEVICES\n    value: \"0\"\n",
            path="job.yaml",
        ),
        ScriptExample(
            "python -c 'import os; print(os.environ[\"CUDA_VISIBLE_DEVICES\"])'\n",
            "python -c 'import os; print(os.environ[\"CUDA_VISIBLE_DEVICES\"])'\n",
            reported=(CUDA_VARIABLE,),
        ),
    )
    unchanged = ("# set CUDA_VISIBLE_DEVICES before running\n", "export MY_CUDA_VISIBLE_DEVICES_BACKUP=1\n")

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match, literal in code_matches(PATTERN, line):
            if literal:
                reports.append(LineReport(Report.UNKNOWN, CUDA_VARIABLE, LITERAL_TIP))
            else:
                edits.append(LineEdit(match.start(), match.end(), NPU_VARIABLE,
                                      f"change {CUDA_VARIABLE} to {NPU_VARIABLE}"))
        return edits, reports
