"""What Python's own `ast` can tell about a file, at a tenth of the cost of a libcst parse.

Most files of a real repository mention no CUDA at all: they move tensors with `.to(device)` and
call `torch.*` operators.  For those a full libcst parse, rewrite and re-print is wasted, yet they
still need the API analysis (operators without an NPU kernel, unknown `torch.*` names).  So every
file is first read with `ast`:

- `needs_rewrite` is a deliberately generous test: True whenever any rule *might* edit the file
  (a CUDA/NCCL word in code, a DataLoader or DataParallel, a possibly-integer device argument, a
  CUDA-only package).  Only those files go through libcst, where the rules decide exactly.
  Comments and docstrings cannot make a file need rewriting: no rule edits them.
- `api_findings` resolves every call's name through the file's imports (`import torch as th`,
  `from torch import nn`, function-local imports) and reports, for the chosen torch_npu release,
  operators with no NPU kernel (unsupported_api.csv) and `torch.*` names or Tensor methods whose
  NPU support the data cannot decide (unknown_api.csv).

The scan reads the original text, so its line numbers are those of the input file.
"""
from __future__ import annotations

import ast
import bisect
import copy
import functools
import re
import sys
import warnings
from typing import Dict, List, Optional, Set, Tuple

from . import apidata, env_vars
from .change import Finding, Report
from .finding_kinds import NEWER_TORCH, NO_NPU_KERNEL, NOT_ANALYSED, UNKNOWN_SUPPORT
from .similar import equivalents
from .scopes import Scopes, import_bindings
from .tips import CUDA_ONLY_PACKAGES


# What makes a file need the rules.  Attributes: `x.cuda()`, `torch.cuda`, `Backend.NCCL`,
# `nn.DataParallel`, `data.DataLoader`, `cpp_extension`.  Imports: any module or name with one
# of these words (and then every use of the name they bind).  Strings: the ones the rules and the
# analysis act on (device strings and types, NCCL backends, CUDA_VISIBLE_DEVICES); prose that
# merely mentions CUDA is left alone by every rule.  Plain variable names (`use_cuda`) are not
# resolved by any rule and do not count.
REWRITE_WORDS = ("cuda", "nccl", "dataparallel", "data_parallel", "dataloader", "cpp_extension", "torch_npu")
# NCCL in any case but mixed: "AsyncClient" holds n-c-C-l.
_REWRITE_WORD = re.compile("|".join(REWRITE_WORDS).replace("nccl", "(?-i:nccl|NCCL|Nccl)"), re.IGNORECASE)
# (cuDNN's TF32 switches hold no CUDA word: `torch.backends.cudnn.allow_tf32`, `...conv.fp32_precision`)
_ATTRIBUTE_WORD = re.compile(r"cuda|(?-i:nccl|NCCL|Nccl)|^(DataParallel|data_parallel|DataLoader|cpp_extension|torch_npu"
                             r"|allow_tf32|fp32_precision)$", re.IGNORECASE)
