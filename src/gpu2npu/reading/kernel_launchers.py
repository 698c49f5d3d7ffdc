"""The project's GPU kernels and the functions and classes that launch them.

A kernel written in a GPU kernel language (`@triton.jit def _add_kernel`, `@cute.kernel`) is
compiled for CUDA, and so runs only there; a module-level function or class of the same module
(or one defined in a module-level block: `if HAS_CUSTOM_OP: def _attention(...)`) that launches one, itself or through another such function or class (`def add(x, y):
_add_kernel[grid](x, y, out)`, an autograd Function whose forward does), runs it too.  A device
test around a call of one guards CUDA-only code (rules/device_guards.py): migrated, the NPU would
take the kernel's branch where the torch code beside it ran.

A launch behind a CUDA test of its own (`if x.is_cuda: _add_kernel[grid](...) else: ...`) does
not make its function a launcher: that function chooses, and runs on the NPU.

Read from a module's text, the same way for the file being migrated (device_guards) and for every
file of the project before any is migrated (`project_launchers`), so that `from .kernels import
add` is known where it is called.  The text is cut at the lines that start a module-level
statement, and a block's function or class at its block's next statement; only a function or
class whose text names a kernel (or another launcher) is parsed.
"""
from __future__ import annotations

import ast
import bisect
import functools
import re
import textwrap
from typing import Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Set, Tuple

from ..knowledge.tips import KERNEL_DECORATORS, handed_on
from .collective_backends import BackendHolders, backend_holders_in, project_foreign_backends
from .discover import Entry, Kind
from .enum_parameters import EnumParameters, enum_parameters_in, project_enum_parameters
from .environment_reads import environment_reads_in, project_environment_reads
from .package_imports import PackageImports, names_asked_in, package_imports_in
from .parallel import mapped

# The packages of the kernel languages, as the decorators' names start (triton, cutlass, cuda).
_LANGUAGE_PACKAGES = tuple(sorted({decorator.split(".", 1)[0] for decorator in KERNEL_DECORATORS}))
# A line that may decorate a kernel (`@triton.jit`, `@triton.autotune(...)`, `@cute.kernel`,
# `@ct.kernel`, a `jit` imported from triton): a file without one defines none.  (torch.jit's
# decorators compile for the CPU and CUDA alike: no kernel language.)
_KERNEL_DECORATOR_LINE = re.compile(r"^[ \t]*@[ \t]*(?!torch\.)[\w.]*\b(%s)\b" % "|".join(sorted(
    {decorator.rsplit(".", 1)[1] for decorator in KERNEL_DECORATORS})), re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*$", re.MULTILINE)
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([^)]*)\)|([\w, \t]+?)[ \t]*(?:#.*)?$)",
                          re.MULTILINE)
_UNIT = re.compile(r"(?:async[ \t]+)?(def|class)[ \t]+(\w+)")
_DECORATOR = re.compile(r"@[ \t]*([\w.]+)")
_WORD = re.compile(r"[A-Za-z_]\w*")


def may_define_kernels(text: str) -> bool:
    return any(package in text for package in _LANGUAGE_PACKAGES) and _KERNEL_DECORATOR_LINE.search(text) is not None


# The namespaces of operators that torch and torch_npu register an NPU kernel for (or that run on
# the host); any other `torch.ops.<namespace>` a Python of the project does not register belongs to
# a compiled extension, built for CUDA (vLLM's `_C`), with no NPU kernel unless its library has one.
OPERATORS_ON_THE_NPU = frozenset({"aten", "prims", "npu", "c10d", "c10d_functional", "_c10d_functional",
                                  "_c10d_functional_autograd", "_dtensor", "profiler", "higher_order",
                                  "quantized_decomposed", "torchvision", "mkldnn", "onednn", "quantized", "_quantized",
                                  "sparse", "xnnpack", "fbgemm", "inductor", "debugprims", "rngprims"})
COMPILED_OPERATOR = "an operator of a compiled extension"
# What a function that calls such an operator launches, as launchers_in says it (its operator's name).
_COMPILED_LAUNCH = re.compile(r"^torch\.ops\.\w+\.(\w+), %s$" % COMPILED_OPERATOR)


def may_launch_kernels(text: str) -> bool:
    """Whether the module may define a kernel or call an operator through torch.ops."""
    return may_define_kernels(text) or "torch.ops." in text


