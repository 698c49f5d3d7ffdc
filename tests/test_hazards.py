"""CUDA questions that survive a migration silently (the hazards package): each is reported at its line,
once, with what it does on the NPU in the chosen release; look-alikes are not."""
import re
import textwrap

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options


def _rows(source, version="2.1.0", report=Report.UNSUPPORTED):
    options = Options(api=apidata.load(version))
    result = migrate_source(textwrap.dedent(source).encode(), "m.py", options, rules_for(options))
    return [(f.start_line, f.api, f.tip) for f in result.findings if f.report == report]


def test_cuda_version_tests_and_parses_are_reported_even_in_a_file_with_nothing_to_migrate():
    rows = _rows("""\
        import torch
        from packaging import version
        bf16 = torch.version.cuda is not None and version.parse(torch.version.cuda) >= version.parse("11.0")
        print(th_version)
        """)
    assert [(line, api) for line, api, _ in rows] == [(3, "torch.version.cuda")]
    assert "None on an NPU machine" in rows[0][2]


def test_an_alias_of_torch_reaches_torch_version_cuda_and_a_local_variable_does_not():
    rows = _rows("import torch as th\ncuda = '12.1'\nok = th.version.cuda.startswith('12')\nversion.cuda = 1\n")
    assert [(line, api) for line, api, _ in rows] == [(3, "torch.version.cuda")]


class TestACudaVersionOnlyShown:
    """torch.version.cuda printed or logged shows None on the NPU: nothing decides with it, so no
    row; a test, a parse or a conversion of it still is one, in a message too."""

    @pytest.mark.parametrize("line", [
        "print(torch.version.cuda)",
        "print('CUDA', torch.version.cuda, sep=': ')",
        "logging.info(f'cuda {torch.version.cuda}')",
        "logger.warning('cuda %s' % torch.version.cuda)",
        "print('cuda {}'.format(torch.version.cuda), str(torch.version.cuda))",
        "logging.info('x', extra={'cuda': torch.version.cuda})",
        # given a default for None: the default is what is parsed
        "major = (torch.version.cuda or '12').split('.')[0]",
        # written to a log file, or printed by rank 0
        "f.write(f'Running pytorch {torch.version.__version__} compiled for CUDA {torch.version.cuda}')",
        "print0(f'CUDA {torch.version.cuda}')",
    ])
    def test_shown(self, line):
        assert _rows(f"import logging\nimport torch\nlogger = logging.getLogger()\n{line}\n") == []

    @pytest.mark.parametrize("line", [
        "print(float(torch.version.cuda))",
        "print(torch.version.cuda.split('.')[0])",
        "if torch.version.cuda:\n    print('cuda')",
        "logging.info('cuda' if torch.version.cuda else 'cpu')",
        "major = (torch.version.cuda or default).split('.')[0]",
    ])
    def test_used(self, line):
        rows = _rows(f"import logging\nimport torch\n{line}\n")
        assert [(row_line, api) for row_line, api, _ in rows] == [(3, "torch.version.cuda")]


def test_capability_fields_of_device_properties_are_reported_and_name_and_memory_are_not():
    rows = _rows("""\
        import torch
        props = torch.cuda.get_device_properties(0)
        print(props.name, props.total_memory)
        sms = props.multi_processor_count
        if torch.cuda.get_device_properties(0).major >= 8:
            pass
        other.major = 3
        """)
    # (the queries whose CUDA-only fields are read stay torch.cuda's, each with its row: test_report_rows)
    assert [(line, api) for line, api, _ in rows if api.startswith("device properties")] == [
        (4, "device properties .multi_processor_count"), (5, "device properties .major")]


@pytest.mark.parametrize("version, says", [
    ("2.1.0", "has no inductor code generator for the NPU: the default backend cannot compile for it; pass backend='npu'"),
    ("2.9.0", "ships an inductor code generator for the NPU (its kernels are Triton-Ascend's: install triton-ascend) "
              "and the dynamo backends 'npu', 'npugraph_ex'"),
])
def test_torch_compile_says_what_the_release_compiles_with(version, says):
    rows = _rows("""\
        import torch
        model = torch.compile(model, mode="max-autotune", fullgraph=True)

        @torch.compile
        def step(x):
            return x
        """, version)
    assert [(line, api) for line, api, _ in rows] == [(2, "torch.compile"), (4, "torch.compile")]
    assert says in rows[0][2]
    assert "mode='max-autotune' autotunes Triton/cuBLAS kernels (inductor only) and captures CUDA graphs" in rows[0][2]
    assert "fullgraph" not in rows[1][2]


class TestABackendThatRunsTorchsOperators:
    """dynamo's eager backends run the captured graph with torch's own operators, on the NPU as
    anywhere: no row.  Inductor (the default), a CUDA-graph backend or a mode that asks for
    inductor's kernels keep theirs."""

    @pytest.mark.parametrize("call", ["torch.compile(model, backend='eager')",
                                      "torch.compile(model, backend='aot_eager')", "model.compile(backend='eager')"])
    def test_no_row(self, call):
        assert _rows(f"import torch\nmodel = {call}\n") == []

    @pytest.mark.parametrize("call", ["torch.compile(model)", "torch.compile(model, backend='inductor')",
                                      "torch.compile(model, backend='cudagraphs')",
                                      "torch.compile(model, backend='eager', mode='reduce-overhead')"])
    def test_a_row(self, call):
        assert [line for line, _, _ in _rows(f"import torch\nmodel = {call}\n")] == [2]


def test_the_source_built_releases_know_their_backends_too():
    # torch_npu for torch 2.2.0 is read from the Ascend/pytorch sources: torchair's backend, no inductor
    rows = _rows("import torch\nm = torch.compile(m)\n", "2.2.0")
    assert "has no inductor code generator for the NPU" in rows[0][2] and "backend='npu'" in rows[0][2]
    assert not _rows("import re\npattern = re.compile('cuda')\n", "2.2.0")


def test_a_release_whose_data_does_not_record_its_backends_says_so():
    import dataclasses

    from gpu2npu.findings.hazards import compile_tip

    unrecorded = dataclasses.replace(apidata.load("2.2.0"), compile_backends=None)
    assert "does not record its torch.compile backends" in compile_tip(unrecorded, None)


def test_inductor_settings_are_noted_with_their_meaning():
    rows = _rows("""\
        import torch._inductor.config as inductor_config
        import torch
        inductor_config.coordinate_descent_tuning = True
        torch._inductor.config.triton.cudagraphs = False
        """, report=Report.NOTE)
    assert [(line, api) for line, api, _ in rows] == [(3, "torch._inductor.config.coordinate_descent_tuning"),
                                                      (4, "torch._inductor.config.triton.cudagraphs")]
    assert "no inductor for the NPU" in rows[0][2] and "captures CUDA graphs" in rows[1][2]


