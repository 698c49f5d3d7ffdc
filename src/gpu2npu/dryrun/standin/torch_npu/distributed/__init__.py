"""``torch_npu.distributed`` stand-in: the torch.distributed functions and classes that torch_npu
hands on under its own name are torch's (the imitation's hccl backend makes Gloo process groups
on the CPU), and its submodules torch's modules of the name; what HCCL alone does is explained
(torch_npu/_explained.py) and fails as not imitated."""

import importlib as _importlib

import torch.distributed as _dist

from .. import _names

# torch.distributed's own names that torch_npu.distributed hands on (torch_npu 1.11 mirrored the
# whole API; later releases a few); the release's list decides which are there.
_HANDED_ON = (
    "Backend", "GroupMember", "Logger", "P2POp", "Reducer", "all_gather", "all_gather_coalesced",
    "all_gather_object", "all_reduce", "all_reduce_coalesced", "all_to_all", "all_to_all_single", "barrier",
    "batch_isend_irecv", "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "gather_object",
    "get_backend", "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_initialized", "isend", "new_group", "recv", "reduce", "reduce_scatter", "scatter", "send",
)
globals().update({name: getattr(_dist, name) for name in _HANDED_ON if hasattr(_dist, name)})


def is_hccl_available():
    """True: the imitation registers the hccl backend (Gloo underneath)."""
    return True


# torch_npu.distributed's submodules -> torch's module that they are, or that they copied (torch_npu
# 1.11's FSDP); imported when first asked for (FSDP and RPC take long to import).
_TORCH_MODULES = {
    **{name: f"torch.distributed.{name}" for name in ("algorithms", "distributed_c10d", "fsdp", "nn", "pipelining",
                                                       "rendezvous", "rpc", "run", "tensor")},
    **{name: f"torch.distributed.fsdp.{name}" for name in ("fully_sharded_data_parallel", "wrap",
                                                            "sharded_grad_scaler")},
}

_names.apply_filter(__name__, globals(), made_when_asked={
    name: (lambda module=module: _importlib.import_module(module)) for name, module in _TORCH_MODULES.items()})
