"""Advice for what cannot be migrated automatically: the Tips column of the reports.

These are judgements, not API lists (those are generated, see `apidata`): what a person should
do when a CUDA construct has no NPU counterpart.  Keys are matched as prefixes of the
qualified name, longest first (dotted prefixes, or any prefix for a key ending in "_").
"""
from __future__ import annotations

import re
from typing import FrozenSet, Optional

from .apidata import ApiData

# Names torch_npu.npu does provide, but whose behaviour differs enough that a silent rename
# would hide a problem: they stay as written and are reported.
NOT_EQUIVALENT = {
    "get_device_capability": "NPUs have no CUDA compute capability: torch.cuda.get_device_capability raises on an "
    "Ascend machine (its torch has no CUDA), and torch_npu.npu.get_device_capability returns None (from torch_npu "
    "2.7.1 the value of TORCH_NPU_DEVICE_CAPABILITY, e.g. '8.0', where it is set), which cannot be unpacked, indexed "
    "or compared with a tuple; replace capability checks with torch_npu.npu.is_bf16_supported() for bf16, or a "
    "fixed choice",
}

# Which files NPU265 points at the generated ascend_apex (rules/apex_parts.py): said in every apex
# tip the package answers.
_ASCEND_APEX = ("a file that uses nothing of apex but its normalization modules, FusedAdam/FusedSGD/FusedAdagrad "
                "and apex.parallel's DistributedDataParallel/SyncBatchNorm/convert_syncbn_model gets the generated "
                "ascend_apex")

# DeepSpeed runs on Ascend through its own NPU accelerator; what that accelerator cannot build
# (DeepSpeed 0.19's op_builder/npu against its CUDA op_builder) is reported where it is used.
_DEEPSPEED = "DeepSpeed runs on Ascend through its NPU accelerator (no edits), which has no build of "
_DEEPSPEED_LAYER = (_DEEPSPEED + "the fused training transformer layer (TransformerBuilder): use the model's own "
                    "torch layers (the same computation), with torch_npu.npu_fusion_attention for the attention")
DEEPSPEED_CUDA_BUILDERS = (
    "TransformerBuilder", "StochasticTransformerBuilder", "EvoformerAttnBuilder", "FPQuantizerBuilder",
    "RandomLTDBuilder", "RaggedOpsBuilder", "RaggedUtilsBuilder", "InferenceCoreBuilder", "InferenceCutlassBuilder",
    "SpatialInferenceBuilder", "GDSBuilder", "DeepCompileBuilder",
)
# The parts of vLLM's weight transfer (trainer to server, for RL) that move tensors over NCCL or CUDA
# IPC: vllm-ascend has neither.
VLLM_WEIGHT_TRANSFER_CUDA = tuple(f"vllm.distributed.weight_transfer.{part}" for part in (
    "nccl_engine", "nccl_common", "sparse_nccl_engine", "ipc_engine", "packed_tensor.packed_nccl_broadcast_producer",
    "packed_tensor.packed_nccl_broadcast_consumer"))

# Bindings that only CUDA builds of torch have (`torch._C._cuda_isInBadFork`, `torch._C._cudart`); the
# torch that torch_npu runs on is a CPU build.  (A prefix ending in "_" names a family: tip_for.)
CUDA_BUILD_BINDINGS = ("torch._C._cuda_", "torch._C._cudart")

# What to do instead of a GPU kernel (Triton, CuTe DSL, cuTile): "write what it computes ...".
_KERNEL_INSTEAD = ("with torch operators (or the torch_npu fused operator for it: npu_rms_norm, npu_swiglu, "
                   "npu_rotary_mul, npu_fusion_attention), or port it to ")
# What runs a mixture of experts on the NPU, where a CUDA-only kernel package ran it.
_TORCH_EXPERTS = ("choose the model's torch experts (transformers' experts_implementation \"eager\"), or "
                  "torch_npu.npu_grouped_matmul for the expert matmuls")


# flash-attn's attention functions (2.x, and 1.x's varlen names): those the generated
# ascend_flash_attn provides (rules/flash_attn) and the reports name as such.
FLASH_ATTN_FUNCTIONS = frozenset({
    "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func", "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func",
    "flash_attn_unpadded_func", "flash_attn_unpadded_kvpacked_func", "flash_attn_unpadded_qkvpacked_func",
})

# torch's FlexAttention, and transformers' choice of it (a row's OP, and the key of its tip): both
# refuse NPU tensors.
FLEX_ATTENTION = "torch.nn.attention.flex_attention.flex_attention"
FLEX_ATTENTION_CHOICE = 'attn_implementation="flex_attention"'
_FLEX_ATTENTION = ("torch's flex_attention raises for NPU tensors (it takes CUDA, CPU, XPU, HPU and MPS tensors "
                   "only; torch_npu registers no FlexAttention): ")
