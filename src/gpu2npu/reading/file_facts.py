"""What the whole file says about a name or a string, for rules that are given only a piece of it
(a large file is migrated in the pieces that need the rules): read once from the file's `ast`
scan, handed to the rules and the analyses through their context.

- whether the file looks a mapping up by a device (`BACKENDS[device.type]`,
  `SEEDS.get(torch_device)`): then "cuda" keys of its mappings are device types, renamed with the
  device; elsewhere a "cuda" key is a key of data (a checkpoint's RNG states) and stays;
- the names whose values the file hands to a collective library other than torch's process
  groups (`ray.util.collective`, vLLM's NCCL communicator): an "nccl" they hold is that library's;
- the dataset classes whose `__len__` returns a number written in the code (`return 22`, or a
  module constant holding one): a DataLoader over one serves test or example data;
- the parameters of the file's functions that name an attribute (`def _apply(self, fn): ...
  getattr(v, fn)()`): a "cuda" handed to one is a method's name, not a device (renamed with
  the methods);
- whether the file reads a field of CUDA's device properties that torch_npu's have not
  (`torch.cuda.get_device_properties(0).major`, also through a variable): renamed, the query
  answers and the field raises AttributeError, where CUDA's absence raised what the code expects.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, Optional, Tuple

from ..knowledge.device_words import DEVICE_CHOICES, is_platform_label
from ..knowledge.tips import CUDA_PROPERTY_FIELDS
from .collective_backends import NCCL_NAMES, foreign_backends
from .enum_parameters import EnumParameters, enum_parameters_of
from .kernel_launchers import launchers_in
from .scan import FileScan
from .scan.reading import ast_of_statements, last_name

# What a key looked up by a device holds (`device.type`, `torch_device`, `accelerator_type`).
DEVICE_KEY_WORDS = ("dev", "accelerator", "type")
# Mapping methods whose first argument is a key.
KEY_METHODS = frozenset({"get", "pop", "setdefault"})
# Calls whose arguments are text for people (never a device, nothing decided with): print (and the
# rank-0 print0 of training scripts), logging, and a log file's write.
MESSAGE_CALLS = frozenset({"print", "print0", "debug", "info", "warning", "warn", "error", "critical", "exception",
                           "log", "write"})
# A device name as a key written out (`state["cuda"]`, `states.get("cuda:0")`).
DEVICE_KEY = re.compile(r"^cuda(:\d+)?$")


@dataclass(frozen=True)
class FileFacts:
    looks_up_by_device: bool = False
    foreign_backends: Dict[str, str] = field(default_factory=dict)  # name (last part) -> library
    # the file reads or writes a mapping under a device name written out (`rng_states["cuda"]`):
    # there "cuda" is a key of data, in its mappings written out too
    device_named_keys: bool = False
    # classes whose __len__ returns a number written in the code, and module names holding one
    sized_classes: FrozenSet[str] = frozenset()
    module_numbers: FrozenSet[str] = frozenset()
    # (function name, positional index without self/cls) and (function name, parameter name)
    attribute_parameters: FrozenSet[tuple] = frozenset()
    reads_cuda_only_properties: bool = False
    # variables handed to a call's keyword: name -> ((keyword, the callee's qualified names), ...)
    # (`accel = "gpu" if ... else "cpu"` reaches Lightning through `Trainer(accelerator=accel)`),
    # attributes by their name as ".name" (`Trainer(accelerator=cfg.device_type)`),
    # and the file's functions whose result is, as "name()" (`Trainer(accelerator=pick())`)
    keyword_arguments: Dict[str, Tuple[Tuple[str, FrozenSet[str]], ...]] = field(default_factory=dict)
    # command-line options whose choices offer "cuda" beside a label that is no device
    # (`--quant-backend` with choices cuda, triton): their destinations and flags
    # (quant_backend, --quant-backend); their "cuda" names an implementation, which a launch
    # script passes as it did
    label_options: FrozenSet[str] = frozenset()
    # the mappings that hold a device's RNG states under "cuda" (`state["rng"]["cuda"] =
    # torch.cuda.get_rng_state_all()`, `set_rng_state_all(ckpt["cuda"])`), as mapping_text writes
    # them: a checkpoint's data, which checkpoints written on GPUs keep under "cuda"
    rng_state_mappings: FrozenSet[str] = frozenset()
    # the names holding the backend Triton compiles for (`backend = triton.runtime.driver.active.
    # get_current_target().backend`, and the file's functions returning it, as "name()"): its
    # "cuda" is Triton's CUDA backend, no torch device (under Triton-Ascend it says "npu" itself)
    triton_backends: FrozenSet[str] = frozenset()
    # the names that hold a platform's label (knowledge.device_words): compared with one
    # (`backend == "rocm"`, `kind in ("cuda", "vulkan")`), given one (`backend = "metal"`), or
    # returning one (a function, as "name()"); their "cuda" is CUDA the platform, no torch device
    label_holders: FrozenSet[str] = frozenset()
    # as attribute_parameters, for the parameters a getattr only reads with (`def version(attr):
    # return getattr(module, attr, None)`): what is handed to them names a value, no method
    read_attribute_parameters: FrozenSet[tuple] = frozenset()
    # the plain names the file calls (`move()`): a method looked up into one of them is called
    called_names: FrozenSet[str] = frozenset()
    # the parameters of the file's functions and classes that take its Enums' values spelling a
    # device (the project's are Options.enum_parameters; these serve where the file is migrated alone)
    enum_parameters: EnumParameters = ()


def mapping_text(code: str) -> str:
    """A mapping's code as the facts record it (`state["rng"]` and `state['rng']` alike)."""
    return re.sub(r"\s+", "", code).replace('"', "'")


