"""torch.cuda's memory API -> torch_npu.npu's: a kind of NPU101's edit."""
from __future__ import annotations

from .base import Example, Rule


class TorchCudaMemoryToNpu(Rule):
    """torch.cuda's caching-allocator API (the names of `torch.cuda.memory`: `memory_allocated`,
    `max_memory_allocated`, `memory_reserved`, `empty_cache`, `memory_stats`, `mem_get_info`,
    `reset_peak_memory_stats`, `set_per_process_memory_fraction`...) is torch_npu.npu's, which
    reads the NPU's caching allocator.

    A kind of NPU101's edit, with a code of its own because it is reviewed differently: the
    figures now describe another device.  An NPU has its own memory size and allocator block
    sizes, so limits tuned on a GPU (`if torch.cuda.max_memory_allocated() > 70e9`, a batch size
    found by filling memory, a fraction for `set_per_process_memory_fraction`) need tuning again;
    the allocator is configured with PYTORCH_NPU_ALLOC_CONF (NPU107 renames
    PYTORCH_CUDA_ALLOC_CONF where its options mean the same).  Names the release lacks
    (`MemPool`, `CUDAPluggableAllocator` in older releases) stay and are reported (NPU917).
    """

    code = "NPU114"
    recorded_by = "NPU101"
    summary = "torch.cuda's memory API (memory_allocated, empty_cache, memory_stats...) -> torch_npu.npu's"
    names = frozenset({
        "memory", "caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_disabled",
        "caching_allocator_enable", "change_current_allocator", "CUDAPluggableAllocator", "MemPool", "use_mem_pool",
        "empty_cache", "get_allocator_backend", "get_per_process_memory_fraction", "set_per_process_memory_fraction",
        "host_memory_stats", "host_memory_stats_as_nested_dict", "list_gpu_processes", "mem_get_info",
        "max_memory_allocated", "max_memory_cached", "max_memory_reserved", "memory_allocated", "memory_cached",
        "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
        "reset_accumulated_host_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
        "reset_max_memory_cached", "reset_peak_host_memory_stats", "reset_peak_memory_stats"})
    examples = (
        Example(
            "import torch\npeak = torch.cuda.max_memory_allocated() / 2**30\ntorch.cuda.empty_cache()\n",
            "import torch\nimport torch_npu\npeak = torch_npu.npu.max_memory_allocated() / 2**30\ntorch_npu.npu.empty_cache()\n",
        ),
    )
    unchanged = (
        "import psutil\nused = psutil.virtual_memory().used\n",
    )
