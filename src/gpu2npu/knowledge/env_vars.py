"""CUDA and NCCL environment variables and their Ascend counterparts: one table, read by the rule
for Python code (NPU107) and by the launch-script rules (NPU504, NPU590).

A variable is renamed only where the Ascend one takes the value the code gives it: the switches
take 0 or 1 on both sides, torch_npu's allocator takes a subset of the CUDA allocator's options.
Anything else is left as written and reported with the Ascend way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, Optional

# Options of PYTORCH_NPU_ALLOC_CONF (torch_npu's caching allocator), "key:value" separated by commas.
NPU_ALLOCATOR_OPTIONS = frozenset({"max_split_size_mb", "garbage_collection_threshold", "expandable_segments"})


def allocator_options_supported(value: str) -> bool:
    options = [part.strip() for part in value.split(",") if part.strip()]
    return bool(options) and all(option.split(":", 1)[0].strip() in NPU_ALLOCATOR_OPTIONS and ":" in option
                                 for option in options)


def is_switch(value: str) -> bool:
    return value.strip() in ("0", "1")


def any_value(value: str) -> bool:
    return True


@dataclass(frozen=True)
class Counterpart:
    name: str
    accepts: Callable[[str], bool]  # whether the Ascend variable takes this value the same way
    tip: str  # why, and what to do when the value does not carry over


_ALLOCATOR = Counterpart(
    "PYTORCH_NPU_ALLOC_CONF", allocator_options_supported,
    "torch_npu's caching allocator reads PYTORCH_NPU_ALLOC_CONF, which takes max_split_size_mb, "
    "garbage_collection_threshold and expandable_segments (not backend:cudaMallocAsync, roundup_power2_divisions, "
    "pinned_use_cuda_host_register)")
_ASYNC_ERRORS = Counterpart(
    "HCCL_ASYNC_ERROR_HANDLING", is_switch,
    "torch_npu reads HCCL_ASYNC_ERROR_HANDLING: 0 (off) or 1 (tear the process down on a failed collective) up "
    "to its 2.5 releases, which refuse any other value at init_process_group; from 2.6 on also NCCL's modes 2 and "
    "3: rename it by hand where the release you install takes this value")
_BLOCKING_WAIT = Counterpart("HCCL_BLOCKING_WAIT", is_switch,
                             "torch_npu reads HCCL_BLOCKING_WAIT (0 or 1)")
RENAMED: Dict[str, Counterpart] = {
    "PYTORCH_CUDA_ALLOC_CONF": _ALLOCATOR,
    "PYTORCH_ALLOC_CONF": _ALLOCATOR,
    "CUDA_LAUNCH_BLOCKING": Counterpart(
        "ASCEND_LAUNCH_BLOCKING", is_switch,
        "ASCEND_LAUNCH_BLOCKING=1 makes NPU operators run synchronously (0 or 1)"),
    "NCCL_ASYNC_ERROR_HANDLING": _ASYNC_ERRORS,
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": _ASYNC_ERRORS,
    "NCCL_BLOCKING_WAIT": _BLOCKING_WAIT,
    "TORCH_NCCL_BLOCKING_WAIT": _BLOCKING_WAIT,
    # same values: interface name prefixes, `=eth0` for an exact name, `^` to exclude
    "NCCL_SOCKET_IFNAME": Counterpart("HCCL_SOCKET_IFNAME", any_value, "HCCL reads HCCL_SOCKET_IFNAME"),
}

_LOG_TIP = ("no HCCL equivalent: Ascend logging is set with ASCEND_GLOBAL_LOG_LEVEL (0 debug, 1 info, "
            "2 warning, 3 error) and ASCEND_SLOG_PRINT_TO_STDOUT=1")
# Variables without a counterpart that takes the same values: what to do instead.
REPORTED: Dict[str, str] = {
    "NCCL_DEBUG": _LOG_TIP,
    "NCCL_DEBUG_SUBSYS": _LOG_TIP,
    "NCCL_DEBUG_FILE": _LOG_TIP,
    "CUBLAS_WORKSPACE_CONFIG": "cuBLAS only: for deterministic results on the NPU use "
                               "torch.use_deterministic_algorithms(True) and HCCL_DETERMINISTIC=true",
    # pinned for reproducible reductions, mostly: HCCL's switch for that is one variable
    "NCCL_ALGO": "NCCL algorithm choice, no effect on Ascend: for reproducible collectives set HCCL_DETERMINISTIC=true "
                 "(deterministic reduction order)",
    "NCCL_PROTO": "NCCL protocol choice, no effect on Ascend: for reproducible collectives set HCCL_DETERMINISTIC=true "
                  "(deterministic reduction order)",
    "CUDA_DEVICE_MAX_CONNECTIONS": "CUDA stream setting: no effect on Ascend",
    "CUDA_DEVICE_ORDER": "no effect on Ascend: NPUs are numbered by their physical ids (npu-smi info)",
    "CUDA_HOME": "no CUDA toolkit on Ascend machines",
    "CUDA_PATH": "no CUDA toolkit on Ascend machines",
}
# Of those, the settings that only have no effect on Ascend (the others' rows say what to do instead:
# Ascend's logging, its deterministic switch, the toolkit that is not there).
NO_EFFECT = frozenset({"CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_DEVICE_ORDER"})
NCCL_TIP = "NCCL setting: no effect on Ascend; HCCL has its own HCCL_* environment variables (see the CANN documentation)"
CUDA_TIP = "CUDA setting: no effect on Ascend"

# A CUDA or NCCL variable name (CUDA_VISIBLE_DEVICES has a rule of its own).
NAME = re.compile(r"^(?:TORCH_NCCL_|NCCL_|PYTORCH_CUDA_|CUDA_|CUBLAS_)[A-Z0-9_]+$|^PYTORCH_ALLOC_CONF$")


def is_cuda_variable(name: str) -> bool:
    return bool(NAME.match(name)) and name != "CUDA_VISIBLE_DEVICES"


# The CUDA_* variables that CUDA's runtime, driver, MPS and toolkit read (NVIDIA's "CUDA
# Environment Variables" appendix; the toolkit's location; the CUDA images' version), by family.
_READ_BY_CUDA = re.compile(
    r"^CUDA_(?:CACHE_|MPS_|MODULE_|FORCE_|DISABLE_|DEVICE_|ENABLE_|COREDUMP_|MANAGED_|GRAPHS_|LOG_|PATH_V\d"
    r"|AUTO_BOOST$|SCALE_LAUNCH_QUEUES$|LAUNCH_BLOCKING$|HOME$|PATH$|ROOT$|TOOLKIT_ROOT_DIR$|VERSION$)")


def read_by_cuda(name: str) -> bool:
    """Whether CUDA or its tools read the variable `name` (a Makefile's own CUDA_OUTPUT_FILE is a
    name of its own: no setting of CUDA's)."""
    return name in RENAMED or name in REPORTED or not name.startswith("CUDA_") or bool(_READ_BY_CUDA.match(name))


def kept_for_project(name: str, reads: Dict[str, str]) -> Optional[str]:
    """The note of a setting without an Ascend counterpart, which has no effect there, where a file of
    the project reads it (`reads`: Options.environment_reads as a mapping), or None.  Not for one
    whose row says what to do instead (REPORTED: NCCL_DEBUG's Ascend logging, CUDA_HOME's toolkit)."""
    advised = name in REPORTED and name not in NO_EFFECT
    where = reads.get(name) if name not in RENAMED and not advised else None
    if where is None:
        return None
    return (f"{tip_for(name)}; but the project's own code reads it ({where}), which expects what is set here: "
            "left as written, nothing to change")


def tip_for(name: str, value: Optional[str] = None) -> str:
    counterpart = RENAMED.get(name)
    if counterpart is not None:
        shown = f" ({name}={value!r} does not carry over)" if value is not None else ""
        return counterpart.tip + shown
    if name in REPORTED:
        return REPORTED[name]
    return NCCL_TIP if "NCCL_" in name else CUDA_TIP


_SCRIPT_VALUE = re.compile(r"""(?:=|:[ \t]+)(?:"([^"$`]*)"|'([^']*)'|([^\s;'"$`]+))""")


def script_edit(name: str, line_code: str, end: int):
    """For a variable named at line_code[:end] in a launch script (`NAME=VALUE`, `export NAME=VALUE`,
    YAML's `NAME: VALUE`): (new name, None) when it is renamed, (None, tip) when it is reported."""
    counterpart = RENAMED.get(name)
    if counterpart is None:
        return None, tip_for(name)
    match = _SCRIPT_VALUE.match(line_code, end)
    value = next((group for group in match.groups() if group is not None), None) if match else None
    if value is None:
        if counterpart.accepts is any_value:
            return counterpart.name, None
        return None, counterpart.tip + " (the value is not visible here: check it)"
    if counterpart.accepts(value):
        return counterpart.name, None
    return None, tip_for(name, value)
