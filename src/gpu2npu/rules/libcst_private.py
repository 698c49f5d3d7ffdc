"""Every use of libcst's private or undocumented API, in one place (libcst is pinned to the tested
range in pyproject.toml): a new libcst release is checked here, and the walks and positions that
need these parts (walk.py, positions.py) say what they do with them.

- how a node class visits its children: its `_visit_and_replace_children`, whose calls of
  libcst's `visit_*` helpers name the fields in the order they are visited;
- whether a node is one libcst drops from a body when its children are gone (`_is_removable`);
- printing a module through a codegen state of our own (`_codegen`), and the state libcst's
  PositionProvider prints with (`PositionProvidingCodegenState`, `NEWLINE_RE` of its module);
- a MetadataWrapper's computed metadata (`_metadata`) and one provider's computation (`_gen`).
"""
from __future__ import annotations

import dis
from typing import Collection, Dict

import libcst as cst
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

__all__ = ["NEWLINE_RE", "PositionProvidingCodegenState", "computed_metadata", "generate", "is_removable",
           "print_module", "visited_fields"]


def visited_fields(kind: type, helpers: Collection[str]) -> Dict[str, str]:
    """field -> the helper (one of `helpers`, libcst's `visit_required`, `visit_sequence`, ...) that
    `kind._visit_and_replace_children` visits it with, in the order the method visits them.
    Read from the method's bytecode, where each helper's name is loaded just before the field's
    name (`visit_required(self, "func", self.func, visitor)`): reading its source instead costs a
    tenth of a small project's migration.  A field visited with one helper or another
    (`ImportFrom.names`: one node or a sequence) keeps its place and the last helper, the
    sequence one, which also takes the one node."""
    fields: Dict[str, str] = {}
    helper = None
    for instruction in dis.get_instructions(kind._visit_and_replace_children):
        if instruction.opname.startswith("LOAD_GLOBAL") and instruction.argval in helpers:
            helper = instruction.argval
        elif helper is not None and instruction.opname == "LOAD_CONST" and isinstance(instruction.argval, str):
            fields[instruction.argval] = helper
            helper = None
    return fields


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