# What reads or restores a device's RNG states (torch.cuda's, torch.npu's, a framework's own), by
# the last part of its name.
_RNG_STATE_CALLEE = re.compile(r"(^|_)(get|set)_rng_state(_all)?$")


def is_rng_state_callee(name: str) -> bool:
    """Whether a callee named `name` (`torch.cuda.get_rng_state_all`) reads or restores RNG states."""
    return _RNG_STATE_CALLEE.search(name.rsplit(".", 1)[-1]) is not None


class FactsOfScan:
    """FileFacts read from the scan when a rule first asks (few files hold a string they are asked
    about: most files never pay for them); for a file `ast` cannot read whole, from its top-level
    statements ((first line, text) each, from `statements`, called when first asked)."""

    def __init__(self, file_scan: Optional["FileScan"],
                 statements: Optional[Callable[[], Iterable[Tuple[int, str]]]] = None, data: Optional[bytes] = None) -> None:
        """`data`: the whole file's bytes, where the rules are given a piece of it."""
        self._file_scan = file_scan
        self._statements = statements
        self._facts: Optional[FileFacts] = None
        self._data = data
        self._launchers: Optional[Dict[str, str]] = None

    def _read(self) -> FileFacts:
        if self._facts is None:
            self._facts = (facts_of(self._file_scan) if self._file_scan is not None
                           else facts_of_statements(self._statements()))
        return self._facts

    @property
    def looks_up_by_device(self) -> bool:
        return self._read().looks_up_by_device

    @property
    def rng_state_mappings(self) -> FrozenSet[str]:
        return self._read().rng_state_mappings

    @property
    def triton_backends(self) -> FrozenSet[str]:
        return self._read().triton_backends

    @property
    def foreign_backends(self) -> Dict[str, str]:
        return self._read().foreign_backends

    @property
    def device_named_keys(self) -> bool:
        return self._read().device_named_keys

    @property
    def sized_classes(self) -> FrozenSet[str]:
        return self._read().sized_classes

    @property
    def module_numbers(self) -> FrozenSet[str]:
        return self._read().module_numbers

    @property
    def attribute_parameters(self) -> FrozenSet[tuple]:
        return self._read().attribute_parameters

    @property
    def reads_cuda_only_properties(self) -> bool:
        return self._read().reads_cuda_only_properties

    @property
    def label_options(self) -> FrozenSet[str]:
        return self._read().label_options

    @property
    def label_holders(self) -> FrozenSet[str]:
        return self._read().label_holders

    @property
    def read_attribute_parameters(self) -> FrozenSet[tuple]:
        return self._read().read_attribute_parameters

    @property
    def enum_parameters(self) -> EnumParameters:
        return self._read().enum_parameters

    @property
    def called_names(self) -> FrozenSet[str]:
        return self._read().called_names

    @property
    def keyword_arguments(self) -> Dict[str, Tuple[Tuple[str, FrozenSet[str]], ...]]:
        return self._read().keyword_arguments

    @property
    def kernel_launchers(self) -> Optional[Dict[str, str]]:
        """The whole file's GPU kernels and the functions and classes that launch one
        (reading.kernel_launchers); None where the whole file's bytes were not given."""
        if self._launchers is None and self._data is not None:
            self._launchers = launchers_in(self._data.decode("utf-8", "replace"))
        return self._launchers


