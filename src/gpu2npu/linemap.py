"""Keeps track of which original line each line of a rewritten file came from.

Rules report lines of the tree they were given.  Most rules edit in place (same number of
lines), so their lines are the original ones; a rule that inserts lines shifts everything
below, and the next rule's line numbers must be mapped back.  After each such rule the old and
new texts are compared line by line and the mapping is carried forward.
"""
from __future__ import annotations

import difflib
from typing import List


class LineMap:
    def __init__(self, line_count: int) -> None:
        # origin[k] is the original line of current line k + 1 (inserted lines: the line above).
        self.origin: List[int] = list(range(1, line_count + 1))

    def original(self, line: int) -> int:
        if line <= 0 or not self.origin:
            return 0
        return self.origin[min(line, len(self.origin)) - 1]

    def update(self, old_text: str, new_text: str) -> None:
        old_lines = old_text.splitlines(keepends=True)
        new_lines = new_text.splitlines(keepends=True)
        if len(old_lines) == len(new_lines):
            return  # edits in place: every line keeps its place
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        origin: List[int] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                origin.extend(self.origin[i1:i2])
            elif tag == "replace":
                origin.extend(self.origin[min(i1 + k, i2 - 1)] for k in range(j2 - j1))
            elif tag == "insert":
                origin.extend([self.original(i1)] * (j2 - j1))
        self.origin = origin
