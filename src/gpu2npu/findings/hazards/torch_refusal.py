"""The project's own refusal of the release's torch (NPU933): a `raise`, a failing `assert` or a
`sys.exit` that a test of torch's version reaches with the torch the chosen torch_npu release is
built for.  `if Version(torch.__version__) < Version("2.4.0"): raise RuntimeError(...)` at the
top of a module stops every import of it under torch 2.1: the migrated project never starts, and
nothing in the migration's other rows says why.

A test is read for what it gives with that torch: `torch.__version__` (also through a name the
file assigns it to once, `.split("+")[0]`, `.base_version`, `.release`), packaging's `Version`/
`parse` and the like, string and tuple comparisons as Python makes them, `and`/`or`/`not`, and
the version helpers of accelerate (`is_torch_version(">=", "2.4")`) and transformers
(`is_torch_greater_or_equal("2.4")`).  Only a stop that the version decides is a row: every other
test on the way must hold on the NPU too (`DEVICE_TYPE == "npu"`, an `elif` after other devices'
tests, `__name__ == "__main__"`); one whose answer is not known (`if use_fsdp2 and ...`) makes no
row, nor does a stop inside a `try` that may catch it.  Module-level code and the top of each
function are read (a function's row says it stops that function).
"""
from __future__ import annotations

import ast
import operator
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from ...knowledge.apidata import available_versions, version_key
from ...knowledge.versions import release_numbers
from ...records.change import Report
from ...records.finding_kinds import TORCH_REFUSED
from .view import FileView

TRIGGERS = (b"__version__", b"is_torch_version", b"is_torch_greater_or_equal")

_TORCH_VERSIONS = frozenset({"torch.__version__", "torch.version.__version__"})
# What turns a version string into something that compares as a version.
_VERSION_PARSERS = frozenset({
    "packaging.version.Version", "packaging.version.parse", "packaging.version.LegacyVersion",
    "pkg_resources.parse_version", "pkg_resources.packaging.version.Version",
    "distutils.version.LooseVersion", "distutils.version.StrictVersion", "looseversion.LooseVersion",
})
# ... and the names projects give their own wrappers of these (unsloth_zoo.utils.Version)
_VERSION_CLASS_NAMES = frozenset({"Version", "LooseVersion", "StrictVersion", "parse_version"})
_SAME_VERSION_ATTRIBUTES = frozenset({"base_version", "public", "vstring"})
_PART_ATTRIBUTES = {"major": 0, "minor": 1, "micro": 2}
_EXITS = frozenset({"sys.exit", "os._exit"})
_NPU = "npu"
# A comparison's operator, as a test writes it and as a version helper takes it (`is_torch_version(">=", v)`).
_OPERATORS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
              ast.Eq: operator.eq, ast.NotEq: operator.ne}
_HELPER_OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
                     "!=": operator.ne}


class _Unknown:
    """What an expression gives where the release's torch does not decide it."""


UNKNOWN = _Unknown()


class _Version(tuple):
    """A release number as packaging compares it (the numbers only; trailing zeros do not count)."""

    @classmethod
    def of(cls, text: str) -> Optional["_Version"]:
        numbers = list(release_numbers(text.strip().lstrip("vV")))
        if not numbers:
            return None
        while len(numbers) > 1 and numbers[-1] == 0:
            numbers.pop()
        return cls(numbers)


def _compare(compared: Optional[Callable[[object, object], bool]], left, right):
    """`compared(left, right)`, a version beside a string read as a version; UNKNOWN where the two
    do not compare (or the operator is none of _OPERATORS')."""
    if isinstance(left, _Version) or isinstance(right, _Version):
        left = left if isinstance(left, _Version) else _Version.of(left) if isinstance(left, str) else None
        right = right if isinstance(right, _Version) else _Version.of(right) if isinstance(right, str) else None
        if left is None or right is None:
            return UNKNOWN
        left, right = tuple(left), tuple(right)
    elif type(left) is not type(right) or not isinstance(left, (str, int, tuple)):
        return UNKNOWN
    return UNKNOWN if compared is None else compared(left, right)


