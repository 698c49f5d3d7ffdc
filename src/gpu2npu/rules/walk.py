"""Walks of a libcst tree: a read-only one for the visitors that only look, and one for the batch
of rules, which changes the tree.

libcst's `node.visit(visitor)` rebuilds every node from its visited children (and validates
it), and calls the visitor's attribute hooks around every field, even for a CSTVisitor that
changes nothing.  Over a whole file that is most of the cost of a look at it.  `walk` calls the
same `on_visit` / `on_leave` of the visitor (or, where those are libcst's, the same
`visit_<Class>` / `leave_<Class>` hooks), in the same order (each node's fields in the order
libcst's code for its class visits them, which is their order in the source), and nothing else:
no node is built, no attribute hook is called.  `transform` rebuilds only the nodes whose
children changed.  Visitors that define attribute hooks (`visit_Call_func`) are walked by
libcst itself.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Set, Tuple

import libcst as cst
import libcst.metadata as libcst_metadata
from libcst.metadata import BaseMetadataProvider

from . import positions
from .libcst_private import computed_metadata, generate, is_removable, visited_fields

# Node class -> the names of its fields that hold child nodes, in the order libcst visits them.
_FIELDS: Dict[type, Tuple[str, ...]] = {}
# libcst's helpers that visit a field, visit_required(parent, "field", value, visitor), ..., by
# what they make of the result of a child's visit (a removal, a FlattenSentinel).
_REQUIRED, _OPTIONAL, _SENTINEL, _SEQUENCE, _BODY = range(5)
_HELPER_KINDS = {"visit_required": _REQUIRED, "visit_optional": _OPTIONAL, "visit_sentinel": _SENTINEL,
                 "visit_sequence": _SEQUENCE, "visit_iterable": _SEQUENCE,
                 "visit_body_sequence": _BODY, "visit_body_iterable": _BODY}
_VISIT_HELPERS = frozenset(_HELPER_KINDS)
# Node class -> (field, _HELPER_KINDS of its helper) for each field libcst visits.
_TRANSFORMED_FIELDS: Dict[type, Tuple[Tuple[str, int], ...]] = {}


def _fields(node: cst.CSTNode) -> Tuple[str, ...]:
    """The fields libcst's `_visit_and_replace_children` of the node's class visits, in the order
    they stand there."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        _fields_of(type(node))
        fields = _FIELDS[type(node)]
    return fields


def _fields_of(kind: type) -> None:
    """Read the fields that `kind._visit_and_replace_children` visits, and with which of libcst's
    helpers (once per class: some classes visit a field only when it is set,
    `FormattedStringExpression.format_spec`, so watching one instance is not enough)."""
    helpers = visited_fields(kind, _VISIT_HELPERS)
    _FIELDS[kind] = tuple(helpers)
    _TRANSFORMED_FIELDS[kind] = tuple((name, _HELPER_KINDS[helper]) for name, helper in helpers.items())


# Class of a field's value -> 1 a node, 2 a sequence of nodes, 0 anything else (a string, None,
# MaybeSentinel): isinstance against libcst's abstract node class costs more than the walk.
_KINDS: Dict[type, int] = {}


def _kind(value) -> int:
    kind = _KINDS.get(type(value))
    if kind is None:
        kind = _KINDS[type(value)] = 1 if isinstance(value, cst.CSTNode) else 2 if isinstance(value, (tuple, list)) else 0
    return kind


# (`CSTNode in __mro__`, not issubclass: an abstract class's subclass check of every name libcst
# exports costs a twentieth of a second at every start.)
NODE_CLASSES = frozenset(name for name, value in vars(cst).items()
                         if isinstance(value, type) and cst.CSTNode in value.__mro__)


def own_hooks(visitor_type: type) -> Tuple[FrozenSet[str], FrozenSet[str], bool]:
    """(the node classes a visitor class of ours has a visit_ method for, those it has a leave_
    method for, whether it has hooks around fields such as visit_Call_func).  Only methods our
    classes define count: libcst's typed visitor declares a do-nothing hook for every node class."""
    visits: Set[str] = set()
    leaves: Set[str] = set()
    attributes = False
    package = __package__.split(".")[0] + "."
    for klass in visitor_type.__mro__:
        if not klass.__module__.startswith(package):
            continue
        for name in vars(klass):
            if not name.startswith(("visit_", "leave_")):
                continue
            rest = name[len("visit_"):]
            if rest in NODE_CLASSES:
                (visits if name.startswith("visit_") else leaves).add(rest)
            elif rest.split("_", 1)[0] in NODE_CLASSES:
                attributes = True
    return frozenset(visits), frozenset(leaves), attributes