def launchers_in(text: str) -> Dict[str, str]:
    """The module's kernels and the module-level functions and classes that launch one: name ->
    the kernel a call of it runs ("the Triton kernel _add_kernel").  A function that calls an
    operator of a compiled extension (`torch.ops._C.rms_norm(...)`, outside a CUDA test of its
    own) launches its CUDA kernel: "torch.ops._C.rms_norm, an operator of a compiled extension",
    unless the module registers that operator (`without_operators` drops those the project's
    Python registers)."""
    if not may_launch_kernels(text):
        return {}
    aliases = _imported_names(text)
    lines = text.split("\n")  # (as the line numbers of the searches below count them)
    units: List[Tuple[str, int, int]] = []  # (name, first line, line after its last), module-level
    classes: Set[str] = set()
    kernel_of: Dict[str, str] = {}
    decorators: List[str] = []
    inner: List[str] = []  # the decorators of a method of a module-level class, so far
    block_unit: Optional[int] = None  # the indentation of a unit defined in a module-level block
    for number, line in enumerate(lines):
        if line[:1] in (" ", "\t"):
            # (a class's kernel methods, `@cute.kernel def kernel(self, ...)`, make the class one)
            stripped = line.lstrip()
            if (block_unit is not None and stripped and stripped[0] not in "#)]}\"'"
                    and len(line) - len(stripped) <= block_unit):
                units[-1] = (units[-1][0], units[-1][1], number)  # (the block's next statement ends it)
                block_unit = None
            decorator = _DECORATOR.match(stripped)
            method = _UNIT.match(stripped) if decorator is None else None
            if decorator is not None:
                inner.append(decorator.group(1))
            elif method is not None and inner and units and units[-1][2] < 0 and units[-1][0] in classes:
                language = _language(inner, aliases)
                if language is not None:
                    kernel_of.setdefault(units[-1][0], f"the {language} kernel {units[-1][0]}.{method.group(2)}")
            elif method is not None and not (units and units[-1][2] < 0):
                # a function or class defined in a module-level block (`if HAS_CUSTOM_OP: def
                # _attention(...)`, `try: ... def launch(...)`): a unit of its own, which ends at
                # the block's next statement; a kernel there (`if HAVE_TRITON: @triton.jit def _k`)
                language = _language(inner, aliases) if inner else None
                if language is not None and method.group(1) == "def":
                    kernel_of.setdefault(method.group(2), f"the {language} kernel {method.group(2)}")
                units.append((method.group(2), number, -1))
                block_unit = len(line) - len(stripped)
                if method.group(1) == "class":
                    classes.add(method.group(2))
            if decorator is None and stripped and not stripped.startswith("#"):
                inner = []
            continue
        if not line or line[0] in "#)]}\"'":
            continue  # (inside a statement, or a comment)
        if units and units[-1][2] < 0:  # (a module-level statement ends the unit before it)
            units[-1] = (units[-1][0], units[-1][1], number)
            block_unit = None
        decorator = _DECORATOR.match(line)
        if decorator is not None:
            decorators.append(decorator.group(1))
            continue
        unit = _UNIT.match(line)
        if unit is not None:
            name = unit.group(2)
            units.append((name, number, -1))
            if unit.group(1) == "class":
                classes.add(name)
            language = _language(decorators, aliases)
            if language is not None and unit.group(1) == "def":
                kernel_of.setdefault(name, f"the {language} kernel {name}")
        decorators = []
        inner = []
    if units and units[-1][2] < 0:
        units[-1] = (units[-1][0], units[-1][1], len(lines))
    # unit -> what it reads outside its own CUDA tests (_read_unguarded), each unit parsed once
    reads: Dict[str, Optional[UnguardedReads]] = {}
    if "torch.ops." in text:
        _add_compiled_operator_calls(lines, units, kernel_of, registered_operators(text), reads)
    if not kernel_of:
        return {}
    starts = [first for _, first, _ in units]
    line_ends = [match.start() for match in re.finditer("\n", text)]
    searched: Set[str] = set()
    while True:
        # the units whose text names a kernel or launcher found so far (one search of the text
        # for all the new names)
        names = sorted(kernel_of.keys() - searched)
        if not names:
            break
        searched.update(names)
        candidates: Set[int] = set()
        for match in re.finditer(r"\b(?:%s)\b" % "|".join(map(re.escape, names)), text):
            line = bisect.bisect_left(line_ends, match.start())
            at = bisect.bisect_right(starts, line) - 1
            if at >= 0 and line < units[at][2] and units[at][0] not in kernel_of:
                candidates.add(at)
        for at in sorted(candidates):
            name, first, after = units[at]
            if name not in reads:
                reads[name] = _read_unguarded(_unit_text(lines, first, after))
            read = reads[name].names if reads[name] is not None else set(_WORD.findall("\n".join(lines[first:after])))
            launched = sorted(word for word in read if word in kernel_of and word != name)
            if launched:
                kernel_of[name] = kernel_of[launched[0]]
    _add_custom_ops(lines, units, kernel_of)
    return kernel_of


