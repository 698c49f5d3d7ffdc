"""Calls of torch APIs that the torch of the chosen torch_npu release (-v) does not have yet:
reported from data/torch_history.json (scripts/gen_torch_history.py reads the torch wheels)."""
import json
import sys
from importlib import resources

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.rules import Options

SOURCE = b'''import torch
import torch.distributed as dist
import torch.nn.functional as F


def norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w)


def setup(rank):
    dist.init_process_group("hccl", device_id=rank)
    if hasattr(torch, "accelerator"):
        print(torch.accelerator.current_accelerator())
    ok = hasattr(torch, "xpu") and torch.xpu.is_available()
    try:
        from torch.nn.attention import sdpa_kernel
    except ImportError:
        sdpa_kernel = None
    print(torch.accelerator.device_count())
'''


def newer_rows(version):
    result = migrate_source(SOURCE, "train.py", Options(api=apidata.load(version)))
    return [(f.start_line, f.api) for f in result.findings
            if f.report == Report.UNSUPPORTED and ("does not have it" in f.tip or "takes no" in f.tip)]


def test_what_the_chosen_torch_lacks_is_reported_where_nothing_guards_it():
    assert newer_rows("2.1.0") == [(7, "torch.nn.functional.rms_norm"),
                                   (11, "torch.distributed.init_process_group(device_id=)"),
                                   (19, "torch.accelerator.device_count")]


@pytest.mark.parametrize("version, expected", [
    ("2.3.1", [(7, "torch.nn.functional.rms_norm"), (19, "torch.accelerator.device_count")]),
    ("2.4.0", [(19, "torch.accelerator.device_count")]),
    ("2.6.0", []),
])
def test_a_release_that_has_them_reports_nothing(version, expected):
    assert newer_rows(version) == expected


@pytest.mark.parametrize("version, expected", [("2.1.0", "torch 2.5.1 has"), ("2.3.1", "torch 2.5.1 has"), ("2.6.0", None)])
def test_a_name_is_dated_by_its_own_release_not_its_modules(version, expected):
    # torch.nn.attention came with torch 2.3, its flex_attention with 2.5
    source = b"from torch.nn.attention.flex_attention import create_block_mask\nmask = create_block_mask(f, 1, 1, 8, 8)\n"
    result = migrate_source(source, "a.py", Options(api=apidata.load(version)))
    tips = [f.tip for f in result.findings if "does not have it" in f.tip]
    assert (tips == []) if expected is None else (tips and all(expected in tip for tip in tips)), tips


def test_a_test_of_the_api_itself_is_no_guard():
    source = b"import torch\nif torch.accelerator.is_available():\n    torch.accelerator.set_device_index(0)\n"
    result = migrate_source(source, "a.py", Options(api=apidata.load("2.1.0")))
    assert [f.start_line for f in result.findings if "does not have it" in f.tip] == [2, 3]


