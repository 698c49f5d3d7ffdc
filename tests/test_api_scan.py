"""The ast scan: which files need the libcst rules at all, and the API rows it reports for every
file (operators without an NPU kernel, torch names and Tensor methods whose support is unknown)."""
from __future__ import annotations

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.reading import scan
from gpu2npu.reading.scan.api_rows import newer_torch_note
from gpu2npu.records.change import Report
from gpu2npu.records.results import Status
from gpu2npu.knowledge.tips import CUDA_ONLY_PACKAGES

API = apidata.load("2.1.0")


def rows(source: str):
    tree = scan.parse(source.encode())
    return [(f.report, f.start_line, f.api) for f in scan.api_findings(scan.FileScan(tree), "f.py", API)]


def test_operators_without_a_kernel_are_found_through_aliases_and_local_imports():
    source = (
        "import torch as th\n"
        "y = th.heaviside(a, b)\n"
        "def loss(a, b):\n"
        "    import torch.nn.functional as F\n"
        "    return F.huber_loss(a, b)\n"
        "z = th.matmul(a, b)\n"  # a composite operator: runs on NPU through its parts
    )
    assert rows(source) == [(Report.UNSUPPORTED, 2, "torch.heaviside"),
                            (Report.UNSUPPORTED, 5, "torch.nn.functional.huber_loss")]


def test_comments_docstrings_and_strings_are_not_calls():
    source = '"""torch.heaviside(a, b)"""\nimport torch\n# torch.heaviside(a, b)\ns = "torch.heaviside(a, b)"\n'
    assert rows(source) == []


@pytest.mark.parametrize("call, expected", [
    ("torch.nn.functional.relu(x)", None),
    ("torch.optim.AdamW(params)", None),
    ("torch.__version__.split('.')", None),
    ("torch.utils.data.DataLoader(ds)", None),
    ("torch.no_such_function(x)", (Report.UNKNOWN, "torch.no_such_function")),
    ("torch._C._jit_set_profiling_mode(False)", (Report.UNKNOWN, "torch._C._jit_set_profiling_mode")),
    ("torch.ops.mylib.fused(x)", (Report.UNKNOWN, "torch.ops.mylib.fused")),
    ("torch.ops.aten.lgamma(x)", (Report.UNSUPPORTED, "torch.ops.aten.lgamma")),
    ("torch.npu.synchronize()", None),
])
def test_torch_names_are_judged_against_the_public_api(call, expected):
    found = rows(f"import torch\n{call}\n")
    assert found == ([] if expected is None else [(expected[0], 2, expected[1])])


