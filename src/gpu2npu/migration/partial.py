"""Files with a few CUDA spots: migrate only the statements that matter.

A 4,000-line library module that calls `torch.cuda.is_available()` in one function costs as
much to run through libcst as any other 4,000 lines, yet the rules can only change the
statements the ast scan flagged (`FileScan.relevant_lines`).  So such a file is cut at its
statements: the top-level ones holding a flagged line (a class is cut further, down to its
flagged members and its attributes holding strings), together with every top-level statement that is not a
function or class (imports and module-level bindings: the context rules read), are joined into a
smaller module;
the others are left out.  The smaller module is migrated as a
whole file would be, and each kept statement's text is put back in its place.

Kept statements are separated by marker comment lines: no rule edits comments, and lines a rule
inserts after a statement stay before the next marker, so they go back with that statement.

Only files where this is plainly sound are cut: UTF-8 without BOM, `\\n` line endings and a
final newline.  What the single-card rules read beyond the statement they edit is module-level
(imports, bindings) or enclosing (the function and assignment around a DataLoader), and both are
kept; the distributed and `-s` modes, which reason across the whole file, never cut.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

# Below this many lines a whole-file migration is cheap enough.
PARTIAL_FROM_LINES = 200
# Nor is cutting worth it when more than this share of the lines must be kept.
PARTIAL_MAX_SHARE = 0.8
MARKER = "# gpu2npu: statement boundary {}"
_MARKER_LINE = re.compile(r"^# gpu2npu: statement boundary (\d+)\n", re.MULTILINE)


@dataclass
class Reduction:
    source: str  # the smaller module
    spans: List[Tuple[int, int]]  # original (first, last) line, 1-based, of each kept statement
    origin: List[int]  # origin[k]: original line of line k + 1 of `source` (markers: the line above)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _statement_spans(body: Sequence[ast.stmt]) -> List[Tuple[int, int, Optional[ast.stmt]]]:
    """(first line, last line, statement) of each statement of a block; statements sharing a
    line (`a = 1; b = 2`) are merged and then carry no single statement (None)."""
    spans: List[Tuple[int, int, Optional[ast.stmt]]] = []
    for node in body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        last = node.end_lineno or node.lineno
        if spans and first <= spans[-1][1]:
            previous = spans.pop()
            spans.append((previous[0], max(last, previous[1]), None))
        else:
            spans.append((first, last, node))
    return spans


def _kept_spans(body: Sequence[ast.stmt], relevant: Sequence[int], module_level: bool = True) -> List[Tuple[int, int]]:
    """Line spans to keep of a module's or class's body: the statements holding a relevant line
    (classes cut further), at module level every statement that is not a function or class
    (imports and module-level bindings, which rules read), and in a class its attributes holding
    a string (`NPU = "npu"` beside `CUDA = "cuda"` makes the class NPU-aware)."""
    kept: List[Tuple[int, int]] = []
    for first, last, node in _statement_spans(body):
        if node is not None and (not isinstance(node, _DEFINITIONS) if module_level else _holds_a_string(node)):
            kept.append((first, last))
        elif not _any_between(relevant, first, last):
            continue
        elif isinstance(node, ast.ClassDef):
            body_first = min([node.body[0].lineno] + [d.lineno for d in getattr(node.body[0], "decorator_list", ())])
            inner = _kept_spans(node.body, relevant, module_level=False) if body_first > node.lineno else []
            if not inner or _any_between(relevant, first, body_first - 1):
                kept.append((first, last))
            else:
                kept.append((first, body_first - 1))
                kept.extend(inner)
        else:
            kept.append((first, last))
    return kept


def _holds_a_string(node: ast.stmt) -> bool:
    """`NAME = "..."` or `NAME: T = "..."`."""
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def reduce(data: bytes, tree: ast.Module, relevant_lines: Sequence[int]) -> Optional[Reduction]:
    """The smaller module for `data`, or None when cutting does not pay or is not plainly sound."""
    lines = _sound_lines(data)
    if lines is None or len(lines) < PARTIAL_FROM_LINES:
        return None
    relevant = sorted(set(relevant_lines))
    kept = _kept_spans(tree.body, relevant)
    if sum(last - first + 1 for first, last in kept) > len(lines) * PARTIAL_MAX_SHARE:
        return None  # most of the file is needed anyway
    return _reduction(lines, kept)


def _reduction(lines: Sequence[str], kept: List[Tuple[int, int]]) -> Reduction:
    parts: List[str] = []
    origin: List[int] = []
    # The lines before the first statement carry the encoding cookie and shebang, if any.
    head = kept[0][0] - 1 if kept else 0
    parts.extend(line + "\n" for line in lines[:head])
    origin.extend(range(1, head + 1))
    for index, (first, last) in enumerate(kept):
        parts.append(MARKER.format(index) + "\n")
        origin.append(first - 1)
        parts.extend(line + "\n" for line in lines[first - 1 : last])
        origin.extend(range(first, last + 1))
    return Reduction("".join(parts), kept, origin)


def _sound_lines(data: bytes) -> Optional[List[str]]:
    if data.startswith(b"\xef\xbb\xbf") or b"\r" in data or not data.endswith(b"\n"):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")[:-1]
    if any(_MARKER_LINE.match(line + "\n") for line in lines):
        return None
    return lines


def chunks(data: bytes, tree: ast.Module, relevant_lines: Sequence[int], max_bytes: int) -> Optional[List[Reduction]]:
    """A file too large to migrate whole, as smaller modules of at most `max_bytes` each: every
    one holds all the module-level statements that are not definitions (the context the rules
    read) and some of the definitions holding a relevant line, each definition in one of them.
    None when the file cannot be cut so (not plainly sound, or its context alone, or one of its
    definitions, is too large)."""
    lines = _sound_lines(data)
    if lines is None:
        return None
    relevant = sorted(set(relevant_lines))
    context: List[Tuple[int, int]] = []
    units: List[List[Tuple[int, int]]] = []  # a definition, or a class header with its kept members
    for first, last, node in _statement_spans(tree.body):
        if node is not None and not isinstance(node, _DEFINITIONS):
            context.append((first, last))
        elif _any_between(relevant, first, last):
            units.append(_kept_spans([node], relevant, module_level=False) if node is not None else [(first, last)])

    marker = len(MARKER.format(len(context) + sum(map(len, units)))) + 1  # the longest marker line

    def size(spans: Sequence[Tuple[int, int]]) -> int:
        return sum(len(line) + 1 for first, last in spans for line in lines[first - 1 : last]) + marker * len(spans)

    budget = max_bytes - size(context)
    if budget <= 0:
        return None  # the module-level statements alone are too large
    groups: List[List[Tuple[int, int]]] = [[]]
    used = 0
    for unit in units:
        needed = size(unit)
        if needed > budget:
            return None
        if used + needed > budget:
            groups.append([])
            used = 0
        groups[-1].extend(unit)
        used += needed
    return [_reduction(lines, sorted(context + group)) for group in groups]


def merge(data: bytes, reductions: Sequence[Reduction], migrated: Sequence[str]) -> Optional[bytes]:
    """The whole file from the migrated chunks of `chunks`: each definition from the one chunk
    that holds it; each context statement as every chunk migrated it, where they agree up to
    lines that some chunks inserted (`import torch_npu` where a chunk needed it): the text that
    holds every other chunk's lines in order.  None where the chunks disagree otherwise (a rule
    that decided differently on what each chunk saw): the caller does not migrate the file."""
    lines = data.decode("utf-8").split("\n")[:-1]
    texts: Dict[Tuple[int, int], List[str]] = {}
    heads = set()
    for reduction, output in zip(reductions, migrated):
        pieces = _MARKER_LINE.split(output)  # [head, "0", text0, "1", text1, ...]
        if len(pieces) != 2 * len(reduction.spans) + 1 or \
                [int(p) for p in pieces[1::2]] != list(range(len(reduction.spans))):
            return None
        heads.add(pieces[0])
        for span, text in zip(reduction.spans, pieces[2::2]):
            texts.setdefault(span, []).append(text)
    if len(heads) != 1:
        return None
    spans = sorted(texts)
    out: List[str] = [heads.pop()]
    cursor = spans[0][0] - 1 if spans else 0
    for first, last in spans:
        text = _widest(texts[(first, last)])
        if text is None:
            return None
        out.extend(line + "\n" for line in lines[cursor : first - 1])
        out.append(text)
        cursor = last
    out.extend(line + "\n" for line in lines[cursor:])
    return "".join(out).encode("utf-8")


def _widest(texts: Sequence[str]) -> Optional[str]:
    """The text whose lines hold, in order, the lines of every other (or None)."""
    candidates = sorted(set(texts), key=len, reverse=True)
    widest = candidates[0].splitlines(keepends=True)
    for other in candidates[1:]:
        remaining = iter(widest)
        if not all(any(line == mine for mine in remaining) for line in other.splitlines(keepends=True)):
            return None
    return candidates[0]


def _any_between(sorted_lines: Sequence[int], first: int, last: int) -> bool:
    import bisect

    index = bisect.bisect_left(sorted_lines, first)
    return index < len(sorted_lines) and sorted_lines[index] <= last


def expand(data: bytes, reduction: Reduction, migrated: str) -> Optional[bytes]:
    """The whole file with each kept statement replaced by its migrated text, or None when the
    markers did not survive the migration intact (then the caller migrates the whole file):
    `merge` of the one piece."""
    return merge(data, [reduction], [migrated])


def original_line(reduction: Reduction, line: int) -> int:
    """Original line of line `line` (1-based) of the smaller module."""
    if line <= 0 or not reduction.origin:
        return 0
    return reduction.origin[min(line, len(reduction.origin)) - 1]
