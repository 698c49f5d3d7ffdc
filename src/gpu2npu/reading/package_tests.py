"""Where a file's code runs only after a test of whether a package is installed.

    if is_bnb_available():                       # a question whether bitsandbytes is there
        import bitsandbytes as bnb
    HAS_TE = find_spec("transformer_engine") is not None
    ...
    if not HAS_TE:                               # through a variable, asked the other way round
        return
    te.pytorch.Linear(2, 2)                      # runs only where transformer_engine is there
    try:
        import triton                            # an import in a try that expects it to fail
    except ImportError:
        triton = None

A test asks whether a package is there when one of the conditions it requires holds words of
availability (`is_bnb_available()`, `is_package_available("bitsandbytes")`, `find_spec("triton")`,
`RequirementCache("flash-attn")`), compares a module itself with None (`bnb is not None`), or reads
a variable set from such a test (or set to True in a `try` after the package's import).  Only what
runs where the test decided counts: the body of `if TEST` (the `else` of `if not TEST`), the rest
of a block after `if not TEST: return`, a branch of a conditional expression, the values of an
`and` after the test (of an `or` after a test that failed).  Which package a question names is
decided by `names_package`: its name's words or a short name it goes by (`bnb`, `te`).

Read with `ast`, once per file and only when asked, by all that ask: the leftover analysis (a
CUDA-only package's rows there become notes) and the version probes (a `version("bitsandbytes")`
asked only where the package is there raises nothing).
"""
from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple, Union

from ..knowledge.tips import PACKAGE_SHORT_NAMES
from .scan.reading import NOT_PARSABLE, ast_of, ast_of_statements, caught_names, dotted, nodes_by_class
from .scopes import import_bindings

Words = Tuple[str, ...]
# (the words of each condition that holds where a test is true, those of each that holds where it is false)
Conditions = Tuple[List[Words], List[Words]]
NONE: Conditions = ([], [])

# Words of a test that asks whether something is there.
_PRESENCE_WORDS = frozenset({"available", "installed", "spec", "requirementcache", "exists", "importable"})
_WORD = re.compile(r"[a-z0-9]+")
# Exceptions a failed import raises (or that catch it).
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# The first of the words of `module is not None`, before the module's names (no word of code has a space).
_MODULE_ITSELF = "the module "
# Statements after which the rest of their block does not run.
_LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# The nodes that hold blocks of statements, and the fields that hold them.
_TRIES = tuple(kind for kind in (ast.Try, getattr(ast, "TryStar", None)) if kind is not None)
_HOLDING_BLOCKS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
                   ast.While, ast.With, ast.AsyncWith, *_TRIES, ast.ExceptHandler,
                   *((ast.match_case,) if hasattr(ast, "match_case") else ()))
_BLOCKS = ("body", "orelse", "finalbody")


def _words(node: ast.AST) -> Words:
    return tuple(_WORD.findall(ast.unparse(node).lower()))


def _asks_presence(words: Words) -> bool:
    # (`shutil.which("nvidia-smi")` asks whether a program is there; "which" alone is a common word)
    return any(word in _PRESENCE_WORDS for word in words) or ("shutil", "which") in zip(words, words[1:])


def names_package(words: Words, package: str) -> bool:
    """Whether a presence question's words name `package` (a module name, as in
    tips.CUDA_ONLY_PACKAGES).  Only a package that is one as a whole counts: where only a part of
    a package is CUDA-only (vLLM's NCCL communicator, DeepSpeed's CUDA ops), the package itself is
    there on an Ascend machine."""
    if "." in package:
        return False
    short_names = PACKAGE_SHORT_NAMES.get(package, ())
    if words and words[0] == _MODULE_ITSELF:
        return any(word in (package, *short_names) for word in words[1:])
    parts = tuple(_WORD.findall(package.lower()))
    if any(word in short_names for word in words):
        return True
    return any(words[index:index + len(parts)] == parts for index in range(len(words) - len(parts) + 1))