def walk(visitor: cst.CSTVisitor, node: cst.CSTNode) -> None:
    """`node.visit(visitor)` for a visitor that only looks."""
    if own_hooks(type(visitor))[2]:  # (not cached: some visitor classes are made per call)
        node.visit(visitor)
    else:
        _walk(visitor, node, {})


def _walk(visitor: cst.CSTVisitor, node: cst.CSTNode, hooks: Dict[type, tuple]) -> None:
    """The walk proper.  Where the visitor keeps libcst's on_visit or on_leave, which look up a
    `visit_<Class>` / `leave_<Class>` method by name on every node, each class's hooks are
    looked up once per walk (`hooks`), and a node without one costs no call."""
    kind = type(node)
    found = hooks.get(kind)
    if found is None:
        found = hooks[kind] = hooks_for(visitor, kind)
    visit, leave, visit_is_hook = found
    if visit is None or (visit(node) is not False if visit_is_hook else visit(node)):
        fields = _FIELDS.get(kind)
        for name in fields if fields is not None else _fields(node):
            value = getattr(node, name)
            kind_of_value = _KINDS.get(type(value))
            if kind_of_value is None:
                kind_of_value = _kind(value)
            if kind_of_value == 1:
                _walk(visitor, value, hooks)
            elif kind_of_value == 2:
                for item in value:
                    _walk(visitor, item, hooks)
    if leave is not None:
        leave(node)


def hooks_for(visitor: cst.CSTVisitor, node_class: type) -> tuple:
    """(what to call on entering a node of `node_class`, on leaving it, whether the first is a
    `visit_` hook, whose None means "go on", rather than on_visit, whose falsy answer means stop).
    A hook that is libcst's do-nothing declaration counts as none."""
    visitor_class = type(visitor)
    default_visit = visitor_class.on_visit is cst.CSTVisitor.on_visit
    visit = own_hook(visitor, f"visit_{node_class.__name__}") if default_visit else visitor.on_visit
    leave = (own_hook(visitor, f"leave_{node_class.__name__}") if visitor_class.on_leave is cst.CSTVisitor.on_leave
             else visitor.on_leave)
    return visit, leave, default_visit


def own_hook(visitor: cst.CSTVisitor, name: str):
    """The visitor's method `name` (`visit_Call`), or None where it has none or only libcst's
    do-nothing declaration."""
    function = _own_function(type(visitor), name)
    return None if function is None else getattr(visitor, name)


def _own_function(visitor_class: type, name: str):
    function = getattr(visitor_class, name, None)
    return None if function is None or function is getattr(cst.CSTVisitor, name, None) else function


class ClassHooks:
    """For a visitor whose on_visit / on_leave end in libcst's (`super().on_visit(node)`): the
    same `visit_<Class>` / `leave_<Class>` calls, each class's hooks looked up once per visitor
    class instead of by name on every node."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._class_visits: Dict[type, object] = {}  # node class -> the visit_ function or None
        cls._class_leaves: Dict[type, object] = {}

    def class_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        hooks = self._class_visits
        if kind not in hooks:
            hooks[kind] = _own_function(type(self), f"visit_{kind.__name__}")
        hook = hooks[kind]
        return hook is None or hook(self, node) is not False

    def class_leave(self, node: cst.CSTNode) -> None:
        kind = type(node)
        hooks = self._class_leaves
        if kind not in hooks:
            hooks[kind] = _own_function(type(self), f"leave_{kind.__name__}")
        hook = hooks[kind]
        if hook is not None:
            hook(self, node)


def walk_wrapped(visitor: cst.CSTVisitor, wrapper) -> None:
    """`wrapper.visit(visitor)` (metadata resolved for the visitor) for a visitor that only looks."""
    with visitor.resolve(wrapper):
        walk(visitor, wrapper.module)


def _transformed_fields(kind: type) -> Tuple[Tuple[str, int], ...]:
    fields = _TRANSFORMED_FIELDS.get(kind)
    if fields is None:
        _fields_of(kind)
        fields = _TRANSFORMED_FIELDS[kind]
    return fields


def transform(transformer: cst.CSTTransformer, node: cst.CSTNode):
    """`node.visit(transformer)` for a transformer without attribute hooks (`visit_Call_func`),
    except that a node none of whose children changed is handed to `on_leave` as it is, not as
    an equal copy: libcst rebuilds (and validates) every node of the tree, which cost more than
    the rules' own work.  What the transformer returns, and the tree it builds, are the same."""
    if transformer.on_visit(node):
        changes = None
        for name, helper in _transformed_fields(type(node)):
            value = getattr(node, name)
            kind = _KINDS.get(type(value))
            if kind is None:
                kind = _kind(value)
            if kind == 2:  # (a sequence field may also hold None: FormattedStringExpression.format_spec)
                items = None
                for index, child in enumerate(value):
                    result = transform(transformer, child)
                    if result is child and items is None:
                        continue
                    if items is None:
                        items = list(value[:index])
                    _add_child(items, child, result, helper)
                if items is not None:
                    changes = changes or {}
                    changes[name] = tuple(items)
            elif kind == 1:
                result = transform(transformer, value)
                if result is not value:
                    changes = changes or {}
                    changes[name] = _single_child(value, result, helper)
        updated = node if changes is None else node.with_changes(**changes)
    else:
        updated = node
    result = transformer.on_leave(node, updated)
    if result is not updated and not isinstance(result, (cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel)):
        raise cst.CSTValidationError("Expected a node of type CSTNode or a RemovalSentinel, "
                                     f"but got a return value of {type(result).__name__}")
    return result