TIPS = {
    "torch.cuda.nvtx": "use torch_npu.npu.mstx (mark, range_start/range_end) to annotate NPU profiles",
    "torch.cuda.CUDAGraph": "use torch_npu.npu.NPUGraph (torch_npu.npu.graph) where available",
    "torch.cuda.graphs": "use torch_npu.npu.graphs where available",
    "torch.cuda.comm": "use torch.distributed collectives over HCCL",
    "torch.cuda.nccl": "use torch.distributed with the hccl backend",
    "torch.cuda.jiterator": "no NPU equivalent: write the elementwise op with torch operators",
    "torch.cuda.get_arch_list": "no NPU equivalent: CUDA architectures do not apply",
    "torch.cuda.cudart": "no NPU equivalent: the CUDA runtime is not present",
    "torch.cuda.OutOfMemoryError": "catch RuntimeError: torch_npu before 2.6.0 raises it for out-of-memory (2.6.0 on "
    "raise torch.OutOfMemoryError, the class this names)",
    "torch.cuda.is_tf32_supported": "no NPU equivalent: TF32 is a CUDA setting",
    "torch.utils.cpp_extension.CUDAExtension": "CUDA C++ extensions do not build for Ascend: port the kernels "
    "to Ascend C custom operators or use torch_npu operators (see cuda_op_list.csv)",
    "torch.utils.cpp_extension.CUDA_HOME": "no CUDA toolkit on Ascend machines",
    "torch.nn.DataParallel": "DataParallel is not supported on NPU: use DistributedDataParallel "
    "(gpu2npu ... distributed) or run on one NPU",
    "torch.nn.parallel.data_parallel": "DataParallel is not supported on NPU: call the module directly "
    "or use DistributedDataParallel",
    "torch.distributed.is_nccl_available": "use torch.distributed.is_hccl_available (added by torch_npu)",
    "apex.amp": "install Ascend apex (its amp API matches) or use torch_npu.npu.amp / torch.autocast('npu')",
    "apex.parallel.convert_syncbn_model": "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) (channel_last has "
    "no counterpart)",
    "apex.parallel.SyncBatchNorm": "torch.nn.SyncBatchNorm takes the same arguments except channel_last and fuse_relu",
    "apex.parallel": "torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False) (torch 2.13: "
    "forward_sync_buffers=False) over the hccl backend (apex broadcasts no buffers after construction); "
    + _ASCEND_APEX,
    "apex.optimizers.FusedAdam": _ASCEND_APEX + " (torch.optim with apex's constructor); here: "
    "torch.optim.AdamW(params, lr, betas, eps, weight_decay=...) (apex's default adam_w_mode=True is AdamW; pass "
    "weight_decay: apex's default is 0.0, AdamW's 0.01; with adam_w_mode=False use torch.optim.Adam)",
    "apex.optimizers.FusedSGD": _ASCEND_APEX + " (torch.optim with apex's constructor); here: "
    "torch.optim.SGD(params, lr, momentum, dampening, weight_decay, nesterov) (same order and update; "
    "wd_after_momentum=True has no torch counterpart)",
    "apex.optimizers.FusedLAMB": "no torch optimizer computes LAMB: torch_npu.optim.NpuFusedLamb(params, lr, betas, "
    "eps, weight_decay) is the NPU one (apex's eps default is 1e-6 as there, its weight_decay 0.01 where "
    "NpuFusedLamb's is 0; apex clips to max_grad_norm=1.0 over all gradients: NpuFusedLamb only with "
    "use_global_grad_norm=True; float32/float16 parameters only)",
    "apex.optimizers": "the torch.optim optimizer of the same algorithm (" + _ASCEND_APEX + "), or "
    "torch_npu.optim's NpuFused* (float32/float16 parameters only)",
    "apex.normalization.FusedRMSNorm": _ASCEND_APEX + " (FusedRMSNorm on torch_npu.npu_rms_norm); here: "
    "torch.nn.RMSNorm(shape, eps=1e-5) from torch 2.4 (pass eps: apex's default is 1e-5, torch's the dtype's "
    "epsilon), or torch_npu.npu_rms_norm(x, weight, epsilon=1e-5)[0]",
    "apex.normalization.MixedFusedRMSNorm": _ASCEND_APEX + " (MixedFusedRMSNorm on torch_npu.npu_rms_norm); here: "
    "torch_npu.npu_rms_norm(x.to(c), weight.to(c), epsilon=1e-5)[0].to(weight.dtype) with c the wider of the two "
    "dtypes (the output has the weight's dtype)",
    "apex.normalization": "use torch.nn.LayerNorm (or torch_npu.npu_rms_norm for RMSNorm)",
    "apex": "NVIDIA apex is CUDA-only: install Ascend apex, or use the torch/torch_npu equivalent",
    "amp_C": "CUDA-only apex extension: remove it (Ascend apex does not ship amp_C)",
    "cupy": "CuPy needs CUDA: use torch operators or numpy",
    "pycuda": "PyCUDA needs CUDA: no NPU equivalent",
    "pynvml": "NVML is NVIDIA-only: query NPUs with npu-smi or torch_npu.npu.mem_get_info / utilization",
    "nvidia_smi": "NVML is NVIDIA-only: query NPUs with npu-smi",
    "GPUtil": "NVIDIA-only: query NPUs with npu-smi or torch_npu.npu APIs",
    "triton": "Triton compiles its kernels for CUDA here (each kernel is listed by name): write them with torch "
    "operators or torch_npu fused operators, or port them to Triton-Ascend",
    "flash_attn.bert_padding": "pure-PyTorch padding helpers: the generated ascend_flash_attn.bert_padding has "
    "index_first_axis, index_put_first_axis, pad_input and unpad_input, and gpu2npu points the import there where "
    "every flash-attn name the file uses has an NPU form; here another does not (or the import names it too): "
    "import only those helpers, or copy them (plain torch indexing)",
    "flash_attn.flash_attn_with_kvcache": "decoding with a KV cache has no flash-attn mapping: on the NPU use "
    "torch_npu.npu_incre_flash_attention (one new token) or torch_npu.npu_fused_infer_attention_score",
    "flash_attn.layers.rotary": "rotary embedding: torch_npu.npu_rotary_mul(x, cos, sin) (x, cos, sin 4-D)",
    "flash_attn.ops.rms_norm": "torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]",
    "flash_attn.ops.triton": "flash-attn's Triton kernels target CUDA: use the torch operators they fuse (torch_npu's "
    "fused operators where one exists)",
    "flash_attn.ops.triton.layer_norm": "torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0] for RMSNorm, "
    "torch.nn.functional.layer_norm for LayerNorm",
    "flash_attn.ops.triton.rotary": "rotary embedding: torch_npu.npu_rotary_mul(x, cos, sin) (x, cos, sin 4-D)",
    "flash_attn.ops.triton.cross_entropy": "torch.nn.functional.cross_entropy computes the same loss",
    "flash_attn.losses.cross_entropy": "torch.nn.functional.cross_entropy computes the same loss",
    **{f"{module}.{function}": "one of flash-attn's attention functions, which gpu2npu points at the generated "
       "ascend_flash_attn package (on torch_npu.npu_fusion_attention) where every flash-attn name the file uses has "
       "an NPU form; here another does not (or the import names it too): import the attention functions in a "
       "statement of their own, or call torch_npu.npu_fusion_attention"
       for module in ("flash_attn", "flash_attn.flash_attn_interface") for function in FLASH_ATTN_FUNCTIONS},
    "flash_attn": "not one of flash-attn's attention functions, which gpu2npu points at the generated "
    "ascend_flash_attn package (on torch_npu.npu_fusion_attention) when a statement imports only those: "
    "use torch_npu.npu_fusion_attention or torch.nn.functional.scaled_dot_product_attention",
    "xformers.ops.SwiGLU": "a file that uses nothing of xformers but memory_efficient_attention, its causal masks "
    "and SwiGLU gets the generated ascend_xformers (SwiGLU on torch_npu.npu_swiglu); here: silu(x @ w1) * (x @ w2) "
    "@ w3: torch_npu.npu_swiglu(torch.cat((x @ w1, x @ w2), -1)) computes silu(a) * b of the two halves in one "
    "kernel; the weights are the module's w12 (or w1, w2) and w3",
    "xformers.ops.fmha.BlockDiagonalMask": "a batch of variable-length sequences: torch_npu.npu_fusion_attention with "
    "input_layout='TND' and actual_seq_qlen/actual_seq_kvlen (the cumulative lengths), or pad the batch",
    "xformers": "use torch.nn.functional.scaled_dot_product_attention or torch_npu.npu_fusion_attention",
    "bitsandbytes.nn": "4/8-bit quantized layers with CUDA kernels only before bitsandbytes 0.47: pin "
    "bitsandbytes>=0.47 (with torch 2.2 or later; its plain PyTorch kernels run them on the NPU, unfused), or fine-tune a bf16 base model "
    "(LoRA without load_in_4bit / BitsAndBytesConfig)",
    "bitsandbytes.optim": "a file that uses only bitsandbytes' Adam, AdamW, SGD, RMSprop or Adagrad optimizers is "
    "migrated to torch optimizers (ascend_bitsandbytes); for the others use the torch optimizer of the same algorithm "
    "(32-bit states: more optimizer memory)",
    "bitsandbytes": "quantization kernels for CUDA only before bitsandbytes 0.47: pin bitsandbytes>=0.47 (with torch "
    "2.2 or later; its plain PyTorch kernels run its layers and functions on the NPU, unfused; its 8-bit and paged optimizers still need "
    "CUDA), or keep the weights in bf16",
    "liger_kernel.transformers.apply_liger_kernel_to_": "drop the call (the model's own torch code runs on the "
    "NPU); for speed, torch_npu.npu_rms_norm, npu_swiglu and npu_rotary_mul replace its RMSNorm, SwiGLU MLP and "
    "rotary embedding",
    "liger_kernel.transformers.LigerCrossEntropyLoss": "torch.nn.CrossEntropyLoss computes the same loss",
    "liger_kernel.transformers.LigerFusedLinearCrossEntropyLoss": "torch.nn.functional.cross_entropy(hidden @ "
    "weight.T, target): the same loss, with the logits materialized (more memory)",
    "liger_kernel.transformers.LigerRMSNorm": "torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]",
    "liger_kernel.transformers.LigerSwiGLUMLP": "torch_npu.npu_swiglu on the concatenated gate and up projections",
    "liger_kernel": "use the model's torch code, or torch_npu fused operators (npu_rms_norm, npu_swiglu, "
    "npu_rotary_mul) for the parts it fuses",
    "transformer_engine.pytorch.fp8_autocast": "FP8 training with Transformer Engine recipes has no counterpart "
    "here: train in bfloat16 (torch.autocast('npu', dtype=torch.bfloat16))",
    "transformer_engine.pytorch.Linear": "torch.nn.Linear(in_features, out_features, bias) (without FP8)",
    "transformer_engine.pytorch.LayerNorm": "torch.nn.LayerNorm(hidden_size, eps)",
    "transformer_engine.pytorch.RMSNorm": "torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]",
    "transformer_engine.pytorch.DotProductAttention": "torch_npu.npu_fusion_attention (or "
    "torch.nn.functional.scaled_dot_product_attention)",
    "transformer_engine": "NVIDIA Transformer Engine is CUDA-only: torch.nn modules in bfloat16, "
    "torch_npu.npu_fusion_attention for attention",
    "ring_flash_attn": "ring attention over flash-attn's CUDA kernels: on Ascend use MindSpeed's context "
    "parallelism, or exchange K/V blocks yourself around torch_npu.npu_fusion_attention",
    "xentropy_cuda_lib": "flash-attn's compiled cross-entropy: torch.nn.functional.cross_entropy computes the same loss",
    "fused_dense_lib": "flash-attn's compiled fused dense layers: torch.nn.functional.linear (and the activation)",
    "rotary_emb": "flash-attn's compiled rotary embedding: torch_npu.npu_rotary_mul(x, cos, sin)",
    "dropout_layer_norm": "flash-attn's compiled dropout + residual + layer norm: torch.nn.functional.dropout, the "
    "addition and torch.nn.functional.layer_norm (or torch_npu.npu_rms_norm for RMS)",
    "deepspeed.ops.transformer.DeepSpeedTransformerLayer": _DEEPSPEED_LAYER,
    "deepspeed.ops.transformer.DeepSpeedTransformerConfig": _DEEPSPEED_LAYER,
    "deepspeed.ops.transformer.transformer": _DEEPSPEED_LAYER,
    "deepspeed.ops.deepspeed4science": _DEEPSPEED + "the Evoformer attention kernel (EvoformerAttnBuilder, CUTLASS): "
    "softmax(q @ k^T * scale + bias) @ v with torch operators, or torch_npu.npu_fusion_attention with the bias as pse",
    "deepspeed.ops.fp_quantizer": _DEEPSPEED + "the FP8/FP6 quantizer and fp8 matmul (FPQuantizerBuilder, Triton): "
    "keep the weights in bfloat16",
    "deepspeed.ops.random_ltd": _DEEPSPEED + "random layer-token drop (RandomLTDBuilder): leave random_ltd out of the "
    "DeepSpeed config",
    "deepspeed.ops.triton_ops": _DEEPSPEED + "these Triton kernels (they compile for CUDA): torch_npu.npu_rms_norm, "
    "npu_rotary_mul and npu_swiglu for the parts they fuse, torch operators for the rest",
    "deepspeed.ops.gds": _DEEPSPEED + "GPUDirect Storage (NVIDIA's): offload to NVMe through deepspeed.ops.aio",
    "deepspeed.inference.v2": _DEEPSPEED + "DeepSpeed-FastGen's ragged kernels: serve with vLLM through the "
    "vllm-ascend plugin",
    **{f"deepspeed.ops.op_builder.{builder}": _DEEPSPEED + f"{builder} (it answers with NotImplementedBuilder, whose "
       "load() raises); it builds FusedAdam, FusedLamb, FusedLion, the CPU optimizers, AsyncIO, Quantizer and "
       "Inference" for builder in DEEPSPEED_CUDA_BUILDERS},
    "vllm.distributed.device_communicators.pynccl": "vLLM's NCCL communicator needs libnccl, which an Ascend machine "
    "has not: vllm-ascend's PyHcclCommunicator (vllm_ascend.distributed.device_communicators.pyhccl) takes the same "
    "arguments (a non-HCCL group or a StatelessProcessGroup, and the device) and has the same all_reduce and broadcast",
    **{part: "vLLM's weight-transfer engines move the weights over NCCL (or CUDA IPC), which an Ascend machine has "
       "not, and vllm-ascend serves without them: broadcast the weights over vllm-ascend's PyHcclCommunicator "
       "(vllm_ascend.distributed.device_communicators.pyhccl) on a StatelessProcessGroup that the server's workers "
       "join" for part in VLLM_WEIGHT_TRANSFER_CUDA},
    "nvidia.dali": "DALI is CUDA-only: use a torch DataLoader pipeline",
    "mamba_ssm.ops": "Mamba's selective-scan kernels are CUDA-only: use the model's torch implementation of the scan "
    "(transformers' Mamba models fall back to it when mamba_ssm is not installed)",
    "mamba_ssm": "mamba_ssm does not install on an NPU machine (it builds its CUDA kernels), so none of its names "
    "can be imported there, plain classes included: use transformers' Mamba models and configurations (their "
    "torch implementation of the scan), or copy what is pure Python",
    "causal_conv1d": "causal-conv1d's kernels are CUDA-only: for x of shape (batch, dim, seqlen) and weight (dim, "
    "width), F.conv1d(F.pad(x, (width - 1, 0)), weight.unsqueeze(1), bias, groups=dim) computes causal_conv1d_fn "
    "(followed by F.silu where activation='silu')",
    "flashinfer": "FlashInfer's attention and sampling kernels are CUDA-only: torch_npu.npu_fusion_attention for "
    "attention, torch operators for sampling (or serve with vLLM through the vllm-ascend plugin)",
    "auto_gptq": "AutoGPTQ's quantized matmul kernels are CUDA-only: load the unquantized model in float16/bfloat16, "
    "or quantize for Ascend with msModelSlim",
    "awq": "AutoAWQ's quantized matmul kernels are CUDA-only: load the unquantized model in float16/bfloat16, or "
    "quantize for Ascend with msModelSlim",
    "spconv": "spconv's sparse convolutions are CUDA-only: no NPU build (a dense torch convolution computes the same "
    "on a dense grid)",
    "gpustat": "gpustat reads NVIDIA's NVML: on Ascend read npu-smi, or torch_npu.npu.memory_allocated() and "
    "torch_npu.npu.mem_get_info()",
    "tensorrt": "TensorRT is NVIDIA-only: use Ascend ATC/AscendCL for inference",
    "torch2trt": "TensorRT is NVIDIA-only: use Ascend ATC/AscendCL for inference",
    "torch_tensorrt": "TensorRT is NVIDIA-only: use Ascend ATC/AscendCL (or torch.compile) for inference",
    "numba.cuda": "numba CUDA kernels do not run on NPU: use torch operators",
    "sonicmoe": "SonicMoE's fused MoE kernels are CuTe DSL kernels for NVIDIA GPUs: " + _TORCH_EXPERTS,
    "transformers.integrations.sonicmoe": "transformers' SonicMoE experts load CuTe DSL kernels that need CUDA: "
    + _TORCH_EXPERTS,
    "deep_ep": "DeepEP's expert-parallel dispatch and combine kernels run over NVLink and RDMA with NVSHMEM, on "
    "NVIDIA GPUs only: on the NPU dispatch and combine the tokens with torch_npu.npu_moe_distribute_dispatch and "
    "npu_moe_distribute_combine, or torch.distributed.all_to_all_single over HCCL",
    "deep_gemm": "DeepGEMM's FP8/BF16 grouped GEMM kernels are compiled for NVIDIA Hopper and later: torch.matmul in "
    "bfloat16, or torch_npu.npu_grouped_matmul for grouped expert matmuls",
    "transformers.integrations.deepgemm": "transformers' DeepGEMM experts and linears load DeepGEMM's kernels for "
    "NVIDIA Hopper and later: " + _TORCH_EXPERTS,
    "torch.nn.attention.varlen": "torch.nn.attention.varlen (varlen_attn and its helpers) runs torch's "
    "Flash-Attention and cuDNN CUDA kernels, which torch_npu has no NPU kernel for: torch_npu.npu_fusion_attention "
    "takes varlen_attn's packed sequences (input_layout=\"TND\", actual_seq_qlen and actual_seq_kvlen: the "
    "cumulative ends, cu_seq without its leading 0)",
    FLEX_ATTENTION: _FLEX_ATTENTION + "the mask that mask_mod describes handed "
    "to torch.nn.functional.scaled_dot_product_attention (or torch_npu.npu_fusion_attention) computes the same",
    FLEX_ATTENTION_CHOICE: _FLEX_ATTENTION + "attn_implementation=\"sdpa\" runs torch_npu's fused "
    "attention",
    "helion": f"Helion compiles its kernels through Triton for CUDA (each kernel is listed by name): write what "
    f"each computes {_KERNEL_INSTEAD}Triton-Ascend",
    "cutlass": f"CUTLASS and its CuTe DSL compile kernels for NVIDIA GPUs only: write what the kernel computes "
    f"{_KERNEL_INSTEAD}Ascend C",
    "cuda": "NVIDIA's CUDA Python (cuda.bindings: the driver, runtime and NVRTC; cuda.core; cuTile's cuda.tile) needs "
    "the CUDA driver: streams, events and memory through torch_npu.npu (current_stream(), Event, mem_get_info()), "
    "kernels as torch operators, torch_npu fused operators or Ascend C",
    "Tensor.cuda": "rewrite as .npu() (left because it stands in code already branching on device)",
    **dict.fromkeys(CUDA_BUILD_BINDINGS, "a binding that only CUDA builds of torch have (torch_npu "
                    "runs on a CPU build of torch, which raises AttributeError here): torch_npu's counterparts are "
                    "under torch_npu._C, wrapped by torch_npu.npu's functions; or leave it behind a CUDA test"),
}