def _value_holder(value: ast.AST) -> Optional[str]:
    """What a keyword's value is read from, as keyword_arguments names it: a variable (`accel`),
    an attribute of any object by its name (`cfg.device_type`: ".device_type", which the class
    that sets `self.device_type` cannot tell from its own), or what a function of the file
    returns (`choose_accelerator()`, `self.accelerator()`: "choose_accelerator()", "accelerator()")."""
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return f".{value.attr}"
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name):
            return f"{func.id}()"
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            return f"{func.attr}()"
    return None


def is_device_key(text: str) -> bool:
    """Whether the code of a (non-literal) key looks like a device."""
    text = text.lower()
    return any(word in text for word in DEVICE_KEY_WORDS)


def _looked_up_by_device(key: ast.AST, device_variables: FrozenSet[str] = frozenset(),
                         triton_backends: FrozenSet[str] = frozenset()) -> bool:
    """Whether a mapping looked up by `key` is one of devices: a key named as a device, or a
    variable the file gives a device name (`kind = "cuda" if ... else "cpu"`).  The name of the
    GPU (`get_device_name()`, `get_device_properties(0).name`) is a model's, "NVIDIA A100": a table
    of GPU models has no device types for keys."""
    if isinstance(key, ast.Attribute) and key.attr == "name" and isinstance(key.value, ast.Call):
        key = key.value  # (get_device_properties(0).name)
    if isinstance(key, ast.Call) and last_name(key.func) in ("get_device_name", "get_device_properties"):
        return False
    if isinstance(key, ast.Name) and key.id in triton_backends:
        return False  # (Triton's backend: a table of Triton backends)
    return (isinstance(key, ast.Name) and key.id in device_variables) or is_device_key(_key_text(key))


def _triton_backends(file_scan: "FileScan") -> FrozenSet[str]:
    """The variables and the functions ("name()") of the file that hold or return the backend
    Triton compiles for (`triton.runtime.driver.active.get_current_target().backend`)."""
    if not any(node.attr == "get_current_target" for node in file_scan.groups.get(ast.Attribute, ())):
        return frozenset()

    def is_backend(value: Optional[ast.AST], functions) -> bool:
        if isinstance(value, ast.Attribute) and value.attr == "backend" and isinstance(value.value, ast.Call):
            return last_name(value.value.func) == "get_current_target"
        return isinstance(value, ast.Call) and f"{last_name(value.func)}()" in functions

    functions: set = set()
    for node in file_scan.groups.get(ast.FunctionDef, ()):
        if any(isinstance(part, ast.Return) and is_backend(part.value, ()) for part in ast.walk(node)):
            functions.add(f"{node.name}()")
    variables = {target.id for node in file_scan.groups.get(ast.Assign, ()) if is_backend(node.value, functions)
                 for target in node.targets if isinstance(target, ast.Name)}
    return frozenset(functions | variables)


def _device_variables(file_scan: "FileScan") -> FrozenSet[str]:
    """Names the file assigns a device name written out: `kind = "cuda" if ok else "cpu"`."""
    def names_a_device(value: ast.AST) -> bool:
        if isinstance(value, ast.IfExp):
            return names_a_device(value.body) or names_a_device(value.orelse)
        return _is_device_name(value)
    return frozenset(target.id for node in file_scan.groups.get(ast.Assign, ()) if names_a_device(node.value)
                     for target in node.targets if isinstance(target, ast.Name))


def _is_rng_state_call(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Call) and is_rng_state_callee(last_name(node.func) or "")


