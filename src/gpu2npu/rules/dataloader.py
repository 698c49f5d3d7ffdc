"""Training DataLoaders drop their last partial batch on NPU (the Ascend imagenet multi-card guide, step 10)."""
from __future__ import annotations


import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Report
from .base import Example, Rule, code_of
from .loaders import DATALOADERS, LoaderRoles, append_keyword, dataset_of, has_double_star, keyword_value, set_keyword
from .names import qualified_names

# torch_npu supports pinned host memory from the 2.1 series on; before that it had to be off.
PIN_MEMORY_SINCE = (2, 1)


class DataLoaderForNpu(LoaderRoles, Rule):
    """Ascend compiles one graph per input shape; a short last batch costs a recompilation
    every epoch, so training loaders get `drop_last=True` (as the Ascend imagenet multi-card guide does).

    Only loaders that are clearly for training change (their variable, function or dataset is
    named for training, or they shuffle, though not by the split they serve: `shuffle=(split ==
    "train")` serves evaluation too, nor as the caller of the function that builds them says:
    `def dataloader(ds, shuffle=False)` builds the validation loaders too), and only where the
    batches' shapes are the DataLoader's (no `collate_fn` of the project's, which may pad each
    batch to its own length) and the data is not of a size the code writes out (`range(22)`,
    `RegressionDataset(length=80)`: test or example data, whose last batch is part of what it
    computes).  Evaluation loaders are not edited: dropping samples would change the reported metric; they are listed in
    api_performance_advice.csv instead, as are loaders whose role cannot be told.  A `drop_last`
    the code already passes is the author's choice and is kept (and reported when it is not True).
    `pin_memory=True` stays from torch 2.1 on (torch_npu pins host memory); for older versions it
    becomes False as in the Ascend imagenet multi-card guide.
    """

    code = "NPU201"
    summary = "training DataLoader: drop_last=True (pin_memory=False before torch 2.1)"
    fix_safety = "unsafe"  # a training epoch sees up to batch_size - 1 fewer samples
    triggers = ("DataLoader",)
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\ntrain_loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True)\n",
            "import torch\nimport torch_npu\ntrain_loader = torch.utils.data.DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)\n",
        ),
        Example(
            "from torch.utils.data import DataLoader\nloader = DataLoader(\n    ds,\n    batch_size=8,\n    shuffle=True,\n)\n",
            "import torch_npu\nfrom torch.utils.data import DataLoader\nloader = DataLoader(\n    ds,\n    batch_size=8,\n    shuffle=True, drop_last=True,\n)\n",
        ),
    )
    unchanged = (
        "from torch.utils.data import DataLoader\nval_loader = DataLoader(val_set, batch_size=64, shuffle=False)\n",
        "from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=args.drop_last)\n",
        "from torch.utils.data import DataLoader\ndata_loader_train = DataLoader(ds, batch_size=64, drop_last=False)\n",
        # DataLoader refuses drop_last beside a batch_sampler
        "from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, batch_sampler=buckets, num_workers=2)\n",
        # its collate function makes the shapes (padding each batch to its longest sample, they vary anyway)
        "from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, batch_size=8, shuffle=True, collate_fn=pad)\n",
        # shuffled by an expression: the same loader serves training and evaluation
        "from torch.utils.data import DataLoader\n\ndef loader(split):\n"
        "    return DataLoader(ds[split], batch_size=8, shuffle=(split == 'train'))\n",
        # built for each step over that step's samples: drop_last would drop them
        "from torch.utils.data import DataLoader\n\nclass Trainer:\n    def step(self, samples):\n"
        "        loader = DataLoader(samples, batch_size=8, shuffle=True)\n        return [self.train(b) for b in loader]\n",
        "from torch.utils.data import DataLoader\n\ndef fit(batches):\n    for samples in batches:\n"
        "        train_loader = DataLoader(samples, batch_size=8, shuffle=True)\n",
        # a dataset whose size the code writes out (test data): its last batch is part of what is tested
        "from torch.utils.data import DataLoader\ntrain_set = RegressionDataset(length=10)\n"
        "train_dl = DataLoader(train_set, batch_size=4, shuffle=True)\n",
    )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not (qualified_names(self, original_node.func) & DATALOADERS):
            return updated_node
        role = self.role(original_node)
        if role == "train" and has_double_star(original_node):
            self.report(original_node, Report.PERFORMANCE, "torch.utils.data.DataLoader",
                        "training DataLoader with **kwargs left as is (adding drop_last could clash with them): "
                        "make sure drop_last=True is among them (fixed shapes on Ascend)")
            return updated_node
        args = list(updated_node.args)
        messages = []
        drop_last = keyword_value(original_node, "drop_last")
        if keyword_value(original_node, "batch_sampler") is not None:
            # DataLoader refuses drop_last beside a batch_sampler: the sampler makes the batches.
            self.report(original_node, Report.PERFORMANCE, "torch.utils.data.DataLoader",
                        "DataLoader with a batch_sampler left as is (it refuses drop_last): make the batch "
                        "sampler drop its last short batch if it feeds training (fixed shapes on Ascend)")
        elif isinstance(drop_last, cst.Name) and drop_last.value == "True":
            pass  # fixed batch shapes already: nothing to advise
        elif role == "train" and drop_last is None and keyword_value(original_node, "collate_fn") is not None:
            # The collate function makes the batches' shapes: padded to each batch's longest
            # sample, they change from batch to batch, and dropping samples gains nothing.
            self.report(original_node, Report.PERFORMANCE, "torch.utils.data.DataLoader",
                        "training DataLoader with its own collate_fn left as is: if its batches have a fixed "
                        "shape (padded to one length), drop_last=True spares Ascend a new graph for the last, "
                        "shorter batch; if it pads each batch to its longest sample, the shapes change anyway")
        elif role == "train" and drop_last is None and self.built_per_step(original_node):
            self.report(original_node, Report.PERFORMANCE, "torch.utils.data.DataLoader",
                        "training DataLoader built anew for each step (in a loop, a step function, or over the samples "
                        "its function is given) left as is: "
                        "drop_last=True would drop each step's remainder, or all of a step shorter than a batch; "
                        "pad the step's samples to whole batches if its shapes must stay fixed on Ascend")
        elif role == "train" and drop_last is None and self.size_written(dataset_of(original_node)):
            self.report(original_node, Report.PERFORMANCE, "torch.utils.data.DataLoader",
                        "training DataLoader over a dataset whose size is written in the code (test or example data) "
                        "left as is: drop_last=True would drop its last short batch, and split over many processes "
                        "could leave a process no batch; add it where the real data is large (fixed shapes on Ascend)")
        elif role == "train":
            if drop_last is None:
                args = append_keyword(args, "drop_last", cst.Name("True"))
                messages.append("add drop_last=True to the training DataLoader")
            elif not (isinstance(drop_last, cst.Name) and drop_last.value == "True"):
                # An explicit choice (a literal False, or an expression) is the author's: a
                # "train" loader may well feed feature extraction, where every sample counts.
                self.report(
                    original_node,
                    Report.PERFORMANCE,
                    "torch.utils.data.DataLoader",
                    f"training DataLoader keeps drop_last={code_of(drop_last)} as written: a last batch of "
                    "another size makes Ascend compile a new graph; use drop_last=True where skipping each epoch's last "
                    "short batch is harmless (shuffled training data)",
                )
        else:
            what = "evaluation DataLoader" if role == "eval" else "DataLoader whose role could not be told"
            self.report(
                original_node,
                Report.PERFORMANCE,
                "torch.utils.data.DataLoader",
                f"{what} left as is: a last batch of another size makes Ascend compile a new graph; "
                "drop_last=True would avoid it but changes the samples evaluated"
                if role == "eval"
                else f"{what} left as is: if it feeds training, add drop_last=True (fixed shapes on Ascend)",
            )
        if self.context.api.version_tuple < PIN_MEMORY_SINCE:
            pin = keyword_value(original_node, "pin_memory")
            if not (isinstance(pin, cst.Name) and pin.value == "False") and pin is not None:
                args = set_keyword(args, "pin_memory", cst.Name("False"))
                messages.append(f"set pin_memory=False (not supported by torch_npu {self.context.api.torch_npu_version})")
        if not messages:
            return updated_node
        for message in messages:
            self.record(original_node, message)
        self.context.needs_torch_npu = True
        return updated_node.with_changes(args=args)
