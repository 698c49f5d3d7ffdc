"""libcst's PositionProvider and our ParentNodeProvider, from one printing of the module, at
less than half the cost of libcst's positions alone.

libcst finds every node's position by printing the module with a codegen state that tracks the
line and column, and builds two CodePositions and a CodeRange for every node on the way (then
copies the whole mapping).  The rules and the analysis ask for the positions of a few nodes in
a thousand.  Here the same printing records each node's four numbers as a tuple, and a node's
CodeRange is built when it is asked for.  The printing enters each node from its parent's, so it
tells each node's parent too, which spares a walk of the tree (libcst prints every child node
from 1.8.4 on: before, a match case without a guard left the whitespace nodes around its absent
`if` unprinted); and the text printed on the way is the module's code, which the pipeline needs
of the migrated module anyway.

The positions are libcst's own, by its own rules (a node's syntactic span where its codegen
records one, else the span of everything it printed): the same codegen calls the same hooks of
the state; only what the hooks keep is cheaper.  test_positions compares both on whole files.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Dict, Optional, Tuple

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from .libcst_private import NEWLINE_RE, PositionProvidingCodegenState, print_module

_Span = Tuple[int, int, int, int]  # first line, first column, last line, last column


class Positions(Mapping):
    """node -> CodeRange, as libcst's PositionProvider maps them; each CodeRange built once,
    when it is first asked for."""

    __slots__ = ("_spans",)

    def __init__(self, spans: Dict[cst.CSTNode, object]) -> None:
        self._spans = spans

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._spans[node]
        if span.__class__ is tuple:
            span = self._spans[node] = CodeRange(CodePosition(span[0], span[1]), CodePosition(span[2], span[3]))
        return span

    def get(self, node: cst.CSTNode, default=None):
        return self[node] if node in self._spans else default

    def __contains__(self, node: object) -> bool:
        return node in self._spans

    def __iter__(self):
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)


@dataclass(frozen=True)
class Printing:
    """What one printing of a module tells."""

    positions: Positions  # node -> CodeRange (libcst's PositionProvider)
    parents: Mapping  # node -> its parent node (the module has none)
    code: str


def printing(module: cst.Module) -> Printing:
    state = _Tracking(default_indent=module.default_indent, default_newline=module.default_newline, provider=None)
    state.spans, state.parents = {}, {}
    print_module(module, state)
    return Printing(Positions(state.spans), MappingProxyType(state.parents), "".join(state.tokens))


class _Recording:
    """What libcst's `record_syntactic_position` context does, without a generator: the node's
    span is from where it starts (or `start_node` starts) to where it ends (or `end_node` ends)."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exception) -> bool:
        state = self.state
        spans = state.spans
        if self.start_node is None:
            line, column = self.line, self.column
        else:
            line, column = spans[self.start_node][:2]
        if self.end_node is None:
            end_line, end_column = state.line, state.column
        else:
            end_line, end_column = spans[self.end_node][2:]
        spans[self.node] = (line, column, end_line, end_column)
        return False


class _Tracking(PositionProvidingCodegenState):
    """libcst's position-tracking codegen state, keeping tuples in `spans` and each node's parent
    in `parents` (the state's slots hold libcst's fields; this class adds a dict for the rest).
    Its `_stack` holds (node, line, column) of each node being printed, outermost first."""

    spans: Dict[cst.CSTNode, _Span]
    parents: Dict[cst.CSTNode, cst.CSTNode]

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def _advance(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)  # (what libcst's own tracking counts as line ends)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        stack = self._stack
        if stack:
            self.parents[node] = stack[-1][0]
        stack.append((node, self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        _, line, column = self._stack.pop()
        if node not in self.spans:  # (a syntactic span recorded by the node's codegen stands)
            self.spans[node] = (line, column, self.line, self.column)

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> _Recording:
        recording = _Recording()
        recording.state, recording.node, recording.start_node, recording.end_node = self, node, start_node, end_node
        recording.line, recording.column = self.line, self.column
        return recording
