"""Where a string is the value of one of the project's Enums: a label turned into a member, no device.

A project may name its own choices with an Enum whose values spell devices (`class TimerType(Enum):
CPU = "cpu"; CUDA = "cuda"`) and take them as text: `TimerType("cuda")`, a parameter annotated with
the Enum (`timer_type: Union[TimerType, str]`), one its function turns into a member
(`timer_type = TimerType(timer_type)`), or a dataclass field of the Enum's type.  "cuda" handed
there is the member's value: renamed, `TimerType("npu")` raises ValueError at start.  What the
member selects is the project's own code, migrated where it stands (a CUDA timer's torch.cuda
events become torch.npu's).

Read from each file of the project before any is migrated (kernel_launchers.project_launchers), for
the Enums it defines and the functions and classes of the same file that take them: a call in any
file (`nanotron_timer("step", "cuda")`, of a module-level instance whose class's `__call__` takes
a TimerType) is known by the name it calls.  Only files that define an Enum and spell a device in
it are parsed.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple, Union

from .scan.reading import last_name

# (callable's name as called, positional index without self/cls or keyword, the Enum's values that
# spell a device), sorted by repr: how a project's file gives its Enum parameters.
EnumParameters = Tuple[Tuple[str, Union[int, str], Tuple[str, ...]], ...]

# A class statement with an Enum among its bases (`class Kind(str, Enum):`, `(enum.Enum)`,
# `(ExplicitEnum)`): a file without one defines none.
_ENUM_CLASS = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\([^)]*Enum\b", re.MULTILINE)
# The device words an Enum's value may spell that the rules would rename.
_DEVICE_WORDS = ("cuda", "nccl")
# Names of torch's own calls that take a device (`x.to("cuda")`, `torch.zeros(2, device="cuda")`):
# a project method of the same name (`def to(self, device: DeviceKind)`) is not told apart from
# torch's where it is called, and torch's are by far the more common, so it is not recorded.
_TORCH_DEVICE_CALLS = frozenset({"to", "cuda", "type", "device", "set_device", "autocast", "tensor", "empty", "zeros",
                                 "ones", "full", "rand", "randn", "randint", "arange", "Generator", "Stream", "Event",
                                 "init_process_group", "new_group"})


def enum_parameters_in(text: str) -> EnumParameters:
    """EnumParameters of one file's text (see the module)."""
    if not any(word in text for word in _DEVICE_WORDS) or "Enum" not in text or _ENUM_CLASS.search(text) is None:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return enum_parameters_of(tree)


def enum_parameters_of(tree: ast.Module, classes: Optional[Iterable[ast.ClassDef]] = None) -> EnumParameters:
    """EnumParameters of one file's syntax tree (the file's own, where it is migrated alone);
    `classes`: its class statements, where the caller has them."""
    enums = _device_enums(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)) if classes is None \
        else _device_enums(classes)
    if not enums:
        return ()
    found: Dict[Tuple[str, Union[int, str]], set] = {}
    for name, values in enums.items():  # the Enum itself: `TimerType("cuda")`, `TimerType(value="cuda")`
        found.setdefault((name, 0), set()).update(values)
        found.setdefault((name, "value"), set()).update(values)
    instances = _module_instances(tree)
    for owner, function in _functions(tree):
        if function.name in ("__init__", "__call__"):  # (the class's call, an instance's)
            if owner is None:
                continue
            callables = [owner] if function.name == "__init__" else instances.get(owner, [])
        else:
            callables = [function.name]
        callables = [name for name in callables if name not in _TORCH_DEVICE_CALLS]
        for key, values in _enum_parameters_of(function, enums) if callables else ():
            for name in callables:
                found.setdefault((name, key), set()).update(values)
    for definition in (node for node in tree.body if isinstance(node, ast.ClassDef) and _a_dataclass(node)):
        for statement in definition.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                values = _enum_values_named(statement.annotation, enums)
                if values:
                    found.setdefault((definition.name, statement.target.id), set()).update(values)
    return _table(found)


