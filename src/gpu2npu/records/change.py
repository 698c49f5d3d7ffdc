"""The records that rules produce and reports render.

A rule never prints or writes: it returns a new tree plus `Change` records (one per edit) and the
analysis returns `Finding` records (one per thing a human must look at).  Line numbers are always
those of the *original* input file, so that a reader can find every row in the code they wrote.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Operation(str, enum.Enum):
    """The incumbent's operation types (the `Operation Type` column of change_list.csv)."""

    MODIFY = "MODIFY"
    INSERT = "INSERT"
    DELETE = "DELETE"


class Report(str, enum.Enum):
    """Which report a finding belongs in."""

    UNSUPPORTED = "unsupported"  # unsupported_api.csv: exists on CUDA, not on NPU for this version
    UNKNOWN = "unknown"  # unknown_api.csv: NPU support cannot be decided from the data
    PERFORMANCE = "performance"  # api_performance_advice.csv: runs, but a human should decide
    AFFINITY = "affinity"  # affinity_api_call.csv: a torch_npu fused API can replace this code
    NOTE = "note"  # the run log only: left unchanged on purpose, no action needed


@dataclass(frozen=True, order=True)
class Change:
    """One edit, as a change_list.csv row.

    For INSERT rows `start_line == end_line` is the original line after which the new lines stand
    (0 = before the first line); for MODIFY/DELETE rows it is the span of original lines edited.
    """

    file: str
    start_line: int
    end_line: int
    operation: Operation
    rule: str
    message: str
    # What the edit wrote (the changed part of the node it rewrote, whole words): not a report
    # column; the tests check that it is in the output at the row's lines, so that no edit is
    # claimed that a later edit of the same code undid.
    wrote: str = field(default="", compare=False)


@dataclass(frozen=True, order=True)
class Finding:
    """Something left for a human (or deliberately left alone), as a report row."""

    file: str
    start_line: int
    end_line: int
    report: Report
    api: str
    tip: str
    rule: str = ""
    # Advice only: the kind of code found (the incumbent's Api Type: torch, special, class,
    # function...) and the torch_npu API that can replace it.
    api_type: str = ""
    replacement: str = ""
