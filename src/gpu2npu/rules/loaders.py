"""What the DataLoader rules share: which calls are DataLoaders, what each one is for (training
or evaluation, told by the names around it), and editing keyword arguments in place."""
from __future__ import annotations

import re
from typing import List, Optional

import libcst as cst

from .base import code_of

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_EVAL_WORDS = re.compile(r"(val|valid|validation|test|eval|evaluation|dev|infer|inference|predict)", re.I)
_TRAIN_WORDS = re.compile(r"train", re.I)
_STEP_WORDS = re.compile(r"(^|_)step($|_)", re.I)


class LoaderRoles:
    """Mixin for rules: tracks the assignment target, dict key and function a call stands in, so
    that `role(call)` can tell a training loader from an evaluation one."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._targets: List[str] = []
        self._functions: List[str] = []
        self._loops: List[int] = [0]  # loops around the code, per function (a loop outside a def is not its)

    # The names around a loader say what it is for.
    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets.append(" ".join(code_of(t.target) for t in node.targets))

    def leave_Assign(self, original_node, updated_node):
        self._targets.pop()
        return updated_node

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets.append(code_of(node.target))

    def leave_AnnAssign(self, original_node, updated_node):
        self._targets.pop()
        return updated_node

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._targets.append(code_of(node.key))

    def leave_DictElement(self, original_node, updated_node):
        self._targets.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node.name.value)
        self._loops.append(0)

    def leave_FunctionDef(self, original_node, updated_node):
        self._functions.pop()
        self._loops.pop()
        return updated_node

    def visit_For(self, node: cst.For) -> None:
        self._loops[-1] += 1

    def leave_For(self, original_node, updated_node):
        self._loops[-1] -= 1
        return updated_node

    def visit_While(self, node: cst.While) -> None:
        self._loops[-1] += 1

    def leave_While(self, original_node, updated_node):
        self._loops[-1] -= 1
        return updated_node

    def built_per_step(self) -> bool:
        """Whether the loader is built anew for each step: in a loop, or in a function named for one
        step (`step`, `training_step`): over that step's samples, whose remainder drop_last would
        drop (all of a step shorter than a batch)."""
        function = self._functions[-1] if self._functions else ""
        return self._loops[-1] > 0 or _STEP_WORDS.search(function) is not None

    def role(self, call: cst.Call) -> Optional[str]:
        """"train", "eval" or None (cannot tell)."""
        target = self._targets[-1] if self._targets else ""
        for words in (target, self._functions[-1] if self._functions else ""):
            if _EVAL_WORDS.search(words) and not _TRAIN_WORDS.search(words):
                return "eval"
            if _TRAIN_WORDS.search(words):
                return "train"
        dataset = call.args[0].value if call.args and call.args[0].keyword is None else keyword_value(call, "dataset")
        dataset_text = code_of(dataset)
        if _TRAIN_WORDS.search(dataset_text):
            return "train"
        if _EVAL_WORDS.search(dataset_text):
            return "eval"
        # (a loader that shuffles is a training loader, `shuffle=sampler is None` too; one that
        # shuffles by the split it is for, `shuffle=(split == "train")`, serves evaluation as well)
        shuffle = keyword_value(call, "shuffle")
        if shuffle is not None and not (isinstance(shuffle, cst.Name) and shuffle.value == "False"):
            if isinstance(shuffle, cst.Name) or not (_TRAIN_WORDS.search(code_of(shuffle))
                                                     or _EVAL_WORDS.search(code_of(shuffle))):
                return "train"
        return None


    def current_target(self) -> str:
        return self._targets[-1] if self._targets else ""


def has_double_star(call: cst.Call) -> bool:
    """`DataLoader(ds, **kwargs)`: which keywords it passes cannot be known from the source."""
    return any(arg.star == "**" for arg in call.args)


def keyword_value(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def set_keyword(args: List[cst.Arg], name: str, value: cst.BaseExpression) -> List[cst.Arg]:
    return [a.with_changes(value=value) if a.keyword is not None and a.keyword.value == name else a for a in args]


def append_keyword(args: List[cst.Arg], name: str, value: cst.BaseExpression) -> List[cst.Arg]:
    """Add `name=value` after the last argument, on the same line, keeping a trailing comma."""
    new_arg = cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not args:
        return [new_arg]
    last = args[-1]
    # Whatever followed the last argument (a trailing comma, a comment, the newline before the
    # closing bracket) moves behind the new one, so the layout of the call is kept.
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new_arg = new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    last = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    return [*args[:-1], last, new_arg]
