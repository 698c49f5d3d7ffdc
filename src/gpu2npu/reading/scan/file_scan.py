"""One pass over a file's `ast`: its imports, calls and the words the rules look for."""
from __future__ import annotations

import ast
import re
from typing import Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

from .imports import ImportTable
from .reading import called_name, dotted, nodes_by_class
from .release_tests import (RELEASE_BRANCHES, ReleaseNames, release_flags, settles_the_version, tests_the_release,
                            version_flags)
from .words import (CUDA_METHOD_NAMES, INDEX_RETURNING, PACKAGE_PARTS, RAY_PLACEMENT, RAY_REQUESTS, REWRITE_WORD, STRING_WORD,
                    attribute_word, holds_cuda_module, is_cuda_module)

class FileScan:
    """One pass over the tree collecting imports, calls and the words rules look for."""

    def __init__(self, tree: ast.Module, data: Optional[bytes] = None) -> None:
        """`data`: the text `tree` was parsed from (where it is not ASCII, the columns of the names
        that libcst asks about are counted in its characters)."""
        self.tree = tree
        self.calls: List[ast.Call] = []
        self.word_lines: List[int] = []  # lines of identifiers/strings holding a REWRITE_WORD
        self.package_lines: List[int] = []  # lines importing a CUDA-only package
        self._bindings: Dict[str, List[ast.AST]] = {}  # dotted target -> values bound to it
        self._int_options: Set[str] = set()  # argparse dests declared type=int
        self._flagged_names: Set[str] = set()  # local names imported from flagged modules
        self._partial_names: Dict[str, str] = {}  # local name -> a package with CUDA-only parts
        self._part_uses: List[ast.Attribute] = []  # `name.part` where part may lead to such a part
        # Strings standing alone as statements (docstrings, string "comments") are documentation.
        self._documentation: Set[int] = set()
        self._release_guarded: Optional[List[Tuple[int, int]]] = None
        self._optional_names: Optional[Set[str]] = None
        self._accelerators: Dict[str, _AcceleratorTests] = {}
        self._forwarder_names: Optional[Dict[str, Set[Tuple[int, str]]]] = None
        # The hazards' look at the file and the release tests take their nodes from here too.
        self.groups = nodes_by_class(tree)
        self.imports = ImportTable(self.nodes_of_class(ast.Import, ast.ImportFrom), tree, self.groups, data)
        # Documentation first: the strings below are told apart by it.
        handlers = (
            (ast.Expr, self._expr), (ast.Attribute, self._attribute), (ast.Constant, self._constant),
            (ast.Call, self._call), (ast.Import, self._import), (ast.ImportFrom, self._import_from),
            (ast.Assign, self._assign), (ast.AnnAssign, self._ann_assign), (ast.arg, self._arg),
        )
        for kind, handler in handlers:
            for node in self.groups.get(kind, ()):
                handler(node)
        self._functions = self.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef)
        self.word_lines.extend(statement.lineno for definition in self.groups.get(ast.ClassDef, ())
                               for statement in definition.body if _defines_a_cuda_method(statement))
        names = self.groups.get(ast.Name, ())
        if self._flagged_names:  # their uses may be edited or reported too (DataLoader(...), amp.scale_loss)
            self.word_lines.extend(node.lineno for node in names if node.id in self._flagged_names)
        for use in self._part_uses:
            module = self._partial_names.get(use.value.id)
            if module is not None and (is_cuda_module(f"{module}.{use.attr}") or holds_cuda_module(f"{module}.{use.attr}")):
                self.word_lines.append(use.lineno)

    # -- collection --------------------------------------------------------------------------
    def _word(self, text: str, node: ast.AST) -> bool:
        if REWRITE_WORD.search(text):
            self.word_lines.append(node.lineno)
            return True
        return False

    def _expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            self._documentation.add(id(node.value))
            if isinstance(node.value, ast.JoinedStr):
                self._documentation.update(id(part) for part in node.value.values)

    def _attribute(self, node: ast.Attribute) -> None:
        if attribute_word(node.attr):
            self.word_lines.append(node.lineno)
        elif node.attr in PACKAGE_PARTS and node.value.__class__ is ast.Name:
            self._part_uses.append(node)

    def _constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self._documentation and STRING_WORD.search(node.value):
            self.word_lines.append(node.lineno)

    def _call(self, node: ast.Call) -> None:
        self.calls.append(node)
        called = called_name(node)
        if called == "add_argument":
            self._argparse_int(node)
        # Ray's GPU resource: NPU110 rewrites it or the analysis reports it
        if called == RAY_PLACEMENT or (node.keywords and any(k.arg in RAY_REQUESTS for k in node.keywords)):
            self.package_lines.append(node.lineno)
        # a variable named as a keyword (`dict(os.environ, CUDA_VISIBLE_DEVICES="0")`), as a string would be
        if node.keywords and any(k.arg is not None and k.arg.isupper() and STRING_WORD.search(k.arg) for k in node.keywords):
            self.word_lines.append(node.lineno)

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            word = self._word(alias.name, node)
            self._cuda_package(alias.name, node)
            # the module the bound name stands for: `import a.b` binds a, `import a.b as x` a.b
            bound, module = (alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
            self._flag(bound, module, word and bool(alias.asname))

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        word_module = self._word(node.module, node)
        cuda_module = self._cuda_package(node.module, node)
        for alias in node.names:
            if alias.name == "*":
                continue
            full = f"{node.module}.{alias.name}"
            word = self._word(alias.name, node) or word_module
            if not cuda_module:
                self._cuda_package(full, node)
            self._flag(alias.asname or alias.name, full, word)

    def _flag(self, name: str, module: str, word: bool) -> None:
        """Record how the uses of an imported name matter: all of them (a name holding a rewrite
        word, a CUDA-only package), or those reaching a CUDA-only part of a package that has
        other parts (`deepspeed.ops.transformer` of `import deepspeed`, not `deepspeed.zero`)."""
        if word or is_cuda_module(module):
            self._flagged_names.add(name)
        elif holds_cuda_module(module):
            self._partial_names[name] = module

    def _cuda_package(self, module: str, node: ast.AST) -> bool:
        if is_cuda_module(module):
            self.package_lines.append(node.lineno)
            return True
        return False

    def _assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._bind(target, node.value)

    def _ann_assign(self, node: ast.AnnAssign) -> None:
        is_int = isinstance(node.annotation, ast.Name) and node.annotation.id == "int"
        self._bind(node.target, ast.Constant(0) if is_int else node.value)

    def _arg(self, node: ast.arg) -> None:
        if isinstance(node.annotation, ast.Name) and node.annotation.id == "int":
            self._bind(ast.Name(node.arg), ast.Constant(0))

    def _bind(self, target: ast.AST, value: Optional[ast.AST]) -> None:
        name = dotted(target)
        if name is not None and value is not None:
            self._bindings.setdefault(name, []).append(value)

    def _argparse_int(self, call: ast.Call) -> None:
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            return
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        type_ = keywords.get("type")
        if not (isinstance(type_, ast.Name) and type_.id == "int"):
            return
        dest = keywords.get("dest")
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            self._int_options.add(dest.value)
        for arg in call.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._int_options.add(arg.value.lstrip("-").replace("-", "_"))

    # -- questions ---------------------------------------------------------------------------
    def nodes_of_class(self, *kinds: type) -> List[ast.AST]:
        """The file's nodes of these classes."""
        return [node for kind in kinds for node in self.groups.get(kind, ())]

    def qualified(self, node: ast.AST) -> Set[str]:
        """Fully qualified names `node` (a Name/Attribute chain) may stand for through imports."""
        return self.imports.qualified(node)

    def _possibly_int(self, expr: ast.AST, seen: Set[str]) -> bool:
        """Generous version of NPU104's "holds an int wherever the file binds it": one int-like
        binding is enough here, since the rule itself makes the exact decision."""
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, int) and not isinstance(expr.value, bool)
        if isinstance(expr, ast.UnaryOp):
            return self._possibly_int(expr.operand, seen)
        if isinstance(expr, ast.BinOp):
            return self._possibly_int(expr.left, seen) and self._possibly_int(expr.right, seen)
        if isinstance(expr, ast.Call):
            func = expr.func
            return (isinstance(func, ast.Name) and func.id == "int") or (
                isinstance(func, ast.Attribute) and func.attr in INDEX_RETURNING
            )
        name = dotted(expr)
        if name is None or name in seen:
            return False
        if isinstance(expr, ast.Attribute) and expr.attr in self._int_options:
            return True
        seen.add(name)
        return any(self._possibly_int(value, seen) for value in self._bindings.get(name, ()))

    def integer_device_lines(self) -> List[int]:
        """Lines of calls whose device argument might be an int."""
        # (asked of every call of every file: plain loops and class tests, no generator per call)
        lines = []
        forwarders = self._forwarders()
        possibly_int = self._possibly_int
        for call in self.calls:
            func = call.func
            kind = func.__class__
            called = func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None
            if kind is ast.Attribute and called in ("to", "to_empty") and call.args \
                    and possibly_int(call.args[0], set()):
                lines.append(call.lineno)
                continue
            passes_int = False
            for keyword in call.keywords:
                if keyword.arg in ("device", "device_id") and possibly_int(keyword.value, set()):
                    passes_int = True
                    break
            if passes_int:
                lines.append(call.lineno)
                continue
            forwarded = forwarders.get(called) if forwarders else None
            if forwarded and self._forwards_int(call, forwarded):
                lines.append(call.lineno)
        return lines

    def _forwards_int(self, call: ast.Call, forwarded: Set[Tuple[int, str]]) -> bool:
        """Whether `call` may pass an int where a forwarder takes the device it hands on: the
        argument at the parameter's place (or the place before, for a method called on an
        object), or the keyword of the parameter's name."""
        for index, parameter in forwarded:
            if any(0 <= place < len(call.args) and self._possibly_int(call.args[place], set())
                   for place in (index, index - 1)):
                return True
            if any(k.arg == parameter and self._possibly_int(k.value, set()) for k in call.keywords):
                return True
        return False

    def _forwarders(self) -> Dict[str, Set[Tuple[int, str]]]:
        """Functions of the file that pass a parameter to `.to(...)` or `device=` (as NPU104
        finds them, generously): the innermost function around such a call that has a
        parameter of the name passed -> (the parameter's place, its name) for each."""
        if self._forwarder_names is None:
            forwarders: Dict[str, Set[Tuple[int, str]]] = {}
            for call in self.calls:
                func = call.func
                passed = [call.args[0]] if func.__class__ is ast.Attribute and func.attr in ("to", "to_empty") \
                    and call.args else []
                for keyword in call.keywords:
                    if keyword.arg == "device":
                        passed.append(keyword.value)
                for value in passed:
                    if value.__class__ is not ast.Name:
                        continue
                    around = [f for f in self._functions
                              if f.lineno <= call.lineno <= (f.end_lineno or f.lineno)
                              and any(a.arg == value.id for a in f.args.args)]
                    if around:
                        function = max(around, key=lambda f: f.lineno)
                        parameters = [a.arg for a in function.args.args]
                        forwarders.setdefault(function.name, set()).add((parameters.index(value.id), value.id))
            self._forwarder_names = forwarders
        return self._forwarder_names

    def release_guarded(self, line: int) -> bool:
        """Whether `line` lies in code that runs only where the torch release has what it needs:
        under a test of a version, `hasattr`, an `is_torch_...`/`..._available` helper, or in a
        `try` whose handler catches the ImportError/AttributeError/TypeError of an older torch, or
        after such a test at the top of a function that returns or raises where it fails."""
        if self._release_guarded is None:
            # (asked only of files that call something newer than the release: looked up then)
            groups = self.groups
            names = ReleaseNames(groups)
            flags = release_flags(groups, names)
            names = names.with_flags(groups, flags)
            guarded = [(node.lineno, node.end_lineno or node.lineno) for kind in RELEASE_BRANCHES
                       for node in groups.get(kind, ()) if tests_the_release(node, flags, names)]
            # `if is_torch_version("<=", "2.6"): return False` in a function: what follows runs only
            # on the releases that pass the test (a test of the version, not of a package's presence)
            exits = list(self._exits_first())
            versions = version_flags(groups, self._of_torch, [test for test, _ in exits]) if exits else {}
            guarded.extend(after for test, after in exits if settles_the_version(test, False, versions, self._of_torch))
            self._release_guarded = sorted(guarded)
        return any(first <= line <= last for first, last in self._release_guarded)

    def _of_torch(self, node: ast.AST) -> bool:
        """Whether `node` is torch or one of its modules (not `torch.ops`, where extensions
        register their operators): what a `hasattr` of the release asks."""
        return any((name == "torch" or name.startswith("torch.")) and not name.startswith("torch.ops")
                   for name in self.qualified(node))

    def optionally_imported(self, func: ast.AST) -> bool:
        """Whether a callee's name comes from an import in a `try` that catches the ImportError of
        an older torch (`try: from torch.nn.functional import rms_norm` / `except ImportError:`
        a fallback of the same name): the call runs whichever the release has."""
        if self._optional_names is None:
            self._optional_names = set()
            for node in self.groups.get(ast.Try, ()):
                if tests_the_release(node):
                    for statement in node.body:
                        if isinstance(statement, (ast.Import, ast.ImportFrom)):
                            self._optional_names.update((alias.asname or alias.name).split(".")[0]
                                                        for alias in statement.names)
        while func.__class__ is ast.Attribute:
            func = func.value
        return func.__class__ is ast.Name and func.id in self._optional_names

    def accelerator_guarded(self, line: int, word: str) -> bool:
        """Whether `line` runs only where the accelerator `word` ("xpu", "hpu", ...) is there: under
        a test that names it (`hasattr(torch, "xpu")`, `is_torch_hpu_available()`,
        `device.type == "mlu"`), or after a `return`/`raise` of a function that tests it first, or
        under a test of the release."""
        if self.release_guarded(line):
            return True
        return any(first <= line <= last for first, last in self._accelerator(word).guards)

    def in_accelerator_test(self, node: ast.AST, word: str) -> bool:
        """Whether `node` is part of a test that names the accelerator `word` (`if
        torch.xpu.is_available():`), which runs wherever its code does, not of what such a test
        guards (`hasattr(torch, "xpu") and torch.xpu.is_available()`: the second part)."""
        accelerator = self._accelerator(word)
        where = (node.lineno, node.col_offset)

        def within(spans) -> bool:
            return any(start <= where <= end for start, end in spans)

        return within(accelerator.tests) and not within(accelerator.guarded_values)

    def _accelerator(self, word: str) -> "_AcceleratorTests":
        """Where the file tests for the accelerator `word` and what those tests guard (read once
        per word)."""
        found = self._accelerators.get(word)
        if found is not None:
            return found

        def span(node: ast.AST):
            return (node.lineno, node.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0)

        found = self._accelerators[word] = _AcceleratorTests([], [], [])
        for node in self.nodes_of_class(ast.If, ast.IfExp, ast.While):
            if _names_word(node.test, word):
                found.guards.append((node.lineno, node.end_lineno or node.lineno))
                found.tests.append(span(node.test))
        for node in self.nodes_of_class(ast.BoolOp):
            naming = [index for index, value in enumerate(node.values) if _names_word(value, word)]
            if naming:
                found.tests.append(span(node.values[naming[0]]))
                found.guarded_values.extend(span(value) for value in node.values[naming[0] + 1:])
                if naming[0] < len(node.values) - 1:  # (a test before the last value guards the rest)
                    found.guards.append((node.lineno, node.end_lineno or node.lineno))
        for node in self.nodes_of_class(ast.ClassDef):
            # a class named for the accelerator (DeepSpeed's XPU_Accelerator): its backend, used where
            # that accelerator is chosen
            if names_the_accelerator(node.name, word):
                found.guards.append((node.lineno, node.end_lineno or node.lineno))
        for test, after in self._exits_first():  # `if not is_torch_hpu_available(): return ...` first
            if _names_word(test, word):
                found.guards.append(after)
        return found

    def _exits_first(self) -> Iterator[Tuple[ast.AST, Tuple[int, int]]]:
        """(test, (first, last) line of what follows it in its function) of each `if` in the body of a
        function that returns or raises: what follows runs only where the test failed."""
        for function in self._functions:
            for statement in function.body:
                if (isinstance(statement, ast.If) and statement.body
                        and isinstance(statement.body[-1], (ast.Return, ast.Raise))):
                    yield statement.test, (statement.end_lineno or statement.lineno, function.end_lineno or function.lineno)

    def relevant_lines(self) -> List[int]:
        """Lines where a rule might edit or the leftover analysis might report something."""
        return sorted(set(self.word_lines) | set(self.package_lines) | set(self.integer_device_lines()))

    def needs_rewrite(self) -> bool:
        """False only when no rule could change the file and the leftover analysis has nothing
        to report in it."""
        return bool(self.word_lines or self.package_lines or self.integer_device_lines())