def _single_child(child: cst.CSTNode, result, helper: int):
    """What libcst's visit_required / visit_optional / visit_sentinel make of a child's result."""
    if isinstance(result, cst.FlattenSentinel) or (helper == _REQUIRED and isinstance(result, cst.RemovalSentinel)):
        raise TypeError(f"We got a {type(result).__name__} while visiting a {type(child).__name__}. This node's "
                        "parent does not allow it to be removed or replaced with a sequence.")
    if isinstance(result, cst.RemovalSentinel):
        return None if helper == _OPTIONAL else cst.MaybeSentinel.DEFAULT
    return result


def _add_child(items: list, child: cst.CSTNode, result, helper: int) -> None:
    """What libcst's visit_sequence / visit_body_sequence keep of a child's result: nothing for a
    removal, the nodes of a FlattenSentinel, and (in a body) no statement that became empty
    where the original was not."""
    if isinstance(result, cst.RemovalSentinel):
        return
    for new in (result if isinstance(result, cst.FlattenSentinel) else (result,)):
        if helper == _BODY and not is_removable(child) and is_removable(new):
            continue
        items.append(new)


class ParentNodeProvider(BaseMetadataProvider[cst.CSTNode]):
    """Each node's parent, as libcst's ParentNodeProvider gives it, found while the module is
    printed for its positions (`positions`): libcst's own asks every node for its `children`,
    which rebuilds the node a second time, and so costs twice a libcst visit of the file.  The
    rules and the analysis resolve this one.  Not a batchable provider: libcst runs those in a
    visit of its own, which rebuilds every node."""

    def _gen_impl(self, module: cst.Module) -> None:
        for node, parent in positions.printing(module).parents.items():
            self.set_metadata(node, parent)


class MetadataWrapper(libcst_metadata.MetadataWrapper):
    """libcst's MetadataWrapper, except that metadata which no batchable provider computes is
    computed without libcst's visit of the whole tree for the (empty) batch of batchable
    providers: that visit rebuilds every node and cost as much as all our providers together.
    The rules and the analysis use only such providers (positions, our parents)."""

    def resolve_many(self, providers):
        metadata = computed_metadata(self)
        pending = [provider for provider in providers if metadata is not None and provider not in metadata]
        if metadata is None or not all(_computed_alone(provider) for provider in pending):
            return super().resolve_many(providers)
        for provider in pending:
            if provider in metadata:
                continue  # (found by the printing of the one before)
            if provider in _PRINTED:  # libcst's positions and our parents, found faster together
                self.know_printing(positions.printing(self.module))
            else:
                metadata[provider] = generate(provider, self)
        return {provider: metadata[provider] for provider in providers}

    def know_printing(self, printing: "positions.Printing") -> None:
        """The module's positions and parents, found by a printing of it (the caller's, maybe)."""
        metadata = computed_metadata(self)
        metadata[libcst_metadata.PositionProvider] = printing.positions
        metadata[ParentNodeProvider] = printing.parents


_PRINTED = (libcst_metadata.PositionProvider, ParentNodeProvider)


def _computed_alone(provider) -> bool:
    """Whether a provider needs nothing but the module: not batchable, no dependencies, no cache."""
    return (not issubclass(provider, libcst_metadata.BatchableMetadataProvider)
            and not provider.METADATA_DEPENDENCIES and not provider.gen_cache)