def test_inductor_settings_are_notes_of_their_own_kind_that_check_does_not_count(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "train.py").write_text("import torch\nimport torch._inductor.config as cfg\n"
                                       "cfg.coordinate_descent_tuning = True\nmodel = torch.compile(model)\n")
    gpu2npu = str(Path(sys.executable).parent / "gpu2npu")
    done = subprocess.run([gpu2npu, "check", "-v", "2.1.0", str(tmp_path / "train.py")], capture_output=True, text=True)
    assert done.returncode == 1 and [line.split()[1] for line in done.stdout.splitlines()] == ["NPU905"]
    source = tmp_path / "project"
    source.mkdir()
    (tmp_path / "train.py").rename(source / "train.py")
    subprocess.run([gpu2npu, "-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0"], capture_output=True,
                   check=True)
    # nothing is to be done about the setting (it has no effect without an inductor for the NPU):
    # the log says what it does, the row is the compile call's
    rows = (tmp_path / "out" / "project_msft" / "unsupported_api.csv").read_text().splitlines()[1:]
    assert [(row.split(",")[1], row.rsplit(",", 1)[1]) for row in rows] == [("4", "NPU905")]
    log = (tmp_path / "out" / "project_msft" / "msFmkTranspltlog.txt").read_text()
    assert "train.py line: 3 ~ 3 Operation Type: NOTE Message: torch._inductor.config.coordinate_descent_tuning" in log


def test_every_bitsandbytes_optimizer_name_holds_a_word_the_text_tests_look_for():
    # (the hazard and the launch-script rule read a file only where one of NAME_WORDS is in it)
    from gpu2npu.knowledge.hf_optimizers import HF_BITSANDBYTES_OPTIMIZERS, NAME_WORDS
    assert all(any(word in name for word in NAME_WORDS) for name in HF_BITSANDBYTES_OPTIMIZERS)


@pytest.mark.parametrize("source", [
    "def validate(cfg):\n    if cfg.optimizer in ('adamw_8bit', 'adamw_bnb_8bit', 'paged_adamw_8bit'):\n        warn(cfg)\n",
    "def validate(cfg):\n    if cfg.optimizer == 'paged_adamw_32bit' or 'adamw_8bit' != cfg.optim:\n        warn(cfg)\n",
    "BNB = {'adamw_8bit', 'adamw_bnb_8bit'}\nuses_bnb = args.optim in ['adamw_8bit', 'paged_adamw_8bit']\n",
])
def test_optimizer_names_a_test_compares_with_are_no_choice(source):
    # (where it is chosen, optim="adamw_8bit", and where bitsandbytes builds it, the rows stand)
    assert [api for _, api, _ in _rows(source) if api.startswith("optimizer name")] == (
        ["optimizer name 'adamw_8bit'", "optimizer name 'adamw_bnb_8bit'"] if source.startswith("BNB") else [])


def test_float32_matmul_precision_is_advice_towards_hf32():
    rows = _rows("import torch\ntorch.set_float32_matmul_precision('high')\n", report=Report.PERFORMANCE)
    assert [(line, api) for line, api, _ in rows] == [(2, "torch.set_float32_matmul_precision")]
    assert "torch_npu.npu.matmul.allow_hf32" in rows[0][2]


def test_bitsandbytes_reached_through_transformers_and_lightning():
    rows = _rows('''\
        """Fine-tuning with optim="paged_adamw_8bit" is described here and not reported."""
        import argparse
        from transformers import BitsAndBytesConfig, TrainingArguments, AutoModelForCausalLM
        from lightning.pytorch.plugins import BitsandbytesPrecision
        parser = argparse.ArgumentParser()
        parser.add_argument("--optim", default="paged_adamw_32bit")
        args = TrainingArguments(output_dir="out", optim="adamw_bnb_8bit")
        quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype="bfloat16")
        model = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=True)
        plain = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=False)
        precision = BitsandbytesPrecision(mode="nf4-dq")
        fine = TrainingArguments(output_dir="out", optim="adamw_torch")


        class Names:
            PAGED = "paged_adamw_8bit"
        ''')
    assert [(line, api) for line, api, _ in rows] == [
        (6, "optimizer name 'paged_adamw_32bit'"), (7, "optimizer name 'adamw_bnb_8bit'"),
        (8, "BitsAndBytesConfig"), (9, "load_in_8bit"), (11, "BitsandbytesPrecision")]
    tips = {line: tip for line, _, tip in rows}
    assert "use optim='adamw_torch'" in tips[6] and "not paged out" in tips[6]
    assert "four times the optimizer memory" in tips[7]
    assert "bfloat16" in tips[8] and "LoRA" in tips[9] and "bf16-true" in tips[11]


class TestQuantizedLoadingHandedOn:
    """`load_in_4bit=args.load_in_4bit` handed to the project's own model class is one hop of an
    option: the row stands where it reaches a library that loads with bitsandbytes (the project's
    from_pretrained or BitsAndBytesConfig), not at every call that passes it along."""

    def test_a_hop_to_the_projects_own_callable_is_no_row(self):
        rows = _rows('''\
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            from project.models import Actor


            def build(args, model_class, load_in_4bit):
                actor = Actor(args.path, load_in_4bit=args.load_in_4bit)
                critic = self.strategy.prepare(args.path, load_in_8bit=load_in_8bit_flag)
                model = AutoModelForCausalLM.from_pretrained(args.path, load_in_4bit=load_in_4bit)
                other = model_class.from_pretrained(args.path, load_in_4bit=load_in_4bit)
                config = BitsAndBytesConfig(load_in_4bit=load_in_4bit)
                forced = Actor(args.path, load_in_4bit=True)
                return actor, critic, model, other, config, forced
            ''')
        assert [(line, api) for line, api, _ in rows] == [
            (7, "load_in_8bit"), (8, "load_in_4bit"), (9, "load_in_4bit"), (10, "BitsAndBytesConfig"),
            (11, "load_in_4bit")]


def test_each_triton_kernel_is_named_at_its_def_line():
    rows = _rows("""\
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
        @triton.jit
        def rms_norm_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


        def launch(x):
            rms_norm_kernel[(triton.cdiv(x.numel(), 128),)](x, x.numel())
        """)
    kernels = [(line, api) for line, api, _ in rows if api.startswith("Triton kernel")]
    assert kernels == [(7, "Triton kernel rms_norm_kernel")]
    # one row for the kernel, not one per tl.* call in it; one for the language imported (the first
    # of its two imports), the launcher's helpers (triton.cdiv) serve the kernel and have none
    assert [(line, api) for line, api, _ in rows if not api.startswith("Triton kernel")] == [(1, "triton")]