# torch's profiler asked for CUDA's activity: it records nothing of the NPU (torch_npu.profiler does).
PROFILER_CUDA_ACTIVITY = frozenset({"torch.profiler.ProfilerActivity.CUDA", "torch.autograd.profiler.ProfilerActivity.CUDA",
                                    "torch._C._profiler.ProfilerActivity.CUDA"})

# The CUDA-only packages whose imports gpu2npu can point at a package it generates (rules.reroute:
# ascend_flash_attn, ascend_xformers, ascend_bitsandbytes, ascend_apex), where the package has
# every name a file imports.
REROUTED_PACKAGES = ("flash_attn", "xformers", "bitsandbytes", "apex")

# Third-party modules that only work with NVIDIA GPUs: importing one is reported.
CUDA_ONLY_PACKAGES = (
    "apex", "amp_C", "cupy", "pycuda", "pynvml", "nvidia_smi", "GPUtil", "triton", "flash_attn",
    "xformers", "bitsandbytes", "nvidia.dali", "tensorrt", "torch2trt", "torch_tensorrt", "numba.cuda",
    "liger_kernel", "transformer_engine", "ring_flash_attn", "xentropy_cuda_lib", "fused_dense_lib", "rotary_emb",
    "dropout_layer_norm", "mamba_ssm", "causal_conv1d", "flashinfer", "auto_gptq", "awq", "spconv", "gpustat",
    # NVIDIA's kernel languages and CUDA Python: CUTLASS / CuTe DSL, cuda.bindings, cuda.core, cuTile
    "cutlass", "cuda", "helion",
    # MoE and GEMM kernels for Hopper/Blackwell (CuTe DSL, CUDA), and transformers' integrations that load them
    "sonicmoe", "deep_gemm", "deep_ep", "transformers.integrations.sonicmoe", "transformers.integrations.deepgemm",
    # the parts of DeepSpeed (which has an NPU accelerator) and of vLLM (vllm-ascend) that have no NPU build
    "deepspeed.ops.transformer.DeepSpeedTransformerLayer", "deepspeed.ops.transformer.DeepSpeedTransformerConfig",
    "deepspeed.ops.transformer.transformer", "deepspeed.ops.deepspeed4science", "deepspeed.ops.fp_quantizer",
    "deepspeed.ops.random_ltd", "deepspeed.ops.triton_ops", "deepspeed.ops.gds", "deepspeed.inference.v2",
    *(f"deepspeed.ops.op_builder.{builder}" for builder in DEEPSPEED_CUDA_BUILDERS),
    "vllm.distributed.device_communicators.pynccl", *VLLM_WEIGHT_TRANSFER_CUDA,
)

