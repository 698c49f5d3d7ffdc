"""A library's shape as `third_party` needs it, read with `ast`: its modules, the functions,
methods and classes each defines (with the lines of their bodies), the call sites inside them,
and the public names under which a user reaches each definition (`timm.layers.Mlp` as well as
`timm.layers.mlp.Mlp`, through the re-exports of the packages' `__init__.py`).

Each module is read once (ModuleShape, kept in the cache under its content) and no tree is kept.
Which definition a call site reaches is answered by call_graph.py (from index.py's reading of
the modules, and jedi for what it leaves open); this module only says what there is and where.
"""
from __future__ import annotations

import ast
import gc
import multiprocessing
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from ..reading.scan import parse
from .hit_facts import HitFacts, hit_facts_of
from .index import ModuleIndex, default_values, last_name, push_children, read_module

FUNCTION, METHOD, CLASS, MODULE = "function", "method", "class", "module"
# An instance attribute that holds several of the library's modules (nn.ModuleList, Sequential,
# ModuleDict, a list, tuple or dict): a link in a chain, from the method that runs them to theirs.
CONTAINER = "container"
CONSTRUCTORS = ("__init__", "__new__", "__post_init__")
# What calling an instance runs: its __call__, which for torch.nn.Module is forward.
INSTANCE_CALL = ("__call__", "forward")


@dataclass
class Definition:
    key: str  # qualified name where it is defined: package.module.Class.method
    kind: str
    path: str  # relative to the library's root folder
    line: int  # of its name (`def`/`class` line)
    body: Tuple[int, int] = (0, 0)  # lines its body spans (for a module: the whole file)
    owner: Optional[str] = None  # a method's class
    methods: Dict[str, str] = field(default_factory=dict)  # a class's own methods: name -> key
    bases: List[Tuple[int, int, str]] = field(default_factory=list)  # (line, column, last name) of base expressions
    header_end: int = 0  # a function's last line before its body: the signature with its defaults


@dataclass(frozen=True)
class CallSite:
    path: str
    line: int  # where jedi is asked: the callee's last name
    column: int
    name: str  # that last name
    caller: str  # the key of the innermost function (or the module) that makes the call
    self_call: bool  # `self.x(...)` or `super().x(...)`: the receiver is the caller's own instance
    receiver: str = ""  # "" for `f(...)`; the receiver's name for `name.x(...)`; "?" for any other receiver
    returned: bool = False  # the call's result is what the caller returns (`return Model(dim)`, a builder)


@dataclass
class Module:
    """A module of the library and what is kept of its tree (the trees of a large library take
    gigabytes: each is read once, and again only where a later step asks for `tree`)."""

    name: str
    path: str
    absolute: Path
    is_package: bool
    top_level: Tuple[str, ...] = ()  # names of its module-level functions and classes
    # (level, module, ((name, asname), ...)) of its module-level `from ... import` statements
    imports_from: Tuple[Tuple[int, Optional[str], Tuple[Tuple[str, Optional[str]], ...]], ...] = ()
    all_names: Optional[FrozenSet[str]] = None  # its __all__
    cuda_extensions: Tuple[str, ...] = ()  # names given to CUDAExtension(...) in it (a setup script)

    @property
    def tree(self) -> ast.Module:
        tree = parse(self.absolute.read_bytes())
        if tree is None:
            raise SyntaxError(f"{self.path} no longer parses")
        return tree


