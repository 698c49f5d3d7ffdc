"""NCCL_* environment variables: renamed where HCCL reads the same setting, reported otherwise."""
from __future__ import annotations

import re
from typing import ClassVar, Dict

from ..knowledge import env_vars
from ..records.change import Report
from .base import LITERAL_TIP, LineEdit, LineReport, ScriptExample, ScriptRule, kept_variable

PATTERN = re.compile(r"(?<![\w])(?:TORCH_)?NCCL_[A-Z0-9_]+(?![\w])")

# What each variable becomes, or why it stays: the table of env_vars (shared with Python code).


class NcclEnvironment(ScriptRule):
    """NCCL reads `NCCL_*` environment variables; on Ascend the collectives run on HCCL, which
    reads `HCCL_*` ones.

    `NCCL_SOCKET_IFNAME` becomes `HCCL_SOCKET_IFNAME`, which takes the same values (interface
    name prefixes, `=eth0` for an exact name, `^` to exclude); `(TORCH_)NCCL_ASYNC_ERROR_HANDLING`
    and `(TORCH_)NCCL_BLOCKING_WAIT` become `HCCL_ASYNC_ERROR_HANDLING` / `HCCL_BLOCKING_WAIT`
    when the script gives them 0 or 1.  Every other NCCL variable (and those with other values)
    has no effect on Ascend and is reported with the closest HCCL or Ascend setting, if there is
    one (`NCCL_DEBUG`: Ascend logging).
    """

    code = "NPU504"
    summary = "launch scripts: NCCL_SOCKET_IFNAME, NCCL_ASYNC_ERROR_HANDLING=0|1... -> HCCL_*; other NCCL_* reported"
    triggers = ("NCCL_",)
    examples = (
        ScriptExample("export NCCL_SOCKET_IFNAME=eth0\n", "export HCCL_SOCKET_IFNAME=eth0\n"),
        ScriptExample("export NCCL_DEBUG=INFO\n", "export NCCL_DEBUG=INFO\n", reported=("NCCL_DEBUG",)),
        ScriptExample("export TORCH_NCCL_ASYNC_ERROR_HANDLING=1\n", "export HCCL_ASYNC_ERROR_HANDLING=1\n"),
        ScriptExample("export NCCL_ASYNC_ERROR_HANDLING=3\n", "export NCCL_ASYNC_ERROR_HANDLING=3\n",
                      reported=("NCCL_ASYNC_ERROR_HANDLING",)),
        ScriptExample("env:\n  NCCL_SOCKET_IFNAME: ib0\n", "env:\n  HCCL_SOCKET_IFNAME: ib0\n", path="job.yml"),
    )
    unchanged = ("export HCCL_SOCKET_IFNAME=eth0\n",)
    # The variables a file of the project reads and sets nowhere (Options.environment_reads).
    project_reads: ClassVar[Dict[str, str]] = {}

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match, name in ((m, m.group(0)) for m in PATTERN.finditer(line.code)):
            if line.in_literal(match.start()):
                reports.append(LineReport(Report.UNSUPPORTED, name, LITERAL_TIP))
                continue
            new_name, tip = env_vars.script_edit(name, line.code, match.end())
            if new_name is not None:
                edits.append(LineEdit(match.start(), match.end(), new_name, f"change {name} to {new_name}"))
            else:
                reports.append(kept_variable(name, tip, cls.project_reads))
        return edits, reports

    @classmethod
    def for_project(cls, options):
        return cls.with_settings(project_reads=dict(options.environment_reads)) if options.environment_reads else cls