# device names are lower case; the CUDA/NCCL environment variables upper case (env_vars.NAME)
_STRING_WORD = re.compile(r"^cuda|torch\.cuda\.|(?i:nccl)|CUDA_VISIBLE_DEVICES|" + env_vars.NAME.pattern)
# Methods whose first argument is a device, and calls returning a device index (as in NPU104).
DEVICE_METHODS = {"to", "to_empty", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
INDEX_RETURNING = {"current_device", "get_rank", "get_local_rank", "device_count", "get_world_size"}
_RAY_REQUESTS = frozenset({"num_gpus", "resources_per_worker"})
_RAY_PLACEMENT = "placement_group"  # (its bundles ask for GPUs: NPU110)
_CUDA_PACKAGES = frozenset(CUDA_ONLY_PACKAGES)
# The packages that hold a CUDA-only package and other parts (`deepspeed` of `deepspeed.ops.gds`).
_CUDA_PACKAGE_PARENTS = frozenset(".".join(package.split(".")[:end]) for package in CUDA_ONLY_PACKAGES
                                  for end in range(1, package.count(".") + 1))
# Attribute names that can lead from a package to a CUDA-only part of it (`ops` of deepspeed).
_PACKAGE_PARTS = frozenset(part for package in CUDA_ONLY_PACKAGES for part in package.split(".")[1:])


def _is_cuda_module(module: str) -> bool:
    """A CUDA-only package or a module of one (`flash_attn.bert_padding`)."""
    # (asked of every import of every file: a look-up of each of the module's packages)
    if module in _CUDA_PACKAGES:
        return True
    end = module.find(".")
    while end > 0:
        if module[:end] in _CUDA_PACKAGES:
            return True
        end = module.find(".", end + 1)
    return False


def _holds_cuda_module(module: str) -> bool:
    """A package with a CUDA-only part and others (`deepspeed` holds `deepspeed.ops.gds`)."""
    return module in _CUDA_PACKAGE_PARENTS


@functools.lru_cache(maxsize=65536)
def _attribute_word(attribute: str) -> bool:
    """Whether an attribute name holds a rewrite word (asked of every attribute of every file:
    the names repeat, the answers are kept)."""
    return _ATTRIBUTE_WORD.search(attribute) is not None


# Every word of a text, strings' and comments' too: what the scan can look at of a text it cannot
# parse is among them.
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What may pass an int as a device (integer_device_lines; a forwarder's body holds one too).
_DEVICE_ARGUMENT = re.compile(r"\bto(?:_empty)?[\s\\]*\(|\bdevice(?:_id)?[\s\\]*=(?!=)")
# An escape that can stand for a letter in a string ("\x63uda"): the text may hide a word.
SPELLING_ESCAPE = re.compile(r"\\[xuUN0-7]")


def could_need_rewrite(text: str) -> bool:
    """For a text the scan cannot read (Python's `ast` refuses it; a notebook before its cells
    are parsed): False only when none of what makes `FileScan.needs_rewrite` true can be in it.
    Judged by the scan's own words, packages and calls, on every word of the text."""
    if _DEVICE_ARGUMENT.search(text) or SPELLING_ESCAPE.search(text):
        return True
    for word in set(_WORDS.findall(text)):
        if (_attribute_word(word) or _REWRITE_WORD.search(word) or env_vars.NAME.match(word)
                or _is_cuda_module(word) or _holds_cuda_module(word) or word in _RAY_REQUESTS
                or word == _RAY_PLACEMENT):
            return True
    return False


def _called_name(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


# The fields of each node class that can hold nodes we look at: not the operator singletons
# (`ctx`, `op`, `ops`) nor the fields that hold names, numbers or flags.
_CHILD_FIELDS: Dict[type, tuple] = {ast.Constant: ()}
_NOT_NODES = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "asname", "kind", "type_comment",
                        "level", "conversion", "is_async", "type_ignores"})


def nodes_of(tree: ast.AST) -> List[ast.AST]:
    """Every node of `tree` (but operator singletons): what `ast.walk` yields, in another order,
    in a third of its time."""
    return [node for group in nodes_by_class(tree).values() for node in group]


def nodes_by_class(tree: ast.AST) -> Dict[type, List[ast.AST]]:
    """Every node of `tree` (but operator singletons) by its class, each group in the order of a
    walk that lists a node before its children.  What looks at a file asks for a few classes
    of node (calls, imports, assignments): it gets them without going through the millions of
    others, and the walk is made once for all."""
    groups: Dict[type, List[ast.AST]] = {}
    todo = [tree]
    pop, push, node_class = todo.pop, todo.append, ast.AST
    fields_of, group_of = _CHILD_FIELDS.get, groups.get
    while todo:
        node = pop()
        kind = node.__class__
        group = group_of(kind)
        if group is None:
            group = groups[kind] = []
        group.append(node)
        fields = fields_of(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(f for f in node._fields if f not in _NOT_NODES)
        for name in fields:
            value = getattr(node, name)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, node_class):
                        push(item)
            elif isinstance(value, node_class):
                push(value)
    return groups


# What Python's parser raises for a text it cannot parse.
_NOT_PARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def _ast_of(data) -> ast.Module:
    """The ast of `data` (bytes, or a text); raises one of _NOT_PARSABLE."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in the user's strings are not our report
        return ast.parse(data)


def parse(data: bytes) -> Optional[ast.Module]:
    """The ast of `data`, or None when this Python cannot parse it (libcst may still)."""
    try:
        return _ast_of(data)
    except _NOT_PARSABLE:
        return None


# The api of the row that says a file was not analysed because this Python cannot parse it.
NOT_PARSED = "syntax this Python cannot parse"


def not_parsed_row(data: bytes, path: str) -> Optional[Finding]:
    """For a file `parse` gave up on: the unknown_api.csv row that says its API calls and hazards
    were not looked at (they are read from the ast), where there is any torch in it to look at
    (a file of newer syntax, which libcst may migrate all the same, or a broken one)."""
    if b"torch" not in data:
        return None
    try:  # (parsed again for the reason: only files `parse` gave up on come here)
        _ast_of(data)
        return None
    except SyntaxError as error:  # (the row stands at its line)
        line, reason = error.lineno or 1, error.msg
    except _NOT_PARSABLE as error:
        line, reason = 1, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Finding(path, line, line, Report.UNKNOWN, NOT_PARSED,
                   f"Python {python}, which runs gpu2npu, cannot parse this file ({reason} here), so its torch API calls "
                   "and CUDA hazards (torch.compile, CUDA version checks, quantization) were not analysed: run gpu2npu "
                   "with the Python the project needs, or mend the syntax", NOT_ANALYSED.code)


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
        self._accelerator_guards: Dict[str, List[Tuple[int, int]]] = {}
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
        names = self.groups.get(ast.Name, ())
        if self._flagged_names:  # their uses may be edited or reported too (DataLoader(...), amp.scale_loss)
            self.word_lines.extend(node.lineno for node in names if node.id in self._flagged_names)
        for use in self._part_uses:
            module = self._partial_names.get(use.value.id)
            if module is not None and (_is_cuda_module(f"{module}.{use.attr}") or _holds_cuda_module(f"{module}.{use.attr}")):
                self.word_lines.append(use.lineno)

    # -- collection --------------------------------------------------------------------------
    def _word(self, text: str, node: ast.AST) -> bool:
        if _REWRITE_WORD.search(text):
            self.word_lines.append(node.lineno)
            return True
        return False

    def _expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            self._documentation.add(id(node.value))
            if isinstance(node.value, ast.JoinedStr):
                self._documentation.update(id(part) for part in node.value.values)

    def _attribute(self, node: ast.Attribute) -> None:
        if _attribute_word(node.attr):
            self.word_lines.append(node.lineno)
        elif node.attr in _PACKAGE_PARTS and node.value.__class__ is ast.Name:
            self._part_uses.append(node)

    def _constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self._documentation and _STRING_WORD.search(node.value):
            self.word_lines.append(node.lineno)

    def _call(self, node: ast.Call) -> None:
        self.calls.append(node)
        called = _called_name(node)
        if called == "add_argument":
            self._argparse_int(node)
        # Ray's GPU resource: NPU110 rewrites it or the analysis reports it
        if called == _RAY_PLACEMENT or (node.keywords and any(k.arg in _RAY_REQUESTS for k in node.keywords)):
            self.package_lines.append(node.lineno)

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
        if word or _is_cuda_module(module):
            self._flagged_names.add(name)
        elif _holds_cuda_module(module):
            self._partial_names[name] = module

    def _cuda_package(self, module: str, node: ast.AST) -> bool:
        if _is_cuda_module(module):
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
        `try` whose handler catches the ImportError/AttributeError/TypeError of an older torch."""
        if self._release_guarded is None:
            # (asked only of files that call something newer than the release: looked up then)
            groups = self.groups
            names = _ReleaseNames(groups)
            flags = _release_flags(groups, names)
            names = names.with_flags(groups, flags)
            self._release_guarded = sorted((node.lineno, node.end_lineno or node.lineno) for kind in _BRANCHES
                                           for node in groups.get(kind, ()) if _tests_the_release(node, flags, names))
        return any(first <= line <= last for first, last in self._release_guarded)

    def optionally_imported(self, func: ast.AST) -> bool:
        """Whether a callee's name comes from an import in a `try` that catches the ImportError of
        an older torch (`try: from torch.nn.functional import rms_norm` / `except ImportError:`
        a fallback of the same name): the call runs whichever the release has."""
        if self._optional_names is None:
            self._optional_names = set()
            for node in self.groups.get(ast.Try, ()):
                if _tests_the_release(node):
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
        guards = self._accelerator_guards.get(word)
        if guards is None:
            guards = self._accelerator_guards[word] = self._guards_naming(word)
        return any(first <= line <= last for first, last in guards)

    def _guards_naming(self, word: str) -> List[Tuple[int, int]]:
        def names(test: ast.AST) -> bool:
            for part in ast.walk(test):
                text = (part.id if isinstance(part, ast.Name) else part.attr if isinstance(part, ast.Attribute)
                        else part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "")
                if re.search(rf"(^|_){word}($|_)", text.lower()):
                    return True
            return False

        spans: List[Tuple[int, int]] = []
        for node in self.nodes_of_class(ast.If, ast.IfExp, ast.While):
            if names(node.test):
                spans.append((node.lineno, node.end_lineno or node.lineno))
        for node in self.nodes_of_class(ast.BoolOp):
            if any(names(value) for value in node.values[:-1]):
                spans.append((node.lineno, node.end_lineno or node.lineno))
        for node in self.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef):
            for statement in node.body:  # `if not is_torch_hpu_available(): return ...` first
                if (isinstance(statement, ast.If) and names(statement.test) and statement.body
                        and isinstance(statement.body[-1], (ast.Return, ast.Raise))):
                    spans.append((statement.end_lineno or statement.lineno, node.end_lineno or node.lineno))
        return spans

    def relevant_lines(self) -> List[int]:
        """Lines where a rule might edit or the leftover analysis might report something."""
        return sorted(set(self.word_lines) | set(self.package_lines) | set(self.integer_device_lines()))

    def needs_rewrite(self) -> bool:
        """False only when no rule could change the file and the leftover analysis has nothing
        to report in it."""
        return bool(self.word_lines or self.package_lines or self.integer_device_lines())