class TestCustomOperatorsTheFileRegistersFromPython:
    """A custom operator registered in the file from one of its Python functions, for every device,
    runs that function: its calls have their own rows, the operator's call has none. One registered
    for CUDA alone, or elsewhere, keeps its row."""

    @pytest.mark.parametrize("registration", [
        "torch.library.custom_op('proj::attend', mutates_args=())(attend)",
        "@torch.library.custom_op('proj::attend', mutates_args=())\ndef attend(q):\n    return q",
        "lib = torch.library.Library('proj', 'FRAGMENT')\nlib.define('attend(Tensor q) -> Tensor')\n"
        "lib.impl('attend', attend, 'CompositeExplicitAutograd')",
        "torch.library.impl('proj::attend', 'CompositeExplicitAutograd')(attend)",
        "direct_register_custom_op(op_name='attend', op_func=attend, mutates_args=[])",
        "direct_register_custom_op('attend', attend, mutates_args=[])",
    ])
    def test_its_call_has_no_row(self, registration):
        # (torch.library.custom_op is newer than torch 2.1: that row is another matter)
        found = rows(f"import torch\n{registration}\ny = torch.ops.proj.attend(q)\n")
        assert [row for row in found if row[2].startswith("torch.ops.")] == []

    def test_one_registered_under_its_name_alone_is_not_another_namespaces_of_that_name(self):
        # (the Python operator of the project's library wraps the C++ kernel of the same name)
        source = ("import torch\ndef gemm(a):\n    return torch.ops._C.gemm(a)\n"
                  "direct_register_custom_op('gemm', gemm)\ny = torch.ops.proj.gemm(a)\n")
        assert [row for row in rows(source) if row[2].startswith("torch.ops.")] == [
            (Report.UNKNOWN, 3, "torch.ops._C.gemm"), (Report.UNKNOWN, 5, "torch.ops.proj.gemm")]

    @pytest.mark.parametrize("registration", [
        "",  # registered elsewhere (a library's, or the project's C++)
        "lib = torch.library.Library('proj', 'FRAGMENT')\nlib.define('attend(Tensor q) -> Tensor')\n"
        "lib.impl('attend', attend, 'CUDA')",
        "direct_register_custom_op(op_name='attend', op_func=attend, dispatch_key='CUDA')",
        "lib.impl('attend', attend_cpu, 'CPU')\nlib.impl('attend', attend_cuda, 'CUDA')",
        "torch.library.custom_op('proj::attend', mutates_args=(), device_types='cuda')(attend)",
        "torch.library.custom_op('proj::attend', mutates_args=(), device_types=('cuda',))(attend)",
        # a schema and a fake kernel for tracing: the kernel itself is elsewhere (C++)
        "torch.library.define('proj::attend', '(Tensor q) -> Tensor')\n"
        "torch.library.register_fake('proj::attend')(attend_meta)",
        "torch.library.custom_op('proj::other', mutates_args=())(other)",  # another operator
        "torch.library.custom_op('otherproj::attend', mutates_args=())(attend)",  # another namespace's
    ])
    def test_others_keep_theirs(self, registration):
        source = f"import torch\n{registration}\ny = torch.ops.proj.attend(q)\n"
        found = [row for row in rows(source) if row[2].startswith("torch.ops.")]
        assert found == [(Report.UNKNOWN, source.count("\n"), "torch.ops.proj.attend")]


@pytest.mark.parametrize("namespace, row", [
    # another accelerator's operator library: no CUDA build has it, so the project reaches it only
    # on that accelerator
    ("_xpu_C", False), ("_rocm_C", False), ("xpu_ops", False), ("hpu", False), ("_mlu_ops", False),
    # the project's own, a CPU library's, or one whose name only contains an accelerator's letters
    ("_C", True), ("myproj", True), ("zentorch", True), ("xpuish", True),
])
def test_another_accelerators_operator_library_has_no_row(namespace, row):
    found = [found for found in rows(f"import torch\ny = torch.ops.{namespace}.gemm(a, b)\n")
             if found[2].startswith("torch.ops.")]
    assert found == ([(Report.UNKNOWN, 2, f"torch.ops.{namespace}.gemm")] if row else [])


def test_tensor_methods_without_a_kernel_are_unknown_because_the_receiver_is_not_known():
    source = "import torch\ny = x.lgamma()\nz = x.heaviside(w)\nparts = name.split('.')\nn = x.sum()\n"
    assert rows(source) == [(Report.UNKNOWN, 2, "Tensor.lgamma"), (Report.UNKNOWN, 3, "Tensor.heaviside")]


@pytest.mark.parametrize("call, row", [
    # torch's dequantize() and lgamma() take no argument, heaviside(values) one: a call with more is
    # another class's method of that name (a quantized weight's `dequantize(dtype)`)
    ("w.dequantize(torch.bfloat16)", False), ("q.dequantize(x, scale, group_size=128)", False),
    ("x.lgamma(1)", False), ("x.heaviside(w, out)", False),
    ("w.dequantize()", True), ("x.heaviside(w)", True), ("x.heaviside(values=w)", True),
    # arguments unpacked: how many, is not known
    ("w.dequantize(*args)", True), ("w.dequantize(**options)", True),
])
def test_a_method_called_with_more_arguments_than_torchs_takes_is_another_classs(call, row):
    found = [row for row in rows(f"import torch\ny = {call}\n") if row[2].startswith("Tensor.")]
    assert bool(found) == row, found


