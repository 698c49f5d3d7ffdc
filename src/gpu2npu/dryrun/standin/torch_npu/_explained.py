"""The names of torch_npu.npu (and of its optim) that the CPU imitation does not implement, each with why: what they
do has no meaning on a CPU, so a dry run cannot say more than that the release has them (the
message says so; try them on the NPU)."""

_HARDWARE = "it drives the NPU's hardware or driver (CANN), which a CPU does not have"
_CAPTURE = "it captures NPU kernels for replay; on the CPU nothing is captured (make_graphed_callables runs as written)"
_ALLOCATOR = "it hands out or replaces NPU memory of torch_npu's caching allocator, which the CPU run does not use"
_DUMP = "it dumps or tunes NPU operators (msprobe, AOE), which run on the NPU only"

_PROFILER = ("it is a part of torch_npu's profiler that steers or analyses NPU traces; the imitation's "
             "profile, schedule and tensorboard_trace_handler are torch's CPU profiler")

_UNDESCRIBED = ("the release data gpu2npu reads lists its name, not its interface (the Muon optimizer over "
                "parameters sharded across ranks; torch.optim.Muon is the algorithm on one process)")

WHY = {
    "distributed_muon": _UNDESCRIBED,
    **{name: _PROFILER for name in ("analysis", "dynamic_profile", "experimental_config", "profiler",
                                    "profiler_action_controller", "profiler_interface", "profiler_path_creator",
                                    "scheduler")},
    **{name: _CAPTURE for name in ("NPUGraph", "graph", "graph_task_group_begin", "graph_task_group_end",
                                   "graph_task_update_begin", "graph_task_update_end", "NpuGraphOpHandler",
                                   "register_npu_graph_handler", "npugraph_ex", "super_kernel_scope_begin",
                                   "super_kernel_scope_end", "TensorWeakRef", "force_npugraph_gc")},
    **{name: _ALLOCATOR for name in ("MemPool", "MemPoolContext", "use_mem_pool", "NPUPluggableAllocator",
                                     "change_current_allocator", "caching_allocator_alloc", "caching_allocator_delete")},
    **{name: _DUMP for name in ("set_dump", "init_dump", "finalize_dump", "set_aoe")},
    **{name: _HARDWARE for name in ("ExternalEvent", "SyncLaunchStream", "restart_device", "stop_device",
                                    "check_uce_in_memory", "stress_detect", "get_soc_version", "obfuscation_initialize",
                                    "obfuscation_calculate", "obfuscation_finalize", "CubeMathType", "use_compatible_impl",
                                    "are_compatible_impl_enabled", "default_generators", "hccl_detect_group",
                                    "get_cann_version", "is_support_inf_nan", "npu_check_overflow", "ExternalStream",
                                    "npurt")},
}