# A name in a test that asks which torch this is (`hasattr`, `is_torch_greater_or_equal`,
# `is_torch_xpu_available`, `TORCH_VERSION`), or an attribute holding a version (`torch.__version__`);
# not `torch.xpu.is_available()`, which is the API in question.
_RELEASE_NAMES = re.compile(r"version|hasattr|^is_torch|available|TORCH_[A-Z0-9_]*(GE|GREATER|LT|LESS|AT_LEAST)", re.IGNORECASE)
_RELEASE_ATTRIBUTES = re.compile(r"version", re.IGNORECASE)
_BRANCHES = (ast.If, ast.IfExp, ast.Try, ast.BoolOp)  # what may test the torch release
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


class _ReleaseNames:
    """Where a file's release parts start: an expression whose span holds none of them has none,
    which spares walking the many that do not (an expression's nodes lie within its span)."""

    def __init__(self, groups: Dict[type, List[ast.AST]]) -> None:
        names, attributes = groups.get(ast.Name, ()), groups.get(ast.Attribute, ())
        self.release = {identifier for identifier in {node.id for node in names} if _names_the_release(identifier)}
        versions = {attribute for attribute in {node.attr for node in attributes} if _holds_a_version(attribute)}
        self.starts = sorted([(node.lineno, node.col_offset) for node in names if node.id in self.release]
                             + [(node.lineno, node.col_offset) for node in attributes if node.attr in versions])

    def with_flags(self, groups: Dict[type, List[ast.AST]], flags: Set[str]) -> "_ReleaseNames":
        """These starts and those of the names that hold a release test's answer (`_release_flags`)."""
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