class TestATestOfTheReleaseThatReturnsFirst:
    """`if is_torch_version("<=", "2.6"): return False` at the top of a function: the rest of it
    runs only on a torch that has what it calls (accelerate's is_xpu_available)."""

    @staticmethod
    def rows(source: str):
        result = migrate_source(source.encode(), "a.py", Options(api=apidata.load("2.1.0")))
        return [f.start_line for f in result.findings if "does not have it" in f.tip]

    @pytest.mark.parametrize("test, leaves", [
        ('is_torch_version("<=", "2.6")', "return False"),
        ('version.parse(torch.__version__) < version.parse("2.4")', "raise RuntimeError('torch 2.4 or newer')"),
        ('not hasattr(torch, "xpu")', "return None"),
        ("torch_version.major == 2 and torch_version.minor < 6", "return False"),
        # where the test is false, every part of an `or` is
        ('not checkpointing_ready() or not is_torch_greater_or_equal("2.9")', "raise OSError('torch 2.9')"),
    ])
    def test_what_follows_has_no_row(self, test, leaves):
        source = f"import torch\n\n\ndef xpu_count():\n    if {test}:\n        {leaves}\n    return torch.xpu.device_count()\n"
        assert self.rows(source) == []

    @pytest.mark.parametrize("source", [
        # another function, the same test further down, a test of something else
        "import torch\n\n\ndef a():\n    if is_torch_version('<=', '2.6'):\n        return False\n\n\n"
        "def b():\n    return torch.xpu.device_count()\n",
        "import torch\n\n\ndef a():\n    n = torch.xpu.device_count()\n    if is_torch_version('<=', '2.6'):\n"
        "        return 0\n    return n\n",
        "import torch\n\n\ndef a(x):\n    if x is None:\n        return 0\n    return torch.xpu.device_count()\n",
    ])
    def test_what_it_does_not_guard_keeps_its_row(self, source):
        assert len(self.rows(source)) == 1

    @pytest.mark.parametrize("flag", ["is_torch_version('>=', '2.6')",
                                      "dist.is_available() and is_torch_version('>=', '2.6')"])
    def test_a_flag_holding_the_test_guards_alike(self, flag):
        source = (f"import torch\n\n\ndef xpu_count():\n    new_enough = {flag}\n"
                  "    if not new_enough:\n        return 0\n    return torch.xpu.device_count()\n")
        assert self.rows(source) == []

    @pytest.mark.parametrize("test", [
        "not is_torch_available()", "load_in_8bit and not is_bnb_available()", "x is None",
        # an `and` that is false says nothing of its version part; torch.version.hip is the build's
        'fsdp_size > 1 and not is_torch_greater_or_equal("2.8")', "not ready or torch.version.hip is not None",
        # hasattr of something other than torch's modules: an extension's operator, an object
        'not hasattr(torch.ops._C, "fused_norm")', 'not hasattr(self, "weight")',
    ])
    def test_a_test_of_something_else_that_returns_first_guards_nothing(self, test):
        # a package's presence is no torch release: the rest runs on any torch
        source = f"import torch\n\n\ndef xpu_count():\n    if {test}:\n        return 0\n    return torch.xpu.device_count()\n"
        assert self.rows(source) == [7]


def test_the_history_covers_the_torch_of_every_release_with_api_data():
    history = json.loads(resources.files("gpu2npu.data").joinpath("torch_history.json").read_text())
    assert history["releases"] == [apidata.load(v).torch_version for v in apidata.available_versions()]
    # facts that the torch release notes state
    assert history["names"]["torch.accelerator"] == "2.6.0"
    assert history["names"]["torch.nn.functional.rms_norm"] == "2.4.0"
    assert history["keywords"]["torch.distributed.init_process_group"]["device_id"] == "2.3.1"


class TestNewerDtypes:
    """The float8 and float4 dtypes came with later torch releases; they are read, not called."""

    SOURCE = (b"import torch\nFP8 = torch.float8_e4m3fn\nSCALE = torch.float8_e8m0fnu\n\n\n"
              b"def cast(x):\n    return x.to(torch.float8_e4m3fnuz)\n")

    def rows(self, source, version):
        result = migrate_source(source, "quant.py", Options(api=apidata.load(version)))
        return [(f.start_line, f.api, f.rule) for f in result.findings if "has no such dtype" in f.tip]

    def test_a_dtype_the_torch_lacks_is_reported_where_it_is_read(self):
        assert self.rows(self.SOURCE, "2.1.0") == [(3, "torch.float8_e8m0fnu", "NPU903"),
                                                   (7, "torch.float8_e4m3fnuz", "NPU903")]
        assert self.rows(self.SOURCE, "1.11.0") == [(2, "torch.float8_e4m3fn", "NPU903"),
                                                    (3, "torch.float8_e8m0fnu", "NPU903"),
                                                    (7, "torch.float8_e4m3fnuz", "NPU903")]

    def test_a_release_whose_torch_has_them_reports_nothing(self):
        assert self.rows(self.SOURCE, "2.6.0") == [(3, "torch.float8_e8m0fnu", "NPU903")]
        assert self.rows(self.SOURCE, "2.9.0") == []

    def test_a_dtype_read_under_a_test_for_it_is_no_row(self):
        source = (b"import torch\nif hasattr(torch, 'float8_e8m0fnu'):\n    SCALE = torch.float8_e8m0fnu\n"
                  b"OTHER = getattr(torch, 'float4_e2m1fn_x2', None)\n")
        assert self.rows(source, "2.1.0") == []

    def test_a_name_of_another_module_is_no_torch_dtype(self):
        source = b"import torch\nimport ml_dtypes\nF8 = ml_dtypes.float8_e8m0fnu\n"
        assert self.rows(source, "2.1.0") == []

    def test_the_history_dates_them_by_the_wheels(self):
        names = json.loads(resources.files("gpu2npu.data").joinpath("torch_history.json").read_text())["names"]
        # (facts of the torch release notes; 2.7.0 is not among the releases listed, 2.7.1 is)
        assert names["torch.float8_e4m3fn"] == names["torch.float8_e5m2"] == "2.1.0"
        assert names["torch.float8_e4m3fnuz"] == "2.2.0"
        assert names["torch.float8_e8m0fnu"] == "2.7.1"
        assert names["torch.float4_e2m1fn_x2"] == "2.8.0"


