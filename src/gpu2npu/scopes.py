"""What a name read at one place of a file stands for: Python's scopes of the file, for the
names its imports bind.

Every part of the tool asks one question of a name (`cuda` in `cuda.memory_allocated()`,
`torch` in `torch.cuda.synchronize()`): which import does it stand for here, if any?  A file-wide
table of imports answers it wrongly wherever the name is bound again in an inner scope: a
parameter `def sync(torch)`, a loop or comprehension variable `[cuda.device for cuda in items]`,
a local `config = ...` beside `import torch._inductor.config as config`.  Rewriting those names
as the import breaks the program (or writes an assignment to `torch_npu.npu`), and reporting them
invents rows that no edit can answer.

The policy, as Python's own: a name bound in an inner scope (parameter, assignment, `for`,
`with`, `except` or comprehension target, walrus, `def`/`class`, `del`, a `match` capture) is not
the import there; a function that only reads a name sees the enclosing function's or the module's
binding (a closure over an import is the import); a class body is not seen from the functions in
it; `global` and `nonlocal` send a name to the module or the enclosing function.  Within one
scope an import wins over the other bindings of its name, since those are its alternatives
(`try: from apex import amp` / `except ImportError: amp = None`).  An import inside a function
binds its name in that function only.

Only the names some import binds, and that something else binds too or that an import binds
outside the module's own scope, depend on the place where they are read: for every other name
the file-wide table is exact, and most files have no such name, so their tree is not walked.
"""
from __future__ import annotations

import ast
import tokenize
import io
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from .tips import handed_on

EMPTY: FrozenSet[str] = frozenset()

_MODULE, _CLASS, _FUNCTION, _COMPREHENSION = range(4)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Statements whose bodies are still the scope they stand in (imports under `try`, `if`, `with`).
_COMPOUND = (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())


