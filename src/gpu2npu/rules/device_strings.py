"""Device strings in code: "cuda" -> "npu", "cuda:0" -> "npu:0", f"cuda:{i}" -> f"npu:{i}"."""
from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Report
from .base import Example, Rule
from .device_tests import DeviceTypeTests, is_device_test
from .names import (DEVICE_STRING, DocstringTracker, an_attribute_name, cuda_only_table_entry, cuda_switch_of, cuda_switch_tip,
                    framework_option, names_a_method,
                    not_a_device, of_a_properties_query_left, string_text, with_string_text)
from .walk import ParentNodeProvider

TENSOR_TYPE_STRING = re.compile(r"^torch\.cuda\.[A-Z][A-Za-z0-9]*Tensor$")


class CudaDeviceStrings(DocstringTracker, Rule):
    """String literals that name a CUDA device name the NPU instead.

    Only strings that *are* a device spec change: `"cuda"`, `"cuda:0"`, `"cuda:{}"` (a `.format`
    template), `"cuda:%d"`, and f-strings `f"cuda:{rank}"` (or without placeholders, `f"cuda"`).  That covers `torch.device(...)`,
    `.to(...)`, `map_location=`, `torch.autocast("cuda")`, argparse defaults and comparisons such
    as `device.type == "cuda"`, so the code stays consistent with itself (a test of a device is
    recorded under its own code, NPU116: after it the CUDA branch runs on the NPU).  Strings given to
    another framework's own device option (Lightning's `accelerator="cuda"`, also through a
    variable or an argparse default of that name) are not torch devices: Lightning rejects "npu",
    so they are left as written and reported.  "cuda" as a platform's label is no device either:
    beside other platforms' labels (`("cpu", "cuda", "vulkan")`, `Literal["torch", "cuda",
    "proton"]`), or compared with, given to or returned by what the file elsewhere compares with
    one (`backend == "rocm"`): an installer's bundle, a profiler, a kernel's implementation, which
    manifests and callers still name "cuda".  Tensor type names
    (`'torch.cuda.FloatTensor'`) become `'torch.npu.FloatTensor'`.  Prose that merely
    contains the word ("running on cuda"), docstrings and comments are never touched.  Under
    `distributed` and `-s` a fixed index ("cuda:0") becomes plain "npu", the NPU of the process;
    with `-s` so do templates and f-strings, whose index the DEVICE_ID variable now decides.
    """

    code = "NPU103"
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    summary = 'device strings "cuda", "cuda:N", f"cuda:{i}" -> "npu", "npu:N", f"npu:{i}"'
    triggers = ("cuda",)
    examples = (
        Example(
            'import torch\ndevice = torch.device("cuda:0")\n',
            'import torch\nimport torch_npu\ndevice = torch.device("npu:0")\n',
        ),
        Example(
            "import torch\nloc = 'cuda:{}'.format(args.gpu)\nckpt = torch.load(path, map_location=loc)\n",
            "import torch\nimport torch_npu\nloc = 'npu:{}'.format(args.gpu)\nckpt = torch.load(path, map_location=loc)\n",
        ),
        Example(
            'import torch\ndevice = f"cuda:{local_rank}"\nif x.device.type == "cuda":\n    pass\n',
            'import torch\nimport torch_npu\ndevice = f"npu:{local_rank}"\nif x.device.type == "npu":\n    pass\n',
        ),
        Example(
            'import torch\nx = torch.zeros(2, device=f"cuda")\ny = x.to(f"cuda:1")\n',
            'import torch\nimport torch_npu\nx = torch.zeros(2, device=f"npu")\ny = x.to(f"npu:1")\n',
        ),
        Example(
            "import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\n",
            "import torch\nimport torch_npu\ntorch.set_default_tensor_type('torch.npu.FloatTensor')\n",
        ),
        Example(
            'import torch\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n    pass\n',
            'import torch\nimport torch_npu\nwith torch.autocast("npu", dtype=torch.bfloat16):\n    pass\n',
        ),
    )
    unchanged = (
        'def f():\n    """Moves the batch to "cuda:0"."""\n    print("running on cuda")\n',
        'import lightning as L\ntrainer = L.Trainer(accelerator="cuda", devices=2)\n',
        'accelerator = "cuda"\n',
        # another package's CUDA switch: true on NPU it would run that package's CUDA code
        'from onnx2tf import convert\nconvert(model, cuda=device.type == "cuda")\n',
        "x = b'cuda'\n",
        # not a device: a key (a checkpoint's RNG states under "cuda"), a message, an Enum's label
        'import torch\nstate = {"cpu": torch.get_rng_state(), "cuda": cuda_states}\nrestore(state["cuda"])\n',
        'import logging\nprint("cuda")\nlogging.info("cuda")\nstates.get("cuda")\n',
        'import enum\nclass Backend(str, enum.Enum):\n    CUDA = "cuda"\n    CPU = "cpu"\n',
        # an Enum's value handed to what turns it into the member (TimerType("npu") would raise)
        'import enum\nclass TimerType(enum.Enum):\n    CUDA = "cuda"\n    CPU = "cpu"\n\n\n'
        'def timer(name, kind: TimerType):\n    return name, kind\n\n\ntimer("step", "cuda")\nTimerType("cuda")\n',
        # a platform's label: an installer's choice of bundle, compared with ROCm's elsewhere
        'import torch\ndef bundle(backend):\n    if backend == "rocm":\n        return "hip.zip"\n'
        '    return "cu12.zip" if backend == "cuda" else "cpu.zip"\n',
    )

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        DocstringTracker.__init__(self)

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        if self.is_documentation(original_node):
            return updated_node
        text = string_text(original_node)
        if text is not None and TENSOR_TYPE_STRING.match(text):
            # 'torch.cuda.FloatTensor' (set_default_tensor_type, x.type(...)) names a CUDA type;
            # torch_npu registers the same types as torch.npu.*.
            new_text = "torch.npu." + text[len("torch.cuda."):]
            self.record(original_node, f"change tensor type {text!r} to {new_text!r}")
            self.context.needs_torch_npu = True
            return with_string_text(updated_node, new_text)
        if text is None or not DEVICE_STRING.match(text):
            return updated_node
        if cuda_only_table_entry(self, original_node):
            self.report(original_node, Report.UNSUPPORTED, f"{{{text!r}: ...}} (a device table's entry)", _CUDA_ENTRY_TIP)
            return updated_node
        if not_a_device(self, original_node):
            return updated_node
        if of_a_properties_query_left(self, original_node):
            return updated_node  # (the query's own row says why)
        # A name looked up as an attribute: getattr(x, "cuda") (a tensor's or a module's method,
        # npu() on the NPU; torch's module torch.cuda, torch.npu with torch_npu), or handed to a
        # parameter its function looks up with getattr (`self._apply("cuda")`, a method of whatever
        # it meets, the project's classes' own included: NPU102 renames them with their callers).
        # The name goes with the device.
        attribute_function = an_attribute_name(self, original_node)
        if attribute_function is not None or names_a_method(self, original_node):
            what = "attribute" if attribute_function is not None else "method"
            self.record(original_node, f"change the {what} name {text!r} to 'npu' (looked up with "
                                       f"{attribute_function or 'getattr'})")
            self.context.needs_torch_npu = True
            return with_string_text(updated_node, "npu")
        option = framework_option(self, original_node)
        if option is not None:
            self.report(original_node, Report.UNSUPPORTED, f"{option[0]}={text!r}", option[1])
            return updated_node
        switch = cuda_switch_of(self, original_node, self.context.api)
        if switch is not None:
            self.report(original_node, Report.UNSUPPORTED, switch, cuda_switch_tip(repr(text), switch))
            return updated_node
        new_text = "npu" + text[len("cuda") :]
        index = text[len("cuda:"):]
        if self.context.options.device_per_process and index.isdigit():
            # One process per NPU: a fixed index would put every process on the same NPU.
            new_text = "npu"
        elif self.context.options.specify_device is not None and index.startswith("{"):
            # -s: 'cuda:{}'.format(i) names the DEVICE_ID NPU; 'npu'.format(i) is just 'npu'.
            new_text = "npu"
        self.record(original_node, f"change device string {text!r} to {new_text!r}", kind=_kind_of(self, original_node))
        self.context.needs_torch_npu = True
        return with_string_text(updated_node, new_text)

    def leave_FormattedString(self, original_node: cst.FormattedString, updated_node: cst.FormattedString):
        if self.is_documentation(original_node) or "b" in original_node.prefix.lower():
            return updated_node
        parts = original_node.parts
        if not parts or not isinstance(parts[0], cst.FormattedStringText):
            return updated_node
        if len(parts) == 1 and DEVICE_STRING.match(parts[0].value):
            return self._constant_f_string(original_node, updated_node, parts[0].value)
        if parts[0].value != "cuda:" or len(parts) != 2 or not isinstance(parts[1], cst.FormattedStringExpression):
            return updated_node
        self.context.needs_torch_npu = True
        if self.context.options.specify_device is not None:
            self.record(original_node, "change device f-string 'cuda:{...}' to 'npu' (-s: the DEVICE_ID NPU)")
            quote = original_node.start.lstrip("rRfFbBuU")
            return cst.SimpleString(f"{quote}npu{original_node.end}")
        self.record(original_node, "change device f-string 'cuda:{...}' to 'npu:{...}'")
        first = updated_node.parts[0].with_changes(value="npu:")
        return updated_node.with_changes(parts=(first, *updated_node.parts[1:]))

    def _constant_f_string(self, original_node: cst.FormattedString, updated_node: cst.FormattedString, text: str):
        """f"cuda", f"cuda:0": an f-string without placeholders is the plain string."""
        if not_a_device(self, original_node):
            return updated_node
        option = framework_option(self, original_node)
        if option is not None:
            self.report(original_node, Report.UNSUPPORTED, f"{option[0]}={text!r}", option[1])
            return updated_node
        new_text = "npu" + text[len("cuda"):]
        if self.context.options.device_per_process and text[len("cuda:"):].isdigit():
            new_text = "npu"
        self.record(original_node, f"change device string f{text!r} to f{new_text!r}", kind=_kind_of(self, original_node))
        self.context.needs_torch_npu = True
        return updated_node.with_changes(parts=(updated_node.parts[0].with_changes(value=new_text),))


_CUDA_ENTRY_TIP = ("an entry of a table looked up by the device type that holds what CUDA alone has (torch "
                   "profiler's CUDA activity, a CUDA-only kernel library, CUDA's own labels): left under \"cuda\", "
                   "so the NPU finds no entry, as before; add an \"npu\" entry with the NPU's own values "
                   "(torch_npu.profiler.ProfilerActivity.NPU for the profiler's activities)")


def _kind_of(rule: Rule, node: cst.CSTNode):
    """The kind of edit that renaming the device string `node` is (None: NPU103's own)."""
    return DeviceTypeTests if is_device_test(rule, node) else None
