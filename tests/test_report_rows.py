"""A report row must be true and fit its line: no row for a metadata probe, one row per import
statement of a CUDA-only package, no drop_last advice for a loader that has it, and no
drop_last added where DataLoader refuses it."""
import json

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

from helpers import read_csv, run_cli

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


def _rows(result, report):
    return [f for f in result.findings if f.report == report]


def test_a_version_probe_is_no_use_of_cuda_kernels():
    source = ("import torch\n\ndef versions():\n    out = {'torch': torch.__version__}\n    try:\n"
              "        import bitsandbytes as bnb\n        out['bnb'] = bnb.__version__\n    except ImportError:\n"
              "        pass\n    return out\n")
    _, result = _migrate(source)
    assert _rows(result, Report.UNSUPPORTED) == []
    assert [f.api for f in _rows(result, Report.NOTE)] == ["bitsandbytes"]


def test_a_package_that_is_used_is_still_reported():
    # (a file using only bitsandbytes' optimizers is migrated instead: test_bitsandbytes_package)
    source = "import bitsandbytes as bnb\nlayer = bnb.nn.Linear4bit(16, 16)\nprint(bnb.__version__)\n"
    _, result = _migrate(source)
    assert [f.start_line for f in _rows(result, Report.UNSUPPORTED) if f.api == "bitsandbytes"] == [1]


def test_one_row_per_import_statement_and_one_per_call():
    # (statements that the generated ascend_flash_attn cannot take whole: see test_flash_attn_rule)
    source = ("from flash_attn import flash_attn_func, flash_attn_with_kvcache\n"
              "from flash_attn.layers.rotary import apply_rotary_emb, RotaryEmbedding\n\n"
              "def f(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n")
    _, result = _migrate(source)
    rows = [(f.start_line, f.api) for f in _rows(result, Report.UNSUPPORTED)]
    assert rows == [(1, "flash_attn (flash_attn_func, flash_attn_with_kvcache)"),
                    (2, "flash_attn.layers.rotary (apply_rotary_emb, RotaryEmbedding)"),
                    (5, "flash_attn.flash_attn_func")]
    rotary = [f.tip for f in _rows(result, Report.UNSUPPORTED) if f.start_line == 2][0]
    assert "npu_rotary_mul" in rotary and "npu_fusion_attention" not in rotary


def test_no_drop_last_advice_for_a_loader_that_has_it():
    source = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=4, drop_last=True)\n"
    _, result = _migrate(source)
    assert _rows(result, Report.PERFORMANCE) == []


def test_a_batch_sampler_loader_gets_no_drop_last():
    source = "from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, batch_sampler=buckets)\n"
    output, result = _migrate(source)
    assert "drop_last" not in output
    assert ["batch_sampler" in f.tip for f in _rows(result, Report.PERFORMANCE)] == [True]


DEEPSPEED_AND_VLLM = '''import deepspeed
from deepspeed.ops.adam import FusedAdam, DeepSpeedCPUAdam
from deepspeed.ops.transformer import DeepSpeedTransformerLayer, DeepSpeedTransformerConfig
from deepspeed.ops.transformer import DeepSpeedInferenceConfig
from deepspeed.ops.op_builder import EvoformerAttnBuilder, FusedAdamBuilder
from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator


def build(model, args, group):
    layer = DeepSpeedTransformerLayer(DeepSpeedTransformerConfig(hidden_size=64))
    kernels = EvoformerAttnBuilder().load(), FusedAdamBuilder().load()
    engine, *_ = deepspeed.initialize(model=model, optimizer=FusedAdam(model.parameters()), config=args.ds_config)
    return engine, layer, kernels, PyNcclCommunicator(group, device=0)
'''


