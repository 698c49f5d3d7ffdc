"""The colours of one line of Python on the review page, read with the standard library's tokenizer
(as Python's own REPL colours what is typed into it).

pygments' Python lexer compiles about a hundred regular expressions before its first token: on a
small project that was a third of the time after the migration itself.  A diff shows single lines,
so a line is read alone: where it is part of a longer statement or string (an unclosed bracket, a
line inside a docstring), what the tokenizer read before it gave up keeps its colours and the rest
is plain text.
"""
from __future__ import annotations

import builtins
import html
import io
import keyword
import tokenize
from typing import List, Optional

# The page's classes (see the style sheet of html_report): keyword, builtin, defined name, string,
# number, comment.
KEYWORD, BUILTIN, DEFINED, STRING, NUMBER, COMMENT = "k", "b", "fn", "s", "m", "c"

_KEYWORDS = frozenset(keyword.kwlist)
# builtins' functions and constants, not its exceptions; `self` and `cls` read like them
_BUILTINS = frozenset(
    {name for name, value in vars(builtins).items()
     if not name.startswith("_") and not (isinstance(value, type) and issubclass(value, BaseException))}
    | {"self", "cls"})
# the parts of an f-string where the tokenizer splits one (Python 3.12 on)
_STRING_PARTS = frozenset(getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                          if hasattr(tokenize, name))


def line_html(line: str) -> str:
    """`line` (one line of Python, without or with its line break) as escaped HTML, its tokens in
    `<em class="...">` where they have a colour."""
    parts: List[str] = []
    done = 0  # the columns of `line` written so far
    previous = None
    for token in _tokens(line):
        (_, start), (end_row, end) = token.start, token.end
        if end_row != 1 or start < done:
            break  # (a token beyond the line: the tokenizer's own end-of-input tokens)
        css = _css(token, previous)
        if css is not None:
            parts.append(html.escape(line[done:start]))
            parts.append(f"<em class=\"{css}\">{html.escape(line[start:end])}</em>")
            done = end
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            previous = token
    parts.append(html.escape(line[done:]))
    return "".join(parts)


def _tokens(line: str):
    """The tokens of `line` read alone, as far as the tokenizer gets."""
    readline = io.StringIO(line).readline
    try:
        yield from tokenize.generate_tokens(readline)
    except (tokenize.TokenError, SyntaxError):
        return  # (an unclosed bracket or string: the line continues a statement or starts one)


def _css(token: tokenize.TokenInfo, previous) -> Optional[str]:
    if token.type == tokenize.NAME:
        if token.string in _KEYWORDS:
            return KEYWORD
        after = previous.string if previous is not None and previous.type in (tokenize.NAME, tokenize.OP) else None
        if after in ("def", "class"):
            return DEFINED
        if token.string in _BUILTINS and after != ".":  # (`x.print` is x's own attribute)
            return BUILTIN
        return None
    if token.type == tokenize.STRING or token.type in _STRING_PARTS:
        return STRING
    if token.type == tokenize.NUMBER:
        return NUMBER
    if token.type == tokenize.COMMENT:
        return COMMENT
    return None
