"""Implementation of the ``torch_npu.npu`` functions on a CPU-only machine.

Everything here is deliberately trivial: the "NPU" is the CPU.  The NPU random
generator is a separate CPU generator that nothing draws from, exactly like
``torch.cuda.manual_seed`` on a machine without CUDA: seeding the NPU never
changes the numbers that CPU (= stand-in NPU) tensors get.
"""

import os
import time

import torch

from ._device import npu_index

_state = {"device": 0}
_npu_gen = torch._C.Generator()  # CPU generator standing for the NPU's; never used by ops
_rng_all = {}


# -- device management ------------------------------------------------------
def is_available():
    return True


def is_initialized():
    return True


def init():
    return None


def device_count():
    try:
        return int(os.environ.get("STANDIN_NPU_COUNT", "1"))
    except ValueError:
        return 1


def current_device():
    return _state["device"]


def _check_index(idx):
    n = device_count()
    if not 0 <= idx < n:
        raise RuntimeError(
            f"Invalid device ID {idx}: the stand-in has {n} NPU(s) "
            "(set STANDIN_NPU_COUNT to pretend more)"
        )
    return idx


def set_device(device):
    idx = npu_index(device, default=None)
    if idx is None:  # "npu" without an index: keep the current device
        return
    _state["device"] = _check_index(idx)


class device:
    """Context manager that changes the current NPU (``torch.npu.device(1)``)."""

    def __init__(self, device):
        self.idx = npu_index(device, default=-1) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _state["device"]
        if self.idx is not None and self.idx >= 0:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        _state["device"] = self.prev_idx
        return False


class device_of(device):
    def __init__(self, obj):
        super().__init__(current_device() if isinstance(obj, torch.Tensor) else -1)


def synchronize(device=None):
    return None


# torch_npu names the device parameter of these device_name (of can_device_access_peer device_id and
# peer_device_id): a call that gives CUDA's keyword fails here as on the NPU.
def get_device_name(device_name=None):
    return "Ascend910B (CPU stand-in)"


class _DeviceProperties:
    """torch_npu's _NPUDeviceProperties: name and total_memory; no CUDA compute capability
    (major, minor) and no multiprocessor count."""

    def __init__(self):
        self.name = get_device_name()
        self.total_memory = 64 * 1024**3

    def __repr__(self):
        return (f"_NPUDeviceProperties(name='{self.name}', "
                f"total_memory={self.total_memory // 1024**2}MB)")


def get_device_properties(device_name=None):
    return _DeviceProperties()


def get_device_capability(device=None):
    return None


def is_bf16_supported(including_emulation: bool = False):  # (taken from torch_npu 2.9.0 on, and ignored)
    return True


def utilization(device=None):
    return 0


def ipc_collect():
    return None


def set_compile_mode(jit_compile=False):
    return None


def is_jit_compile_false():
    return True


def set_option(option):
    return None


# -- memory: the stand-in owns no device memory ---------------------------------
def empty_cache():
    return None


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None):
    return None


def reset_max_memory_allocated(device=None):
    return None


def reset_max_memory_cached(device=None):
    return None


def reset_accumulated_memory_stats(device=None):
    return None


def memory_stats(device=None):
    return {}


def memory_summary(device=None, abbreviated=False):
    return "NPU stand-in: no device memory is used (tensors live on the CPU).\n"


def mem_get_info(device=None):
    total = get_device_properties().total_memory
    return (total, total)


_memory_fraction = {}  # device index -> the fraction set (torch_npu: 1.0 until set)


def set_per_process_memory_fraction(fraction, device=None):
    # as torch.cuda's: a float in [0, 1], else ValueError; it caps what the caching allocator may take
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _memory_fraction[_index_of(device)] = fraction


def get_per_process_memory_fraction(device=None):
    """torch_npu 2.8 and later: the fraction set_per_process_memory_fraction set (1.0 if none)."""
    return _memory_fraction.get(_index_of(device), 1.0)