def test_deepspeed_parts_without_an_npu_build_and_vllms_nccl_communicator_are_reported():
    # DeepSpeed runs on Ascend through its NPU accelerator: what that builds (FusedAdam, the CPU
    # optimizers, FusedAdamBuilder, the inference config) gets no row, what it cannot build does
    _, result = _migrate(DEEPSPEED_AND_VLLM)
    rows = [(f.start_line, f.api) for f in _rows(result, Report.UNSUPPORTED)]
    assert rows == [
        (3, "deepspeed.ops.transformer (DeepSpeedTransformerLayer, DeepSpeedTransformerConfig)"),
        (5, "deepspeed.ops.op_builder.EvoformerAttnBuilder"),
        (6, "vllm.distributed.device_communicators.pynccl.PyNcclCommunicator"),
        (10, "deepspeed.ops.transformer.DeepSpeedTransformerConfig"),
        (10, "deepspeed.ops.transformer.DeepSpeedTransformerLayer"),
        (11, "deepspeed.ops.op_builder.EvoformerAttnBuilder"),
        (13, "vllm.distributed.device_communicators.pynccl.PyNcclCommunicator"),
    ]
    tips = {f.api: f.tip for f in _rows(result, Report.UNSUPPORTED)}
    assert "PyHcclCommunicator" in tips["vllm.distributed.device_communicators.pynccl.PyNcclCommunicator"]
    assert "NotImplementedBuilder" in tips["deepspeed.ops.op_builder.EvoformerAttnBuilder"]
    # one tip for the two names of one statement: they are the same layer
    assert tips[rows[0][1]].count("TransformerBuilder") == 1


def _extension_rows(source: str):
    _, result = _migrate(source)
    return [(f.start_line, f.api, "if its" in f.tip or "if it is" in f.tip) for f in _rows(result, Report.UNSUPPORTED)]


def test_a_cpp_only_extension_build_is_no_cuda_construct():
    # C++ sources alone build a host extension: it compiles and runs on an Ascend machine as it is
    source = ("import os\nfrom torch.utils.cpp_extension import load, load_inline\n\n"
              "ext = load(name='ops', sources=['ops.cpp', os.path.join(HERE, 'util.cc')])\n"
              "inline = load_inline('inl', cpp_sources=SOURCE, functions=['f'])\n"
              "none_given = load_inline('inl2', SOURCE, None)\n"
              "empty = load_inline('inl3', SOURCE, cuda_sources=[])\n"
              "upper_case = load('ops2', ['ops.CU'])\n")  # (torch compiles only .cu and .cuh with nvcc)
    assert _extension_rows(source) == []


def test_an_extension_build_with_cuda_sources_is_reported_at_its_call():
    source = ("from torch.utils import cpp_extension\nfrom torch.utils.cpp_extension import load, load_inline\n\n"
              "a = load(name='ops', sources=[f'{HERE}/ops.cpp', f'{HERE}/ops_kernel.cu'])\n"
              "b = cpp_extension.load('ops2', 'kernel.cuh')\n"
              "c = load('ops3', ['ops.cpp'], with_cuda=True)\n"
              "d = load_inline('ops4', cpp_sources='int f();', cuda_sources=['__global__ void k() {}'])\n")
    assert _extension_rows(source) == [(4, "torch.utils.cpp_extension.load", False),
                                       (5, "torch.utils.cpp_extension.load", False),
                                       (6, "torch.utils.cpp_extension.load", False),
                                       (7, "torch.utils.cpp_extension.load_inline", False)]


def test_an_extension_build_whose_sources_are_not_written_out_is_reported_as_undecided():
    source = ("from torch.utils.cpp_extension import load, load_inline\n\n"
              "a = load('ops', SOURCES)\n"
              "b = load('ops', ['ops.cpp', *MORE])\n"
              "c = load_inline('ops', cpp_sources=CPP, cuda_sources=CUDA)\n"
              "d = load('ops', ['ops.cpp'], with_cuda=USE_CUDA)\n"
              "builder = load\n")
    assert _extension_rows(source) == [(3, "torch.utils.cpp_extension.load", True),
                                       (4, "torch.utils.cpp_extension.load", True),
                                       (5, "torch.utils.cpp_extension.load_inline", True),
                                       (6, "torch.utils.cpp_extension.load", True),
                                       (7, "torch.utils.cpp_extension.load", True)]


