"""Keeps track of which original line each line of a rewritten file came from.

Rules report lines of the tree they were given.  Most rules edit in place (same number of
lines), so their lines are the original ones; a rule that inserts lines shifts everything
below, and the next rule's line numbers must be mapped back.  After each such rule the old and
new texts are compared line by line and the mapping is carried forward.
"""
from __future__ import annotations

import difflib
from typing import List, Sequence, Tuple

# Up to this many lines difflib aligns the texts by itself; beyond, its matcher (without autojunk,
# which would misalign repeated lines) takes quadratic time on the many repeated lines of a big
# file, so lines found once in each text anchor the alignment first (as patience diff does).
DIRECT_ALIGNMENT_LINES = 4000


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
        origin: List[int] = []
        for tag, i1, i2, j1, j2 in _opcodes(old_lines, new_lines):
            if tag == "equal":
                origin.extend(self.origin[i1:i2])
            elif tag == "replace":
                origin.extend(self.origin[min(i1 + k, i2 - 1)] for k in range(j2 - j1))
            elif tag == "insert":
                origin.extend([self.original(i1)] * (j2 - j1))
        self.origin = origin


def _opcodes(old: Sequence[str], new: Sequence[str]) -> List[Tuple[str, int, int, int, int]]:
    """difflib's opcodes turning `old` into `new`."""
    if len(old) + len(new) <= 2 * DIRECT_ALIGNMENT_LINES:
        return difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    opcodes: List[Tuple[str, int, int, int, int]] = []
    previous_i = previous_j = 0
    for i, j in _anchors(old, new) + [(len(old), len(new))]:
        if i > previous_i or j > previous_j:  # the stretch between two anchors
            if i - previous_i == j - previous_j:
                opcodes.append(("replace", previous_i, i, previous_j, j))  # line for line
            else:
                gap = difflib.SequenceMatcher(None, old[previous_i:i], new[previous_j:j], autojunk=False)
                opcodes.extend((tag, i1 + previous_i, i2 + previous_i, j1 + previous_j, j2 + previous_j)
                               for tag, i1, i2, j1, j2 in gap.get_opcodes())
        if i < len(old):
            opcodes.append(("equal", i, i + 1, j, j + 1))
        previous_i, previous_j = i + 1, j + 1
    return opcodes


def _anchors(old: Sequence[str], new: Sequence[str]) -> List[Tuple[int, int]]:
    """(old index, new index) of the lines found exactly once in each text, the longest run of
    them in the same order in both."""
    def once(lines: Sequence[str]) -> dict:
        seen: dict = {}
        for index, line in enumerate(lines):
            seen[line] = -1 if line in seen else index
        return {line: index for line, index in seen.items() if index >= 0}

    in_old, in_new = once(old), once(new)
    pairs = sorted((index, in_new[line]) for line, index in in_old.items() if line in in_new)
    # longest increasing run of new indexes (patience sorting), pairs already in old order
    import bisect

    tails: List[int] = []  # tails[k]: new index ending the best run of length k + 1
    tail_pair: List[int] = []
    before: List[int] = [-1] * len(pairs)
    for position, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_pair.append(position)
        else:
            tails[k] = j
            tail_pair[k] = position
        before[position] = tail_pair[k - 1] if k else -1
    run: List[Tuple[int, int]] = []
    position = tail_pair[-1] if tail_pair else -1
    while position >= 0:
        run.append(pairs[position])
        position = before[position]
    return run[::-1]