def _rng_state_mappings(file_scan: "FileScan") -> FrozenSet[str]:
    """The mappings written or read under "cuda" with a device's RNG states (_is_rng_state_call):
    `X["cuda"] = <get_rng_state...>`, `X = {"cuda": <get_rng_state...>}`, `set_rng_state...(X["cuda"])`,
    `set_rng_state...(X.get("cuda"))`."""
    found = set()
    for node in file_scan.groups.get(ast.Assign, ()):
        if _is_rng_state_call(node.value):
            found.update(mapping_text(ast.unparse(target.value)) for target in node.targets
                         if isinstance(target, ast.Subscript) and _is_device_name(target.slice))
        elif isinstance(node.value, ast.Dict) and any(
                _is_device_name(key) and _is_rng_state_call(value) for key, value in zip(node.value.keys, node.value.values)):
            # (`rng = {"cuda": torch.cuda.get_rng_state_all()}`, read as rng["cuda"])
            found.update(mapping_text(ast.unparse(target)) for target in node.targets)
    for call in file_scan.calls:
        if not _is_rng_state_call(call):
            continue
        for arg in call.args:
            if isinstance(arg, ast.Subscript) and _is_device_name(arg.slice):
                found.add(mapping_text(ast.unparse(arg.value)))
            elif (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in KEY_METHODS
                  and arg.args and _is_device_name(arg.args[0])):
                found.add(mapping_text(ast.unparse(arg.func.value)))
    return frozenset(found)


def _is_device_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and DEVICE_KEY.match(node.value) is not None


def _key_text(node: ast.AST) -> str:
    """The words of a key that names a value: `device.type`, `torch_device`, `str(x.device)`."""
    if isinstance(node, ast.Call):
        return " ".join([_key_text(node.func), *(_key_text(arg) for arg in node.args)])
    words = []
    while isinstance(node, ast.Attribute):
        words.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        words.append(node.id)
    return " ".join(words)


def facts_of_statements(statements: Iterable[Tuple[int, str]]) -> FileFacts:
    """FileFacts of a file `ast` cannot read whole, from its top-level statements ((first line,
    text) each) that it can read: the facts are of the whole file, not of a place, so only what
    the statements it cannot read would add is lost."""
    return facts_of(FileScan(ast_of_statements(statements)))


def facts_of(file_scan: "FileScan") -> FileFacts:
    groups = file_scan.groups
    qualified = file_scan.imports.qualified
    subscripts = groups.get(ast.Subscript, ())
    device_variables = _device_variables(file_scan)
    triton = _triton_backends(file_scan)
    looks_up = any(_looked_up_by_device(node.slice, device_variables, triton) for node in subscripts)
    named_keys = any(_is_device_name(node.slice) for node in subscripts)
    keyword_arguments: Dict[str, list] = {}
    for call in file_scan.calls:
        func = call.func
        for keyword in call.keywords:
            holder = _value_holder(keyword.value) if keyword.arg is not None else None
            if holder is not None:
                keyword_arguments.setdefault(holder, []).append((keyword.arg, frozenset(qualified(func))))
        if isinstance(func, ast.Attribute) and func.attr in KEY_METHODS and call.args:
            looks_up = looks_up or _looked_up_by_device(call.args[0], device_variables, triton)
            named_keys = named_keys or _is_device_name(call.args[0])
    numbers = frozenset(target.id for node in file_scan.tree.body if isinstance(node, ast.Assign)
                        and isinstance(node.value, ast.Constant) and type(node.value.value) is int
                        for target in node.targets if isinstance(target, ast.Name))
    sized = frozenset(node.name for node in groups.get(ast.ClassDef, ()) if _len_written(node, numbers))
    labels = [found for found in map(_label_option, file_scan.calls) if found is not None]
    methods, values = _attribute_parameters(file_scan)
    return FileFacts(looks_up, foreign_backends(file_scan), named_keys, sized, numbers, methods,
                     _reads_cuda_only_properties(file_scan),
                     {name: tuple(sorted(set(uses), key=lambda use: (use[0], sorted(use[1]))))
                      for name, uses in keyword_arguments.items()},
                     frozenset(name for names in labels for name in names), _rng_state_mappings(file_scan), triton,
                     _label_holders(file_scan), values,
                     frozenset(call.func.id for call in file_scan.calls if isinstance(call.func, ast.Name)),
                     enum_parameters_of(file_scan.tree, groups.get(ast.ClassDef, ())))