def test_a_file_this_python_cannot_parse_says_that_its_api_calls_were_not_analysed():
    # (a `type` statement needs Python 3.12; libcst reads it, so the .cuda() is migrated all the same)
    import sys

    source = ("import torch\n\ntype Batch = list[torch.Tensor]\n\n"
              "def step(model, x):\n    return torch.compile(model)(x.cuda())\n")
    output, result = _migrate(source)
    rows = [f for f in result.findings if f.api == "syntax this Python cannot parse"]
    if sys.version_info >= (3, 12):
        assert rows == [] and any(f.api == "torch.compile" for f in result.findings)
        return
    assert "x.npu()" in output
    assert [(f.start_line, f.report) for f in rows] == [(3, Report.UNKNOWN)]
    assert "(invalid syntax here)" in rows[0].tip and f"Python 3.{sys.version_info[1]}" in rows[0].tip


def test_a_file_without_torch_that_no_python_parses_gets_no_such_row():
    _, result = _migrate("print 'hello'\n")
    assert result.findings == []


class TestCudaGraphsWhereTheReleaseHasNone:
    """A project's own CUDA-graph wrapper: where the release has NPU graphs the names are renamed
    (NPU113); where it has none each use is a row whose tip says how to run without them."""

    SOURCE = ("import torch\n\n\nclass Captured:\n    def __init__(self, model, x):\n"
              "        self.graph = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(self.graph):\n"
              "            self.out = model(x)\n")

    def rows(self, version):
        options = Options(api=apidata.load(version))
        result = migrate_source(self.SOURCE.encode(), "m.py", options, rules_for(options))
        return [(f.start_line, f.api, f.tip) for f in _rows(result, Report.UNSUPPORTED)]

    def test_a_release_without_npu_graphs_says_to_run_eagerly(self):
        rows = self.rows("2.2.0")
        assert [(line, api) for line, api, _ in rows] == [(6, "torch.cuda.CUDAGraph"), (7, "torch.cuda.graph")]
        assert all("torch_npu 2.2.0" in tip and "eagerly" in tip and "turn off the option" in tip for _, _, tip in rows)

    def test_a_release_with_npu_graphs_renames_them(self):
        options = Options(api=apidata.load("2.3.1"))
        result = migrate_source(self.SOURCE.encode(), "m.py", options, rules_for(options))
        assert _rows(result, Report.UNSUPPORTED) == []
        assert "torch_npu.npu.NPUGraph()" in result.output.decode() and "torch_npu.npu.graph(" in result.output.decode()


class TestWhatTheReleaseDataCanDecide:
    """The release data lists torch_npu's NPU kernels and its public names: a private name is no
    proof of absence, and an operator with an NPU kernel runs whether or not its name is public."""

    def test_a_private_operator_with_an_npu_kernel_in_the_release_is_no_unknown_row(self):
        _, result = _migrate("import torch\ntorch._foreach_add_(params, grads, alpha=0.1)\n"
                             "norms = torch._foreach_norm(grads)\n")
        assert _rows(result, Report.UNKNOWN) == []

    def test_a_private_name_without_a_kernel_stays_unknown(self):
        _, result = _migrate("import torch\ntorch._C._jit_set_profiling_mode(False)\ntorch._no_such_private_op(x)\n")
        assert [f.api for f in _rows(result, Report.UNKNOWN)] == ["torch._C._jit_set_profiling_mode",
                                                                 "torch._no_such_private_op"]

    def test_another_accelerators_module_is_no_unknown_row(self):
        # behind its own test, or not: torch.neuron is torch-neuronx's, which the GPU had not either
        _, result = _migrate("import torch\nif is_neuron_available():\n    torch.neuron.empty_cache()\n"
                             "torch.neuron.synchronize()\n")
        assert _rows(result, Report.UNKNOWN) == []

    def test_a_private_torch_cuda_name_is_not_said_to_be_missing(self):
        _, result = _migrate("import torch\ntorch.cuda.memory._record_memory_history(enabled='all')\n"
                             "torch.cuda.nccl.version()\n")
        tips = {f.api: f.tip for f in _rows(result, Report.UNSUPPORTED)}
        private = tips["torch.cuda.memory._record_memory_history"]
        assert "has no" not in private and "not known" in private
        assert "torch_npu.npu.memory._record_memory_history" in private

    def test_a_guard_of_a_private_torch_cuda_name_says_so(self):
        _, result = _migrate("import torch\n\ndef start(device):\n    if device.type == 'cuda':\n"
                             "        torch.cuda.memory._record_memory_history(enabled='all')\n")
        guard = next(f for f in _rows(result, Report.UNSUPPORTED) if f.api.startswith("device test"))
        assert "has no NPU form" not in guard.tip and "a private name" in guard.tip


