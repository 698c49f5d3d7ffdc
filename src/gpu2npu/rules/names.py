"""Helpers shared by the rules: resolved names, attribute chains, string literals."""
from __future__ import annotations

import re
from typing import Optional, Set

import libcst as cst
from libcst.metadata import QualifiedNameProvider


def qualified_names(rule: cst.MetadataDependent, node: cst.CSTNode) -> Set[str]:
    """Fully qualified names `node` may refer to (aliases and local imports resolved)."""
    try:
        names = rule.get_metadata(QualifiedNameProvider, node, set())
    except KeyError:
        return set()
    return {name.name for name in names}


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a chain of Names/Attributes, None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def build_dotted(name: str) -> cst.BaseExpression:
    parts = name.split(".")
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def string_text(node: cst.SimpleString) -> Optional[str]:
    """The characters between the quotes of a plain (non-bytes) literal, or None."""
    if "b" in node.prefix.lower():
        return None
    return node.raw_value


def with_string_text(node: cst.SimpleString, text: str) -> cst.SimpleString:
    return node.with_changes(value=f"{node.prefix}{node.quote}{text}{node.quote}")


class DocstringTracker:
    """Mixin for rules and the analysis: knows which strings stand alone as statements (docstrings and
    string "comments"), which are documentation and are never rewritten."""

    def __init__(self) -> None:
        self._doc_strings: Set[int] = set()

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            stack = [value]
            while stack:
                item = stack.pop()
                self._doc_strings.add(id(item))
                if isinstance(item, cst.ConcatenatedString):
                    stack.extend((item.left, item.right))

    def is_documentation(self, original_node: cst.CSTNode) -> bool:
        return id(original_node) in self._doc_strings


DEVICE_STRING = re.compile(r"^cuda(:(\d+|\{[^{}]*\}|%[sdi])?)?$")
