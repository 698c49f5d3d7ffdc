"""Run many rules in one traversal of the tree.

Parsing and resolving names (scopes, qualified names) cost far more than the rules themselves,
so the rules of a file share one tree walk and one set of metadata, as Fixit's rules do.  Each
rule still behaves as if it ran alone on the original tree: it is called in the documented
order, sees the original nodes (for names and positions) and the node as updated by the rules
before it, and when it declines to look into a subtree (returns False from a visit), only it
stops looking there.  Positions are those of the original file, so no line mapping is needed.

Each edit a rule records while leaving a node is labelled with what it wrote there (the part of
the node's code that its return value changed, widened to whole words): the tests check that
this text is in the output at the edit's lines, which catches an outer rewrite that drops an
inner one that the change list still claims.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple, Type, Union

import libcst as cst
from libcst.metadata import MetadataWrapper

from ..records.change import Operation
from .base import Edit, FileContext, Rule, RuleOutcome
from .walk import own_hooks, transform


class RuleBatch(cst.CSTTransformer):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__()
        self.rules = list(rules)
        self._edit_lists = [rule.edits for rule in self.rules]  # (rules edit them in place)
        # For each rule, the node below which it does not look (it asked not to), if any.
        self._skipping: List[Optional[cst.CSTNode]] = [None] * len(self.rules)
        self._skips = 0  # how many rules are not looking now
        # For each node being visited, how many edits each rule had recorded when it was entered.
        self._marks: List[Tuple[int, ...]] = []
        # Node class -> the rules to call on entering / leaving such a node: most rules handle a
        # few node classes, and calling every rule's hooks on every node cost half the run.
        self._visit_table: Dict[type, List[int]] = {}
        self._leave_table: Dict[type, List[int]] = {}
        self._hooks = [_hooks(type(rule)) for rule in self.rules]
        self._attribute_rules = [index for index, hooks in enumerate(self._hooks) if hooks[2]]
        # (libcst's own visit calls attribute hooks; `walk.transform` does not)
        self.has_attribute_hooks = bool(self._attribute_rules)
        # the rules share one context: the nodes that rules skip whole (NPU-aware code, dead device
        # tests, nodes another rule claimed) must reach every rule, whatever it handles
        self._context = self.rules[0].context if self.rules else None

    def _indices(self, table: Dict[type, List[int]], kind: type, position: int) -> List[int]:
        indices = table.get(kind)
        if indices is None:
            name = kind.__name__
            indices = table[kind] = [index for index, hooks in enumerate(self._hooks)
                                     if hooks[position] is None or name in hooks[position]]
        return indices

    def on_visit(self, node: cst.CSTNode) -> bool:
        context = self._context
        if context is not None and (context.might_be_guarded(node) or id(node) in context.claimed):
            indices = range(len(self.rules))
        else:
            indices = self._indices(self._visit_table, type(node), 0)
        skipping = self._skipping
        for index in indices:
            if skipping[index] is None and not self.rules[index].on_visit(node):
                skipping[index] = node
                self._skips += 1
        self._marks.append(tuple(map(len, self._edit_lists)))
        return True

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        marks = self._marks.pop()
        inner = tuple(map(len, self._edit_lists))  # edits made below this node
        result = updated_node
        handlers = self._indices(self._leave_table, type(original_node), 1)
        # (while every rule looks, only those with something to do on leaving such a node)
        for index in range(len(self.rules)) if self._skips else handlers:
            rule = self.rules[index]
            skip_root = self._skipping[index]
            if skip_root is not None:
                if skip_root is not original_node:
                    continue
                self._skipping[index] = None  # its on_leave ends the skip (Rule.on_leave)
                self._skips -= 1
            elif index not in handlers:
                continue  # it has nothing to do on leaving such a node
            if not isinstance(result, cst.CSTNode) or type(result) is not type(original_node):
                continue  # an earlier rule replaced or removed the node: the rest leave it be
            recorded = len(rule.edits)
            before = result
            result = rule.on_leave(original_node, result)
            if len(rule.edits) > recorded:
                new_edits = rule.edits[recorded:]
                # Several edits at different places in one leave (a rule that rewrites a block):
                # what each wrote cannot be told apart.
                if len({(edit.start_line, edit.end_line) for edit in new_edits}) == 1:
                    wrote = written_fragment(before, result)
                    rule.edits[recorded:] = [dataclasses.replace(edit, wrote=wrote) for edit in new_edits]
                for edit in rule.edits[recorded:]:
                    if edit.operation == Operation.DELETE:
                        self._void_edits_inside(edit, rule)
        # (A module's own edits insert statements: they drop nothing, and its code is the file's.)
        if (result is not updated_node and not isinstance(original_node, cst.Module)
                and any(len(rule.edits) > count for rule, count in zip(self.rules, inner))):
            self._void_overwritten(marks, inner, result)
        return result

    def _void_overwritten(self, marks: List[int], inner: List[int], result) -> None:
        """An edit of this node that rebuilt it without what an edit below it wrote (`-s` makes
        `f"cuda:{torch.cuda.current_device()}"` plain "npu"): the inner edit is gone from the
        output, so its row goes too."""
        code = "".join(_code(result).split())
        for rule, first, last in zip(self.rules, marks, inner):
            if last > first:
                kept = [edit for edit in rule.edits[first:last] if "".join(edit.wrote.split()) in code]
                rule.edits[first:last] = kept

    def _void_edits_inside(self, deletion: Edit, deleting_rule: Rule) -> None:
        """A statement one rule deletes takes the edits other rules made inside it along: the
        change list must not claim a rename in code that is no longer there."""
        for rule in self.rules:
            if rule is deleting_rule:
                continue
            rule.edits[:] = [edit for edit in rule.edits
                             if edit.operation != Operation.MODIFY
                             or not deletion.start_line <= edit.start_line <= edit.end_line <= deletion.end_line]

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        for index in self._attribute_rules:
            if self._skipping[index] is None:
                self.rules[index].on_visit_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        for index in self._attribute_rules:
            if self._skipping[index] is None:
                self.rules[index].on_leave_attribute(original_node, attribute)


@functools.lru_cache(maxsize=None)
def _hooks(rule_type: type) -> Tuple[Optional[FrozenSet[str]], Optional[FrozenSet[str]], bool]:
    """walk.own_hooks of a rule class, with None for visits / leaves where it overrides
    on_visit / on_leave and so must see every node."""
    visits, leaves, attributes = own_hooks(rule_type)
    every_visit = rule_type.on_visit is not Rule.on_visit
    every_leave = rule_type.on_leave is not Rule.on_leave
    return (None if every_visit else visits, None if every_leave else leaves, attributes)


_WORD = re.compile(r"\w")


def _code(node: Union[cst.CSTNode, cst.FlattenSentinel, cst.RemovalSentinel]) -> str:
    if isinstance(node, cst.RemovalSentinel):
        return ""
    if isinstance(node, cst.FlattenSentinel):
        return "".join(_code(item) for item in node.nodes)
    if isinstance(node, cst.Module):
        return node.code
    return cst.Module(body=()).code_for_node(node)


def written_fragment(before: cst.CSTNode, after) -> str:
    """The text `after` has where it differs from `before`: what is left of its code once the
    prefix and suffix both share are taken off, widened to whole words (so that `cuda` -> `npu`
    in `"cuda:0"` is `npu`, and `torch.cuda.x` -> `torch_npu.npu.x` is `torch_npu.npu`)."""
    if isinstance(before, cst.Module) and isinstance(after, cst.Module):
        # Statements inserted or replaced in a file: only those are printed, not the whole file.
        old_body, new_body = list(before.body), list(after.body)
        first = 0
        while first < min(len(old_body), len(new_body)) and old_body[first] is new_body[first]:
            first += 1
        last = 0
        while (last < min(len(old_body), len(new_body)) - first
               and old_body[len(old_body) - 1 - last] is new_body[len(new_body) - 1 - last]):
            last += 1
        return "".join(_code(statement) for statement in new_body[first:len(new_body) - last]).strip()
    old, new = _code(before), _code(after)
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    start, end = prefix, len(new) - suffix
    if start >= end:
        return ""  # only removed text
    if _WORD.match(new[start]):
        while start > 0 and _WORD.match(new[start - 1]):
            start -= 1
    if _WORD.match(new[end - 1]):
        while end < len(new) and _WORD.match(new[end]):
            end += 1
    return new[start:end]


def run_batch(rule_types: Sequence[Type[Rule]], wrapper: MetadataWrapper, context: FileContext) -> RuleOutcome:
    """Apply `rule_types`, in order, in one traversal of the wrapped module."""
    rules = [rule_type(context) for rule_type in rule_types]
    providers = set()
    for rule in rules:
        providers |= set(rule.get_inherited_dependencies())
    metadata = wrapper.resolve_many(providers)
    for rule in rules:
        rule.metadata = metadata
    batch = RuleBatch(rules)
    new_module = wrapper.module.visit(batch) if batch.has_attribute_hooks else transform(batch, wrapper.module)
    outcome = RuleOutcome(new_module)
    for rule in rules:
        outcome.edits.extend((edit.code or rule.code, edit) for edit in rule.edits)
        outcome.findings.extend(rule.findings)
    return outcome