class TestLoadersOverDataOfAWrittenSize:
    """drop_last=True drops samples: over data whose size the code writes out (test data) that changes
    what the code computes, and split over many processes can leave one none.  Advice, not an edit."""

    @pytest.mark.parametrize("source", [
        "from torch.utils.data import DataLoader\ndl = DataLoader(list(range(10)), batch_size=1, shuffle=True)\n",
        "from torch.utils.data import DataLoader\n\ndef setup():\n    dset = RegressionDataset(length=80)\n"
        "    return DataLoader(dset, batch_size=16, shuffle=True)\n",
        "from torch.utils.data import DataLoader, Dataset\nNUM_ELEMENTS = 22\n\nclass Dummy(Dataset):\n"
        "    def __len__(self):\n        return NUM_ELEMENTS\n\ndef main():\n    dataset = Dummy()\n"
        "    train_loader = DataLoader(dataset, shuffle=True, batch_size=4)\n",
        # the name rebound to a wrapping of itself still holds those samples
        "from torch.utils.data import DataLoader\ndata = list(range(10))\ndata = Shuffled(data, seed=0)\n"
        "train_loader = DataLoader(data, batch_size=4)\n",
    ])
    def test_a_training_loader_over_test_data_is_advice(self, source):
        output, result = _migrate(source)
        assert "drop_last" not in output
        assert any("size is written in the code" in f.tip for f in _rows(result, Report.PERFORMANCE))

    def test_a_file_this_python_cannot_read_whole_is_judged_alike(self, newer_syntax):
        newer = newer_syntax
        source = ("from torch.utils.data import DataLoader, Dataset\nNUM_ELEMENTS = 22\n\nclass Dummy(Dataset):\n"
                  "    def __len__(self):\n        return NUM_ELEMENTS\n\ndef main():\n    dataset = Dummy()\n"
                  "    train_loader = DataLoader(dataset, shuffle=True, batch_size=4)\n")
        output, result = _migrate(source + newer)
        assert output.endswith(newer) and "drop_last" not in output
        assert any("size is written in the code" in f.tip for f in _rows(result, Report.PERFORMANCE))

    @pytest.mark.parametrize("source", [
        # random tensors stand in for a real data set, and a data set read from disk
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\ndata = torch.randint(0, 256, (512, 33))\n"
        "train_loader = DataLoader(TensorDataset(data), batch_size=16, shuffle=True)\n",
        "from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ImageFolder(root), batch_size=64, shuffle=True)\n",
        # a name given real data after test data
        "from torch.utils.data import DataLoader\ndata = list(range(10))\ndata = ImageFolder(root)\n"
        "train_loader = DataLoader(data, batch_size=4)\n",
    ])
    def test_a_training_loader_over_real_data_still_drops_its_last_batch(self, source):
        output, _ = _migrate(source)
        assert "drop_last=True" in output


def test_a_binding_only_cuda_builds_of_torch_have_is_one_row_that_says_so():
    _, result = _migrate("import torch\nn = torch._C._cuda_getDeviceCount()\n")
    assert _rows(result, Report.UNKNOWN) == []
    rows = _rows(result, Report.UNSUPPORTED)
    assert [f.api for f in rows] == ["torch._C._cuda_getDeviceCount"] and "only CUDA builds" in rows[0].tip