def _unit_text(lines: List[str], first: int, after: int) -> str:
    """The text of a unit, without the indentation of the block it stands in."""
    text = "\n".join(lines[first:after])
    return textwrap.dedent(text) if text[:1] in (" ", "\t") else text


def compiled_operator(chain: str) -> str:
    """What a call of a compiled extension's operator (`torch.ops._C.rms_norm`) launches, as a
    guard says it (and _COMPILED_LAUNCH reads it back)."""
    return f"{chain}, {COMPILED_OPERATOR}"


def _add_compiled_operator_calls(lines: List[str], units: List[Tuple[str, int, int]], kernel_of: Dict[str, str],
                                 registered: FrozenSet[str], reads: Dict[str, Optional["UnguardedReads"]]) -> None:
    """The module-level functions that call an operator of a compiled extension outside their own
    CUDA tests (launchers_in); not one that `registered` names (the module's own, in Python).
    `reads`: what each unit read, filled in as units are parsed."""
    for name, first, after in units:
        if name in kernel_of:
            continue
        source = _unit_text(lines, first, after)
        if "torch.ops." not in source:
            continue
        reads[name] = _read_unguarded(source)
        called = reads[name].operators if reads[name] is not None else ()
        operator = next((chain for chain in sorted(called) if chain.rsplit(".", 1)[1] not in registered), None)
        if operator is not None:
            kernel_of[name] = compiled_operator(operator)


def without_operators(launchers: Dict[str, str], operators: FrozenSet[str]) -> Dict[str, str]:
    """`launchers` without the callers of a compiled extension's operator that `operators` (those
    the project's Python registers, for every device it supports) names after all."""
    if not operators:
        return launchers
    return {name: kernel for name, kernel in launchers.items()
            if (match := _COMPILED_LAUNCH.match(kernel)) is None or match.group(1) not in operators}


# An operator registered with torch (`torch.library.impl("proj::add", "cuda", add)`, vLLM's
# `direct_register_custom_op(op_name="add", op_func=add_impl)`), by the name a registration gives
# it: a "namespace::name" string, or an op_name.
_OPERATOR_KEYWORD = re.compile(r"\bop_name\s*=\s*[\"']([A-Za-z_]\w*)[\"']")
_QUALIFIED_OPERATOR = re.compile(r"[\"'][A-Za-z_]\w*::([A-Za-z_]\w*)[\"']")
# ... and as it is called, `torch.ops.proj.add(...)`.
_OPERATOR_CALL = re.compile(r"\btorch\.ops\.\w+\.([A-Za-z_]\w*)")
# How an operator stands among the launchers (any namespace: vLLM's registrations name none).
OPERATOR_KEY = "torch.ops.*."


def registered_operators(text: str) -> FrozenSet[str]:
    """The names of the operators the module registers (a "namespace::name" string, an op_name):
    looked for around each "::" and "op_name", not over the whole text."""
    found = set(_OPERATOR_KEYWORD.findall(text)) if "op_name" in text else set()
    at = text.find("::")
    while at >= 0:
        # (the string around this "::" starts at the last quote before it)
        quote = max(text.rfind('"', max(0, at - 80), at), text.rfind("'", max(0, at - 80), at))
        match = _QUALIFIED_OPERATOR.match(text, quote) if quote >= 0 else None
        if match is not None:
            found.add(match.group(1))
        at = text.find("::", at + 2)
    return frozenset(found)


