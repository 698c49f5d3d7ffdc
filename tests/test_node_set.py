"""The statements rules insert are told apart by identity while the file is migrated, also after
a rule has taken one out again: a statement made later is never mistaken for one of them (a
freed statement's id is reused by the next one of its size, and an id-only record would then
move the rows that inserted statements place)."""

import libcst as cst

from gpu2npu.rules.node_set import NodeSet
from gpu2npu.rules.placement import pair_with_originals


def test_a_statement_made_after_an_inserted_one_was_freed_is_not_inserted():
    inserted = NodeSet()
    inserted.add(cst.SimpleStatementLine(body=[cst.Pass()]))  # inserted, then dropped by another rule
    later = [cst.SimpleStatementLine(body=[cst.Pass()]) for _ in range(50)]
    assert not any(statement in inserted for statement in later)


def test_statements_are_paired_with_the_originals_they_came_from():
    original = list(cst.parse_module("from __future__ import annotations\nimport os\n").body)
    inserted, removed = NodeSet(), NodeSet()
    new = cst.parse_statement("import torch_npu\n")
    inserted.add(new)
    updated = [original[0], new, original[1].with_changes()]
    pairs = pair_with_originals(updated, original, inserted, removed)
    assert [original for _, original in pairs] == [original[0], None, original[1]]
    removed.add(original[0])
    assert [original for _, original in pair_with_originals(updated[1:], original, inserted, removed)] == [None, original[1]]
