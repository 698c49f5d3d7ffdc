"""rules.walk: the read-only walk calls a visitor's on_visit / on_leave for the same nodes, in
the same order, with the same skips, as libcst's own `visit`, on every Python file of the
fixtures and on code using every kind of syntax the grammar has."""
import libcst as cst
import pytest

from helpers import FIXTURES
from gpu2npu.rules import npu_aware
from gpu2npu.rules.walk import ClassHooks, walk

SYNTAX = '''
from __future__ import annotations
plain = f"{value}"  # an f-string field without a format spec before one with (libcst visits
spec = f"{value:>{width}}"  # format_spec only when it is set)
from module import *
import os.path as osp, sys
from .pkg import (a as b, c)
@decorator(arg=1)
async def f(x: int = 1, /, *args, y: "str" = None, **kwargs) -> dict[str, int]:
    global g
    async with open(x) as h, other() as (i, j):
        async for k in h:
            yield k; await k
    try:
        pass
    except* (ValueError, TypeError) as error:
        raise RuntimeError("x") from error
    else:
        del x[1:2, ::3]
    finally:
        return {**kwargs, 'a': [i async for i in y if i], "b": {z for z in range(3)}}
class C(Base, metaclass=Meta):
    """doc"""
    attr: int = 0
    def m(self):
        nonlocal_value = lambda p, *, q=2: p if q else -p
        while True:
            break
        else:
            continue
        match self.attr:
            case [1, 2, *rest] if rest: pass
            case {"k": v, **others}: pass
            case Point(x=0, y=0) | None: pass
            case _: pass
        assert (n := len(f"{self!r:>{10}} {nonlocal_value}")) > 0, "message"
        x = y = not a or b and c is not d in e; x += 1; x @= m; print(*a, sep='')
        return ~x ** -2 // 3 % 4 << 5 >> 6 & 7 | 8 ^ 9, (1,), [], ..., 1j, 0x1F, b"bytes" b"more"
type Alias[T] = list[T]
def g[T: int, *Ts, **P](x: T) -> T: ...
'''


class _Trace(cst.CSTVisitor):
    def __init__(self, skip=()):
        super().__init__()
        self.events = []
        self.skip = skip

    def on_visit(self, node):
        self.events.append(("visit", type(node).__name__, id(node)))
        return type(node).__name__ not in self.skip

    def on_leave(self, original_node):
        self.events.append(("leave", type(original_node).__name__, id(original_node)))


def _sources():
    yield "syntax", SYNTAX
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue  # the fixtures' unparseable files
        yield str(path.relative_to(FIXTURES)), text


@pytest.mark.parametrize("skip", [(), ("FunctionDef", "Call", "Subscript")])
def test_the_walk_visits_as_libcst_does(skip):
    from gpu2npu.rules import walk as walk_module

    walk_module._FIELDS.clear()  # learnt afresh from these files, in this order
    compared = 0
    for name, text in _sources():
        module = cst.parse_module(text)
        ours, libcsts = _Trace(skip), _Trace(skip)
        walk(ours, module)
        module.visit(libcsts)
        assert ours.events == libcsts.events, name
        compared += 1
    assert compared > 20


class _Hooks(cst.CSTVisitor):
    """libcst's own on_visit / on_leave, which call visit_<Class> / leave_<Class> hooks: a hook
    returning False stops the walk below the node, one returning None does not."""

    def __init__(self):
        super().__init__()
        self.events = []

    def visit_FunctionDef(self, node):
        self.events.append(("visit", "FunctionDef", id(node)))
        return node.name.value != "m"  # not below `def m`

    def visit_Call(self, node):
        self.events.append(("visit", "Call", id(node)))  # None: go on below

    def visit_Name(self, node):
        self.events.append(("visit", "Name", id(node)))
        return False

    def leave_Name(self, node):
        self.events.append(("leave", "Name", id(node)))

    def leave_ClassDef(self, node):
        self.events.append(("leave", "ClassDef", id(node)))


class _OwnVisit(_Hooks):
    """An on_visit of its own, libcst's on_leave with its leave_<Class> hooks."""

    def on_visit(self, node):
        self.events.append(("on_visit", type(node).__name__, id(node)))
        return None if isinstance(node, cst.Subscript) else True  # (None stops here, as False does)


@pytest.mark.parametrize("visitor_class", [_Hooks, _OwnVisit])
def test_the_walk_calls_libcsts_hooks_as_libcst_does(visitor_class):
    compared = 0
    for name, text in _sources():
        module = cst.parse_module(text)
        ours, libcsts = visitor_class(), visitor_class()
        walk(ours, module)
        module.visit(libcsts)
        assert ours.events == libcsts.events, name
        compared += bool(ours.events)
    assert compared > 20


def test_the_parent_provider_gives_libcsts_parents():
    from libcst.metadata import MetadataWrapper
    from libcst.metadata import ParentNodeProvider as LibcstParents

    from gpu2npu.rules.walk import ParentNodeProvider

    nodes = 0
    for name, text in _sources():
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        ours, theirs = wrapper.resolve(ParentNodeProvider), wrapper.resolve(LibcstParents)
        assert len(ours) == len(theirs), name
        assert all(ours[node] is parent for node, parent in theirs.items()), name
        nodes += len(theirs)
    assert nodes > 10000