def _holds_release_part(expression: ast.AST, flags: Set[str], names: Optional[_ReleaseNames]) -> bool:
    if names is not None and not names.may_hold(expression):
        return False
    return any(_is_release_part(part, flags) for part in nodes_of(expression))


def _release_flags(groups: Dict[type, List[ast.AST]], names: "_ReleaseNames") -> Set[str]:
    """Names that hold the answer of a release test: `has_rms_norm = hasattr(F, "rms_norm")`, or
    `has_apex = True` in a `try` whose handler catches the ImportError of a missing package
    (`groups`: a file's nodes by their class, `names`: their release parts)."""
    flags: Set[str] = set()
    for node in groups.get(ast.Assign, ()):
        targets = [target.id for target in node.targets if isinstance(target, ast.Name)]
        if targets and _holds_release_part(node.value, frozenset(), names):
            flags.update(targets)
    for node in groups.get(ast.Try, ()):
        if _tests_the_release(node, frozenset()):
            for statement in node.body:
                if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
                    flags.update(target.id for target in statement.targets if isinstance(target, ast.Name))
    return flags


def _tests_the_release(node: ast.AST, flags: Set[str] = frozenset(), names: Optional[_ReleaseNames] = None) -> bool:
    if isinstance(node, ast.Try):
        caught = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught.update(kind.id if isinstance(kind, ast.Name) else kind.attr if isinstance(kind, ast.Attribute) else ""
                          for kind in kinds if kind is not None)
        return bool(caught & _OLDER_TORCH_ERRORS)
    tests = node.values if isinstance(node, ast.BoolOp) else [node.test]  # type: ignore[attr-defined]
    return any(_holds_release_part(test, flags, names) for test in tests)


