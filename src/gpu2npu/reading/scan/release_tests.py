"""Which code tests the torch release (a version check, a hasattr, an ImportError caught): the API rows of
newer torch stay out of what it guards."""
from __future__ import annotations

import ast
import bisect
import copy
import functools
import re
from typing import Callable, Dict, Iterable, List, Optional, Set

from .reading import caught_names, nodes_of

# What names the torch version itself (not a package's availability, `is_torch_available()`,
# `is_bnb_available()`: a function that returns where a package is missing goes on for any torch).
_VERSION_WORDS = r"version|TORCH_[A-Z0-9_]*(GE|GREATER|LT|LESS|AT_LEAST)"
_VERSION_NAMES = re.compile(_VERSION_WORDS, re.IGNORECASE)
# ... and what may test the release in a branch: those, hasattr, is_torch_... and ..._available helpers.
_RELEASE_NAMES = re.compile(_VERSION_WORDS + r"|hasattr|^is_torch|available", re.IGNORECASE)
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


def version_flags(groups: Dict[type, List[ast.AST]], of_torch: Callable[[ast.AST], bool],
                  tests: Iterable[ast.AST]) -> Dict[str, ast.AST]:
    """Names assigned a value that involves the torch version, with that value (`has_dtensor =
    dist.is_available() and is_torch_version(">=", "2.5")`); `of_torch` as settles_the_version's.
    Only the names that `tests` read, and those that the values of such names read, are looked
    up: most assignments of a file hold no flag that a test asks about."""
    flags: Dict[str, ast.AST] = {}
    wanted = {part.id for test in tests for part in ast.walk(test) if part.__class__ is ast.Name}
    looked_up: Set[str] = set()
    while wanted - looked_up:
        new = wanted - looked_up
        looked_up |= new
        for node in groups.get(ast.Assign, ()):
            named = [target.id for target in node.targets if target.__class__ is ast.Name and target.id in new]
            if named and _names_a_version(node.value, of_torch):
                for name in named:
                    if name not in flags:
                        flags[name] = node.value
                        wanted.update(part.id for part in ast.walk(node.value) if part.__class__ is ast.Name)
    return flags


# torch.version's facts of the build, not its release (`torch.version.hip`: a ROCm build).
_BUILD_FACTS = frozenset({"hip", "cuda", "xpu", "git_version", "debug"})


def _names_a_version(expression: ast.AST, of_torch: Callable[[ast.AST], bool]) -> bool:
    parts = nodes_of(expression)
    build_facts = {id(part.value) for part in parts if part.__class__ is ast.Attribute and part.attr in _BUILD_FACTS}
    for part in parts:
        if part.__class__ is ast.Name and _VERSION_NAMES.search(part.id):
            return True
        if part.__class__ is ast.Attribute and _holds_a_version(part.attr) and id(part) not in build_facts:
            return True
        if (part.__class__ is ast.Call and part.func.__class__ is ast.Name and part.func.id == "hasattr"
                and part.args and of_torch(part.args[0])):
            return True
    return False


def settles_the_version(test: ast.AST, outcome: bool, flags: Dict[str, ast.AST], of_torch: Callable[[ast.AST], bool],
                        depth: int = 0) -> bool:
    """Whether knowing that `test` came out `outcome` settles a test of the torch version (a
    version's name or attribute, `hasattr` of what `of_torch` says is torch's, a name of `flags`
    (version_flags) for its value): after `if not new_enough or x: return`, `new_enough` holds;
    after `if fsdp and not new_enough: raise`, nothing is known of it (`fsdp` may be false)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return settles_the_version(test.operand, not outcome, flags, of_torch, depth)
    if isinstance(test, ast.BoolOp):
        # true `and`, false `or`: every part came out so; else only one of them did, unknown which
        every = outcome == isinstance(test.op, ast.And)
        settled = [settles_the_version(value, outcome, flags, of_torch, depth) for value in test.values]
        return any(settled) if every else all(settled)
    if isinstance(test, ast.Name) and test.id in flags and depth < 4:
        return settles_the_version(flags[test.id], outcome, flags, of_torch, depth + 1)
    return _names_a_version(test, of_torch)


def tests_the_release(node: ast.AST, flags: Set[str] = frozenset(), names: Optional[ReleaseNames] = None) -> bool:
    if isinstance(node, ast.Try):
        return bool(caught_names(node) & _OLDER_TORCH_ERRORS)
    tests = node.values if isinstance(node, ast.BoolOp) else [node.test]  # type: ignore[attr-defined]
    return any(_holds_release_part(test, flags, names) for test in tests)