def holder_key(node: ast.AST) -> Optional[str]:
    """How the facts name what holds a value: a variable or an attribute by its last name
    (`route.backend`, `getattr(route, "backend", None)`: "backend"), a call by its function's, as
    "name()"."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[1].value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value  # (a mapping's entry by its key: `marker.get("runtime_line")`)
    if isinstance(node, ast.Call):
        name = last_name(node.func)
        return f"{name}()" if name else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value  # (`marker["runtime_line"]`)
    return last_name(node)


# Words in a name that say it holds a device (or a device's type, `x.device.type`): whatever else it
# is compared with, its "cuda" is a device.
_DEVICE_HOLDER_WORDS = ("dev", "accelerator", "type")


def _labels_in(node: Optional[ast.AST], collections: bool = False) -> bool:
    """Whether `node` is a platform's label written out, or a choice of one; with `collections`,
    or a collection holding one (what `in` compares with)."""
    if isinstance(node, ast.Constant):
        return is_platform_label(node.value)
    if isinstance(node, ast.IfExp):
        return _labels_in(node.body) or _labels_in(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_labels_in(value) for value in node.values)
    if collections and isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(isinstance(element, ast.Constant) and is_platform_label(element.value) for element in node.elts)
    return False


def _label_holders(file_scan: "FileScan") -> FrozenSet[str]:
    """The names of the file compared with, given or returning a platform's label (FileFacts)."""
    found = set()
    for node in file_scan.groups.get(ast.Compare, ()):
        operands = (node.left, *node.comparators)
        if any(_labels_in(operand, collections=True) for operand in operands):
            found.update(key for key in map(holder_key, operands) if key)
    for node in (*file_scan.groups.get(ast.Assign, ()), *file_scan.groups.get(ast.AnnAssign, ())):
        if _labels_in(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(key for key in map(holder_key, targets) if key)
    for node in file_scan.groups.get(ast.For, ()):  # (`for line in ("cuda13", "cuda12")`)
        if _labels_in(node.iter, collections=True):
            found.update(key for key in [holder_key(node.target)] if key)
    # (a function holds such a return where one lies within its lines: the returns are few, the
    # functions many, and walking each function's body again would cost the file's nodes times its depth)
    returned = [node.lineno for node in file_scan.groups.get(ast.Return, ()) if _labels_in(node.value)]
    if returned:
        for function in file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef):
            if any(function.lineno <= line <= function.end_lineno for line in returned):
                found.add(f"{function.name}()")
    found = {key for key in found if not _holds_a_device(key)}
    # and what the file sets from them (`line = artifact.runtime_line`, `preferred =
    # runtime_line_for(version)`), a few steps on: (what is copied, where to), each read once
    copies = [(source, targets) for node in file_scan.groups.get(ast.Assign, ())
              for source in [holder_key(node.value)] if source
              for targets in [{key for key in map(holder_key, node.targets) if key and not _holds_a_device(key)}]
              if targets]
    for _ in range(3):
        more = {key for source, targets in copies if source in found for key in targets} - found
        if not more:
            break
        found |= more
    return frozenset(found)


def _holds_a_device(key: str) -> bool:
    """Whether a holder's name says it holds a device (`device_type`): never a holder of labels."""
    return any(word in key.lower() for word in _DEVICE_HOLDER_WORDS)


def option_destination(flags) -> Optional[str]:
    """The name an option's value is kept under, from its flags (`"--sync-backend"`:
    sync_backend), as a command-line library derives it; None without a long flag."""
    long = [flag for flag in flags if flag.startswith("--")]
    return long[0].lstrip("-").replace("-", "_") if long else None


def backend_options_kept(file_scan: "FileScan", elsewhere: FrozenSet[str] = frozenset()) -> FrozenSet[str]:
    """The destinations of the file's command-line options offering "nccl" (as default or among
    their choices) whose value goes to a collective library other than torch's, in the file or
    (`elsewhere`: names, as Options.foreign_backends) in another: NPU105 leaves their "nccl" as
    written, and a launch script passing one must too."""
    found = set()
    foreign: Optional[Dict[str, str]] = None
    for call in file_scan.calls:
        offered = [keyword.value for keyword in call.keywords if keyword.arg in ("default", "choices")]
        values = [inner.value for value in offered for inner in ast.walk(value) if isinstance(inner, ast.Constant)]
        if not any(value in NCCL_NAMES for value in values):
            continue
        destination = option_destination([arg.value for arg in call.args
                                          if isinstance(arg, ast.Constant) and isinstance(arg.value, str)])
        if destination is None:
            continue
        foreign = foreign_backends(file_scan) if foreign is None else foreign
        name = destination.rsplit(".", 1)[-1]
        if name in foreign or name in elsewhere:
            found.add(destination)
    return frozenset(found)


