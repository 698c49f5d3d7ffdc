"""Keeps track of which original line each line of a rewritten file came from, and compares a
file with its migration line by line (for the line map, `--diff` and the review page).

Rules report lines of the tree they were given.  Most rules edit in place (same number of
lines), so their lines are the original ones; a rule that inserts lines shifts everything
below, and the next rule's line numbers must be mapped back.  After each such rule the old and
new texts are compared line by line and the mapping is carried forward.
"""
from __future__ import annotations

import difflib
import re
from typing import List, Sequence, Tuple

# Up to this many lines difflib aligns the texts by itself; beyond, its matcher (without autojunk,
# which would misalign repeated lines) takes time quadratic in the blank and other repeated lines
# of a file, so lines found once in each text anchor the alignment first (as patience diff does),
# and difflib aligns the short stretches between them.
DIRECT_ALIGNMENT_LINES = 100


# Python ends a line at \n, \r\n or \r only, where str.splitlines also ends one at a form feed, a
# vertical tab, \x1c-\x1e, \x85 and U+2028/U+2029, which source files hold in comments and strings.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_PYTHON_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def source_lines(text: str, keepends: bool = False) -> List[str]:
    """The lines of `text` as Python, libcst, `patch` and editors number them: `str.splitlines`
    but for the characters only it takes for line ends."""
    if _OTHER_BREAKS.search(text) is None:
        return text.splitlines(keepends)
    lines = _PYTHON_LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


class LineMap:
    def __init__(self, line_count: int) -> None:
        # origin[k] is the original line of current line k + 1 (inserted lines: the line above).
        self.origin: List[int] = list(range(1, line_count + 1))

    def original(self, line: int) -> int:
        if line <= 0 or not self.origin:
            return 0
        return self.origin[min(line, len(self.origin)) - 1]

    def update(self, old_text: str, new_text: str) -> None:
        old_lines = source_lines(old_text, keepends=True)
        new_lines = source_lines(new_text, keepends=True)
        if len(old_lines) == len(new_lines):
            return  # edits in place: every line keeps its place
        origin: List[int] = []
        for tag, i1, i2, j1, j2 in opcodes(old_lines, new_lines):
            if tag == "equal":
                origin.extend(self.origin[i1:i2])
            elif tag == "replace":
                origin.extend(self.origin[min(i1 + k, i2 - 1)] for k in range(j2 - j1))
            elif tag == "insert":
                origin.extend([self.original(i1)] * (j2 - j1))
        self.origin = origin


def opcodes(old: Sequence[str], new: Sequence[str]) -> List[Tuple[str, int, int, int, int]]:
    """difflib's opcodes turning `old` into `new`; beyond a hundred lines in time close to linear
    (the alignment may then differ from difflib's where lines repeat, never in what it shows)."""
    if len(old) + len(new) <= 2 * DIRECT_ALIGNMENT_LINES:
        return difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    codes: List[Tuple[str, int, int, int, int]] = []
    _align(old, new, 0, len(old), 0, len(new), codes)
    return _merged(codes)


def _align(old: Sequence[str], new: Sequence[str], old_start: int, old_end: int, new_start: int, new_end: int,
           codes: List[Tuple[str, int, int, int, int]]) -> None:
    """Opcodes of old[old_start:old_end] -> new[new_start:new_end] appended to `codes`: the
    lines found once in each side anchor the alignment (patience diff), the stretches between
    them are aligned again the same way, and by difflib once they are short."""
    while old_start < old_end and new_start < new_end and old[old_start] == new[new_start]:
        codes.append(("equal", old_start, old_start + 1, new_start, new_start + 1))
        old_start, new_start = old_start + 1, new_start + 1
    tail = 0
    while old_end - tail > old_start and new_end - tail > new_start and old[old_end - tail - 1] == new[new_end - tail - 1]:
        tail += 1
    old_end, new_end = old_end - tail, new_end - tail
    if old_start == old_end or new_start == new_end:  # lines only added, or only taken out
        codes.append(("replace", old_start, old_end, new_start, new_end))
    elif (old_end - old_start) + (new_end - new_start) <= 2 * DIRECT_ALIGNMENT_LINES:
        matcher = difflib.SequenceMatcher(None, old[old_start:old_end], new[new_start:new_end], autojunk=False)
        codes.extend((tag, i1 + old_start, i2 + old_start, j1 + new_start, j2 + new_start)
                     for tag, i1, i2, j1, j2 in matcher.get_opcodes())
    else:
        anchors = _anchors(old[old_start:old_end], new[new_start:new_end])
        if not anchors:
            _align_nearby(old, new, old_start, old_end, new_start, new_end, codes)
        else:
            previous_i, previous_j = old_start, new_start
            for i, j in anchors:
                _align(old, new, previous_i, old_start + i, previous_j, new_start + j, codes)
                codes.append(("equal", old_start + i, old_start + i + 1, new_start + j, new_start + j + 1))
                previous_i, previous_j = old_start + i + 1, new_start + j + 1
            _align(old, new, previous_i, old_end, previous_j, new_end, codes)
    codes.extend(("equal", old_end + k, old_end + k + 1, new_end + k, new_end + k + 1) for k in range(tail))


