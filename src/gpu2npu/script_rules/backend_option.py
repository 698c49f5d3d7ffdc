"""--backend nccl -> --backend hccl (and every option, variable or key naming a backend)."""
from __future__ import annotations

import re

from ..records.change import Report
from .base import LITERAL_TIP, LineEdit, LineReport, ScriptExample, ScriptRule, option_syntax

# A name ending in "backend" (--dist-backend, --dist_backend, DIST_BACKEND, ddp.backend, backend:)
# given the value nccl: as `--name nccl`, `--name=nccl`, `NAME=nccl` or `name: nccl`, quoted or not.
PATTERN = re.compile(
    r"(?<![\w.-])(?P<name>(?:--?)?[\w.-]*backend)(?P<separator>\s*=\s*|:\s+|\s+)(?P<quote>['\"]?)"
    r"(?P<value>nccl)(?P=quote)(?![\w.-])",
    re.IGNORECASE,
)


class NcclBackendOption(ScriptRule):
    """HCCL is the collective communication library of Ascend NPUs, the counterpart of NCCL.

    The Python rule NPU104 makes the code ask for "hccl" (including argparse defaults and
    `if args.dist_backend == "nccl"` checks); a launch script that still passes
    `--dist-backend nccl` would undo that, so options, variables and YAML keys whose name ends in
    `backend` and whose value is `nccl` get `hccl`.
    """

    code = "NPU503"
    summary = "launch scripts: --backend/--dist-backend/--dist_backend nccl -> hccl"
    triggers = ("nccl", "NCCL")
    examples = (
        ScriptExample(
            "torchrun --nproc_per_node=8 train.py --dist-backend nccl\n",
            "torchrun --nproc_per_node=8 train.py --dist-backend hccl\n",
        ),
        ScriptExample(
            "python main.py --dist_backend='nccl' --multiprocessing-distributed\nBACKEND=nccl\n",
            "python main.py --dist_backend='hccl' --multiprocessing-distributed\nBACKEND=hccl\n",
        ),
        ScriptExample("distributed:\n  backend: nccl\n", "distributed:\n  backend: hccl\n", path="config.yaml"),
    )
    unchanged = ("python train.py --backend gloo\n", "# --backend nccl is the default\n")

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match in PATTERN.finditer(line.code):
            if not option_syntax(match):
                continue  # `--backend: nccl` is nothing we know
            if line.in_literal(match.start()):
                reports.append(LineReport(Report.UNSUPPORTED, match.group(0), LITERAL_TIP))
                continue
            value = match.group("value")
            new = "HCCL" if value.isupper() else "hccl"
            edits.append(LineEdit(match.start("value"), match.end("value"), new,
                                  f"change {match.group('name')} {value} to {new}"))
        return edits, reports