@pytest.mark.parametrize("handing_on", ["from vllm_like.triton_utils import tl, triton",
                                        "from ..utils import triton, tl as tl"])
def test_triton_handed_on_by_a_module_of_the_project_is_triton(handing_on):
    # (`from M import triton, tl`: the kernels written with them are named, one row each, and the
    # launcher's calls keep theirs, as with a direct import; the kernel had gone unreported, or
    # where M was a CUDA-only package each tl.* call in it had had a row)
    rows = _rows(f"""\
        import torch
        {handing_on}


        @triton.jit
        def add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)


        def add_one(x):
            add_one_kernel[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
            return x.cuda()
        """)
    assert [(line, api) for line, api, _ in rows] == [(6, "Triton kernel add_one_kernel")]


def test_a_name_handed_on_from_triton_itself_or_under_another_name_is_what_it_is():
    from gpu2npu.knowledge.tips import handed_on

    assert handed_on("vllm.triton_utils", "triton") == "triton" and handed_on(".utils", "tl") == "triton.language"
    assert handed_on("triton", "language") is None and handed_on("triton.runtime", "triton") is None
    assert handed_on("vllm.triton_utils", "HAS_TRITON") is None


def test_cute_dsl_and_cutile_kernels_are_one_row_each_and_cuda_python_is_reported():
    rows = _rows("""\
        import torch
        import cutlass.cute as cute
        import cuda.tile as ct
        from cuda.bindings import driver


        @cute.kernel
        def scale_kernel(gA: cute.Tensor, gB: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            gB[tidx] = gA[tidx] * 2


        @cute.jit
        def scale(mA: cute.Tensor, mB: cute.Tensor):
            scale_kernel(mA, mB).launch(grid=(1, 1, 1), block=(128, 1, 1))


        @ct.kernel
        def add(a, b, c, tile: ct.Constant[int]):
            pid = ct.bid(0)
            ct.store(c, index=(pid,), tile=ct.load(a, index=(pid,), shape=(tile,)) + ct.load(b, index=(pid,), shape=(tile,)))


        def launch(a, b, c):
            compiled = cute.compile(scale, a, b)
            ct.launch(torch.cuda.current_stream(), (1, 1, 1), add, (a, b, c, 256))
            driver.cuCtxSynchronize()
        """, version="2.6.0")
    # the kernels and the function that compiles and launches one: a row each at the def line,
    # none for the language's calls inside them or for the host calls that compile and launch them;
    # the imports and the CUDA runtime's calls keep theirs
    assert [(line, api) for line, api, _ in rows] == [
        (2, "cutlass.cute"), (3, "cuda.tile"), (4, "cuda.bindings.driver"),
        (8, "CuTe DSL kernel scale_kernel"), (14, "CuTe DSL kernel scale"), (19, "cuTile kernel add"),
        (27, "cuda.bindings.driver.cuCtxSynchronize")]
    tips = {line: tip for line, _, tip in rows}
    assert "Ascend C" in tips[8] and "CuTe DSL" in tips[2] and "torch_npu.npu" in tips[4]


def test_torchs_and_numbas_cuda_are_not_cuda_python():
    rows = _rows("""\
        import torch
        from torch import cuda
        from numba import cuda as numba_cuda
        use_cuda = cuda.is_available()
        cuda_ok = torch.cuda.is_available()
        """, version="2.6.0")
    assert [(line, api) for line, api, _ in rows] == [(3, "numba.cuda")]


def test_the_raw_cuda_stream_handed_to_cuda_libraries_is_reported():
    rows = _rows("""\
        import torch
        from cuda import cuda

        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        s = torch.cuda.Stream()
        handle = s.cuda_stream
        """, version="2.6.0")
    # (the handle given straight to cuda-python's CUstream is that call's row, NPU929, at line 4)
    assert [(line, api) for line, api, _ in rows if api in ("Stream.cuda_stream", "cuda.cuda.CUstream")] == [
        (4, "cuda.cuda.CUstream"), (6, "Stream.cuda_stream")]


def test_fused_optimizers_without_an_npu_kernel_are_reported():
    rows = _rows("""\
        import torch
        from torch import optim

        adam = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
        adamw = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
        sgd = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
        plain = torch.optim.Adam(model.parameters(), lr=1e-3, fused=False)
        """, version="2.6.0")
    fused = [(line, api) for line, api, _ in rows if "fused" in api]
    # torch_npu has aten::_fused_adamw_ only (npu_native_functions.yaml of every release in the data)
    assert fused == [(4, "torch.optim.Adam(fused=True)"), (6, "torch.optim.SGD(fused=True)")]
    tip = next(tip for line, _, tip in rows if line == 4)
    assert "aten::_fused_adam_" in tip and "torch_npu.optim.NpuFusedAdam" in tip


def test_a_kernel_under_a_decorator_of_the_projects_own_is_one_row_too():
    rows = _rows("""\
        import torch
        import triton
        import triton.language as tl


        def _jit(fn):
            return triton.jit(fn)


        @_jit
        def _scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


        def scale(x):
            # (a launcher that reads triton.language's data types is no kernel)
            out_type = tl.float16 if x.dtype == torch.float16 else tl.bfloat16
            _scale_kernel[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128, OUT=out_type)
            return x
        """)
    assert [(line, api) for line, api, _ in rows] == [(2, "triton"), (11, "Triton kernel _scale_kernel")]


def test_llm_kernel_packages_get_a_tip_per_name():
    rows = _rows("""\
        from liger_kernel.transformers import apply_liger_kernel_to_qwen2
        from flash_attn.losses.cross_entropy import CrossEntropyLoss
        import transformer_engine.pytorch as te
        from kernels import get_kernel
        apply_liger_kernel_to_qwen2()
        layer = te.LayerNorm(64)
        attention = get_kernel("kernels-community/flash-attn3")
        """)
    tips = {(line, api): tip for line, api, tip in rows}
    assert "drop the call" in tips[(5, "liger_kernel.transformers.apply_liger_kernel_to_qwen2")]
    assert tips[(6, "transformer_engine.pytorch.LayerNorm")] == "torch.nn.LayerNorm(hidden_size, eps)"
    assert "npu_fusion_attention" in tips[(7, "kernels.get_kernel('kernels-community/flash-attn3')")]