class TestAMethodOfTheClassItself:
    """`self.dequantize(...)` where the class around the call defines `dequantize` is the class's
    own method, no tensor's: no row.  A method the class does not define, another receiver, or a
    method of another class of the file keeps the row."""

    CLASS = ("import torch\n\nclass BoxCoder:\n    def dequantize(self, bins, size):\n        return bins * size\n\n"
             "    def decode(self, bins, size):\n        return {call}\n")

    def test_is_no_row(self):
        source = self.CLASS.format(call="self.dequantize(bins, size)")
        assert [row for row in rows(source) if row[2].startswith("Tensor.")] == []
        classmethod_source = source.replace("    def dequantize(self,", "    @classmethod\n    def dequantize(cls,")
        classmethod_source = classmethod_source.replace("self.dequantize(bins, size)", "cls.dequantize(bins, size)")
        assert [row for row in rows(classmethod_source) if row[2].startswith("Tensor.")] == []

    @pytest.mark.parametrize("call", ["self.lgamma()", "bins.dequantize()"])
    def test_others_keep_theirs(self, call):
        source = self.CLASS.format(call=call)
        assert [row[1] for row in rows(source) if row[2].startswith("Tensor.")] == [8]

    def test_a_method_of_another_class_keeps_its_row(self):
        source = ("import torch\n\nclass A:\n    def dequantize(self):\n        return 1\n\n"
                  "class B:\n    def run(self):\n        return self.dequantize()\n")
        assert [row[1] for row in rows(source) if row[2].startswith("Tensor.")] == [9]


def test_a_newer_release_with_the_kernel_has_nothing_to_say():
    newest = apidata.load(apidata.available_versions()[-1])
    missing = apidata.ops_without_npu_kernel(API) - apidata.ops_without_npu_kernel(newest)
    op = sorted(name for name in missing if name.isidentifier() and not name.startswith("_")
                and apidata.torch_api_knows(f"torch.{name}"))[0]
    tree = scan.parse(f"import torch\ntorch.{op}(x)\n".encode())
    assert [f.report for f in scan.api_findings(scan.FileScan(tree), "f.py", API)] == [Report.UNSUPPORTED]
    assert scan.api_findings(scan.FileScan(tree), "f.py", newest) == []


@pytest.mark.parametrize("source", [
    "import torch\nx = torch.ones(2).to(device)\n",
    "use_cuda = True\nprint('CUDA is great')\n",
    '"""Runs on cuda:0 by default."""\nimport torch\n# x.cuda()\n',
    "import torch\ndef f(cuda=False):\n    return cuda\n",
    "import torch\nloader = make_dataloader(train_dataloader)\n",
    # "AsyncClient" holds n-c-C-l, which is no NCCL
    "import httpx\nhttpx.AsyncClient.send = patched_send\n",
    # DeepSpeed's ZeRO runs on the NPU; only some DeepSpeed parts are CUDA-only
    "import deepspeed\nwith deepspeed.zero.GatheredParameters(weight, modifier_rank=0):\n    pass\n",
    "from deepspeed import zero\nzero.register_external_parameter(module, weight)\n",
    # a helper hands its `device` on to .to(); its other arguments may be ints
    "def embed(size, scale, device=None):\n    return torch.ones(size, device=device) * scale\n\n\nx = embed(128, scale)\n",
    "class Net:\n    def grid(self, height, width, device):\n        return make(height, width).to(device)\n\n"
    "    def forward(self, x):\n        return self.grid(8, 16, x.device)\n",
])
def test_files_no_rule_can_touch_skip_the_rewrite(source):
    assert not scan.FileScan(scan.parse(source.encode())).needs_rewrite()