def project_enum_parameters(per_file: Iterable[EnumParameters]) -> EnumParameters:
    """The project's EnumParameters, from each file's: one entry per (callable, parameter)."""
    merged: Dict[Tuple[str, Union[int, str]], set] = {}
    for entries in per_file:
        for name, key, values in entries:
            merged.setdefault((name, key), set()).update(values)
    return _table(merged)


def _table(found: Dict[Tuple[str, Union[int, str]], set]) -> EnumParameters:
    """EnumParameters of (callable, parameter) -> the values it takes."""
    return tuple(sorted(((name, key, tuple(sorted(values))) for (name, key), values in found.items()), key=repr))


def parameters_taking(table: EnumParameters, value: str) -> FrozenSet[tuple]:
    """(callable, positional index or keyword) of the parameters in `table` that take `value` as an
    Enum's value."""
    return frozenset((name, key) for name, key, values in table if value in values)


def _device_enums(classes: Iterable[ast.ClassDef]) -> Dict[str, FrozenSet[str]]:
    """The Enum classes among `classes` with a member whose value is a string spelling a device
    word -> those values."""
    enums: Dict[str, FrozenSet[str]] = {}
    for node in classes:
        if not any((last_name(base) or "").endswith("Enum") for base in node.bases):
            continue
        values = frozenset(statement.value.value for statement in node.body
                           if isinstance(statement, (ast.Assign, ast.AnnAssign))
                           and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)
                           and any(word in statement.value.value.lower() for word in _DEVICE_WORDS))
        if values:
            enums[node.name] = values
    return enums


def _functions(tree: ast.Module) -> List[Tuple[object, ast.FunctionDef]]:
    """(the class a function is a method of, or None; the function) of every function of the file."""
    found = []

    def visit(body, owner):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((owner, node))
                visit(node.body, None)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, node.name)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit(inner, owner)
    visit(tree.body, None)
    return found


def _module_instances(tree: ast.Module) -> Dict[str, List[str]]:
    """The file's classes -> the module-level names bound to an instance of one (`timer =
    Timers()`): a call of such a name calls its class's `__call__`."""
    instances: Dict[str, List[str]] = {}
    for statement in tree.body:
        value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            instances.setdefault(value.func.id, []).extend(target.id for target in targets if isinstance(target, ast.Name))
    return instances


def _enum_parameters_of(function: ast.FunctionDef, enums: Dict[str, FrozenSet[str]]):
    """(positional index without self/cls, or keyword; the Enum's device values) of the function's
    parameters annotated with one of `enums` or turned into a member of one in its body."""
    converted: Dict[str, FrozenSet[str]] = {}
    for inner in ast.walk(function):
        if (isinstance(inner, ast.Call) and last_name(inner.func) in enums and len(inner.args) == 1
                and isinstance(inner.args[0], ast.Name)):
            converted[inner.args[0].id] = enums[last_name(inner.func)]
    positional = [*function.args.posonlyargs, *function.args.args]
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    for index, parameter in enumerate(positional):
        values = _enum_values_named(parameter.annotation, enums) | converted.get(parameter.arg, frozenset())
        if values:
            yield index, values
            yield parameter.arg, values
    for parameter in function.args.kwonlyargs:
        values = _enum_values_named(parameter.annotation, enums) | converted.get(parameter.arg, frozenset())
        if values:
            yield parameter.arg, values


def _enum_values_named(annotation, enums: Dict[str, FrozenSet[str]]) -> FrozenSet[str]:
    """The device values of the Enums an annotation names (`TimerType`, `Union[TimerType, str]`,
    `Optional["TimerType"]`, `TimerType | str`)."""
    if annotation is None:
        return frozenset()
    values: FrozenSet[str] = frozenset()
    for inner in ast.walk(annotation):
        name = (inner.id if isinstance(inner, ast.Name) else inner.attr if isinstance(inner, ast.Attribute)
                else inner.value.strip() if isinstance(inner, ast.Constant) and isinstance(inner.value, str) else None)
        if name in enums:
            values |= enums[name]
    return values


def _a_dataclass(node: ast.ClassDef) -> bool:
    return any(last_name(decorator.func if isinstance(decorator, ast.Call) else decorator) == "dataclass"
               for decorator in node.decorator_list)