class TestDevicePropertiesWhoseCudaFieldsAreRead:
    """Renamed, `torch.cuda.get_device_properties("cuda")` answers on the NPU and `.major` then raises
    AttributeError, where CUDA's absence raised the RuntimeError the code catches (axolotl's
    gpu_capabilities): where the file reads such a field, the query and its device stay."""

    SOURCE = ("import torch\n\ndef caps():\n    try:\n        props = torch.cuda.get_device_properties('cuda')\n"
              "        return props.major, props.minor\n    except (RuntimeError, AssertionError):\n        return None\n")

    def test_the_query_and_its_device_stay_with_a_row(self):
        output, result = _migrate(self.SOURCE)
        assert "torch.cuda.get_device_properties('cuda')" in output
        rows = [f for f in _rows(result, Report.UNSUPPORTED) if f.api == "torch.cuda.get_device_properties"]
        assert [row.start_line for row in rows] == [5] and "AttributeError" in rows[0].tip
        assert not [f for f in result.findings if f.api.startswith("device string")]

    @pytest.mark.parametrize("line", ["sms = torch.cuda.get_device_properties(0).multi_processor_count\n",
                                      "if torch.cuda.get_device_properties(device).major >= 8:\n    pass\n"])
    def test_a_field_read_from_the_query_at_once_is_one_row_at_that_place(self, line):
        # the field's row (NPU906) says what to do there; the query's own would be a second row
        # at the same place for the same change
        output, result = _migrate("import torch\n" + line)
        assert "torch.cuda.get_device_properties(" in output
        rows = _rows(result, Report.UNSUPPORTED)
        assert [(f.start_line, f.rule) for f in rows] == [(2, "NPU906")] and rows[0].api.startswith("device properties .")

    def test_a_query_whose_npu_fields_are_read_is_migrated(self):
        output, _ = _migrate("import torch\nmem = torch.cuda.get_device_properties(0).total_memory\n"
                             "print(sys.version_info.major)\n")
        assert "torch_npu.npu.get_device_properties(0).total_memory" in output


def test_a_loaders_role_comes_from_its_own_assignment_not_an_earlier_one():
    # the name of an assignment counts only inside it: `val_loader` above says nothing of the loader below
    output, _ = _migrate("from torch.utils.data import DataLoader\nval_loader = DataLoader(val_set, batch_size=8)\n\n"
                         "def make(ds):\n    return DataLoader(ds, batch_size=8, shuffle=True)\n")
    assert "DataLoader(ds, batch_size=8, shuffle=True, drop_last=True)" in output
    assert "DataLoader(val_set, batch_size=8)" in output


def test_a_module_wide_tip_speaks_of_the_module_not_of_one_of_its_functions():
    """Every name under torch.nn.attention.varlen carries the module's tip: a helper's row
    (`_should_use_cudnn`) must not read as if it were varlen_attn's."""
    from gpu2npu.knowledge.tips import tip_for

    for name in ("torch.nn.attention.varlen._should_use_cudnn", "torch.nn.attention.varlen.varlen_attn"):
        tip = tip_for(name)
        assert tip.startswith("torch.nn.attention.varlen ") and "npu_fusion_attention" in tip, (name, tip)