@pytest.mark.parametrize("source, line", [
    ("import torch\nx = torch.ones(2)\ny = x.cuda()\n", 3),
    ("import torch\nd = torch.device('cuda:0')\n", 2),
    ("import torch\nrank = 0\nmodel.to(rank)\n", 3),
    ("from torch.utils.data import DataLoader as DL\n\n\nloader = DL(ds)\n", 4),
    ("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", 2),
    ("import torch.distributed as dist\ndist.init_process_group(backend='nccl')\n", 2),
    ("from apex import amp\n\n\ndef step(loss, opt):\n    with amp.scale_loss(loss, opt) as s:\n        s.backward()\n", 5),
    ("import torch\ndevice = f'cuda:{rank}'\n", 2),
    ("import deepspeed\n\nlayer = deepspeed.ops.transformer.DeepSpeedTransformerLayer(config)\n", 3),
    ("from deepspeed.ops import op_builder\n\nop_builder.TransformerBuilder().load()\n", 3),
    ("import nvidia.dali as dali\n\npipe = dali.Pipeline(batch_size=8)\n", 3),
    ("def embed(size, device=None):\n    return torch.ones(size, device=device)\n\n\nx = embed(128, 0)\n", 5),
    ("def embed(size, device=None):\n    return torch.ones(size, device=device)\n\n\nx = embed(128, device=1)\n", 5),
    ("class Batch:\n    def move(self, device):\n        return self.data.to(device)\n\n\nbatch.move(0)\n", 6),
])
def test_what_a_rule_acts_on_makes_the_file_and_its_line_relevant(source, line):
    file_scan = scan.FileScan(scan.parse(source.encode()))
    assert file_scan.needs_rewrite() and line in file_scan.relevant_lines()


def test_text_this_python_cannot_parse_is_left_to_libcst():
    assert scan.parse(b"print 'python 2'\n") is None
    assert scan.parse(b"x = '\\d'\n") is not None  # an invalid escape warns, nothing more


# What makes the scan send a file to the rules, each written so that no CUDA word shows.
SCAN_TRIGGERS = [
    "import os\nos.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'\n",
    "import os\nos.environ['PYTORCH_ALLOC_CONF'] = 'expandable_segments:True'\n",
    "import torch\ntorch.backends.cudnn.allow_tf32 = True\n",
    "import torch\ntorch.backends.cudnn.conv.fp32_precision = 'tf32'\n",
    "import torch\nmodel = model.to_empty(device = 0)\n",
    "import torch\nx = x.to (0)\n",
    "import torch\nx = torch.ones(2, device_id = 1)\n",
    "import ray\n\n\n@ray.remote(num_gpus=1)\ndef train():\n    pass\n",
    "from ray.util import placement_group\n\npg = placement_group([{'CPU': 1}])\n",
    "x = 'c\\x75da:0'\n",
] + [f"import {package}\n" for package in sorted(CUDA_ONLY_PACKAGES)]


@pytest.mark.parametrize("source", SCAN_TRIGGERS)
def test_a_text_the_scan_cannot_read_is_judged_by_the_scans_own_triggers(source):
    """A file Python's `ast` cannot read (newer syntax than this Python's) or a notebook goes to
    the rules when it holds anything that makes the scan send a parsed file there."""
    assert scan.FileScan(scan.parse(source.encode())).needs_rewrite()
    assert scan.could_need_rewrite(source)


def test_every_fixture_the_scan_sends_to_the_rules_passes_the_text_test():
    from helpers import FIXTURES

    sent = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        data = path.read_bytes()
        tree = scan.parse(data)
        if tree is not None and scan.FileScan(tree).needs_rewrite():
            assert scan.could_need_rewrite(data.decode("utf-8", "replace")), path
            sent += 1
    assert sent > 20


def test_a_text_with_nothing_for_the_rules_is_not_sent():
    assert not scan.could_need_rewrite("import numpy as np\n\n\ndef mean(values):\n    return np.mean(values)  # to disk\n")


def test_a_file_this_python_cannot_parse_is_migrated_by_what_the_scan_would_see(monkeypatch):
    from gpu2npu.knowledge import apidata
    from gpu2npu.migration import pipeline
    from gpu2npu.modes import rules_for
    from gpu2npu.rules import Options

    options = Options(api=apidata.load("2.1.0"))
    monkeypatch.setattr(scan, "parse", lambda data: None)  # as under a Python older than the file's syntax
    result = pipeline.migrate_source(b"import liger_kernel\n\nliger_kernel.apply()\n", "m.py", options, rules_for(options))
    assert result.status != Status.SKIPPED
    assert "liger_kernel" in {finding.api for finding in result.findings}


