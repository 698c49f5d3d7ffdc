"""Checks of the committed torch_npu API data (src/gpu2npu/data/torch_npu_*.json).

The files are produced by scripts/gen_api_data.py from the torch_npu wheels on
PyPI, and for torch 1.11.0 and 2.2.0 (no wheel on PyPI) from release tags of the
Ascend/pytorch sources; `python scripts/gen_api_data.py --check` regenerates them
(network, git clones) and compares.  These tests only read the committed files, plus a small offline
test of the generator's static analysis on a synthetic wheel.

Every name asserted present/absent below was verified in the wheels (static
reading of torch_npu/npu/__init__.py, torch_npu/npu/amp/__init__.py, ...).
"""

import importlib.util
import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from gpu2npu.knowledge import apidata

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "src" / "gpu2npu" / "data"
SCRIPT = ROOT / "scripts" / "gen_api_data.py"
FILES = sorted(DATA_DIR.glob("torch_npu_*.json"))



def _generator_keys(function: str) -> set:
    """The keys of the record the generator's `function` returns, read from its source: what every
    committed file must hold now, so that a file written by an older generator fails here, in CI,
    where the wheels and clones to regenerate it are not at hand."""
    import ast

    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    builder = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function)
    returned = next(node.value for node in ast.walk(builder) if isinstance(node, ast.Return)
                    and isinstance(node.value, ast.Dict))
    return {key.value for key in returned.keys}


SCHEMA_KEYS = _generator_keys("build_record")
# Source-built records name the git tag and commits instead of a wheel.
SOURCE_SCHEMA_KEYS = _generator_keys("build_source_record")
SOURCE_VERSIONS = {"1.11.0", "2.2.0"}
REQUIRED_MODULES = {
    "torch_npu.npu", "torch_npu.npu.amp", "torch_npu.npu.random",
    "torch_npu.npu.memory", "torch_npu.npu.streams", "torch_npu.profiler",
    "torch_npu.distributed", "torch_npu.contrib", "torch_npu.contrib.function",
    "torch_npu.contrib.module", "torch_npu.optim",
}
# Present in every pinned wheel release (the source-built ones lack a few, see below).
NPU_PRESENT = {
    "synchronize", "device_count", "set_device", "is_available", "current_device",
    "empty_cache", "manual_seed", "manual_seed_all", "seed", "initial_seed",
    "get_rng_state", "set_rng_state", "amp", "random", "memory", "streams",
    "Stream", "Event", "stream", "current_stream", "default_stream", "device",
    "device_of", "get_device_name", "get_device_properties",
    "get_device_capability", "is_bf16_supported", "mem_get_info", "utilization",
    "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "memory_stats",
    "memory_summary", "memory_snapshot", "set_per_process_memory_fraction",
    "FloatTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "mstx", "graphs", "NPUGraph", "graph", "make_graphed_callables",
    "set_sync_debug_mode", "is_initialized", "init", "default_generators",
}
# Absent from torch_npu.npu in every pinned release (no such name anywhere in
# torch_npu/npu/; the NVTX replacement is `mstx`, graphs use NPUGraph).
NPU_ABSENT = {
    "nvtx", "cudart", "jiterator", "nccl", "comm", "CUDAGraph",
    "list_gpu_processes", "get_arch_list", "get_gencode_flags", "temperature",
    "power_draw", "clock_rate", "OutOfMemoryError", "is_tf32_supported",
}
# Not yet in the source-built releases (checked in their trees: no torch_npu/npu/graphs.py,
# no reinit_process_group; 1.11 has no BFloat16Tensor and its flash-attention ops are Python
# functions or absent, not yaml custom ops).
NOT_YET = {
    "1.11.0": {"BFloat16Tensor", "NPUGraph", "graph", "graphs", "make_graphed_callables",
               "reinit_process_group", "npu_fusion_attention", "npu_incre_flash_attention",
               "npu_prompt_flash_attention"},
    "2.2.0": {"NPUGraph", "graph", "graphs", "make_graphed_callables", "reinit_process_group"},
}
AMP_PRESENT = {"autocast", "GradScaler", "custom_fwd", "custom_bwd"}
PROFILER_PRESENT = {"profile", "ProfilerActivity", "schedule",
                    "tensorboard_trace_handler", "ProfilerLevel"}
