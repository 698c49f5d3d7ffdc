"""Where a collective backend's name ("nccl") goes: to torch's process groups, or to another library.

"nccl" becomes "hccl" only where it reaches torch's process groups (torch_npu registers "hccl"
there).  Other collective libraries take "nccl" by name too, or run NCCL themselves (Ray's
collective groups, vLLM's NCCL communicator, CuPy's NCCL): they have no HCCL, so a name handed
to one stays as written.  A name reaches one through what holds it (a variable, an attribute, a
command-line option, a parameter, a dataclass field), in its file or, for a project's
configuration, in another: an RL trainer's `weight_sync_backend` is declared in its config module
and handed to Ray in its trainer.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Dict, FrozenSet, Optional, Tuple

from .scan import FileScan
from .scan.reading import last_name

# Collective libraries other than torch's process groups that take an NCCL backend by name, or
# run NCCL themselves: "nccl" handed to them is theirs, and they have no HCCL.
FOREIGN_COLLECTIVES = ("ray.util.collective", "cupy.cuda.nccl", "vllm.distributed.device_communicators",
                       "vllm.distributed.utils.StatelessProcessGroup", "vllm.distributed.weight_transfer", "pynccl",
                       # vLLM's weight-transfer settings (backend "nccl" or "ipc"), as vllm.config exports them
                       "vllm.config.WeightTransferConfig", "vllm.config.weight_transfer",
                       # torchft's fault-tolerant process groups (ProcessGroupNCCL, ProcessGroupGloo): no HCCL one
                       "torchft")
NCCL_NAMES = ("nccl", "NCCL")
# (a file naming none of these words hands no backend's name to another library: the first parts of
# their modules as imported, `from ray.util import collective` too)
_FOREIGN_WORDS = ("ray.util", "cupy", "device_communicators", "StatelessProcessGroup", "weight_transfer", "pynccl",
                  "WeightTransferConfig",
                  "torchft")
# What a maker of torch's process groups is given as its backend, read from the text (cheaper than
# parsing every file that makes a group): `init_process_group(backend=args.dist_backend`,
# `init_process_group(cfg.backend`, `DDPStrategy(process_group_backend=self.backend`.
TORCH_WORDS = ("init_process_group", "new_group", "new_subgroups", "init_distributed", "InitProcessGroupKwargs",
                "process_group_backend", "ddp_backend")
_HANDED_TO_TORCH = re.compile(
    r"\b(?:init_process_group\(\s*(?:backend\s*=\s*)?|(?:new_group|new_subgroups)\([^()]*?\bbackend\s*=\s*|"
    r"init_distributed\(\s*(?:dist_backend\s*=\s*)?|InitProcessGroupKwargs\(\s*(?:backend\s*=\s*)?|"
    r"process_group_backend\s*=\s*|ddp_backend\s*=\s*)(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*)\s*[,)\n]")


def foreign_library(names) -> Optional[str]:
    """The collective library of FOREIGN_COLLECTIVES that one of these qualified names belongs to."""
    return next((name for name in sorted(names) if name.startswith(FOREIGN_COLLECTIVES)), None)


def foreign_backends(file_scan: FileScan) -> Dict[str, str]:
    """The names (their last part) that the file hands to a collective library other than torch's,
    directly, by testing them for "nccl" before calling one, or through one of its own functions
    and classes that hands a parameter on to one -> that library."""
    qualified = file_scan.imports.qualified
    foreign: Dict[str, str] = {}
    calls_one = False
    for call in file_scan.calls:
        library = foreign_library(qualified(call.func))
        if library is not None:
            calls_one = True
            for value in [*call.args, *(keyword.value for keyword in call.keywords)]:
                name = last_name(value)
                if name:
                    foreign.setdefault(name, library)
    if not calls_one:  # (what follows finds names on their way to a call of one)
        return foreign
    for node in file_scan.groups.get(ast.If, ()):
        library = _nccl_test_before_foreign(node, lambda call: foreign_library(qualified(call.func)))
        if library is not None:
            for side in _compared(node.test):
                name = last_name(side)
                if name:
                    foreign.setdefault(name, library)
    # what the file hands to its own functions and classes that hand a parameter on to one
    # (`WeightSync(backend=args.sync_backend)`, whose __init__ gives `backend` to Ray)
    foreign_parameters = _foreign_parameters(file_scan, qualified)
    if foreign_parameters:
        for call in file_scan.calls:
            for value, library in _arguments_to_foreign_parameters(call, foreign_parameters):
                name = last_name(value)
                if name:
                    foreign.setdefault(name, library)
    # the field a name handed on was read from (`backend = getattr(args.vllm, "sync_backend",
    # "nccl")`, `backend = cfg.sync_backend`): the option or configuration field is that library's too
    for assign in file_scan.groups.get(ast.Assign, ()) if foreign else ():
        target = assign.targets[0] if len(assign.targets) == 1 else None
        library = foreign.get(target.id) if isinstance(target, ast.Name) else None
        field = _field_read(assign.value) if library is not None else None
        if field:
            foreign.setdefault(field, library)
    return foreign


def _field_read(value: ast.AST) -> Optional[str]:
    """The attribute `value` reads: `obj.field`, `getattr(obj, "field"[, default])`."""
    if isinstance(value, ast.Attribute):
        return value.attr
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr"
            and len(value.args) >= 2 and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str)):
        return value.args[1].value
    return None


# What one file tells the project about backend names: (name, library) it hands to another
# library, sorted, and the names it hands to torch's process groups.
BackendHolders = Tuple[Tuple[Tuple[str, str], ...], FrozenSet[str]]


def backend_holders_in(text: str) -> BackendHolders:
    """BackendHolders of a file's text: what it hands to torch's process groups read from the text
    (`_HANDED_TO_TORCH`), what it hands to another library from its syntax tree, parsed only where
    it names "nccl" and imports one."""
    to_torch = (frozenset(_HANDED_TO_TORCH.findall(text)) - {"None", "True", "False"}
                if any(word in text for word in TORCH_WORDS) else frozenset())
    if not (any(name in text for name in NCCL_NAMES) and any(word in text for word in _FOREIGN_WORDS)):
        return (), to_torch
    try:
        file_scan = FileScan(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return (), to_torch
    return tuple(sorted(foreign_backends(file_scan).items())), to_torch


def project_foreign_backends(holders) -> Tuple[Tuple[str, str], ...]:
    """The names that some file of the project hands to a collective library other than torch's
    and none hands to torch's process groups (where one does, its "nccl" is torch's, as in a
    file alone) -> that library, sorted; from each file's BackendHolders."""
    foreign: Dict[str, str] = {}
    to_torch = set()
    for handed_on, torch_names in holders:
        for name, library in handed_on:
            foreign.setdefault(name, library)
        to_torch |= torch_names
    return tuple(sorted((name, library) for name, library in foreign.items() if name not in to_torch))


