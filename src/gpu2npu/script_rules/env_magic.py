"""Notebooks: %env CUDA_VISIBLE_DEVICES=0 -> %env ASCEND_RT_VISIBLE_DEVICES=0."""
from __future__ import annotations

import re

from .base import LineEdit, ScriptExample, ScriptRule
from .visible_devices import CUDA_VARIABLE, NPU_VARIABLE

# `%env NAME=value`, `%env NAME value`, `%env NAME` (read it) and `%set_env NAME value`.
PATTERN = re.compile(rf"^\s*%(env|set_env)\s+(?P<name>{CUDA_VARIABLE})(?![\w])")


class EnvMagicVisibleDevices(ScriptRule):
    """IPython's `%env` and `%set_env` magics set environment variables of the kernel process, as
    `os.environ` does; torch reads them when the device is first used.

    `%env CUDA_VISIBLE_DEVICES=...` names `ASCEND_RT_VISIBLE_DEVICES`, the variable the Ascend
    runtime reads.  The other variables of an `%env` line (NCCL_*, CUDA_*) are handled by the
    launch-script rules (NPU504, NPU590).
    """

    code = "NPU601"
    summary = "notebooks: %env CUDA_VISIBLE_DEVICES=... -> %env ASCEND_RT_VISIBLE_DEVICES=..."
    triggers = (CUDA_VARIABLE,)
    examples = (
        ScriptExample("%env CUDA_VISIBLE_DEVICES=0\nimport torch\n",
                      "%env ASCEND_RT_VISIBLE_DEVICES=0\nimport torch\n", path="example.ipynb"),
        ScriptExample("%set_env CUDA_VISIBLE_DEVICES 1\n", "%set_env ASCEND_RT_VISIBLE_DEVICES 1\n", path="example.ipynb"),
    )
    unchanged = ("%env\n",)

    @classmethod
    def apply(cls, line, dialect):
        match = PATTERN.match(line.text)
        if match is None:
            return [], []
        return [LineEdit(match.start("name"), match.end("name"), NPU_VARIABLE,
                         f"change {CUDA_VARIABLE} to {NPU_VARIABLE} in %{match.group(1)}")], []
