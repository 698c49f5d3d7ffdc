"""CUDA assumptions that survive a migration silently: code that runs on the NPU but decides
otherwise, or fails later, because it asks CUDA questions.

The rules cannot rewrite these (what the code wants is not certain), and the leftover analysis
looks for CUDA names, which these are not: `torch.version.cuda` is None on an NPU machine, a
device's `major` does not exist there, `torch.compile`'s default backend and its modes, inductor
settings and Triton kernels are CUDA code generation, bitsandbytes is reached through other
libraries' options (`optim="paged_adamw_32bit"`, `load_in_4bit=True`), and a probe for a CUDA-only
package by name (`find_spec("flash_attn")`, `importlib.metadata.version("flash-attn")`) is None or
raises where that package is not installed.  Each is reported once
per line with what it does on the NPU and the NPU way.

It reads the original file with `ast` (every file, changed or not, like the advice), so its
line numbers are the input's.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Set

from .apidata import ApiData
from .change import Finding, Report
from .finding_kinds import (COMPILE, CUDA_HANDLES, FUSED_OPTIMIZER, GPU_IDENTITY, GPU_KERNELS, LOCAL_TORCH_CUDA,
                            PACKAGE_PROBE, PROFILER, QUANTIZATION, RAY_GPUS, TF32_ADVICE)
from .rules import REROUTING_RULES
from .rules.reroute import probe_label
from .scan import FileScan
from .tips import FUSED_OPTIMIZERS, has_fused_kernel, kernel_language, kernel_tip, migratable_cuda_path


# A file none of whose bytes match holds none of these: it is not walked.
_MIGHT_HAVE_HAZARD = re.compile(
    rb"version\.cuda|import cuda|get_device_propert|(?<!re)\.compile\b|import compile|_inductor|float32_matmul_precision|8bit|32bit"
    rb"|bnb|load_in_|BitsAndBytes|Bitsandbytes|triton|get_kernel|ademamix|find_spec|version\(|get_distribution"
    rb"|fp32_precision|get_gpu_ids|use_gpu|reduce_tensor|ProfilerActivity|use_cuda|use_device|cuda_stream|fused=True|fused = True"
    rb"|cutlass|cuda\.tile|cuda import tile")

# The alternatives above that are plain words: found by a byte search each (the pattern's search
# through a whole file costs a twentieth of a second per megabyte, the words' a fifth of that).
_HAZARD_WORDS = (b"version.cuda", b"import cuda", b"get_device_propert", b"import compile", b"_inductor",
                 b"float32_matmul_precision", b"8bit", b"32bit", b"bnb", b"load_in_", b"BitsAndBytes", b"Bitsandbytes",
                 b"triton", b"get_kernel", b"ademamix", b"find_spec", b"version(", b"get_distribution",
                 b"fp32_precision", b"get_gpu_ids", b"use_gpu", b"reduce_tensor", b"ProfilerActivity", b"use_cuda",
                 b"use_device", b"cuda_stream", b"fused=True", b"fused = True", b"cutlass", b"cuda.tile",
                 b"cuda import tile")


CUDA_STREAM_TIP = ("the raw CUDA stream handle, which CUDA libraries take (cuda-python, CuTe, CUTLASS, cupy): an NPU "
                   "stream has none (its handle, .npu_stream, is for ACL and AscendC code), so the code it is given "
                   "to needs an NPU counterpart (torch operators or torch_npu fused ones)")


# Words holding one of these parts are looked for only where the part is: a file without "cuda"
# is searched once for it, not once for each of the six words holding it.
_SHARED_PARTS = (b"cuda", b"precision", b"bit", b"fused")
_SEARCHES = tuple((part, tuple(word for word in _HAZARD_WORDS if part in word)) for part in _SHARED_PARTS) + tuple(
    (word, ()) for word in _HAZARD_WORDS if not any(part in word for part in _SHARED_PARTS))


def might_have_hazard(data: bytes) -> bool:
    """Whether `data` matches _MIGHT_HAVE_HAZARD, found without running it."""
    for part, words in _SEARCHES:
        if part in data and (not words or any(word in data for word in words)):
            return True
    return _calls_compile(data)


def _calls_compile(data: bytes) -> bool:
    """`(?<!re)\\.compile\\b`: a `.compile` that is not `re.compile` and ends a word."""
    at = data.find(b".compile")
    while at >= 0:
        end = at + len(b".compile")
        following = data[end:end + 1]
        if data[max(at - 2, 0):at] != b"re" and not (following.isalnum() or following == b"_"):
            return True
        at = data.find(b".compile", end)
    return False


# CUDA-only packages that gpu2npu can point at a generated package (the rerouting rules'), by the
# names a probe uses: module name -> generated package; distribution name -> module name
_GENERATED_FOR = {rule.ROOT: rule.PACKAGE for rule in REROUTING_RULES}
_MODULE_OF_DISTRIBUTION = {"flash-attn": "flash_attn", "flash_attn": "flash_attn", "xformers": "xformers",
                           "apex": "apex", "bitsandbytes": "bitsandbytes"}
RAY_SCALING_CONFIGS = frozenset({"ray.train.ScalingConfig", "ray.air.ScalingConfig", "ray.air.config.ScalingConfig"})
# the generated packages that have a __version__ (the CUDA package's release they follow)
_VERSIONED = frozenset(rule.PACKAGE for rule in REROUTING_RULES if "__version__" in rule.PROVIDED.get(rule.ROOT, ()))
_VERSION_CALLS = ("importlib.metadata.version", "importlib_metadata.version", "pkg_resources.get_distribution")

CUDA_VERSION_TIP = (
    "torch.version.cuda is None on an NPU machine: a test of it switches the feature off there, and "
    "parsing it (.split, packaging.version.parse) raises; test what the code needs on the NPU instead "
    "(torch_npu.npu.is_bf16_supported() for bf16), or keep the CUDA version check behind a CUDA test")

# Fields of CUDA's device properties that torch_npu's have not (theirs: name, total_memory and
# the NPU's core counts).
CUDA_PROPERTY_FIELDS = frozenset({
    "major", "minor", "multi_processor_count", "max_threads_per_multi_processor", "regs_per_multiprocessor",
    "warp_size", "gcnArchName", "is_integrated", "is_multi_gpu_board", "max_threads_per_block",
    "shared_memory_per_block", "shared_memory_per_multiprocessor", "uuid",
})

# transformers' optimizer names (TrainingArguments(optim=...)) that build a bitsandbytes optimizer,
# with the torch optimizer name of the same algorithm where one exists.
HF_BITSANDBYTES_OPTIMIZERS: Dict[str, Optional[str]] = {
    "adamw_bnb_8bit": "adamw_torch", "adamw_8bit": "adamw_torch", "paged_adamw_32bit": "adamw_torch",
    "paged_adamw_8bit": "adamw_torch", "rmsprop_bnb": "rmsprop", "rmsprop_bnb_8bit": "rmsprop",
    "rmsprop_bnb_32bit": "rmsprop", "lion_8bit": None, "lion_32bit": None, "paged_lion_32bit": None,
    "paged_lion_8bit": None, "ademamix": None, "ademamix_8bit": None, "paged_ademamix_32bit": None,
    "paged_ademamix_8bit": None, "galore_adamw_8bit": "galore_adamw", "galore_adamw_8bit_layerwise": "galore_adamw_layerwise",
}

QUANTIZED_LOADING_TIP = (
    "4/8-bit loading quantizes the weights with bitsandbytes' CUDA kernels, which the NPU does not have: "
    "load the model in bfloat16 (torch_dtype=torch.bfloat16) and fine-tune it with LoRA without "
    "quantization (more device memory: about 2 bytes per weight instead of 0.5-1)")

# Calls of other libraries' bitsandbytes front doors, by qualified name.
BITSANDBYTES_FRONT_DOORS = {
    "transformers.BitsAndBytesConfig": QUANTIZED_LOADING_TIP,
    "transformers.utils.quantization_config.BitsAndBytesConfig": QUANTIZED_LOADING_TIP,
    "lightning.pytorch.plugins.BitsandbytesPrecision": "Lightning's bitsandbytes precision quantizes the linear "
    "layers with CUDA kernels: use precision=\"bf16-true\" or \"bf16-mixed\" on the NPU",
    "lightning.fabric.plugins.BitsandbytesPrecision": "Lightning's bitsandbytes precision quantizes the linear "
    "layers with CUDA kernels: use precision=\"bf16-true\" or \"bf16-mixed\" on the NPU",
    "pytorch_lightning.plugins.BitsandbytesPrecision": "Lightning's bitsandbytes precision quantizes the linear "
    "layers with CUDA kernels: use precision=\"bf16-true\" or \"bf16-mixed\" on the NPU",
}

INDUCTOR_SETTING_TIPS = {
    "triton.cudagraphs": "captures CUDA graphs around compiled code; the NPU's graph capture is a separate "
    "backend",
    "coordinate_descent_tuning": "tunes Triton kernel launch parameters",
    "max_autotune": "benchmarks Triton/cuBLAS kernel choices",
}


def compile_tip(api: ApiData, call: Optional[ast.Call]) -> str:
    """What torch.compile(...) does on the NPU in `api`'s release, for this call's options."""
    keywords = {k.arg: k.value for k in (call.keywords if call is not None else ()) if k.arg}
    backend = keywords.get("backend")
    backend_name = backend.value if isinstance(backend, ast.Constant) and isinstance(backend.value, str) else None
    mode = keywords.get("mode")
    mode_name = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None
    backends = api.compile_backends
    release = f"torch_npu {api.torch_npu_version}"
    if backends is None:
        what = (f"the data of {release} does not record its torch.compile backends: check whether it has "
                "the 'npu' (torchair) backend")
    elif not backends:
        what = f"{release} has no torch.compile backend for the NPU: leave the model uncompiled"
    elif "inductor" in backends:
        what = (f"{release} ships an inductor code generator for the NPU (its kernels are Triton-Ascend's: "
                "install triton-ascend) and the dynamo backends " + ", ".join(repr(b) for b in backends if b != "inductor")
                + " ('npu' is torchair graph mode)")
    else:
        what = (f"{release} has no inductor code generator for the NPU: the default backend cannot compile for "
                "it; pass backend=" + " or ".join(repr(b) for b in backends) + " (torchair graph mode) or leave the "
                "model uncompiled")
    notes = []
    if backend_name is not None and backend_name not in (backends or ()) and backend_name != "inductor":
        notes.append(f"backend={backend_name!r} is not an NPU backend")
    does = []
    if mode_name in ("max-autotune", "max-autotune-no-cudagraphs"):
        does.append("autotunes Triton/cuBLAS kernels (inductor only)")
    if mode_name in ("reduce-overhead", "max-autotune"):
        does.append("captures CUDA graphs"
                    + (" (the NPU's graph capture is the backend 'npugraph_ex')" if "npugraph_ex" in (backends or ()) else ""))
    if does:
        notes.append(f"mode={mode_name!r} " + " and ".join(does))
    if "fullgraph" in keywords:
        notes.append("fullgraph is dynamo's and holds for every backend")
    return what + ("; " + "; ".join(notes) if notes else "")


class _Hazards:
    def __init__(self, file_scan: "FileScan", path: str, api: ApiData, similar: bool = False) -> None:
        self.path = path
        self.api = api
        # -sim answers torch.cuda.get_device_properties(...).major/.minor (ascend_function)
        self.similar = similar
        self.cuda_properties: Set[str] = set()  # names bound to torch.cuda.get_device_properties(...)
        self.findings: List[Finding] = []
        self.imports = file_scan.imports  # (the scan resolved the file's imports already)
        self.properties: Set[str] = set()  # names bound to get_device_properties(...)
        # The scan's nodes by class give what the look below needs: documentation, assignments,
        # and which names and attributes are part of a longer chain.
        groups = file_scan.groups
        attributes = groups.get(ast.Attribute, ())
        self._inner: Set[int] = {id(node.value) for node in attributes}  # the `a.b` of `a.b.c`: not the top of its chain
        calls = file_scan.calls
        self._callees = {id(call.func) for call in calls}
        documentation = {id(node.value) for node in groups.get(ast.Expr, ()) if node.value.__class__ is ast.Constant}
        for node in groups.get(ast.ClassDef, ()):
            # a class attribute holding a name (`PAGED_ADAMW = "paged_adamw_32bit"` of an enum)
            # defines the name; it is reported where it is chosen
            documentation.update(id(statement.value) for statement in node.body if isinstance(statement, ast.Assign))
        references = [*attributes, *groups.get(ast.Name, ())]
        strings = [node for node in groups.get(ast.Constant, ()) if node.value.__class__ is str]
        assigns = groups.get(ast.Assign, ())
        functions = file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef)
        for assign in assigns:  # once every import is known (function-local ones too)
            if self._is_properties_call(assign.value):
                self.properties.update(t.id for t in assign.targets if isinstance(t, ast.Name))
                if self._is_cuda_properties_call(assign.value):
                    self.cuda_properties.update(t.id for t in assign.targets if isinstance(t, ast.Name))
            self._precision_setting(assign)
        for node in references:
            if id(node) not in self._inner:
                self._reference(node)
        for call in calls:
            self._call(call)
        for node in strings:
            if id(node) not in documentation:
                self._string(node)
        for function in functions:
            self._kernel(function)

    # -- helpers ---------------------------------------------------------------------------
    def _add(self, node: ast.AST, code: str, report: Report, api_name: str, tip: str, api_type: str = "") -> None:
        """A row of the kind `code` (finding_kinds) about `node`."""
        # a function is reported at its def line, not over its body
        end = node.lineno if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else node.end_lineno or node.lineno
        self.findings.append(Finding(self.path, node.lineno, end, report, api_name, tip, code, api_type=api_type))

    def qualified(self, node: ast.AST) -> Set[str]:
        return self.imports.qualified(node)

    def _is_called(self, node: ast.AST) -> bool:
        return id(node) in self._callees

    def _is_properties_call(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get_device_properties"
                and any(n.startswith(("torch.cuda.", "torch.npu.", "torch_npu.npu.")) for n in self.qualified(node.func)))

    def _is_cuda_properties_call(self, node: ast.AST) -> bool:
        return self._is_properties_call(node) and "torch.cuda.get_device_properties" in self.qualified(node.func)

    # -- what is looked at -------------------------------------------------------------------
    def _profiler_tip(self) -> str:
        if self.api.module_has("torch_npu.profiler", "profile"):
            return (f"torch's profiler records no NPU activity: profile with torch_npu.profiler.profile(activities="
                    "[torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU], "
                    "on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(folder)) (torch_npu "
                    f"{self.api.torch_npu_version} has it; its traces open in MindStudio Insight or TensorBoard)")
        return (f"torch's profiler records no NPU activity, and torch_npu {self.api.torch_npu_version} has no "
                "torch_npu.profiler: profile the CPU side only, or choose a release that has it")

    def _reference(self, node: ast.AST) -> None:
        if node.__class__ is ast.Attribute and self._local_torch_cuda(node):
            return
        names = self.qualified(node)
        for name in names:
            if name in ("torch.profiler.ProfilerActivity.CUDA", "torch.autograd.profiler.ProfilerActivity.CUDA",
                        "torch._C._profiler.ProfilerActivity.CUDA"):
                self._add(node, PROFILER.code, Report.UNSUPPORTED, name, self._profiler_tip())
                return
            if name == "torch.version.cuda" or name.startswith("torch.version.cuda."):
                self._add(node, GPU_IDENTITY.code, Report.UNSUPPORTED, "torch.version.cuda", CUDA_VERSION_TIP)
                return
            if name == "torch.compile" and not self._is_called(node):  # @torch.compile
                self._add(node, COMPILE.code, Report.UNSUPPORTED, "torch.compile", compile_tip(self.api, None))
                return
            if name.startswith("torch._inductor.config."):
                setting = name[len("torch._inductor.config."):]
                self._add(node, COMPILE.code, Report.UNSUPPORTED, name, self._inductor_tip(setting))
                return
        if isinstance(node, ast.Attribute):
            if node.attr == "cuda_stream":
                self._add(node, CUDA_HANDLES.code, Report.UNSUPPORTED, "Stream.cuda_stream", CUDA_STREAM_TIP)
                return
            self._property_field(node)

    def _local_torch_cuda(self, node: ast.Attribute) -> bool:
        """`torch.cuda.X` where `torch` is a parameter or local variable of the function, not the
        file's import of torch: left as written (what it holds is not certain), and said; whether so."""
        parts = []
        root = node
        while root.__class__ is ast.Attribute:
            parts.append(root.attr)
            root = root.value
        scopes = self.imports.scopes
        if (root.__class__ is not ast.Name or len(parts) < 2 or parts[-1] != "cuda" or scopes is None
                or root.id not in scopes.names or scopes.of_node(root)
                or "torch" not in self.imports.aliases.get(root.id, ())):
            return False
        path = list(reversed(parts[:-1]))
        if not migratable_cuda_path(self.api, path):
            return False  # (no NPU counterpart: the leftover analysis says what to do, NPU917)
        rest = ".".join(path)
        written = f"{root.id}.cuda.{rest}"
        self._add(node, LOCAL_TORCH_CUDA.code, Report.UNSUPPORTED, written,
                  f"{root.id} is a parameter or variable here, not the torch the file imports, so gpu2npu leaves "
                  f"{written} as written: if it holds the torch module, call torch_npu.npu.{rest} (after import "
                  "torch_npu) where the release has it; CUDA's has no device on an NPU machine")
        return True

    def _inductor_tip(self, setting: str) -> str:
        meaning = next((tip for key, tip in INDUCTOR_SETTING_TIPS.items() if setting == key or setting.startswith(key)),
                       "a setting of inductor's code generation")
        backends = self.api.compile_backends or ()
        if "inductor" in backends:
            where = (f"it applies on the NPU only where torch_npu {self.api.torch_npu_version}'s inductor for the "
                     "NPU (Triton-Ascend kernels) implements it")
        else:
            where = (f"torch_npu {self.api.torch_npu_version} has no inductor for the NPU, so it has no effect "
                     "there (the 'npu' backend is torchair's)")
        return f"inductor setting ({meaning}): {where}"

    def _property_field(self, node: ast.Attribute) -> None:
        if node.attr not in CUDA_PROPERTY_FIELDS:
            return
        value = node.value
        if self.similar and node.attr in ("major", "minor") and (
                self._is_cuda_properties_call(value) or (isinstance(value, ast.Name) and value.id in self.cuda_properties)):
            return  # ascend_function.get_device_properties answers them
        if self._is_properties_call(value) or (isinstance(value, ast.Name) and value.id in self.properties):
            self._add(node, GPU_IDENTITY.code, Report.UNSUPPORTED, f"device properties .{node.attr}",
                      f"torch_npu's device properties have no {node.attr} (they hold name, total_memory and the "
                      "NPU's core counts): a CUDA compute capability or SM count means nothing on the NPU; decide "
                      "with torch_npu.npu.is_bf16_supported() or a fixed choice")

    def _call(self, call: ast.Call) -> None:
        names = self.qualified(call.func)
        if "torch.compile" in names:
            self._add(call.func, COMPILE.code, Report.UNSUPPORTED, "torch.compile", compile_tip(self.api, call))
        elif "torch.set_float32_matmul_precision" in names:
            self._add(call.func, TF32_ADVICE, Report.PERFORMANCE, "torch.set_float32_matmul_precision",
                      "sets whether CUDA computes float32 matmuls in TF32; the NPU's switch for float32 matmuls with "
                      "a shorter mantissa (HF32) is torch_npu.npu.matmul.allow_hf32 ('high' or 'medium' is True, "
                      "'highest' False)", api_type="torch")
        elif any(name.endswith(".get_kernel") and name.split(".")[0] == "kernels" for name in names):
            repo = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            self._add(call.func, GPU_KERNELS.code, Report.UNSUPPORTED, f"kernels.get_kernel({repo!r})" if repo else "kernels.get_kernel",
                      "Hub kernels are compiled for CUDA: for attention use torch_npu.npu_fusion_attention (or SDPA), "
                      "for norms and activations torch_npu.npu_rms_norm / npu_swiglu, otherwise the torch operators")
        elif names & FUSED_OPTIMIZERS.keys() and any(
                k.arg == "fused" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords):
            name = sorted(names & FUSED_OPTIMIZERS.keys())[0]
            kernel = FUSED_OPTIMIZERS[name]
            if not has_fused_kernel(self.api, name):
                short = name.rsplit(".", 1)[-1]
                instead = (f"torch_npu.optim.NpuFused{short} (the same algorithm, fused for the NPU)"
                           if self.api.module_has("torch_npu.optim", f"NpuFused{short}") else "nothing fused")
                self._add(call.func, FUSED_OPTIMIZER.code, Report.UNSUPPORTED, f"{name}(fused=True)",
                          f"torch_npu {self.api.torch_npu_version} has no NPU kernel for aten::{kernel} (it has "
                          f"aten::_fused_adamw_ only), so the first step raises: leave fused out (the foreach "
                          f"implementation runs on the NPU), or use {instead}")
        elif "ray.get_gpu_ids" in names:
            self._add(call.func, RAY_GPUS.code, Report.UNSUPPORTED, "ray.get_gpu_ids",
                      "the GPU ids Ray gave the task: none on an Ascend node; the NPU ids are "
                      "ray.get_runtime_context().get_accelerator_ids()['NPU'] (ids as strings)")
        elif names & RAY_SCALING_CONFIGS and any(
                k.arg == "use_gpu" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords):
            self._add(call.func, RAY_GPUS.code, Report.UNSUPPORTED, "ScalingConfig(use_gpu=...)",
                      "use_gpu reserves a GPU per worker and sets the workers up for CUDA: on an Ascend node ask "
                      "for resources_per_worker={'NPU': 1} instead (use_gpu=False) and train with "
                      "TorchConfig(backend='hccl')")
        elif "torch.multiprocessing.reductions.reduce_tensor" in names and not self.api.module_has(
                "torch_npu.multiprocessing.reductions", "rebuild_npu_tensor"):
            self._add(call.func, CUDA_HANDLES.code, Report.UNSUPPORTED, "torch.multiprocessing.reductions.reduce_tensor",
                      f"torch_npu {self.api.torch_npu_version} cannot share NPU tensors between processes (it has "
                      "no torch_npu.multiprocessing.reductions, which later releases install on import): the handle "
                      "of an NPU tensor cannot be made; send the weights through a collective (dist.broadcast, "
                      "vllm-ascend's PyHcclCommunicator) or as CPU tensors, or choose a release that shares them")
        elif any(name.rsplit(".", 1)[-1] == "find_spec" for name in names):
            self._package_probe(call, spec=True)
        elif any(name in _VERSION_CALLS for name in names):
            self._package_probe(call, spec=False)
        else:
            for name in names:
                tip = BITSANDBYTES_FRONT_DOORS.get(name)
                if tip is not None:
                    self._add(call.func, QUANTIZATION.code, Report.UNSUPPORTED, name.rsplit(".", 1)[-1], tip)
                    return  # its load_in_4bit is part of the same row
        if names & {"torch.autograd.profiler.profile", "torch.profiler.profile", "torch.autograd.profile",
                    "torch.autograd.profiler.record_function"}:
            for keyword in call.keywords:
                cuda = (keyword.arg == "use_cuda" and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)) or (
                    keyword.arg == "use_device" and isinstance(keyword.value, ast.Constant) and keyword.value.value == "cuda")
                if cuda:
                    self._add(keyword.value, PROFILER.code, Report.UNSUPPORTED, f"{sorted(names)[0]}({keyword.arg}=)", self._profiler_tip())
        for keyword in call.keywords:
            if keyword.arg in ("load_in_4bit", "load_in_8bit") and not (
                    isinstance(keyword.value, ast.Constant) and not keyword.value.value):
                self._add(keyword.value, QUANTIZATION.code, Report.UNSUPPORTED, keyword.arg, QUANTIZED_LOADING_TIP)

    def _precision_setting(self, assign: ast.Assign) -> None:
        for target in assign.targets:
            if not (isinstance(target, ast.Attribute) and target.attr == "fp32_precision"):
                continue
            name = next((q for q in sorted(self.qualified(target)) if q.startswith("torch.backends.")), None)
            if name is not None:
                self._add(assign, TF32_ADVICE, Report.PERFORMANCE, name,
                          "sets how CUDA (or cuDNN, oneDNN) computes float32 operations; on the NPU it changes "
                          "nothing. The NPU's choice for float32 matmuls and convolutions with a shorter mantissa "
                          "(HF32, like TF32) is torch_npu.npu.matmul.allow_hf32 / torch_npu.npu.conv.allow_hf32 "
                          "('tf32' is True, 'ieee' False)", api_type="torch")

    def _package_probe(self, call: ast.Call, spec: bool) -> None:
        argument = call.args[0] if len(call.args) == 1 else None
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            return
        name = argument.value
        module = name.split(".")[0] if spec else _MODULE_OF_DISTRIBUTION.get(name)
        package = _GENERATED_FOR.get(module or "")
        if package is None:
            return
        if spec:
            self._add(call, PACKAGE_PROBE.code, Report.UNSUPPORTED, probe_label(name),
                      f"{module} is not installed on an NPU machine: this is None there and the code it guards does "
                      f"not run; gpu2npu points the imports it can map at the generated {package} (and this probe "
                      f"too, in a file whose imports it points there): probe {package!r}, or test for the NPU")
        else:
            instead = (f"the generated {package} has __version__, the {module} release whose signatures it follows: "
                       "read that, or guard the check" if package in _VERSIONED else "guard the check")
            self._add(call, PACKAGE_PROBE.code, Report.UNSUPPORTED, f"version({name!r})",
                      f"{module} is not installed on an NPU machine: this raises there (PackageNotFoundError / "
                      f"DistributionNotFound); {instead}")

    def _string(self, node: ast.Constant) -> None:
        if node.value not in HF_BITSANDBYTES_OPTIMIZERS:
            return
        torch_name = HF_BITSANDBYTES_OPTIMIZERS[node.value]
        instead = (f"use optim={torch_name!r}" + (" or 'adamw_torch_npu_fused' (torch_npu's fused AdamW)"
                                                   if torch_name == "adamw_torch" else "")
                   if torch_name else "choose a torch optimizer (e.g. 'adamw_torch'): this algorithm has none in torch")
        costs = []
        if "8bit" in node.value:
            costs.append("its states are 32-bit: about four times the optimizer memory of the 8-bit ones")
        if node.value.startswith("paged_"):
            costs.append("its states are not paged out to host memory")
        self._add(node, FUSED_OPTIMIZER.code, Report.UNSUPPORTED, f"optimizer name {node.value!r}",
                  f"transformers builds this optimizer with bitsandbytes (CUDA kernels): {instead}"
                  + ("; " + "; ".join(costs) if costs else ""))

    def _kernel(self, function: ast.AST) -> None:
        """One row for a function that a kernel language compiles (`@triton.jit`, `@cute.kernel`)."""
        for decorator in function.decorator_list:  # type: ignore[attr-defined]
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            language = kernel_language(self.qualified(target))
            if language is not None:
                self._add(function, GPU_KERNELS.code, Report.UNSUPPORTED, f"{language} kernel {function.name}",  # type: ignore[attr-defined]
                          kernel_tip(function.name, language))  # type: ignore[attr-defined]
                return


def _may_reach_cuda_through_a_local(data: bytes, file_scan: "FileScan") -> bool:
    """Whether a local or parameter named like the imported torch may read `.cuda.` (NPU923): only
    a file with names that depend on the place has such a local."""
    scopes = file_scan.imports.scopes
    return scopes is not None and b".cuda." in data and any(
        "torch" in file_scan.imports.aliases.get(name, ()) for name in scopes.names)


def hazards_for_source(data: bytes, file_scan: Optional["FileScan"], path: str, api: ApiData,
                       similar: bool = False) -> List[Finding]:
    """The rows for one parsed file ([] when nothing in its bytes can be one), from its scan
    (None: the file could not be parsed); `similar`: a -sim run."""
    if file_scan is None or not (might_have_hazard(data) or _may_reach_cuda_through_a_local(data, file_scan)):
        return []
    try:
        return sorted(set(_Hazards(file_scan, path, api, similar).findings))
    except RecursionError:
        return []