def _add_custom_ops(lines: List[str], units: List[Tuple[str, int, int]], kernel_of: Dict[str, str]) -> None:
    """The operators the module registers with a kernel or a launcher as their implementation (a
    registration outside its functions and classes that names one: `op_func=add_impl`), and the
    functions and classes that call one through torch.ops, which launch its kernel too."""
    inside = [False] * len(lines)
    for _, first, after in units:
        if lines[first][:1] not in (" ", "\t"):  # (a block's units stand in the registrations' text)
            inside[first:after] = [True] * (after - first)
    operators: Dict[str, str] = {}
    block: List[str] = []
    for number, line in enumerate([*lines, ""]):
        if number < len(lines) and not inside[number]:
            block.append(line)
            continue
        text = "\n".join(block)
        block = []
        registered = registered_operators(text)
        launched = sorted(word for word in set(_WORD.findall(text)) if word in kernel_of) if registered else ()
        if launched:
            for name in sorted(registered):
                if name not in kernel_of:
                    operators.setdefault(name, kernel_of[launched[0]])
    for name, first, after in units if operators else ():
        if name not in kernel_of:
            called = sorted(set(_OPERATOR_CALL.findall("\n".join(lines[first:after]))) & operators.keys())
            if called:
                kernel_of[name] = operators[called[0]]
    for name, kernel in operators.items():
        kernel_of[OPERATOR_KEY + name] = kernel


def _imported_names(text: str) -> Dict[str, Set[str]]:
    """What the imports of the module bind: local name -> qualified names (a module of the project
    that hands Triton on, `from .utils import triton`, binds Triton)."""
    aliases: Dict[str, Set[str]] = {}
    for match in _IMPORT.finditer(text):
        module, local = match.group(1), match.group(2)
        aliases.setdefault(local or module.split(".", 1)[0], set()).add(module if local else module.split(".", 1)[0])
    for match in _FROM_IMPORT.finditer(text):
        module = match.group(1)
        for part in (match.group(2) or match.group(3)).replace("\n", ",").split(","):
            part = part.split("#", 1)[0]
            words = part.split()
            if not words:
                continue
            imported, local = words[0], words[2] if len(words) == 3 and words[1] == "as" else words[0]
            full = f"{module}{imported}" if module.endswith(".") else f"{module}.{imported}"  # (`from . import x`)
            aliases.setdefault(local, set()).add(handed_on(module, imported) or full)
    return aliases


def _language(decorators: List[str], aliases: Dict[str, Set[str]]) -> Optional[str]:
    """The kernel language whose decorator is among `decorators` (as written), or None."""
    return next((KERNEL_DECORATORS[full] for head in decorators for full in _qualified(head, aliases)
                 if full in KERNEL_DECORATORS), None)


def _qualified(head: str, aliases: Dict[str, Set[str]]) -> Set[str]:
    root, _, rest = head.partition(".")
    return {f"{target}.{rest}" if rest else target for target in aliases.get(root, ())}


class UnguardedReads(NamedTuple):
    """What a function or class reads outside its own CUDA tests (_read_unguarded)."""

    names: Set[str]
    # the operators of compiled extensions it calls (`torch.ops.<namespace>.<name>`, a namespace
    # of none of OPERATORS_ON_THE_NPU)
    operators: Set[str]


