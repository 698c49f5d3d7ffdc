"""torch.cuda's streams, events, synchronisation and graphs -> torch_npu.npu's: a kind of NPU101's edit."""
from __future__ import annotations

from .base import Example, Rule


class TorchCudaStreamsToNpu(Rule):
    """torch.cuda's execution order (`synchronize`, `Stream`, `Event`, `current_stream`,
    `default_stream`, `stream`, `set_stream`, `StreamContext`; CUDA graphs: `CUDAGraph` ->
    `NPUGraph`, `graph`, `make_graphed_callables`, `graph_pool_handle`) is torch_npu.npu's, with
    the same methods (`record`, `wait_stream`, `elapsed_time`, `replay`).

    A kind of NPU101's edit, with a code of its own because it is reviewed differently: it says
    when work runs, not what it computes.  Timings taken between events or after `synchronize`
    now measure the NPU (figures of a GPU run do not carry over), work put on side streams
    overlaps on NPU streams, and graph capture has the NPU's limits (static shapes, no host
    synchronisation inside the captured region).
    """

    code = "NPU113"
    recorded_by = "NPU101"
    summary = "torch.cuda's streams, events, synchronize and graphs -> torch_npu.npu's"
    names = frozenset({
        "streams", "graphs", "synchronize", "Stream", "Event", "ExternalStream", "current_stream", "default_stream",
        "stream", "set_stream", "StreamContext", "get_stream_from_external", "CUDAGraph", "graph",
        "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"})
    examples = (
        Example(
            "import torch\nstart = torch.cuda.Event(enable_timing=True)\nend = torch.cuda.Event(enable_timing=True)\n"
            "start.record()\nend.record()\ntorch.cuda.synchronize()\nms = start.elapsed_time(end)\n",
            "import torch\nimport torch_npu\nstart = torch_npu.npu.Event(enable_timing=True)\n"
            "end = torch_npu.npu.Event(enable_timing=True)\nstart.record()\nend.record()\ntorch_npu.npu.synchronize()\n"
            "ms = start.elapsed_time(end)\n",
        ),
        Example(
            "import torch\nside = torch.cuda.Stream()\nwith torch.cuda.stream(side):\n    y = x * 2\n"
            "torch.cuda.current_stream().wait_stream(side)\n",
            "import torch\nimport torch_npu\nside = torch_npu.npu.Stream()\nwith torch_npu.npu.stream(side):\n    y = x * 2\n"
            "torch_npu.npu.current_stream().wait_stream(side)\n",
        ),
        Example(
            "import torch\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = model(x)\ng.replay()\n",
            "import torch\nimport torch_npu\ng = torch_npu.npu.NPUGraph()\nwith torch_npu.npu.graph(g):\n    out = model(x)\ng.replay()\n",
        ),
    )
    unchanged = (
        "import threading\nstop = threading.Event()\n",
    )
