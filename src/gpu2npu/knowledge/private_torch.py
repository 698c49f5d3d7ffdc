"""torch's private modules that hold device-neutral Python: what they do is the same on any device.

A private name (`torch.utils._pytree.tree_map`) is in no public API list, so the release data cannot
say whether it runs on the NPU; for the modules below the answer needs no data: their code walks
Python structures, traces or transforms graphs, checks values or computes on tensors through
torch's public operators, with no kernel or device of its own.  Their uses are notes in the log,
not unknown_api.csv rows.  Modules that generate or call device code are not here: torch._inductor
(its code generator needs the NPU's backend; its settings module is), torch._C (bindings, CUDA's among them), torch.ops
(custom operators), torch.distributed (its collectives depend on HCCL; DTensor's placements and
the pipeline schedules, Python over the process group, are here), torch._library (Triton
wrappers beside the operator registry).
"""
from __future__ import annotations

from typing import Optional

# module -> what its code is
DEVICE_NEUTRAL_MODULES = {
    "torch.utils._pytree": "nested-container utilities",
    "torch.utils._cxx_pytree": "nested-container utilities",
    "torch.utils._python_dispatch": "the Python dispatcher's modes",
    "torch.utils._ordered_set": "a container",
    "torch.utils._contextlib": "decorator helpers",
    "torch._subclasses": "fake and functional tensors for tracing",
    "torch._guards": "the tracing context",
    "torch._logging": "logging settings",
    "torch._dynamo": "torch.compile's graph capture",
    "torch._functorch": "graph transforms (AOT autograd)",
    # (not the whole package: flex_attention, associative_scan and the Triton wrapper compile device kernels)
    "torch._higher_order_ops.auto_functionalize": "the functionalisation of custom operators",
    "torch.fx": "graph tracing and passes",
    # (Inductor's pattern matcher only: it traces and rewrites FX graphs; the code generator is not here)
    "torch._inductor.pattern_matcher": "FX graph pattern matching for compiler passes",
    # (Inductor's settings, read and patched: what a setting does on the NPU is NPU928's note, a
    # setting the release's torch lacks NPU903's row)
    "torch._inductor.config": "inductor's settings",
    "torch._utils": "tensor (de)serialisation and flattening through public operators",
    "torch.nn.init": "initialisation helpers",
    "torch.nn.modules": "module helpers",
    "torch.optim.optimizer": "optimizer helpers",
    "torch.optim.lr_scheduler": "scheduler helpers",
    "torch.cpu": "queries of the host CPU",
    # (DTensor's placements and specs, and its old module name: its collectives go through the
    # device mesh's process group, HCCL's on the NPU; symmetric memory is not here)
    "torch.distributed._tensor": "DTensor (the old name of torch.distributed.tensor)",
    "torch.distributed.tensor.placement_types": "DTensor's placements",
    "torch.distributed.tensor._dtensor_spec": "DTensor's sharding specs",
    # (pipeline schedules and stages: Python that orders point-to-point sends over the process group)
    "torch.distributed.pipelining": "pipeline-parallel schedules and stages",
    "torch.testing._internal.common_utils": "torch's test helpers (run_tests, TestCase, parametrize)",
    "torch.nn.utils.stateless": "functional calls of a module with given parameters",
    "torch.distributed.algorithms._checkpoint": "activation checkpointing wrappers (checkpoint_wrapper)",
}

# torch-level checks: they test values and raise, on any device
DEVICE_NEUTRAL_FUNCTIONS = frozenset({
    "torch._assert", "torch._check", "torch._check_is_size", "torch._check_with", "torch._check_value",
    "torch._check_index", "torch._check_type", "torch._check_not_implemented", "torch._check_tensor_all",
})

# Bindings of torch._C (mostly CUDA's and the dispatcher's) whose work involves no device: name -> what it is
DEVICE_NEUTRAL_BINDINGS = {
    "torch._C.DisableTorchFunctionSubclass": "a switch of Python's __torch_function__ dispatch",
    "torch._C._current_graph_task_id": "a query of the autograd engine's running backward pass",
    "torch._C._nn._parse_to": "the parser of Tensor.to's arguments",
    # (the autograd engine, bound as Variable's class attribute: a Python callback run when the
    # backward pass ends, as DDP-style gradient hooks use it)
    "torch.autograd.Variable._execution_engine.queue_callback": "a callback queued on the autograd engine",
    "torch.autograd.variable.Variable._execution_engine.queue_callback": "a callback queued on the autograd engine",
}

# Words of a name that make it part of device code even in a device-neutral module.
_DEVICE_WORDS = ("cuda", "triton", "cudagraph", "nccl", "cudnn")


def device_neutral(name: str) -> Optional[str]:
    """What the private torch name `name` is part of, where that code is device-neutral; else None."""
    if name in DEVICE_NEUTRAL_FUNCTIONS:
        return "a check of values"
    if name in DEVICE_NEUTRAL_BINDINGS:
        return DEVICE_NEUTRAL_BINDINGS[name]
    if any(word in name.lower() for word in _DEVICE_WORDS):
        return None  # (torch._dynamo.backends.cudagraphs, torch._utils._cuda_...: CUDA's own parts)
    parts = name.split(".")
    for depth in range(len(parts) - 1, 1, -1):
        what = DEVICE_NEUTRAL_MODULES.get(".".join(parts[:depth]))
        if what is not None:
            return what
    return None


def device_neutral_note(name: str, what: str) -> str:
    return (f"torch's own device-neutral Python ({what}): runs on the NPU as it does on the GPU; a private name, "
            "so check it where the project's torch differs from the -v release's")
