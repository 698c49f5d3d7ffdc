"""distributed: every training DataLoader draws its share of the data through a DistributedSampler."""
from __future__ import annotations

from typing import List

import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Report
from .base import DistributedSettings, Example, Rule, code_of
from .loaders import DATALOADERS, LoaderRoles, append_keyword, has_double_star, keyword_value, set_keyword
from .names import dotted_name, qualified_names

SAMPLER = "torch.utils.data.distributed.DistributedSampler"
EXAMPLE_SETTINGS = DistributedSettings(main_file="example.py", project_initialises=True)


class DistributedSamplerForLoaders(LoaderRoles, Rule):
    """With one process per NPU, each process must see a different part of every epoch.

    A training DataLoader (see DataLoaderForNpu for how training loaders are told apart) gets
    `sampler=DistributedSampler(dataset, shuffle=<the loader's own shuffle setting>)` and its own
    `shuffle` becomes False (DataLoader refuses both); a loader that already has a sampler is left
    alone.  At the top of the epoch loop of the same function (`for epoch in ...:`)
    `loader.sampler.set_epoch(epoch)` is inserted, so that each epoch is shuffled differently
    and the same way on every process.  Evaluation loaders are not split: each process still
    evaluates the whole set.  `batch_size` stays the per-process batch (the global batch grows
    with the number of NPUs) unless `--split-batch` divides it, as the Ascend imagenet multi-card guide does by hand.
    """

    code = "NPU301"
    summary = "distributed: DistributedSampler (keeping shuffle) + set_epoch for training DataLoaders"
    triggers = ("DataLoader",)
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "train_loader = DataLoader(train_set, batch_size=32, shuffle=True)\n"
            "for epoch in range(10):\n    train(train_loader)\n",
            "import torch\nimport torch_npu\nfrom torch.utils.data import DataLoader\n"
            "train_loader = DataLoader(train_set, batch_size=32, shuffle=False, drop_last=True, "
            "sampler=torch.utils.data.distributed.DistributedSampler(train_set, shuffle=True))\n"
            "for epoch in range(10):\n    train_loader.sampler.set_epoch(epoch)\n    train(train_loader)\n",
            distributed=EXAMPLE_SETTINGS,
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Loader names assigned so far in each enclosing function (the module is the first).
        self._loaders: List[List[str]] = [[]]
        self._known_at_loop: List[int] = []
        # Shuffling loaders that still need a set_epoch call: (name, original call).
        self._pending: List = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._loaders.append([])

    def leave_FunctionDef(self, original_node, updated_node):
        self._loaders.pop()
        return super().leave_FunctionDef(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not (qualified_names(self, original_node.func) & DATALOADERS) or self.role(original_node) != "train":
            return updated_node
        if keyword_value(original_node, "sampler") is not None or keyword_value(original_node, "batch_sampler") is not None:
            return updated_node
        if has_double_star(original_node):
            self.report(original_node, Report.UNSUPPORTED, "torch.utils.data.DataLoader",
                        f"training DataLoader with **kwargs: pass sampler={SAMPLER}(dataset, shuffle=...) and take "
                        "shuffle out of the keyword arguments, so each NPU process gets its share")
            return updated_node
        dataset = original_node.args[0].value if original_node.args and original_node.args[0].keyword is None else keyword_value(original_node, "dataset")
        if dataset is None or dotted_name(dataset) is None:
            self.report(original_node, Report.UNSUPPORTED, "torch.utils.data.DataLoader",
                        "training DataLoader over an inline dataset expression: give the dataset a name and pass "
                        f"sampler={SAMPLER}(dataset) so each NPU process gets its share")
            return updated_node
        shuffle = keyword_value(original_node, "shuffle")
        shuffle_code = code_of(shuffle) if shuffle is not None else "False"
        # DataLoader refuses a sampler together with shuffle=True: the shuffling moves into the
        # sampler and the loader's own setting is turned off where it stands.
        args = list(updated_node.args)
        if shuffle is not None:
            args = set_keyword(args, "shuffle", cst.Name("False"))
        sampler = cst.parse_expression(f"{SAMPLER}({code_of(dataset)}, shuffle={shuffle_code})")
        args = append_keyword(args, "sampler", sampler)
        message = f"add sampler={SAMPLER}({code_of(dataset)}, shuffle={shuffle_code})"
        if shuffle is not None:
            message += " and move shuffle into it"
        self.record(original_node, message)
        batch = keyword_value(original_node, "batch_size")
        if self.context.options.distributed.split_batch and batch is not None:
            split = cst.parse_expression(f"max(1, ({code_of(batch)}) // torch.distributed.get_world_size())")
            args = set_keyword(args, "batch_size", split)
            self.record(original_node, "divide batch_size by the number of processes (--split-batch)")
        name = self.current_target()
        if shuffle_code != "False":
            self._pending.append((name, original_node))
        if dotted_name_text(name):
            self._loaders[-1].append(name)
        self.context.needs_torch_npu = True
        return updated_node.with_changes(args=args)

    def visit_For(self, node: cst.For) -> None:
        super().visit_For(node)
        self._known_at_loop.append(len(self._loaders[-1]))

    def leave_For(self, original_node: cst.For, updated_node: cst.For):
        updated_node = super().leave_For(original_node, updated_node)
        known = self._known_at_loop.pop()
        loaders = self._loaders[-1][:known]
        epoch = original_node.target
        if not loaders or not isinstance(epoch, cst.Name) or "epoch" not in epoch.value.lower():
            return updated_node
        if not isinstance(updated_node.body, cst.IndentedBlock) or not original_node.body.body:
            return updated_node
        calls = [cst.parse_statement(f"{loader}.sampler.set_epoch({epoch.value})\n") for loader in loaders]
        first = original_node.body.body[0]
        anchor = self.lines_of(first)[0] - 1 - len(getattr(first, "leading_lines", ()))
        for loader in loaders:
            self.record_insert(anchor, f"insert {loader}.sampler.set_epoch({epoch.value}) at the start of each epoch")
        self._pending = [(name, call) for name, call in self._pending if name not in loaders]
        body = updated_node.body.with_changes(body=(*calls, *updated_node.body.body))
        return updated_node.with_changes(body=body)


    def leave_Module(self, original_node, updated_node):
        for name, call in self._pending:
            self.report(call, Report.UNSUPPORTED, f"{SAMPLER}.set_epoch",
                        f"no `for epoch in ...` loop found for {name or 'this loader'}: call "
                        "loader.sampler.set_epoch(epoch) at the start of every epoch, or every epoch is shuffled "
                        "the same way")
        return updated_node


def dotted_name_text(text: str) -> bool:
    parts = text.split(".")
    return bool(text) and all(part.isidentifier() for part in parts)