LIGER_TRAINER = """\
    from liger_kernel.transformers import LigerRMSNorm, apply_liger_kernel_to_llama
    import liger_kernel.ops.rms_norm as rms
    apply_liger_kernel_to_llama()
    norm = LigerRMSNorm(64)
    """


def test_liger_runs_on_the_npu_only_from_the_releases_triton_ascend_pairs_with():
    """liger-kernel's Ascend backend (0.6.5 on) compiles its Triton kernels with triton-ascend,
    which pairs with torch_npu 2.6.0 and later: before, each use is unsupported and its tip says so
    with what replaces it there; from 2.6 on each is a note saying what to install."""
    old = _rows(LIGER_TRAINER, "2.1.0")
    assert [(line, api) for line, api, _ in old] == [
        (1, "liger_kernel.transformers (LigerRMSNorm, apply_liger_kernel_to_llama)"), (2, "liger_kernel.ops.rms_norm"),
        (3, "liger_kernel.transformers.apply_liger_kernel_to_llama"), (4, "liger_kernel.transformers.LigerRMSNorm")]
    assert all("needs triton-ascend, for torch_npu 2.6.0 and later" in tip and "torch_npu 2.1.0" in tip
               and "CUDA" not in tip for _, _, tip in old)
    assert "drop the call" in old[2][2] and "npu_rms_norm" in old[3][2]
    for version in ("2.6.0", "2.9.0"):
        assert _rows(LIGER_TRAINER, version) == []
        notes = _rows(LIGER_TRAINER, version, Report.NOTE)
        assert [line for line, _, _ in notes] == [1, 2, 3, 4]
        assert all("liger-kernel's Ascend backend" in tip and "triton-ascend" in tip for _, _, tip in notes)


def test_a_bf16_check_loses_its_cuda_version_tests_and_its_rows_other_uses_keep_theirs():
    options = Options(api=apidata.load("2.1.0"))
    source = textwrap.dedent("""\
        import torch
        import packaging.version


        def bf16_ready():
            return (torch.version.cuda is not None
                    and packaging.version.parse(torch.version.cuda) >= packaging.version.parse("11.0")
                    and torch.cuda.is_bf16_supported())


        CUDA_MAJOR = int(torch.version.cuda.split(".")[0])
        """)
    result = migrate_source(source.encode(), "m.py", options, rules_for(options))
    output = result.output.decode()
    assert "    return (torch_npu.npu.is_bf16_supported())\n" in output
    assert [(c.start_line, c.end_line, c.rule) for c in result.changes if c.rule == "NPU109"] == [(6, 8, "NPU109")]
    assert [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED] == [(11, "torch.version.cuda")]


@pytest.mark.parametrize("version, reported", [("2.5.1", True), ("2.1.0", False), ("2.13.0", False)])
def test_sharing_a_tensor_between_processes_is_reported_where_the_release_cannot(version, reported):
    # CUDA IPC weight sync (trainer -> vLLM): torch_npu installs NPU tensor sharing on import
    # where the release ships torch_npu/multiprocessing/reductions.py (2.1.0.post17, 2.6.0 on)
    rows = _rows("""\
        import torch
        from torch.multiprocessing.reductions import reduce_tensor

        def handles(model):
            return {name: reduce_tensor(p.detach()) for name, p in model.named_parameters()}
        """, version)
    assert [(line, api) for line, api, _ in rows] == ([(5, "torch.multiprocessing.reductions.reduce_tensor")]
                                                      if reported else [])
    if reported:
        assert "torch_npu 2.5.1.post1 cannot share NPU tensors" in rows[0][2]


@pytest.mark.parametrize("text, found", [
    (b"x = 1\n", False), (b"pattern = re.compile(r'a')\n", False), (b"model = torch.compile(model)\n", True),
    (b"m.compile_options = 1\n", False), (b"from torch import compile\n", True), (b"x.compile\n", True),
    (b".compile", True), (b"e.compile()", True), (b"are.compile()", False), (b"y = x.compile\xff", True),
    (b"pure.compile()", False), (b"re.compile(a); torch.compile(b)", True),
])
def test_compile_is_found_by_its_look_at_the_bytes(text, found):
    # `.compile` that is not `re.compile` and ends a word: no trigger word says that
    from gpu2npu.findings.hazards import might_have_hazard

    assert might_have_hazard(text) is found


def test_the_quick_test_holds_every_detectors_words():
    from gpu2npu.findings.hazards import DETECTORS, might_have_hazard

    assert not might_have_hazard(b"import torch\nx = torch.ones(3)\n")
    for detector in DETECTORS:
        for word in detector.TRIGGERS:
            assert might_have_hazard(b"a = 1\n" + word + b"\n"), (detector.__name__, word)


def test_the_quick_test_never_hides_a_row_of_the_kinds_examples():
    # the words are the detectors' declarations: wherever all the detectors, walking a file
    # regardless of its words, find a row, the file's words let the detector that finds it walk
    from gpu2npu.knowledge import apidata
    from gpu2npu.reading import scan
    from gpu2npu.records.finding_kinds import KINDS
    from gpu2npu.findings.hazards import DETECTORS, _active, _walk
    from gpu2npu.findings.hazards.view import FileView

    api = apidata.load("2.1.0")
    codes = {getattr(module, name).code for module in DETECTORS for name in dir(module)
             if getattr(getattr(module, name), "code", None) in KINDS}
    assert len(codes) >= 10
    found = 0
    for code in sorted(codes):
        for source, _, _ in KINDS[code].examples:
            data = source.encode()
            file_scan = scan.FileScan(scan.parse(data), data)
            every = _walk(FileView(file_scan, "m.py", api, False), file_scan, DETECTORS)
            by_words = _walk(FileView(file_scan, "m.py", api, False), file_scan, list(_active(data, file_scan)))
            assert sorted(set(every)) == sorted(set(by_words)), source
            found += bool(every)
    assert found >= 10  # (the examples of the kinds another analysis reports find none here)


def test_transformers_front_doors_to_hub_kernels_are_reported():
    rows = _rows("""\
        from transformers import AutoModelForCausalLM
        from transformers.integrations.hub_kernels import load_and_register_attn_kernel
        load_and_register_attn_kernel("kernels-community/flash-attn")
        model = AutoModelForCausalLM.from_pretrained("m", attn_implementation="kernels-community/vllm-flash-attn3",
                                                     use_kernels=True)
        plain = AutoModelForCausalLM.from_pretrained("m", attn_implementation="sdpa", use_kernels=False)
        """)
    assert [(line, api) for line, api, _ in rows] == [
        (3, "load_and_register_attn_kernel('kernels-community/flash-attn')"),
        (4, "attn_implementation='kernels-community/vllm-flash-attn3'"), (5, "use_kernels=True")]
    assert all("compiled for CUDA" in tip for _, _, tip in rows)