class TestAnotherAcceleratorsNamesOnAnOlderTorch:
    """torch 2.1 has no torch.xpu: a test of it fails there (a row), and what only runs after the
    test passes is no row of its own (the test's row says it)."""

    def newer(self, source: str):
        return [(line, api) for report, line, api in rows("import torch\n" + source) if report == Report.UNSUPPORTED]

    def test_the_test_is_a_row_and_what_it_guards_is_not(self):
        source = "if torch.xpu.is_available():\n    n = torch.xpu.device_count()\n    torch.xpu.synchronize()\n"
        assert self.newer(source) == [(2, "torch.xpu.is_available")]

    def test_on_one_line(self):
        assert self.newer("n = torch.xpu.device_count() if torch.xpu.is_available() else 0\n") == [
            (2, "torch.xpu.is_available")]

    def test_a_test_guarded_by_hasattr_is_no_row(self):
        assert self.newer("ok = hasattr(torch, 'xpu') and torch.xpu.is_available()\n") == []

    @pytest.mark.parametrize("source", ["n = torch.xpu.device_count()\n", "torch.xpu.manual_seed_all(0)\n",
                                        "ok = torch.mps.is_available()\n"])
    def test_an_unguarded_call_that_answers_anywhere_is_a_row(self, source):
        assert [line for line, _ in self.newer(source)] == [2]

    @pytest.mark.parametrize("source", [
        "free, total = torch.xpu.mem_get_info()\n",
        # behind a test of the device's name (an Intel GPU's), which the NPU does not pass either
        "if 'data center gpu max' in name:\n    units = torch.xpu.get_device_properties('xpu').max_compute_units\n",
        "limit = torch.mps.recommended_max_memory()\n",
    ])
    def test_a_call_that_needs_that_device_is_no_row(self, source):
        # it raised on the GPU machine too: it runs only where that accelerator is
        assert self.newer(source) == []


class TestTheBackendOfAnotherAccelerator:
    """A class or file named for another accelerator is its backend (DeepSpeed's XPU_Accelerator in
    xpu_accelerator.py), which a program loads where that accelerator is chosen: its calls of that
    accelerator's torch module are no rows, on a torch that has the module or not."""

    BACKEND = ("    def device_count(self):\n        return torch.xpu.device_count()\n\n"
               "    def synchronize(self):\n        return torch.xpu.synchronize()\n")

    @staticmethod
    def newer(source: str, path: str = "f.py"):
        tree = scan.parse(("import torch\n" + source).encode())
        return [f.start_line for f in scan.api_findings(scan.FileScan(tree), path, API) if f.report == Report.UNSUPPORTED]

    @pytest.mark.parametrize("name", ["XPU_Accelerator", "XPUAccelerator", "XpuBackend"])
    def test_a_class_named_for_it(self, name):
        assert self.newer(f"class {name}:\n{self.BACKEND}") == []

    @pytest.mark.parametrize("path", ["deepspeed/accelerator/xpu_accelerator.py", "utils/xpu.py"])
    def test_a_file_named_for_it(self, path):
        assert self.newer("n = torch.xpu.device_count()\n", path) == []

    @pytest.mark.parametrize("name", ["Accelerator", "Xpuish"])
    def test_a_class_of_another_name_keeps_the_rows(self, name):
        # (synchronize needs the device: it runs only where that accelerator is, a row nowhere)
        assert self.newer(f"class {name}:\n{self.BACKEND}") == [4]

    @pytest.mark.parametrize("path", ["train.py", "cuda_accelerator.py", "expudite.py"])
    def test_a_file_of_another_name_keeps_the_row(self, path):
        assert self.newer("n = torch.xpu.device_count()\n", path) == [2]