# Words of an option's name that make it a device's choice, whatever it offers.
_DEVICE_OPTION_WORDS = ("dev", "accelerator", "place", "platform", "hardware")


def _label_option(call: ast.Call) -> Optional[Tuple[str, ...]]:
    """(destination, flags...) of an `add_argument` whose choices offer "cuda" beside a label that
    is no device (`choices=["cuda", "triton"]`), unless its name says it chooses a device."""
    if last_name(call.func) != "add_argument":
        return None
    choices = next((keyword.value for keyword in call.keywords if keyword.arg == "choices"), None)
    if not isinstance(choices, (ast.List, ast.Tuple, ast.Set)):
        return None
    values = [element.value for element in choices.elts
              if isinstance(element, ast.Constant) and isinstance(element.value, str)]
    if "cuda" not in values or all(value.lower() in DEVICE_CHOICES or DEVICE_KEY.match(value) for value in values):
        return None
    flags = [arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    dest = next((keyword.value.value for keyword in call.keywords if keyword.arg == "dest"
                 and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str)), None)
    if dest is None:
        long_flags = [flag for flag in flags if flag.startswith("--")] or flags
        dest = long_flags[0].lstrip("-").replace("-", "_") if long_flags else None
    if not dest or any(word in name.lower() for name in (dest, *flags) for word in _DEVICE_OPTION_WORDS):
        return None
    return (dest, *flags)


def _is_properties_call(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "get_device_properties") or (
        isinstance(func, ast.Name) and func.id == "get_device_properties")


def _reads_cuda_only_properties(file_scan: "FileScan") -> bool:
    fields = [node for node in file_scan.groups.get(ast.Attribute, ()) if node.attr in CUDA_PROPERTY_FIELDS]
    if not fields:
        return False
    held = {target.id for node in file_scan.groups.get(ast.Assign, ()) if _is_properties_call(node.value)
            for target in node.targets if isinstance(target, ast.Name)}
    return any(_is_properties_call(node.value) or (isinstance(node.value, ast.Name) and node.value.id in held)
               for node in fields)


_ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _attribute_parameters(file_scan: "FileScan") -> Tuple[FrozenSet[tuple], FrozenSet[tuple]]:
    """The parameters that the file's functions hand to getattr (setattr, hasattr, delattr) as the
    name, as (function name, positional index without self/cls) and (function name, parameter
    name): (those that name a method: handed to setattr, hasattr, delattr, or to a getattr whose
    value is called, `getattr(v, fn)()`; those only read with: `return getattr(module, attr, None)`,
    which may read anything, a version module's `cuda`, an option's flag)."""
    called = {id(call.func) for call in file_scan.calls if isinstance(call.func, ast.Call)}
    lookups = [call for call in file_scan.calls if isinstance(call.func, ast.Name)
               and call.func.id in _ATTRIBUTE_FUNCTIONS and len(call.args) > 1 and isinstance(call.args[1], ast.Name)]
    if not lookups:
        return frozenset(), frozenset()
    functions = file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef)
    methods, values = set(), set()
    for call in lookups:
        name = call.args[1]
        around = [f for f in functions if f.lineno <= name.lineno <= (f.end_lineno or f.lineno)]
        if not around:
            continue
        function = max(around, key=lambda f: f.lineno)  # the innermost
        found = values if call.func.id == "getattr" and id(call) not in called else methods
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if parameters and parameters[0] in ("self", "cls"):
            parameters = parameters[1:]
        if name.id in parameters:
            found.add((function.name, parameters.index(name.id)))
            found.add((function.name, name.id))
        elif name.id in (a.arg for a in function.args.kwonlyargs):
            found.add((function.name, name.id))
    return frozenset(methods), frozenset(values - methods)


def _len_written(node: ast.ClassDef, numbers: FrozenSet[str]) -> bool:
    """Whether the class's `__len__` is one `return` of a number written in the code."""
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__len__" and len(statement.body) == 1:
            returned = statement.body[0]
            value = returned.value if isinstance(returned, ast.Return) else None
            return (isinstance(value, ast.Constant) and type(value.value) is int) or (
                isinstance(value, ast.Name) and value.id in numbers)
    return False
