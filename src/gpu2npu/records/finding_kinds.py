"""Every kind of report row that no rewrite rule makes, declared as a rule is: its code, title,
the level `check` gives it, why it matters on Ascend, the NPU way, examples that produce it and
code it must leave alone (both run as tests, test_first_hour).

The producers (the API rows of the scan, the hazards, the leftover analysis, the -api rows) give
each row the code of its kind; the reports carry it (the last column of unsupported_api.csv,
unknown_api.csv and api_performance_advice.csv), `check` prints it, SARIF's `driver.rules` carry
its help, and `gpu2npu rules` / `gpu2npu explain CODE` list and explain it.  This module imports
nothing of the tool: whatever produces or shows a row can import it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

UNSUPPORTED_CSV = "unsupported_api.csv"
UNKNOWN_CSV = "unknown_api.csv"
PERFORMANCE_CSV = "api_performance_advice.csv"
LOG = "the run log"

# What `check` makes of a kind's rows: an error fails the gate (a human must act); a kind that is
# "not checked" is information for the migration's reports only.
ERROR = "error"
NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class FindingKind:
    code: str
    name: str  # what `gpu2npu rules` lists beside the code, as it lists a rule's class
    title: str
    level: str  # ERROR or NOT_CHECKED
    why: str  # why the construct matters on Ascend
    npu_way: str  # what to do instead
    # (source, the OP of the row it produces, the report it stands in)
    examples: Tuple[Tuple[str, str, str], ...]
    # sources that must produce no row of this kind
    unchanged: Tuple[str, ...] = ()
    # the affected library APIs (-api: API, why) the examples are checked with
    example_apis: Tuple[Tuple[str, str], ...] = ()
    # what the project pins where the examples stand (records.options.ProjectPins: library, requirement)
    example_pins: Tuple[Tuple[str, str], ...] = ()

    @property
    def description(self) -> str:
        return f"{self.why}\n\nOn the NPU: {self.npu_way}"


KINDS: Dict[str, FindingKind] = {}


def _kind(*args, **kwargs) -> FindingKind:
    kind = FindingKind(*args, **kwargs)
    assert kind.code not in KINDS, kind.code
    KINDS[kind.code] = kind
    return kind


NOT_ANALYSED = _kind(
    "NPU901", "NotAnalysed",
    "a file the running Python cannot parse: its API calls and hazards were not analysed", ERROR,
    "The API rows and the hazards are read from Python's own parse of the file. A file of newer syntax than the "
    "Python that runs gpu2npu (a `type` statement under 3.11), or a broken one, is migrated by the rules where "
    "libcst reads it, but nothing tells what its torch calls need.",
    "run gpu2npu with the Python the project needs, or mend the syntax.",
    (("import torch\nx = torch.zeros(1)\nprint 'done'\n", "syntax this Python cannot parse", UNKNOWN_CSV),),
    ("import torch\nx = torch.zeros(1)\nprint('done')\n",),
)

NO_NPU_KERNEL = _kind(
    "NPU902", "NoNPUKernel", "a torch operator the chosen torch_npu release has no NPU kernel for", ERROR,
    "torch_npu registers an NPU kernel for most aten operators, not all (its npu_native_functions.yaml lists "
    "them). An operator without one falls back to the CPU at best, with a copy each way, or raises.",
    "replace the call with operators the release has, move it off the hot path, or let `gpu2npu -sim` call an "
    "exact NPU equivalent where one is known.",
    (("import torch\nd = torch.hypot(a, b)\n", "torch.hypot", UNSUPPORTED_CSV),),
    ("import torch\ny = torch.matmul(a, b)\n",),
)

NEWER_TORCH = _kind(
    "NPU903", "NewerTorch", "an API or keyword that the torch the release is built for does not have yet", ERROR,
    "Each torch_npu release is built for one torch version (-v). Code written against a newer torch calls "
    "functions, passes keywords or sets inductor and dynamo settings that this torch lacks: AttributeError or "
    "TypeError at run time (torch's configuration modules refuse a setting they do not declare). The names "
    "one torch release added at one place are one row.",
    "choose the -v of the project's own torch, or write it with what that torch has.",
    (("import torch\nnorm = torch.nn.RMSNorm(512)\n", "torch.nn.RMSNorm", UNSUPPORTED_CSV),
     ("from torch.distributed.tensor import DTensor, Replicate\nx = DTensor.from_local(t, mesh, [Replicate()])\n",
      "torch.distributed.tensor.DTensor.from_local, torch.distributed.tensor.Replicate", UNSUPPORTED_CSV),
     ("import torch\ntorch._inductor.config.fx_graph_cache = True\n", "torch._inductor.config.fx_graph_cache",
      UNSUPPORTED_CSV)),
    ("import torch\nnorm = torch.nn.LayerNorm(512)\n",),
)

UNKNOWN_SUPPORT = _kind(
    "NPU904", "UnknownSupport",
    "a torch name or operator whose NPU support the release data cannot decide", NOT_CHECKED,
    "The name is not in PyTorch's public API lists, calls a custom operator namespace, or is a method that "
    "lacks an NPU kernel if its receiver is a tensor: gpu2npu cannot tell whether it runs on the NPU. A custom "
    "operator that the file itself gives a Python kernel for every device runs that function, whose calls have "
    "their own rows: its call has none.",
    "check that it exists for this torch version and that its library registers an NPU (PrivateUse1) kernel.",
    (("import torch\nx = torch.not_a_real_api(3)\n", "torch.not_a_real_api", UNKNOWN_CSV),
     ("import torch\ny = torch.ops.mylib.fused(x)\n", "torch.ops.mylib.fused", UNKNOWN_CSV)),
    ("import torch\nx = torch.ones(3)\n",
     "import torch\nlib = torch.library.Library('mylib', 'FRAGMENT')\nlib.define('scale(Tensor x) -> Tensor')\n"
     "lib.impl('scale', lambda x: x * 2, 'CompositeExplicitAutograd')\ny = torch.ops.mylib.scale(x)\n"),
)

COMPILE = _kind(
    "NPU905", "Compile", "torch.compile and its options, which depend on the release's compiler backends", ERROR,
    "torch.compile's default backend is inductor, which generates Triton kernels for CUDA. Most torch_npu "
    "releases have no inductor for the NPU; their compiler backend is torchair's 'npu'. dynamo's eager "
    "backends ('eager', 'aot_eager') run torch's own operators and work on the NPU as written.",
    "compile with backend='npu' after `import torchair` (or the release's inductor where it has one), or run "
    "eagerly.",
    (("import torch\nmodel = torch.compile(model)\n", "torch.compile", UNSUPPORTED_CSV),),
    ("import torch\nmodel = torch.compile(model, backend='npu')\n",
     "import torch\nmodel = torch.compile(model, backend='aot_eager')\n"),
)

INDUCTOR_SETTING = _kind(
    "NPU928", "InductorSetting", "an inductor setting, which applies only where inductor compiles for the NPU",
    NOT_CHECKED,
    "torch._inductor.config tunes inductor's code generation (Triton kernels, autotuning, CUDA graphs). Where the "
    "release has no inductor for the NPU it has no effect; where it has one (torch_npu 2.6 on, Triton-Ascend "
    "kernels) a setting applies as far as that code generator implements it. Nothing fails and nothing is to be "
    "done either way: a note in the log says what the setting does, and `check` does not count it (the compile "
    "call itself is NPU905).",
    "nothing; drop settings that do not apply, or keep them for the release's inductor.",
    (("import torch._inductor.config as config\nconfig.coordinate_descent_tuning = True\n",
      "torch._inductor.config.coordinate_descent_tuning", LOG),),
    # llm.c: a parameter named like the imported inductor config is the caller's object
    ("import torch._inductor.config as config\n\n\ndef build(config):\n    return config.n_embd\n",),
)

GPU_IDENTITY = _kind(
    "NPU906", "GPUIdentity", "a CUDA version or GPU property read to choose what runs", ERROR,
    "torch.version.cuda is None under torch_npu, and torch_npu's device properties have no compute capability or "
    "SM count: code that compares them raises, or takes the branch meant for old GPUs.",
    "decide with torch_npu.npu.is_bf16_supported() or a fixed choice; read the CANN version where a version is "
    "needed.",
    (("import torch\nmajor = int(torch.version.cuda.split('.')[0])\n", "torch.version.cuda", UNSUPPORTED_CSV),
     ("import torch\nprops = torch.cuda.get_device_properties(0)\nsms = props.multi_processor_count\n",
      "device properties .multi_processor_count", UNSUPPORTED_CSV)),
    ("import torch\nprops = torch.cuda.get_device_properties(0)\nprint(props.total_memory)\n",),
)

PROFILER = _kind(
    "NPU907", "Profiler", "torch's profiler asked for CUDA activity", ERROR,
    "torch's profiler records no NPU activity: asking it for CUDA events records nothing on the device.",
    "profile with torch_npu.profiler.profile (activities CPU and NPU), where the release has it.",
    (("import torch\nfrom torch.profiler import ProfilerActivity, profile\n"
      "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:\n    step()\n",
      "torch.profiler.ProfilerActivity.CUDA", UNSUPPORTED_CSV),),
    ("import torch\nfrom torch.profiler import ProfilerActivity, profile\n"
     "with profile(activities=[ProfilerActivity.CPU]) as p:\n    step()\n",),
)

CUDA_HANDLES = _kind(
    "NPU908", "CUDAHandles", "a raw CUDA handle: a stream pointer, a tensor shared between processes", ERROR,
    "Stream.cuda_stream is a CUDA pointer handed to CUDA libraries; sharing a device tensor between processes "
    "needs an IPC handle that not every torch_npu release can make.",
    "hand NPU streams to NPU libraries only; send weights through a collective or as CPU tensors.",
    (("import torch\nhandle = torch.cuda.current_stream().cuda_stream\n", "Stream.cuda_stream", UNSUPPORTED_CSV),),
)

GPU_KERNELS = _kind(
    "NPU909", "GPUKernels",
    "a GPU kernel of the project's own (Triton, CuTe) or a kernel compiled for CUDA on the Hub", ERROR,
    "Triton compiles its kernels for CUDA here and CuTe kernels are CUDA; kernels fetched from the Hub are CUDA "
    "binaries. Each kernel is one row, at its name, not one per call inside it.",
    "write the kernel with torch operators or torch_npu fused operators, or port it to Triton-Ascend or Ascend C.",
    (("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef add_kernel(x_ptr, n):\n"
      "    offsets = tl.arange(0, 16)\n    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))\n",
      "Triton kernel add_kernel", UNSUPPORTED_CSV),),
    ("import triton\n\n\ndef grid(n):\n    return (triton.cdiv(n, 128),)\n",),
)

FUSED_OPTIMIZER = _kind(
    "NPU910", "FusedOptimizer", "a fused optimizer or optimizer choice the NPU has no kernel for", ERROR,
    "fused=True asks for one fused kernel per step: torch_npu has aten::_fused_adamw_ only, so Adam, SGD and "
    "Adagrad with fused=True raise at the first step. transformers' bitsandbytes optimizers are CUDA kernels.",
    "leave fused out (the foreach implementation runs on the NPU), use torch_npu.optim.NpuFused*, or a torch "
    "optimizer.",
    (("import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)\n",
      "torch.optim.SGD(fused=True)", UNSUPPORTED_CSV),),
    ("import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",),
)

RAY_GPUS = _kind(
    "NPU911", "RayGPUs", "a Ray request for GPUs", ERROR,
    "Ray schedules by resource: an Ascend node has no GPU resource, so a task that asks for GPUs never starts.",
    "ask for the 'NPU' resource (resources={'NPU': 1}) and read the ids from the runtime context.",
    (("import ray\nids = ray.get_gpu_ids()\n", "ray.get_gpu_ids", UNSUPPORTED_CSV),),
)

NPU_DTYPE = _kind(
    "NPU932", "NPUDtype", "a tensor made or cast to a data type the release's NPU cannot hold (float8)", ERROR,
    "torch_npu gives every operator to CANN with an ACL data type. In the releases for torch 2.6 and older the "
    "float8 types (float8_e4m3fn, float8_e5m2) have none, and AMD's fnuz variants have none in any release: "
    "on the NPU a tensor of such a type cannot be made, cast to or computed with (the operator raises). Comparing "
    "a dtype or reading torch.finfo is not a row: only a dtype given to dtype=/out_dtype= or to .to()/.view()/"
    ".type(), directly, through a variable the file assigns it to, or to a function of the file that gives "
    "that parameter to one of these.",
    "keep float8 off on this release (train in bfloat16: turn the project's FP8 option off), or migrate with "
    "a -v of torch 2.7.1 or newer, whose torch_npu (CANN 26 builds) has float8 on the NPUs that compute it.",
    (("import torch\nw = weight.to(torch.float8_e4m3fn)\n", "torch.float8_e4m3fn", UNSUPPORTED_CSV),
     ("import torch\nFP8 = torch.float8_e5m2\nbuf = torch.empty(16, dtype=FP8, device='cuda')\n",
      "torch.float8_e5m2", UNSUPPORTED_CSV)),
    ("import torch\nis_fp8 = x.dtype == torch.float8_e4m3fn\n",
     "import torch\nlimit = torch.finfo(torch.float8_e4m3fn).max\n",
     "import torch\nw = weight.to(torch.bfloat16)\n"),
)

TORCH_REFUSED = _kind(
    "NPU933", "TorchRefused", "the project's own test of torch's version refuses the release's torch", ERROR,
    "torch_npu is built for one torch (torch_npu 2.1.0 for torch 2.1.0): the migrated project runs on that torch. "
    "A project written for a later torch often says so in code, a raise, an assert or a sys.exit under a test "
    "of torch.__version__ (packaging's Version, accelerate's is_torch_version, transformers' "
    "is_torch_greater_or_equal): with the release's torch that test stops the program, at import where it is "
    "at a module's top. The row is made only where the version decides: every other test on the way holds on "
    "the NPU too (a test for the NPU, an elif after other devices', the script's main block).",
    "migrate with a -v whose torch passes the test (the row names the first torch_npu release that does), where "
    "the project's other requirements allow; or make the code the test guards work on the older torch.",
    (("import torch\nfrom packaging.version import Version\n"
      "if Version(torch.__version__) < Version('2.4.0'):\n    raise ImportError('this project needs torch 2.4')\n",
      "torch.__version__", UNSUPPORTED_CSV),
     ("import torch\nassert torch.__version__ >= '2.3', 'torch 2.3 or newer'\n", "torch.__version__",
      UNSUPPORTED_CSV),
     ("import torch\nfrom packaging.version import Version\nDEVICE_TYPE = 'npu'\n"
      "if DEVICE_TYPE == 'npu' and Version(torch.__version__) < Version('2.4.0'):\n"
      "    raise RuntimeError('NPUs need torch 2.4')\n", "torch.__version__", UNSUPPORTED_CSV)),
    ("import torch\nfrom packaging.version import Version\n"
     "if Version(torch.__version__) < Version('2.0'):\n    raise ImportError('this project needs torch 2')\n",
     "import torch\nfrom packaging.version import Version\n"
     "if use_fsdp2 and Version(torch.__version__) < Version('2.4.0'):\n    raise ValueError('FSDP2 needs torch 2.4')\n",
     "import torch\nfrom packaging.version import Version\n"
     "if DEVICE_TYPE == 'xpu' and Version(torch.__version__) < Version('2.6.0'):\n    raise RuntimeError('XPU')\n",
     "import torch\nfrom packaging.version import Version\ntry:\n    if Version(torch.__version__) < Version('2.4'):\n"
     "        raise ImportError\n    from torch.nn import RMSNorm\nexcept ImportError:\n    RMSNorm = None\n"),
)

LIBRARY_DEVICE = _kind(
    "NPU934", "LibraryDevice", "a device handed to a library that runs on the CPU and NVIDIA's GPUs only", ERROR,
    "torchcodec and torchvision's decode_jpeg run on an Ascend machine, but their GPU path is NVIDIA's hardware: "
    "torchcodec decodes with NVDEC and refuses any device but \"cpu\" and \"cuda\"; decode_jpeg decodes with "
    "nvJPEG for a CUDA device and on the CPU for any other, returning the image on the CPU. A \"cuda\" given to "
    "either is left as written (renamed, the call would refuse the NPU or decode on the CPU silently), and so is "
    "a device test around such a call. A call given the CPU, or no device, is no row.",
    "decode on the CPU and move the frames or the image to the NPU with .to(\"npu\").",
    (("from torchcodec.decoders import VideoDecoder\ndecoder = VideoDecoder(data, device=\"cuda\")\n",
      "torchcodec.decoders.VideoDecoder(device=...)", UNSUPPORTED_CSV),
     ("import torch\nfrom torchvision.io import decode_jpeg\nimage = decode_jpeg(data, device=\"cuda\")\n",
      "torchvision.io.decode_jpeg(device=...)", UNSUPPORTED_CSV)),
    ("from torchcodec.decoders import VideoDecoder\ndecoder = VideoDecoder(data)\n",
     "from torchcodec.decoders import VideoDecoder\ndecoder = VideoDecoder(data, device=\"cpu\")\n",
     "import torch\nfrom torchvision.io import decode_jpeg\nimage = decode_jpeg(data).to(\"cuda\")\n"),
)

AUTO_DEVICE_MAP = _kind(
    "NPU935", "AutoDeviceMap", "device_map=\"auto\" where the project pins an accelerate that counts no NPU", ERROR,
    "accelerate splits a model over the devices it counts for device_map=\"auto\" (\"balanced\", "
    "\"balanced_low_0\", \"sequential\"; transformers' from_pretrained asks it). Before 0.26 it counts CUDA and XPU "
    "devices only: on an Ascend machine every layer is loaded onto the CPU, and the program trains or generates "
    "there without an error. A project that pins such a release has the row; one that pins none gets a release "
    "that counts NPUs.",
    "pin accelerate>=0.26, or give the device itself (device_map={\"\": \"npu:0\"}).",
    (("from transformers import AutoModelForCausalLM\n"
      "model = AutoModelForCausalLM.from_pretrained(name, device_map=\"auto\")\n", 'device_map="auto"', UNSUPPORTED_CSV),
     ("def load_pretrained_model(path, device_map=\"auto\", device=\"cuda\"):\n    return path, device_map, device\n",
      'device_map="auto"', UNSUPPORTED_CSV)),
    ("from transformers import AutoModelForCausalLM\n"
     "model = AutoModelForCausalLM.from_pretrained(name, device_map={\"\": 0})\n",
     "from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained(name)\n"),
    example_pins=(("accelerate", "==0.21.0"),),
)

QUANTIZATION = _kind(
    "NPU912", "Quantization", "quantization through bitsandbytes", ERROR,
    "bitsandbytes' 4-bit and 8-bit layers are CUDA kernels before bitsandbytes 0.47: loading a model with "
    "load_in_4bit or a BitsAndBytesConfig fails on an NPU machine (importing bitsandbytes itself is NPU916).  Where "
    "the project pins bitsandbytes 0.47 or later (plain PyTorch kernels for any device) and a transformers that "
    "quantizes onto the NPU (4.48 on; 5.0 for 8-bit), the rows are notes.",
    "pin bitsandbytes>=0.47 and transformers>=4.48 (5.0 for 8-bit; unfused, slower), load the model in bf16/fp16, "
    "or quantize with an NPU method (the msModelSlim tools, torch_npu's quantized matmuls).",
    (("from transformers import AutoModelForCausalLM\n"
      "model = AutoModelForCausalLM.from_pretrained(name, load_in_4bit=True)\n", "load_in_4bit", UNSUPPORTED_CSV),),
    ("from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained(name)\n",),
)

PACKAGE_PROBE = _kind(
    "NPU913", "PackageProbe", "a probe for a CUDA-only package (find_spec, version, RequirementCache)", ERROR,
    "The package is not installed on an NPU machine: the probe answers 'absent' (or raises), and the code it "
    "guards does not run there.",
    "probe the generated NPU package gpu2npu writes, or test for the NPU.",
    (("import importlib.util\nHAS_FLASH = importlib.util.find_spec('flash_attn') is not None\n",
      "find_spec('flash_attn')", UNSUPPORTED_CSV),),
    ("import importlib.util\nHAS_NUMPY = importlib.util.find_spec('numpy') is not None\n",
     # asked only where a test that names the package found it
     "from importlib.metadata import version\nfrom transformers.utils import is_bitsandbytes_available\n"
     "BNB = version('bitsandbytes') if is_bitsandbytes_available() else 'not installed'\n",
     "import importlib.metadata\nimport importlib.util\n\ndef bnb_version():\n"
     "    package_exists = importlib.util.find_spec('numpy') is not None and _installed('bitsandbytes')\n"
     "    if package_exists:\n        return importlib.metadata.version('bitsandbytes')\n"),
)

DEAD_GUARD = _kind(
    "NPU914", "DeadGuard", "a device test left as written because it guards CUDA-only code", ERROR,
    "Switching the test to the NPU would run code that has no NPU form; left on CUDA it is never true on "
    "Ascend, so what it guards does not run there. The same availability test for another option of the same "
    "framework call (Lightning's devices= beside its accelerator=) is left with it. CUDA-only code is a name of "
    "a CUDA-only package or API, a GPU kernel the project writes (Triton, Helion, CuTe DSL, cuTile) or a function, class "
    "or registered operator of the project that launches one, in any of its files, an operator the release has "
    "no NPU kernel for, or code a message of the test says runs on (or needs) CUDA only, or says needs CUDA "
    "where it names a thing without an NPU form (\"flex_attention requires CUDA\", a CUDA-only package).",
    "port the guarded code (its own rows say how), then switch the test to the NPU.",
    (("import torch\nimport cupy\n\nif torch.cuda.is_available():\n    x = cupy.zeros(3)\n",
      "device test torch.cuda.is_available()", UNSUPPORTED_CSV),
     ("import torch\nimport lightning as L\n\nL.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu',\n"
      "          devices=torch.cuda.device_count() if torch.cuda.is_available() else 1)\n",
      "device test torch.cuda.is_available()", UNSUPPORTED_CSV),
     ("import torch\nimport triton\n\n\n@triton.jit\ndef _scale_kernel(x_ptr):\n    pass\n\n\ndef scale(x):\n"
      "    _scale_kernel[(1,)](x)\n    return x\n\n\ndef f(x):\n    if x.is_cuda:\n        return scale(x)\n"
      "    return x * 2\n", "device test x.is_cuda", UNSUPPORTED_CSV)),
)

LEFT_ON_PURPOSE = _kind(
    "NPU915", "LeftOnPurpose", "left as written on purpose: nothing to do", NOT_CHECKED,
    "Code that already chooses between the NPU and CUDA, a framework's CUDA implementation of its device "
    "interface (which the framework chooses where it finds CUDA: on the NPU it needs its NPU implementation), a "
    "part of an installable package imported only to read its version, a CUDA backend setting that has no effect on the NPU, a CUDA "
    "or NCCL environment variable that a file of the project reads and sets nowhere (set where it is, it has its "
    "effect on that code), a private "
    "name of torch's device-neutral code (torch.utils._pytree), a test double of a torch.cuda attribute given the "
    "module (monkeypatch.setattr(torch.cuda, ...), left as patch(\"torch.cuda...\") is: the code under test keeps "
    "torch.cuda where it asks about CUDA itself): gpu2npu leaves it and says so in the log.",
    "nothing (a test double whose code under test now reads torch_npu.npu patches torch_npu.npu instead).",
    (("import torch\nimport torch_npu\n\nif torch.npu.is_available():\n    d = 'npu'\nelif torch.cuda.is_available():\n"
      "    d = 'cuda'\n", "NPU-aware code", LOG),
     ("import torch\nfrom lightning.fabric.accelerators import Accelerator\n\n\nclass CUDAAccelerator(Accelerator):\n"
      "    def setup_device(self, device):\n        torch.cuda.set_device(device)\n", "class CUDAAccelerator", LOG),
     ("import torch\n\n\ndef test_capability(monkeypatch):\n"
      "    monkeypatch.setattr(torch.cuda, 'get_device_capability', lambda: (9, 0))\n",
      "torch.cuda.get_device_capability", LOG)),
)

CUDA_ONLY_PACKAGE = _kind(
    "NPU916", "CUDAOnlyPackage", "a package of CUDA kernels (CuPy, NVIDIA apex, bitsandbytes, Liger, mamba_ssm)",
    ERROR,
    "Packages such as CuPy, NVIDIA apex, bitsandbytes, mamba_ssm or TensorRT are built for CUDA and do not install "
    "or run on an NPU machine (bitsandbytes' layers and functions do from 0.47, with plain PyTorch kernels: where "
    "the project pins such a release, their rows are notes); Liger's kernels run there only through its Ascend backend (liger-kernel 0.6.5 on), "
    "with triton-ascend, which torch_npu 2.6.0 and later pair with (there its rows are notes). The import has the "
    "row, which names the calls of the package that the same advice covers; a call with advice of its own has its "
    "own row.",
    "the row's tip names the torch or torch_npu counterpart (Ascend apex, torch_npu fused operators, ATC).",
    (("import cupy\nx = cupy.zeros(3)\n", "cupy", UNSUPPORTED_CSV),
     # only its version is read, but the package is not installed there: the import raises
     ("import flash_attn\nprint('flash-attn', flash_attn.__version__)\n", "flash_attn", UNSUPPORTED_CSV)),
    ("import numpy\nx = numpy.zeros(3)\n",
     "try:\n    import flash_attn\n    version = flash_attn.__version__\nexcept ImportError:\n    version = None\n"),
)

KERNEL_LANGUAGE = _kind(
    "NPU929", "KernelLanguage", "a GPU kernel language imported (Triton, Helion, CUTLASS and CuTe, CUDA Python)", ERROR,
    "Triton compiles for CUDA here (and Helion through Triton), CUTLASS's CuTe DSL and cuTile for NVIDIA GPUs only, "
    "and CUDA Python is the "
    "CUDA driver and runtime: the import fails on an NPU machine or the kernels do not run. Each kernel written "
    "in the language has a row of its own (NPU909); its calls inside a kernel have none.",
    "port the kernels (torch operators, torch_npu fused operators, Triton-Ascend or Ascend C), then drop the "
    "import; streams, events and memory come from torch_npu.npu.",
    (("import triton\nimport triton.language as tl\n", "triton", UNSUPPORTED_CSV),),
    ("import numpy\nx = numpy.zeros(3)\n",),
)

CUDA_API = _kind(
    "NPU917", "CUDAApi", "a torch CUDA API with no NPU counterpart in the release", ERROR,
    "torch_npu mirrors most of torch.cuda as torch_npu.npu, not all of it: graphs in older releases, "
    "jiterator, NVTX, the CUDA runtime, compute capability; and DataParallel has no NPU form. Some counterparts "
    "lack a parameter of CUDA's (memory_snapshot's include_traces, graph's enable_annotations): such a call stays.",
    "the row's tip names the NPU way (torch_npu.npu.mstx for NVTX, DistributedDataParallel for DataParallel, ...).",
    (("import torch\ntorch.cuda.nvtx.range_push('step')\n", "torch.cuda.nvtx.range_push", UNSUPPORTED_CSV),
     ("import torch\nsnap = torch.cuda.memory_snapshot(include_traces=False)\n", "torch.cuda.memory_snapshot",
      UNSUPPORTED_CSV)),
    ("import torch\ntorch.cuda.synchronize()\n", "import torch\nsnap = torch.cuda.memory_snapshot()\n"),
)

CUDA_LEFTOVER = _kind(
    "NPU918", "CUDALeftover", "a CUDA device, type or backend name that no rule could migrate", ERROR,
    "A device string, tensor type or backend name the rules could not decide on (it is not certain to reach a "
    "device position) still names CUDA after migration.",
    "use 'npu' devices, torch.npu tensor types and the 'hccl' backend where these reach torch.",
    (("import torch\nname = f\"cuda:{node}-{rank}\"\n", "device f-string 'cuda:{...}'", UNSUPPORTED_CSV),),
)

FRAMEWORK_CUDA = _kind(
    "NPU919", "FrameworkCUDA", "another framework's CUDA-only class or option", ERROR,
    "Lightning's CUDAAccelerator and its accelerator=\"gpu\" drive CUDA devices (Lightning has no built-in NPU "
    "counterpart); transformers' TrainingArguments(tf32=True) raises where there is no CUDA GPU.",
    "count NPUs with torch_npu.npu.device_count() and use an Ascend integration of the framework; leave tf32 off "
    "(the NPU's counterpart is HF32: torch_npu.npu.matmul.allow_hf32).",
    (("from lightning.pytorch.accelerators import CUDAAccelerator\nn = CUDAAccelerator.auto_device_count()\n",
      "lightning.pytorch.accelerators.CUDAAccelerator.auto_device_count", UNSUPPORTED_CSV),
     ("import lightning as L\ntrainer = L.Trainer(accelerator='gpu', devices=8)\n", "accelerator='gpu'", UNSUPPORTED_CSV),
     ("from transformers import TrainingArguments\nargs = TrainingArguments('out', bf16=True, tf32=True)\n", "tf32=True",
      UNSUPPORTED_CSV)),
    ("import lightning as L\ntrainer = L.Trainer(accelerator='auto')\n",
     "from transformers import TrainingArguments\nargs = TrainingArguments('out', tf32=False)\n"),
)

LIGHTNING_AUTO_ACCELERATOR = _kind(
    "NPU930", "LightningAutoAccelerator", "a Lightning Trainer or Fabric that chooses its accelerator itself", ERROR,
    "Lightning's automatic choice (accelerator='auto', the default) takes a TPU, an Apple GPU or a CUDA GPU, else "
    "the CPU: it has no NPU among its choices, so on an Ascend machine the migrated program trains on the CPU "
    "without an error, and Lightning's FSDP strategy refuses to start there (it needs a GPU accelerator).",
    "give Lightning an accelerator that drives the NPU (a custom lightning Accelerator registered under a name, as "
    "Lightning's guide to custom accelerators shows, or an Ascend integration of Lightning) and pass it as "
    "accelerator=; devices are counted with torch_npu.npu.device_count().",
    (("import lightning as L\nfabric = L.Fabric(devices=2, strategy='fsdp')\n", "lightning.Fabric(...) without accelerator",
      UNSUPPORTED_CSV),
     ("from lightning.pytorch import Trainer\ntrainer = Trainer(accelerator='auto', max_epochs=3)\n",
      "lightning.pytorch.Trainer(accelerator='auto')", UNSUPPORTED_CSV)),
    ("import lightning as L\nfabric = L.Fabric(accelerator='cpu', devices=1)\n",
     "import lightning as L\ntrainer = L.Trainer(accelerator=args.accelerator)\n",
     "import lightning as L\ntrainer = L.Trainer(**config)\n",
     "from transformers import Trainer\ntrainer = Trainer(model=model, args=args)\n"),
)

EXTENSION_BUILD = _kind(
    "NPU920", "ExtensionBuild", "a C++ extension built at run time with CUDA sources", ERROR,
    "torch.utils.cpp_extension.load / load_inline compile .cu sources (or cuda_sources) with nvcc, which an NPU "
    "machine does not have. A build of C++ sources only runs on the host and needs no change.",
    "port the kernels to Ascend C custom operators or write them with torch_npu operators.",
    (("from torch.utils.cpp_extension import load\nops = load(name='ops', sources=['ops.cpp', 'kernel.cu'])\n",
      "torch.utils.cpp_extension.load", UNSUPPORTED_CSV),),
    ("from torch.utils.cpp_extension import load\nops = load(name='ops', sources=['ops.cpp'])\n",),
)

FLASH_ATTN_ARGUMENTS = _kind(
    "NPU921", "FlashAttnArguments", "a flash-attn call with arguments the NPU's fused attention cannot take", ERROR,
    "gpu2npu points flash-attn's imports at a generated package built on torch_npu.npu_fusion_attention; "
    "some of flash-attn's arguments (alibi slopes, a soft cap, ...) have no counterpart there, and the "
    "generated function raises NotImplementedError for them.",
    "drop the argument where the model allows it, or compute that attention with torch operators.",
    (("import torch\nfrom flash_attn import flash_attn_func\n\nout = flash_attn_func(q, k, v, softcap=30.0)\n",
      "flash_attn.flash_attn_func(softcap=30.0)", UNSUPPORTED_CSV),),
)

THIRD_PARTY = _kind(
    "NPU922", "ThirdParty", "a call of a library API that reaches CUDA-only code (-api)", ERROR,
    "`gpu2npu analyse -m third_party` lists a library's public APIs whose call chains reach CUDA-only code; "
    "with -api that list, each call of one in the project is a row.",
    "follow the row's chain to the CUDA-only code and port it, or call another API of the library.",
    (("from fancylib import build_model\nmodel = build_model(depth=12)\n", "fancylib.build_model", UNSUPPORTED_CSV),),
    ("from fancylib import build_tokenizer\ntokenizer = build_tokenizer()\n",),
    example_apis=(("fancylib.build_model", "reaches flash_attn.flash_attn_func"),),
)

LOCAL_TORCH_CUDA = _kind(
    "NPU923", "LocalTorchCUDA", "torch.cuda reached through a parameter or variable named torch", ERROR,
    "A function that takes the torch module as a parameter (`def pick(torch, device)`), or binds a local named "
    "torch, reads torch.cuda through a name that is not the file's import: what it holds is not certain, so "
    "gpu2npu does not rewrite it, and the CUDA API it calls has no device on an NPU machine if it is torch.",
    "where the name holds the torch module, call torch_npu.npu's function of the same name (import torch_npu).",
    (("import torch\n\n\ndef current(torch):\n    return torch.cuda.current_device()\n", "torch.cuda.current_device",
      UNSUPPORTED_CSV),),
    ("import torch\n\n\ndef memory_of(cuda):\n    return cuda.memory_allocated()\n",
     "import torch\n\n\ndef count(torch_module):\n    return torch_module.cuda.device_count()\n"),
)

NVIDIA_TOOLS = _kind(
    "NPU924", "NvidiaTools", "NVIDIA's tools run from Python (nvidia-smi, NVML through pynvml or GPUtil)", ERROR,
    "An Ascend machine has no nvidia-smi and no NVML: subprocess raises FileNotFoundError (check_output, run "
    "with check) or the shell answers 127 (os.system, os.popen reads nothing), code that parses its output "
    "fails, at start where it runs at module level, and pynvml, nvidia_smi, GPUtil and gpustat cannot "
    "initialise.",
    "npu-smi info (other columns and format), or from Python torch_npu.npu.mem_get_info(), "
    "memory_allocated() and get_device_name().",
    (("import subprocess\nprint(subprocess.check_output(['nvidia-smi']).decode())\n", "nvidia-smi", UNSUPPORTED_CSV),
     ("import os\nos.system('nvidia-smi -L')\n", "nvidia-smi", UNSUPPORTED_CSV),
     ("import pynvml\npynvml.nvmlInit()\n", "pynvml", UNSUPPORTED_CSV)),
    ("print('run nvidia-smi to see the GPUs')\n", "HELP = 'see nvidia-smi'\n"),
)

NOT_MIGRATED = _kind(
    "NPU925", "NotMigrated", "a file that could not be read or parsed: copied unchanged, nothing in it checked", ERROR,
    "gpu2npu reads every file with libcst (Python) or its own readers (notebooks, launch scripts, dependency "
    "files). A file it cannot read (not UTF-8, not valid Python 3, a notebook that is not JSON, a read error) is "
    "copied as it is: whatever CUDA it holds is still there, and nothing in it was looked at.",
    "mend the file (port Python 2 code to Python 3, fix the syntax or the encoding) and run gpu2npu again; the "
    "row's tip gives the reason and the line.",
    (("import torch\nx = torch.zeros(1).cuda()\nprint 'done'\n", "file not migrated", UNSUPPORTED_CSV),),
    ("import torch\nx = torch.zeros(1).cuda()\nprint('done')\n",),
)

# The api of a NotMigrated row.
NOT_MIGRATED_API = "file not migrated"

TRANSFORMERS_FLASH_ATTENTION = _kind(
    "NPU927", "TransformersFlashAttention",
    "transformers' attn_implementation=\"flash_attention_2\" where the project's transformers is not known", ERROR,
    "On an NPU, transformers 4.51 to 4.53 and 4.55.3 on run \"flash_attention_2\" with "
    "torch_npu.npu_fusion_attention (their integrations/npu_flash_attention.py); releases before 4.51, and 4.54.0 "
    "to 4.55.2, ask for the flash-attn package, which does not install on Ascend, and raise at model load. The "
    "project pins no transformers that decides it (none, or a range across both).",
    "pin transformers>=4.55.3 (or a release from 4.51 to 4.53), or use attn_implementation=\"sdpa\", which "
    "torch_npu runs with its fused attention; with a pin, gpu2npu decides by itself.",
    (("from transformers import AutoModelForCausalLM\n"
      "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"flash_attention_2\")\n",
      "attn_implementation=\"flash_attention_2\"", UNSUPPORTED_CSV),),
    ("from transformers import AutoModelForCausalLM\n"
     "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"sdpa\")\n",),
)

TRANSFORMERS_FLEX_ATTENTION = _kind(
    "NPU931", "TransformersFlexAttention", "transformers' attn_implementation=\"flex_attention\"", ERROR,
    "transformers' \"flex_attention\" calls torch's flex_attention, which takes CUDA, CPU, XPU, HPU and MPS tensors "
    "only and raises for NPU tensors (torch_npu registers no FlexAttention): the model's first forward on the NPU "
    "fails. Behind a CUDA device test the choice is left as written, and the test with it (the NPU takes the "
    "other branch).",
    "use attn_implementation=\"sdpa\", which torch_npu runs with its fused attention (or \"eager\"); a block mask "
    "built for FlexAttention becomes an attention mask for torch.nn.functional.scaled_dot_product_attention.",
    (("from transformers import AutoModelForCausalLM\n"
      "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"flex_attention\")\n",
      "attn_implementation=\"flex_attention\"", UNSUPPORTED_CSV),),
    ("from transformers import AutoModelForCausalLM\n"
     "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"sdpa\")\n",
     "if config._attn_implementation == \"flex_attention\":\n    mask = block_mask\n"),
)

# Where the examples of a kind that only `gpu2npu check` reports stand.
CHECK = "gpu2npu check"

UNUSED_SUPPRESSION = _kind(
    "NPU926", "UnusedSuppression", "a `# gpu2npu: ignore` comment that silences nothing, or names an unknown code",
    ERROR,
    "`gpu2npu check` skips the findings of a line that carries `# gpu2npu: ignore` (all of them) or "
    "`# gpu2npu: ignore[NPU102,NPU9xx]` (the codes named; `x` stands for any digit). A suppression whose line "
    "has no such finding any more, or a code no rule or report has, hides nothing today and would hide a new "
    "finding tomorrow.",
    "delete the comment, or the codes in it that match nothing (check's message names them).",
    (("import torch\nx = torch.zeros(1)  # gpu2npu: ignore\n", "# gpu2npu: ignore", CHECK),
     ("import torch\nx = torch.zeros(1).cuda()  # gpu2npu: ignore[NPU102,NPU999]\n", "# gpu2npu: ignore[NPU999]", CHECK)),
    ("import torch\nx = torch.zeros(1).cuda()  # gpu2npu: ignore[NPU102]\n",
     "import torch\nx = torch.zeros(1).cuda()  # gpu2npu: ignore\n"),
)

# The advice rows (NPU951-NPU962) are declared with their detectors (affinity.ADVICE); the hazards give
# the float32 precision settings the code of the TF32 advice.
TF32_ADVICE = "NPU962"  # (the TF32 switches and float32 precision settings: the NPU's is HF32)
