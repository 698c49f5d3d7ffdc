"""rules.positions: every node's position is the one libcst's PositionProvider gives and its
parent the one libcst's ParentNodeProvider gives, on every Python file of the fixtures, on code
using every kind of syntax, on line ends of each kind and on trees that rules rebuilt; the code
printed on the way is the module's code."""
import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper as LibcstWrapper
from libcst.metadata import ParentNodeProvider as LibcstParents
from libcst.metadata import PositionProvider

from gpu2npu.rules import positions
from gpu2npu.rules.walk import MetadataWrapper, ParentNodeProvider
from test_walk import SYNTAX, _sources

LINE_ENDS = "import torch\r\nx = (1,\r\n     2)\rif x:\r\n\tdef f(a, \\\r\n      b): return a; pass\n" \
            "s = '''one\r\ntwo\rthree'''\n"


def _libcsts(module: cst.Module):
    return LibcstWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _assert_same(module: cst.Module, name: str) -> None:
    expected = _libcsts(module)
    printed = positions.printing(module)
    found = printed.positions
    assert printed.code == module.code, name
    assert len(found) == len(expected), name
    assert set(found) == set(expected), name
    for node, span in expected.items():
        assert found[node] == span, (name, type(node).__name__, span, found[node])
    parents = LibcstWrapper(module, unsafe_skip_copy=True).resolve(LibcstParents)
    assert set(printed.parents) == set(parents), name
    assert all(printed.parents[node] is parent for node, parent in parents.items()), name


def test_positions_are_libcsts_on_every_fixture_and_on_all_syntax():
    compared = 0
    for name, text in _sources():
        _assert_same(cst.parse_module(text), name)
        compared += 1
    assert compared > 20


def test_positions_count_every_kind_of_line_end():
    module = cst.parse_module(LINE_ENDS)
    _assert_same(module, "line ends")
    last = module.body[-1]
    span = positions.printing(module).positions[last]
    assert (span.start.line, span.end.line) == (7, 9)  # \r\n, \r and \n each end a line


class _Renaming(cst.CSTTransformer):
    """Rebuilds parts of the tree as rules do: a longer name, a statement split over lines."""

    def leave_Name(self, original_node, updated_node):
        return updated_node.with_changes(value="npu_" + updated_node.value) if updated_node.value == "x" else updated_node

    def leave_Return(self, original_node, updated_node):
        return updated_node.with_changes(whitespace_after_return=cst.SimpleWhitespace("  "))


def test_positions_of_a_rebuilt_tree_are_libcsts():
    module = cst.parse_module(SYNTAX + LINE_ENDS).visit(_Renaming())
    _assert_same(module, "rebuilt")


def test_the_walks_wrapper_gives_these_positions_by_libcsts_key(monkeypatch):
    printings = []
    real = positions.printing
    monkeypatch.setattr(positions, "printing", lambda module: printings.append(module) or real(module))
    module = cst.parse_module(SYNTAX)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    found = wrapper.resolve(PositionProvider)
    assert isinstance(found, positions.Positions)
    assert wrapper.resolve(ParentNodeProvider)[module.body[0]] is module
    assert printings == [module]  # positions and parents: one printing
    expected = _libcsts(module)
    call = next(node for node in expected if isinstance(node, cst.Call))
    assert found[call] == expected[call]
    assert found.get(cst.Name("elsewhere"), "none") == "none"
    with pytest.raises(KeyError):
        found[cst.Name("elsewhere")]


def test_a_printing_known_beforehand_is_not_made_again():
    module = cst.parse_module("x = 1\n")
    known = positions.printing(module)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    wrapper.know_printing(known)
    assert wrapper.resolve(PositionProvider) is known.positions
    assert wrapper.resolve(ParentNodeProvider) is known.parents
