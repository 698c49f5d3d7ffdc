"""Checks of the committed torch_npu API data (src/gpu2npu/data/torch_npu_*.json).

The files are produced by scripts/gen_api_data.py from the torch_npu wheels on
PyPI; `python scripts/gen_api_data.py --check` regenerates them (network) and
compares.  These tests only read the committed files, plus a small offline
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

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "src" / "gpu2npu" / "data"
SCRIPT = ROOT / "scripts" / "gen_api_data.py"
FILES = sorted(DATA_DIR.glob("torch_npu_*.json"))

SCHEMA_KEYS = {
    "torch_version", "torch_npu_version", "wheel", "sha256", "modules",
    "native_functions", "custom_functions", "optimizer_signatures", "yaml_sections",
}
REQUIRED_MODULES = {
    "torch_npu.npu", "torch_npu.npu.amp", "torch_npu.npu.random",
    "torch_npu.npu.memory", "torch_npu.npu.streams", "torch_npu.profiler",
    "torch_npu.distributed", "torch_npu.contrib", "torch_npu.contrib.function",
    "torch_npu.contrib.module", "torch_npu.optim",
}
# Present in every pinned release.
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
    assert {"2.1.0", "2.8.0"} <= versions


def test_files_match_pinned_table():
    pinned = _load_script().PINNED
    by_version = {_load(p)["torch_version"]: _load(p) for p in FILES}
    assert set(by_version) == set(pinned)
    for tv, (release, wheel, sha) in pinned.items():
        rec = by_version[tv]
        assert (rec["torch_npu_version"], rec["wheel"], rec["sha256"]) == (release, wheel, sha)


def test_schema(record):
    path, rec = record
    assert set(rec) == SCHEMA_KEYS
    assert path.name == f"torch_npu_{rec['torch_version']}.json"
    assert re.fullmatch(r"\d+\.\d+\.\d+", rec["torch_version"])
    assert rec["torch_npu_version"].startswith(rec["torch_version"])
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
        assert member.startswith("torch_npu/") and member.endswith(".yaml")
        assert "supported" in sections and "custom" in sections


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
    assert NPU_PRESENT - set(mods["torch_npu.npu"]) == set()
    assert AMP_PRESENT - set(mods["torch_npu.npu.amp"]) == set()
    assert PROFILER_PRESENT - set(mods["torch_npu.profiler"]) == set()
    assert DISTRIBUTED_PRESENT - set(mods["torch_npu.distributed"]) == set()
    assert NATIVE_PRESENT - set(rec["native_functions"]) == set()
    assert CUSTOM_PRESENT - set(rec["custom_functions"]) == set()


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
