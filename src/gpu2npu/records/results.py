"""What the migration of one file gives back (`FileResult`), read by every command.

Apart from the pipeline that makes it (and from libcst) so that a run whose results all come
from the cache imports neither.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import List, Optional

from .change import Change, Finding, Report
from .finding_kinds import NOT_MIGRATED, NOT_MIGRATED_API


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
    # the file's `# gpu2npu: ignore` comments (suppressions.Suppression), which `check` applies
    suppressions: tuple = ()


# How a NotMigrated row's tip begins; the reason follows.
COPIED_UNCHANGED = "copied unchanged: "


def not_migrated_row(path: str, error: str) -> Finding:
    """The row of a file that could not be processed (unsupported_api.csv, an error of `check`),
    at the line its reason names."""
    line = re.search(r"\bline (\d+)", error)
    number = int(line.group(1)) if line else 1
    return Finding(path, number, number, Report.UNSUPPORTED, NOT_MIGRATED_API, COPIED_UNCHANGED + error,
                   NOT_MIGRATED.code)


def with_not_migrated_row(result: FileResult) -> FileResult:
    """A failed result with its NotMigrated row, so that no report passes the file over."""
    if result.status != Status.FAILED or any(finding.rule == NOT_MIGRATED.code for finding in result.findings):
        return result
    result.findings = sorted(set(result.findings) | {not_migrated_row(result.path, result.error)})
    return result


# Set by the command's signal handlers (Ctrl-C, SIGTERM) before they raise: an interrupt that
# arrives inside a C-level lookup (a dict probing a node's __eq__) is swallowed there and
# surfaces as an unrelated error, which must end the run, not fail one file.
pending_interrupt: Optional[BaseException] = None
