"""Where a call goes, answered from the library's own source where a plain reading is certain.

Most call sites of a library need no inference engine: a function or class defined or imported at
the top of the module (through relative imports and the re-exports of `__init__.py`), a method
through `self`, `cls`, `super()` or a class along the class hierarchy, an instance attribute
assigned in a method (`self.attn = Attention(dim)`), what a builder returns, a module attribute
(`layers.create_act(...)`), a call of a builtin or of an imported outside package.  Those are
answered here, as jedi would answer them (call_graph's targets); what is not certain (a name
bound twice, a parameter, whose value is what callers pass, a class whose bases it cannot place)
is answered None and left to jedi.

Reading a module (ModuleIndex) turns every callee and every value the answers may need into a
small symbolic reference, while the module's tree is alive; the references are resolved against
the whole library afterwards (Index), so that no tree needs to be kept.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

# A reference is a tuple: its first item says what it is.
#   ("def", key)                 a definition of the library (function, method or class)
#   ("global", module, name)     `name` looked up in a module's namespace
#   ("module", dotted)           an imported module (the library's, or any other)
#   ("from", module, name)       `from module import name` (module None: a relative import
#                                that leaves the library)
#   ("attr", reference, name)    an attribute
#   ("call", reference)          what calling it gives
#   ("self", class key)          the instance a method runs on
#   ("super", class key)         super() in a method of that class
#   ("union", (references...))  one of several
#   ("table", (references...))  a dict, list, tuple or set literal: its values
#   ("item", reference)          a subscript (`TABLE[kind]`: one of the table's values)
#   ("nothing",)                 no value that matters (None, a function nested in a function)
#   ("object", reference)        a call's callee `variable.name` where the variable is a function's
#                                variable or parameter (answered only where its value is certain)
#   ("parameter",)               a function's parameter (what callers pass: not certain)
#   ("unknown",)                 not followed by this reading
Ref = Tuple
UNKNOWN: Ref = ("unknown",)
PARAMETER: Ref = ("parameter",)  # a function's parameter: what its callers pass (not certain)
NOTHING: Ref = ("nothing",)

# Meanings, what a reference resolves to: ("def", key), ("instance", class key), ("module",
# library module name), or EXTERNAL (outside the library: a builtin, another package).
EXTERNAL = ("external",)
Meanings = Optional[FrozenSet[Tuple]]  # None: not certain

_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_COMPREHENSIONS = frozenset({ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp})
# pattern nodes of `match` that bind a name, and the field that holds it
_PATTERN_NAMES = {getattr(ast, kind): name for kind, name in
                  (("MatchAs", "name"), ("MatchStar", "name"), ("MatchMapping", "rest")) if hasattr(ast, kind)}
_MAX_DEPTH = 24
_MAX_TABLE = 256  # entries of a dict, list, tuple or set literal that are followed
_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__", "__setstate__"})
# Calls whose result stands for their first argument where it is called or its attributes read
_GIVES_FIRST_ARGUMENT = frozenset({"partial", "deepcopy", "copy"})


@dataclass
class ClassShape:
    bases: List[Tuple[Optional[Tuple[int, int]], Ref]] = field(default_factory=list)  # (position, reference)
    # names its body binds other than its methods (`attention_class = Attention`)
    values: Dict[str, Ref] = field(default_factory=dict)
    # instance attribute -> the values assigned to `self.<attribute>` in the class's methods
    attributes: Dict[str, List[Ref]] = field(default_factory=dict)


@dataclass
class ModuleIndex:
    """What one module says about its names, for the answers: built while its tree is alive."""

    name: str
    namespace: Dict[str, Ref] = field(default_factory=dict)  # module-level name -> what it is bound to
    star_sources: List[Optional[str]] = field(default_factory=list)  # `from X import *` (None: above the root)
    callees: Dict[Tuple[int, int], Ref] = field(default_factory=dict)  # (line, column) of a call's last name -> its callee
    classes: Dict[str, ClassShape] = field(default_factory=dict)  # class key -> its shape
    returns: Dict[str, List[Ref]] = field(default_factory=dict)  # function key -> what its returns give

    def imported_modules(self) -> Set[str]:
        """The modules its module-level imports name (`from .layers import Mlp` names the
        package's layers, `import a.b` names a)."""
        names: Set[str] = {source for source in self.star_sources if source}
        for reference in self.namespace.values():
            if reference[0] == "module":
                names.add(reference[1])
            elif reference[0] == "from" and reference[1]:
                names.update((reference[1], f"{reference[1]}.{reference[2]}"))
        return names


class _Scope:
    """A function (or the module, a class body, a comprehension) and the names it binds, each with
    how: the binding statements are read first, as Python does, so that a use anywhere in the scope
    sees them all.  The scopes are Python's, as reading/scopes.py reads them for the import a name
    stands for: a comprehension's variables are its own, a class body is not seen from its methods,
    `global` sends a name to the module and `nonlocal` to an enclosing function."""

    def __init__(self, kind: str, parent: Optional["_Scope"], owner: Optional[str] = None) -> None:
        self.kind = kind  # "module", "function", "class" or "comprehension"
        self.parent = parent
        self.owner = owner  # the class key of a method (and of functions nested in one)
        self.bindings: Dict[str, List[Tuple]] = {}
        self.globals: Set[str] = set()
        self.nonlocals: Set[str] = set()
        self.memo: Dict[str, Ref] = {}

    def bind(self, name: str, how: Tuple) -> None:
        self.bindings.setdefault(name, []).append(how)


def read_module(tree: ast.Module, module_name: str, is_package: bool) -> ModuleIndex:
    """The index of one module (of its tree alone: which imports are the library's own is
    answered by the Index)."""
    return _Reader(module_name, is_package).read(tree)


class _Reader:
    def __init__(self, module_name: str, is_package: bool) -> None:
        self.index = ModuleIndex(module_name)
        self.module_name = module_name
        self.is_package = is_package
        self.depth = 0

    # -- binding ---------------------------------------------------------------------------------
    def read(self, tree: ast.Module) -> ModuleIndex:
        scope = _Scope("module", None)
        own = self._bind_body(scope, tree.body, self.module_name)
        self._uses(scope, own, self.module_name, owner=None)
        # (after the uses: a function's `global` rebinding of a module name is one more binding)
        for name, bindings in scope.bindings.items():
            self.index.namespace[name] = self._binding_ref(scope, name, bindings)
        return self.index

    def _bind_body(self, scope: _Scope, body: List[ast.AST], prefix: Optional[str]) -> List[ast.AST]:
        """Records what the statements of a scope bind; returns the scope's own nodes (those of
        nested functions, classes and lambdas are theirs: only the nested statements themselves,
        their decorators, defaults and bases are the scope's)."""
        own: List[ast.AST] = []
        pending: List[ast.AST] = list(body)
        bind = scope.bind
        while pending:
            node = pending.pop()
            own.append(node)
            kind = type(node)
            if kind in _DEFINITIONS:
                key = f"{prefix}.{node.name}" if prefix and scope.kind in ("module", "class") else None
                bind(node.name, ("def", key))
                pending.extend(node.decorator_list)
                if kind is ast.ClassDef:
                    pending.extend(node.bases)
                    pending.extend(k.value for k in node.keywords)
                else:
                    pending.extend(default_values(node.args))
                continue
            if kind is ast.Lambda:
                pending.extend(default_values(node.args))
                continue
            if kind in _COMPREHENSIONS:
                pending.append(node.generators[0].iter)  # (the first iterable is evaluated outside)
                if scope.kind != "comprehension":
                    for target in _walrus_targets(node):  # (a walrus in it binds here)
                        self._bind_target(scope, target, None)
                continue
            if kind is ast.Name or kind is ast.Constant or kind is ast.Load or kind is ast.Store:
                continue
            if kind is ast.Assign:
                single = len(node.targets) == 1 and type(node.targets[0]) is ast.Name
                for target in node.targets:
                    self._bind_target(scope, target, node.value if single else None)
            elif kind is ast.AnnAssign:
                if type(node.target) is ast.Name:
                    if scope.kind == "class":
                        # a field's default (a dataclass, a NamedTuple): the instance may hold another
                        if node.value is not None:
                            bind(node.target.id, ("unknown",))
                    else:
                        bind(node.target.id, ("value", node.value) if node.value is not None else ("unknown",))
            elif kind is ast.AugAssign or kind is ast.For or kind is ast.AsyncFor:
                self._bind_target(scope, node.target, None)
            elif kind is ast.NamedExpr:
                if scope.kind != "comprehension":  # (one in a comprehension is bound outside it: above)
                    self._bind_target(scope, node.target, None)
            elif kind is ast.withitem:
                if node.optional_vars is not None:
                    self._bind_target(scope, node.optional_vars, None)
            elif kind is ast.ExceptHandler:
                if node.name:
                    bind(node.name, ("unknown",))
            elif kind is ast.Global:
                scope.globals.update(node.names)
                module = scope
                while module.parent is not None:
                    module = module.parent
                if module is not scope:
                    for name in node.names:  # (the function rebinds the module's name)
                        module.bind(name, ("unknown",))
            elif kind is ast.Nonlocal:
                scope.nonlocals.update(node.names)
            elif kind is ast.Import:
                for alias in node.names:
                    if alias.asname:
                        bind(alias.asname, ("ref", ("module", alias.name)))
                    else:
                        top = alias.name.split(".")[0]
                        bind(top, ("ref", ("module", top)))
                continue
            elif kind is ast.ImportFrom:
                source = self._absolute(node)
                for alias in node.names:
                    if alias.name == "*":
                        if scope.kind == "module":
                            self.index.star_sources.append(source)
                        continue
                    bind(alias.asname or alias.name, ("ref", ("from", source, alias.name)))
                continue
            elif kind in _PATTERN_NAMES:
                name = getattr(node, _PATTERN_NAMES[kind])
                if name:
                    bind(name, ("unknown",))
            push_children(node, pending)
        return own

    def _bind_target(self, scope: _Scope, target: ast.AST, value: Optional[ast.AST]) -> None:
        if isinstance(target, ast.Name):
            scope.bind(target.id, ("value", value) if value is not None else ("unknown",))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(scope, element, None)
        elif isinstance(target, ast.Starred):
            self._bind_target(scope, target.value, None)

    def _absolute(self, node: ast.ImportFrom) -> Optional[str]:
        if not node.level:
            return node.module
        parts = self.module_name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)]
        if not parts:
            return None  # above the library's root
        return ".".join(parts + ([node.module] if node.module else []))

    # -- references ------------------------------------------------------------------------------
    def _binding_ref(self, scope: _Scope, name: str, bindings: List[Tuple]) -> Ref:
        if len(bindings) == 2:
            definitions = [how for how in bindings if how[0] == "def"]
            if len(definitions) == 1 and any(_rewraps(how, name) for how in bindings):
                bindings = definitions  # `Model = update(Model)`: a decorator applied by hand
        if len(bindings) != 1:
            return UNKNOWN
        how = bindings[0]
        kind = how[0]
        if kind == "def":
            return ("def", how[1]) if how[1] else NOTHING  # a function or class nested in a function
        if kind == "ref":
            return how[1]
        if kind == "value":
            return self._ref(how[1], scope)
        if kind == "parameter":
            # a default is only what a call that leaves the argument out gets: jedi also reads
            # the calls (`Mlp(act_layer=GELU)`), so a parameter is left to it
            return PARAMETER
        if kind == "self":
            return ("self", how[1])
        if kind == "cls":
            return ("def", how[1])
        return UNKNOWN

    def _name(self, name: str, scope: _Scope) -> Ref:
        current = scope
        while current is not None:
            if current.kind == "class" and current is not scope:
                current = current.parent  # a class body's names are not seen from its methods
                continue
            if name in current.globals:
                return ("global", self.module_name, name)
            if current.kind == "module":
                return ("global", self.module_name, name)
            if name in current.nonlocals:
                return UNKNOWN  # an enclosing function's variable, which this one rebinds
            if name in current.bindings:
                if name not in current.memo:
                    current.memo[name] = UNKNOWN  # (a value that refers to itself stays unknown)
                    current.memo[name] = self._binding_ref(current, name, current.bindings[name])
                return current.memo[name]
            current = current.parent
        return ("global", self.module_name, name)

    def _is_local_object(self, name: str, scope: _Scope) -> bool:
        """Whether `name` is a function's variable or parameter (not an import, a definition or
        the method's own instance): `name.method(...)` is then a call on some object."""
        current = scope
        while current is not None and current.kind != "module":
            if name in current.globals:
                return False
            if current.kind in ("function", "comprehension") and name in current.bindings:
                return not any(how[0] in ("ref", "def", "self", "cls") for how in current.bindings[name])
            current = current.parent
        return False

    def _ref(self, node: ast.AST, scope: _Scope) -> Ref:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                return UNKNOWN
            if isinstance(node, ast.Name):
                return self._name(node.id, scope)
            if isinstance(node, ast.Attribute):
                base = self._ref(node.value, scope)
                if base == PARAMETER:
                    # `config.hidden_act`, `args.model`: a setting or a method of an object a
                    # caller passes, not a library definition this reading (or jedi) can place
                    return NOTHING
                return UNKNOWN if base == UNKNOWN else ("attr", base, node.attr)
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id == "super" and self._name("super", scope)[0] == "global":
                    owner = scope.owner
                    return ("super", owner) if owner and not node.args else UNKNOWN
                if last_name(node.func) and last_name(node.func)[2] in _GIVES_FIRST_ARGUMENT and node.args:
                    # partial(Block, dim=...) is called as Block is; a copy is what it copies
                    return self._ref(node.args[0], scope)
                callee = self._ref(node.func, scope)
                return UNKNOWN if callee == UNKNOWN else ("call", callee)
            if isinstance(node, ast.IfExp):
                return _union([self._ref(node.body, scope), self._ref(node.orelse, scope)])
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
                return _union([self._ref(value, scope) for value in node.values])
            if isinstance(node, ast.Subscript):
                base = self._ref(node.value, scope)
                return UNKNOWN if base == UNKNOWN else ("item", base)
            if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                values = node.values if isinstance(node, ast.Dict) else node.elts
                if len(values) > _MAX_TABLE or any(isinstance(value, ast.Starred) for value in values):
                    return UNKNOWN
                return ("table", tuple(self._ref(value, scope) for value in values))
            # a constant, an operation, a lambda, a comprehension...: no library object to call
            return NOTHING
        finally:
            self.depth -= 1

    # -- uses --------------------------------------------------------------------------------------
    def _uses(self, scope: _Scope, own: List[ast.AST], prefix: Optional[str], owner: Optional[str]) -> None:
        """Records the callee of every call among a scope's own nodes, the shape of its classes and
        what its functions return, and goes on into the nested scopes."""
        callees = self.index.callees
        for node in own:
            kind = type(node)
            if kind is ast.Call:
                position = last_name(node.func)
                if position is not None:
                    callee = self._ref(node.func, scope)
                    if type(node.func) is ast.Attribute and type(node.func.value) is ast.Name \
                            and self._is_local_object(node.func.value.id, scope):
                        callee = ("object", callee)
                    callees[position[:2]] = callee
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                key = f"{prefix}.{node.name}" if prefix and scope.kind in ("module", "class") else None
                self._function(node, scope, key, owner if scope.kind == "class" else scope.owner)
            elif kind is ast.ClassDef:
                key = f"{prefix}.{node.name}" if prefix and scope.kind in ("module", "class") else None
                self._class(node, scope, key)
            elif kind is ast.Lambda:
                inner = _Scope("function", scope, owner=scope.owner)
                for argument in _arguments(node.args):
                    inner.bind(argument.arg, ("unknown",))
                self._uses(inner, self._bind_body(inner, [node.body], None), None, owner)
            elif kind in _COMPREHENSIONS:
                inner = _Scope("comprehension", scope, owner=scope.owner)
                for generator in node.generators:
                    self._bind_target(inner, generator.target, None)
                body = [node.key, node.value] if kind is ast.DictComp else [node.elt]
                body += [generator.iter for generator in node.generators[1:]]
                body += [condition for generator in node.generators for condition in generator.ifs]
                self._uses(inner, self._bind_body(inner, body, None), None, owner)

    def _function(self, node: ast.AST, scope: _Scope, key: Optional[str], owner: Optional[str]) -> None:
        method = scope.kind == "class" and key is not None
        decorators = {last_name(d)[2] for d in node.decorator_list if last_name(d)}
        inner = _Scope("function", scope, owner=owner)
        positional = node.args.posonlyargs + node.args.args
        for index, argument in enumerate(_arguments(node.args)):
            if method and index == 0 and positional and argument is positional[0] and "staticmethod" not in decorators:
                inner.bind(argument.arg, ("cls", owner) if "classmethod" in decorators or node.name == "__new__"
                           else ("self", owner))
            else:
                inner.bind(argument.arg, ("parameter",))
        own = self._bind_body(inner, node.body, None)
        self._uses(inner, own, None, owner)
        if key is not None:
            returns = [sub.value for sub in own if type(sub) is ast.Return and sub.value is not None]
            if returns:
                self.index.returns[key] = [self._ref(value, inner) for value in returns]
        if not (method and owner is not None):
            return
        shape = self.index.classes.setdefault(owner, ClassShape())
        for sub in own:
            kind = type(sub)
            if (kind is ast.Assign or kind is ast.AnnAssign) and sub.value is not None:
                targets = sub.targets if kind is ast.Assign else [sub.target]
                for target in targets:
                    attribute = _attribute_of(target, inner)
                    if attribute is not None:
                        if node.name not in _CONSTRUCTORS and _is_parameter(sub.value, inner):
                            # a setter's argument (`set_decoder(self, decoder)`) is what its
                            # caller passes, outside the library's own code: the instance holds
                            # what the constructors assign
                            continue
                        value = self._ref(sub.value, inner) if len(targets) == 1 else UNKNOWN
                        shape.attributes.setdefault(attribute, []).append(value)
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        for element in ast.walk(target):
                            attribute = _attribute_of(element, inner)
                            if attribute is not None:
                                shape.attributes.setdefault(attribute, []).append(UNKNOWN)
            elif kind is ast.AugAssign:
                attribute = _attribute_of(sub.target, inner)
                if attribute is not None:
                    shape.attributes.setdefault(attribute, []).append(UNKNOWN)

    def _class(self, node: ast.ClassDef, scope: _Scope, key: Optional[str]) -> None:
        inner = _Scope("class", scope, owner=scope.owner)
        own = self._bind_body(inner, node.body, key)
        if key is not None:
            shape = self.index.classes.setdefault(key, ClassShape())
            shape.bases = [((last_name(base) or (0, 0))[:2], self._ref(base, scope)) for base in node.bases]
            for name, bindings in inner.bindings.items():
                if not all(how[0] == "def" for how in bindings):
                    shape.values[name] = self._binding_ref(inner, name, bindings)
        self._uses(inner, own, key, key)


