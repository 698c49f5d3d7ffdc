"""The names of torch_npu's modules that the CPU imitation does not implement, each with why: what they do has no
meaning on a CPU, or its result is an NPU operator's that the release documents too little for a CPU
result to stand for it; a dry run cannot say more than that the release has them (the message says
so; try them on the NPU)."""

_HARDWARE = "it drives the NPU's hardware or driver (CANN), which a CPU does not have"
_CAPTURE = "it captures NPU kernels for replay; on the CPU nothing is captured (make_graphed_callables runs as written)"
_ALLOCATOR = "it hands out or replaces NPU memory of torch_npu's caching allocator, which the CPU run does not use"
_DUMP = "it dumps or tunes NPU operators (msprobe, AOE), which run on the NPU only"

_PROFILER = ("it is a part of torch_npu's profiler that steers or analyses NPU traces; the imitation's "
             "profile, schedule and tensorboard_trace_handler are torch's CPU profiler")

_UNDESCRIBED = ("the release data gpu2npu reads lists its name, not its interface (the Muon optimizer over "
                "parameters sharded across ranks; torch.optim.Muon is the algorithm on one process)")

_OPERATOR = ("its result is an NPU operator's whose conventions (box layout, pixel offsets, clipping, rounding) the "
             "release documents by a formula or an example only: a CPU result could not be trusted to be the NPU's")
_PRIVATE_LAYOUT = ("it takes its tensors in the NPU's private FRACTAL_NZ layout (npu_format_cast) and BERT's fixed "
                   "shapes; torch_npu deprecates it for npu_fusion_attention, which the imitation has")
_QUANTIZED = ("it runs the NPU's int8/int4 quantized kernels (npu_quant_matmul, npu_weight_quant_batchmatmul), whose "
              "rounding and scaling the CPU does not reproduce")
_DEFORMABLE = ("its sampling offsets and masks follow an NPU operator (npu_deformable_conv2d, npu_ps_roi_pooling) "
               "whose layout the release does not document")
_HCCL = ("it is HCCL's own (a collective over ranks of unequal sizes, a communicator rebuilt after a fault, HCCL's "
         "process group class, its store server, its patches of torch); the imitation's hccl backend makes Gloo "
         "process groups, which have no such thing")

WHY = {
    # torch_npu.contrib
    **{name: _OPERATOR for name in ("npu_diou", "npu_ciou", "npu_bbox_coder_encode_yolo",
                                    "npu_bbox_coder_encode_xyxy2xywh", "npu_bbox_coder_decode_xywh2xyxy",
                                    "npu_single_level_responsible_flags")},
    **{name: _PRIVATE_LAYOUT for name in ("npu_fused_attention", "npu_fused_attention_with_layernorm",
                                          "MultiheadAttention")},
    **{name: _QUANTIZED for name in ("LinearQuant", "LinearA8W8Quant", "LinearWeightQuant", "QuantConv2d")},
    **{name: _DEFORMABLE for name in ("DCNv2", "ModulatedDeformConv", "PSROIPool")},
    "Focus": ("torch_npu documents it as YOLOv5's Focus, but its slicing takes the first quarter of pixels twice "
              "and not the third (torch_npu 2.1.0): a CPU result could stand for neither"),
    "transfer_to_npu": ("importing it patches torch.cuda and the 'cuda' device to run on the NPU at run time; "
                        "gpu2npu migrates the code instead, so leave the import out"),
    **{name: ("it is torch_npu 1.11's early form of the fused attention kernel (and its gradient), whose interface "
              "the release data does not describe; torch_npu.npu_fusion_attention of later releases is imitated")
       for name in ("fusion_attention", "npu_fusion_attention", "npu_fusion_attention_grad")},
    # torch_npu.distributed
    **{name: _HCCL for name in ("ProcessGroupHCCL", "ParallelStore", "all_gather_togather",
                                "all_gather_into_tensor_uneven", "reduce_scatter_tensor_uneven", "all_to_all_vc",
                                "reinit_process_group", "fsdp_patches", "hccl_dtype_wraper")},
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