# How far `_align_nearby` looks for the next line the two sides share, in lines of each side.
NEARBY_LINES = 200


def _align_nearby(old: Sequence[str], new: Sequence[str], i: int, old_end: int, j: int, new_end: int,
                  codes: List[Tuple[str, int, int, int, int]]) -> None:
    """A long stretch with no line found once on each side (a generated file repeating the same
    lines): aligned line by line, an unequal line resynchronised at the nearest equal pair.  The
    edits of a migration are a few lines each, so the nearest pair is the right one."""
    while i < old_end and j < new_end:
        if old[i] == new[j]:
            codes.append(("equal", i, i + 1, j, j + 1))
            i, j = i + 1, j + 1
            continue
        found = None
        for distance in range(1, 2 * NEARBY_LINES + 1):
            for skipped_old in range(max(0, distance - NEARBY_LINES), min(distance, NEARBY_LINES) + 1):
                skipped_new = distance - skipped_old
                if i + skipped_old < old_end and j + skipped_new < new_end \
                        and old[i + skipped_old] == new[j + skipped_new]:
                    found = skipped_old, skipped_new
                    break
            if found:
                break
        skipped_old, skipped_new = found or (1, 1)
        codes.append(("replace", i, i + skipped_old, j, j + skipped_new))
        i, j = i + skipped_old, j + skipped_new
    if i < old_end or j < new_end:
        codes.append(("replace", i, old_end, j, new_end))


def _merged(codes: List[Tuple[str, int, int, int, int]]) -> List[Tuple[str, int, int, int, int]]:
    """Adjacent opcodes of one kind joined (equal with equal, changes with changes), each change
    named by what it does, as difflib's are."""
    merged: List[List] = []
    for tag, i1, i2, j1, j2 in codes:
        if i1 == i2 and j1 == j2:
            continue
        changed = tag != "equal"
        if merged and (merged[-1][0] != "equal") == changed:
            merged[-1][2], merged[-1][4] = i2, j2
        else:
            merged.append([tag, i1, i2, j1, j2])
    for code in merged:
        if code[0] != "equal":
            code[0] = "replace" if code[1] < code[2] and code[3] < code[4] else "delete" if code[1] < code[2] else "insert"
    return [tuple(code) for code in merged]


def grouped_opcodes(old: Sequence[str], new: Sequence[str], context: int = 3):
    """The hunks of the difference, each a list of opcodes with up to `context` equal lines
    around the changes: difflib's `get_grouped_opcodes`, on `opcodes`."""
    codes = opcodes(old, new)
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":  # the leading and trailing equal stretches keep `context` lines
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    group: List[Tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:  # a long equal stretch ends one hunk, starts the next
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def unified_diff(old: Sequence[str], new: Sequence[str], old_name: str, new_name: str, context: int = 3):
    """The lines of a unified diff (as `difflib.unified_diff`, lines kept with their ends)."""
    started = False
    for group in grouped_opcodes(old, new, context):
        if not started:
            started = True
            yield f"--- {old_name}\n"
            yield f"+++ {new_name}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in old[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in new[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's range in the unified format (difflib's `_format_range_unified`)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1  # an empty range begins at the line before
    return f"{beginning},{length}"


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
