"""The names of torch_npu's modules that the CPU imitation does not implement, each with why: what they do has no
meaning on a CPU, or its result is an NPU operator's that the release documents too little for a CPU
result to stand for it; a dry run cannot say more than that the release has them (the message says
so; try them on the NPU).  torch_npu's own operators (`torch_npu.npu_*`, some 400 per release) are
explained by family (OPERATOR_FAMILIES: a pattern of their names) or one by one (OPERATOR_WHY)."""
import re

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


# torch_npu's operators (torch_npu.npu_*, the names of torch.ops.npu): by family, the first family whose pattern
# a name matches says why the imitation does not compute it; OPERATOR_WHY names single operators.
_GRADIENT = ("it is the gradient kernel that autograd calls in an operator's backward, not one a program calls; "
             "the imitation's operators get their gradients from torch's autograd")
_FLOAT_STATUS = ("it reads or clears the NPU's floating-point overflow register, which a CPU does not have "
                 "(torch.amp's GradScaler finds inf and NaN itself)")
_COLLECTIVE_MATMUL = ("it fuses a matrix multiplication or an MoE dispatch with an HCCL collective over ranks; "
                      "the imitation's hccl backend makes Gloo process groups, which have no such fused operation "
                      "(the collective and the matmul apart are imitated)")
_SERVING = ("it is an inference kernel over the NPU's paged KV cache, its block tables or its sampling (decoding and "
            "serving, as vLLM Ascend calls it); its cache layout is the NPU's, and a training dry run has no such "
            "cache")
_MOE = ("it is an MoE kernel (token routing, expert grouping, grouped matmul) whose drop, pad and capacity modes "
        "the release documents by shapes and constraints more than by a formula: a CPU result could not be "
        "trusted to be the NPU's")
_IMAGE = ("it decodes or normalizes images with the NPU's image units (DVPP), whose rounding and colour "
          "conversion the release does not document; torchvision's transforms run on the CPU")
_STORAGE = ("it works on an NPU tensor's private storage (its format, storage size, data pointer, swapped host "
            "memory, prefetching, graph capture), which a CPU tensor does not have")
_FUSED_ADAM = ("it is the NPU's Adam step on raw tensors in place; torch.optim's Adam and AdamW and "
               "torch_npu.optim's fused optimizers, which the imitation has, take the same step")
_RNN = ("the NPU's LSTM and GRU kernels take their weights and states in the NPU's private layouts "
        "(FRACTAL_NZ, FRACTAL_ZN_LSTM); torch.nn.LSTM and GRU are the way to them and run in a dry run")
_DROPOUT_MASK = ("the NPU's dropout draws its mask as packed bits from the NPU's generator; the CPU cannot draw "
                 "the same bits, so a result would not be the NPU's (torch.nn.functional.dropout runs)")
_BERT_ERA = ("it is a fused attention kernel of BERT-sized models with fixed shapes, float16 inputs and the NPU's "
             "private FRACTAL_NZ layout; torch_npu.npu_fusion_attention, which the imitation has, supersedes it")
_LATER_FUSION = ("it is a later form of npu_fusion_attention with more inputs and other defaults; the imitation "
                 "computes npu_fusion_attention, which the release also has")
_SYNC_BATCH_NORM = ("it is one of SyncBatchNorm's statistics kernels that torch calls for the NPU; programs use "
                    "torch.nn.SyncBatchNorm, which runs in a dry run")

OPERATOR_FAMILIES = tuple((re.compile(pattern), why) for pattern, why in (
    (r"(_backward(_int|_tensor)?_?|_grad(_v\d)?|bk)$", _GRADIENT),
    (r"float_status", _FLOAT_STATUS),
    (r"quant|int4pack|anti_mx|_ifmr$|hans_(en|de)code", _QUANTIZED),
    (r"all_gather|all_reduce|reduce_scatter|alltoall|all_to_all|hcom_|moe_distribute", _COLLECTIVE_MATMUL),
    (r"incre_flash|prompt_flash|fused_infer_attention|kv_cache|pa_cache|mla_prolog|sparse_flash|lightning_indexer|"
     r"nsa_|block_sparse_attention|advance_step|worker|attention_to_ffn|ffn_to_attention|top_k_top_p|rope_cache|"
     r"kv_rmsnorm|attention_update|^npu_ffn$|scatter_pa|gather_pa", _SERVING),
    (r"moe_|grouped_matmul|gmm|batch_gather_matmul", _MOE),
    (r"iou|nms|roi|bounding_box|anchor|yolo|rotated|grid_assign|crop_and_resize|random_choice_with_mask|"
     r"sub_sample", _OPERATOR),
    (r"deformable", _DEFORMABLE),
    (r"decode_jpeg|image_normalize|img_to_tensor|normalize_batch", _IMAGE),
    (r"empty_with|format_contiguous|get_storage_size|change_data_ptr|copy_memory|check_memory_overlaps|check_match|"
     r"view_copy|stride_copy|trans_contiguous|^npu_prefetch$|save_npugraph", _STORAGE),
    (r"^obfuscation_", _HARDWARE),
    (r"apply_adam", _FUSED_ADAM),
    (r"^npu_(lstm|gru)", _RNN),
    (r"dropout_gen_mask|dropout_do_mask|dropout_with_byte_mask", _DROPOUT_MASK),
    (r"^npu_fused_attention|^npu_multi_head_attention", _BERT_ERA),
    (r"^npu_fusion_attention_v\d$", _LATER_FUSION),
    (r"^batch_norm_(reduce|gather_stats)", _SYNC_BATCH_NORM),
))

