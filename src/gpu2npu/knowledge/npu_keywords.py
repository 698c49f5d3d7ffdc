"""Keywords of torch.cuda functions that their torch_npu.npu counterparts name otherwise, or do not take.

Read from the torch_npu wheels' own Python sources (torch_npu/npu/*.py of 2.1.0.post17, 2.6.0.post5,
2.7.1, 2.8.0.post5, 2.9.0.post9, 2.10.0.post7, 2.11.0.post3, 2.12.0.post3, 2.13.0 and 2.14.0) against
torch's: renamed, `torch_npu.npu.get_device_name(device=0)` raises TypeError where the CUDA call ran.
The generated data (apidata) lists names, not parameters; these are the parameters that differ.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

# torch.cuda function -> its parameters, in order, with the name torch_npu.npu's counterpart gives
# each (the same in every release read).  A keyword given in its place becomes an argument by
# position; elsewhere it takes torch_npu's name.
RENAMED_PARAMETERS: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "get_device_name": (("device", "device_name"),),
    "get_device_properties": (("device", "device_name"),),
    "can_device_access_peer": (("device", "device_id"), ("peer_device", "peer_device_id")),
    "graph": (("cuda_graph", "npu_graph"),),
}


class MissingParameter:
    """A parameter of a torch.cuda function that torch_npu.npu's counterpart takes only from
    `since` (None: no release read takes it), at `position` when given by position."""

    def __init__(self, position: Optional[int], since: Optional[str], droppable: bool, why: str):
        self.position = position
        self.since = since
        # Whether leaving it out keeps the call's meaning on the NPU (it is dropped), or the call
        # stays as written and is reported.
        self.droppable = droppable
        # Why it may be dropped; for one that may not, what the call asks with it.
        self.why = why

    def missing_in(self, torch_version: Tuple[int, ...]) -> bool:
        return self.since is None or torch_version < tuple(int(part) for part in self.since.split("."))


MISSING_PARAMETERS: Dict[str, Dict[str, MissingParameter]] = {
    "is_bf16_supported": {
        # The NPU computes in bf16 or does not: there is no emulation to include or leave out
        # (torch_npu 2.9.0 on takes the keyword and ignores it).
        "including_emulation": MissingParameter(0, "2.9.0", True, "the NPU has no emulated bf16"),
    },
    "memory_snapshot": {
        "mempool_id": MissingParameter(0, "2.13.0", False, "a snapshot of one memory pool alone"),
        "include_traces": MissingParameter(1, None, False, "leaving allocation traces out of the snapshot"),
    },
    "MemPool": {
        "use_on_oom": MissingParameter(1, "2.13.0", False, "a pool the allocator falls back on when out of memory"),
        "no_split": MissingParameter(2, "2.13.0", False, "a pool whose blocks are never split"),
    },
    "graph": {
        "enable_annotations": MissingParameter(4, None, False, "annotating the captured graph"),
        "check_input_liveness": MissingParameter(5, None, False, "checking that the captured graph's inputs are alive"),
    },
}


# The torch.cuda functions whose calls' arguments the migration fits to torch_npu's parameters.
FUNCTIONS = frozenset(RENAMED_PARAMETERS) | frozenset(MISSING_PARAMETERS)


def npu_parameter_text(name: str, keyword: str, since: Optional[str]) -> str:
    """How a report says that torch_npu.npu.<name> lacks `keyword`."""
    return (f"torch_npu.npu.{name} takes no {keyword}"
            + (f" before torch_npu {since}" if since else " (no release to 2.14.0 does)"))