def _read_unguarded(source: str) -> Optional[UnguardedReads]:
    """The names a function or class reads, and the compiled extensions' operators it calls,
    except in the branches of a test that names CUDA (its own choice); None where its text is no
    statement of its own."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found = UnguardedReads(set(), set())
    pending: List[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        kind = node.__class__
        if (kind is ast.If or kind is ast.IfExp) and _names_cuda(node.test):
            continue
        if kind is ast.Name and node.ctx.__class__ is ast.Load:
            found.names.add(node.id)
        elif (kind is ast.Attribute and isinstance(node.value, ast.Attribute)
              and isinstance(node.value.value, ast.Attribute) and node.value.value.attr == "ops"
              and isinstance(node.value.value.value, ast.Name) and node.value.value.value.id == "torch"
              and node.value.attr not in OPERATORS_ON_THE_NPU):
            found.operators.add(f"torch.ops.{node.value.attr}.{node.attr}")
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _names_cuda(test: ast.expr) -> bool:
    return any("cuda" in word.lower() for node in ast.walk(test) for word in _words_of(node))


def _words_of(node: ast.AST) -> Tuple[str, ...]:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        return (node.attr,)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    return ()


# A module-level constant of the project compared with "npu" (`DEVICE_TYPE == "npu"`, `DEVICE_TYPE in
# ("mlx", "npu")`): the project sets it to the NPU itself, so its tests against "cuda" ask for NVIDIA.
_NPU_STRING = re.compile(r"[\"']npu[\"']")
_COMPARED_BEFORE = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*(?:==|!=)\s*$|\b([A-Z][A-Z0-9_]*)\s+(?:not\s+)?in\s+[(\[{][^)\]}]*$")


def npu_constants(text: str) -> FrozenSet[str]:
    """The upper-case names the text compares with "npu" (the project's own device constants):
    looked for just before each "npu" string, not over the whole text."""
    found: Set[str] = set()
    for match in _NPU_STRING.finditer(text) if "'npu" in text or '"npu' in text else ():
        before = _COMPARED_BEFORE.search(text, max(0, match.start() - 120), match.start())
        if before is not None:
            found.add(before.group(1) or before.group(2))
    return frozenset(found)


def module_name(relative: str) -> Optional[str]:
    """The dotted name a file of the project is imported as from its root ("pkg/ops/add.py" ->
    "pkg.ops.add", "pkg/__init__.py" -> "pkg"; from src/ too); None for a name no import spells."""
    if not relative.endswith(".py"):
        return None
    parts = relative[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if parts and parts[0] == "src":
        parts.pop(0)
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


# What one file gives the project's facts: (its kernels and launchers by qualified name, the
# operators it registers, the device constants it compares with "npu", the names its package's
# __init__ hands on: (name, the module's name it stands for), what its tests ask before the calls
# they guard: (a name called, the functions the test calls), as written: asked_questions; and
# where it hands collective backends' names: collective_backends.BackendHolders; the parameters of
# its functions and classes that take its Enums' values: enum_parameters.EnumParameters; the pytest
# marks it gives "npu": npu_marks_in; whether its Triton is Triton-Ascend's: writes_for_triton_ascend).
FileKernels = Tuple[Tuple[Tuple[str, str], ...], FrozenSet[str], FrozenSet[str], Tuple[Tuple[str, str], ...],
                    Tuple[Tuple[str, Tuple[str, ...]], ...], BackendHolders, EnumParameters, FrozenSet[str], bool,
                    FrozenSet[str], Tuple[PackageImports, FrozenSet[str]]]


class ProjectKernels(NamedTuple):
    """What project_launchers finds (see there)."""

    launchers: Tuple[Tuple[str, str], ...]
    operators: FrozenSet[str]
    constants: FrozenSet[str]
    read: Dict[str, Tuple[int, int, FileKernels]]
    # (a function of the project asked by a test before a call of a launcher, in any of its files:
    # what that call launches), sorted
    kernel_questions: Tuple[Tuple[str, str], ...] = ()
    # (a name that some file hands to a collective library other than torch's, and none to
    # torch's process groups: that library), sorted (collective_backends.project_foreign_backends)
    foreign_backends: Tuple[Tuple[str, str], ...] = ()
    # the parameters of the project's functions and classes that take one of its Enums' values
    # spelling a device (`TimerType("cuda")`), from every file (enum_parameters.project_enum_parameters)
    enum_parameters: EnumParameters = ()
    # the project's own pytest marks that some test gives "npu" (`@pytest.mark.runs_on(["cuda",
    # "npu"])`): its conftest selects tests by device with them (npu_marks_in)
    npu_marks: FrozenSet[str] = frozenset()
    # the Python files of a folder where some file reads the NPU's cores from Triton's driver
    # (writes_for_triton_ascend): the folder's kernels are Triton-Ascend's, the project's own NPU
    # backend as a folder named for the NPU is (discover.npu_backend_files)
    triton_ascend_files: FrozenSet[str] = frozenset()
    # (an environment variable that a file reads and sets nowhere: the first such file), sorted
    # (environment_reads.project_environment_reads)
    environment_reads: Tuple[Tuple[str, str], ...] = ()
    # what each file that imports one of the packages gpu2npu can point at generated ones imports of
    # them, with the names it asks of other modules (package_imports), by the file's path, sorted
    package_imports: Tuple[Tuple[str, PackageImports, FrozenSet[str]], ...] = ()


# A call, by the dotted name called (`ops.fused_gemv(`, `self._ok(`).
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\s*\(")
# Functions whose calls in a test ask nothing of the project.
_NOT_QUESTIONS = frozenset({"isinstance", "hasattr", "getattr", "len", "callable", "any", "all", "issubclass", "str",
                            "int", "bool", "type", "id", "print", "min", "max", "sum", "tuple", "list", "set", "dict"})
# What follows the `if` of an `if` or `elif` line whose test calls something: the test's line.
# (Found from the word, then checked to begin its line: a regular expression anchored at every
# line start tries each line of the file, six times slower.)
_TEST = re.compile(r"if ([^\n]*\([^\n]*)")
# How many lines after a test are read for the calls it guards (a question is asked just before).
_GUARDED_LINES = 8


def asked_questions(text: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """What the module's `if` tests ask before the calls they guard, as written: (a name called in
    the first lines a test guards, the functions the test calls), for tests that name no CUDA
    (those are device tests of their own): `if can_use_gemv(x, w): return gemv(x, w)` gives
    ("gemv", ("can_use_gemv",)).  Resolved against the project's launchers once all are known
    (project_launchers)."""
    found: Dict[str, Set[str]] = {}
    for indentation, test, end in _test_lines(text):
        if "cuda" in test.lower():
            continue
        asked = [name for name in _CALL.findall(test) if name.split(".", 1)[0] not in _NOT_QUESTIONS]
        if asked:
            for called in _guarded_calls(text, end, len(indentation.expandtabs())):
                found.setdefault(called, set()).update(name for name in asked if name != called)
    return tuple(sorted((called, tuple(sorted(asked))) for called, asked in found.items() if asked))


def _test_lines(text: str):
    """(indentation, test, where its line ends) of each `if` or `elif` line whose test calls
    something, after the first line."""
    for match in _TEST.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        if start == 0:
            continue
        indentation = text[start:match.start()]
        if indentation.endswith("el"):
            indentation = indentation[:-2]
        if not indentation.strip(" \t"):
            yield indentation, match.group(1), match.end()


def _guarded_calls(text: str, end: int, indent: int) -> List[str]:
    """The names called in the lines after `end` that are indented more than `indent`."""
    called: List[str] = []
    for _ in range(_GUARDED_LINES):
        if end >= len(text):
            break
        start = end + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            if len(line[:len(line) - len(stripped)].expandtabs()) <= indent:  # (as the test's, tabs expanded)
                break
            called.extend(_CALL.findall(stripped))
    return called


def _kernel_questions(asked_by_file: Dict[str, Tuple[Entry, Tuple[Tuple[str, Tuple[str, ...]], ...]]],
                      found: Dict[str, str], handed_on_names: Dict[str, str]) -> Dict[str, str]:
    """The project's functions asked before a call of a launcher (`found`), by qualified name ->
    what that call launches; each file with such a call read again for its imports."""
    lasts = {name.rsplit(".", 1)[-1] for name in found}
    questions: Dict[str, str] = {}
    for relative, (entry, asked) in sorted(asked_by_file.items()):
        candidates = [(called, names) for called, names in asked if called.rsplit(".", 1)[-1] in lasts]
        if not candidates:
            continue
        try:
            aliases = _imported_names(entry.absolute.read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
        module = module_name(relative)
        for called, names in candidates:
            launched = sorted(full for full in _resolved_call(called, aliases, module) if full in found)
            if not launched:
                continue
            what = what_it_launches(launched[0].rsplit(".", 1)[-1], found[launched[0]])
            for name in names:
                for full in _resolved_call(name, aliases, module):
                    questions.setdefault(handed_on_names.get(full, full), what)
    return questions


def _resolved_call(name: str, aliases: Dict[str, Set[str]], module: Optional[str]) -> Set[str]:
    """A called name as the project's root spells it (`self.x` and builtins: none)."""
    root, _, rest = name.partition(".")
    if root in ("self", "cls", "super"):
        return set()
    targets = aliases.get(root)
    if targets is None:
        return {f"{module}.{name}"} if module and not rest else set()
    return {resolved(f"{target}.{rest}" if rest else target, module) for target in targets}


