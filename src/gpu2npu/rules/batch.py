"""Run many rules in one traversal of the tree.

Parsing and resolving names (scopes, qualified names) cost far more than the rules themselves,
so the rules of a file share one tree walk and one set of metadata, as Fixit's rules do.  Each
rule still behaves as if it ran alone on the original tree: it is called in the documented
order, sees the original nodes (for names and positions) and the node as updated by the rules
before it, and when it declines to look into a subtree (returns False from a visit), only it
stops looking there.  Positions are those of the original file, so no line mapping is needed.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Type

import libcst as cst
from libcst.metadata import MetadataWrapper

from .base import FileContext, Rule, RuleOutcome


class RuleBatch(cst.CSTTransformer):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__()
        self.rules = list(rules)
        # For each rule, the node below which it does not look (it asked not to), if any.
        self._skipping: List[Optional[cst.CSTNode]] = [None] * len(self.rules)

    def on_visit(self, node: cst.CSTNode) -> bool:
        for index, rule in enumerate(self.rules):
            if self._skipping[index] is None and not rule.on_visit(node):
                self._skipping[index] = node
        return True

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        result = updated_node
        for index, rule in enumerate(self.rules):
            skip_root = self._skipping[index]
            if skip_root is not None and skip_root is not original_node:
                continue
            self._skipping[index] = None
            if not isinstance(result, cst.CSTNode) or type(result) is not type(original_node):
                continue  # an earlier rule replaced or removed the node: the rest leave it be
            result = rule.on_leave(original_node, result)
        return result

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        for index, rule in enumerate(self.rules):
            if self._skipping[index] is None:
                rule.on_visit_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        for index, rule in enumerate(self.rules):
            if self._skipping[index] is None:
                rule.on_leave_attribute(original_node, attribute)


def run_batch(rule_types: Sequence[Type[Rule]], wrapper: MetadataWrapper, context: FileContext) -> RuleOutcome:
    """Apply `rule_types`, in order, in one traversal of the wrapped module."""
    rules = [rule_type(context) for rule_type in rule_types]
    providers = set()
    for rule in rules:
        providers |= set(rule.get_inherited_dependencies())
    metadata = wrapper.resolve_many(providers)
    for rule in rules:
        rule.metadata = metadata
    new_module = wrapper.module.visit(RuleBatch(rules))
    outcome = RuleOutcome(new_module)
    for rule in rules:
        outcome.edits.extend((rule.code, edit) for edit in rule.edits)
        outcome.findings.extend(rule.findings)
    return outcome
