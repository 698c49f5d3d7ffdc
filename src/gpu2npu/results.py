"""What the migration of one file gives back (`FileResult`), read by every command.

Apart from the pipeline that makes it (and from libcst) so that a run whose results all come
from the cache imports neither.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional

from .change import Change, Finding


class Status(str, enum.Enum):
    MIGRATED = "migrated"  # changed
    UNCHANGED = "unchanged"  # parsed, nothing to change
    SKIPPED = "skipped"  # nothing relevant in it, not parsed
    FAILED = "failed"  # could not be decoded or parsed: copied as it is


@dataclass
class FileResult:
    path: str
    status: Status
    output: Optional[bytes] = None  # None: the output is the input, byte for byte
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    error: str = ""


# Set by the command's signal handlers (Ctrl-C, SIGTERM) before they raise: an interrupt that
# arrives inside a C-level lookup (a dict probing a node's __eq__) is swallowed there and
# surfaces as an unrelated error, which must end the run, not fail one file.
pending_interrupt: Optional[BaseException] = None