def project_launchers(entries: Iterable[Entry], npu_backend: Iterable[str] = (),
                      known: Optional[Dict[str, Tuple[int, int, FileKernels]]] = None, jobs: int = 1) -> ProjectKernels:
    """(qualified name, the kernel it runs) of every kernel and launcher of the project's Python
    files (`pkg.ops.add.add`), sorted, none from the project's own NPU backend (Triton-Ascend's);
    the names of the operators its Python code registers (whose kernels are Python functions,
    launching a GPU kernel or not: an operator of no such name is a compiled extension's); the
    device constants it compares with "npu" (`npu_constants`); and what each file gave, by its
    path, with its size and modification time.  `known`: what an earlier run found, in that form:
    a file of the same size and time is not read again (a warm run reads none).  A name a
    package's __init__ imports from one of its modules (`from .fused_moe import fused_experts`) is
    that module's, where the project imports it from the package.  And the functions a test of
    any file asks before it calls a launcher (`if can_use_gemv(x, w): return gemv(x, w)`): their
    own device tests answer whether the kernel runs (device_guards).  The same reading of each
    file also gives the names the project hands to a collective library other than torch's
    (`foreign_backends`: a config module's "nccl" default for a trainer's Ray group stays), and the
    parameters that take its Enums' values (`enum_parameters`: `TimerType("cuda")` stays).  The
    files are read in `jobs` processes."""
    skipped = frozenset(npu_backend)
    asked_by_file: Dict[str, tuple] = {}
    found: Dict[str, str] = {}
    operators: Set[str] = set()
    constants: Set[str] = set()
    handed_on_names: Dict[str, str] = {}  # pkg.name -> pkg.module.name, of the packages' __init__s
    read: Dict[str, Tuple[int, int, FileKernels]] = {}
    backend_holders: List[BackendHolders] = []
    enum_parameters: List[EnumParameters] = []
    npu_marks: Set[str] = set()
    ascend_folders: Set[str] = set()
    environment_by_file: List[Tuple[str, FrozenSet[str]]] = []
    package_imports: List[Tuple[str, PackageImports, FrozenSet[str]]] = []
    # (each file of the project, with its status, and what an earlier run found there if the
    # file has not changed since)
    files: List[Tuple[Entry, str, tuple, Optional[FileKernels]]] = []
    for entry in entries:
        if entry.kind != Kind.PYTHON or entry.relative in skipped:
            continue
        module = module_name(entry.relative)
        if module is None:
            continue
        try:
            status = entry.absolute.stat()
        except OSError:
            continue  # (its reading error is reported where it is migrated)
        earlier = (known or {}).get(entry.relative)
        unchanged = earlier is not None and earlier[:2] == (status.st_size, status.st_mtime_ns)
        files.append((entry, module, (status.st_size, status.st_mtime_ns), earlier[2] if unchanged else None))
    to_read = [(entry, module) for entry, module, _, earlier in files if earlier is None]
    fresh = iter(mapped(_file_kernels_of, to_read, jobs))
    for entry, module, status, earlier in files:
        facts = next(fresh) if earlier is None else earlier
        if facts is None:
            continue
        read[entry.relative] = (*status, facts)
        (launchers, registered, compared, handed_on_here, asked, holders, enums, marks, for_ascend, environment,
         imported) = facts
        if imported[0]:
            package_imports.append((entry.relative, *imported))
        if environment:
            environment_by_file.append((entry.relative, environment))
        npu_marks |= marks
        if for_ascend:
            ascend_folders.add(entry.relative.rpartition("/")[0])
        if holders[0] or holders[1]:
            backend_holders.append(holders)
        if enums:
            enum_parameters.append(enums)
        if asked:
            asked_by_file[entry.relative] = (entry, asked)
        found.update(launchers)
        operators |= registered
        constants |= compared
        for name, source in handed_on_here:
            handed_on_names.setdefault(name, source)
    # (a folder of Triton-Ascend kernels launches none of CUDA's)
    ascend_files = frozenset(relative for relative in read if relative.rpartition("/")[0] in ascend_folders)
    if ascend_files:
        ascend_modules = {module_name(relative) for relative in ascend_files}
        found = {name: kernel for name, kernel in found.items() if name.rsplit(".", 1)[0] not in ascend_modules}
        asked_by_file = {relative: asked for relative, asked in asked_by_file.items() if relative not in ascend_files}
    found = without_operators(found, frozenset(operators))
    for _ in range(3):  # (a package's __init__ handing on another's, a few levels up)
        new = {name: found[source] for name, source in handed_on_names.items() if source in found and name not in found}
        if not new:
            break
        found.update(new)
    kernel_questions = _kernel_questions(asked_by_file, found, handed_on_names) if found else {}
    return ProjectKernels(tuple(sorted(found.items())), frozenset(operators), frozenset(constants), read,
                          tuple(sorted(kernel_questions.items())), project_foreign_backends(backend_holders),
                          project_enum_parameters(enum_parameters), frozenset(npu_marks), ascend_files,
                          project_environment_reads(environment_by_file), tuple(sorted(package_imports)))