class _AssignedOnce:
    """The value a name read in a test holds where the file binds that name once in all, by a
    plain assignment that the place of the read sees (at the module's top, or in the function
    around the read): `TORCH = Version(torch.__version__)`.  A name bound twice, or bound also as
    a parameter, a loop variable or an import, holds what the file's course decides."""

    def __init__(self, groups) -> None:
        bindings: dict = {}
        for node in groups.get(ast.Name, ()):
            if not isinstance(node.ctx, ast.Load):
                bindings[node.id] = bindings.get(node.id, 0) + 1
        for node in groups.get(ast.arg, ()):
            bindings[node.arg] = bindings.get(node.arg, 0) + 2
        for kind in (ast.Import, ast.ImportFrom):
            for node in groups.get(kind, ()):
                for alias in node.names:
                    name = (alias.asname or alias.name).split(".")[0]
                    bindings[name] = bindings.get(name, 0) + 2
        self._groups = groups
        self._assigns = {target.id: assign for assign in groups.get(ast.Assign, ()) for target in assign.targets
                         if isinstance(target, ast.Name) and bindings.get(target.id) == 1}

    def value_read(self, name: ast.Name) -> Optional[ast.AST]:
        assign = self._assigns.get(name.id)
        if assign is None:
            return None
        # (the function around the assignment is looked for only for a name a test reads)
        groups = self._groups
        around = [function for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
                  for function in groups.get(kind, ()) if _within(assign, function)]
        function = min(around, key=_size, default=None)
        return assign.value if function is None or _within(name, function) else None


def _within(node: ast.AST, outer: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) <= (
        outer.end_lineno or outer.lineno, outer.end_col_offset or 0)


def _size(node: ast.AST) -> tuple:
    return ((node.end_lineno or node.lineno) - node.lineno, (node.end_col_offset or 0) - node.col_offset)


