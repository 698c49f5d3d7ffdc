"""A set of syntax nodes by identity, for the rules that keep track of the statements they insert
and remove (FileContext.inserted, FileContext.removed)."""
from __future__ import annotations

from typing import Dict

import libcst as cst


class NodeSet:
    """Nodes told apart by identity (libcst's nodes compare by value).  The set holds them: an id
    names one object only while that object lives, and the id of an inserted statement freed
    later (one a rule put in and another took out) would be reused by a statement made after it,
    which would then pass for inserted, and every row placed by it would move."""

    def __init__(self) -> None:
        self._nodes: Dict[int, cst.CSTNode] = {}

    def add(self, node: cst.CSTNode) -> None:
        self._nodes[id(node)] = node

    def __contains__(self, node: object) -> bool:
        return id(node) in self._nodes
