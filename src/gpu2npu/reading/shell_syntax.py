"""Just enough of the syntax of shell scripts, Makefiles and YAML job files to rewrite them line
by line without touching what is not code.

For every line the scanner says where code ends (a comment starts) and which spans are literal:
single-quoted shell strings and here-document bodies, which the shell passes on verbatim (to a
Python `-c`, a generated file, ...).  Rules rewrite code only; a CUDA name inside a literal is
reported, not edited, because the reader of that text is not the shell.  Double-quoted shell text
is code: `"$CUDA_VISIBLE_DEVICES"` is an expansion.  State that spans lines (an open quote, a
pending here-document) is carried from line to line.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Tuple


class Dialect(str, enum.Enum):
    SHELL = "shell"  # .sh, .bash, notebook shell escapes and %%bash cells
    MAKE = "make"  # Makefile, *.mk: recipe lines (TAB) are shell, other lines make syntax
    YAML = "yaml"  # .yaml/.yml job files: quotes are data, `#` after a blank starts a comment


@dataclass
class ScannedLine:
    text: str  # the line without its line ending
    code_end: int  # index where a comment starts (len(text) when there is none)
    literal: List[Tuple[int, int]] = field(default_factory=list)  # [start, end) spans left verbatim

    def in_literal(self, index: int) -> bool:
        return any(start <= index < end for start, end in self.literal)

    @property
    def code(self) -> str:
        return self.text[: self.code_end]


HEREDOC = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
COMMENT_AFTER = frozenset(" \t;&|()<>")


@dataclass
class _ShellState:
    quote: str = ""  # "'" or '"' when a quoted string continues onto the next line
    pending: List[Tuple[str, bool]] = field(default_factory=list)  # here-documents opened on this line
    body: Optional[Tuple[str, bool]] = None  # (delimiter, tabs stripped) while inside a body


def _scan_shell(text: str, state: _ShellState) -> ScannedLine:
    if state.body is not None:
        delimiter, strip_tabs = state.body
        if (text.lstrip("\t") if strip_tabs else text) == delimiter:
            state.body = None
            return ScannedLine(text, len(text))
        return ScannedLine(text, len(text), [(0, len(text))])
    literal: List[Tuple[int, int]] = []
    literal_start = 0 if state.quote == "'" else -1
    i, length = 0, len(text)
    while i < length:
        char = text[i]
        if state.quote == "'":
            if char == "'":
                literal.append((literal_start, i + 1))
                state.quote = ""
            i += 1
            continue
        if state.quote == '"':
            if char == "\\":
                i += 2
                continue
            if char == '"':
                state.quote = ""
            i += 1
            continue
        if char == "\\":
            i += 2
            continue
        if char == "'":
            state.quote, literal_start = "'", i
        elif char == '"':
            state.quote = '"'
        elif char == "#" and (i == 0 or text[i - 1] in COMMENT_AFTER):
            length = i
            break
        elif char == "<":
            match = HEREDOC.match(text, i)
            if match:
                state.pending.append((match.group(3), match.group(1) == "-"))
                i = match.end()
                continue
        i += 1
    if state.quote == "'":
        literal.append((literal_start, len(text)))
    if state.pending and not state.quote:
        state.body = state.pending.pop(0)
        state.pending.clear()  # a second here-document on one line is rare: its body is read as the first's
    return ScannedLine(text, length, literal)


def _scan_yaml(text: str) -> ScannedLine:
    quote = ""
    for i, char in enumerate(text):
        if quote:
            if char == quote and not (quote == '"' and text[i - 1] == "\\"):
                quote = ""
        elif char in "'\"" and (i == 0 or text[i - 1] in " \t:[{,-"):
            quote = char
        elif char == "#" and (i == 0 or text[i - 1] in " \t"):
            return ScannedLine(text, i)
    return ScannedLine(text, len(text))


def _scan_make(text: str) -> ScannedLine:
    for i, char in enumerate(text):
        if char == "#" and (i == 0 or text[i - 1] != "\\"):
            return ScannedLine(text, i)
    return ScannedLine(text, len(text))


def scan(lines: List[str], dialect: Dialect) -> Iterator[ScannedLine]:
    """ScannedLines for `lines` (without line endings), in order."""
    shell = _ShellState()
    for text in lines:
        if dialect == Dialect.YAML:
            yield _scan_yaml(text)
        elif dialect == Dialect.MAKE and not text.startswith("\t") and not shell.quote:
            shell = _ShellState()
            yield _scan_make(text)
        else:
            yield _scan_shell(text, shell)


def dialect_for(name: str) -> Optional[Dialect]:
    """The dialect of a launch file by its name, None for any other file."""
    lower = name.lower().rsplit("/", 1)[-1]
    if lower.endswith((".sh", ".bash")):
        return Dialect.SHELL
    if lower in ("makefile", "gnumakefile") or lower.endswith(".mk"):
        return Dialect.MAKE
    if lower.endswith((".yaml", ".yml")):
        return Dialect.YAML
    return None