class TestAPackageThatDoesNotInstallHasOneRowPerImport:
    """A package of CUDA kernels that does not install on an NPU machine (CuPy, AutoGPTQ, flash-attn's
    compiled extensions) is replaced in the whole file: its import has the row, which names the
    calls that the same advice covers. A call with advice of its own, a part of a package that
    installs there, and a call of an optional import keep their rows."""

    @pytest.mark.parametrize("source, api, calls", [
        ("import cupy\n\n\ndef pinned(n):\n    buffer = cupy.cuda.alloc_pinned_memory(n)\n"
         "    return cupy.asarray(buffer), cupy.asarray(buffer)\n", "cupy", "cupy.cuda.alloc_pinned_memory, cupy.asarray"),
        ("from auto_gptq import AutoGPTQForCausalLM, BaseQuantizeConfig\n\n"
         "config = BaseQuantizeConfig(bits=4)\nmodel = AutoGPTQForCausalLM.from_pretrained(name, config)\n"
         "model = AutoGPTQForCausalLM.from_quantized(name)\n", "auto_gptq (AutoGPTQForCausalLM, BaseQuantizeConfig)",
         "auto_gptq.BaseQuantizeConfig, auto_gptq.AutoGPTQForCausalLM.from_pretrained, "
         "auto_gptq.AutoGPTQForCausalLM.from_quantized"),
        # flash-attn's compiled cross-entropy extension, called from an autograd function
        ("import torch\nimport xentropy_cuda_lib\n\n\nclass CrossEntropy(torch.autograd.Function):\n"
         "    @staticmethod\n    def forward(ctx, logits, labels):\n"
         "        return xentropy_cuda_lib.forward(logits, labels, 0.0)\n\n"
         "    @staticmethod\n    def backward(ctx, grad):\n        return xentropy_cuda_lib.backward(grad)\n",
         "xentropy_cuda_lib", "xentropy_cuda_lib.forward, xentropy_cuda_lib.backward"),
    ])
    def test_the_import_row_names_the_calls(self, source, api, calls):
        _, result = _migrate(source)
        rows = _rows(result, Report.UNSUPPORTED)
        assert [f.api for f in rows] == [api]
        assert rows[0].start_line == next(number for number, line in enumerate(source.splitlines(), 1)
                                          if line.startswith(("import", "from")) and api.split(" ")[0] in line)
        assert rows[0].tip.endswith(f" (called in this file: {calls})")
        assert rows[0].rule == "NPU916"

    def test_each_import_row_names_the_calls_of_what_it_imports(self):
        source = ("from mamba_ssm.models.config_mamba import MambaConfig\n"
                  "from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel\n\n"
                  "model = MambaLMHeadModel(MambaConfig(d_model=256))\n")
        _, result = _migrate(source)
        rows = {f.start_line: f.tip.split("(called in this file: ")[-1] for f in _rows(result, Report.UNSUPPORTED)}
        assert rows == {1: "mamba_ssm.models.config_mamba.MambaConfig)",
                        2: "mamba_ssm.models.mixer_seq_simple.MambaLMHeadModel)"}

    def test_a_long_list_of_calls_is_cut(self):
        calls = "".join(f"a{n} = cupy.f{n}()\n" for n in range(9))
        _, result = _migrate("import cupy\n" + calls)
        (row,) = _rows(result, Report.UNSUPPORTED)
        assert row.tip.endswith("(called in this file: cupy.f0, cupy.f1, cupy.f2, cupy.f3, cupy.f4, cupy.f5 and 3 more)")

    @pytest.mark.parametrize("source, lines", [
        # advice of its own: bitsandbytes' 4-bit layer is not "drop bitsandbytes"
        ("import bitsandbytes as bnb\nlayer = bnb.nn.Linear4bit(16, 16)\n", [1, 2]),
        # a part of a package that installs on an NPU machine (DeepSpeed): the import works, the call fails
        ("from deepspeed.ops.op_builder import EvoformerAttnBuilder\nkernel = EvoformerAttnBuilder().load()\n", [1, 2]),
        # an optional import is a note: the call that does not ask keeps its row
        ("try:\n    import cupy\nexcept ImportError:\n    cupy = None\nx = cupy.zeros(3)\n", [5]),
        # NVIDIA's management library: each query is replaced by its own NPU query
        ("import pynvml\npynvml.nvmlInit()\nhandle = pynvml.nvmlDeviceGetHandleByIndex(0)\n", [1, 2, 3]),
        # a call before the import that has the row
        ("def f():\n    return cupy.zeros(3)\n\n\nimport cupy\n", [2, 5]),
    ])
    def test_other_calls_keep_their_rows(self, source, lines):
        _, result = _migrate(source)
        rows = _rows(result, Report.UNSUPPORTED)
        assert [f.start_line for f in rows] == lines
        assert not any("called in this file" in f.tip for f in rows)

    def test_check_and_the_migration_report_it_alike(self, tmp_path):
        project = tmp_path / "project"
        project.mkdir()
        (project / "arrays.py").write_text("import cupy\n\n\ndef zeros():\n    return cupy.zeros(3)\n")
        checked = run_cli("check", "-v", "2.1.0", "--format", "json", "--no-cache", str(project))
        findings = json.loads(checked.stdout)["findings"]
        assert [(f["start_line"], f["rule"]) for f in findings] == [(1, "NPU916")]
        assert findings[0]["message"].endswith("(called in this file: cupy.zeros)")
        out = tmp_path / "out"
        assert run_cli("-i", str(project), "-o", str(out), "-v", "2.1.0", "--no-cache").exit_code == 0
        rows = read_csv(out / "project_msft" / "unsupported_api.csv")
        assert [(row["Start Line"], row["OP"], row["Rule"]) for row in rows] == [("1", "cupy", "NPU916")]


