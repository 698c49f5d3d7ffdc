"""--backend nccl -> --backend hccl (and every option, variable or key naming a backend)."""
from __future__ import annotations

import re
from typing import ClassVar, FrozenSet

from ..records.change import Report
from .base import LineEdit, LineReport, ScriptExample, ScriptRule, option_values

# A name ending in "backend" (--dist-backend, --dist_backend, DIST_BACKEND, ddp.backend, backend:)
# given the value nccl: as `--name nccl`, `--name=nccl`, `NAME=nccl` or `name: nccl`, quoted or not.
PATTERN = re.compile(
    r"(?<![\w.-])(?P<name>(?:--?)?[\w.-]*backend)(?P<separator>\s*=\s*|:\s+|\s+)(?P<quote>['\"]?)"
    r"(?P<value>nccl)(?P=quote)(?![\w.-])",
    re.IGNORECASE,
)

KEPT_TIP = ("left as written: the program hands this option's value to a collective library other than "
            "torch's process groups (see its row in the Python file), which has no HCCL backend; on the NPU "
            "move the tensors with torch.distributed over 'hccl'")


class NcclBackendOption(ScriptRule):
    """HCCL is the collective communication library of Ascend NPUs, the counterpart of NCCL.

    The Python rule NPU104 makes the code ask for "hccl" (including argparse defaults and
    `if args.dist_backend == "nccl"` checks); a launch script that still passes
    `--dist-backend nccl` would undo that, so options, variables and YAML keys whose name ends in
    `backend` and whose value is `nccl` get `hccl`.  An option whose value the project's Python
    code hands to another collective library (Ray's collective groups, vLLM's NCCL communicator)
    keeps its `nccl` there, and so here: it is left and reported.
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

    # The options whose "nccl" the project's Python code leaves as written (its value goes to
    # Ray's collective groups or another library without HCCL), by destination: sync_backend.
    kept: ClassVar[FrozenSet[str]] = frozenset()

    @classmethod
    def for_project(cls, options):
        if not options.backend_options_kept:
            return cls
        return cls.with_settings(kept=frozenset(name.lower() for name in options.backend_options_kept))

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match in option_values(PATTERN, line, reports):
            if match.group("name").lstrip("-").replace("-", "_").lower() in cls.kept:
                reports.append(LineReport(Report.UNSUPPORTED, match.group(0), KEPT_TIP))
                continue
            value = match.group("value")
            new = "HCCL" if value.isupper() else "hccl"
            edits.append(LineEdit(match.start("value"), match.end("value"), new,
                                  f"change {match.group('name')} {value} to {new}"))
        return edits, reports