def test_the_front_door_of_earlier_transformers_releases_too():
    # (load_and_register_kernel, before transformers named it load_and_register_attn_kernel)
    rows = _rows("""\
        from transformers.integrations import hub_kernels
        hub_kernels.load_and_register_kernel("kernels-community/flash-attn")
        """)
    assert [(line, api) for line, api, _ in rows] == [(2, "load_and_register_kernel('kernels-community/flash-attn')")]


def test_the_front_doors_that_transformers_integrations_re_exports():
    rows = _rows("""\
        from transformers.integrations import kernelize, lazy_load_kernel
        import transformers.integrations as integrations
        causal_conv1d = lazy_load_kernel("causal-conv1d")
        model = kernelize(model)
        integrations.lazy_load_kernel("mamba-ssm")
        """)
    assert [(line, api) for line, api, _ in rows] == [
        (3, "lazy_load_kernel('causal-conv1d')"), (4, "kernelize"), (5, "lazy_load_kernel('mamba-ssm')")]


@pytest.mark.parametrize("source, reported", [
    ("import subprocess\nout = subprocess.check_output(['nvidia-smi', '--query-gpu=memory.used', '--format=csv'])\n", True),
    ("import os\nos.system('nvidia-smi -L')\n", True),
    ("from os import popen\nfree = popen('/usr/bin/nvidia-smi').read()\n", True),
    ("import subprocess\nsubprocess.run('nvidia-smi', shell=True)\n", True),
    # a command written once under a name, at the top of the file or in the function
    ("import subprocess\nNVSMI = ['nvidia-smi', '--query-gpu=memory.used', '--format=csv']\n\n"
     "def used():\n    return subprocess.run(NVSMI, capture_output=True).stdout\n", True),
    ("import os\n\ndef show():\n    cmd = 'nvidia-smi topo -m'\n    os.system(cmd)\n", True),
    # the word in text, or another program, or a name given two commands (which runs is not known)
    ("import subprocess\ncmd = ['nvidia-smi', '-L']\nif ascend:\n    cmd = ['npu-smi', 'info']\nsubprocess.run(cmd)\n",
     False),
    ("print('see nvidia-smi for the GPUs')\n", False),
    ("import subprocess\nsubprocess.run(['npu-smi', 'info'])\n", False),
    ("import subprocess\nsubprocess.run(['echo', 'nvidia-smi'])\n", False),
])
def test_nvidia_smi_run_from_python_is_reported(source, reported):
    rows = _rows(source)
    assert [api for _, api, _ in rows] == (["nvidia-smi"] if reported else [])
    assert all("npu-smi info" in tip for _, _, tip in rows)


@pytest.mark.parametrize("source", [
    "import shutil\nimport subprocess\nif shutil.which('nvidia-smi'):\n    subprocess.run(['nvidia-smi', '-L'])\n",
    "import shutil\nimport subprocess\n\ndef gpus():\n    if shutil.which('nvidia-smi') is None:\n        return ''\n"
    "    return subprocess.check_output(['nvidia-smi', '-L'], text=True)\n",
    "import os\nHAS_SMI = os.path.exists('/usr/bin/nvidia-smi')\nif HAS_SMI:\n    os.system('nvidia-smi')\n",
])
def test_nvidia_smi_run_only_where_it_is_found_is_a_note(source):
    # the question fails on an Ascend machine: the call is not reached there and fails nothing
    assert _rows(source) == []
    notes = [(api, tip) for _, api, tip in _rows(source, report=Report.NOTE) if api == "nvidia-smi"]
    assert len(notes) == 1 and notes[0][1].startswith("runs only where") and "not reached there" in notes[0][1]


@pytest.mark.parametrize("source", [
    # a question about another program, or a word that only looks like one
    "import shutil\nimport subprocess\nif shutil.which('npu-smi'):\n    subprocess.run(['nvidia-smi', '-L'])\n",
    "import subprocess\nif args.which_nvidia_smi_output:\n    subprocess.run(['nvidia-smi', '-L'])\n",
    # the question's other branch
    "import shutil\nimport subprocess\nif not shutil.which('nvidia-smi'):\n    subprocess.run(['nvidia-smi', '-L'])\n",
])
def test_nvidia_smi_after_another_question_keeps_its_row(source):
    assert [api for _, api, _ in _rows(source)] == ["nvidia-smi"]


@pytest.mark.parametrize("source, rows", [
    ("import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.compile(mode='max-autotune')\n", [(3, "Module.compile")]),
    ("import torch\nself_model = build()\nself_model.compile()\n", [(3, "Module.compile")]),
    # not a module's: a pattern, Keras' compile, an object named otherwise, a file without torch
    ("import re\nimport torch\nPATTERN = re.compile('a+')\n", []),
    ("import torch\nmodel.compile(optimizer='adam', loss='mse')\n", []),
    ("import torch\ntemplate.compile()\n", []),
    ("model.compile(mode='reduce-overhead')\n", []),
])
def test_the_method_form_of_torch_compile_is_reported(source, rows):
    assert [(line, api) for line, api, _ in _rows(source)] == rows


@pytest.mark.parametrize("source, rows", [
    ("import lightning as L\ntrainer = L.Trainer(accelerator='gpu', devices=8)\n", [(2, "accelerator='gpu'")]),
    ("from pytorch_lightning import Trainer\nTrainer(accelerator='gpu')\n", [(2, "accelerator='gpu'")]),
    ("from transformers import TrainingArguments\nargs = TrainingArguments('o', tf32=True)\n", [(2, "tf32=True")]),
    ("from trl import SFTConfig\nconfig = SFTConfig(output_dir='o', tf32=True)\n", [(2, "tf32=True")]),
    ("import lightning as L\ntrainer = L.Trainer(accelerator='auto')\n", [(2, "lightning.Trainer(accelerator='auto')")]),
    ("from transformers import TrainingArguments\nargs = TrainingArguments('o', tf32=False)\n", []),
    ("def build(accelerator='gpu'):\n    return make(accelerator='gpu')\n", []),
])
def test_other_frameworks_cuda_options_are_reported(source, rows):
    assert [(line, api) for line, api, _ in _rows(source)] == rows