def _defines_a_cuda_method(statement: ast.AST) -> bool:
    """Whether a statement of a class's body defines one of CUDA_METHOD_NAMES (`def cuda(self)`,
    `is_cuda = False`), which the rules rename with its callers."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return statement.name in CUDA_METHOD_NAMES
    return isinstance(statement, ast.Assign) and any(
        isinstance(target, ast.Name) and target.id in CUDA_METHOD_NAMES for target in statement.targets)


class _AcceleratorTests(NamedTuple):
    """A file's tests for one accelerator: the lines they guard (first, last), the tests
    themselves, and the values of `and`/`or` chains that a test before them guards (both as
    ((line, column), (end line, end column)))."""

    guards: List[Tuple[int, int]]
    tests: list
    guarded_values: list


# The other words that name an accelerator: its torch extension's package (find_spec("torch_neuronx")).
_SPELLINGS = {"neuron": ("neuron", "neuronx")}


def _snake_case(name: str) -> str:
    """`XPUAccelerator` -> `XPU_Accelerator`: the words of a CamelCase name apart."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)


def names_the_accelerator(name: str, word: str) -> bool:
    """Whether a file's or class's name has the accelerator `word` as one of its words
    (`xpu_accelerator`, `XPUAccelerator`)."""
    return _names_word(ast.Name(id=_snake_case(name)), word)


def _names_word(test: ast.AST, word: str) -> bool:
    """Whether an expression names the accelerator `word` (a name, attribute or string of it)."""
    for part in ast.walk(test):
        text = (part.id if isinstance(part, ast.Name) else part.attr if isinstance(part, ast.Attribute)
                else part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "")
        if re.search(rf"(^|_)({'|'.join(_SPELLINGS.get(word, (word,)))})($|_)", text.lower()):
            return True
    return False


# A name in a test that asks which torch this is (`hasattr`, `is_torch_greater_or_equal`,
# `is_torch_xpu_available`, `TORCH_VERSION`), or an attribute holding a version (`torch.__version__`);
# not `torch.xpu.is_available()`, which is the API in question.