def _index_of(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return device.index if device.index is not None else current_device()


# -- random numbers ---------------------------------------------------------------
def manual_seed(seed):
    _npu_gen.manual_seed(int(seed))


def manual_seed_all(seed):
    _npu_gen.manual_seed(int(seed))


def seed():
    _npu_gen.seed()


def seed_all():
    _npu_gen.seed()


def initial_seed():
    return _npu_gen.initial_seed()


def get_rng_state(device="npu"):
    return _npu_gen.get_state()


def set_rng_state(new_state, device="npu"):
    _npu_gen.set_state(new_state)


def get_rng_state_all():
    return [get_rng_state() for _ in range(device_count())]


def set_rng_state_all(new_states):
    for s in new_states:
        set_rng_state(s)


# -- streams and events: everything is synchronous --------------------------------
class Stream:
    def __init__(self, device=None, priority=0, **kwargs):
        self.device = torch.device("npu", current_device() if device is None
                                   else npu_index(device, current_device()))
        self.priority = priority

    def wait_stream(self, stream):
        return None

    def wait_event(self, event):
        return None

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self):
        return True

    def synchronize(self):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<torch_npu.npu.Stream device={self.device} (CPU stand-in)>"


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def wait(self, stream=None):
        return None

    def query(self):
        return True

    def synchronize(self):
        return None

    def elapsed_time(self, end_event):
        if self._t is None or end_event._t is None:
            raise RuntimeError("Both events must be recorded before elapsed_time")
        return (end_event._t - self._t) * 1000.0


_default_stream = {}
_current_stream = {}


def default_stream(device=None):
    idx = current_device() if device is None else npu_index(device, current_device())
    return _default_stream.setdefault(idx, Stream(idx))


def current_stream(device=None):
    idx = current_device() if device is None else npu_index(device, current_device())
    return _current_stream.get(idx) or default_stream(idx)


def set_stream(stream):
    if stream is not None:
        _current_stream[stream.device.index] = stream


class StreamContext:
    def __init__(self, stream):
        self.stream = stream
        self.prev = None

    def __enter__(self):
        if self.stream is not None:
            self.prev = current_stream(self.stream.device)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self.prev)
        return False


def stream(stream):
    return StreamContext(stream)


# -- autocast state queries -------------------------------------------------------
def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16]


if hasattr(torch, "get_autocast_dtype"):
    def is_autocast_enabled():
        return torch.is_autocast_enabled("cpu")

    def set_autocast_enabled(enabled):
        torch.set_autocast_enabled("cpu", enabled)

    def get_autocast_dtype():
        return torch.get_autocast_dtype("cpu")

    def set_autocast_dtype(dtype):
        torch.set_autocast_dtype("cpu", dtype)
else:
    # torch before 2.4 has no device-taking autocast state functions, only the CPU's own
    def is_autocast_enabled():
        return torch.is_autocast_cpu_enabled()

    def set_autocast_enabled(enabled):
        torch.set_autocast_cpu_enabled(enabled)

    def get_autocast_dtype():
        return torch.get_autocast_cpu_dtype()

    def set_autocast_dtype(dtype):
        torch.set_autocast_cpu_dtype(dtype)


# -- misc configuration namespaces ------------------------------------------------
class _Flags:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return f"<stand-in flags {self.__dict__}>"


config = _Flags(allow_internal_format=False)
matmul = _Flags(allow_hf32=False, allow_tf32=False)
conv = _Flags(allow_hf32=True, allow_tf32=True)

# legacy typed constructors: the NPU tensor types are the CPU ones here
FloatTensor = torch.FloatTensor
DoubleTensor = torch.DoubleTensor
HalfTensor = torch.HalfTensor
BFloat16Tensor = torch.BFloat16Tensor
ByteTensor = torch.ByteTensor
CharTensor = torch.CharTensor
ShortTensor = torch.ShortTensor
IntTensor = torch.IntTensor
LongTensor = torch.LongTensor
BoolTensor = torch.BoolTensor




# -- more of torch_npu.npu, with the CPU meaning of what torch_npu documents ------------------------
# Typed storages of the NPU's tensor types: the CPU's (no tensor is ever on the npu device here).
BFloat16Storage = torch.BFloat16Storage
BoolStorage = torch.BoolStorage
ByteStorage = torch.ByteStorage
CharStorage = torch.CharStorage
DoubleStorage = torch.DoubleStorage
FloatStorage = torch.FloatStorage
HalfStorage = torch.HalfStorage
IntStorage = torch.IntStorage
LongStorage = torch.LongStorage
ShortStorage = torch.ShortStorage

# The caching allocator's state: nothing is allocated on the npu device, so it holds nothing.
def memory_snapshot(mempool_id=None):
    return []