class TestBranchesOfOtherAccelerators:
    """What runs only where another accelerator is there (tested by its name or its torch
    extension's package) is skipped on the NPU: no row.  A module that no torch has, which a
    vendor's extension registers (torch_mlu's `torch.mlu`), is that vendor's code even unguarded
    (DeepSpeed's MLU_Accelerator class, chosen by a factory): the GPU the project ran on had no
    such module either, so there is nothing to migrate.  torch's own modules (`torch.xpu`) keep
    their rows unguarded where the call answers without the device (availability, counts)."""

    @pytest.mark.parametrize("source", [
        "import importlib.util\n\n\ndef has_neuron():\n    if importlib.util.find_spec('torch_neuronx') is None:\n"
        "        return False\n    return torch.neuron.device_count() > 0\n",
        "def bf16():\n    if is_torch_supa_available():\n        return torch.supa.is_bf16_supported()\n    return False\n",
        "if pt_supa_available:\n    name = torch.supa.get_device_name()\n",
    ])
    def test_a_guarded_call_is_no_row(self, source):
        assert rows("import torch\n" + source) == []

    @pytest.mark.parametrize("source", [
        "n = torch.neuron.device_count()\n",
        "name = torch.supa.get_device_name()\n",
        "if find_spec('neuronxyz') is None:\n    pass\nn = torch.neuron.device_count()\n",
        "class MLU_Accelerator:\n    def set_device(self, index):\n        torch.mlu.set_device(index)\n\n"
        "    def synchronize(self):\n        return torch.musa.synchronize()\n",
        "torch.hpu.set_device(0)\n",
    ])
    def test_an_unguarded_call_of_a_vendors_module_is_no_row(self, source):
        assert rows("import torch\n" + source) == []

    @pytest.mark.parametrize("source, name", [
        ("n = torch.xpu.device_count()\n", "torch.xpu.device_count"),
        ("x = torch.mtia.is_available()\n", "torch.mtia.is_available"),
    ])
    def test_an_unguarded_call_of_torchs_own_module_keeps_its_row(self, source, name):
        assert [api for _, _, api in rows("import torch\n" + source)] == [name]


