"""rules.walk: the read-only walk calls a visitor's on_visit / on_leave for the same nodes, in
the same order, with the same skips, as libcst's own `visit`, on every Python file of the
fixtures and on code using every kind of syntax the grammar has."""
import libcst as cst
import pytest

from helpers import FIXTURES
from gpu2npu.rules.walk import walk

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