def test_reading_a_packages_version_is_no_use_of_its_kernels():
    source = ("import tensorrt as trt\n\n\ndef build():\n    major = int(trt.__version__.split('.')[0])\n"
              "    return trt.Builder(trt.Logger()), major\n")
    _, result = _migrate(source)
    (row,) = _rows(result, Report.UNSUPPORTED)
    assert row.tip.endswith("(called in this file: tensorrt.Builder, tensorrt.Logger)")
    # without the import's row (an optional import), the version read has none either
    _, result = _migrate("try:\n    import tensorrt as trt\nexcept ImportError:\n    trt = None\n"
                         "if trt is None or trt.__version__.startswith('8'):\n    pass\n")
    assert _rows(result, Report.UNSUPPORTED) == []


class TestALoaderOverTheSamplesItsFunctionIsGiven:
    """A training loader built over what its function is given and read there is built anew for
    each call (an iterative trainer's step over that step's samples): drop_last would drop their
    remainder, or all of a step shorter than a batch. Left as is, with advice."""

    @pytest.mark.parametrize("source", [
        "from torch.utils.data import DataLoader, TensorDataset\n\n"
        "def train_iteration(policy, samples, optimizer):\n"
        "    train_loader = DataLoader(TensorDataset(samples), batch_size=8, shuffle=True)\n"
        "    for (batch,) in train_loader:\n        policy(batch).mean().backward()\n",
        # through a variable, read in a comprehension, a keyword-only parameter
        "from torch.utils.data import DataLoader\n\nclass Learner:\n"
        "    def update(self, *, rollouts):\n        train_set = RolloutDataset(rollouts, gamma=self.gamma)\n"
        "        train_loader = DataLoader(train_set, batch_size=4, shuffle=True)\n"
        "        return [self.learn(b) for b in train_loader]\n",
        # read again in the update's own passes over the step's samples (PPO), not a run's epochs
        "from torch.utils.data import DataLoader, TensorDataset\n\nclass Agent:\n"
        "    def update(self, rollouts):\n"
        "        loader = DataLoader(TensorDataset(rollouts.obs, rollouts.actions), batch_size=64, shuffle=True)\n"
        "        for _ in range(self.ppo_epochs):\n            for obs, actions in loader:\n"
        "                self.learn(obs, actions)\n",
        "from torch.utils.data import DataLoader\n\ndef update(policy, buffer, update_epochs):\n"
        "    train_loader = DataLoader(buffer, batch_size=64, shuffle=True)\n"
        "    for epoch in range(update_epochs):\n        for batch in train_loader:\n            policy.learn(batch)\n",
        "from torch.utils.data import DataLoader\n\ndef update(policy, buffer):\n"
        "    train_loader = DataLoader(buffer, batch_size=64, shuffle=True)\n"
        "    for _ in range(4):\n        for batch in train_loader:\n            policy.learn(batch)\n",
        # over tensors the function made of its samples, one or more assignments back
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\nclass Agent:\n"
        "    def learn(self, experiences):\n        states = torch.stack([e.state for e in experiences])\n"
        "        actions = torch.stack([e.action for e in experiences])\n"
        "        minibatches = DataLoader(TensorDataset(states, actions), batch_size=64, shuffle=True)\n"
        "        for _ in range(self.k_epochs):\n            for s, a in minibatches:\n                self.step(s, a)\n",
        "from torch.utils.data import DataLoader\n\ndef update(policy, trajectories):\n"
        "    flat = [step for t in trajectories for step in t]\n    samples = shuffle_list(flat)\n"
        "    loader = DataLoader(samples, batch_size=16, shuffle=True)\n"
        "    for batch in loader:\n        policy.learn(batch)\n",
    ])
    def test_it_gets_no_drop_last(self, source):
        output, result = _migrate(source)
        assert "drop_last" not in output
        (advice,) = [f for f in _rows(result, Report.PERFORMANCE) if f.api == "torch.utils.data.DataLoader"]
        assert "over the samples its function is given" in advice.tip

    @pytest.mark.parametrize("source", [
        # a loader made from the data set of a run, or handed on: built once
        "from torch.utils.data import DataLoader\n\ndef main(args):\n    train_set = ImageFolder(args.data)\n"
        "    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)\n"
        "    for batch in train_loader:\n        step(batch)\n",
        "from torch.utils.data import DataLoader\n\ndef get_train_loader(train_set, batch_size):\n"
        "    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)\n    return train_loader\n",
        "from torch.utils.data import DataLoader\n\nclass Trainer:\n    def fit(self):\n"
        "        train_loader = DataLoader(self.train_set, batch_size=8, shuffle=True)\n"
        "        for batch in train_loader:\n            self.step(batch)\n",
        # made through local names of a setting read from an argument, or of the module's data
        "from torch.utils.data import DataLoader\n\ndef main(args):\n    root = args.data\n"
        "    train_set = ImageFolder(root, transform=make_transform(args.size))\n"
        "    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)\n"
        "    for batch in train_loader:\n        step(batch)\n",
        "from torch.utils.data import DataLoader\n\nDATA = load_corpus()\n\ndef run(model):\n"
        "    train_set = Tokenized(DATA)\n    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)\n"
        "    for batch in train_loader:\n        model(batch)\n",
    ])
    def test_a_loader_built_once_gets_it(self, source):
        output, _ = _migrate(source)
        assert "shuffle=True, drop_last=True)" in output

    @pytest.mark.parametrize("loop", ["for epoch in range(args.epochs):", "for _ in range(num_epochs):",
                                      "for epoch in range(10):", "for epoch in range(start, cfg.max_epochs):",
                                      "for _ in range(self.num_train_epochs):", "while step < max_steps:"])
    @pytest.mark.parametrize("data", ["train_set", "subset"])
    def test_a_loader_over_the_given_data_set_read_in_a_runs_epochs_gets_it(self, loop, data):
        source = ("from torch.utils.data import DataLoader\n\ndef train(model, train_set, args):\n"
                  "    subset = Subset(train_set, range(args.n))\n"
                  f"    train_loader = DataLoader({data}, batch_size=32, shuffle=True)\n"
                  f"    {loop}\n        for batch in train_loader:\n            model(batch)\n")
        output, _ = _migrate(source)
        assert "shuffle=True, drop_last=True)" in output