# Values of transformers' attn_implementation that need something Ascend lacks (the flash-attn
# package in some releases; torch's flex_attention, which refuses NPU tensors): the rule that
# decides them (rules/transformers_attention.py) and the scan's words read them here.
TRANSFORMERS_ATTENTION_VALUES = ("flash_attention_2", "flex_attention")

# Another framework's CUDA build or execution provider, named in a string: a pip requirement of a
# `-gpu` build (onnxruntime-gpu, paddlepaddle-gpu, faiss-gpu), an extra for CUDA (`jax[cuda12]`),
# ONNX Runtime's CUDA and TensorRT providers.  What a device test chooses with one is CUDA-only.
CUDA_BUILD_STRING = re.compile(r"^[A-Za-z][\w.]*-gpu(\b|[<>=!~;\[ ])|^[A-Za-z][\w.-]*\[cuda\w*\]|"
                               r"^(CUDA|Tensorrt|NvTensorRtRtx)ExecutionProvider$")

# Fields of CUDA's device properties that torch_npu's have not (theirs: name, total_memory and
# the NPU's core counts).
CUDA_PROPERTY_FIELDS = frozenset({
    "major", "minor", "multi_processor_count", "max_threads_per_multi_processor", "regs_per_multiprocessor",
    "warp_size", "gcnArchName", "is_integrated", "is_multi_gpu_board", "max_threads_per_block",
    "shared_memory_per_block", "shared_memory_per_multiprocessor", "uuid",
})