def _compared(test: ast.AST):
    return [side for comparison in ast.walk(test) if isinstance(comparison, ast.Compare)
            for side in (comparison.left, *comparison.comparators)]


def _nccl_test_before_foreign(node: ast.If, library_of: Callable[[ast.Call], Optional[str]]) -> Optional[str]:
    """The foreign collective library that the body of `if <...> == "nccl":` calls, if it tests
    for "nccl" and calls one."""
    if not any(isinstance(side, ast.Constant) and side.value in NCCL_NAMES for side in _compared(node.test)):
        return None
    return next((found for statement in node.body for inner in ast.walk(statement)
                 if isinstance(inner, ast.Call) for found in [library_of(inner)] if found is not None), None)


# How a callable of the file is called: its name and the parameters of its calls, positional
# ones first (without self or cls), with the library each foreign one reaches.
ForeignParameters = Dict[str, Dict[object, str]]


def _callable_name_and_parameters(function: ast.AST, classes: Dict[int, str]) -> Tuple[str, list, list]:
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    name = classes.get(id(function), function.name)  # (a class is called by its name for its __init__)
    return name, positional, [a.arg for a in function.args.kwonlyargs]


def _arguments_to_foreign_parameters(call: ast.Call, foreign_parameters: ForeignParameters):
    """(argument, library) for each argument of `call` given to a parameter of one of the file's
    callables that hands it on to a foreign collective library."""
    parameters = foreign_parameters.get(last_name(call.func) or "")
    if not parameters:
        return
    for index, value in enumerate(call.args):
        if index in parameters and not isinstance(value, ast.Starred):
            yield value, parameters[index]
    for keyword in call.keywords:
        if keyword.arg in parameters:
            yield keyword.value, parameters[keyword.arg]


def _foreign_parameters(file_scan: "FileScan", qualified) -> ForeignParameters:
    """The parameters of the file's functions (a class's __init__: the class) that the function
    hands to a foreign collective library, directly, by testing it for "nccl" before calling one,
    or through another such function of the file: callable name -> {position or name: library}."""
    functions = file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef)
    if not functions or not any(foreign_library(qualified(call.func)) for call in file_scan.calls):
        return {}
    classes = {id(statement): node.name for node in file_scan.groups.get(ast.ClassDef, ())
               for statement in node.body if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
               and statement.name == "__init__"}
    found: ForeignParameters = {}

    def library_of(call: ast.Call) -> Optional[str]:  # (directly, or through a callable found so far)
        return foreign_library(qualified(call.func)) or next(
            (library for _, library in _arguments_to_foreign_parameters(call, found)), None)

    changed = True
    while changed:  # (until no function adds one: each round follows one more call of the file's own)
        changed = False
        for function in functions:
            name, positional, keyword_only = _callable_name_and_parameters(function, classes)
            own = {*positional, *keyword_only}
            reached: Dict[str, str] = {}
            for inner in ast.walk(function):
                if isinstance(inner, ast.Call):
                    direct = foreign_library(qualified(inner.func))
                    handed = ([(value, direct) for value in (*inner.args, *(k.value for k in inner.keywords))]
                              if direct else list(_arguments_to_foreign_parameters(inner, found)))
                    for value, library in handed:
                        if isinstance(value, ast.Name) and value.id in own:
                            reached.setdefault(value.id, library)
                elif isinstance(inner, ast.If):
                    library = _nccl_test_before_foreign(inner, library_of)
                    if library is not None:
                        for side in _compared(inner.test):
                            if isinstance(side, ast.Name) and side.id in own:
                                reached.setdefault(side.id, library)
            entry = found.setdefault(name, {})
            for parameter, library in reached.items():
                keys = [parameter] + ([positional.index(parameter)] if parameter in positional else [])
                for key in keys:
                    if key not in entry:
                        entry[key] = library
                        changed = True
    return {name: parameters for name, parameters in found.items() if parameters}