class TestAnExceptionClassTorchNpuRaisesItself:
    """torch_npu's caching allocator raises torch.OutOfMemoryError (the class torch.cuda.OutOfMemoryError
    names) from 2.6.0 on, RuntimeError before: `except torch.cuda.OutOfMemoryError` catches the NPU's
    out-of-memory as written there, a note; before, the row says to catch RuntimeError."""

    SOURCE = ("import torch\n\n\ndef step(model, x):\n    try:\n        return model(x.cuda())\n"
              "    except torch.cuda.OutOfMemoryError:\n        return None\n    finally:\n"
              "        raised = torch.cuda.OutOfMemoryError\n")

    @pytest.mark.parametrize("version, report", [
        ("2.1.0", Report.UNSUPPORTED), ("2.5.1", Report.UNSUPPORTED), ("2.6.0", Report.NOTE), ("2.10.0", Report.NOTE),
    ])
    def test_a_row_where_the_release_raises_runtimeerror_and_a_note_where_it_raises_the_class(self, version, report):
        options = Options(api=apidata.load(version))
        result = migrate_source(self.SOURCE.encode(), "m.py", options, rules_for(options))
        rows = [f for f in result.findings if f.api == "torch.cuda.OutOfMemoryError"]
        assert [(f.start_line, f.report) for f in rows] == [(7, report), (10, report)]
        assert all(("catch RuntimeError" in f.tip) == (report == Report.UNSUPPORTED) for f in rows)
