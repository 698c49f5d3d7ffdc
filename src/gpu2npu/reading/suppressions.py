"""Inline suppressions of `gpu2npu check`, as ruff's `# noqa`:

    x = y.cuda()  # gpu2npu: ignore                 every finding of the line
    x = y.cuda()  # gpu2npu: ignore[NPU102,NPU9xx]  the codes named (`x`: any digit)

A suppression covers the findings that start, end or span its line.  One that covers nothing,
or names a code no rule or report kind has, is itself a finding (NPU926, as ruff's RUF100), so
that a comment cannot outlive its reason and hide tomorrow's finding.  The comments are read
where the file is read for its migration (`engine`), so a warm check reads nothing twice.
"""
from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass
from typing import Iterator, List, Tuple

from .discover import Kind

MARK = b"gpu2npu:"
_IGNORE = r"#\s*gpu2npu:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?"
_COMMENT = re.compile(_IGNORE, re.IGNORECASE)
# (outside Python, a comment starts a line or follows a blank: `a#b` is no comment in a shell word)
_LINE_COMMENT = re.compile(r"(?:^|(?<=\s))" + _IGNORE, re.IGNORECASE)


@dataclass(frozen=True)
class Suppression:
    line: int  # 1-based, of the file (of the cell in a notebook)
    codes: Tuple[str, ...]  # the code selectors named; empty: every code
    text: str  # the comment as written, for the messages
    cell: int = 0  # a notebook's cell number (as the reports count them), 0 elsewhere


def suppressions_in(kind: Kind, data: bytes) -> Tuple[Suppression, ...]:
    """The `# gpu2npu: ignore` comments of a file of `kind` (nothing read where the mark is absent)."""
    if MARK not in data:
        return ()
    text = data.decode("utf-8", "replace")
    if kind == Kind.NOTEBOOK:
        return tuple(_in_notebook(text))
    if kind == Kind.PYTHON:
        found = _in_python(text)
        if found is not None:
            return tuple(found)
    return tuple(_in_lines(text.splitlines()))


def _suppression(match: "re.Match[str]", line: int, cell: int = 0) -> Suppression:
    codes = match.group("codes")
    named = tuple(code.strip().upper() for code in codes.split(",") if code.strip()) if codes is not None else ()
    return Suppression(line, named, match.group(0), cell)


def _in_python(text: str):
    """The suppressions of Python comments (None: the text does not tokenize; read by lines)."""
    found: List[Suppression] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                match = _COMMENT.search(token.string)
                if match:
                    found.append(_suppression(match, token.start[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return found


def _in_lines(lines: List[str], cell: int = 0) -> List[Suppression]:
    return [_suppression(match, number, cell) for number, line in enumerate(lines, 1)
            for match in [_LINE_COMMENT.search(line)] if match]


def _in_notebook(text: str) -> List[Suppression]:
    return [suppression for number, source in code_cells(text) for suppression in _in_lines(source.splitlines(), number)]


def code_cells(text: str) -> Iterator[Tuple[int, str]]:
    """(number, source) of a notebook's code cells, numbered as the reports number them (every
    cell from 1, markdown included); none where the text is no notebook."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return
    for number, cell in enumerate(cells if isinstance(cells, list) else [], 1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            yield number, "".join(source) if isinstance(source, list) else str(source)


_CELL = re.compile(r"cell (\d+): ")


def cell_of(message: str) -> int:
    """The notebook cell a report message speaks of (its `cell N: `), 0 where none."""
    match = _CELL.search(message)
    return int(match.group(1)) if match else 0
