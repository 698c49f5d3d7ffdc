"""NCCL_* environment variables: renamed where HCCL reads the same setting, reported otherwise."""
from __future__ import annotations

import re

from ..change import Report
from .base import LITERAL_TIP, LineEdit, LineReport, ScriptExample, ScriptRule

PATTERN = re.compile(r"(?<![\w])(?:TORCH_)?NCCL_[A-Z0-9_]+(?![\w])")

# Same meaning and value syntax (interface name prefixes, `=name` exact, `^` exclusion).
RENAMED = {"NCCL_SOCKET_IFNAME": "HCCL_SOCKET_IFNAME"}

LOG_TIP = ("no HCCL equivalent: Ascend logging is set with ASCEND_GLOBAL_LOG_LEVEL (0 debug, 1 info, "
           "2 warning, 3 error) and ASCEND_SLOG_PRINT_TO_STDOUT=1")
TIPS = {
    "NCCL_DEBUG": LOG_TIP,
    "NCCL_DEBUG_SUBSYS": LOG_TIP,
    "NCCL_DEBUG_FILE": LOG_TIP,
    "NCCL_ASYNC_ERROR_HANDLING": "torch_npu reads HCCL_ASYNC_ERROR_HANDLING: check the modes of your release before setting it",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "torch_npu reads HCCL_ASYNC_ERROR_HANDLING: check the modes of your release before setting it",
    "NCCL_BLOCKING_WAIT": "torch_npu reads HCCL_BLOCKING_WAIT",
    "TORCH_NCCL_BLOCKING_WAIT": "torch_npu reads HCCL_BLOCKING_WAIT",
}
GENERIC_TIP = "NCCL setting: no effect on Ascend; HCCL has its own HCCL_* environment variables (see the CANN documentation)"


class NcclEnvironment(ScriptRule):
    """NCCL reads `NCCL_*` environment variables; on Ascend the collectives run on HCCL, which
    reads `HCCL_*` ones.

    `NCCL_SOCKET_IFNAME` becomes `HCCL_SOCKET_IFNAME`, which takes the same values (interface
    name prefixes, `=eth0` for an exact name, `^` to exclude).  Every other NCCL variable has no
    effect on Ascend and is reported with the closest HCCL or Ascend setting, if there is one
    (`NCCL_DEBUG`: Ascend logging; `NCCL_ASYNC_ERROR_HANDLING`: HCCL_ASYNC_ERROR_HANDLING).
    """

    code = "NPU504"
    summary = "launch scripts: NCCL_SOCKET_IFNAME -> HCCL_SOCKET_IFNAME; other NCCL_* variables reported"
    triggers = ("NCCL_",)
    examples = (
        ScriptExample("export NCCL_SOCKET_IFNAME=eth0\n", "export HCCL_SOCKET_IFNAME=eth0\n"),
        ScriptExample("export NCCL_DEBUG=INFO\n", "export NCCL_DEBUG=INFO\n", reported=("NCCL_DEBUG",)),
        ScriptExample("env:\n  NCCL_SOCKET_IFNAME: ib0\n", "env:\n  HCCL_SOCKET_IFNAME: ib0\n", path="job.yml"),
    )
    unchanged = ("export HCCL_SOCKET_IFNAME=eth0\n",)

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match, name in ((m, m.group(0)) for m in PATTERN.finditer(line.code)):
            if line.in_literal(match.start()):
                reports.append(LineReport(Report.UNSUPPORTED, name, LITERAL_TIP))
            elif name in RENAMED:
                edits.append(LineEdit(match.start(), match.end(), RENAMED[name], f"change {name} to {RENAMED[name]}"))
            else:
                reports.append(LineReport(Report.UNSUPPORTED, name, TIPS.get(name, GENERIC_TIP)))
        return edits, reports
