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
(`try: from apex import amp` / `except ImportError: amp = None`), except in the body of a loop,
`with` or `except` that binds the name, where it is certainly what they bound (`for cuda in
devices:` at the top of a file).  An import inside a function binds its name in that function
only.

Only the names some import binds, and that something else binds too or that an import binds
outside the module's own scope, depend on the place where they are read: for every other name
the file-wide table is exact, and most files have no such name, so their tree is not walked.
"""
from __future__ import annotations

import ast
import bisect
import io
import tokenize
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from .linemap import source_lines
from ..knowledge.tips import handed_on

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
    names: Set[str] = {node.id for node in _bound_names(groups, imported)}
    for node in groups.get(ast.arg, ()):
        if node.arg in imported:
            names.add(node.arg)
    for kind in (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler):
        for node in groups.get(kind, ()):
            if node.name in imported:
                names.add(node.name)
    for kind in _MATCH_CAPTURES:
        for node in groups.get(kind, ()):
            name = node.rest if kind.__name__ == "MatchMapping" else node.name
            if name in imported:
                names.add(name)
    at_module = _module_level_imports(tree)
    for kind in (ast.Import, ast.ImportFrom):
        for node in groups.get(kind, ()):
            if id(node) not in at_module:
                names.update(name for name, _ in import_bindings(node))
    return names


_MATCH_CAPTURES = tuple(getattr(ast, kind) for kind in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, kind))


def _bound_names(groups: Dict[type, List[ast.AST]], wanted) -> List[ast.Name]:
    """The Names of `wanted` that assignments, loops, `with`, comprehensions, walruses and `del`
    bind: the targets of those statements, not every Name of the file (a tenth of them).  (Asked of
    every file: plain loops, a Name target handled without a list.)"""
    found: List[ast.Name] = []
    nested: List[ast.AST] = []
    name_class, unpacked = ast.Name, (ast.Tuple, ast.List, ast.Starred)
    for node in groups.get(ast.Assign, ()):
        for target in node.targets:
            kind = target.__class__
            if kind is name_class:
                if target.id in wanted:
                    found.append(target)
            elif kind in unpacked:
                nested.append(target)
    for kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr):
        for node in groups.get(kind, ()):
            nested.append(node.target)
    for node in groups.get(ast.withitem, ()):
        if node.optional_vars is not None:
            nested.append(node.optional_vars)
    for node in groups.get(ast.Delete, ()):
        nested.extend(node.targets)
    while nested:
        target = nested.pop()
        kind = target.__class__
        if kind is name_class:
            if target.id in wanted:
                found.append(target)
        elif kind is ast.Tuple or kind is ast.List:
            nested.extend(target.elts)
        elif kind is ast.Starred:
            nested.append(target.value)
    return found


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


class _Region:
    """Where a scope's own code stands: from `start` to `end` ((line, column) pairs, as ast
    counts them), less `excluded` (a comprehension's first iterable, read outside it)."""

    __slots__ = ("start", "end", "excluded", "scope", "parent")

    def __init__(self, start, end, scope: _Scope, excluded=None) -> None:
        self.start, self.end, self.scope, self.excluded = start, end, scope, excluded
        self.parent: Optional["_Region"] = None

    def holds(self, place) -> bool:
        return self.start <= place < self.end and not (
            self.excluded is not None and self.excluded[0] <= place < self.excluded[1])


def _start(node: ast.AST):
    decorators = getattr(node, "decorator_list", None)
    first = decorators[0] if decorators else node
    return first.lineno, first.col_offset


def _end(node: ast.AST):
    return node.end_lineno, node.end_col_offset


class Scopes:
    """For the names whose meaning depends on the place (`names`): what each occurrence stands
    for, by the ast node (`of_node`) and by its line and column in characters, as libcst counts
    them (`at`).  An occurrence that binds the name, or reads a binding that is not an import,
    stands for nothing (an empty set).

    Found without a walk of the tree: each scope's code is a region of the text (a function's
    body, a lambda's expression, a class body, a comprehension but its first iterable), regions
    nest as scopes do, and each occurrence of a name, each binding and each import belongs to the
    innermost region that holds its place.  Decorators, defaults, annotations and base classes
    stand before the body, so they belong to the scope around it, as Python evaluates them."""

    def __init__(self, tree: ast.Module, groups: Dict[type, List[ast.AST]], names: Set[str],
                 text: Optional[str] = None) -> None:
        self.names = frozenset(names)
        # names some import binds to the module of that very name (`import torch`, `import triton`)
        self._named_as_module = frozenset(name for kind in (ast.Import, ast.ImportFrom) for node in groups.get(kind, ())
                                          for name, target in import_bindings(node) if name == target and name in names)
        self._by_node: Dict[int, FrozenSet[str]] = {}
        self._by_place: Dict[Tuple[int, int], FrozenSet[str]] = {}
        self._module = _Scope(_MODULE, None)
        self._regions(groups)
        self._bind(groups)
        reads = []
        for node in groups.get(ast.Name, ()):
            if node.id in names:
                if node.ctx.__class__ is ast.Load:
                    reads.append(node)
                else:
                    self._record(node, EMPTY)
        blocks = self._binding_blocks(groups) if reads else []
        for node in reads:
            place = (node.lineno, node.col_offset)
            scope = self._scope_at(place)
            meaning = self._lookup(node.id, scope)
            if meaning and blocks:
                # (a comprehension runs where it stands: in the body, it reads what the body reads)
                running = scope
                while running.kind == _COMPREHENSION:
                    running = running.parent
                if any(name == node.id and block_scope is running and start <= place < end
                       for name, block_scope, start, end in blocks):
                    meaning = EMPTY
            self._record(node, meaning)
        self._lines = None if text is None or text.isascii() else source_lines(text)
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
        return cls(tree, groups, names, text)

    # -- questions ---------------------------------------------------------------------------
    def of_node(self, node: ast.Name, likely: bool = False) -> Optional[FrozenSet[str]]:
        """What an ast Name of the tree stands for; None for a node not in the tree.  `likely`:
        a local or parameter named as the module the file imports under that name (`torch` in
        `def pick(torch)` beside `import torch`) stands for that module: what the reports may say,
        never what the rules edit."""
        meaning = self._by_node.get(id(node))
        return self._likely(node.id, meaning) if likely else meaning

    def at(self, line: int, column: int, likely_name: Optional[str] = None) -> Optional[FrozenSet[str]]:
        """What the name starting at this line and column (in characters) stands for; None
        where no such name was read.  `likely_name`: that name, read as `of_node`'s `likely`."""
        meaning = self._by_place.get((line, column))
        return self._likely(likely_name, meaning) if likely_name is not None else meaning

    def _likely(self, name: str, meaning: Optional[FrozenSet[str]]) -> Optional[FrozenSet[str]]:
        return frozenset((name,)) if meaning == EMPTY and name in self._named_as_module else meaning

    # -- building ----------------------------------------------------------------------------
    def _regions(self, groups) -> None:
        """The scopes' regions, sorted by where they start, each with the region around it."""
        regions: List[Tuple[tuple, int, _Region]] = []
        for kind in _FUNCTIONS:
            for node in groups.get(kind, ()):
                scope = _Scope(_FUNCTION, None)
                scope.others.update(_parameters(node.args) & self.names)
                regions.append((_start(node.body[0]), 0, _Region(_start(node.body[0]), _end(node), scope)))
        for node in groups.get(ast.Lambda, ()):
            scope = _Scope(_FUNCTION, None)
            scope.others.update(_parameters(node.args) & self.names)
            regions.append(((node.body.lineno, node.body.col_offset), 0,
                            _Region((node.body.lineno, node.body.col_offset), _end(node.body), scope)))
        for node in groups.get(ast.ClassDef, ()):
            regions.append((_start(node.body[0]), 0, _Region(_start(node.body[0]), _end(node), _Scope(_CLASS, None))))
        for kind in _COMPREHENSIONS:
            for node in groups.get(kind, ()):
                first = node.generators[0].iter
                region = _Region((node.lineno, node.col_offset), _end(node), _Scope(_COMPREHENSION, None),
                                 ((first.lineno, first.col_offset), _end(first)))
                # (a lambda whose body is the comprehension has the same region: the comprehension is inside)
                regions.append(((node.lineno, node.col_offset), 1, region))
        # larger regions first among those that start together, so that the inner ones come after
        regions.sort(key=lambda item: (item[0], (-item[2].end[0], -item[2].end[1]), item[1]))
        self._starts = [item[0] for item in regions]
        self._sorted = [item[2] for item in regions]
        stack: List[_Region] = []
        for region in self._sorted:
            while stack and not (region.start >= stack[-1].start and region.end <= stack[-1].end):
                stack.pop()
            parent = stack[-1] if stack else None
            while parent is not None and parent.excluded is not None and (
                    parent.excluded[0] <= region.start and region.end <= parent.excluded[1]):
                parent = parent.parent  # (a lambda in a comprehension's first iterable is outside it)
            region.parent = parent
            region.scope.parent = region.parent.scope if region.parent is not None else self._module
            stack.append(region)

    def _scope_at(self, place) -> _Scope:
        """The scope of the innermost region that holds `place`."""
        index = bisect.bisect_right(self._starts, place) - 1
        region = self._sorted[index] if index >= 0 else None
        while region is not None and not region.holds(place):
            region = region.parent
        return region.scope if region is not None else self._module

    def _bind(self, groups) -> None:
        names = self.names
        walrus = {id(node.target) for node in groups.get(ast.NamedExpr, ())}
        for node in _bound_names(groups, names):
            scope = self._scope_at((node.lineno, node.col_offset))
            if id(node) in walrus:  # (a walrus in a comprehension binds in the function around it)
                while scope.kind == _COMPREHENSION:
                    scope = scope.parent
            scope.bind(node.id)
        for kind in (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler):
            for node in groups.get(kind, ()):
                if node.name in names:  # (a def binds its name where the `def` stands)
                    self._scope_at((node.lineno, node.col_offset)).bind(node.name)
        for kind in _MATCH_CAPTURES:
            for node in groups.get(kind, ()):
                name = node.rest if kind.__name__ == "MatchMapping" else node.name
                if name in names:
                    self._scope_at((node.lineno, node.col_offset)).bind(name)
        for kind in (ast.Import, ast.ImportFrom):
            for node in groups.get(kind, ()):
                bound = [(name, target) for name, target in import_bindings(node) if name in names]
                if bound:
                    scope = self._scope_at((node.lineno, node.col_offset))
                    for name, target in bound:
                        scope.imports.setdefault(name, set()).add(target)
        for kind, field in ((ast.Global, "globals"), (ast.Nonlocal, "nonlocals")):
            for node in groups.get(kind, ()):
                getattr(self._scope_at((node.lineno, node.col_offset)), field).update(node.names)
        # `global x` then `import x` in a function binds the module's x
        for region in self._sorted:
            scope = region.scope
            for name in scope.globals & scope.imports.keys():
                self._module.imports.setdefault(name, set()).update(scope.imports.pop(name))

    def _binding_blocks(self, groups) -> List[Tuple[str, _Scope, tuple, tuple]]:
        """(name, scope, start, end) of the bodies of the loops, `with`s and `except`s that bind one
        of the names in the scope they stand in: there the name is what they bound, whatever the
        scope's import binds it to elsewhere (`for cuda in devices: cuda.name`, `with open(p) as
        cuda: cuda.read()` beside `from torch import cuda`).  Not the code of a function defined
        in such a body: that reads the name when it is called."""
        targets = [(node, node.target) for kind in (ast.For, ast.AsyncFor) for node in groups.get(kind, ())]
        targets += [(node, item.optional_vars) for kind in (ast.With, ast.AsyncWith) for node in groups.get(kind, ())
                    for item in node.items if item.optional_vars is not None]
        bound = [(node, {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}) for node, target in targets]
        bound += [(node, {node.name}) for node in groups.get(ast.ExceptHandler, ()) if node.name]
        return [(name, self._scope_at((node.lineno, node.col_offset)), _start(node.body[0]), _end(node.body[-1]))
                for node, names in bound for name in names & self.names]

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


def _parameters(arguments: ast.arguments) -> Set[str]:
    return {argument.arg for argument in (*getattr(arguments, "posonlyargs", ()), *arguments.args,
                                          *arguments.kwonlyargs, arguments.vararg, arguments.kwarg)
            if argument is not None}


def _decoded(data: bytes) -> Optional[str]:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None