class Library:
    """Every module of the library under `root`; `root` is a package (has __init__.py) or a folder
    holding packages and modules (a vendored `third_party/`)."""

    def __init__(self, root: Path, files: List[Path], cache=None, jobs: int = 1) -> None:
        """`cache`: a cache.ResultCache that keeps each module's shape under its content; `jobs`:
        processes that read the modules the cache does not have."""
        self.root = root
        self.is_package = (root / "__init__.py").is_file()
        # jedi resolves imports from this folder: the package's parent, or the folder itself
        self.import_root = root.parent if self.is_package else root
        self.modules: Dict[str, Module] = {}
        self.unparsed: List[str] = []
        self._module_names: Optional[Dict[str, str]] = None
        self.definitions: Dict[str, Definition] = {}
        self.by_position: Dict[Tuple[str, int, str], str] = {}  # (relative path, line, name) -> key
        self.calls: List[CallSite] = []
        self.base_classes: Dict[str, List[str]] = {}  # class key -> library base classes (call_graph sets it)
        self.self_attributes: Set[str] = set()
        # (class key, attribute) -> (path, line, column) of the constructor calls whose instances
        # the attribute holds; and (method key, class key, attribute) where a method runs them
        self.held: Dict[Tuple[str, str], List[Tuple[str, int, int]]] = {}
        self.runs_held: List[Tuple[str, str, str]] = []
        # what each module's names mean, for the answers that need no jedi (index.py)
        self.indexes: Dict[str, ModuleIndex] = {}
        self.hit_facts: Dict[str, HitFacts] = {}  # relative path -> what its hits are found from
        self.shapes_read = 0  # modules read from their source (the others came from the cache)
        named = [(path, relative, name) for path in files
                 for relative in [path.relative_to(root).as_posix()]
                 for name in [self._module_name(relative)] if name is not None]
        for (path, relative, name), shape in zip(named, self._shapes(named, cache, jobs)):
            if shape is None:
                self.unparsed.append(relative)
                continue
            module = shape.module
            module.absolute = path
            self.modules[name] = module
            self.indexes[name] = shape.index
            self.hit_facts[relative] = shape.hit_facts
            for key, definition in shape.definitions.items():
                self.definitions.setdefault(key, definition)
            self.by_position.update(shape.by_position)
            self.calls += shape.calls
            self.self_attributes |= shape.self_attributes
            for key, constructions in shape.held.items():
                self.held.setdefault(key, []).extend(constructions)
            self.runs_held += shape.runs_held
        # the names calls can reach the library by: its functions and classes (module level or
        # nested), its methods (through self/cls/super or a class), and instance attributes that
        # hold its classes' instances
        self.names = {key.rsplit(".", 1)[-1] for key, d in self.definitions.items() if d.kind in (FUNCTION, CLASS)}
        self.method_names = {key.rsplit(".", 1)[-1] for key, d in self.definitions.items() if d.kind == METHOD}
        self.class_names = {key.rsplit(".", 1)[-1] for key, d in self.definitions.items() if d.kind == CLASS}
        # a container holds the library's modules where the calls that fill it construct its classes
        self.held = {key: [position[:3] for position in constructions if position[3] in self.class_names]
                     for key, constructions in self.held.items()}

    def _shapes(self, named, cache, jobs: int) -> List[Optional["ModuleShape"]]:
        """The shape of every module, in order: from the cache where it has the module's content,
        else read (in `jobs` processes where there are many)."""
        shapes: List[Optional[ModuleShape]] = [None] * len(named)
        work = []
        for number, (path, relative, name) in enumerate(named):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            key = cache.key(f"{name}\0{relative}", data) if cache is not None else None
            kept = cache.get(key) if key is not None else None
            if kept is not None:
                shapes[number] = kept or None  # (False: kept as not parsable)
            else:
                work.append((number, key, (name, relative, data)))
        self.shapes_read = len(work)
        jobs = min(jobs or os.cpu_count() or 1, max(1, len(work) // 64))
        if jobs > 1:
            with multiprocessing.get_context("spawn").Pool(jobs, _ignore_interrupts) as pool:
                read = pool.imap(_read_shape, (item for _, _, item in work), chunksize=16)
                results = list(read)
        else:
            results = [_read_shape(item) for _, _, item in work]
        for (number, key, _), shape in zip(work, results):
            shapes[number] = shape
            if cache is not None:
                cache.put(key, shape if shape is not None else False)
        return shapes

    def _module_name(self, relative: str) -> Optional[str]:
        parts = relative[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if self.is_package:
            parts = [self.root.name, *parts]
        if not parts or not all(part.isidentifier() for part in parts):
            return None  # not importable under a name (e.g. a script with a dash): not the library's API
        return ".".join(parts)

    def worth_resolving(self, call: CallSite) -> bool:
        """Whether jedi should be asked where a call goes: only what can lead into the library:
        a function or class it defines called by name or through a module (`layers.create(...)`),
        a method through self/cls/super or a class of its own, an attribute of self (it may hold
        an instance of one of its classes).  (A method of some other object, `x.view(...)`, would need
        the object's type, which jedi seldom knows and which costs most of its time.)"""
        if call.self_call:
            return call.name in self.method_names or call.name in self.self_attributes or call.name in self.names
        if not call.receiver:
            return call.name in self.names
        if call.receiver in self.class_names:
            return call.name in self.method_names
        return call.receiver != "?" and call.name in self.names

    def sources(self) -> Iterator[Module]:
        return iter(self.modules.values())

    def module_of(self, path: str) -> str:
        """The name of the module in the file `path` (relative to the root)."""
        if self._module_names is None:
            self._module_names = {module.path: name for name, module in self.modules.items()}
        return self._module_names[path]

    # -- public names ---------------------------------------------------------------------------
    def public_names(self) -> Dict[str, List[str]]:
        """key -> the public names of that definition: where it is defined (when no part of the
        path is private) and every public re-export of it in a package's __init__.py."""
        exported: Dict[str, Dict[str, str]] = {}  # module -> {public name -> key}
        for name, module in self.modules.items():
            exported[name] = {definition.key.rsplit(".", 1)[-1]: definition.key
                              for definition in self._top_level(name) if _public(definition.key.rsplit(".", 1)[-1])}
        for _ in range(8):  # re-exports of re-exports, to a fixed point (packages nest a few levels)
            grew = False
            for name, module in self.modules.items():
                # a package re-exports what its __init__ imports; a plain module only what its __all__ lists
                listed = None if module.is_package else (module.all_names or set())
                for local, key in self._imported(module, exported).items():
                    if listed is not None and local not in listed:
                        continue
                    if _public(local) and exported[name].get(local) != key and local not in exported[name]:
                        exported[name][local] = key
                        grew = True
            if not grew:
                break
        names: Dict[str, List[str]] = {}
        for module_name, table in exported.items():
            if any(part.startswith("_") for part in module_name.split(".")):
                continue
            for local, key in table.items():
                names.setdefault(key, []).append(f"{module_name}.{local}")
        for key, definition in self.definitions.items():
            if definition.kind == METHOD and _public(key.rsplit(".", 1)[-1]):
                for owner_name in names.get(definition.owner or "", []):
                    names.setdefault(key, []).append(f"{owner_name}.{key.rsplit('.', 1)[-1]}")
            elif definition.kind == MODULE and not any(part.startswith("_") for part in key.split(".")):
                names.setdefault(key, []).append(key)
        return {key: sorted(set(values), key=lambda value: (value.count("."), value)) for key, values in names.items()}

    def _top_level(self, module_name: str) -> Iterator[Definition]:
        for name in self.modules[module_name].top_level:
            definition = self.definitions.get(f"{module_name}.{name}")
            if definition is not None:
                yield definition

    def _imported(self, module: Module, exported: Dict[str, Dict[str, str]]) -> Dict[str, str]:
        """Names a module binds by importing library definitions (`from .mlp import Mlp`,
        `from .layers import *`), as known so far."""
        bound: Dict[str, str] = {}
        for level, imported, aliases in module.imports_from:
            source = self._absolute(module, level, imported)
            if source is None:
                continue
            for name, asname in aliases:
                if name == "*":
                    table = exported.get(source, {})
                    allowed = self.modules[source].all_names if source in self.modules else None
                    for local, key in table.items():
                        if allowed is None or local in allowed:
                            bound[local] = key
                    continue
                key = exported.get(source, {}).get(name)
                if key is None and f"{source}.{name}" in self.modules:
                    continue  # a submodule, not a definition
                if key is not None:
                    bound[asname or name] = key
        return bound

    def _absolute(self, module: Module, level: int, imported: Optional[str]) -> Optional[str]:
        if not level:
            return imported if imported in self.modules else None
        parts = module.name.split(".")
        if not module.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        name = ".".join(parts + ([imported] if imported else []))
        return name if name in self.modules else None


def _ignore_interrupts() -> None:
    # Ctrl-C reaches every process of the terminal's group: the parent alone handles it
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _read_shape(item: Tuple[str, str, bytes]) -> Optional["ModuleShape"]:
    name, relative, data = item
    tree = parse(data)
    if tree is None:
        return None
    # (the trees of a large library would hold gigabytes in the collector's view: it need not
    # look at them while they are read)
    collecting = gc.isenabled()
    gc.disable()
    try:
        shape = ModuleShape(Module(name, relative, Path(relative), relative.endswith("__init__.py")))
        shape.read(tree)
    finally:
        if collecting:
            gc.enable()
    return shape


class ModuleShape:
    """What the analysis keeps of one module, read from its tree in one walk: its definitions,
    its call sites, the containers of modules its classes hold, its index (index.py), and the
    facts its hits are found from (hit_facts.py).  Made in any process, kept in the cache."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.definitions: Dict[str, Definition] = {}
        self.by_position: Dict[Tuple[str, int, str], str] = {}
        self.calls: List[CallSite] = []
        self.self_attributes: Set[str] = set()
        self.held: Dict[Tuple[str, str], List[Tuple[str, int, int, str]]] = {}
        self.runs_held: List[Tuple[str, str, str]] = []
        self.index: Optional[ModuleIndex] = None
        self.hit_facts: Optional[HitFacts] = None

    def read(self, tree: ast.Module) -> None:
        module = self.module
        self._class_nodes: Dict[str, ast.ClassDef] = {}  # class key -> its statement (read for its containers)
        self._method_nodes: Dict[int, _Nodes] = {}  # id of a method's statement -> the nodes of its body
        self._extensions: List[str] = []
        self._collect(module, tree)
        self.index = read_module(tree, module.name, module.is_package)
        self._held_by_class: Dict[str, Set[str]] = {}
        for key, node in self._class_nodes.items():
            self._containers(self.definitions[key], node)
        module.top_level = tuple(statement.name for statement in tree.body
                                 if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        module.imports_from = tuple((statement.level, statement.module,
                                     tuple((alias.name, alias.asname) for alias in statement.names))
                                    for statement in tree.body if isinstance(statement, ast.ImportFrom))
        listed = _all_of(tree)
        module.all_names = frozenset(listed) if listed is not None else None
        module.cuda_extensions = tuple(self._extensions)
        self.hit_facts = hit_facts_of(tree)
        del self._class_nodes, self._method_nodes, self._extensions, self._held_by_class

    def _collect(self, module: Module, tree: ast.Module) -> None:
        lines = max((getattr(node, "end_lineno", 0) or 0 for node in tree.body), default=0)
        self._add(Definition(module.name, MODULE, module.path, 1, (1, lines)))
        self._scope(module, tree.body, module.name, module.name, None)

    def _add(self, definition: Definition) -> None:
        self.definitions.setdefault(definition.key, definition)

    def _scope(self, module: Module, body: List[ast.stmt], prefix: str, caller: str, owner: Optional[Definition]) -> None:
        """Definitions of a module or class body; the calls it makes directly belong to `caller`."""
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._calls_of(module, statement.decorator_list + default_values(statement.args), caller)
                key = f"{prefix}.{statement.name}"
                # (its signature belongs to it: a default `device="cuda"` is used by its calls)
                definition = Definition(key, METHOD if owner else FUNCTION, module.path, statement.lineno,
                                        (statement.lineno, statement.end_lineno or statement.lineno),
                                        owner.key if owner else None, header_end=statement.body[0].lineno - 1)
                self._add(definition)
                self.by_position[(module.path, statement.lineno, statement.name)] = key
                if owner is not None:
                    owner.methods.setdefault(statement.name, key)
                # nested functions and classes run as part of this one: their calls are its calls
                nodes = self._calls_of(module, statement.body, key)
                if owner is not None:  # read again for the containers its class holds
                    self._method_nodes[id(statement)] = nodes
            elif isinstance(statement, ast.ClassDef):
                self._calls_of(module, statement.decorator_list + statement.keywords, caller)
                key = f"{prefix}.{statement.name}"
                definition = Definition(key, CLASS, module.path, statement.lineno,
                                        (statement.lineno, statement.end_lineno or statement.lineno))
                for base in statement.bases:
                    self._calls_of(module, [base], caller)
                    position = last_name(base)
                    if position is not None:
                        definition.bases.append(position)
                self._add(definition)
                self._class_nodes.setdefault(key, statement)
                self.by_position[(module.path, statement.lineno, statement.name)] = key
                self._scope(module, statement.body, key, caller, definition)
            else:
                self._calls_of(module, [statement], caller)

    def _calls_of(self, module: Module, roots: List[ast.AST], caller: str) -> "_Nodes":
        """Records the calls under `roots` as `caller`'s, and the instance attributes they assign;
        returns the nodes found (every node is visited once in the whole library)."""
        nodes = _Nodes(roots)
        returned = nodes.returned_calls()
        for node in nodes.calls:
            position = last_name(node.func)
            if position is None:
                continue
            line, column, name = position
            if name == "CUDAExtension":
                value = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    self._extensions.append(value.value.rsplit(".", 1)[-1])
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            self_call = (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")) or (
                isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super")
            receiver_name = "" if receiver is None else receiver.id if isinstance(receiver, ast.Name) else "?"
            self.calls.append(CallSite(module.path, line, column, name, caller, self_call, receiver_name,
                                       id(node) in returned))
        # instance attributes the library assigns (`self.attn = Attention(...)`): calling one
        # may run a library class's forward
        for node in nodes.assigns:
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                attribute = _self_attribute(target)
                if attribute is not None:
                    self.self_attributes.add(attribute)
        return nodes

    def _containers(self, owner: Definition, node: ast.ClassDef) -> None:
        """The attributes of `owner`'s instances that hold library modules, and the methods that
        run what they hold (`for block in self.blocks: x = block(x)`, `self.blocks[i](x)`,
        `self.layers(x)` for a Sequential)."""
        methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for method in methods:
            local: Dict[str, List[Tuple[str, int, int]]] = {}  # a list built in the method, then stored
            nodes = self._method_nodes.get(id(method))
            if nodes is None:
                continue
            # (in source order: a list is filled before it is stored)
            in_order = sorted(nodes.assigns + nodes.calls, key=lambda n: (n.lineno, n.col_offset))
            for statement in in_order:
                self._collect_held(owner, owner.path, statement, local)
        held = self._held_by_class.get(owner.key, set())
        for method in methods:
            nodes = self._method_nodes.get(id(method))
            if not held or nodes is None:
                continue
            key = owner.methods.get(method.name)
            for attribute in sorted(_runs(nodes, held)):
                self.runs_held.append((key, owner.key, attribute))

    def _hold(self, owner: Definition, attribute: str, constructions: List[Tuple[str, int, int]]) -> None:
        self.held.setdefault((owner.key, attribute), []).extend(constructions)
        self._held_by_class.setdefault(owner.key, set()).add(attribute)

    def _collect_held(self, owner: Definition, path: str, statement: ast.AST, local: Dict[str, list]) -> None:
        def constructions(value: ast.AST) -> List[Tuple[str, int, int]]:
            found = []
            for node in ast.walk(value):
                if isinstance(node, ast.Name) and node.id in local:
                    found += local[node.id]
                if isinstance(node, ast.Call):
                    position = last_name(node.func)
                    if position is not None:  # (kept where it names a class of the library)
                        found.append((path, position[0], position[1], position[2]))
            return found

        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                attribute = _self_attribute(target)
                if attribute is not None and _is_container(statement.value, local):
                    self._hold(owner, attribute, constructions(statement.value))
                elif isinstance(target, ast.Name) and isinstance(statement.value, (ast.List, ast.Tuple, ast.ListComp,
                                                                                     ast.Dict, ast.DictComp)):
                    local[target.id] = constructions(statement.value)
                elif isinstance(target, ast.Subscript):  # self.blocks[name] = Block(...), blocks[i] = ...
                    attribute = _self_attribute(target.value)
                    if attribute is not None:
                        self._hold(owner, attribute, constructions(statement.value))
        elif isinstance(statement, ast.Call) and isinstance(statement.func, ast.Attribute) and \
                statement.func.attr in ("append", "extend", "add_module", "insert", "update"):
            receiver = statement.func.value
            values = [arg for arg in statement.args if not isinstance(arg, ast.Constant)]
            attribute = _self_attribute(receiver)
            if attribute is not None:
                for value in values:
                    self._hold(owner, attribute, constructions(value))
            elif isinstance(receiver, ast.Name) and receiver.id in local:
                for value in values:
                    local[receiver.id] += constructions(value)


class _Nodes:
    """The nodes under some roots that the library's shape is read from, grouped by kind, found in
    one breadth-first walk (ast.walk's order, without its generators: the walk is most of the time
    spent reading a large library)."""

    def __init__(self, roots: List[ast.AST]) -> None:
        self.calls: List[ast.Call] = []
        self.assigns: List[ast.AST] = []  # Assign and AnnAssign
        self.returns: List[ast.Return] = []
        self.loops: List[ast.AST] = []  # For, AsyncFor and comprehension
        pending = list(roots)
        index = 0
        calls, assigns, returns, loops = self.calls, self.assigns, self.returns, self.loops
        while index < len(pending):
            node = pending[index]
            index += 1
            kind = type(node)
            if kind is ast.Call:
                calls.append(node)
            elif kind is ast.Assign or kind is ast.AnnAssign:
                assigns.append(node)
            elif kind is ast.Return:
                returns.append(node)
            elif kind is ast.For or kind is ast.comprehension or kind is ast.AsyncFor:
                loops.append(node)
            push_children(node, pending)

    def returned_calls(self) -> Set[int]:
        """ids of the calls whose result a `return` gives back: its value, a branch of a
        conditional value, or a name bound to the call (`model = Net(); ...; return model`)."""
        if not self.returns:
            return set()
        bound: Dict[str, List[ast.AST]] = {}
        for node in self.assigns:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.setdefault(target.id, []).append(node.value)
        found: Set[int] = set()
        pending = [node.value for node in self.returns if node.value is not None]
        followed: Set[str] = set()
        while pending:
            value = pending.pop()
            if isinstance(value, ast.Call):
                found.add(id(value))
            elif isinstance(value, ast.IfExp):
                pending += [value.body, value.orelse]
            elif isinstance(value, ast.Name) and value.id not in followed:
                followed.add(value.id)
                pending += bound.get(value.id, [])
        return found


_CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict", "list", "tuple", "dict"})


def _self_attribute(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _is_container(value: ast.AST, local: Dict[str, list]) -> bool:
    """A value that holds several modules: a container's constructor, a list, tuple or dict (or a
    comprehension), or a local list built before."""
    if isinstance(value, (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.DictComp)):
        return True
    if isinstance(value, ast.Name):
        return value.id in local
    if isinstance(value, ast.Call):
        position = last_name(value.func)
        return position is not None and position[2] in _CONTAINERS
    return False


def _runs(nodes: _Nodes, held: Set[str]) -> Set[str]:
    """The held attributes whose elements a method calls: through a loop variable (also of
    enumerate/zip/.values()/.items()), by subscript, or by calling the container (a Sequential)."""
    ran: Set[str] = set()
    loop_names: Dict[str, str] = {}  # loop variable -> attribute iterated
    for node in nodes.loops:
        source = node.iter
        if isinstance(source, ast.Call) and isinstance(source.func, (ast.Name, ast.Attribute)):
            name = source.func.id if isinstance(source.func, ast.Name) else source.func.attr
            if name in ("values", "items") and isinstance(source.func, ast.Attribute):
                source = source.func.value
            elif name in ("enumerate", "zip", "reversed") and source.args:
                source = next((a for a in source.args if _self_attribute(a) in held), source.args[0])
        attribute = _self_attribute(source)
        if attribute in held:
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name):
                    loop_names[target.id] = attribute
    for node in nodes.calls:
        callee = node.func
        if isinstance(callee, ast.Name) and callee.id in loop_names:
            ran.add(loop_names[callee.id])
        elif isinstance(callee, ast.Subscript) and _self_attribute(callee.value) in held:
            ran.add(_self_attribute(callee.value))
        elif _self_attribute(callee) in held:
            ran.add(_self_attribute(callee))
    return ran


def _public(name: str) -> bool:
    return not name.startswith("_") or name in ("__init__", "__call__")


def _all_of(tree: ast.Module) -> Optional[Set[str]]:
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets)
                and isinstance(statement.value, (ast.List, ast.Tuple))):
            return {element.value for element in statement.value.elts
                    if isinstance(element, ast.Constant) and isinstance(element.value, str)}
    return None