def _generator():
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_torch_history.py"
    spec = importlib.util.spec_from_file_location("gen_torch_history", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(folder, version, files):
    import zipfile

    with zipfile.ZipFile(folder / f"torch-{version}-cp311-cp311-manylinux_2_28_aarch64.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


def test_the_generator_dates_names_and_dtypes_from_wheels_in_the_committed_shape(tmp_path, monkeypatch):
    """scripts/gen_torch_history.py on three made-up wheels (the real ones are 2.7 GB): what it
    writes has the committed file's shape, and a dtype counts from the release whose stub or
    c10 header has it (2.1.0's stub lacks its float8 dtypes; its header has them)."""
    init = "def zeros(*size, out=None):\n    pass\n"
    header = "#define FORALL(_) \\\n  _(at::Float8_e5m2, Float8_e5m2) \\\n  _(c10::Float8_e4m3fn, Float8_e4m3fn)\n"
    _wheel(tmp_path, "1.11.0", {"torch/__init__.py": init, "torch/_C/__init__.pyi": "float32: dtype = ...\n"})
    _wheel(tmp_path, "2.1.0", {"torch/__init__.py": init + "def compile(model, *, mode=None):\n    pass\n",
                               "torch/_C/__init__.pyi": "float32: dtype = ...\ncomplex32: dtype = ...\n",
                               "torch/include/c10/core/ScalarType.h": header})
    _wheel(tmp_path, "2.7.1", {"torch/__init__.py": "def zeros(*size, out=None, device=None):\n    pass\n"
                                                    "def compile(model, *, mode=None):\n    pass\n",
                               "torch/_C/__init__.pyi": "float32: dtype = ...\ncomplex32: dtype = ...\n"
                                                        "float8_e4m3fn: dtype = ...\nfloat8_e5m2: dtype = ...\n"
                                                        "float8_e8m0fnu: dtype = ...\n"})
    generator = _generator()
    monkeypatch.setattr(generator, "DATA", tmp_path / "torch_history.json")
    monkeypatch.setattr(sys, "argv", ["gen_torch_history.py", str(tmp_path)])
    assert generator.main() == 0
    made = json.loads((tmp_path / "torch_history.json").read_text())
    committed = json.loads(resources.files("gpu2npu.data").joinpath("torch_history.json").read_text())
    assert set(made) == set(committed) and made["modules"] == committed["modules"]
    assert made["releases"] == ["1.11.0", "2.1.0", "2.7.1"]
    assert made["names"] == {"torch.compile": "2.1.0", "torch.float8_e4m3fn": "2.1.0", "torch.float8_e5m2": "2.1.0",
                             "torch.float8_e8m0fnu": "2.7.1"}  # (older dtypes are not tracked: complex32)
    assert made["keywords"] == {"torch.zeros": {"device": "2.7.1"}}


def test_the_generator_reads_a_function_bound_from_c_in_its_stub(tmp_path, monkeypatch):
    """`scaled_dot_product_attention = _add_docstr(torch._C._nn.scaled_dot_product_attention, ...)`:
    its parameters are those torch/_C/_nn.pyi declares (of every overload), dated from the first
    release that binds it, though an older release has no such function."""
    functional = ("import torch\nfrom torch._C import _add_docstr\n\n"
                  "scaled_dot_product_attention = _add_docstr(torch._C._nn.scaled_dot_product_attention, 'doc')\n")
    stub = ("def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False{}) -> Tensor: ...\n"
            "@overload\ndef pad(input, pad) -> Tensor: ...\n")
    _wheel(tmp_path, "1.11.0", {"torch/__init__.py": "", "torch/nn/__init__.py": "", "torch/nn/functional.py": "x = 1\n"})
    for version, extra in (("2.1.0", ", scale=None"), ("2.5.1", ", scale=None, enable_gqa=False"),
                           ("2.7.1", ", scale=None, enable_gqa=False")):
        _wheel(tmp_path, version, {"torch/__init__.py": "", "torch/nn/__init__.py": "", "torch/nn/functional.py": functional,
                                   "torch/_C/_nn.pyi": stub.format(extra)})
    generator = _generator()
    monkeypatch.setattr(generator, "DATA", tmp_path / "torch_history.json")
    monkeypatch.setattr(sys, "argv", ["gen_torch_history.py", str(tmp_path)])
    assert generator.main() == 0
    made = json.loads((tmp_path / "torch_history.json").read_text())
    assert made["keywords"] == {"torch.nn.functional.scaled_dot_product_attention": {"enable_gqa": "2.5.1"}}
    assert made["names"]["torch.nn.functional.scaled_dot_product_attention"] == "2.1.0"


@pytest.mark.parametrize("version, rows", [("2.1.0", 1), ("2.5.1", 0)])
def test_a_keyword_of_a_function_bound_from_c_that_the_release_lacks_is_reported(version, rows):
    # nanochat's attention: SDPA takes enable_gqa from torch 2.5; before, the call raises TypeError
    from gpu2npu.migration.pipeline import migrate_source
    from gpu2npu.modes import rules_for
    from gpu2npu.rules import Options
    options = Options(api=apidata.load(version))
    source = ("import torch.nn.functional as F\n\n\ndef attend(q, k, v):\n"
              "    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)\n")
    result = migrate_source(source.encode(), "m.py", options, rules_for(options))
    found = [f for f in result.findings if f.api == "torch.nn.functional.scaled_dot_product_attention(enable_gqa=)"]
    assert len(found) == rows and all(f.rule == "NPU903" and "TypeError" in f.tip for f in found)


def test_the_generator_dates_the_settings_of_torchs_configuration_modules(tmp_path, monkeypatch):
    """A configuration module's settings are its module-level assignments (in its `if`/`try`
    blocks too) and its classes' (`triton.cudagraphs`), dated from the module's first release: a
    release before it has no such module, and what its first release declares is not listed."""
    first = "import os\nmax_autotune = False\nclass triton:\n    cudagraphs = False\n"
    later = first + "fx_graph_cache = os.environ.get('CACHE') == '1'\nif True:\n    cpp_wrapper: bool = False\n" \
                    "class triton:\n    cudagraphs = False\n    unique_kernel_names = True\n"
    _wheel(tmp_path, "1.11.0", {"torch/__init__.py": ""})
    _wheel(tmp_path, "2.1.0", {"torch/__init__.py": "", "torch/_inductor/config.py": first})
    _wheel(tmp_path, "2.2.0", {"torch/__init__.py": "", "torch/_inductor/config.py": later,
                               "torch/_dynamo/config.py": "cache_size_limit = 8\n"})
    generator = _generator()
    monkeypatch.setattr(generator, "DATA", tmp_path / "torch_history.json")
    monkeypatch.setattr(sys, "argv", ["gen_torch_history.py", str(tmp_path)])
    assert generator.main() == 0
    made = json.loads((tmp_path / "torch_history.json").read_text())
    assert made["settings"] == {"torch._inductor.config.fx_graph_cache": "2.2.0",
                                "torch._inductor.config.cpp_wrapper": "2.2.0",
                                "torch._inductor.config.triton.unique_kernel_names": "2.2.0"}


class TestASettingTheReleasesTorchDoesNotDeclare:
    """torch's configuration modules (torch._inductor.config, torch._dynamo.config) refuse a
    setting they do not declare: gpt-fast's module-level `torch._inductor.config.fx_graph_cache =
    True` raises AttributeError at start under torch 2.1 (the setting came with 2.2)."""

    @staticmethod
    def _rows(source, version="2.1.0"):
        result = migrate_source(source.encode(), "generate.py", Options(api=apidata.load(version)))
        return [(f.start_line, f.api, f.rule) for f in result.findings
                if f.report == Report.UNSUPPORTED and f.rule != "NPU905"]  # (torch.compile's own row)

    @pytest.mark.parametrize("source, line, setting", [
        ("import torch\ntorch._inductor.config.coordinate_descent_tuning = True\n"
         "torch._inductor.config.fx_graph_cache = True\n", 3, "torch._inductor.config.fx_graph_cache"),
        ("import torch._inductor.config as config\nconfig.fx_graph_cache = True\n", 2,
         "torch._inductor.config.fx_graph_cache"),
        ("import torch\nimport torch._dynamo.config\ntorch._dynamo.config.cache_size_limit = 64\n"
         "torch._dynamo.config.recompile_limit = 64\n", 4, "torch._dynamo.config.recompile_limit"),
    ])
    def test_is_reported_where_it_is_set(self, source, line, setting):
        assert self._rows(source) == [(line, setting, "NPU903")]

    @pytest.mark.parametrize("source, line, setting, raised", [
        # set by name: the module's patch (keywords, a dict, a name and a value), torch.compile's options
        ("import torch\nwith torch._inductor.config.patch(fx_graph_cache=True, max_autotune=True):\n    pass\n",
         2, "torch._inductor.config.fx_graph_cache", "KeyError"),
        ("import torch._inductor.config as inductor_config\n\n\n@inductor_config.patch({'fx_graph_cache': True})\n"
         "def run():\n    pass\n", 4, "torch._inductor.config.fx_graph_cache", "KeyError"),
        ("import torch\nwith torch._dynamo.config.patch('recompile_limit', 64):\n    pass\n", 2,
         "torch._dynamo.config.recompile_limit", "KeyError"),
        ("import torch\nmodel = torch.compile(model, options={'triton.cudagraphs': True, 'fx_graph_cache': True})\n",
         2, "torch._inductor.config.fx_graph_cache", "RuntimeError"),
    ])
    def test_is_reported_where_it_is_set_by_name(self, source, line, setting, raised):
        result = migrate_source(source.encode(), "generate.py", Options(api=apidata.load("2.1.0")))
        rows = [f for f in result.findings if f.rule == "NPU903"]
        assert [(f.start_line, f.api) for f in rows] == [(line, setting)]
        assert raised in rows[0].tip
        # (the patch itself is device-neutral settings: a note, no unknown_api row)
        assert not [f for f in result.findings if f.report == Report.UNKNOWN]

    @pytest.mark.parametrize("source", [
        "import torch\ntorch._inductor.config.fx_graph_cache = True\n",
        "import torch\nwith torch._inductor.config.patch(fx_graph_cache=True):\n    pass\n",
        "import torch\nmodel = torch.compile(model, options={'fx_graph_cache': True})\n",
    ])
    def test_a_release_whose_torch_declares_it_reports_nothing(self, source):
        assert self._rows(source, "2.2.0") == []

    @pytest.mark.parametrize("source", [
        # asked for first, or the caller's own object named like the module
        'import torch\nif hasattr(torch._inductor.config, "fx_graph_cache"):\n    torch._inductor.config.fx_graph_cache = True\n',
        "import torch._inductor.config as config\n\n\ndef build(config):\n    config.fx_graph_cache = True\n",
        # declared by 2.1's torch
        "import torch\ntorch._inductor.config.coordinate_descent_tuning = True\ntorch._dynamo.config.cache_size_limit = 8\n",
        "import torch\nwith torch._inductor.config.patch(max_autotune=True):\n    pass\n",
        "import torch\nmodel = torch.compile(model, options={'triton.cudagraphs': True, 'max-autotune': True})\n",
    ])
    def test_what_the_release_declares_or_a_guard_asks_for_has_no_row(self, source):
        assert self._rows(source) == []