class TestLightningChoosingItsAccelerator:
    """Lightning's automatic choice has no NPU: on an Ascend machine it trains on the CPU."""

    @pytest.mark.parametrize("source, api", [
        ("import lightning as L\nfabric = L.Fabric(devices=devices, strategy='fsdp', precision='bf16-true')\n",
         "lightning.Fabric(...) without accelerator"),
        ("from pytorch_lightning import Trainer\ntrainer = Trainer(max_epochs=3)\n",
         "pytorch_lightning.Trainer(...) without accelerator"),
        ("from lightning_fabric import Fabric\nfabric = Fabric()\n", "lightning_fabric.Fabric(...) without accelerator"),
        ("import lightning.pytorch as pl\ntrainer = pl.Trainer(accelerator='auto', devices=-1)\n",
         "lightning.pytorch.Trainer(accelerator='auto')"),
    ])
    def test_a_choice_left_to_lightning_is_reported(self, source, api):
        rows = _rows(source)
        assert [(line, name) for line, name, _ in rows] == [(2, api)]
        assert "trains on the CPU" in rows[0][2] and "accelerator=" in rows[0][2]

    @pytest.mark.parametrize("source", [
        "import lightning as L\nfabric = L.Fabric(accelerator='cpu', devices=1)\n",  # chosen on purpose
        "import lightning as L\ntrainer = L.Trainer(accelerator=args.accelerator)\n",  # chosen by the user
        "import lightning as L\ntrainer = L.Trainer(**config)\n",  # may hold one
        "import lightning as L\nfabric = L.Fabric('npu', devices=8)\n",  # Fabric's first argument is the accelerator
        "from transformers import Trainer\ntrainer = Trainer(model=model, args=args)\n",  # not Lightning's
        "import lightning\nfrom .training import Trainer\ntrainer = Trainer()\n",  # the project's own
    ])
    def test_a_chosen_accelerator_or_another_trainer_is_not(self, source):
        assert _rows(source) == []


def test_nvidia_smi_in_a_try_that_expects_it_missing_is_no_row():
    rows = _rows("import subprocess\n\n\ndef gpu_name():\n    try:\n"
                 "        return subprocess.run(['nvidia-smi', '-L'], capture_output=True).stdout\n"
                 "    except (FileNotFoundError, subprocess.SubprocessError):\n        return None\n\n\n"
                 "def strict():\n    try:\n        subprocess.run(['nvidia-smi'])\n    except KeyError:\n        pass\n")
    assert [(line, api) for line, api, _ in rows] == [(13, "nvidia-smi")]


def test_lightnings_requirement_cache_of_a_cuda_only_package_is_a_probe():
    rows = _rows("from lightning_utilities.core.imports import RequirementCache\n"
                 "_FLASH_ATTN = RequirementCache('flash-attn>=2.0')\n"
                 "_TORCH = RequirementCache('torch>=2.1')\n")
    assert [(line, api) for line, api, _ in rows] == [(2, "RequirementCache('flash-attn>=2.0')")]
    assert "ascend_flash_attn" in rows[0][2]


@pytest.mark.parametrize("source, api", [
    ("import torch\np = torch.cuda.get_device_properties(0)\nsm = (p.major, p.minor)\n", "device properties .major, .minor"),
    ("import torch\np = torch.cuda.get_device_properties(0)\nok = p.major * 10 + p.minor >= 80 and p.major < 10\n",
     "device properties .major, .minor"),
])
def test_the_property_fields_read_on_one_line_are_one_row(source, api):
    rows = [(line, name) for line, name, _ in _rows(source) if name.startswith("device properties")]
    assert rows == [(3, api)]
    tip = next(tip for _, name, tip in _rows(source) if name == api)
    assert "have no major or minor" in tip


def test_the_property_fields_of_two_lines_are_two_rows():
    rows = _rows("import torch\np = torch.cuda.get_device_properties(0)\nmajor = p.major\nminor = p.minor\n")
    assert [(line, name) for line, name, _ in rows if name.startswith("device properties")] == [
        (3, "device properties .major"), (4, "device properties .minor")]


@pytest.mark.parametrize("source, rows", [
    # handed straight to a CUDA-only package's call, which has the row at the place
    ("import torch\nimport cuda.bindings.driver as cuda\n\n\ndef launch(x):\n"
     "    return cuda.CUstream(torch.cuda.current_stream(x.device).cuda_stream)\n",
     [(2, "cuda.bindings.driver"), (6, "cuda.bindings.driver.CUstream")]),
    ("import cupy\nimport torch\nstream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)\n",
     [(1, "cupy")]),
    # kept, or handed to code of the project's own: the handle's row says what is missing
    ("import torch\nhandle = torch.cuda.current_stream().cuda_stream\n", [(2, "Stream.cuda_stream")]),
    ("import torch\nlaunch_kernel(grid, torch.cuda.current_stream().cuda_stream)\n", [(2, "Stream.cuda_stream")]),
])
def test_a_stream_handle_given_to_a_cuda_only_call_is_that_calls_row(source, rows):
    assert [(line, api) for line, api, _ in _rows(source)] == rows