# A pytest mark given "npu" among its arguments (`@pytest.mark.runs_on(["cuda", "npu"])`).
_NPU_MARK = re.compile(r"\bmark\.(\w+)\(([^()]*)\)")
_NPU_WORD = re.compile(r"""["']npu(?::\d+)?["']""")
# pytest's own marks: their arguments are no labels of the project's
PYTEST_MARKS = frozenset({"parametrize", "skipif", "skip", "xfail", "usefixtures", "filterwarnings", "timeout"})


# Triton-Ascend's names for the NPU's cores, as its driver's device properties give them (CUDA's
# Triton has neither), read by a module-level statement: the module imports on Triton-Ascend only.
_TRITON_ASCEND_PROPERTIES = ("num_aicore", "num_vectorcore")
_READ_AT_IMPORT = re.compile(r"^[^\s#][^\n]*\b(?:%s)\b" % "|".join(_TRITON_ASCEND_PROPERTIES), re.MULTILINE)


def writes_for_triton_ascend(text: str) -> bool:
    """Whether a file that uses Triton reads the NPU's cores from its driver when it is imported
    (`CORES = driver.active.utils.get_device_properties(dev)["num_aicore"]` at module level): it
    cannot be imported but on Triton-Ascend, and its folder's kernels are written for it.  (A
    function that asks for the count where there is one, `get_npu_core_count()` beside CUDA
    kernels, says nothing of its folder.)"""
    return ("triton" in text and any(word in text for word in _TRITON_ASCEND_PROPERTIES)
            and _READ_AT_IMPORT.search(text) is not None)