class ImportTable:
    """What the imports of one file bind: the one resolver of names for everything that reads
    the file's `ast` (the scan, the API rows, the hazards, the advice).  `import a.b` binds a,
    `import a.b as x` binds x to a.b, `from a import b as y` binds y to a.b; a relative import
    binds its name to a path starting with its dots, which never resolves to an installed
    package.  A name is read through Python's scopes (`scopes.Scopes`): a parameter, local or
    loop variable of an imported name is not the import, and an import inside a function binds
    its name there only."""

    def __init__(self, nodes, tree: Optional[ast.Module] = None, groups=None, data: Optional[bytes] = None) -> None:
        self.bound: Dict[str, Set[str]] = {}  # local name -> what the imports anywhere bind it to
        for node in nodes:
            for name, target in import_bindings(node):
                self.bound.setdefault(name, set()).add(target)
        # local name -> the installed modules and names it may stand for (relative imports left out)
        self.aliases: Dict[str, Set[str]] = {}
        for name, targets in self.bound.items():
            absolute = {target for target in targets if not target.startswith(".")}
            if absolute:
                self.aliases[name] = absolute
        # what the names whose meaning depends on the place stand for where they are read
        self.scopes: Optional[Scopes] = None
        if tree is not None and self.bound:
            self.scopes = Scopes.of(tree, groups if groups is not None else nodes_by_class(tree), set(self.bound), data)

    def _here(self, name: ast.Name, likely: bool, absolute: bool) -> Optional[Set[str]]:
        """What the imports bind a Name whose meaning depends on the place to where it stands: the
        installed modules and names (`absolute`) or relative paths too; `likely`: a local named as
        its module (`def pick(torch)`) is that module, as the reports read it."""
        meaning = self.scopes.of_node(name, likely)
        if meaning is None:  # (a node not in the tree)
            return (self.aliases if absolute else self.bound).get(name.id)
        return {target for target in meaning if not target.startswith(".")} if absolute else meaning

    def qualified(self, node: ast.AST) -> Set[str]:
        """The qualified names a Name/Attribute chain may stand for (the imports its root stands for)."""
        # (asked of every name and attribute of a file: the root is looked up before any text is made)
        parts = []
        while node.__class__ is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if node.__class__ is not ast.Name:
            return set()
        scopes = self.scopes
        if scopes is not None and node.id in scopes.names:
            targets = self._here(node, likely=True, absolute=True)
        else:
            targets = self.aliases.get(node.id)
        if not targets:
            return set()
        if not parts:
            return set(targets)
        rest = ".".join(reversed(parts))
        return {f"{target}.{rest}" for target in targets}

    def is_imported(self, node: ast.AST) -> bool:
        """Whether an import (relative ones too) binds the root of a Name/Attribute chain: a
        module or a name of one, not a value of the file's own (a local variable, `self`)."""
        while node.__class__ is ast.Attribute:
            node = node.value
        if node.__class__ is not ast.Name:
            return False
        scopes = self.scopes
        if scopes is not None and node.id in scopes.names:
            return bool(self._here(node, likely=False, absolute=False))
        return node.id in self.bound

    def imports(self, package: str) -> bool:
        """Whether the file imports `package` or something in it."""
        return any(target == package or target.startswith(package + ".")
                   for targets in self.aliases.values() for target in targets)


