"""What the DataLoader rules share: which calls are DataLoaders, what each one is for (training
or evaluation, told by the names around it), and editing keyword arguments in place."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Set

import libcst as cst

from .base import code_of
from .names import dotted_name, file_facts, nodes_within

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
_EVAL_WORDS = re.compile(r"(val|valid|validation|test|eval|evaluation|dev|infer|inference|predict)", re.I)
_TRAIN_WORDS = re.compile(r"train", re.I)
_STEP_WORDS = re.compile(r"(^|_)step($|_)", re.I)
# The count of a run's epochs (`range(args.epochs)`, `range(num_train_epochs)`): a word before
# "epochs" other than these says whose (`ppo_epochs`, `update_epochs`: an RL update's passes).
_RUN_EPOCHS = re.compile(r"^((num|n|max|total|train|training)_?(train_)?)?epochs?$", re.I)
_EPOCH_WORD = re.compile(r"epoch", re.I)
# How many assignments back a loader's data is followed to the samples its function is given.
_DERIVATION_STEPS = 3


def _repeats_a_run(loop: cst.CSTNode) -> bool:
    """Whether `loop` may be a run's epoch loop.  A `for ... in range(count)` is one where its count
    is named for a run's epochs, or where its variable is the epoch and the count does not name
    whose epochs they are; `while` and other loops may be."""
    if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and dotted_name(loop.iter.func) == "range"
            and loop.iter.args):
        return True
    count = (dotted_name(loop.iter.args[-1 if len(loop.iter.args) < 3 else 1].value) or "").rsplit(".", 1)[-1]
    if _EPOCH_WORD.search(count):
        return _RUN_EPOCHS.match(count) is not None
    target = dotted_name(loop.target) or ""
    return _EPOCH_WORD.search(target) is not None


# Keywords that give a dataset its number of samples (`RegressionDataset(length=80)`).
_SIZE_KEYWORDS = frozenset({"length", "size", "num_samples", "n_samples", "samples", "n", "num_examples",
                            "count", "dataset_size", "num_items", "num_elements", "len"})


class LoaderRoles:
    """Mixin for rules: tracks the assignment target, dict key and function a call stands in, so
    that `role(call)` can tell a training loader from an evaluation one."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._targets: List[str] = []
        self._functions: List[cst.FunctionDef] = []  # the functions around the code
        self._loops: List[int] = [0]  # loops around the code, per function (a loop outside a def is not its)
        # what the names of each enclosing scope were last given (the module's first)
        self._values: List[Dict[str, cst.BaseExpression]] = [{}]
        # id of a value that wraps the name it is assigned to (`data = Wrapper(data)`, `model =
        # model.npu()`) -> the value the name had before: its samples may still be those
        self._rebound_from: Dict[int, cst.BaseExpression] = {}

    # The names around a loader say what it is for.
    def visit_Assign(self, node: cst.Assign) -> None:
        self._targets.append(" ".join(code_of(t.target) for t in node.targets))
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                name = target.target.value
                before = self._values[-1].get(name)
                if before is not None and any(read.value == name for read in nodes_within(node.value, cst.Name)):
                    self._rebound_from[id(node.value)] = before
                self._values[-1][name] = node.value

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
        self._functions.append(node)
        self._loops.append(0)
        self._values.append({})

    def leave_FunctionDef(self, original_node, updated_node):
        self._functions.pop()
        self._loops.pop()
        self._values.pop()
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

    def built_per_step(self, call: cst.Call) -> bool:
        """Whether the loader is built anew for each step: in a loop, in a function named for one
        step (`step`, `training_step`), or over samples its function is given and read there
        (`def train_iteration(policy, samples)`: each call brings its own): over that step's
        samples, whose remainder drop_last would drop (all of a step shorter than a batch)."""
        return (self._loops[-1] > 0 or _STEP_WORDS.search(self._function_name()) is not None
                or self._reads_given_samples(call))

    def _parameters(self) -> Set[str]:
        """The names of the parameters of the function the code stands in."""
        if not self._functions:
            return set()
        params = self._functions[-1].params
        return {param.name.value for param in (*params.posonly_params, *params.params, *params.kwonly_params)}

    def _function_name(self) -> str:
        return self._functions[-1].name.value if self._functions else ""

    def _reads_given_samples(self, call: cst.Call) -> bool:
        """Whether the loader `call` makes is built over samples its function is given (a parameter
        other than `self`, itself) and is read once in that function (`for batch in loader`), not
        handed on."""
        dataset = dataset_of(call)
        loader = self._targets[-1] if self._targets else ""
        if not self._functions or dataset is None or not loader.isidentifier():
            return False
        function = self._functions[-1]
        parameters = function.params
        given = {param.name.value for param in (*parameters.posonly_params, *parameters.params,
                                                *parameters.kwonly_params)} - {"self", "cls"}
        if not self._made_of_given(self._value_of(dataset), given, _DERIVATION_STEPS):
            return False
        # read in one pass: a loop over it that no epoch loop of the run holds (one around it reads
        # a run's data set again and again; a PPO-style update's `for _ in range(ppo_epochs)`
        # reads the step's samples again, and is no such loop)
        repeated = {id(inner) for outer in nodes_within(function.body, cst.For, cst.While) if _repeats_a_run(outer)
                    for inner in nodes_within(outer.body, cst.For, cst.CompFor)}
        return any(loader in {name.value for name in nodes_within(loop.iter, cst.Name)}
                   for loop in nodes_within(function.body, cst.For, cst.CompFor) if id(loop) not in repeated)

    def _made_of_given(self, data: cst.BaseExpression, given: Set[str], steps: int) -> bool:
        """Whether `data` is made of samples the function is given: it names a parameter, or a name
        the function gave a value made of one (`states = torch.stack([e.state for e in batch])`),
        up to `steps` assignments back.  The samples themselves (`TensorDataset(samples)`), not a
        setting read from an argument (`ImageFolder(args.data)`) nor a function (a TensorDataset
        holds the tensors it is given: `TensorDataset(rollouts.obs)` is over samples)."""
        tensors = {id(arg.value) for inner in nodes_within(data, cst.Call)
                   if (dotted_name(inner.func) or "").rsplit(".", 1)[-1] == "TensorDataset" for arg in inner.args}
        not_data = {id(inner.func) for inner in nodes_within(data, cst.Call)} | {
            id(attribute.value) for attribute in nodes_within(data, cst.Attribute) if id(attribute) not in tensors}
        names = [name.value for name in nodes_within(data, cst.Name) if id(name) not in not_data]
        if any(name in given for name in names):
            return True
        local = self._values[-1] if len(self._values) > 1 else {}  # (the function's own names only)
        return steps > 0 and any(name in local and local[name] is not data
                                 and self._made_of_given(local[name], given, steps - 1) for name in set(names))

    def _number(self, node: cst.BaseExpression) -> bool:
        """An integer written in the code, or a module constant holding one (`NUM_ELEMENTS = 22`)."""
        if isinstance(node, cst.Name):
            if node.value in file_facts(self, node).module_numbers:
                return True
            node = self._values[0].get(node.value, node)
        return isinstance(node, cst.Integer)

    def _value_of(self, node: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(node, cst.Name):
            for values in reversed(self._values):
                if node.value in values:
                    return values[node.value]
        return node

    def size_written(self, dataset: Optional[cst.BaseExpression]) -> bool:
        """Whether the loader's dataset has a number of samples written in the code: a literal
        list, `range(22)`, `RegressionDataset(length=80)`, a class of the file whose `__len__`
        returns a number: test data, small, where dropping the last batch changes what the code
        computes (and split over many processes can leave a process no batch at all).  Random
        tensors (`TensorDataset(torch.randn(512, 33))`) stand in for a real data set: not these."""
        if dataset is None:
            return False
        dataset = self._value_of(dataset)
        if id(dataset) in self._rebound_from and self.size_written(self._rebound_from[id(dataset)]):
            return True  # (what a distributed migration writes, `model = DDP(model)`, keeps the answer)
        if isinstance(dataset, (cst.List, cst.Tuple, cst.ListComp)):
            return True
        if not isinstance(dataset, cst.Call):
            return False
        callee = dataset.func
        last = callee.attr.value if isinstance(callee, cst.Attribute) else callee.value if isinstance(callee, cst.Name) else ""
        if last == "range":
            return bool(dataset.args) and all(self._number(arg.value) for arg in dataset.args)
        if last in file_facts(self, dataset).sized_classes:
            return True
        return any(arg.keyword is not None and arg.keyword.value in _SIZE_KEYWORDS and self._number(arg.value)
                   for arg in dataset.args) or any(
            arg.keyword is None and self.size_written(arg.value) for arg in dataset.args
            if last in ("list", "TensorDataset", "Subset") or last.endswith("Dataset"))

    def role(self, call: cst.Call) -> Optional[str]:
        """"train", "eval" or None (cannot tell)."""
        target = self._targets[-1] if self._targets else ""
        for words in (target, self._function_name()):
            if _EVAL_WORDS.search(words) and not _TRAIN_WORDS.search(words):
                return "eval"
            if _TRAIN_WORDS.search(words):
                return "train"
        dataset_text = code_of(dataset_of(call))
        if _TRAIN_WORDS.search(dataset_text):
            return "train"
        if _EVAL_WORDS.search(dataset_text):
            return "eval"
        # (a loader that shuffles is a training loader, `shuffle=sampler is None` too; one that
        # shuffles by the split it is for, `shuffle=(split == "train")`, serves evaluation as well)
        shuffle = keyword_value(call, "shuffle")
        if isinstance(shuffle, cst.Name) and shuffle.value in self._parameters():
            return None  # (`def make_loader(ds, shuffle)`: each caller says, for training or evaluation)
        if shuffle is not None and not (isinstance(shuffle, cst.Name) and shuffle.value == "False"):
            if isinstance(shuffle, cst.Name) or not (_TRAIN_WORDS.search(code_of(shuffle))
                                                     or _EVAL_WORDS.search(code_of(shuffle))):
                return "train"
        return None


    def current_target(self) -> str:
        return self._targets[-1] if self._targets else ""


def dataset_of(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The dataset a DataLoader call is given (first positional argument or dataset=)."""
    return call.args[0].value if call.args and call.args[0].keyword is None else keyword_value(call, "dataset")


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