# Short names that code calls a CUDA-only package by in its own questions (`is_bnb_available()`,
# `is_te_available()`).
PACKAGE_SHORT_NAMES = {"bitsandbytes": ("bnb",), "transformer_engine": ("te",)}

# NVIDIA's management library (the nvidia-smi of Python): its rows are of a kind of their own
# (NPU924), as the kernel languages' are (KERNEL_LANGUAGE_PACKAGES); the other CUDA-only
# packages' are NPU916's.
# Packages built on torch, which load it when imported (but not torch_npu): a script that reaches the
# device through them (`AutoModelForCausalLM.from_pretrained(...).npu()`) needs torch_npu itself.
TORCH_FRAMEWORKS = frozenset({"transformers", "accelerate", "trl", "peft", "diffusers", "lightning",
                              "pytorch_lightning", "timm", "torchvision", "torchaudio", "deepspeed", "ultralytics",
                              "open_clip", "sentence_transformers", "torchtune", "litgpt", "unsloth", "vllm",
                              "liger_kernel", "bitsandbytes", "xformers", "flash_attn", "apex", "torchmetrics"})
NVIDIA_MANAGEMENT_PACKAGES = ("pynvml", "nvidia_smi", "GPUtil", "gpustat")


# torch optimizers with a fused implementation -> the ATen operator `fused=True` runs (torch_npu has
# an NPU kernel for it or not: has_fused_kernel)
FUSED_OPTIMIZERS = {"torch.optim.Adam": "_fused_adam_", "torch.optim.AdamW": "_fused_adamw_",
                    "torch.optim.adamw.AdamW": "_fused_adamw_", "torch.optim.SGD": "_fused_sgd_",
                    "torch.optim.Adagrad": "_fused_adagrad_"}