def scopes_of_code(code: str) -> Optional[Scopes]:
    """The scopes of a text the scan has not read (the one libcst was given, after the custom rules
    or cut down; the migrated output), or None where it needs none or `ast` cannot read it."""
    try:  # (the text itself: a coding line must not decode it again)
        tree = _ast_of(code)
    except _NOT_PARSABLE:
        return None
    return Scopes.of(tree, nodes_by_class(tree), text=code)


def dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def api_findings(scan: FileScan, path: str, api: apidata.ApiData, similar: bool = False) -> List[Finding]:
    """unsupported_api.csv / unknown_api.csv rows for the calls of one file; `similar`: the run
    has -sim (which rewrites the calls it has an equivalent for, so the tip differs)."""
    findings: List[Finding] = []
    for call in scan.calls:
        names = sorted(scan.qualified(call.func))
        finding = None
        for name in names:
            finding = _judge_torch_call(call, name, path, api, similar)
            if finding is not None:
                accelerator = _other_accelerator(name)
                if accelerator and scan.accelerator_guarded(call.lineno, accelerator):
                    finding = None  # code for another accelerator, skipped on the NPU: not unknown
                break
        if finding is None and not names and isinstance(call.func, ast.Attribute):
            finding = _judge_method_call(call, path, api)
        if finding is not None:
            findings.append(finding)
        for name in names:
            newer = _judge_release(call, name, path, api)
            if newer and not scan.release_guarded(call.lineno) and not scan.optionally_imported(call.func):
                findings.extend(newer)
                break
    return sorted(findings)


# torch's modules for accelerators other than CUDA and the NPU (and their availability words)
OTHER_ACCELERATORS = ("xpu", "mlu", "musa", "hpu", "mps", "mtia", "xla", "ipu", "dml", "sdaa", "gcu")


def _other_accelerator(name: str) -> Optional[str]:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "torch" and parts[1] in OTHER_ACCELERATORS else None