def npu_marks_in(text: str) -> FrozenSet[str]:
    """The pytest marks of the project (not pytest's own) that a test of this text gives "npu":
    the project's conftest selects tests by device with them, and "cuda" there names CUDA."""
    if "mark." not in text or "npu" not in text:
        return frozenset()
    return frozenset(match.group(1) for match in _NPU_MARK.finditer(text)
                     if match.group(1) not in PYTEST_MARKS and _NPU_WORD.search(match.group(2)))


@functools.lru_cache(maxsize=4)
def launchers_by_name(launchers: Tuple[Tuple[str, str], ...]) -> Tuple[Dict[str, str], FrozenSet[str]]:
    """Options.kernel_launchers as a mapping, and the last parts of their names (`scale` of
    `pkg.ops.scale`), once a run."""
    return dict(launchers), frozenset(name.rsplit(".", 1)[-1] for name, _ in launchers)


def _package_imports(text: str) -> Tuple[PackageImports, FrozenSet[str]]:
    """What the file imports of the packages gpu2npu reroutes, and, where it imports any, the names
    it asks of other modules (package_imports)."""
    imported = package_imports_in(text)
    return (imported, names_asked_in(text)) if imported else ((), frozenset())


def launcher_names(launchers: Tuple[Tuple[str, str], ...]) -> FrozenSet[str]:
    """The last parts of the names of Options.kernel_launchers (`scale` of `pkg.ops.scale`)."""
    return launchers_by_name(launchers)[1]


def what_it_launches(name: str, kernel: str) -> str:
    """What a guard guards where it refers to `name` (a last name), the kernel `kernel` or a
    launcher of it."""
    return kernel if kernel.endswith(f" kernel {name}") else f"{name}(), which launches {kernel}"


def _file_kernels_of(entry_and_module: Tuple[Entry, str]) -> Optional[FileKernels]:
    return _file_kernels(*entry_and_module)


def _file_kernels(entry: Entry, module: str) -> Optional[FileKernels]:
    """What one file gives the project's facts (FileKernels); None where it cannot be read."""
    try:
        text = entry.absolute.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    # (each reading looks for its own words first: most files hold none of them)
    handed_on_here = tuple((f"{module}.{local}", resolved(name, module, package=True))
                           for local, imported in _imported_names(text).items() for name in sorted(imported)
                           ) if entry.relative.endswith("__init__.py") else ()
    launchers = tuple((name if name.startswith(OPERATOR_KEY) else f"{module}.{name}", kernel)
                      for name, kernel in launchers_in(text).items())
    return (launchers, registered_operators(text), npu_constants(text), handed_on_here, asked_questions(text),
            backend_holders_in(text), enum_parameters_in(text), npu_marks_in(text), writes_for_triton_ascend(text),
            environment_reads_in(text), _package_imports(text))


def resolved(name: str, module: Optional[str], package: bool = False) -> str:
    """`name` as the project's root spells it: a relative name (".ops.add", "..ops") read in
    `module` (a package's __init__ when `package`) made absolute; any other name as it is."""
    if not name.startswith(".") or module is None:
        return name
    level = len(name) - len(name.lstrip("."))
    parts = module.split(".") if package else module.split(".")[:-1]
    if level > 1:
        parts = parts[:len(parts) - (level - 1)]
    rest = name[level:]
    return ".".join([*parts, rest]) if rest else ".".join(parts)