class TestTorchsDeviceNeutralPrivateCode:
    """A private torch name is in no public API list; where its module's code is device-neutral
    Python (no kernel or device of its own) it runs on the NPU as on the GPU: a note in the log,
    not an unknown_api.csv row.  Private code that generates or calls device code keeps its row."""

    @pytest.mark.parametrize("line, name", [
        ("flat, spec = torch.utils._pytree.tree_flatten(batch)", "torch.utils._pytree.tree_flatten"),
        ("torch._dynamo.mark_dynamic(x, 0)", "torch._dynamo.mark_dynamic"),
        ("torch._check(x.shape[0] > 0)", "torch._check"),
        ("fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(w)", "torch.nn.init._calculate_fan_in_and_fan_out"),
        ("flat = torch._utils._flatten_dense_tensors(grads)", "torch._utils._flatten_dense_tensors"),
        ("mode = torch._subclasses.fake_tensor.FakeTensorMode()", "torch._subclasses.fake_tensor.FakeTensorMode"),
        ("act = torch.nn.modules.transformer._get_activation_fn('gelu')", "torch.nn.modules.transformer._get_activation_fn"),
        ("out = torch._higher_order_ops.auto_functionalize.auto_functionalized(op, x=x)",
         "torch._higher_order_ops.auto_functionalize.auto_functionalized"),
        ("patterns = torch._inductor.pattern_matcher.PatternMatcherPass()", "torch._inductor.pattern_matcher.PatternMatcherPass"),
        ("in_backward = torch._C._current_graph_task_id() != -1", "torch._C._current_graph_task_id"),
        ("device, dtype, blocking, fmt = torch._C._nn._parse_to(*args, **kwargs)", "torch._C._nn._parse_to"),
        ("p = torch.distributed._tensor.Replicate()", "torch.distributed._tensor.Replicate"),
        ("torch.testing._internal.common_utils.run_tests()", "torch.testing._internal.common_utils.run_tests"),
        ("m = torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper(m)",
         "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper"),
        ("torch.autograd.Variable._execution_engine.queue_callback(flush)",
         "torch.autograd.Variable._execution_engine.queue_callback"),
        ("torch.autograd.variable.Variable._execution_engine.queue_callback(flush)",
         "torch.autograd.variable.Variable._execution_engine.queue_callback"),
        # inductor's settings, patched (a setting itself is NPU928's note, or NPU903's row)
        ("patched = torch._inductor.config.patch(max_autotune=True)", "torch._inductor.config.patch"),
    ])
    def test_is_a_note(self, line, name):
        assert rows(f"import torch\n{line}\n") == [(Report.NOTE, 2, name)]

    @pytest.mark.parametrize("line, name", [
        ("fn = torch._inductor.compile_fx.compile_fx(gm, inputs)", "torch._inductor.compile_fx.compile_fx"),
        ("out = torch._grouped_mm(a, b)", "torch._grouped_mm"),  # a kernel
        ("fn = torch._dynamo.backends.cudagraphs.cudagraphs(gm, inputs)", "torch._dynamo.backends.cudagraphs.cudagraphs"),
        ("handle = torch.distributed._symmetric_memory.rendezvous(t, group)", "torch.distributed._symmetric_memory.rendezvous"),
        ("torch._inductor.codegen.common.register_backend_for_device('npu', s, w)",
         "torch._inductor.codegen.common.register_backend_for_device"),  # the code generator, beside the matcher
        ("torch._utils_internal.log_export_usage(event='x')", "torch._utils_internal.log_export_usage"),
        ("y = torch._higher_order_ops.associative_scan.associative_scan(f, x, 0)",
         "torch._higher_order_ops.associative_scan.associative_scan"),  # compiled for a device
    ])
    def test_keeps_its_unknown_row(self, line, name):
        assert rows(f"import torch\n{line}\n") == [(Report.UNKNOWN, 2, name)]

    def test_through_the_console_script_the_note_is_in_the_log_only(self, tmp_path):
        from helpers import migrate, read_csv, write_project

        root = write_project(tmp_path / "project", {"train.py": "import torch.utils._pytree as pytree\n\n\n"
                                                                "def flat(batch):\n    return pytree.tree_leaves(batch)\n"})
        target = migrate(root, tmp_path / "out")
        assert read_csv(target / "unknown_api.csv") == []
        log = (target / "msFmkTranspltlog.txt").read_text()
        assert "train.py line: 5 ~ 5 Operation Type: NOTE Message: torch.utils._pytree.tree_leaves: torch's own " \
               "device-neutral Python" in log


class TestNamesANewerTorchAddedAtOnePlace:
    """The names at one place that one torch release added are one thing to port: one row names
    them all. Other places, and names another release added, keep rows of their own."""

    def test_one_row_names_them(self):
        source = ("from torch.distributed.tensor import DTensor, Replicate\n"
                  "x = DTensor.from_local(t, mesh, placements=[Replicate()])\n")
        assert rows(source) == [(Report.UNSUPPORTED, 2, "torch.distributed.tensor.DTensor.from_local, "
                                                        "torch.distributed.tensor.Replicate")]

    @pytest.mark.parametrize("source, expected", [
        ("from torch.distributed.tensor import DTensor, Replicate\nx = DTensor.from_local(t, mesh)\n"
         "p = [Replicate()]\n", [2, 3]),
        # torch 2.3 added get_default_device, torch 2.5 Buffer
        ("import torch\nb = torch.nn.Buffer(torch.zeros(2, device=torch.get_default_device()))\n", [2, 2]),
    ])
    def test_other_places_and_releases_keep_their_own(self, source, expected):
        assert [line for _, line, _ in rows(source)] == expected


def test_the_runs_note_counts_each_name_of_a_row():
    names = ["torch.distributed.tensor.DTensor.from_local, torch.distributed.tensor.Replicate"] * 5
    note = newer_torch_note(names, API)
    assert note is not None and note.startswith("10 uses of torch APIs")