def _walrus_targets(comprehension: ast.AST) -> List[ast.AST]:
    """The targets of the walruses of a comprehension (and of those nested in it), which bind in
    the function around it; a lambda's are its own."""
    found: List[ast.AST] = []
    pending = [comprehension]
    while pending:
        node = pending.pop()
        if type(node) is ast.NamedExpr:
            found.append(node.target)
        if type(node) is not ast.Lambda:
            push_children(node, pending)
    return found


def push_children(node: ast.AST, pending: List[ast.AST]) -> None:
    """Appends a node's children to `pending` (ast.iter_child_nodes' order, without its generators)."""
    for name in node._fields:
        value = getattr(node, name, None)
        if type(value) is list:
            pending.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            pending.append(value)


def _rewraps(how: Tuple, name: str) -> bool:
    value = how[1] if how[0] == "value" else None
    return (type(value) is ast.Call and bool(value.args) and type(value.args[0]) is ast.Name
            and value.args[0].id == name)


def _is_parameter(value: ast.AST, scope: _Scope) -> bool:
    bindings = scope.bindings.get(value.id, ()) if type(value) is ast.Name else ()
    return len(bindings) == 1 and bindings[0][0] == "parameter"


def _attribute_of(target: ast.AST, scope: _Scope) -> Optional[str]:
    """`attr` of `self.attr` where `self` is the method's instance."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        if scope.bindings.get(target.value.id, [()])[0][:1] == ("self",):
            return target.attr
    return None


def _union(references: List[Ref]) -> Ref:
    if any(reference == UNKNOWN for reference in references):
        return UNKNOWN
    return ("union", tuple(references))


def _arguments(arguments: ast.arguments) -> List[ast.arg]:
    found = [*arguments.posonlyargs, *arguments.args]
    if arguments.vararg:
        found.append(arguments.vararg)
    found += arguments.kwonlyargs
    if arguments.kwarg:
        found.append(arguments.kwarg)
    return found


def default_values(arguments: ast.arguments) -> List[ast.AST]:
    """The default values of a signature (evaluated where the function is defined)."""
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]


def last_name(node: ast.AST) -> Optional[Tuple[int, int, str]]:
    """(line, column, name) of the last name of a Name/Attribute callee: where a call site is
    known by (and where jedi is asked)."""
    if isinstance(node, ast.Name):
        return node.lineno, node.col_offset, node.id
    if isinstance(node, ast.Attribute) and node.end_lineno is not None and node.end_col_offset is not None:
        # the attribute's name ends the node (on its last line; columns are UTF-8 byte offsets)
        return node.end_lineno, node.end_col_offset - len(node.attr.encode("utf-8")), node.attr
    return None


# -- the library's answers ----------------------------------------------------------------------
class Index:
    """Resolves the references of every module's index against the library: `targets` answers a
    call site as jedi would (call_graph.Target tuples), or None where this reading is not certain."""

    def __init__(self, modules: Dict[str, ModuleIndex], definitions, module_of_path) -> None:
        self.modules = modules
        self.definitions = definitions
        self.module_of_path = module_of_path
        self._globals: Dict[Tuple[str, str], Meanings] = {}
        self._bound: Dict[Tuple[str, str], bool] = {}
        self._bases: Dict[str, Tuple[List[str], bool]] = {}
        self._shapes: Dict[str, ClassShape] = {}
        for index in modules.values():
            self._shapes.update(index.classes)
        self._top_packages = {name.split(".")[0] for name in modules}
        self._depth = 0

    # -- answers -------------------------------------------------------------------------------
    def targets(self, module: str, line: int, column: int) -> Optional[List[Tuple]]:
        index = self.modules.get(module)
        reference = index.callees.get((line, column)) if index else None
        if reference is None:
            return None
        if reference[0] == "object":
            # a method of a function's variable or parameter: answered where its value is certain;
            # else nothing is asked (as for any other object whose type a plain reading does not
            # know, `x.view(...)`: library.worth_resolving)
            return self._targets(self.meaning(module, reference[1])) or []
        return self._targets(self.meaning(module, reference))

    def base_targets(self, class_key: str, line: int, column: int) -> Optional[List[Tuple]]:
        shape = self._shapes.get(class_key)
        module = self._module_of_key(class_key)
        for position, reference in (shape.bases if shape else ()):
            if position == (line, column) and module is not None:
                return self._targets(self.meaning(module, reference))
        return None

    def _targets(self, meanings: Meanings) -> Optional[List[Tuple]]:
        if meanings is None:
            return None
        found = []
        for meaning in meanings:
            if meaning[0] not in ("def", "instance"):
                continue
            definition = self.definitions.get(meaning[1])
            if definition is None:
                continue
            name = meaning[1].rsplit(".", 1)[-1]
            kind = "instance" if meaning[0] == "instance" else "class" if definition.kind == "class" else "function"
            found.append((kind, definition.path, definition.line, name))
        return sorted(set(found))

    # -- meanings ------------------------------------------------------------------------------
    def meaning(self, module: str, reference: Ref) -> Meanings:
        self._depth += 1
        try:
            if self._depth > _MAX_DEPTH * 4:
                return None
            return self._meaning(module, reference)
        finally:
            self._depth -= 1

    def _meaning(self, module: str, reference: Ref) -> Meanings:
        kind = reference[0]
        if kind == "def":
            return frozenset([("def", reference[1])]) if reference[1] in self.definitions else frozenset()
        if kind == "global":
            return self._global(reference[1], reference[2])
        if kind == "module":
            return frozenset([("module", reference[1])]) if self._is_module(reference[1]) else self._outside(reference[1])
        if kind == "from":
            source, name = reference[1], reference[2]
            if source is None:
                return None
            if source in self.modules and self._binds(source, name):
                return self._global(source, name)  # (a package's name wins over its submodule's)
            if self._is_module(f"{source}.{name}"):
                return frozenset([("module", f"{source}.{name}")])
            if source in self.modules:
                return self._global(source, name)
            return self._outside(source)
        if kind == "attr":
            base = self.meaning(module, reference[1])
            return None if base is None else self._each(base, lambda meaning: self._attribute(meaning, reference[2]))
        if kind == "call":
            callee = self.meaning(module, reference[1])
            return None if callee is None else self._each(callee, self._called)
        if kind == "self":
            return frozenset([("instance", reference[1])]) if reference[1] in self.definitions else None
        if kind == "super":
            return frozenset([("super", reference[1])]) if reference[1] in self.definitions else None
        if kind == "union":
            return self._each_reference(module, reference[1])
        if kind == "table":
            return frozenset([("table", module, reference[1])])
        if kind == "item":
            base = self.meaning(module, reference[1])
            return None if base is None else self._each(base, self._item)
        if kind == "nothing":
            return frozenset()
        return None

    def _each_reference(self, module: str, references) -> Meanings:
        return self._each_reference_of([(module, reference) for reference in references])

    @staticmethod
    def _each(meanings: FrozenSet[Tuple], step) -> Meanings:
        found: Set[Tuple] = set()
        for meaning in meanings:
            result = step(meaning)
            if result is None:
                return None
            found |= result
        return frozenset(found)

    def _outside(self, dotted: str) -> Meanings:
        # a module of the library's own packages that is not among its modules (not parsed,
        # compiled, generated): not certain; any other package: outside
        return None if dotted.split(".")[0] in self._top_packages else frozenset([EXTERNAL])

    def _is_module(self, dotted: str) -> bool:
        return dotted in self.modules

    def _global(self, module: str, name: str) -> Meanings:
        key = (module, name)
        if key in self._globals:
            return self._globals[key]
        self._globals[key] = None  # (a name defined through itself stays uncertain)
        index = self.modules.get(module)
        if index is None:
            result = None
        elif name in index.namespace:
            result = self.meaning(module, index.namespace[name])
        else:
            result = frozenset([EXTERNAL])  # a builtin, or a name of an outside package's `*`
            for source in index.star_sources:
                if source is not None and source in self.modules and self._binds(source, name):
                    result = self._global(source, name)
                    break
        self._globals[key] = result
        return result

    def _binds(self, module: str, name: str) -> bool:
        """Whether a module's namespace has `name`, itself or through its `import *`."""
        key = (module, name)
        if key not in self._bound:
            self._bound[key] = False  # (star imports that import each other)
            index = self.modules.get(module)
            self._bound[key] = index is not None and (
                name in index.namespace or any(source and self._binds(source, name) for source in index.star_sources))
        return self._bound[key]

    def _attribute(self, meaning: Tuple, name: str) -> Meanings:
        kind = meaning[0]
        if kind == "external" or kind == "table":
            return frozenset([EXTERNAL])  # (a table's attributes are its type's: dict.get...)
        if kind == "module":
            if not self._binds(meaning[1], name) and self._is_module(f"{meaning[1]}.{name}"):
                return frozenset([("module", f"{meaning[1]}.{name}")])
            return self._global(meaning[1], name)
        if kind == "def":
            definition = self.definitions[meaning[1]]
            if definition.kind != "class":
                return frozenset([EXTERNAL])  # an attribute of a function
            return self._class_attribute(meaning[1], name, set())
        if kind == "instance":
            values = self._instance_values(meaning[1], name, set())
            if values is None:
                return None
            if values:
                return self._each_reference_of(values)
            return self._class_attribute(meaning[1], name, set())
        if kind == "super":
            return self._inherited_attribute(meaning[1], name, set())
        return None

    def _each_reference_of(self, values: List[Tuple[str, Ref]]) -> Meanings:
        found: Set[Tuple] = set()
        for module, reference in values:
            meanings = self.meaning(module, reference)
            if meanings is None:
                return None
            found |= meanings
        return frozenset(found)

    def _item(self, meaning: Tuple) -> Meanings:
        if meaning[0] == "table":
            return self._each_reference(meaning[1], meaning[2])
        if meaning == EXTERNAL:
            return frozenset([EXTERNAL])
        # an item of a library object (a registry's __getitem__), of a class (typing's List[int])
        # or of a module: not followed, and jedi seldom knows more (transformers' ACT2FN)
        return frozenset()

    def _called(self, meaning: Tuple) -> Meanings:
        kind = meaning[0]
        if kind == "external":
            return frozenset([EXTERNAL])
        if kind == "def":
            definition = self.definitions[meaning[1]]
            if definition.kind == "class":
                return frozenset([("instance", meaning[1])])
            module = self._module_of_key(meaning[1])
            returns = self.modules[module].returns.get(meaning[1], []) if module else None
            if returns is None:
                return None
            return self._each_reference_of([(module, reference) for reference in returns])
        if kind == "instance" or kind == "table":
            return frozenset()  # what a module's forward gives (tensors), not followed
        return None

    # -- classes -------------------------------------------------------------------------------
    def _class_bases(self, class_key: str) -> Tuple[List[str], bool]:
        """The library classes a class derives from, and whether every base was placed."""
        if class_key in self._bases:
            return self._bases[class_key]
        self._bases[class_key] = ([], False)
        shape = self._shapes.get(class_key)
        module = self._module_of_key(class_key)
        bases: List[str] = []
        certain = shape is not None and module is not None
        for _, reference in (shape.bases if certain else ()):
            meanings = self.meaning(module, reference)
            if meanings is None:
                certain = False
                continue
            for meaning in sorted(meanings):
                if meaning[0] == "def" and self.definitions[meaning[1]].kind == "class":
                    if meaning[1] != class_key and meaning[1] not in bases:
                        bases.append(meaning[1])
                elif meaning != EXTERNAL:
                    certain = False
        self._bases[class_key] = (bases, certain)
        return bases, certain

    def _class_attribute(self, class_key: str, name: str, seen: Set[str]) -> Meanings:
        """What `Class.name` is, along the class hierarchy (as method lookup goes, depth first)."""
        if class_key in seen:
            return frozenset([EXTERNAL])
        seen.add(class_key)
        definition = self.definitions.get(class_key)
        shape = self._shapes.get(class_key)
        if definition is None:
            return None
        if shape is not None and name in shape.values:
            return self.meaning(self._module_of_key(class_key), shape.values[name])
        if name in definition.methods:
            return frozenset([("def", definition.methods[name])])
        if f"{class_key}.{name}" in self.definitions:
            return frozenset([("def", f"{class_key}.{name}")])
        return self._inherited_attribute(class_key, name, seen)

    def _inherited_attribute(self, class_key: str, name: str, seen: Set[str]) -> Meanings:
        """What `name` is in the first of a class's bases that has it (outside the library where
        none does and every base was placed)."""
        bases, certain = self._class_bases(class_key)
        for base in bases:
            found = self._class_attribute(base, name, seen)
            if found is None or found != frozenset([EXTERNAL]):
                return found
        return frozenset([EXTERNAL]) if certain else None

    def _instance_values(self, class_key: str, name: str, seen: Set[str]) -> Optional[List[Tuple[str, Ref]]]:
        """The values the class's methods (and its library bases') assign to `self.name`."""
        if class_key in seen:
            return []
        seen.add(class_key)
        shape = self._shapes.get(class_key)
        module = self._module_of_key(class_key)
        values = [(module, reference) for reference in shape.attributes.get(name, ())] if shape and module else []
        bases, certain = self._class_bases(class_key)
        for base in bases:
            inherited = self._instance_values(base, name, seen)
            if inherited is None:
                return None
            values += inherited
        if not values and not certain:
            return None
        return values

    def _module_of_key(self, key: str) -> Optional[str]:
        definition = self.definitions.get(key)
        return self.module_of_path(definition.path) if definition is not None else None
