"""Device tests that guard CUDA-only code stay as written.

    if torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0):
        use_flash = True
    if q.device.type == "cuda":
        out = flash_attn_with_kvcache(q, k_cache, v_cache)

On an Ascend machine without CUDA these branches are not taken.  Migrating the test alone
(`torch_npu.npu.is_available()`, `== "npu"`) would make them run, and crash at what they guard,
which the migration cannot make valid (a CUDA-only package, a `torch.cuda` API torch_npu lacks).
Names of CUDA-only packages that a rule points at a generated NPU package (reroute.ReroutePlan:
flash-attn, xformers, bitsandbytes' optimizers) are valid.  The GPU kernels the project writes
(Triton, CuTe DSL, cuTile) and the functions, classes and registered operators that launch one, in
any of its files (reading.kernel_launchers), and the operators the release has no NPU kernel for,
are CUDA-only too; so is what a test's message says runs on CUDA only, or what the message of its
other branch says needs CUDA where that branch goes on without it ("FP8 requires CUDA, ignoring
--fp8"); a function of the file compiled with inductor where the release has no inductor for the
NPU; a tensor's IPC handle where the file rebuilds such handles as CUDA tensors or the release
cannot share NPU tensors; and, where nothing else is, what a test asks for NVIDIA's GPUs alone
(beside `torch.version.hip is None`: ROCm answers torch.cuda too).
So a device test (`is_available()`, `device_count()`, `is_cuda`, a device string compared) is
only migrated when everything it guards is valid on the NPU after migration.  Otherwise the test
and the code that runs only when it holds are left exactly as written (the branch stays dead on
the NPU, as on any machine without CUDA) and unsupported_api.csv says so, with the reason.

What a test guards follows Python's evaluation: for `if T:` with T true only when the device
test holds (`D`, `D and X`, `not (not D)`), the rest of T and the body; for T false only when it
holds (`not D`, `x.device.type != "cuda"`, `not D or X`), the rest of T, the `else`, and when the
body ends by leaving the block (`return`, `raise`, `continue`, `break`), the rest of the block;
likewise for conditional expressions (`a if D else b`) and boolean expressions (`D and X`).

Tests inside a guarded part are judged first: a test around one left as written guards nothing
CUDA-only there (that branch stays dead on the NPU by itself), so it is migrated on what else it
guards, and a device whose type the inner test compares (`device.type == "cuda"`) moves with the
migration.  Not where the inner test reads a variable as the test itself (`if use_cuda:`): what
is assigned to it stays as written with it, around the test too.

The decision is made once, on the original file, before any rule runs (like `npu_aware`).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..knowledge import apidata
from ..knowledge.apidata import ApiData
from ..knowledge.library_devices import WORDS as LIBRARY_DEVICE_WORDS
from ..knowledge.tips import (CUDA_BUILD_BINDINGS, CUDA_BUILD_STRING, CUDA_ONLY_PACKAGES, CUDA_PROPERTY_FIELDS,
                              FLEX_ATTENTION, FLEX_ATTENTION_CHOICE, FUSED_OPTIMIZERS, PROFILER_CUDA_ACTIVITY,
                              REDUCE_TENSOR, cuda_only_package,
                              has_fused_kernel, migratable_cuda_path, shares_npu_tensors)
from ..reading.file_facts import MESSAGE_CALLS
from ..reading.kernel_launchers import (OPERATOR_KEY, OPERATORS_ON_THE_NPU, compiled_operator,
                                        launchers_by_name, launchers_in, registered_operators, resolved,
                                        what_it_launches, without_operators)
from ..reading.kernel_launchers import npu_constants as npu_constants_in
from .cuda_api import npu_path
from . import bf16_capability, npu_aware
from .transformers_attention import FLEX, chooses_attention
from .names import (DEVICE_STRING, FRAMEWORK_OPTIONS, called_method, dotted_name, framework_option, function_around,
                    library_device_argument, nodes_within, not_a_device, properties_query_stays, qualified_names, string_text)
from .dotted_names import last_name
from .walk import ParentNodeProvider, walk

Span = npu_aware.Span

# torch names that only work with CUDA and that no rule migrates (outside torch.cuda).  varlen_attn
# runs ATen's _flash_attention_forward, which no torch_npu release registers an NPU kernel for;
# flex_attention raises for tensors of a device it does not list (cuda, cpu, xpu, hpu, mps).
CUDA_ONLY_TORCH = ("torch.utils.cpp_extension.CUDAExtension", "torch.backends.cuda.sdp_kernel",
                   "torch.nn.attention.varlen", FLEX_ATTENTION, *CUDA_BUILD_BINDINGS, *sorted(PROFILER_CUDA_ACTIVITY))
# Frameworks' CUDA-specific classes that have no NPU counterpart of the same name.
CUDA_ONLY_CLASSES = (
    "lightning.pytorch.accelerators.CUDAAccelerator", "pytorch_lightning.accelerators.CUDAAccelerator",
    "lightning.fabric.accelerators.CUDAAccelerator", "lightning.pytorch.accelerators.cuda.CUDAAccelerator",
    "pytorch_lightning.accelerators.cuda.CUDAAccelerator",
)
EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)
# What a message declaring the code after a test CUDA-only stands as (a DeadGuard's `guarded`).
CUDA_ONLY_DECLARED = "code its message says runs on CUDA only"
# A message that says so ("GDS currently only supported for CUDA accelerator", "SuperOffload only
# supports NVIDIA CUDA GPUs"): the author's word that what follows the test is CUDA-only where no
# name of it shows.  One that names another device too ("only CUDA and CPU tensors") speaks of a
# set of devices, which the NPU may join; one that only requires CUDA ("requires a CUDA GPU")
# asks for an accelerator, which the NPU is.
_CUDA_ONLY_MESSAGE = re.compile(r"\bonly\b.{0,60}\b(cuda|nvidia)\b|\b(cuda|nvidia)\b.{0,20}\bonly\b", re.IGNORECASE)
# A test whose other branch says, and goes on, that what the test guards needs CUDA ("FP8 training
# requires CUDA, ignoring --fp8"): the author fenced a feature for CUDA and gave every other device
# the fallback, which the NPU takes as written.  (Where that branch stops the program instead,
# "requires a CUDA GPU" asks for an accelerator: _CUDA_ONLY_MESSAGE decides.)
CUDA_ONLY_FALLBACK = "code its other branch's message says needs CUDA"
_NEEDS_CUDA_MESSAGE = re.compile(r"\b(requires?|required|needs?)\b.{0,40}\b(cuda|nvidia)\b|"
                                 r"\b(cuda|nvidia)\b.{0,30}\b(required|only)\b|\bonly\b.{0,60}\b(cuda|nvidia)\b",
                                 re.IGNORECASE)
# (not the CPU of "CPU offloading", "cpu_offload": a feature that moves memory to the host, which
# a message about a CUDA-only one names: "CPU-offloading is only enabled when using CUDA-devices")
_OTHER_DEVICE_WORD = re.compile(r"\b(cpus?|npus?|ascend|xpus?|mps|rocm|hip|amd|intel|tpus?|hpus?)\b(?![-_ ]?offload)",
                                re.IGNORECASE)
# NVIDIA's video and image engines (NVDEC, NVENC, nvJPEG, and FFmpeg's codecs for them: h264_cuvid,
# hevc_nvenc): a string that names one, in a message ("decoding video with NVDEC") or as a codec,
# says that the code it stands in uses NVIDIA hardware, which an Ascend machine has not.
NVIDIA_MEDIA = "code that names NVIDIA's video or image engines"
_NVIDIA_MEDIA_WORD = re.compile(r"(?<![a-z])(nvdec|nvenc|nvjpeg|cuvid)(?![a-z])", re.IGNORECASE)
# What a lookup of the device's name in a table stands as (a DeadGuard's `guarded`).
GPU_NAME_LOOKUP = "a table of NVIDIA GPUs looked up by get_device_name()"
# ... and a search of such a table that raises where no entry matches.
GPU_NAME_SEARCH = "a search of a table of NVIDIA GPUs for get_device_name() that raises where none matches"


@dataclass(frozen=True)
class DeadGuard:
    """A device test left as written, what it guards that has no NPU form, and where."""

    test: str  # the device test's code
    guarded: str  # the first CUDA-only name it guards (reported at its own line too)
    gates_tf32: bool = False  # what it guards is a TF32 switch (the tip differs)
    beside: bool = False  # left for the same test beside it, which guards `guarded` (the tip differs)


class _Resolver(cst.CSTVisitor):
    """Collects, over the whole original file, the nodes that stay CUDA-only after migration:
    references to torch.cuda APIs the release lacks, to CUDA-only packages and classes."""

    METADATA_DEPENDENCIES = (ParentNodeProvider, PositionProvider)

    def __init__(self, api: ApiData, aliases: Dict[str, Set[str]], rerouted: Set[str] = frozenset(),
                 scopes=None, own: FrozenSet[str] = frozenset()) -> None:
        super().__init__()
        self.api = api
        self.own = own  # the project's own modules named as CUDA-only packages (Options.own_packages)
        self.import_aliases = aliases
        self.scopes = scopes
        # a local named as its module (`torch = _torch()`) may be it: a test that may guard CUDA-only
        # code through it is left as written (the cautious way; the rules never edit through it)
        self.reads_likely_modules = True
        self.rerouted = rerouted  # names of CUDA-only packages that a rule points at an NPU package
        self.cuda_only: Dict[int, str] = {}  # id(node) -> the CUDA-only name it refers to
        # ids of what the rules turn into NPU terms: a test holding one is a device test
        # (decided on these tokens, not on "cuda" in a name such as cuda_min_version).
        self.device_terms: Set[int] = set()
        # What the guard analysis looks at afterwards, in the order of the file (one walk).
        self.ifs: List[cst.If] = []
        self.ifexps: List[cst.IfExp] = []
        self.boolops: List[cst.BooleanOperation] = []
        self.functions: List[cst.FunctionDef] = []
        self.decorated_classes: List[cst.ClassDef] = []
        self.assigns: List[cst.Assign] = []
        self.device_variables: Set[str] = set()  # names assigned a device test (mark_device_variables)
        self.reads: List[cst.CSTNode] = []  # names and attributes read
        self.attribute_names: Set[int] = set()  # the `b` of `a.b`: no variable
        self.subscripts: List[cst.Subscript] = []  # `table[key]` with one key
        self.membership_tests: Set[Tuple[Optional[str], Optional[str]]] = set()  # (key, table) of `key in table`
        self.catching_tries: List[cst.Try] = []  # `try`s that catch a missing key (KeyError)
        self.fors: List[cst.For] = []
        self.next_calls: List[cst.Call] = []  # `next(generator)` without a default
        self.calls_by_name: List[cst.Call] = []  # calls of a plain name (`normalized(name)`: maybe the file's own)
        self.fused_flags: List[cst.CSTNode] = []  # `fused=True`, `{"fused": True}`
        self.optimizers: Set[str] = set()  # the torch optimizers with a fused form the file names
        self.framework_choices: Set[str] = set()  # what cuda_only says of a framework's CUDA option
        # whether a message of the file may say that what a test stops is CUDA-only (_CUDA_ONLY_MESSAGE)
        self.declares_cuda_only = False
        # whether the file rebuilds tensors from IPC handles as CUDA ones (SHARED_AS_CUDA)
        self.rebuilds_cuda_tensors = False
        self.library_devices = False  # whether the file may give a device to knowledge.library_devices' APIs
        # whether the file names NVIDIA's video or image engines at all (NVIDIA_MEDIA): its strings
        # are searched only then
        self.names_nvidia_media = False
        self.rocm_excluded: Set[int] = set()  # ids of `torch.version.hip` in `... is None`, `not ...` (NVIDIA_ONLY)
        # the file's GPU kernels and the module-level functions and classes that launch one (name ->
        # the kernel), and those of the project's other files (qualified name -> the kernel), with
        # the file's module (`pkg.ops.add`, and whether it is a package's __init__) that resolves
        # its relative imports: reading.kernel_launchers
        self.own_launchers: Dict[str, str] = {}
        self.launchers: Dict[str, str] = {}
        self.operators: FrozenSet[str] = frozenset()  # those the project's Python registers (Options.python_operators)
        self.module: Optional[str] = None
        self.package = False
        # the file's functions that a test of the project asks before a call of a launcher:
        # name -> what that call launches (Options.kernel_questions)
        self.asked_elsewhere: Dict[str, str] = {}
        self.enum_parameters: tuple = ()  # (Options.enum_parameters)

    def visit_If(self, node: cst.If) -> None:
        self.ifs.append(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.ifexps.append(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self.boolops.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if node.decorators:  # (a test class skipped as a whole: _Finder.skip_decorator)
            self.decorated_classes.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns.append(node)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _check(self, node: cst.CSTNode) -> None:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # judged at the top of the chain
        if isinstance(parent, cst.Call) and parent.func is node:
            last = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")
            if npu_aware.question_of_cuda(last) and not any(
                    name.startswith("torch.") for name in qualified_names(self, node)):
                # the project's own question about CUDA (`check_cuda_fp8_capability()`): it asks
                # the CUDA device, whatever the test around it is migrated to
                self.cuda_only[id(node)] = f"{last}()"
                return
        # (sorted: a name imported from two places, in a try and its except, names the same one
        # every run)
        names = sorted(qualified_names(self, node))
        if "torch.version.hip" in names and _asks_its_absence(self, node):
            self.rocm_excluded.add(id(node))
            return
        launched = self._launched(names)
        if launched is not None:
            self.cuda_only[id(node)] = launched
            return
        if REDUCE_TENSOR in names and (self.rebuilds_cuda_tensors or not shares_npu_tensors(self.api)):
            self.cuda_only[id(node)] = SHARED_AS_CUDA if self.rebuilds_cuda_tensors else REDUCE_TENSOR
            return
        for name in names:
            if name in FUSED_OPTIMIZERS:
                self.optimizers.add(name)
            if name not in self.rerouted and (_cuda_only_name(self.api, name, self.own)
                                              or properties_query_stays(self, node, name)):
                self.cuda_only[id(node)] = name
                return
            if name == "torch.cuda" or name.startswith("torch.cuda."):
                self.device_terms.add(id(node))
                return

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)
        self.reads.append(node)
        self.attribute_names.add(id(node.attr))
        if node.attr.value == "is_cuda" and not called_method(self, node):
            self.device_terms.add(id(node))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "fused":
            if _is_true(node.value):
                self.fused_flags.append(node)
            elif isinstance(node.value, cst.IfExp) and _is_true(node.value.body):  # fused=True if ... else None
                self.fused_flags.append(node.value.body)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if isinstance(node.key, cst.SimpleString) and string_text(node.key) == "fused" and _is_true(node.value):
            self.fused_flags.append(node)

    def mark_fused_flags(self) -> None:
        """`fused=True` for an optimizer the release has no fused NPU kernel for stays CUDA-only: a
        device test choosing it (`{"fused": True} if p.is_cuda else {}`) is left as written, so the
        NPU takes the unfused update.  The optimizers are those the file names (`torch.optim.AdamW`,
        or "Adam" chosen by name); where it names none, any of them."""
        if not self.fused_flags:
            return
        lacking = sorted(name.rsplit(".", 1)[-1] for name in self.optimizers or FUSED_OPTIMIZERS
                         if not has_fused_kernel(self.api, name))
        if lacking:
            what = f"fused=True (no fused NPU kernel for {', '.join(dict.fromkeys(lacking))})"
            for node in self.fused_flags:
                self.cuda_only[id(node)] = what

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        text = string_text(node)
        if text in _OPTIMIZER_NAMES:
            self.optimizers.add(_OPTIMIZER_NAMES[text])
        if text is not None and self.names_nvidia_media and _NVIDIA_MEDIA_WORD.search(text):
            self.cuda_only[id(node)] = f"{NVIDIA_MEDIA}: {text!r}"
            return
        if text is not None and CUDA_BUILD_STRING.match(text):
            self.cuda_only[id(node)] = text  # another framework's CUDA build or provider
            return
        if text == FLEX and chooses_attention(self, node):
            self.cuda_only[id(node)] = FLEX_ATTENTION_CHOICE  # transformers' FlexAttention
            return
        if text is not None and (DEVICE_STRING.match(text) or text == "gpu") and not not_a_device(self, node):
            self._device_string(node, text)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if self.names_nvidia_media:
            text = "".join(part.value if isinstance(part, cst.FormattedStringText) else "{...}" for part in node.parts)
            if _NVIDIA_MEDIA_WORD.search(text):
                self.cuda_only[id(node)] = f"{NVIDIA_MEDIA}: {text!r}"
                return
        first = node.parts[0] if node.parts else None
        if not isinstance(first, cst.FormattedStringText):
            return
        if len(node.parts) == 1 and (DEVICE_STRING.match(first.value) or first.value == "gpu"):
            self._device_string(node, first.value)
        elif first.value.startswith("cuda:"):
            self.device_terms.add(id(node))

    def _device_string(self, node: cst.CSTNode, text: str) -> None:
        """A device name is a device term, except where it is another framework's option
        (Lightning's `accelerator = "cuda"`, "gpu"): the rules leave that as written, so a device
        test around it guards a CUDA-only choice (migrated alone, the NPU would take the branch and
        ask the framework for CUDA)."""
        option = framework_option(self, node)
        if option is not None:
            self.cuda_only[id(node)] = f"{option[0]}={text!r}"
            self.framework_choices.add(self.cuda_only[id(node)])
        elif text != "gpu":
            self.device_terms.add(id(node))

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)
        self.reads.append(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            # (not `CACHE[key] = value`: a store, which no missing key makes raise)
            parent = self.get_metadata(ParentNodeProvider, node, None)
            if not (isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.AnnAssign) and parent.target is node)):
                self.subscripts.append(node)

    def visit_For(self, node: cst.For) -> None:
        self.fors.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        given = library_device_argument(self, node) if self.library_devices else None
        if given is not None and not _on_the_cpu(given[1].value):
            # torchcodec's decoders, torchvision's decode_jpeg: a device test around the call asks
            # for NVIDIA's decoders (NVDEC, nvJPEG), which the NPU has not
            self.cuda_only[id(node)] = given[0] + LIBRARY_DEVICE_CALL
        if (isinstance(node.func, cst.Name) and node.func.value == "next" and len(node.args) == 1
                and isinstance(node.args[0].value, cst.GeneratorExp)):
            self.next_calls.append(node)
        if isinstance(node.func, cst.Name):
            self.calls_by_name.append(node)

    def visit_Try(self, node: cst.Try) -> None:
        if any(handler.type is None or {dotted_name(name) for name in nodes_within(handler.type, cst.Name)}
               & {"KeyError", "LookupError", "Exception", "BaseException"} for handler in node.handlers):
            self.catching_tries.append(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `chip not in FLOPS`: a lookup FLOPS[chip] behind it cannot miss
        if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn)):
            self.membership_tests.add((dotted_name(node.left), dotted_name(node.comparisons[0].comparator)))

    def _launched(self, names: Sequence[str]) -> Optional[str]:
        """What a reference to one of `names` (qualified) launches where it is a kernel of another
        file of the project or a launcher of one, or an attribute of one (`AddFunction.apply`), or
        an operator that a compiled extension registers (no Python of the project does)."""
        for name in names:
            parts = name.split(".")
            if len(parts) >= 4 and parts[:2] == ["torch", "ops"]:
                operator = ".".join(parts[:4])
                kernel = self.launchers.get(OPERATOR_KEY + parts[3])
                if kernel is not None:
                    return f"{operator}, which launches {kernel}"
                if parts[2] not in OPERATORS_ON_THE_NPU and parts[3] not in self.operators:
                    return compiled_operator(operator)
                continue
            if not self.launchers:
                continue
            parts = resolved(name, self.module, self.package).split(".")
            for end in range(len(parts), 1, -1):
                kernel = self.launchers.get(".".join(parts[:end]))
                if kernel is not None:
                    return what_it_launches(parts[end - 1], kernel)
        return None

    def mark_kernel_launches(self) -> None:
        """A kernel the file writes in a GPU kernel language (`@triton.jit def _add_kernel`) runs on
        CUDA only, and so does a function or class of the file that launches one: a device test
        around a launch or a call of one guards CUDA-only code (reading.kernel_launchers; those of
        the project's other files are judged where their names are resolved, `_check`)."""
        for node in self.reads if self.own_launchers else ():
            if (isinstance(node, cst.Name) and node.value in self.own_launchers and id(node) not in self.attribute_names
                    and not isinstance(self.get_metadata(ParentNodeProvider, node, None), (cst.FunctionDef, cst.ClassDef))):
                self.cuda_only.setdefault(id(node), what_it_launches(node.value, self.own_launchers[node.value]))

    def mark_compiled_functions(self) -> None:
        """A function of the file compiled by torch.compile with its default backend (`fast =
        torch.compile(_philox, dynamic=True)`, `@torch.compile def step(...)`) runs inductor's code,
        which a release without inductor for the NPU cannot generate there: a device test choosing
        it over its eager twin (`fast(x) if x.is_cuda else _philox(x)`) guards code that fails on the
        NPU, so the NPU keeps taking the eager one.  Not a model or module compiled (`model =
        torch.compile(model)`): that is the project's own choice, reported where it is made."""
        if not _lacks_npu_inductor(self.api):
            return
        defined = {function.name.value for function in self.functions}
        compiled: Dict[str, str] = {}
        for function in self.functions:
            if any(_compiles_with_inductor(self, decorator.decorator) for decorator in function.decorators):
                compiled[function.name.value] = function.name.value
        bindings: Dict[str, int] = {}
        for assign in self.assigns:
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    bindings[target.target.value] = bindings.get(target.target.value, 0) + 1
        for assign in self.assigns:
            value = assign.value
            if (len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
                    and bindings[assign.targets[0].target.value] == 1 and isinstance(value, cst.Call)
                    and value.args and value.args[0].keyword is None and isinstance(value.args[0].value, cst.Name)
                    and value.args[0].value.value in defined and _compiles_with_inductor(self, value)):
                compiled[assign.targets[0].target.value] = value.args[0].value.value
        release = f"torch_npu {self.api.torch_npu_version}"
        for node in self.reads if compiled else ():
            if (isinstance(node, cst.Name) and node.value in compiled and id(node) not in self.attribute_names
                    and not isinstance(self.get_metadata(ParentNodeProvider, node, None), (cst.FunctionDef, cst.ClassDef))):
                self.cuda_only.setdefault(id(node), f"{node.value} ({INDUCTOR_COMPILED} {compiled[node.value]} with "
                                          f"inductor, which {release} cannot generate code for on the NPU)")

    def _names_a_device(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and any(
            name.rsplit(".", 1)[-1] == "get_device_name" and name.startswith(("torch.cuda.", "torch_npu.npu.", "torch.npu."))
            for name in qualified_names(self, node.func))

    def mark_gpu_name_lookups(self) -> None:
        """`PEAK_FLOPS[torch.cuda.get_device_name()]` (also through a variable holding the name or a
        part of it): a table of NVIDIA GPUs has no key for the NPU's name, so the lookup raises
        where CUDA's absence skipped it.  The lookup stays CUDA-only after migration, unless the
        file asks first whether the table has the key (`if chip not in FLOPS: return None`)."""
        if not (self.subscripts or self.fors or self.next_calls) or not any(
                (read.attr.value if isinstance(read, cst.Attribute) else read.value) == "get_device_name"
                for read in self.reads):
            return  # (no lookup, or the file never asks for the device's name)
        # the names that hold the device's name or a part of it (`name = get_device_name()`, `key =
        # name.split()[-1]`, the parameter of a function of the file that is given it: `def
        # normalized(device_name)` called as `normalized(torch.cuda.get_device_name(0))`), over as
        # many steps as the file takes
        names: Set[str] = set()
        while True:
            found = {dotted_name(target.target) for node in self.assigns if self._from_the_name(node.value, names)
                     for target in node.targets} | {parameter for parameter, _ in self._arguments_given(names)}
            found -= {None} | names
            if not found:
                break
            names |= found
        given: Dict[str, List[cst.BaseExpression]] = {}  # such a parameter -> the arguments it is given
        for parameter, argument in self._arguments_given(names):
            given.setdefault(parameter, []).append(argument)
        lookups = [node for node in self.subscripts if self._from_the_name(node.slice[0].slice.value, names)
                   and (dotted_name(node.slice[0].slice.value), dotted_name(node.value)) not in self.membership_tests]
        caught = self._caught_lookups() if lookups else set()
        readers: List[Tuple[cst.CSTNode, str]] = []  # (what reads the name where it raises, which of the two)
        for node in lookups:
            if id(node) not in caught:
                self.cuda_only[id(node)] = GPU_NAME_LOOKUP
                readers.append((node.slice[0].slice.value, GPU_NAME_LOOKUP))
        # `for key, flops in PEAK.items(): if key in name: return flops` then `raise ...`: where no
        # entry matches the NPU's name, the search ends in the raise
        for loop in self.fors:
            if self._matches_the_name(loop, names):
                for statement in (*self._statements_after(loop), *(loop.orelse.body.body if loop.orelse else ())):
                    if isinstance(statement, cst.SimpleStatementLine) and any(
                            isinstance(part, cst.Raise) for part in statement.body):
                        self.cuda_only[id(statement)] = GPU_NAME_SEARCH
                        readers.append((loop.body, GPU_NAME_SEARCH))
                        break
        # `next(flops for key, flops in PEAK.items() if key in name)`: without a default, a search
        # where no entry matches raises StopIteration
        for call in self.next_calls:
            loops, loop = [], call.args[0].value.for_in
            while loop is not None:
                loops.append(loop)
                loop = loop.inner_for_in
            variables = {name.value for loop in loops for name in nodes_within(loop.target, cst.Name)}
            if any(self._from_the_name(condition.test, names)
                   and variables & {name.value for name in nodes_within(condition.test, cst.Name)}
                   for loop in loops for condition in loop.ifs):
                self.cuda_only[id(call)] = GPU_NAME_SEARCH
                readers.append((call, GPU_NAME_SEARCH))
        self._mark_the_names_read(names, readers, given)

    def _arguments_given(self, names: Set[str]):
        """(parameter, argument) of each call of a function of the file (by its plain name) that
        hands it the device's name or a part of it (`_from_the_name`)."""
        defined = {function.name.value: function for function in self.functions}
        for call in self.calls_by_name:
            function = defined.get(call.func.value)
            if function is None:
                continue
            positional = [param.name.value for param in (*function.params.posonly_params, *function.params.params)]
            for index, argument in enumerate(call.args):
                if argument.star or not self._from_the_name(argument.value, names):
                    continue
                if argument.keyword is not None:
                    yield argument.keyword.value, argument.value
                elif index < len(positional) and not any(earlier.keyword or earlier.star for earlier in call.args[:index]):
                    yield positional[index], argument.value

    def _mark_the_names_read(self, names: Set[str], readers: List[Tuple[cst.CSTNode, str]],
                             given: Dict[str, List[cst.BaseExpression]]) -> None:
        """`name = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"` read by a
        lookup or search that raises (`readers`): the test chooses the key, so it guards the lookup
        though the lookup stands after it; the device's name asked there goes with the lookup (in an
        `if`'s branch as well), over every step from the name to the key, through the calls that
        give a function of the file the name (`given`: parameter -> arguments)."""
        # (a variable of `names`, the function it is read in) -> the lookup or search it reaches
        what_reads: Dict[Tuple[str, int], str] = {}
        pending = [(node, what, self._function_of(node)) for node, what in readers]
        while pending:
            node, what, function = pending.pop()
            for part in nodes_within(node, cst.Name, cst.Attribute):
                name = dotted_name(part)
                if name in names and (name, function) not in what_reads:
                    what_reads[(name, function)] = what
                    for assign in self.assigns:
                        if any(dotted_name(target.target) == name for target in assign.targets) and (
                                self._function_of(assign) in (function, 0)):
                            for call in nodes_within(assign.value, cst.Call):
                                if self._names_a_device(call):
                                    self.cuda_only.setdefault(id(call), what)
                            pending.append((assign.value, what, function))
                    for argument in given.get(name, ()):  # (where the function is called)
                        for call in nodes_within(argument, cst.Call):
                            if self._names_a_device(call):
                                self.cuda_only.setdefault(id(call), what)
                        pending.append((argument, what, self._function_of(argument)))

    def _function_of(self, node: cst.CSTNode) -> int:
        """id of the function `node` stands in (0: the module's code)."""
        function = function_around(self, node)
        return id(function) if function is not None else 0

    def _matches_the_name(self, loop: cst.For, names: Set[str]) -> bool:
        """Whether the loop's body compares its variable with the device's name (`key in name`,
        `name.startswith(key)`)."""
        variables = {name.value for name in nodes_within(loop.target, cst.Name)}
        return any(self._from_the_name(node, names) and variables & {name.value for name in nodes_within(node, cst.Name)}
                   for node in nodes_within(loop.body, cst.Comparison, cst.Call))

    def _statements_after(self, loop: cst.For) -> Tuple[cst.CSTNode, ...]:
        """The statements after `loop` in its block."""
        block = self.get_metadata(ParentNodeProvider, loop, None)
        body = list(block.body) if isinstance(block, (cst.IndentedBlock, cst.Module)) else []
        return tuple(body[body.index(loop) + 1:]) if loop in body else ()

    def _caught_lookups(self) -> Set[int]:
        """The lookups in the body of a `try` that catches a missing key, which cannot raise it (not
        those of a function defined there: they run where it is called)."""
        caught: Set[int] = set()
        for node in self.catching_tries:
            elsewhere = {id(lookup) for function in nodes_within(node.body, cst.FunctionDef)
                         for lookup in nodes_within(function, cst.Subscript)}
            caught.update(id(lookup) for lookup in nodes_within(node.body, cst.Subscript) if id(lookup) not in elsewhere)
        return caught

    def _from_the_name(self, node: cst.CSTNode, names: Set[str]) -> bool:
        """Whether `node` is the device's name or made from it (`get_device_name(0).split(" ")[1]`,
        a variable of `names`); not a key made of it and other values (`(topk, dtype, name)`, a
        cache's key: no table of GPUs)."""
        if isinstance(node, (cst.Tuple, cst.List, cst.Set, cst.Dict)):
            return False
        return any(self._names_a_device(call) for call in nodes_within(node, cst.Call)) or bool(
            names and any(dotted_name(part) in names for part in nodes_within(node, cst.Name, cst.Attribute)))

    def mark_device_questions(self) -> Dict[str, List[cst.BaseExpression]]:
        """`def _fused_ok(self, p): return fused_available() and p.is_cuda and ...`: a function of
        the file that answers with a device test; a call of it (`if self._fused_ok(p):`) is a
        device test too.  name -> the answers it returns that test a device."""
        questions: Dict[str, List[cst.BaseExpression]] = {}
        for function in self.functions:
            answers = [node.value for node in nodes_within(function.body, cst.Return) if node.value is not None]
            # (and `if not (x.is_cuda and ...): return False`: a test that answers by itself)
            tests = [node.test for node in nodes_within(function.body, cst.If) if _answers_at_once(node)]
            tested = [answer for answer in (*answers, *tests) if _mentions_cuda(answer)
                      and _first_in([answer], lambda key: True if key in self.device_terms else None) is not None]
            if tested and all(isinstance(answer, _ANSWERS) for answer in answers):
                questions.setdefault(function.name.value, []).extend(tested)
        for node in self.reads if questions else ():
            name = node.value if isinstance(node, cst.Name) else node.attr.value if (
                isinstance(node, cst.Attribute) and dotted_name(node.value) in ("self", "cls")) else None
            call = self.get_metadata(ParentNodeProvider, node, None)
            if name in questions and isinstance(call, cst.Call) and call.func is node:
                self.device_terms.add(id(node))
        return questions

    def mark_device_variables(self) -> None:
        """`use_cuda = torch.cuda.is_available()`: reading `use_cuda` is a device test too."""
        names: Set[str] = set()
        targets: Set[int] = set(self.attribute_names)
        for node in self.assigns:
            if _first_in([node.value], lambda key: True if key in self.device_terms else None):
                for target in node.targets:
                    name = dotted_name(target.target)
                    if name is not None:
                        names.add(name)
                        targets.add(id(target.target))
        self.device_variables = names
        if names:
            for node in self.reads:
                if id(node) not in targets and dotted_name(node) in names:
                    self.device_terms.add(id(node))


# torch's optimizers with a fused form, as code chooses them by name (`getattr(torch.optim, name)`)
_OPTIMIZER_NAMES = {name.rsplit(".", 1)[-1]: name for name in FUSED_OPTIMIZERS}


# What a question answers with: a test (`a and b`, `x.is_cuda`, `not ok`, `d.type == "cuda"`) or a
# constant (`return False` before the test).
_ANSWERS = (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.Attribute, cst.Name, cst.Call)


# What a guard guards where it asks for NVIDIA's CUDA, not ROCm's, which answers torch.cuda too
# (`torch.version.hip is None and torch.cuda.is_available()`): the project enables what it guards
# on NVIDIA GPUs only, and an NPU is none.
NVIDIA_ONLY = "torch.version.hip is None"


def _asks_its_absence(resolver: "_Resolver", node: cst.CSTNode) -> bool:
    """`torch.version.hip is None`, `not torch.version.hip`: a test that holds where no ROCm is."""
    parent = resolver.get_metadata(ParentNodeProvider, node, None)
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        return True
    return (isinstance(parent, cst.Comparison) and parent.left is node and len(parent.comparisons) == 1
            and isinstance(parent.comparisons[0].operator, (cst.Is, cst.Equal))
            and isinstance(parent.comparisons[0].comparator, cst.Name) and parent.comparisons[0].comparator.value == "None")


# What a guard guards where it makes a tensor's IPC handle (reduce_tensor) in a file that rebuilds such
# handles as CUDA tensors (torch.multiprocessing.reductions.rebuild_cuda_tensor): an NPU tensor's
# handle is rebuilt by torch_npu's rebuild_npu_tensor, which reduce_tensor returns with it, so
# migrated, the handle of an NPU tensor would reach rebuild_cuda_tensor.
SHARED_AS_CUDA = "reduce_tensor, whose handles this file rebuilds as CUDA tensors (rebuild_cuda_tensor)"


# What a guard guards where it chooses a function compiled with inductor (mark_compiled_functions).
INDUCTOR_COMPILED = "torch.compile of"
# What a guard guards where it is a call giving a device to knowledge.library_devices' APIs.
LIBRARY_DEVICE_CALL = "(device=...)"


def _lacks_npu_inductor(api: ApiData) -> bool:
    """Whether the release is known to register no inductor code generator for the NPU."""
    return api.compile_backends is not None and "inductor" not in api.compile_backends


def _compiles_with_inductor(resolver: "_Resolver", node: cst.BaseExpression) -> bool:
    """`torch.compile` or `torch.compile(...)` with the default backend (inductor's), as a call
    or a decorator."""
    call = node if isinstance(node, cst.Call) else None
    func = call.func if call is not None else node
    if "torch.compile" not in qualified_names(resolver, func):
        return False
    backend = next((arg.value for arg in (call.args if call is not None else ())
                    if arg.keyword is not None and arg.keyword.value == "backend"), None)
    return backend is None or (isinstance(backend, cst.SimpleString) and string_text(backend) == "inductor")


def _on_the_cpu(device: cst.BaseExpression) -> bool:
    """Whether a device is written as the CPU (`"cpu"`, `torch.device("cpu")`) or as None."""
    if isinstance(device, cst.Call) and len(device.args) == 1:
        device = device.args[0].value
    if isinstance(device, cst.Name):
        return device.value == "None"
    return (string_text(device) or "").split(":")[0] == "cpu"


def _makes_a_device(value: cst.BaseExpression) -> bool:
    """Whether a value makes a device, no test of one (`torch.device("cuda", i)`): a variable
    holding it goes on being the device where a test reads it (`get_device_capability(device)`)."""
    return isinstance(value, cst.Call) and (dotted_name(value.func) or "").rsplit(".", 1)[-1] == "device"


def _questions_asked_in(function: cst.FunctionDef) -> List[str]:
    """The names a function calls in its tests and in what it returns (`_ok()`, `self._ok()`)."""
    asked = [node.test for node in nodes_within(function.body, cst.If)]
    asked += [node.value for node in nodes_within(function.body, cst.Return) if node.value is not None]
    return [name for expression in asked for call in nodes_within(expression, cst.Call)
            for name in [last_name(call.func)] if name is not None]


def _answers_at_once(node: cst.If) -> bool:
    """Whether the `if` answers its function's question with a constant (`return False`) alone."""
    body = getattr(node.body, "body", ())
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    returned = body[0].body[0]
    return isinstance(returned, cst.Return) and isinstance(returned.value, cst.Name) and returned.value.value in (
        "True", "False", "None")


def _reads_itself(name: str, test: str) -> bool:
    """Whether the code of a test reads the variable `name` as a value of its own (`if use_cuda:`,
    `not cuda_ok`), not an attribute of it (`device.type == "cuda"`)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w(.])", test) is not None


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _cuda_only_name(api: ApiData, name: str, own: FrozenSet[str] = frozenset()) -> bool:
    if name.startswith("torch.cuda."):
        path = name.split(".")[2:]
        if path and path[-1].startswith("__"):
            return False
        return npu_path(api, path) is None
    if name.startswith(CUDA_ONLY_TORCH) or name.startswith(CUDA_ONLY_CLASSES):
        return True
    if name.startswith("torch.") and apidata.lacks_npu_kernel(api, name) is not None:
        return True  # (an operator the release has no NPU kernel for: `torch._int_mm`, `torch._scaled_mm`)
    package = cuda_only_package(name, own)
    # A package's metadata (`flash_attn.__version__`) is no use of its kernels.
    return package is not None and not name.rsplit(".", 1)[-1].startswith("__")


def _mentions_cuda(node: cst.CSTNode) -> bool:
    text = cst.Module(body=()).code_for_node(node).lower()
    return "cuda" in text


class _Finder:
    """Judges the tests the resolver collected (no walk of its own)."""

    def __init__(self, cuda_only: Dict[int, str], device_terms: Set[int], positions, device_variables: Set[str]) -> None:
        self.cuda_only = cuda_only
        self.device_terms = device_terms
        self.positions = positions
        self.device_variables = device_variables  # names assigned a device test (`use_cuda = ...`)
        self.skip: Set[int] = set()  # boolean operations inside one left as written
        self.spans: Dict[Span, Optional[DeadGuard]] = {}
        # the tests (and what they guard) of the dead guards judged so far: a test around one of
        # them guards nothing CUDA-only there, as its branch stays dead on the NPU by itself
        self.covered: Set[int] = set()
        self.exit_guards: Set[int] = set()  # those of `if not D: return` (or raise, ...)
        self.declares_cuda_only = False  # whether a message of the file may say so (_may_declare_cuda_only)
        self.tests_left: List[Tuple[cst.CSTNode, DeadGuard]] = []  # the tests of `if`s left as written, in order
        self.rocm_excluded: Set[int] = set()  # the resolver's (NVIDIA_ONLY)

    # -- what a region holds ---------------------------------------------------------------
    def _first_cuda_only(self, nodes: Iterable[Optional[cst.CSTNode]]) -> Optional[str]:
        covered, cuda_only = self.covered, self.cuda_only
        return _first_in(nodes, lambda key: _COVERED if key in covered else cuda_only.get(key))

    def _excludes_rocm(self, test: cst.CSTNode) -> bool:
        """Whether the test itself (not what it guards) asks that no ROCm be there: NVIDIA_ONLY,
        the reason given where nothing else it guards is CUDA-only."""
        return bool(self.rocm_excluded) and _first_in([test], lambda key: True if key in self.rocm_excluded else None)

    # -- device tests ----------------------------------------------------------------------
    def _is_device_test(self, node: cst.BaseExpression) -> bool:
        return (_first_in([node], lambda key: True if key in self.device_terms else None) is not None
                and self._first_cuda_only([node]) is None)

    def _polarity(self, test: cst.BaseExpression) -> Tuple[List[cst.CSTNode], List[cst.CSTNode]]:
        """(device tests that hold whenever `test` is true, those that hold whenever it is false)."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            when_true, when_false = self._polarity(test.expression)
            return when_false, when_true
        if isinstance(test, cst.BooleanOperation):
            left_true, left_false = self._polarity(test.left)
            right_true, right_false = self._polarity(test.right)
            if isinstance(test.operator, cst.And):
                return left_true + right_true, []
            return [], left_false + right_false
        if isinstance(test, (cst.Comparison, cst.Call, cst.Attribute, cst.Name, cst.Subscript)):
            if not self._is_device_test(test):
                return [], []
            if isinstance(test, cst.Comparison) and any(
                isinstance(c.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)) for c in test.comparisons
            ):
                return [], [test]
            return [test], []
        return [], []

    def _add(self, node: cst.CSTNode, guard: Optional[DeadGuard]) -> None:
        self.spans[npu_aware.span_of(self.positions.get(node), node)] = guard

    def _judge(self, test: cst.BaseExpression, when_true: Sequence[cst.CSTNode], when_false: Sequence[cst.CSTNode],
               true_part: Sequence[Optional[cst.CSTNode]], false_part: Sequence[Optional[cst.CSTNode]]) -> None:
        """Leave `test` (and the part it guards) as written if the guarded part is CUDA-only."""
        for devices, guarded in ((when_true, true_part), (when_false, false_part)):
            if not devices:
                continue
            hit = self._first_cuda_only([test, *guarded])
            if hit is None and self.declares_cuda_only:
                declared = self._fallback_says_cuda_only(false_part if guarded is true_part else true_part, guarded)
                hit = f"{CUDA_ONLY_FALLBACK}: {declared!r}" if declared else None
            if hit is None and devices is when_true and self._excludes_rocm(test):
                hit = NVIDIA_ONLY
            if hit is None:
                continue
            code = _one_line(test)
            tf32 = any(node is not None and "allow_tf32" in cst.Module(body=()).code_for_node(node) for node in guarded)
            self._add(test, DeadGuard(code, hit, gates_tf32=tf32))
            self.tests_left.append((test, self.spans[npu_aware.span_of(self.positions.get(test), test)]))
            # (not where the test reads a variable as the test itself: what is assigned to it,
            # around this test too, stays as written with it)
            cover = not any(_reads_itself(name, code) for name in self.device_variables)
            for node in (test, *guarded) if cover else ():
                if node is not None:
                    self.covered.add(id(node))
            for node in guarded:
                if node is not None:
                    self._add(node, None)
            return

    def _fallback_says_cuda_only(self, other: Sequence[Optional[cst.CSTNode]],
                                 guarded: Sequence[Optional[cst.CSTNode]]) -> Optional[str]:
        """The message of the branch beside a guarded one where it says that what is guarded needs
        CUDA and goes on (`print("FP8 training requires CUDA, ignoring --fp8")`), and what is
        guarded chooses no device (`device = "cuda"` after "CUDA not found, using the CPU" is the
        device's choice, which moves); else None."""
        block = other[0] if len(other) == 1 else None
        if not isinstance(block, cst.IndentedBlock) or _stops(block):
            return None
        if _first_in(guarded, lambda key: True if key in self.device_terms else None) is not None or any(
                isinstance(call.func, cst.Attribute) and call.func.attr.value in ("cuda", "to")
                for node in guarded if node is not None for call in nodes_within(node, cst.Call)):
            return None  # (a choice of the device, or a move to it: `model = model.cuda()`)
        for statement in block.body:
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                call = small.value if isinstance(small, cst.Expr) else None
                name = dotted_name(call.func) if isinstance(call, cst.Call) else None
                if name is not None and name.rsplit(".", 1)[-1] in MESSAGE_CALLS:
                    text = _message_saying([arg.value for arg in call.args], _NEEDS_CUDA_MESSAGE)
                    if text is not None:
                        return text
        return None

    def visit_If(self, node: cst.If) -> None:
        when_true, when_false = self._polarity(node.test)
        orelse = node.orelse.body if isinstance(node.orelse, cst.Else) else node.orelse
        self._judge(node.test, when_true, when_false, [node.body], [orelse])
        test_span = npu_aware.span_of(self.positions.get(node.test), node.test)
        if (when_true or when_false) and test_span not in self.spans:
            # A device test around a test left as written (`if x.device.type != "cuda":` around
            # `if not torch.cuda.is_available(): raise ...`): migrating the outer one alone would
            # send the NPU past the inner one, into what it guards.
            body = self.positions.get(node.body)
            inner = next((guard for (_, start, _, end, _), guard in self.spans.items() if guard is not None
                          and id(guard) in self.exit_guards and body.start.line <= start and end <= body.end.line), None)
            if inner is not None:
                code = _one_line(node.test)
                self.spans[test_span] = DeadGuard(code, inner.guarded, inner.gates_tf32)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        when_true, when_false = self._polarity(node.test)
        self._judge(node.test, when_true, when_false, [node.body], [node.orelse])

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        # `use_flash = D and X`: X is evaluated only where D holds.
        if id(node) in self.skip:
            return False
        if npu_aware.span_of(self.positions.get(node), node) in self.spans:
            # the test of an `if` judged already, with what its branch holds: so is every part of it
            # (`(a and b and c)` holds the chain `a and b` of its own)
            _first_in([node], lambda key: self.skip.add(key))
            return False
        when_true, when_false = self._polarity(node)
        if (when_true and isinstance(node.operator, cst.And)) or (when_false and isinstance(node.operator, cst.Or)):
            hit = self._first_cuda_only([node])
            if hit is None and when_true and isinstance(node.operator, cst.And) and self._excludes_rocm(node):
                hit = NVIDIA_ONLY
            if hit is not None:
                code = _one_line(node)
                self._add(node, DeadGuard(code, hit))
                _first_in([node], lambda key: self.skip.add(key))  # (lookup returns None: walks all)
                return False
        return True

    def _block(self, body: Sequence[cst.CSTNode], continuation: List[cst.CSTNode]) -> None:
        """`if not D: return` (or `raise`) guards what runs after it up to the end of the function:
        the rest of its block and of the blocks around it; `continue`/`break`, the rest of the
        loop's block.  Nested functions and classes are judged on their own."""
        for index, statement in enumerate(body):
            after = list(body[index + 1:])
            rest = after + continuation
            for branch in _exiting_chain(statement):
                # (`if A: raise ... elif B: raise ...`: each test stops what follows the chain)
                _, when_false = self._polarity(branch.test)
                leaves_function = exits(branch.body, (cst.Return, cst.Raise))
                guarded = rest if leaves_function else after
                if when_false:
                    raised = branch.body.body[-1] if isinstance(branch.body, cst.IndentedBlock) else None
                    message = (raised.body[-1].exc if isinstance(raised, cst.SimpleStatementLine) and raised.body
                               and isinstance(raised.body[-1], cst.Raise) else None)
                    self._exit_guard(branch.test, guarded, message, branch.body)
            if isinstance(statement, cst.SimpleStatementLine):
                # `assert D, msg` guards what follows it as `if not D: raise` does, where D names
                # CUDA itself (`x.is_cuda`, `.type == "cuda"`): an assert of a type or a shape that
                # reads a device variable (`isinstance(device, torch.device)`) is no device test
                for small in statement.body:
                    if (isinstance(small, cst.Assert) and "cuda" in _one_line(small.test).lower()
                            and self._polarity(small.test)[0]):
                        self._exit_guard(small.test, rest, small.msg)
            for block in _blocks_of(statement):
                self._block(block, rest)

    def _exit_guard(self, test: cst.BaseExpression, guarded: List[cst.CSTNode], message: Optional[cst.CSTNode],
                    body: Optional[cst.BaseSuite] = None) -> None:
        """Leave a test that stops the program off CUDA (or leaves its function, its loop) as
        written where what runs after it is CUDA-only: a name of it, the word of the test's
        message, or that of the message of its `body` where that goes on elsewhere."""
        in_guarded = self._first_cuda_only(guarded)
        # (the test's own CUDA-only name first, as the report names what comes first)
        hit = (self._first_cuda_only([test]) or in_guarded) if in_guarded is not None else None
        code = _one_line(test)
        if hit is None and "cuda" in code.lower():  # (a test that names CUDA itself)
            declared = _declared_cuda_only(message)
            if declared:
                hit = f"{CUDA_ONLY_DECLARED}: {declared!r}"
            elif body is not None and self.declares_cuda_only:
                declared = self._fallback_says_cuda_only([body], guarded)
                hit = f"{CUDA_ONLY_FALLBACK}: {declared!r}" if declared else None
        if hit is not None:
            guard = DeadGuard(code, hit)
            self.exit_guards.add(id(guard))
            self._add(test, guard)
            # (a question it asks, `if not _eligible(x): return None`, answers for CUDA as written too)
            self.tests_left.append((test, guard))

    def visit_Module(self, node: cst.Module) -> None:
        self._block(node.body, [])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self._block(node.body.body, [])
        for decorator in node.decorators:
            self.skip_decorator(decorator.decorator, node.body)

    def skip_decorator(self, decorator: cst.BaseExpression, body: cst.BaseSuite) -> None:
        """`@unittest.skipUnless(torch.cuda.is_available(), "the op is CUDA-only")`, `@pytest.mark.
        skipif(not D, reason=...)`: the condition guards the test as `if not D: return` guards
        what follows it, and stays as written where the test is CUDA-only (what it runs, or what
        the reason says): switched to the NPU it would run there a test that cannot pass."""
        if not isinstance(decorator, cst.Call) or not decorator.args or decorator.args[0].keyword is not None:
            return
        runs_when_true = _SKIPS.get((dotted_name(decorator.func) or "").rsplit(".", 1)[-1])
        if runs_when_true is None:
            return
        condition = decorator.args[0].value
        reason = next((argument.value for argument in decorator.args[1:]
                       if argument.keyword is None or argument.keyword.value in ("reason", "msg")), None)
        when_true, when_false = self._polarity(condition)
        if when_true if runs_when_true else when_false:
            self._exit_guard(condition, [body], reason)


# Decorators that skip the test they decorate, by the last part of their names: whether the test
# runs where the condition holds (unittest's skipUnless) or where it does not (skipIf, pytest's skipif).
_SKIPS = {"skipUnless": True, "skipIf": False, "skipif": False}


def _may_declare_cuda_only(code: str) -> bool:
    """Whether some text of the file says that something runs on CUDA only (_CUDA_ONLY_MESSAGE):
    the expression is tried only around each "only" (a search of the whole file with it costs
    a dozen times more, and nearly every file holds an "only" somewhere)."""
    for word, message in (("only", _CUDA_ONLY_MESSAGE), ("Only", _CUDA_ONLY_MESSAGE), ("ONLY", _CUDA_ONLY_MESSAGE),
                          ("requir", _NEEDS_CUDA_MESSAGE), ("need", _NEEDS_CUDA_MESSAGE)):
        at = code.find(word)
        while at >= 0:
            around = code[max(0, at - 30):at + 70].lower()
            if ("cuda" in around or "nvidia" in around) and message.search(around):
                return True
            at = code.find(word, at + 4)
    return False


def _declared_cuda_only(message: Optional[cst.CSTNode]) -> Optional[str]:
    """The text of a message that says the code it stops is CUDA-only, or None: that it runs on
    CUDA only, or that a thing it names, which has no NPU form, needs CUDA ("flex_attention requires
    CUDA"; "requires CUDA" alone asks for an accelerator, which the NPU is)."""
    if message is None:
        return None
    declared = _message_saying([message], _CUDA_ONLY_MESSAGE)
    if declared is None:
        needs = _message_saying([message], _NEEDS_CUDA_MESSAGE)
        declared = needs if needs is not None and _CUDA_ONLY_THING.search(needs) else None
    return declared


# What a message may name as the thing that needs CUDA where that thing has no NPU form: a CUDA-only
# package (flash_attn, xformers, "flash-attn"; not the packages of which only a part is, nor NVIDIA
# CUDA Python's `cuda`, whose names are words of every such message) or torch's flex_attention,
# which refuses NPU tensors.
_CUDA_ONLY_THING = re.compile(
    r"(?<![\w.-])(" + "|".join(sorted({re.escape(name).replace("_", "[_ -]?")
                                         for name in CUDA_ONLY_PACKAGES if "." not in name and name != "cuda"}
                                        | {"flex[_ -]?attention", "nvshmem"}, key=len, reverse=True))
    + r")(?![\w-])", re.IGNORECASE)


def _message_saying(parts: Sequence[cst.CSTNode], saying: "re.Pattern") -> Optional[str]:
    """The text of a message (its strings, spaces folded) where it says `saying` of CUDA and names
    no other device, or None."""
    text = " ".join("".join(text for part in parts for text in _strings_in(part)).split())
    if saying.search(text) and not _OTHER_DEVICE_WORD.search(text):
        return text
    return None


def _strings_in(node: cst.CSTNode) -> List[str]:
    """The literal text of the strings in `node` (an f-string's text between its fields)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return [value if isinstance(value, str) else value.decode("utf-8", "replace")]
    if isinstance(node, cst.FormattedStringText):
        return [node.value]
    if isinstance(node, cst.FormattedStringExpression):
        return ["{...}"]
    return [text for child in node.children for text in _strings_in(child)]


def _exiting_chain(statement: cst.CSTNode) -> List[cst.If]:
    """The `if` and its `elif`s where every branch exits and none is an `else`: what follows the
    chain runs only where each test is false ([] for any other statement)."""
    chain = []
    while isinstance(statement, cst.If) and exits(statement.body):
        chain.append(statement)
        statement = statement.orelse
    return chain if statement is None else []


def _blocks_of(statement: cst.CSTNode) -> List[Sequence[cst.CSTNode]]:
    """The statement lists directly inside a compound statement (not functions or classes)."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) or not isinstance(statement, cst.BaseCompoundStatement):
        return []
    blocks = []
    suites = [getattr(statement, "body", None), getattr(statement, "orelse", None), getattr(statement, "finalbody", None)]
    suites += [handler.body for handler in getattr(statement, "handlers", ())]
    for suite in suites:
        while isinstance(suite, (cst.If, cst.Else, cst.Finally, cst.ExceptHandler)):
            if isinstance(suite, cst.If):
                blocks.extend(_blocks_of(suite))
                suite = None
                break
            suite = suite.body
        if isinstance(suite, cst.IndentedBlock):
            blocks.append(suite.body)
    return blocks


def _one_line(node: cst.CSTNode) -> str:
    """The code of a test on one line, as a report's OP column shows it, without its comments
    (which, joined into the line, would run over the code after them and read as names)."""
    return " ".join(cst.Module(body=()).code_for_node(node.visit(_WithoutComments())).split())


class _WithoutComments(cst.CSTTransformer):
    """The node with its comments dropped (the code and its line breaks kept)."""

    def leave_TrailingWhitespace(self, original_node, updated_node):
        return updated_node.with_changes(comment=None)

    def leave_EmptyLine(self, original_node, updated_node):
        return updated_node.with_changes(comment=None)


# What a lookup answers for a subtree that a walk for the first hit passes over.
_COVERED = object()


class _FirstHit(cst.CSTVisitor):
    """Stops at the first node `lookup(id(node))` answers for."""

    def __init__(self, lookup) -> None:
        super().__init__()
        self.lookup = lookup
        self.found: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        hit = self.lookup(id(node))
        if hit is _COVERED:
            return False
        if hit is not None:
            self.found.append(hit)
            return False
        return not self.found


def _first_in(nodes: Iterable[Optional[cst.CSTNode]], lookup):
    """The first non-None `lookup(id(node))` over the subtrees of `nodes`, or None."""
    finder = _FirstHit(lookup)
    for node in nodes:
        if node is not None and not finder.found:
            walk(finder, node)
    return finder.found[0] if finder.found else None


def _stops(block: cst.IndentedBlock) -> bool:
    """Whether the block ends the program's run: a `raise`, or a call of exit (sys.exit, quit...)."""
    last = block.body[-1] if block.body else None
    if not isinstance(last, cst.SimpleStatementLine) or not last.body:
        return False
    end = last.body[-1]
    if isinstance(end, cst.Raise):
        return True
    call = end.value if isinstance(end, cst.Expr) else None
    name = dotted_name(call.func) if isinstance(call, cst.Call) else None
    return name is not None and name.rsplit(".", 1)[-1] in ("exit", "_exit", "quit", "abort")


def exits(block: cst.BaseSuite, kinds=EXITS) -> bool:
    """Whether the block ends by leaving it (`return`, `raise`, `continue`, `break`; or those of `kinds`)."""
    body = block.body if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return bool(last.body) and isinstance(last.body[-1], kinds)
    return isinstance(last, kinds)


# (CUDA Python's `cuda` by its modules: the word alone is in every `torch.cuda` too)
# Other frameworks' device options count: the rules leave their values as written (names.FRAMEWORK_OPTIONS).
# (an option asked for anywhere is found inside a longer name too, `self._accelerator_flag`, as
# names.framework_option finds it)
_CUDA_ONLY_WORD = re.compile(r"\b(%s)\b|(?<![\w.])cuda\.\w|\bfrom\s+cuda\s+import\b|%s" % ("|".join(sorted(
    # (transformers' CUDA-only integrations by their own name: the package's is in most files)
    {package.rsplit(".", 1)[-1] if package.startswith("transformers.") else package.split(".")[0]
     for package in CUDA_ONLY_PACKAGES if package != "cuda"}
    | {name.rsplit(".", 1)[-1] for name in CUDA_ONLY_TORCH + CUDA_ONLY_CLASSES}
    | {callee.rsplit(".", 1)[-1] for option, callees, _ in FRAMEWORK_OPTIONS for callee in callees or ()}
    | {"get_device_name", FLEX})), "|".join(option for option, callees, _ in FRAMEWORK_OPTIONS if callees is None)))
_CUDA_CHAIN = re.compile(r"\bcuda((?:\.\w+)+)")
_FUSED_FLAG = re.compile(r"""\bfused["']?\s*[=:]\s*True\b""")
# (what CUDA_BUILD_STRING matches needs: a name before "-gpu", not an option's "--gpu")
_CUDA_BUILD_WORD = re.compile(r"[\w.]-gpu\b|\[cuda|ExecutionProvider")
_PROPERTY_FIELD = re.compile(r"\.(%s)\b" % "|".join(sorted(CUDA_PROPERTY_FIELDS)))
_CUDA_IMPORT = re.compile(r"\bfrom\s+torch\.cuda((?:\.\w+)*)\s+import\s+\(?([\w\s,]+)")


def _may_hold_cuda_only(code: str, api: ApiData) -> bool:
    """A cheap test on the text, before any tree walk: whether the file may refer to something
    that stays CUDA-only (a CUDA-only package or class, a torch.cuda name the release lacks)."""
    if _CUDA_ONLY_WORD.search(code) or _CUDA_BUILD_WORD.search(code) or "_C._cuda" in code:
        return True
    if _may_declare_cuda_only(code):
        return True  # (a test whose message says that what it stops is CUDA-only)
    if "version.hip" in code:
        return True  # (a test that asks for NVIDIA's CUDA, not ROCm's: NVIDIA_ONLY)
    if _NVIDIA_MEDIA_WORD.search(code):
        return True  # (code that names NVIDIA's video or image engines: NVIDIA_MEDIA)
    if any(word in code for word in LIBRARY_DEVICE_WORDS):
        return True  # (a device given to torchcodec, decode_jpeg: knowledge.library_devices)
    if "reduce_tensor" in code and ("rebuild_cuda_tensor" in code or not shares_npu_tensors(api)):
        return True  # (a tensor shared by its IPC handle: SHARED_AS_CUDA)
    if any(npu_aware.question_of_cuda(name) for name in npu_aware.called_names(code) if "cuda" in name.lower()):
        return True  # (the project's own question about CUDA, asked by the guard walk's test)
    if "get_device_properties" in code and _PROPERTY_FIELD.search(code):
        return True
    for chain in set(_TORCH_CHAIN.findall(code)):
        parts = chain.split(".")
        if apidata.lacks_npu_kernel(api, chain) or (len(parts) >= 4 and parts[1] == "ops"
                                                     and parts[2] not in OPERATORS_ON_THE_NPU):
            return True  # (an operator the release has no NPU kernel for, or a compiled extension's)
    if _FUSED_FLAG.search(code) and not all(has_fused_kernel(api, name) for name in FUSED_OPTIMIZERS):
        return True
    for chain in _CUDA_CHAIN.findall(code):
        if not migratable_cuda_path(api, chain.split(".")[1:]):
            return True
    for module, names in _CUDA_IMPORT.findall(code):
        prefix = module.split(".")[1:]
        if any(name and not migratable_cuda_path(api, prefix + [name]) for name in re.findall(r"\w+", names)
               if name != "as"):
            return True
    return False


_TORCH_CHAIN = re.compile(r"\btorch(?:\.\w+)+")


def guarded_spans(wrapper: MetadataWrapper, api: ApiData, code: str, aliases: Dict[str, Set[str]],
                  rerouted: Set[str] = frozenset(), scopes=None, facts=None, own: FrozenSet[str] = frozenset(),
                  npu_backend: bool = False, launchers: Tuple[Tuple[str, str], ...] = (),
                  operators: FrozenSet[str] = frozenset(), npu_constants: FrozenSet[str] = frozenset(),
                  module: Optional[str] = None, package: bool = False,
                  kernel_questions: Tuple[Tuple[str, str], ...] = (), enum_parameters=()):
    """(the NPU-aware spans of `npu_aware`, the dead guards of `dead_guards`), from one walk of
    the original file.  `code` is its text, `aliases` its imports (names.ImportAliases),
    `rerouted` the names of CUDA-only packages that the rules point at an NPU implementation
    (flash_attn.ReroutePlan): valid after migration; `scopes` what its names stand for where
    they are read (scopes.Scopes); `npu_backend`: the file is part of the project's own NPU backend
    (its Triton kernels are Triton-Ascend's); `launchers`: the kernels and their launchers of the
    project's files (Options.kernel_launchers), `module` and `package` the file's module, which
    its relative imports of them are read in (reading.kernel_launchers); `kernel_questions` the
    project's functions asked before a call of a launcher (Options.kernel_questions);
    `enum_parameters` where the project's Enums take their values (Options.enum_parameters)."""
    constants = npu_constants | npu_constants_in(code)  # (the project's, and the file's own where run alone)
    if "cuda" not in code.lower():
        return npu_aware.guarded_spans(wrapper, code=code, constants=constants), {}
    operators = operators | registered_operators(code)  # (the file's own, where run alone)
    own_launchers: Dict[str, str] = {}
    if not npu_backend:
        # (the whole file's, where the rules are given a piece of it)
        whole = facts.kernel_launchers if facts is not None else None
        own_launchers = without_operators(whole if whole is not None else launchers_in(code), operators)
        own_operators = {name: kernel for name, kernel in own_launchers.items() if name.startswith(OPERATOR_KEY)}
        project, called = launchers_by_name(launchers)
        launchers = {**project, **own_operators} if own_operators else project
    else:
        launchers, called = {}, frozenset()
    asked_elsewhere = _questions_by_module(kernel_questions).get(module, {}) if module is not None else {}
    if not (_may_hold_cuda_only(code, api) or _may_call(code, called, own_launchers.keys()) or asked_elsewhere
            or (_lacks_npu_inductor(api) and ("torch.compile" in code or "import compile" in code))):
        return npu_aware.guarded_spans(wrapper, code=code, constants=constants), {}
    resolver = _Resolver(api, aliases, rerouted, scopes, own)
    resolver.asked_elsewhere = asked_elsewhere
    resolver.enum_parameters = enum_parameters  # (an Enum's "cuda" stays: no device term)
    resolver.file_facts = facts  # (what the whole file says, where the tree is a piece of it)
    resolver.declares_cuda_only = _may_declare_cuda_only(code)
    resolver.rebuilds_cuda_tensors = "rebuild_cuda_tensor" in code
    resolver.library_devices = any(word in code for word in LIBRARY_DEVICE_WORDS)
    resolver.names_nvidia_media = _NVIDIA_MEDIA_WORD.search(code) is not None
    resolver.own_launchers, resolver.launchers, resolver.module, resolver.package = own_launchers, launchers, module, package
    resolver.operators = operators
    spans = npu_aware.guarded_spans(wrapper, resolver, constants=constants)
    resolver.mark_gpu_name_lookups()
    resolver.mark_fused_flags()
    resolver.mark_kernel_launches()
    resolver.mark_compiled_functions()
    return spans, dead_guards(wrapper, resolver)


# What a guard guards where it is a GPU kernel or a call of a launcher of one (mark_kernel_launches).
_KERNEL_GUARDED = re.compile(r"(^|, which launches )the [\w ]+ kernel [\w.]+$")


def guards_a_kernel(guarded: str) -> bool:
    return _KERNEL_GUARDED.search(guarded) is not None


@functools.lru_cache(maxsize=4)
def _questions_by_module(kernel_questions: Tuple[Tuple[str, str], ...]) -> Dict[str, Dict[str, str]]:
    """Options.kernel_questions by module: module -> {function name: what it is asked before}."""
    found: Dict[str, Dict[str, str]] = {}
    for name, launched in kernel_questions:
        module, _, function = name.rpartition(".")
        found.setdefault(module, {})[function] = launched
    return found


def _may_call(code: str, *names: Iterable[str]) -> bool:
    """Whether the file may call one of the GPU kernels or launchers (`names`: groups of the last
    parts of their names)."""
    if not any(names):
        return False
    words = set(_WORD.findall(code))
    return any(not words.isdisjoint(group) for group in names)


_WORD = re.compile(r"[A-Za-z_]\w*")


# A test of whether CUDA is there at all (not of what it can do: is_bf16_supported() and the like
# raise on a machine without CUDA, so a capability test is never left as written for its neighbour).
_AVAILABILITY = re.compile(r"\b(is_available|device_count)\b")


def _availability_beside_choices(finder: "_Finder", resolver: "_Resolver", parents) -> None:
    """`Trainer(accelerator="gpu" if torch.cuda.is_available() else "cpu",
    devices=torch.cuda.device_count() if torch.cuda.is_available() else 1)`: the accelerator's
    test is left as written (the framework has no NPU choice), so on the NPU the framework runs on
    the CPU.  The same question asked for the option beside it, in the same call or dict, gets the
    same answer: migrated alone it would ask for the NPUs' count of CPU processes.  Either may be
    written through a variable the file assigns once (`accel = ...; Trainer(accelerator=accel,
    devices=n_dev)`)."""
    def test_guard(ifexp: cst.IfExp) -> Optional[DeadGuard]:
        return finder.spans.get(npu_aware.span_of(finder.positions[ifexp.test], ifexp.test))

    # variables the file assigns once, to a conditional expression: (name -> it)
    assigned: Dict[str, List[cst.BaseExpression]] = {}
    for node in resolver.assigns:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            assigned.setdefault(node.targets[0].target.value, []).append(node.value)
    chosen = {name: values[0] for name, values in assigned.items()
              if len(values) == 1 and isinstance(values[0], cst.IfExp)}

    def through_variable(value: cst.BaseExpression) -> cst.BaseExpression:
        return chosen.get(value.value, value) if isinstance(value, cst.Name) else value

    for ifexp in resolver.ifexps:
        guard = test_guard(ifexp)
        if guard is None or guard.guarded not in resolver.framework_choices:
            continue
        used = parents.get(ifexp)
        if isinstance(used, cst.Assign):  # (the choice held by a variable: where the variable is handed on)
            name = used.targets[0].target if len(used.targets) == 1 else None
            places = [read for read in resolver.reads if isinstance(name, cst.Name) and chosen.get(name.value) is ifexp
                      and isinstance(read, cst.Name) and read.value == name.value]
        else:
            places = [ifexp]
        for place in places:
            holder = parents.get(parents.get(place))  # (its Arg or DictElement, then their Call or Dict)
            if isinstance(holder, cst.Call):
                values = [arg.value for arg in holder.args]
            elif isinstance(holder, cst.Dict):
                values = [element.value for element in holder.elements if isinstance(element, cst.DictElement)]
            else:
                continue
            for value in map(through_variable, values):
                if isinstance(value, cst.IfExp) and value is not ifexp:
                    _leave_beside(finder, value, guard)


def _leave_beside(finder: "_Finder", value: cst.IfExp, guard: DeadGuard) -> None:
    """Leave `value`'s test as written for the framework choice `guard` beside it, where it asks
    whether CUDA is there (_AVAILABILITY) and is not judged already."""
    test_span = npu_aware.span_of(finder.positions[value.test], value.test)
    when_true, when_false = finder._polarity(value.test)
    code = _one_line(value.test)
    if test_span in finder.spans or not (when_true or when_false) or not _AVAILABILITY.search(code):
        return
    for part in (value.body, value.orelse):
        finder.covered.add(id(part))
        finder.spans[npu_aware.span_of(finder.positions[part], part)] = None
    # (after its parts: the rules find a span by its lines, and a part may have the test's)
    finder.spans[test_span] = DeadGuard(code, guard.guarded, beside=True)


def dead_guards(wrapper: MetadataWrapper, resolver: "_Resolver") -> Dict[Span, Optional[DeadGuard]]:
    """Spans of the original file left as written because they test for CUDA around code that
    stays CUDA-only: the test's span maps to its DeadGuard (a report row), the code it guards to
    None.  `resolver` has walked the file."""
    declared = resolver.declares_cuda_only

    def nothing_to_judge() -> bool:
        return not (resolver.cuda_only or declared or resolver.asked_elsewhere or resolver.rocm_excluded)

    if nothing_to_judge():
        return {}
    # A bf16 gate's capability test becomes the NPU's bf16 test (NPU111): valid after migration.
    for node in (*resolver.ifs, *resolver.ifexps):
        path = bf16_capability.bf16_gate(resolver, node)
        if path is not None:
            for part in nodes_within(bf16_capability.gate_comparison(node.test, path), cst.Name, cst.Attribute):
                resolver.cuda_only.pop(id(part), None)
    if nothing_to_judge():  # (again: those were perhaps all there was)
        return {}
    resolver.mark_device_variables()
    questions = resolver.mark_device_questions()
    finder = _Finder(resolver.cuda_only, resolver.device_terms, wrapper.resolve(PositionProvider),
                     resolver.device_variables)
    finder.declares_cuda_only = declared
    finder.rocm_excluded = resolver.rocm_excluded
    # `return`/`raise` guards first (an `if` around one asks about it), then the tests.
    finder.visit_Module(wrapper.module)
    for function in resolver.functions:
        finder.visit_FunctionDef(function)
    for definition in resolver.decorated_classes:
        for decorator in definition.decorators:
            finder.skip_decorator(decorator.decorator, definition.body)
    # the inner tests first: a test around a dead one is judged without what that one guards
    # (a later start is never an outer one)
    positions = finder.positions
    for node in sorted([*resolver.ifs, *resolver.ifexps], reverse=True,
                       key=lambda node: (positions[node].start.line, positions[node].start.column)):
        if isinstance(node, cst.If):
            finder.visit_If(node)
        else:
            finder.visit_IfExp(node)
    for node in resolver.boolops:
        finder.visit_BooleanOperation(node)
    _availability_beside_choices(finder, resolver, wrapper.resolve(ParentNodeProvider))
    # A question of the file asked by a test left as written answers for CUDA as written too: its
    # answer chooses the CUDA-only code (`if self._fused_ok(p): fused_step(...)`).
    # ... and so does one that a test of another file asks before a call of a launcher.
    asked = [(last_name(call.func), guard.guarded, guard.gates_tf32)
             for test, guard in (finder.tests_left if questions else ()) for call in nodes_within(test, cst.Call)]
    asked += [(name, launched, False) for name, launched in resolver.asked_elsewhere.items()]
    # ... and so does a question of the file that such a question asks in turn, in its tests or
    # answers (`if not _lacks_fp8_kernel(x): return False`: its answer is part of the first's)
    functions = {function.name.value: function for function in resolver.functions} if questions else {}
    answered: Set[str] = set()
    for name, guarded, gates_tf32 in asked:  # (the list grows as it goes)
        if name in answered:
            continue
        answered.add(name)
        for answer in questions.get(name, ()):
            # (what the answer launches says more than that it asks for NVIDIA: NVIDIA_ONLY gives way)
            span = npu_aware.span_of(finder.positions[answer], answer)
            left = finder.spans.get(span)
            if span not in finder.spans or (left is not None and left.guarded == NVIDIA_ONLY):
                finder.spans[span] = DeadGuard(_one_line(answer), guarded, gates_tf32)
        if name in questions and name in functions:
            asked += [(inner, guarded, gates_tf32) for inner in _questions_asked_in(functions[name])
                      if inner in questions and inner not in answered]
    # `use_cuda = torch.cuda.is_available()` ... `if use_cuda: <CUDA-only>`: the variable's
    # value is the test, so it stays as written too.
    # (also where the test reads it negated or beside others: `if not cuda_available: raise ...`)
    tested = [guard for guard in finder.spans.values() if guard is not None]
    for node in resolver.assigns if tested else ():
        for target in node.targets:
            name = dotted_name(target.target)
            # (read as the test itself, `if use_cuda:`; a device whose type the test compares,
            # `x.device.type == "cuda"`, goes on being the device: the test stays, the device moves)
            guard = next((guard for guard in tested if name and _reads_itself(name, guard.test)), None) if name else None
            if guard is not None and _mentions_cuda(node.value) and not _makes_a_device(node.value):
                finder.spans[npu_aware.span_of(finder.positions[node.value], node.value)] = DeadGuard(
                    _one_line(node.value), guard.guarded, guard.gates_tf32)
    return finder.spans