OPERATOR_WHY = {
    "npu_flash_attention": WHY["fusion_attention"],
    "npu_dtype_cast_": ("torch_npu documents npu_dtype_cast, which the imitation computes, and not this in-place "
                        "form (what it does to a tensor that already has the dtype is not said)"),
    "npu_stride_add": ("it adds tensors in the NPU's private five-dimensional channel layout (NC1HWC0), and its only "
                       "documented example pads the channels with zeros: a CPU result could not be trusted to be "
                       "the NPU's"),
    "npu_dropout_with_add_softmax": ("torch_npu deprecates it, and its documentation contradicts itself on what is "
                                     "dropped and how kept values are scaled, without defining its mask"),
    **{name: ("torch_npu does not document it: neither the wheel's docstrings nor Ascend's torch_npu API reference "
              "describe it, only its signature is published, so there is no documented meaning to compute")
       for name in ("npu_add_layer_norm", "npu_add_rms_norm_v2", "npu_add_rms_norm_v2_functional", "npu_attn_softmax_",
                    "npu_deep_norm", "npu_fused_matmul", "npu_masked_softmax_with_rel_pos_bias", "npu_scatter_list",
                    "npu_scatter_list_", "reverse")},
    **{name: ("it is a serving kernel of linear-attention and Mamba-style models that reads and writes per-request "
              "state slots of a cache (conv_states or state, picked by cache_indices or ssm_state_indices, with "
              "prefix caching and speculative decoding); a training dry run has no such cache (npu_fused_causal_"
              "conv1d's _v2 and _functional forms are not documented at all)")
       for name in ("npu_fused_causal_conv1d", "npu_fused_causal_conv1d_functional", "npu_fused_causal_conv1d_v2",
                    "npu_recurrent_gated_delta_rule", "npu_recurrent_gated_delta_rule_functional")},
    "npu_chunk_gated_delta_rule": ("its documentation gives the gated delta rule of one head, but not which key "
                                   "head each value head reads when there are more value heads than key heads "
                                   "(Nv a multiple of Nk), and torch_npu 2.14.0's docstring returns one output and "
                                   "updates initial_state in place where Ascend's API reference returns "
                                   "final_state"),
    **{name: ("its packed target_mask output is documented as 0b(maskBit[8k:8k+8]), which does not say whether "
              "the first token of a byte is its lowest or its highest bit: a CPU result could not be trusted to be "
              "the NPU's (npu_fused_cross_entropy_loss_with_max_sum, the step after the all-reduce, is computed)")
       for name in ("npu_fused_linear_online_max_sum", "fused_linear_online_max_sum")},
    "fused_cross_entropy_loss_with_max_sum": ("torch_npu 2.6.0, 2.8.0 and 2.9.1 bind it under this name without "
                                              "documenting it; it has the signature of "
                                              "npu_fused_cross_entropy_loss_with_max_sum, which the imitation "
                                              "computes for the releases that have that name"),
    "npu_fused_floyd_attention": ("torch_npu 2.14.0's docstring and Ascend's API reference give its inputs "
                                  "different shapes (value_ij [B, H, K, N, D] against [B, H, N, K, D], the mask "
                                  "[B, N, K] against [B, 1, N, 1, K]), and both write its products without einsum "
                                  "subscripts, so which axes each sums over is not stated"),
    "npu_mhc_pre": ("torch_npu 2.14.0's docstring describes it by shapes only, and the formula of Ascend's API "
                    "reference contradicts its own outputs: H_post has n values per token there (as npu_mhc_post "
                    "takes it), while the h_post it returns is given the shape [B, S, D]"),
    "npu_mhc_sinkhorn": ("torch_npu 2.14.0's docstring gives no formula and one output where the schema returns "
                         "three; Ascend's API reference has the formula but does not say what the second and third "
                         "outputs are when out_flag is 0, and gives sum_out 2 * num_iters entries while defining "
                         "them from sum_out[1] on"),
    "npu_mrope": ("it is an inference kernel that rotates flattened (num_tokens, heads * head_size) rows by a "
                  "precomputed cos/sin cache; its formula slices the whole row (query[..., :rotary_dim]) without "
                  "saying how the heads in it are rotated, and its 'interleave' cache mode assigns into cos "
                  "without first choosing one of its position rows"),
    "npu_sim_exponential_": ("its exponential draws come from the NPU's generator (the seed and offset that "
                             "aclnnSimThreadExponential takes), which the CPU cannot reproduce; "
                             "torch.Tensor.exponential_ draws from the same distribution in a dry run"),
    **{name: ("its documentation does not say how the one- or two-dimensional indices pick the positions along "
              "axis (one per batch row, or the same for every row), and its only example, of one batch row, "
              "prints no result: a CPU result could not be trusted to be the NPU's")
       for name in ("scatter_update", "scatter_update_")},
}


def operator_why(name):
    """Why the imitation does not compute torch_npu.`name` (an operator of the release), or None."""
    if name in OPERATOR_WHY:
        return OPERATOR_WHY[name]
    for pattern, why in OPERATOR_FAMILIES:
        if pattern.search(name):
            return why
    return None


def why(module_name, name):
    """Why the imitation does not implement `module_name`.`name` of the release, or None."""
    return operator_why(name) if module_name == "torch_npu" else WHY.get(name)