DISTRIBUTED_PRESENT = {"is_hccl_available", "reinit_process_group"}
NATIVE_PRESENT = {"add", "matmul", "addmm", "_pin_memory", "is_pinned", "copy_",
                  "embedding", "nonzero", "_amp_update_scale_",
                  "_amp_foreach_non_finite_check_and_unscale_"}
CUSTOM_PRESENT = {"npu_format_cast", "npu_fusion_attention", "npu_rotary_mul",
                  "npu_rms_norm", "npu_swiglu", "fast_gelu",
                  "npu_incre_flash_attention", "npu_prompt_flash_attention"}


def _version_key(path):
    return tuple(int(x) for x in path.stem.split("_")[-1].split("."))


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _load_script():
    spec = importlib.util.spec_from_file_location("gen_api_data", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module", params=FILES, ids=lambda p: p.stem)
def record(request):
    return request.param, _load(request.param)


def test_minimum_versions_present():
    versions = {p.stem.split("_")[-1] for p in FILES}
    assert {"1.11.0", "2.1.0", "2.2.0", "2.8.0"} <= versions


def test_files_match_pinned_table():
    script = _load_script()
    pinned, sources = script.PINNED, script.SOURCE_RELEASES
    assert set(sources) == SOURCE_VERSIONS and not set(pinned) & set(sources)
    by_version = {_load(p)["torch_version"]: _load(p) for p in FILES}
    assert set(by_version) == set(pinned) | set(sources)
    for tv, (release, wheel, sha) in pinned.items():
        rec = by_version[tv]
        assert (rec["torch_npu_version"], rec["wheel"], rec["sha256"]) == (release, wheel, sha)
    for tv, (ref, commit) in sources.items():
        rec = by_version[tv]
        assert (rec["git_ref"], rec["git_commit"]) == (ref, commit)
        assert ref.endswith(f"-pytorch{tv}")


def test_schema(record):
    path, rec = record
    assert path.name == f"torch_npu_{rec['torch_version']}.json"
    assert re.fullmatch(r"\d+\.\d+\.\d+", rec["torch_version"])
    assert rec["torch_npu_version"].startswith(rec["torch_version"])
    if rec["torch_version"] in SOURCE_VERSIONS:
        assert set(rec) == SOURCE_SCHEMA_KEYS
        assert re.fullmatch(r"[0-9a-f]{40}", rec["git_commit"])
        assert re.fullmatch(r"[0-9a-f]{40}", rec["op_plugin_commit"])
    else:
        assert set(rec) == SCHEMA_KEYS
        assert rec["wheel"].startswith(f"torch_npu-{rec['torch_npu_version']}-")
        assert rec["wheel"].endswith(".whl")
        assert re.fullmatch(r"[0-9a-f]{64}", rec["sha256"])
    assert isinstance(rec["modules"], dict)
    assert REQUIRED_MODULES <= set(rec["modules"])
    assert rec["yaml_sections"], "no npu_native_functions*.yaml recorded"
    signatures = rec["optimizer_signatures"]
    assert "torch_npu.optim.NpuFusedAdamW" in signatures
    assert all(name.startswith("torch_npu.optim.") and params and params[0] == "params"
               for name, params in signatures.items() if not name.endswith("OptimizerBase"))
    for member, sections in rec["yaml_sections"].items():
        assert member.startswith(("torch_npu/", "third_party/op-plugin/")) and member.endswith(".yaml")
        # op-plugin's "official" section is what the build merges into "supported"
        assert {"supported", "official"} & set(sections) and "custom" in sections


def test_canonical_bytes(record):
    """The file is exactly what json.dump(indent=1, sort_keys=True) + '\\n' gives."""
    path, rec = record
    expected = json.dumps(rec, indent=1, sort_keys=True) + "\n"
    assert path.read_text(encoding="utf-8") == expected


def _assert_sorted_unique_strings(values, what):
    assert isinstance(values, list), what
    assert all(isinstance(v, str) and v for v in values), what
    assert values == sorted(set(values)), f"{what} not sorted/unique"


def test_lists_sorted_unique(record):
    _, rec = record
    for mod, names in rec["modules"].items():
        _assert_sorted_unique_strings(names, mod)
        assert not [n for n in names if n.startswith("_")], f"private name in {mod}"
        assert mod == "torch_npu" or mod.startswith("torch_npu.")
    for key in ("native_functions", "custom_functions"):
        _assert_sorted_unique_strings(rec[key], key)
        assert not [n for n in rec[key] if "." in n or "(" in n], f"overload left in {key}"
    for member, sections in rec["yaml_sections"].items():
        _assert_sorted_unique_strings(sections, member)


def test_well_known_names(record):
    _, rec = record
    mods = rec["modules"]
    not_yet = NOT_YET.get(rec["torch_version"], set())
    assert NPU_PRESENT - not_yet - set(mods["torch_npu.npu"]) == set()
    assert AMP_PRESENT - set(mods["torch_npu.npu.amp"]) == set()
    assert PROFILER_PRESENT - set(mods["torch_npu.profiler"]) == set()
    assert DISTRIBUTED_PRESENT - not_yet - set(mods["torch_npu.distributed"]) == set()
    assert NATIVE_PRESENT - set(rec["native_functions"]) == set()
    assert CUSTOM_PRESENT - not_yet - set(rec["custom_functions"]) == set()
    # and what is said to be missing really is
    listed = set(mods["torch_npu.npu"]) | set(mods["torch_npu.distributed"]) | set(rec["custom_functions"])
    assert not_yet & listed == set()


def test_known_absent_names(record):
    _, rec = record
    assert NPU_ABSENT & set(rec["modules"]["torch_npu.npu"]) == set()
    # Helper imports are filtered out (see HELPER_MODULES in the generator).
    assert {"ErrCode", "pta_error"} & set(rec["modules"]["torch_npu.npu"]) == set()


def test_submodules_listed_as_names(record):
    _, rec = record
    npu = set(rec["modules"]["torch_npu.npu"])
    for mod in rec["modules"]:
        parent, _, leaf = mod.rpartition(".")
        if parent == "torch_npu.npu":
            assert leaf in npu, mod


def test_api_grows_monotonically_for_core_names():
    """Names present in 2.1.0's torch_npu.npu.amp stay in later versions."""
    files = sorted(FILES, key=_version_key)
    first = set(_load(files[0])["modules"]["torch_npu.npu.amp"])
    for path in files[1:]:
        assert first <= set(_load(path)["modules"]["torch_npu.npu.amp"]), path.name


# --- offline unit test of the generator's analysis on a synthetic wheel ---

def _fake_wheel():
    files = {
        "torch_npu/__init__.py": "import torch_npu.npu\n",
        "torch_npu/npu/__init__.py": (
            "__all__ = ['synchronize', 'FloatTensor']\n"
            "from typing import Tuple\n"
            "import os\n"
            "from torch_npu.utils._error_code import ErrCode, pta_error\n"
            "from .utils import synchronize, device_count\n"
            "from .random import *\n"
            "from .cfg import *\n"
            "from . import amp\n"
            "try:\n    from ._hidden import extra_name\nexcept ImportError:\n    pass\n"
            "def is_available():\n    def inner(): pass\n    return True\n"
            "class Stream: pass\n"
            "_private = 1\nconfig = 2\n"
        ),
        "torch_npu/npu/utils.py": "__all__ = ['synchronize']\ndef synchronize(): pass\n"
                                  "def device_count(): pass\n",
        "torch_npu/npu/random.py": "__all__ = ['manual_seed']\ndef manual_seed(s): pass\n"
                                   "def not_exported(): pass\n",
        "torch_npu/npu/cfg.py": "import torch\ndef set_option(): pass\ndef _hidden(): pass\n",
        "torch_npu/npu/_hidden.py": "extra_name = 1\n",
        "torch_npu/npu/amp/__init__.py": "__all__ = ['autocast']\n"
                                         "from .autocast_mode import autocast\n",
        "torch_npu/npu/amp/autocast_mode.py": "class autocast: pass\n",
        "torch_npu/utils/_error_code.py": "class ErrCode: pass\ndef pta_error(): pass\n",
        "torch_npu/csrc/aten/npu_native_functions.yaml": (
            "backend: NPU\n"
            "supported:\n  - add.Tensor\n  - func: copy_\n    op_api: True\n  - matmul\n"
            "autograd: []\n"
            "custom:\n  - func: npu_foo.out(Tensor self) -> Tensor\n  - func: npu_bar(Tensor x) -> Tensor\n"
            "symint:\n  - npu_foo\n"
        ),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    buf.seek(0)
    return zipfile.ZipFile(buf)


def test_generator_static_analysis():
    gen = _load_script()
    zf = _fake_wheel()
    src = gen.SourceTree(zf)
    assert gen.modules_to_report(src) == [
        "torch_npu.npu", "torch_npu.npu.amp", "torch_npu.npu.amp.autocast_mode",
        "torch_npu.npu.cfg", "torch_npu.npu.random", "torch_npu.npu.utils",
    ]
    assert src.public_names("torch_npu.npu") == [
        "FloatTensor", "Stream", "amp", "cfg", "config", "device_count",
        "extra_name", "is_available", "manual_seed", "random", "set_option",
        "synchronize", "utils",
    ]
    assert src.public_names("torch_npu.npu.amp") == ["autocast", "autocast_mode"]


def test_generator_yaml():
    pytest.importorskip("yaml")
    gen = _load_script()
    sections, native, custom = gen.read_yaml(_fake_wheel())
    assert sections == {"torch_npu/csrc/aten/npu_native_functions.yaml":
                        ["autograd", "custom", "supported", "symint"]}
    assert native == ["add", "copy_", "matmul"]
    assert custom == ["npu_bar", "npu_foo"]


def test_torch_ops_file_is_reproducible():
    """scripts/gen_torch_ops.py --check regenerates torch_ops.json from the installed torch."""
    pytest.importorskip("torchgen")
    pytest.importorskip("yaml")
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_torch_ops.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the source-built releases (torch 1.11.0 and 2.2.0) ---

@pytest.mark.parametrize("version", sorted(SOURCE_VERSIONS))
def test_source_built_release_loads_with_the_core_api(version):
    from gpu2npu.knowledge import apidata

    assert version in apidata.available_versions()
    api = apidata.load(version)
    assert api.torch_version == version and api.torch_npu_version.startswith(version + ".post")
    for path in (("is_available",), ("set_device",), ("synchronize",), ("device_count",),
                 ("amp", "GradScaler"), ("amp", "autocast"), ("manual_seed",), ("Stream",)):
        assert api.npu_has(path), path
    assert not api.npu_has(("graphs",)) and not api.npu_has(("CUDAGraph",))
    assert len(api.native_functions) > 400 and {"add", "matmul", "copy_"} <= api.native_functions
    assert {"npu_format_cast", "npu_rotary_mul"} <= api.custom_functions
    assert api.has("torch_npu.optim.NpuFusedAdamW") and api.has("torch_npu.npu_format_cast")
    assert api.optimizer_signatures["torch_npu.optim.NpuFusedSGD"][0] == "params"


def test_source_built_1_11_leaves_out_cpu_fallback_and_unsupported_ops():
    """op-plugin's v1r11 yaml lists `_cholesky_helper` under tocpu and `_conj` under unsupported:
    neither has an NPU kernel, so neither is a native function."""
    rec = _load(DATA_DIR / "torch_npu_1.11.0.json")
    assert set(rec["yaml_sections"]["third_party/op-plugin/op_plugin/config/v1r11/op_plugin_functions.yaml"]) \
        == {"official", "custom", "tocpu", "unsupported"}
    assert {"_cholesky_helper", "_conj"} & set(rec["native_functions"]) == set()


@pytest.mark.parametrize("version", sorted(SOURCE_VERSIONS))
def test_cli_migrates_for_source_built_release(tmp_path, version):
    from helpers import FIXTURES, run_cli

    result = run_cli("-i", str(FIXTURES / "single_gpu_loop"), "-o", str(tmp_path), "-v", version)
    assert result.exit_code == 0, result.output
    log = (tmp_path / "single_gpu_loop_msft" / "msFmkTranspltlog.txt").read_text()
    assert f"for PyTorch {version} (torch_npu {version}.post" in log
    assert "change torch.cuda.is_available to torch_npu.npu.is_available" in log


def _git(cwd, *args):
    import subprocess

    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(cwd), *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _git_repo(root, files):
    root.mkdir()
    _git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", "-A")
    return root


def test_generator_source_mode(tmp_path, monkeypatch):
    """A source record is read from git objects: the tag's torch_npu sources and yaml, and the
    op-plugin yaml of the commit its third_party/op-plugin gitlink names."""
    pytest.importorskip("yaml")
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git not installed")
    gen = _load_script()
    plugin = _git_repo(tmp_path / "op-plugin", {
        "op_plugin/config/v2r2/op_plugin_functions.yaml": (
            "official:\n  - func: abs(Tensor self) -> Tensor\n"
            "custom:\n  - func: npu_foo(Tensor x) -> Tensor\n"
            "tocpu:\n  - _cpu_only\nunsupported:\n  - conj\n"),
        "op_plugin/config/v2r1/op_plugin_functions.yaml": "official:\n  - func: wrong_version(Tensor x) -> Tensor\n",
    })
    _git(plugin, "commit", "-qm", "ops")
    plugin_commit = _git(plugin, "rev-parse", "HEAD")
    pytorch = _git_repo(tmp_path / "pytorch", {
        "version.txt": "2.2.0.post9\n",
        "torch_npu/__init__.py": "import torch_npu.npu\n",
        "torch_npu/npu/__init__.py": "__all__ = ['synchronize']\nfrom .utils import synchronize\nfrom . import amp\n",
        "torch_npu/npu/utils.py": "def synchronize(): pass\n",
        "torch_npu/npu/amp/__init__.py": "__all__ = ['GradScaler']\nclass GradScaler: pass\n",
        "torch_npu/csrc/aten/npu_native_functions.yaml": (
            "supported:\n  - add.Tensor\ncustom_autograd:\n  - func: npu_bar(Tensor x) -> Tensor\n"),
    })
    _git(pytorch, "update-index", "--add", "--cacheinfo", f"160000,{plugin_commit},third_party/op-plugin")
    _git(pytorch, "commit", "-qm", "release")
    _git(pytorch, "tag", "v9-pytorch2.2.0")
    commit = _git(pytorch, "rev-parse", "HEAD")
    monkeypatch.setattr(gen, "SOURCE_RELEASES", {"2.2.0": ("v9-pytorch2.2.0", commit)})

    rec = gen.build_source_record("2.2.0", pytorch, plugin)
    assert (rec["torch_npu_version"], rec["git_ref"], rec["git_commit"], rec["op_plugin_commit"]) == \
        ("2.2.0.post9", "v9-pytorch2.2.0", commit, plugin_commit)
    assert rec["modules"]["torch_npu.npu"] == ["amp", "synchronize", "utils"]
    assert rec["modules"]["torch_npu.npu.amp"] == ["GradScaler"]
    assert rec["native_functions"] == ["abs", "add"]
    assert rec["custom_functions"] == ["npu_bar", "npu_foo"]
    assert rec["optimizer_signatures"] == {}
    assert rec["yaml_sections"] == {
        "third_party/op-plugin/op_plugin/config/v2r2/op_plugin_functions.yaml":
            ["custom", "official", "tocpu", "unsupported"],
        "torch_npu/csrc/aten/npu_native_functions.yaml": ["custom_autograd", "supported"],
    }
    # a tag that moved is refused rather than silently read
    monkeypatch.setattr(gen, "SOURCE_RELEASES", {"2.2.0": ("v9-pytorch2.2.0", "0" * 40)})
    with pytest.raises(SystemExit, match="table says"):
        gen.build_source_record("2.2.0", pytorch, plugin)


def test_check_skips_source_versions_without_a_clone(tmp_path, capsys):
    gen = _load_script()
    status = gen.main(["--check", "-v", "1.11.0", "-v", "2.2.0", "--ascend-pytorch-git", str(tmp_path / "none"),
                       "--out-dir", str(DATA_DIR)])
    assert status == 0
    assert "SKIPPED torch 1.11.0, 2.2.0" in capsys.readouterr().err


def test_committed_source_files_regenerate_identically(tmp_path):
    """With the Ascend/pytorch and op-plugin clones present, --check rebuilds the two files."""
    gen = _load_script()
    if gen.missing_clones(Path(gen.DEFAULT_PYTORCH_GIT), Path(gen.DEFAULT_OP_PLUGIN_GIT)):
        pytest.skip("no Ascend/pytorch or op-plugin clone here")
    pytest.importorskip("yaml")
    assert gen.main(["--check", "-v", "1.11.0", "-v", "2.2.0", "--out-dir", str(DATA_DIR)]) == 0


def test_compile_backends_are_torchairs_in_every_release_from_2_x_and_inductor_from_2_6():
    for path in FILES:
        rec = json.loads(path.read_text(encoding="utf-8"))
        backends = rec["compile_backends"]
        if rec["torch_version"] == "1.11.0":  # (torch 1.11 has no torch.compile)
            assert backends == [] and apidata.load("1.11.0").compile_backends == ()
            continue
        version = tuple(int(p) for p in rec["torch_version"].split("."))
        assert "npu" in backends, path.name
        assert ("inductor" in backends) == (version >= (2, 6)), path.name
        assert ("npugraph_ex" in backends) == (version >= (2, 6)), path.name