def catches_failed_import(node: ast.Try) -> bool:
    """Whether a `try` expects its imports to fail (`except ImportError`, or any exception)."""
    return bool(caught_names(node) & IMPORT_ERRORS)


@dataclass(frozen=True)
class Region:
    """Lines (first, last) that run only where a test decided, or in a `try`."""

    first: int
    last: int
    # the words of each presence question that holds there; None: the body of a `try`
    words: Optional[Tuple[Words, ...]]
    test: Optional[ast.expr] = None  # the test (or, for a `try`, None)
    holds: bool = True  # whether the lines run where the test holds (else: where it does not)
    caught: FrozenSet[str] = frozenset()  # for a `try`: the exceptions it catches


class PackageTests:
    """The regions of a file that run only after a package test, found from its nodes by class
    (`nodes_by_class`); `text`, where known, gives the questions as the file writes them."""

    def __init__(self, groups: Dict[type, List[ast.AST]], text: Optional[str] = None) -> None:
        self._groups = groups
        self._text = text
        self._flags: Optional[Dict[tuple, Optional[Conditions]]] = None
        self._modules: Optional[Dict[str, set]] = None
        self.regions: List[Region] = sorted(self._regions(), key=lambda region: (region.first, -region.last))

    @classmethod
    def of_text(cls, text: str, statements: Optional[Callable[[], Iterable[Tuple[int, str]]]] = None) -> "PackageTests":
        """The regions of a text; where this Python cannot parse it whole, of those of its
        top-level statements ((first line, text) each, from `statements`) that it can."""
        try:
            tree = ast_of(text)
        except NOT_PARSABLE:
            tree = ast_of_statements(statements() if statements is not None else ())
        return cls(nodes_by_class(tree), text)

    # -- what a place asks ------------------------------------------------------------------------
    def question(self, start: int, end: int, package: str, is_import: bool = False) -> Union[str, None, bool]:
        """Where lines `start`..`end` run: only where a test asking whether `package` is there
        decided ("where is_bnb_available() holds"); None for an import in a `try` that expects it
        to fail (`is_import`); False if neither."""
        for region in self.regions:
            if not region.first <= start <= end <= region.last:
                continue
            if region.words is None:
                if is_import and region.caught & IMPORT_ERRORS:
                    return None
            elif any(names_package(words, package) for words in region.words):
                return self._question(region)
        return False

    def caught(self, start: int, end: int, exceptions: Iterable[str]) -> bool:
        """Whether lines `start`..`end` are in the body of a `try` that catches one of `exceptions`."""
        wanted = frozenset(exceptions)
        return any(region.words is None and region.first <= start <= end <= region.last and region.caught & wanted
                   for region in self.regions)

    def _question(self, region: Region) -> str:
        test = region.test
        if region.holds:
            return f"where {self._code(test)} holds"
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return f"where {self._code(test.operand)} holds"
        return f"where {self._code(test)} does not hold"

    def _code(self, node: ast.AST) -> str:
        written = ast.get_source_segment(self._text, node) if self._text is not None else None
        return written if written is not None else ast.unparse(node)

    # -- the tests --------------------------------------------------------------------------------
    def conditions(self, test: ast.expr, _reading: FrozenSet[str] = frozenset()) -> Conditions:
        """(the words of each presence question that holds whenever `test` is true, those of each
        that holds whenever it is false)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            when_true, when_false = self.conditions(test.operand, _reading)
            return when_false, when_true
        if isinstance(test, ast.BoolOp):
            parts = [self.conditions(value, _reading) for value in test.values]
            if isinstance(test.op, ast.And):
                return [words for when_true, _ in parts for words in when_true], []
            return [], [words for _, when_false in parts for words in when_false]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            # `bnb is not None`, after `try: import bitsandbytes as bnb` / `except ImportError: bnb = None`:
            # the module's own name, not an option that merely names it (`args.use_bnb_linear is not None`)
            right = test.comparators[0]
            if not (isinstance(right, ast.Constant) and right.value is None):
                return NONE
            # (`optim is not None`, where optim is set only after the import; a variable that a
            # test sets is never None: that compares nothing)
            flag = self._flag(test.left.id, test.lineno, _reading | {test.left.id}, after_import=True) if (
                isinstance(test.left, ast.Name) and test.left.id not in _reading) else None
            if flag is not None:
                words_true, words_false = flag
                return (words_true, words_false) if isinstance(test.ops[0], ast.IsNot) else (
                    (words_false, words_true) if isinstance(test.ops[0], ast.Is) else NONE)
            if isinstance(test.left, ast.Name):
                words = (_MODULE_ITSELF, test.left.id, *sorted(self._imported_as().get(test.left.id, ())))
            else:  # `find_spec("bitsandbytes") is not None`
                words = _words(test.left)
                if not _asks_presence(words):
                    return NONE
            if isinstance(test.ops[0], ast.IsNot):
                return [words], []
            if isinstance(test.ops[0], ast.Is):
                return [], [words]
            return NONE
        if isinstance(test, (ast.Name, ast.Attribute)):
            name = dotted(test)
            if name is not None and name not in _reading:
                flag = self._flag(name, test.lineno, _reading | {name})
                if flag is not None:
                    return flag
        if isinstance(test, (ast.Call, ast.Name, ast.Attribute)):
            words = _words(test)
            return ([words], []) if _asks_presence(words) else NONE
        return NONE

    def _imported_as(self) -> Dict[str, set]:
        """Local name -> the top packages the file's imports bind it to (`xops` -> xformers)."""
        if self._modules is None:
            self._modules = {}
            for kind in (ast.Import, ast.ImportFrom):
                for node in self._groups.get(kind, ()):
                    for name, target in import_bindings(node):
                        if not target.startswith("."):
                            self._modules.setdefault(name, set()).add(target.split(".")[0])
        return self._modules

    def _flag(self, name: str, line: int, reading: FrozenSet[str], after_import: bool = False) -> Optional[Conditions]:
        """What a variable read on `line` says where it was set from a presence test
        (`HAS_BNB = is_bnb_available()`; set to True in a `try` after `import bitsandbytes`), where
        every value that can make it true says the same; None where it is not such a variable
        (`after_import`: nor set only in such a `try`).  A name set in the function that reads it
        is that function's (`package_exists`, set anew in each of a module's functions); else the
        module's.  An attribute (`self.has_bnb`) is the file's."""
        if self._flags is None:
            self._read_assignments()
        scope = None
        if "." not in name:
            scope = self._function_at(line)
            while scope is not None and (name, scope) not in self._assigned:
                scope = self._outer.get(scope)
        key = (name, scope, after_import)
        if key in self._flags:
            return self._flags[key]
        found = None
        for value in self._assigned.get((name, scope), ()):
            if isinstance(value, ast.Constant) and value.value in (False, None):
                continue  # (the value where the package is not there: it makes the variable false)
            said = self._set_after_import.get(id(value))
            if said is None:
                if after_import:
                    found = None
                    break
                said = self.conditions(value, reading)
            if not said[0] or (found is not None and said != found):
                found = None
                break
            found = said
        self._flags[key] = found
        return found

    def _read_assignments(self) -> None:
        self._flags = {}
        # each function's lines, innermost last, and the function around each
        functions = sorted((node for kind in (ast.FunctionDef, ast.AsyncFunctionDef) for node in self._groups.get(kind, ())),
                           key=lambda node: (node.lineno, -(node.end_lineno or node.lineno)))
        self._functions = [(node.lineno, node.end_lineno or node.lineno, id(node)) for node in functions]
        self._starts = [first for first, _, _ in self._functions]
        self._outer: Dict[int, Optional[int]] = {
            key: self._function_at(first, within=lambda other: other != key) for first, _, key in self._functions}
        self._assigned: Dict[tuple, List[ast.expr]] = {}
        for kind in (ast.Assign, ast.AnnAssign):
            for node in self._groups.get(kind, ()):
                targets = node.targets if kind is ast.Assign else [node.target]
                for target in targets:
                    name = dotted(target)
                    if name is not None and node.value is not None:
                        scope = None if "." in name else self._function_at(node.lineno)
                        self._assigned.setdefault((name, scope), []).append(node.value)
        self._set_after_import: Dict[int, Conditions] = {}
        for node in self._groups.get(ast.Try, ()):
            if not catches_failed_import(node):
                continue
            imported: List[Words] = []
            for statement in node.body:
                if isinstance(statement, (ast.Import, ast.ImportFrom)) and not getattr(statement, "level", 0):
                    modules = ([alias.name for alias in statement.names] if isinstance(statement, ast.Import)
                               else [statement.module or ""])
                    imported.extend(("installed", *_WORD.findall(module.split(".")[0].lower())) for module in modules)
                elif isinstance(statement, ast.Assign) and imported:
                    self._set_after_import[id(statement.value)] = (list(imported), [])

    def _function_at(self, line: int, within=None) -> Optional[int]:
        """The innermost function whose lines hold `line` (its node's id), None at module level:
        of those that start on or before it, the last to start that holds it."""
        index = bisect.bisect_right(self._starts, line)
        while index:
            index -= 1
            first, last, key = self._functions[index]
            if line <= last and (within is None or within(key)):
                return key
        return None

    # -- the regions ------------------------------------------------------------------------------
    def _regions(self) -> Iterable[Region]:
        groups = self._groups
        for node in groups.get(ast.If, ()):
            when_true, when_false = self.conditions(node.test)
            if when_true:
                yield Region(node.body[0].lineno, _last_line(node.body), tuple(when_true), node.test, True)
            if when_false and node.orelse:
                yield Region(node.orelse[0].lineno, _last_line(node.orelse), tuple(when_false), node.test, False)
        for node in groups.get(ast.IfExp, ()):
            when_true, when_false = self.conditions(node.test)
            if when_true:
                yield Region(node.body.lineno, node.body.end_lineno, tuple(when_true), node.test, True)
            if when_false:
                yield Region(node.orelse.lineno, node.orelse.end_lineno, tuple(when_false), node.test, False)
        for node in groups.get(ast.BoolOp, ()):
            # (each value runs after the ones before it were true, for `and`; false, for `or`)
            holds = isinstance(node.op, ast.And)
            decided: List[Words] = []
            asking = None  # the first value that asks
            for before, value in zip(node.values, node.values[1:]):
                said = self.conditions(before)[0 if holds else 1]
                if said and asking is None:
                    asking = before
                decided += said
                if decided:
                    yield Region(value.lineno, value.end_lineno, tuple(decided), asking, holds)
        for kind in _TRIES:
            for node in groups.get(kind, ()):
                yield Region(node.body[0].lineno, _last_line(node.body), None, caught=caught_names(node))
        yield from self._after_early_exits()

    def _after_early_exits(self) -> Iterable[Region]:
        """`if not is_bnb_available(): return`: the rest of the block runs only where it holds."""
        for statements in _blocks(self._groups):
            for index, statement in enumerate(statements[:-1]):
                if (isinstance(statement, ast.If) and not statement.orelse
                        and isinstance(statement.body[-1], _LEAVING)):
                    when_false = self.conditions(statement.test)[1]
                    if when_false:
                        yield Region(statements[index + 1].lineno, _last_line(statements), tuple(when_false),
                                     statement.test, False)


def _last_line(statements: List[ast.stmt]) -> int:
    return statements[-1].end_lineno or statements[-1].lineno


def _blocks(groups: Dict[type, List[ast.AST]]) -> Iterable[List[ast.stmt]]:
    """Every block of statements of a file."""
    for kind in _HOLDING_BLOCKS:
        for node in groups.get(kind, ()):
            for field in _BLOCKS:
                statements = getattr(node, field, None)
                if statements:
                    yield statements
