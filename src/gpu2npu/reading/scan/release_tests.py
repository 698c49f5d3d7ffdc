"""Which code tests the torch release (a version check, a hasattr, an ImportError caught): the API rows of
newer torch stay out of what it guards."""
from __future__ import annotations

import ast
import bisect
import copy
import functools
import re
from typing import Dict, List, Optional, Set

from .reading import caught_names, nodes_of

_RELEASE_NAMES = re.compile(r"version|hasattr|^is_torch|available|TORCH_[A-Z0-9_]*(GE|GREATER|LT|LESS|AT_LEAST)", re.IGNORECASE)
_RELEASE_ATTRIBUTES = re.compile(r"version", re.IGNORECASE)
RELEASE_BRANCHES = (ast.If, ast.IfExp, ast.Try, ast.BoolOp)  # what may test the torch release
_OLDER_TORCH_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"})


@functools.lru_cache(maxsize=4096)
def _names_the_release(identifier: str) -> bool:
    return _RELEASE_NAMES.search(identifier) is not None


@functools.lru_cache(maxsize=4096)
def _holds_a_version(attribute: str) -> bool:
    return _RELEASE_ATTRIBUTES.search(attribute) is not None


def _is_release_part(part: ast.AST, flags: Set[str]) -> bool:
    """A name or attribute that asks which torch this is (or holds the answer: a flag)."""
    if part.__class__ is ast.Name:
        return _names_the_release(part.id) or part.id in flags
    return part.__class__ is ast.Attribute and _holds_a_version(part.attr)


class ReleaseNames:
    """Where a file's release parts start: an expression whose span holds none of them has none,
    which spares walking the many that do not (an expression's nodes lie within its span)."""

    def __init__(self, groups: Dict[type, List[ast.AST]]) -> None:
        names, attributes = groups.get(ast.Name, ()), groups.get(ast.Attribute, ())
        self.release = {identifier for identifier in {node.id for node in names} if _names_the_release(identifier)}
        versions = {attribute for attribute in {node.attr for node in attributes} if _holds_a_version(attribute)}
        self.starts = sorted([(node.lineno, node.col_offset) for node in names if node.id in self.release]
                             + [(node.lineno, node.col_offset) for node in attributes if node.attr in versions])

    def with_flags(self, groups: Dict[type, List[ast.AST]], flags: Set[str]) -> "ReleaseNames":
        """These starts and those of the names that hold a release test's answer (`release_flags`)."""
        added = set(flags) - self.release
        if not added:
            return self
        flagged = copy.copy(self)
        flagged.release = self.release | added
        flagged.starts = sorted(self.starts + [(node.lineno, node.col_offset) for node in groups.get(ast.Name, ())
                                               if node.id in added])
        return flagged

    def may_hold(self, node: ast.AST) -> bool:
        at = bisect.bisect_left(self.starts, (node.lineno, node.col_offset))
        return at < len(self.starts) and self.starts[at] <= (node.end_lineno or node.lineno, node.end_col_offset or 0)


def _holds_release_part(expression: ast.AST, flags: Set[str], names: Optional[ReleaseNames]) -> bool:
    if names is not None and not names.may_hold(expression):
        return False
    return any(_is_release_part(part, flags) for part in nodes_of(expression))


def release_flags(groups: Dict[type, List[ast.AST]], names: "ReleaseNames") -> Set[str]:
    """Names that hold the answer of a release test: `has_rms_norm = hasattr(F, "rms_norm")`, or
    `has_apex = True` in a `try` whose handler catches the ImportError of a missing package
    (`groups`: a file's nodes by their class, `names`: their release parts)."""
    flags: Set[str] = set()
    for node in groups.get(ast.Assign, ()):
        targets = [target.id for target in node.targets if isinstance(target, ast.Name)]
        if targets and _holds_release_part(node.value, frozenset(), names):
            flags.update(targets)
    for node in groups.get(ast.Try, ()):
        if tests_the_release(node, frozenset()):
            for statement in node.body:
                if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
                    flags.update(target.id for target in statement.targets if isinstance(target, ast.Name))
    return flags


def tests_the_release(node: ast.AST, flags: Set[str] = frozenset(), names: Optional[ReleaseNames] = None) -> bool:
    if isinstance(node, ast.Try):
        return bool(caught_names(node) & _OLDER_TORCH_ERRORS)
    tests = node.values if isinstance(node, ast.BoolOp) else [node.test]  # type: ignore[attr-defined]
    return any(_holds_release_part(test, flags, names) for test in tests)