def _judge_release(call: ast.Call, name: str, path: str, api: apidata.ApiData) -> List[Finding]:
    """Rows for what the call needs of a torch newer than the one -v migrates for: the function
    (or its module), or a keyword its function took on later."""
    if not name.startswith("torch.") or name.startswith(("torch.cuda.", "torch.npu.")):
        return []
    target = api.torch_version
    added = apidata.torch_added_in(name, target)
    if added is not None:
        return [_row(call, path, NEWER_TORCH, Report.UNSUPPORTED, name,
                     f"torch {target}, which torch_npu {api.torch_npu_version} is built for, does not have it "
                     f"(torch {added} has): choose the -v of the project's torch, or write it with what torch "
                     f"{target} has")]
    rows = []
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        added = apidata.torch_keyword_added_in(name, keyword.arg, target)
        if added is not None:
            rows.append(_row(call, path, NEWER_TORCH, Report.UNSUPPORTED, f"{name}({keyword.arg}=)",
                             f"{name} of torch {target} (torch_npu {api.torch_npu_version}) takes no {keyword.arg} "
                             f"(torch {added} does) and raises TypeError: choose the -v of the project's torch, or "
                             "leave it out"))
    return rows


def _row(call: ast.Call, path: str, kind, report: Report, api_name: str, tip: str) -> Finding:
    func = call.func
    return Finding(path, func.lineno, func.end_lineno or func.lineno, report, api_name, tip, kind.code)


def _judge_torch_call(call: ast.Call, name: str, path: str, api: apidata.ApiData, similar: bool) -> Optional[Finding]:
    if not name.startswith("torch.") or name.startswith(("torch.cuda.", "torch.npu.")):
        # torch.cuda is the rules' and the leftover analysis' business; torch.npu is torch_npu's own
        return None
    op = apidata.lacks_npu_kernel(api, name)
    if op is not None:
        return _row(call, path, NO_NPU_KERNEL, Report.UNSUPPORTED, name,
                    f"aten::{op} has no NPU kernel in torch_npu {api.torch_npu_version} (it runs on the "
                    f"CPU at best): {_remedy(name, similar)}")
    if name.startswith("torch.ops."):
        return _judge_dispatcher_op(call, name, path, api)
    if not apidata.torch_api_knows(name):
        return _row(call, path, UNKNOWN_SUPPORT, Report.UNKNOWN, name,
                    "not in PyTorch's public API lists: check that it exists for this torch version "
                    "and runs on NPU")
    return None


def _remedy(name: str, similar: bool) -> str:
    equivalent = equivalents().get(name)
    if equivalent is None:
        return "replace it or move it off the hot path"
    if similar:  # -sim left the call: it passes an argument the equivalent does not take
        return (f"call ascend_function.{equivalent.function} (an exact NPU equivalent) without the "
                "arguments it does not take, e.g. out=")
    return f"gpu2npu -sim calls ascend_function.{equivalent.function}, an exact NPU equivalent"


def _judge_dispatcher_op(call: ast.Call, name: str, path: str, api: apidata.ApiData) -> Optional[Finding]:
    parts = name.split(".")
    if len(parts) < 4:
        return None
    namespace, op = parts[2], parts[3]
    if namespace == "aten":
        missing = apidata.lacks_npu_kernel(api, f"torch.{op}")
        if missing is None:
            return None
        return _row(call, path, NO_NPU_KERNEL, Report.UNSUPPORTED, name,
                    f"aten::{missing} has no NPU kernel in torch_npu {api.torch_npu_version}")
    if namespace == "npu":
        return None
    return _row(call, path, UNKNOWN_SUPPORT, Report.UNKNOWN, name,
                f"custom operator namespace '{namespace}': it runs on NPU only if its library registers "
                "an NPU (PrivateUse1) kernel")


def _judge_method_call(call: ast.Call, path: str, api: apidata.ApiData) -> Optional[Finding]:
    method = call.func.attr  # type: ignore[attr-defined]
    op = apidata.method_lacks_npu_kernel(api, method)
    if op is None:
        return None
    return _row(call, path, UNKNOWN_SUPPORT, Report.UNKNOWN, f"Tensor.{method}",
                f"if the receiver is a tensor: aten::{op} has no NPU kernel in torch_npu "
                f"{api.torch_npu_version} (it runs on the CPU at best)")