def import_bindings(node: ast.AST) -> Iterable[Tuple[str, str]]:
    """(local name, what it is bound to) for each name an import statement binds: `import a.b`
    binds a, `import a.b as x` binds x to a.b, `from a import b as y` binds y to a.b; a relative
    import binds its name to a path starting with its dots."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            root = alias.name.split(".")[0]
            yield alias.asname or root, alias.name if alias.asname else root
    else:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                yield alias.asname or alias.name, handed_on(module, alias.name) or (
                    f"{module}{alias.name}" if module.endswith(".") else f"{module}.{alias.name}")


class _Scope:
    __slots__ = ("kind", "parent", "imports", "others", "globals", "nonlocals")

    def __init__(self, kind: int, parent: Optional["_Scope"]) -> None:
        self.kind, self.parent = kind, parent
        self.imports: Dict[str, Set[str]] = {}  # name -> what the scope's imports bind it to
        self.others: Set[str] = set()  # names the scope binds otherwise
        self.globals: Set[str] = set()
        self.nonlocals: Set[str] = set()

    def bind(self, name: str) -> None:
        self.others.add(name)  # (unless `global` or `nonlocal` sends it on: see Scopes._lookup)


def _place_dependent_names(tree: ast.Module, groups: Dict[type, List[ast.AST]], imported: Set[str]) -> Set[str]:
    """The imported names whose meaning may depend on where they are read (see the module's
    docstring); found from the nodes grouped by class, without a walk of the tree."""
    names: Set[str] = set()
    for node in groups.get(ast.Name, ()):
        if node.ctx.__class__ is not ast.Load and node.id in imported:
            names.add(node.id)
    for node in groups.get(ast.arg, ()):
        if node.arg in imported:
            names.add(node.arg)
    for kind in (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler):
        for node in groups.get(kind, ()):
            if node.name in imported:
                names.add(node.name)
    for kind in ("MatchAs", "MatchStar", "MatchMapping"):
        for node in groups.get(getattr(ast, kind, None), ()):
            name = node.rest if kind == "MatchMapping" else node.name
            if name in imported:
                names.add(name)
    at_module = _module_level_imports(tree)
    for kind in (ast.Import, ast.ImportFrom):
        for node in groups.get(kind, ()):
            if id(node) not in at_module:
                names.update(name for name, _ in import_bindings(node))
    return names


def _module_level_imports(tree: ast.Module) -> Set[int]:
    found: Set[int] = set()
    todo = list(tree.body)
    while todo:
        statement = todo.pop()
        kind = statement.__class__
        if kind is ast.Import or kind is ast.ImportFrom:
            found.add(id(statement))
        elif isinstance(statement, _COMPOUND):
            todo.extend(statement.body)
            todo.extend(getattr(statement, "orelse", ()))
            todo.extend(getattr(statement, "finalbody", ()))
            for handler in getattr(statement, "handlers", ()):
                todo.extend(handler.body)
        elif kind.__name__ == "Match":
            for case in statement.cases:
                todo.extend(case.body)
    return found


class Scopes:
    """For the names whose meaning depends on the place (`names`): what each occurrence stands
    for, by the ast node (`of_node`) and by its line and column in characters, as libcst counts
    them (`at`).  An occurrence that binds the name, or reads a binding that is not an import,
    stands for nothing (an empty set)."""

    def __init__(self, tree: ast.Module, names: Set[str], text: Optional[str] = None) -> None:
        self.names = frozenset(names)
        self._by_node: Dict[int, FrozenSet[str]] = {}
        self._by_place: Dict[Tuple[int, int], FrozenSet[str]] = {}
        module = _Scope(_MODULE, None)
        self._module = module
        reads: List[Tuple[ast.Name, _Scope]] = []
        binds: List[ast.Name] = []
        self._walk(tree, module, reads, binds)
        for node in binds:
            self._record(node, EMPTY)
        for node, scope in reads:
            self._record(node, self._lookup(node.id, scope))
        self._lines = None if text is None or text.isascii() else _lines(text)
        if self._lines is not None:  # ast counts columns in UTF-8 bytes, libcst in characters
            self._by_place = {(line, self._characters(line, column)): meaning
                              for (line, column), meaning in self._by_place.items()}

    @classmethod
    def of(cls, tree: ast.Module, groups: Dict[type, List[ast.AST]], imported: Optional[Set[str]] = None,
           data: Optional[bytes] = None, text: Optional[str] = None) -> Optional["Scopes"]:
        """The scopes of a file (`groups`: its nodes by class, `scan.nodes_by_class`) whose imports
        bind `imported` (None: found here), or None where no imported name depends on the place (the
        file-wide table is exact).  `data` or `text`: what the tree was parsed from."""
        if imported is None:
            imported = {name for kind in (ast.Import, ast.ImportFrom) for node in groups.get(kind, ())
                        for name, _ in import_bindings(node)}
        names = _place_dependent_names(tree, groups, imported) if imported else set()
        if not names:
            return None
        if text is None and data is not None and not data.isascii():
            text = _decoded(data)
        return cls(tree, names, text)

    # -- questions ---------------------------------------------------------------------------
    def of_node(self, node: ast.Name) -> Optional[FrozenSet[str]]:
        """What an ast Name of the tree stands for; None for a node not in the tree."""
        return self._by_node.get(id(node))

    def at(self, line: int, column: int) -> Optional[FrozenSet[str]]:
        """What the name starting at this line and column (in characters) stands for; None
        where no such name was read."""
        return self._by_place.get((line, column))

    # -- building ----------------------------------------------------------------------------
    def _record(self, node: ast.Name, meaning: FrozenSet[str]) -> None:
        self._by_node[id(node)] = meaning
        self._by_place[(node.lineno, node.col_offset)] = meaning

    def _characters(self, line: int, column: int) -> int:
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return len(text.encode("utf-8")[:column].decode("utf-8", "replace")) if not text.isascii() else column

    def _lookup(self, name: str, scope: _Scope) -> FrozenSet[str]:
        here = scope
        while scope is not None:
            if scope is not here and scope.kind == _CLASS:  # functions in a class do not see its body
                scope = scope.parent
                continue
            if name in scope.globals:
                scope = self._module
            elif name in scope.nonlocals:
                scope = scope.parent
                continue
            if name in scope.imports:
                return frozenset(scope.imports[name])
            if name in scope.others:
                return EMPTY
            scope = scope.parent
        return EMPTY

    def _walk(self, tree: ast.AST, module: _Scope, reads, binds) -> None:
        names = self.names
        scopes = [module]
        todo: List[Tuple[ast.AST, _Scope]] = [(tree, module)]
        pop, push = todo.pop, todo.append
        while todo:
            node, scope = pop()
            kind = node.__class__
            if kind is ast.Name:
                if node.id in names:
                    if node.ctx.__class__ is ast.Load:
                        reads.append((node, scope))
                    else:
                        scope.bind(node.id)
                        binds.append(node)
                continue
            if kind in _FUNCTIONS or kind is ast.Lambda:
                inner = _Scope(_FUNCTION, scope)
                scopes.append(inner)
                arguments = node.args
                for default in (*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)):
                    push((default, scope))
                for argument in (*getattr(arguments, "posonlyargs", ()), *arguments.args, *arguments.kwonlyargs,
                                 arguments.vararg, arguments.kwarg):
                    if argument is None:
                        continue
                    inner.bind(argument.arg)
                    if argument.annotation is not None:
                        push((argument.annotation, scope))
                if kind is ast.Lambda:
                    push((node.body, inner))
                    continue
                scope.bind(node.name)
                for decorator in node.decorator_list:
                    push((decorator, scope))
                if node.returns is not None:
                    push((node.returns, scope))
                for statement in node.body:
                    push((statement, inner))
                continue
            if kind is ast.ClassDef:
                scope.bind(node.name)
                inner = _Scope(_CLASS, scope)
                scopes.append(inner)
                for part in (*node.decorator_list, *node.bases, *node.keywords):
                    push((part, scope))
                for statement in node.body:
                    push((statement, inner))
                continue
            if kind in _COMPREHENSIONS:
                inner = _Scope(_COMPREHENSION, scope)
                scopes.append(inner)
                first, *rest = node.generators
                push((first.iter, scope))  # (evaluated where the comprehension stands)
                for generator in node.generators:
                    push((generator.target, inner))
                    for condition in generator.ifs:
                        push((condition, inner))
                for generator in rest:
                    push((generator.iter, inner))
                for part in ((node.key, node.value) if kind is ast.DictComp else (node.elt,)):
                    push((part, inner))
                continue
            if kind is ast.NamedExpr:
                target = scope  # (a walrus in a comprehension binds in the function around it)
                while target.kind == _COMPREHENSION:
                    target = target.parent
                push((node.target, target))
                push((node.value, scope))
                continue
            if kind is ast.Import or kind is ast.ImportFrom:
                for name, bound in import_bindings(node):
                    if name in names:
                        scope.imports.setdefault(name, set()).add(bound)
                continue
            if kind is ast.Global:
                scope.globals.update(node.names)
                continue
            if kind is ast.Nonlocal:
                scope.nonlocals.update(node.names)
                continue
            if kind is ast.ExceptHandler and node.name:
                scope.bind(node.name)
            elif kind.__name__ in ("MatchAs", "MatchStar") and node.name:
                scope.bind(node.name)
            elif kind.__name__ == "MatchMapping" and node.rest:
                scope.bind(node.rest)
            for field in node._fields:
                value = getattr(node, field, None)
                if value.__class__ is list:
                    for item in value:
                        if isinstance(item, ast.AST):
                            push((item, scope))
                elif isinstance(value, ast.AST):
                    push((value, scope))
        # `global x` then `import x` in a function binds the module's x (the statements were
        # met in no particular order, so this is settled once all are known)
        for scope in scopes[1:]:
            for name in scope.globals & scope.imports.keys():
                module.imports.setdefault(name, set()).update(scope.imports.pop(name))


def _decoded(data: bytes) -> Optional[str]:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


def _lines(text: str) -> List[str]:
    import re

    return re.split(r"\r\n|\r|\n", text)