TRITON_KERNEL = ("import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                 "def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n")
CUTE_KERNEL = "import cutlass.cute as cute\n\n\n@cute.kernel\ndef mma(a, b):\n    pass\n"


class TestTheProjectsOwnNpuBackend:
    """A module of a package named for the NPU (Liger's `ops/backends/_ascend/`, DeepSpeed's
    `op_builder/npu/`), or named for it (`npu_kernels.py`), is the project's own NPU backend: its
    Triton kernels are written for Triton-Ascend, so neither they nor its `import triton` have a
    row.  Whole words only (`input_batch.py` names no NPU); a folder that is no package (the
    project's own root, `npu_demo/`) names nothing; CuTe kernels (CUDA only) keep their rows; the
    migration and `check`, however its paths are typed, give the same rows."""

    TREE = {"lib/__init__.py": "", "lib/ops/__init__.py": "", "lib/ops/backends/__init__.py": "",
            "lib/ops/backends/_ascend/__init__.py": "", "lib/ops/backends/_ascend/ops/__init__.py": "",
            "lib/ops/backends/_ascend/ops/rope.py": TRITON_KERNEL,
            "lib/ops/backends/_ascend/mma.py": CUTE_KERNEL,
            "lib/ops/npu_kernels.py": TRITON_KERNEL,
            # a helper that reads Triton's types, beside the kernels
            "lib/ops/backends/_ascend/ops/dtypes.py": "import torch\nimport triton.language as tl\n\n\n"
                                                      "def to_triton(dtype):\n    return {torch.float32: tl.float32}[dtype]\n",
            "lib/worker/__init__.py": "", "lib/worker/input_batch.py": TRITON_KERNEL,
            "kernels/add.py": TRITON_KERNEL}
    EXPECTED = [("kernels/add.py", 2, "NPU929"), ("kernels/add.py", 7, "NPU909"),
                ("lib/ops/backends/_ascend/mma.py", 1, "NPU929"), ("lib/ops/backends/_ascend/mma.py", 5, "NPU909"),
                ("lib/worker/input_batch.py", 2, "NPU929"), ("lib/worker/input_batch.py", 7, "NPU909")]

    def test_the_migration_reports_the_other_files_only(self, tmp_path):
        from helpers import migrate, read_csv, write_project

        root = write_project(tmp_path / "npu_demo", self.TREE)
        target = migrate(root, tmp_path / "out")
        rows = [(row["File"], int(row["Start Line"]), row["Rule"]) for row in read_csv(target / "unsupported_api.csv")]
        assert sorted(rows) == self.EXPECTED

    def test_check_answers_alike_however_its_paths_are_typed(self, tmp_path, monkeypatch):
        from helpers import run_cli, write_project

        root = write_project(tmp_path / "npu_demo", self.TREE)
        monkeypatch.chdir(tmp_path)
        files = [f"npu_demo/{name}" for name in self.TREE if self.TREE[name]]
        for paths in ([str(root)], ["npu_demo"], files, [str(tmp_path / name) for name in files]):
            result = run_cli("check", *paths, "-v", "2.1.0", "--no-cache")
            assert result.exit_code == 1, result.output
            found = sorted((path.rsplit("npu_demo/", 1)[-1], int(line), code)
                           for path, line, code in re.findall(r"(\S+):(\d+): (NPU\d+)", result.output))
            assert found == self.EXPECTED, paths


class TestFloat8TheReleaseCannotHold:
    """torch_npu's releases for torch 2.6 and older map no ACL data type to float8: a tensor made
    or cast to one raises on the NPU.  A row where a float8 dtype makes a tensor (dtype=, out_dtype=,
    .to/.view/.type, through a conditional or a variable of the file); none where it is only
    compared or measured, none in a release whose NPU has float8."""

    MAKES_A_TENSOR = [
        ("import torch\nw = weight.to(torch.float8_e4m3fn)\n", 2, "torch.float8_e4m3fn"),
        ("import torch\nbuf = torch.empty(8, dtype=torch.float8_e5m2, device='cuda')\n", 2, "torch.float8_e5m2"),
        ("import torch\nout = torch.mm(a, b, out_dtype=torch.float8_e5m2)\n", 2, "torch.float8_e5m2"),
        ("from torch import float8_e4m3fn as fp8\nq = x.view(fp8)\n", 2, "torch.float8_e4m3fn"),
        ("import torch\nFP8 = torch.float8_e4m3fn\n\ndef quantize(x):\n    return x.to(dtype=FP8)\n", 5,
         "torch.float8_e4m3fn"),
        ("import torch\nx = t.to(torch.float8_e4m3fn if use_fp8 else torch.bfloat16)\n", 2, "torch.float8_e4m3fn"),
        # given to a function of the file that casts with that parameter
        ("import torch\n\ndef quantize(x, fp8_dtype):\n    limit = torch.finfo(fp8_dtype).max\n"
         "    return x.clamp(-limit, limit).to(fp8_dtype)\n\nq = quantize(w, torch.float8_e4m3fn)\n", 7,
         "torch.float8_e4m3fn"),
        ("import torch\n\ndef buffer(n, *, dtype):\n    return torch.empty(n, dtype=dtype)\n\n"
         "b = buffer(4, dtype=torch.float8_e5m2)\n", 6, "torch.float8_e5m2"),
    ]

    @pytest.mark.parametrize("source, line, dtype", MAKES_A_TENSOR)
    def test_a_float8_tensor_is_a_row_in_a_release_without_it(self, source, line, dtype):
        rows = [(row_line, api) for row_line, api, tip in _rows(source) if "no NPU data type" in tip]
        assert rows == [(line, dtype)]

    @pytest.mark.parametrize("source", [
        "import torch\nis_fp8 = x.dtype == torch.float8_e4m3fn\n",
        "import torch\nlimit = torch.finfo(torch.float8_e4m3fn).max\n",
        "import torch\nDTYPES = {'fp8': torch.float8_e4m3fn, 'bf16': torch.bfloat16}\n",
        "import torch\nw = weight.to(torch.bfloat16)\n",
        "float8_e4m3fn = 'label'\nx = t.to(float8_e4m3fn)\n",
        # a function of the file that only measures with the parameter
        "import torch\n\ndef limit(dtype):\n    return torch.finfo(dtype).max\n\nm = limit(torch.float8_e4m3fn)\n",
    ])
    def test_a_float8_dtype_that_makes_no_tensor_is_no_row(self, source):
        assert not [row for row in _rows(source) if "no NPU data type" in row[2]]

    @pytest.mark.parametrize("version", ["2.7.1", "2.10.0"])
    def test_a_release_whose_npu_has_float8_says_nothing_of_it(self, version):
        assert not _rows("import torch\nw = weight.to(torch.float8_e4m3fn)\n", version)

    @pytest.mark.parametrize("version", ["2.6.0", "2.10.0"])
    def test_the_fnuz_variants_are_rows_in_every_release(self, version):
        rows = _rows("import torch\nw = weight.to(torch.float8_e5m2fnuz)\n", version)
        assert [api for _, api, _ in rows] == ["torch.float8_e5m2fnuz"]

    def test_a_dtype_newer_than_the_releases_torch_is_one_row_of_its_own(self):
        rows = _rows("import torch\nx = torch.empty(3, dtype=torch.float8_e8m0fnu)\n")
        assert len(rows) == 1 and "has no such dtype" in rows[0][2]


class TestTheProjectRefusingTheReleasesTorch:
    """A raise, a failing assert or a sys.exit that the project's own test of torch's version
    reaches with the torch the release is built for stops the migrated program: a row where the
    version decides (the other tests on the way hold on the NPU), none where something else may
    keep the stop from happening or a later -v passes the test."""

    REFUSES = [
        ("import torch\nfrom packaging.version import Version\n"
         "if Version(torch.__version__) < Version('2.4.0'):\n    raise ImportError('needs torch 2.4')\n", 4, "2.4.0"),
        ("import torch\nfrom packaging import version\n"
         "if version.parse(torch.__version__.split('+')[0]) < version.parse('2.3'):\n    raise RuntimeError\n",
         4, "2.3.1"),
        ("import torch\nassert torch.__version__ >= '2.2', 'torch 2.2 or newer'\n", 2, "2.2.0"),
        # an else after the test that passes
        ("import torch\nfrom packaging.version import Version\nif Version(torch.__version__) >= Version('2.5'):\n"
         "    from torch.nn import RMSNorm\nelse:\n    raise ImportError('torch 2.5')\n", 6, "2.5.1"),
        # through a name the file assigns once, and a project's own Version wrapper
        ("import torch\nfrom project.utils import Version\nTORCH = Version(torch.__version__)\n"
         "if TORCH < Version('2.4'):\n    raise ImportError\n", 5, "2.4.0"),
        ("import torch\nfrom packaging.version import Version\n\ndef check():\n"
         "    found = Version(torch.__version__.split('+')[0])\n    if found < Version('2.9'):\n"
         "        raise RuntimeError\n", 7, "2.9.0"),
        # the NPU's own branch of a device chain, and a test for the NPU beside the version's
        ("import torch\nfrom packaging.version import Version\ntorch_version = torch.__version__\n"
         "if DEVICE_TYPE in ('cuda', 'hip'):\n    pass\nelif DEVICE_TYPE == 'npu':\n"
         "    if Version(torch_version) < Version('2.4.0'):\n        raise RuntimeError('npu needs 2.4')\n", 8, "2.4.0"),
        ("import torch\nfrom packaging.version import Version\n"
         "if DEVICE_TYPE == 'npu' and Version(torch.__version__) < Version('2.4.0'):\n    raise RuntimeError\n",
         4, "2.4.0"),
        # the libraries' helpers
        ("from accelerate.utils import is_torch_version\nif not is_torch_version('>=', '2.3.0'):\n"
         "    raise ImportError\n", 3, "2.3.1"),
        ("from transformers.utils import is_torch_greater_or_equal\nif not is_torch_greater_or_equal('2.6'):\n"
         "    raise ImportError\n", 3, "2.6.0"),
        # a script's main block, and a function (its row says it stops the function)
        ("import sys, torch\nif __name__ == '__main__':\n    if torch.__version__ < '2.2':\n"
         "        sys.exit('torch 2.2')\n", 4, "2.2.0"),
        ("import torch\nfrom packaging.version import Version\n\ndef build_mesh():\n"
         "    if Version(torch.__version__) < Version('2.2'):\n        raise RuntimeError('torch 2.2')\n", 6, "2.2.0"),
    ]

    @pytest.mark.parametrize("source, line, passing", REFUSES)
    def test_a_stop_the_version_decides_is_a_row_naming_the_release_that_passes(self, source, line, passing):
        rows = [(row_line, tip) for row_line, api, tip in _rows(source) if "refuses torch 2.1.0" in tip]
        assert [row_line for row_line, _ in rows] == [line]
        assert f"-v {passing}," in rows[0][1]

    def test_the_row_says_whether_the_import_or_a_call_stops(self):
        at_import = _rows(self.REFUSES[0][0])
        in_function = _rows(self.REFUSES[-1][0])
        assert "importing this module stops the program" in at_import[0][2]
        assert "calling build_mesh() stops there" in in_function[0][2]

    @pytest.mark.parametrize("source", [
        # the release's torch passes
        "import torch\nfrom packaging.version import Version\n"
        "if Version(torch.__version__) < Version('2.0'):\n    raise ImportError\n",
        "import torch\nassert torch.__version__ >= '1.13'\n",
        # something else decides as well
        "import torch\nfrom packaging.version import Version\n"
        "if use_fsdp2 and Version(torch.__version__) < Version('2.4.0'):\n    raise ValueError\n",
        "import torch\nfrom packaging.version import Version\n"
        "if DEVICE_TYPE == 'xpu' and Version(torch.__version__) < Version('2.6.0'):\n    raise RuntimeError\n",
        "import torch\nfrom packaging.version import Version\nif DEVICE_TYPE == 'npu':\n    pass\n"
        "elif Version(torch.__version__) < Version('2.4.0'):\n    raise RuntimeError\n",
        # a try that catches it
        "import torch\nfrom packaging.version import Version\ntry:\n    if Version(torch.__version__) < Version('2.4'):\n"
        "        raise ImportError\n    from torch.nn import RMSNorm\nexcept ImportError:\n    RMSNorm = None\n",
        # not torch's version
        "import transformers\nfrom packaging.version import Version\n"
        "if Version(transformers.__version__) < Version('9.0'):\n    raise ImportError\n",
        "from packaging.version import Version\n__version__ = '0.1'\nif Version(__version__) < Version('1.0'):\n"
        "    raise ImportError\n",
        # a name assigned twice is not read as either value, nor one another function assigns, nor a parameter
        "import torch\nfrom packaging.version import Version\nv = torch.__version__\nv = '9.9'\n"
        "if Version(v) < Version('2.4'):\n    raise ImportError\n",
        "import torch\nfrom packaging.version import Version\n\ndef a():\n    v = torch.__version__\n\n"
        "def b():\n    if Version(v) < Version('2.4'):\n        raise ImportError\n",
        "import torch\nfrom packaging.version import Version\nv = torch.__version__\n\ndef b(v):\n"
        "    if Version(v) < Version('2.4'):\n        raise ImportError\n",
        # a stop without a test of the version
        "import torch\nif not torch.cuda.is_available():\n    raise SystemExit('no GPU')\n",
    ])
    def test_a_stop_the_version_does_not_decide_is_no_row(self, source):
        assert not [row for row in _rows(source) if "refuses torch" in row[2]]

    @pytest.mark.parametrize("version", ["2.4.0", "2.10.0"])
    def test_a_release_whose_torch_passes_has_no_row(self, version):
        assert not [row for row in _rows(self.REFUSES[0][0], version) if "refuses torch" in row[2]]

    def test_no_release_known_passes(self):
        rows = _rows("import torch\nassert torch.__version__ >= '9.0'\n")
        assert "no torch_npu release gpu2npu knows" in rows[0][2]

    def test_check_fails_on_it_and_passes_with_the_release_it_names(self, tmp_path):
        import subprocess
        import sys
        from pathlib import Path
        (tmp_path / "train.py").write_text(self.REFUSES[0][0], encoding="utf-8")
        command = str(Path(sys.executable).parent / "gpu2npu")
        refused = subprocess.run([command, "check", str(tmp_path), "-v", "2.1.0"], capture_output=True, text=True)
        assert refused.returncode == 1 and "NPU933" in refused.stdout
        passed = subprocess.run([command, "check", str(tmp_path), "-v", "2.4.0"], capture_output=True, text=True)
        assert passed.returncode == 0, passed.stdout