class _Reader:
    """Evaluates the tests of one file for one torch version, and says whether an answer came
    from that version."""

    def __init__(self, view: FileView, assigned: "_AssignedOnce", torch_version: str) -> None:
        self.view = view
        self.assigned = assigned
        self.torch_version = torch_version
        self.asked_the_version = False

    def value(self, node: ast.AST, depth: int = 0):
        if depth > 8:
            return UNKNOWN
        kind = node.__class__
        if kind is ast.Constant:
            return node.value if isinstance(node.value, (str, int)) and not isinstance(node.value, bool) else UNKNOWN
        if kind is ast.Tuple:
            items = [self.value(item, depth + 1) for item in node.elts]
            return UNKNOWN if any(item is UNKNOWN for item in items) else tuple(items)
        if kind is ast.Name or kind is ast.Attribute:
            return self._reference(node, depth)
        if kind is ast.Call:
            return self._call(node, depth)
        if kind is ast.Subscript:
            return self._subscript(node, depth)
        if kind is ast.Compare:
            return self._comparison(node, depth)
        if kind is ast.BoolOp:
            return self._boolean(node, depth)
        if kind is ast.UnaryOp and isinstance(node.op, ast.Not):
            operand = self.value(node.operand, depth + 1)
            return UNKNOWN if operand is UNKNOWN else not operand
        return UNKNOWN

    def _reference(self, node: ast.AST, depth: int):
        names = self.view.qualified(node)
        if names & _TORCH_VERSIONS:
            self.asked_the_version = True
            return self.torch_version
        helper = next((name for name in names if ".is_torch_greater_or_equal_than_" in name
                       and name.startswith("transformers.")), None)
        if helper is not None:  # transformers.pytorch_utils' flags: is_torch_greater_or_equal_than_2_4
            wanted = helper.rpartition("_than_")[2].replace("_", ".")
            self.asked_the_version = True
            return _compare(operator.ge, _Version.of(self.torch_version), wanted)
        if node.__class__ is ast.Name:
            value = self.assigned.value_read(node)
            return UNKNOWN if value is None or names else self.value(value, depth + 1)
        if node.attr in _SAME_VERSION_ATTRIBUTES or node.attr in _PART_ATTRIBUTES or node.attr == "release":
            owner = self.value(node.value, depth + 1)
            if not isinstance(owner, _Version):
                return UNKNOWN
            if node.attr == "release":
                return tuple(owner) + (0,) * (3 - len(owner))
            if node.attr in _PART_ATTRIBUTES:
                index = _PART_ATTRIBUTES[node.attr]
                return owner[index] if index < len(owner) else 0
            return owner
        return UNKNOWN

    def _call(self, call: ast.Call, depth: int):
        func = call.func
        names = self.view.qualified(func)
        arguments = [self.value(argument, depth + 1) for argument in call.args]
        parses = names & _VERSION_PARSERS or any(name.rpartition(".")[2] in _VERSION_CLASS_NAMES for name in names) \
            or (func.__class__ is ast.Name and func.id in _VERSION_CLASS_NAMES)
        if parses and len(arguments) == 1 and isinstance(arguments[0], str):
            return _Version.of(arguments[0]) or UNKNOWN
        if any(name.startswith(("accelerate.", "transformers.")) and name.endswith(".is_torch_version")
               for name in names) and len(arguments) == 2 and arguments[0] in _HELPER_OPERATORS:
            self.asked_the_version = True
            return _compare(_HELPER_OPERATORS[arguments[0]], _Version.of(self.torch_version), arguments[1])
        if any(name.startswith("transformers.") and name.endswith(".is_torch_greater_or_equal")
               for name in names) and arguments and isinstance(arguments[0], str):
            self.asked_the_version = True
            return _compare(operator.ge, _Version.of(self.torch_version), arguments[0])
        if func.__class__ is ast.Name and func.id == "str" and not names and len(arguments) == 1:
            return arguments[0] if isinstance(arguments[0], str) else UNKNOWN
        if func.__class__ is ast.Attribute and func.attr == "split" and not call.keywords:
            text = self.value(func.value, depth + 1)
            if isinstance(text, str) and all(isinstance(argument, str) for argument in arguments):
                return tuple(text.split(*arguments))
        return UNKNOWN

    def _subscript(self, node: ast.Subscript, depth: int):
        owner = self.value(node.value, depth + 1)
        index = self.value(node.slice, depth + 1)
        if isinstance(owner, tuple) and isinstance(index, int) and -len(owner) <= index < len(owner):
            return owner[index]
        return UNKNOWN

    def _comparison(self, node: ast.Compare, depth: int):
        left = self.value(node.left, depth + 1)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.value(comparator, depth + 1)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            outcome = _compare(_OPERATORS.get(op.__class__), left, right)
            if outcome is not True:
                return outcome
            left = right
        return True

    def _boolean(self, node: ast.BoolOp, depth: int):
        # three-valued: an `and` with one false part is false whatever the others give
        deciding = not isinstance(node.op, ast.And)
        values = [self.value(part, depth + 1) for part in node.values]
        if any(value is not UNKNOWN and bool(value) == deciding for value in values):
            return deciding
        return UNKNOWN if any(value is UNKNOWN for value in values) else not deciding


def _npu_choice(test: ast.AST) -> bool:
    """`DEVICE_TYPE == "npu"` / `device in ("npu", ...)`: a test that holds where the program
    runs on the NPU."""
    return _NPU in _names_matched(test)


def _other_devices(test: ast.AST) -> bool:
    """A test of a device name that names only other devices (`DEVICE_TYPE in ("cuda", "hip")`):
    false where the same name says "npu"."""
    names = _names_matched(test)
    return bool(names) and _NPU not in names


def _names_matched(test: ast.AST) -> List[str]:
    """The strings a one-operator `==`/`in` test matches against (`x == "npu"`, `x in ("cuda",
    "hip")`); [] for any other test."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.In)):
        return []
    node = test.comparators[0]
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]


def _runs_as_a_script(test: ast.AST) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


# A path to a stop: the tests on the way, each with the outcome that leads on.
Path = Tuple[Tuple[ast.AST, bool], ...]


def _parts(test: ast.AST, outcome: bool) -> Path:
    """The tests that each came out so where `test` came out `outcome`: the parts of a true
    `and` and of a false `or`, through `not`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _parts(test.operand, not outcome)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == outcome:
        return tuple(part for value in test.values for part in _parts(value, outcome))
    return ((test, outcome),)