def has_fused_kernel(api: ApiData, optimizer: str) -> bool:
    """Whether the release has an NPU kernel for the fused update of the optimizer (qualified name)."""
    kernel = FUSED_OPTIMIZERS.get(optimizer)
    return kernel is not None and kernel in api.native_functions | api.custom_functions


# What makes a function a Triton kernel (compiled for CUDA): one row names it, not its calls.
# Decorators that make a function a kernel of a GPU kernel language (or the host function that
# compiles and launches its kernels) -> the language.  Such a function is one row, at its name:
# what must be rewritten is the kernel, not each of the hundred operations of the language in it.
KERNEL_DECORATORS = {
    "triton.jit": "Triton", "triton.autotune": "Triton", "triton.heuristics": "Triton",
    "cutlass.cute.kernel": "CuTe DSL", "cutlass.cute.jit": "CuTe DSL",
    "cuda.tile.kernel": "cuTile",
    # (PyTorch's Helion writes kernels that it compiles to Triton, for CUDA)
    "helion.kernel": "Helion",
}
# The packages of those languages: their names used inside a kernel are the kernel's row.
KERNEL_PACKAGES = ("triton", "cutlass", "cuda", "helion")
# The packages that are GPU kernel languages, imported (NPU929): those, and numba's CUDA kernels.
KERNEL_LANGUAGE_PACKAGES = KERNEL_PACKAGES + ("numba.cuda",)
# Names under which a module of the project hands Triton on (`from vllm.triton_utils import tl,
# triton`, DeepSpeed's `from deepspeed.ops.triton_ops._triton import triton, tl`, a project's own
# `from .utils import triton`): they stand for Triton itself, so that the kernels written with them
# are found and named, one row each, as where Triton is imported directly.
HANDED_ON = {"triton": "triton", "tl": "triton.language"}