class _Editing(cst.CSTTransformer):
    """Edits of every kind a rule may make: a replaced node, a removed statement, element and
    optional part, a statement turned into two, a removal that empties a block; each call and
    the code of the node it was handed are traced."""

    def __init__(self):
        super().__init__()
        self.events = []
        self.empty = cst.Module(body=())

    def on_visit(self, node):
        self.events.append(("visit", type(node).__name__, id(node)))
        return True

    def on_leave(self, original_node, updated_node):
        # (the code of what stands alone: an annotation, say, is printed only inside its parent)
        alone = isinstance(updated_node, (cst.BaseExpression, cst.BaseStatement, cst.BaseSmallStatement))
        self.events.append(("leave", type(original_node).__name__, id(original_node), type(updated_node).__name__,
                            self.empty.code_for_node(updated_node) if alone else None,
                            # (an emptied line prints as `pass`: what a block holds shows it is gone)
                            len(updated_node.body) if isinstance(getattr(updated_node, "body", None), tuple) else None))
        return super().on_leave(original_node, updated_node)

    def leave_Name(self, original_node, updated_node):
        return updated_node.with_changes(value="renamed") if updated_node.value == "x" else updated_node

    def leave_Pass(self, original_node, updated_node):
        return cst.RemovalSentinel.REMOVE  # the whole `pass` line goes; a block left empty keeps it

    def leave_AsName(self, original_node, updated_node):
        return cst.RemovalSentinel.REMOVE  # an optional part: `import a as b` -> `import a`

    def leave_Arg(self, original_node, updated_node):
        keyword = updated_node.keyword
        return cst.RemovalSentinel.REMOVE if keyword is not None and keyword.value == "sep" else updated_node

    def leave_Break(self, original_node, updated_node):
        return cst.FlattenSentinel([cst.Continue(), updated_node])

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if any(isinstance(statement, cst.Global) for statement in original_node.body):
            return cst.FlattenSentinel([updated_node, updated_node.deep_clone()])
        return updated_node


def test_the_transform_builds_what_libcsts_visit_builds():
    from gpu2npu.rules import walk as walk_module
    from gpu2npu.rules.walk import transform

    walk_module._FIELDS.clear()
    walk_module._TRANSFORMED_FIELDS.clear()
    compared = changed = 0
    for name, text in _sources():
        module = cst.parse_module(text)
        ours, libcsts = _Editing(), _Editing()
        ours_result, libcsts_result = transform(ours, module), module.visit(libcsts)
        assert ours_result.code == libcsts_result.code, name
        assert ours.events == libcsts.events, name
        compared += 1
        changed += ours_result.code != text
    assert compared > 20 and changed > 20
    assert "renamed" in transform(_Editing(), cst.parse_module(SYNTAX)).code


def test_the_transform_hands_on_unchanged_nodes_as_they_are():
    module = cst.parse_module("a = f(b, c=1)\nx = 2\n")
    seen = {}

    class Recording(cst.CSTTransformer):
        def on_leave(self, original_node, updated_node):
            seen[id(original_node)] = updated_node is original_node
            return super().on_leave(original_node, updated_node)

        def leave_Name(self, original_node, updated_node):
            return updated_node.with_changes(value="y") if updated_node.value == "x" else updated_node

    from gpu2npu.rules.walk import transform

    result = transform(Recording(), module)
    assert result.code == "a = f(b, c=1)\ny = 2\n"
    first, second = module.body
    assert seen[id(first)] is True  # nothing below it changed: the same node, not a copy
    assert seen[id(second)] is False and seen[id(module)] is False
    assert result.body[0] is first


class _ThroughClassHooks(ClassHooks, _Hooks):
    """_OwnVisit's own on_visit and on_leave, ending in the hooks found once per class."""

    def on_visit(self, node):
        self.events.append(("on_visit", type(node).__name__, id(node)))
        return not isinstance(node, cst.Subscript) and self.class_visit(node)

    def on_leave(self, original_node):
        self.class_leave(original_node)


class _ThroughLibcst(_Hooks):
    def on_visit(self, node):
        self.events.append(("on_visit", type(node).__name__, id(node)))
        return not isinstance(node, cst.Subscript) and super().on_visit(node)

    def on_leave(self, original_node):
        super().on_leave(original_node)


def test_hooks_found_once_per_class_are_called_as_libcst_calls_them():
    compared = 0
    for name, text in _sources():
        module = cst.parse_module(text)
        ours, libcsts = _ThroughClassHooks(), _ThroughLibcst()
        walk(ours, module)
        module.visit(libcsts)
        assert ours.events == libcsts.events, name
        compared += bool(ours.events)
    assert compared > 20


def test_visitors_walked_together_see_what_each_sees_alone():
    for name, text in _sources():
        module = cst.parse_module(text)
        alone = [_Hooks(), _OwnVisit()]
        for visitor in alone:
            walk(visitor, module)
        together = [_Hooks(), _OwnVisit()]
        walk(npu_aware._together(together), module)
        assert [v.events for v in together] == [v.events for v in alone], name


def test_the_classes_the_npu_aware_walk_looks_up_have_no_subclasses():
    # (it tells them by their class alone: a subclass would go unseen)
    for kind in npu_aware._LOOKED_AT:
        assert kind.__subclasses__() == [], kind
