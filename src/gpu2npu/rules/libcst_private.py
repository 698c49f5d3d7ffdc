"""Every use of libcst's private or undocumented API, in one place (libcst is pinned to the tested
range in pyproject.toml): a new libcst release is checked here, and the walks and positions that
need these parts (walk.py, positions.py) say what they do with them.

- how a node class visits its children: the source of its `_visit_and_replace_children`, whose
  calls of libcst's `visit_*` helpers name the fields in the order they are visited;
- whether a node is one libcst drops from a body when its children are gone (`_is_removable`);
- printing a module through a codegen state of our own (`_codegen`), and the state libcst's
  PositionProvider prints with (`PositionProvidingCodegenState`, `NEWLINE_RE` of its module);
- a MetadataWrapper's computed metadata (`_metadata`) and one provider's computation (`_gen`).
"""
from __future__ import annotations

import inspect
import textwrap

import libcst as cst
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

__all__ = ["NEWLINE_RE", "PositionProvidingCodegenState", "computed_metadata", "generate", "is_removable",
           "print_module", "visiting_source"]


def visiting_source(kind: type) -> str:
    """The source of `kind._visit_and_replace_children`, dedented."""
    return textwrap.dedent(inspect.getsource(kind._visit_and_replace_children))


def print_module(module: cst.Module, state: PositionProvidingCodegenState) -> None:
    """Print `module` through `state` (its hooks see every node as it is printed)."""
    module._codegen(state)


def is_removable(node: cst.CSTNode) -> bool:
    return node._is_removable()


def computed_metadata(wrapper: cst.MetadataWrapper):
    """The wrapper's mapping of provider -> computed metadata (None where libcst keeps none)."""
    return getattr(wrapper, "_metadata", None)


def generate(provider: type, wrapper: cst.MetadataWrapper):
    """What `provider` computes for the wrapper's module, computed alone."""
    return provider()._gen(wrapper)