def handed_on(module: str, name: str) -> Optional[str]:
    """What `from module import name` binds where `module` (relative ones too) hands on a kernel
    language under its usual name; None for any other import."""
    target = HANDED_ON.get(name)
    if target is None or module.lstrip(".") == "triton" or module.startswith("triton."):
        return None
    return target


def kernel_language(decorators) -> Optional[str]:
    """The kernel language of a function with these decorators (qualified names), or None."""
    return next((KERNEL_DECORATORS[name] for name in sorted(decorators) if name in KERNEL_DECORATORS), None)


# Words of a name that name the NPU: a package of the project named with one (Liger's
# `ops/backends/_ascend/`, DeepSpeed's `op_builder/npu/`) or a module (`npu_kernels.py`) is the
# project's own NPU backend, whose Triton kernels are written for Triton-Ascend.  Whole words only:
# `input_batch.py` names no NPU.
NPU_NAME_WORDS = frozenset({"npu", "ascend"})


def names_the_npu(name: str) -> bool:
    """Whether a file's or folder's name is one of the NPU's (`_ascend`, `npu_ops.py`, `Ascend-Kernels`)."""
    return not NPU_NAME_WORDS.isdisjoint(re.split(r"[_.\-]+", name.lower()))


def kernel_tip(name: str, language: str = "Triton") -> str:
    if language == "Triton":
        return f"{name} is compiled by Triton for CUDA: write what it computes {_KERNEL_INSTEAD}Triton-Ascend"
    if language == "Helion":
        return (f"{name} is a Helion kernel, which compiles through Triton for CUDA: write what it computes "
                f"{_KERNEL_INSTEAD}Triton-Ascend")
    return (f"{name} is a {language} kernel, which compiles for NVIDIA GPUs only: "
            f"write what it computes {_KERNEL_INSTEAD}Ascend C")


# torch's way of sharing a tensor with another process by its IPC handle: for an NPU tensor it needs
# torch_npu.multiprocessing.reductions (rebuild_npu_tensor), which the releases before it lack.
REDUCE_TENSOR = "torch.multiprocessing.reductions.reduce_tensor"


def shares_npu_tensors(api: ApiData) -> bool:
    """Whether the release can share an NPU tensor between processes (reduce_tensor works there)."""
    return api.module_has("torch_npu.multiprocessing.reductions", "rebuild_npu_tensor")


def cuda_only_package(name: str, own: FrozenSet[str] = frozenset()) -> Optional[str]:
    """The CUDA-only package (of CUDA_ONLY_PACKAGES) that the qualified `name` belongs to, if any;
    None where the name's top-level package is one of the project's `own` (Options.own_packages)."""
    if own and name.split(".", 1)[0] in own:
        return None
    for package in CUDA_ONLY_PACKAGES:
        if name == package or name.startswith(package + "."):
            return package
    return None