def _stops(statements: Sequence[ast.stmt], path: Path, is_exit) -> Iterator[Tuple[ast.stmt, Path]]:
    """The statements of `statements` (and the blocks they open) that stop the program, each
    with the tests on the way: a `raise`, an `assert` (whose own test must come out false), a
    `sys.exit(...)`.  Not the bodies of functions and classes, nor what a `try` may catch."""
    for statement in statements:
        kind = statement.__class__
        if kind is ast.Raise:
            yield statement, path
        elif kind is ast.Assert:
            yield statement, path + _parts(statement.test, False)
        elif kind is ast.Expr and isinstance(statement.value, ast.Call) and is_exit(statement.value.func):
            yield statement, path
        elif kind is ast.If:
            yield from _stops(statement.body, path + _parts(statement.test, True), is_exit)
            yield from _stops(statement.orelse, path + _parts(statement.test, False), is_exit)
        elif kind is ast.With or kind is ast.AsyncWith:
            yield from _stops(statement.body, path, is_exit)
        elif kind is ast.Try and not statement.handlers:
            yield from _stops(statement.body, path, is_exit)
            yield from _stops(statement.finalbody, path, is_exit)
        elif kind is ast.Try:  # the body's stops may be caught; what runs after it may not
            yield from _stops(statement.orelse, path, is_exit)
            yield from _stops(statement.finalbody, path, is_exit)


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view
        self._assigned = _AssignedOnce(view.groups)

    def _is_exit(self, func: ast.AST) -> bool:
        return bool(self.view.qualified(func) & _EXITS)

    def on_module(self, module: ast.Module) -> None:
        if self.view.npu_backend:
            return  # (the project's own NPU backend states what its NPU needs)
        for stop, path in _stops(module.body, (), self._is_exit):
            self._judge(stop, path, None)
        for function in (*self.view.groups.get(ast.FunctionDef, ()), *self.view.groups.get(ast.AsyncFunctionDef, ())):
            for stop, path in _stops(function.body, (), self._is_exit):
                self._judge(stop, path, function.name)

    def _refused_by(self, path: Path, torch_version: str) -> bool:
        """Whether the tests of `path` lead to the stop with `torch_version` as torch's version,
        one of them asking it."""
        reader = _Reader(self.view, self._assigned, torch_version)
        on_the_npu = any(outcome and _npu_choice(test) for test, outcome in path)
        for test, outcome in path:
            value = reader.value(test)
            if value is not UNKNOWN:
                if bool(value) != outcome:
                    return False
            elif not ((outcome and (_npu_choice(test) or _runs_as_a_script(test)))
                      or (not outcome and on_the_npu and _other_devices(test))):
                return False
        return reader.asked_the_version

    def _judge(self, stop: ast.stmt, path: Path, function: Optional[str]) -> None:
        torch_version = self.view.api.torch_version
        if not path or not self._refused_by(path, torch_version):
            return
        passing = next((version for version in available_versions()
                        if version_key(version) > version_key(torch_version) and not self._refused_by(path, version)),
                       None)
        tests = ", ".join(f"`{ast.unparse(test)}` is {'true' if outcome else 'false'}" for test, outcome in path
                          if self._asks_the_version(test))
        where = f"calling {function}() stops there" if function else "importing this module stops the program"
        way = (f"migrate with -v {passing}, whose torch passes the test, where the project's other requirements "
               "allow" if passing else "no torch_npu release gpu2npu knows is built for a torch that passes the test")
        stops = {ast.Raise: "raises", ast.Assert: "fails its assert"}.get(stop.__class__, "exits")
        self.view.add(stop, TORCH_REFUSED.code, Report.UNSUPPORTED, "torch.__version__",
                      f"the project refuses torch {torch_version}, which {self.view.release} is built for: with it "
                      f"{tests}, and this line {stops} ({where}); {way}")

    def _asks_the_version(self, test: ast.AST) -> bool:
        reader = _Reader(self.view, self._assigned, "0")
        reader.value(test)
        return reader.asked_the_version