def memory_stats_as_nested_dict(device=None):
    return {}


def host_memory_stats():
    return {}


def host_memory_stats_as_nested_dict():
    return {}


def host_empty_cache():
    return None


def empty_virt_addr_cache():
    return None


def reset_accumulated_host_memory_stats():
    return None


def reset_peak_host_memory_stats():
    return None


def get_allocator_backend():
    return "native"


def can_device_access_peer(device_id, peer_device_id):
    """Every imitated NPU is the same CPU memory: any two distinct valid devices reach each other."""
    first, second = npu_index(device_id, current_device()), npu_index(peer_device_id, current_device())
    _check_index(first)
    _check_index(second)
    return first != second


# Scaled-dot-product attention switches: flags, as torch.backends.cuda's (the CPU's kernels ignore them).
_sdp = {"flash": True, "mem_efficient": True, "math": True}


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def flash_sdp_enabled():
    return _sdp["flash"]


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def math_sdp_enabled():
    return _sdp["math"]


class sdp_kernel:
    """A context that sets the three switches and restores them."""

    def __init__(self, enable_flash=True, enable_math=True, enable_mem_efficient=True, **kwargs):
        self._wanted = {"flash": enable_flash, "math": enable_math, "mem_efficient": enable_mem_efficient}

    def __enter__(self):
        self._before = dict(_sdp)
        _sdp.update({key: bool(value) for key, value in self._wanted.items()})
        return self

    def __exit__(self, *exc):
        _sdp.update(self._before)
        return False


def preferred_linalg_library(backend=None):
    return torch.backends.cuda.preferred_linalg_library(backend)


_sync_debug = {"mode": 0}


def set_sync_debug_mode(debug_mode):
    _sync_debug["mode"] = {"default": 0, "warn": 1, "error": 2}.get(debug_mode, debug_mode)


def get_sync_debug_mode():
    return _sync_debug["mode"]


def enable_deterministic_with_backward(tensor):
    """torch_npu: from here on (forward and its backward) kernels are deterministic; the CPU's are."""
    return tensor


def disable_deterministic_with_backward(tensor):
    return tensor


def set_deterministic_level(level):
    return None


# NPU graph capture: nothing is captured on the CPU, where the callables run as written (a graphed
# callable computes what the callable computes).
def is_current_stream_capturing():
    return False


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    return callables


def graph_pool_handle():
    return (0, 0)


# Overflow and environment queries with an answer on the CPU.
def get_npu_overflow_flag():
    return False


def clear_npu_overflow_flag():
    return None


def current_blas_handle():
    return 0


_limits = {}


def set_device_limit(device, cube_num=-1, vector_num=-1):
    _limits[("device", npu_index(device, current_device()))] = {"cube_core_num": cube_num, "vector_core_num": vector_num}


def get_device_limit(device):
    return dict(_limits.get(("device", npu_index(device, current_device())), {"cube_core_num": -1, "vector_core_num": -1}))


def set_stream_limit(stream, cube_num=-1, vector_num=-1):
    _limits[("stream", id(stream))] = {"cube_core_num": cube_num, "vector_core_num": vector_num}


def get_stream_limit(stream):
    return dict(_limits.get(("stream", id(stream)), {"cube_core_num": -1, "vector_core_num": -1}))


def reset_stream_limit(stream):
    _limits.pop(("stream", id(stream)), None)


_mm_format = {"nd": True}


def set_mm_bmm_format_nd(nd):
    _mm_format["nd"] = bool(nd)


def get_mm_bmm_format_nd():
    return _mm_format["nd"]


def set_op_timeout_ms(timeout):
    return None


class _Mstx:
    """torch_npu.npu.mstx: markers for MindStudio's timeline; without a profiler they record nothing."""

    @staticmethod
    def mark(message="", stream=None, domain="default"):
        return None

    @staticmethod
    def range_start(message="", stream=None, domain="default"):
        return 0

    @staticmethod
    def range_end(range_id, domain="default"):
        return None


mstx = _Mstx()


native_device = "npu"  # (torch_npu 1.11's names of its device type)
npu_device = "npu"
_task_queue = {"enabled": True}


def set_task_queue_enable(device, enable):
    _task_queue["enabled"] = bool(enable)


def get_task_queue_enable(device=None):
    return _task_queue["enabled"]


def get_default_generator(device=None):
    return _npu_gen