# torch.cuda's CUDA-graph API: torch_npu.npu has it under the same names in some releases only.
CUDA_GRAPH_NAMES = frozenset({"CUDAGraph", "graph", "graphs", "make_graphed_callables", "graph_pool_handle"})


# liger-kernel's own Ascend backend (its releases from 0.6.5 on) compiles its Triton kernels with
# triton-ascend, which pairs with torch_npu 2.6.0 and later; Liger documents torch_npu 2.9.0.
LIGER_ASCEND_TORCH = (2, 6)
LIGER_ON_ASCEND = ("runs on the NPU through liger-kernel's Ascend backend (liger-kernel 0.6.5 and later) where "
                   "triton-ascend is installed from the Ascend mirror (Liger documents torch_npu 2.9.0, triton-ascend "
                   "3.2.2, CANN 9.1.0)")


# Packages of CUDA kernels (CUDA_ONLY_PACKAGES) with an Ascend backend of their own from a torch
# release on: package -> (that release's (major, minor), the note its uses get there).
ASCEND_BACKENDS = {"liger_kernel": (LIGER_ASCEND_TORCH, LIGER_ON_ASCEND)}


def ascend_backend_note(package: Optional[str], api: ApiData) -> Optional[str]:
    """The note for a use of `package` where the release runs it through its own Ascend backend;
    None where it does not (the use is then unsupported)."""
    backend = ASCEND_BACKENDS.get(package)
    return backend[1] if backend is not None and api.version_tuple[:2] >= backend[0] else None


def _liger_tip(name: str, api: Optional[ApiData]) -> str:
    instead = _tip_of_table(name)
    release = "an older torch_npu" if api is None else f"torch_npu {api.torch_npu_version}"
    return (f"liger-kernel's Ascend backend (0.6.5 on) needs triton-ascend, for torch_npu 2.6.0 and later; with "
            f"{release}: {instead}; or choose a -v of 2.6.0 or later")


def _tip_of_table(name: str) -> Optional[str]:
    for key in sorted(TIPS, key=len, reverse=True):
        if name == key or name.startswith(key + ".") or (key.endswith("_") and name.startswith(key)):
            return TIPS[key]  # a key ending in "_" names a family (apply_liger_kernel_to_llama, ..._mistral)
    return None


def tip_for(name: str, api: Optional[ApiData] = None) -> str:
    if name == "liger_kernel" or name.startswith("liger_kernel."):
        return _liger_tip(name, api)
    short = name[len("torch.cuda."):] if name.startswith("torch.cuda.") else None
    if short is not None and short.split(".")[0] in NOT_EQUIVALENT:
        return NOT_EQUIVALENT[short.split(".")[0]]
    if short is not None and api is not None and short.split(".")[0] in CUDA_GRAPH_NAMES:
        # (asked only where the release lacks it: what it has is renamed by NPU113)
        return (f"torch_npu {api.torch_npu_version} has no counterpart of this part of CUDA graphs (releases with NPU "
                "graphs have torch_npu.npu.NPUGraph, graph, make_graphed_callables): run the captured code eagerly "
                "(where the project captures in a wrapper of its own, turn off the option that chooses it, or call "
                "the model directly), or choose a -v whose torch_npu has it")
    tip = _tip_of_table(name)
    if tip is not None:
        return tip
    if short is not None and api is not None and private_path(short):
        return (f"left as written: a private name, and gpu2npu's record of torch_npu {api.torch_npu_version} lists "
                f"public names only, so whether torch_npu.npu.{short} exists there is not known (torch_npu mirrors "
                "many of torch.cuda's private helpers): where the release's torch_npu/npu sources define it, call "
                "it under that name; else rework or guard it")
    if short is not None and api is not None:
        return f"torch_npu {api.torch_npu_version} has no torch_npu.npu.{short}: no NPU equivalent, rework or guard it"
    return "no NPU equivalent known"


# torch.cuda names of classes that torch_npu raises itself from a release on (its caching
# allocator's TORCH_CHECK_WITH(OutOfMemoryError, ...), where it raised RuntimeError before 2.6.0):
# `except torch.cuda.OutOfMemoryError` catches the NPU's error there as written.
RAISED_BY_TORCH_NPU = {"torch.cuda.OutOfMemoryError": (2, 6)}


def raised_by_torch_npu(name: str, api: ApiData) -> Optional[str]:
    """The note of a torch.cuda exception class that the release's torch_npu raises itself, or None."""
    since = RAISED_BY_TORCH_NPU.get(name)
    if since is None or api.version_tuple[:2] < since:
        return None
    return (f"left as written: torch_npu {api.torch_npu_version} raises the class this names for the NPU's errors "
            f"too (torch.OutOfMemoryError), so the code catches them as written")


def private_path(path: str) -> bool:
    """Whether a dotted path below torch.cuda names something private (`memory._record_memory_history`),
    which the release data (public names only) cannot decide on."""
    return any(part.startswith("_") and not part.endswith("__") for part in path.split("."))


def migratable_cuda_path(api: ApiData, path) -> bool:
    """Whether torch.cuda.<path> may be renamed to torch_npu.npu.<path>."""
    return api.npu_has(path) and not (path and path[0] in NOT_EQUIVALENT)
