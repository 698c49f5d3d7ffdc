"""Patches that make every "npu" device land on the CPU (see package docstring)."""

import functools
import os

import torch
import torch.distributed as dist
from torch.nn.utils.rnn import PackedSequence

from ._device import CPU, is_npu_device, is_npu_or_index, map_device, map_kwargs

_ORIG = {}

# torch.* functions that take a ``device=`` keyword (only those present are wrapped)
FACTORIES = [
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "range",
    "tensor", "as_tensor", "asarray", "zeros_like", "ones_like", "empty_like",
    "full_like", "rand_like", "randn_like", "randint_like", "randperm", "linspace",
    "logspace", "eye", "empty_strided", "scalar_tensor", "tril_indices",
    "triu_indices", "normal", "sparse_coo_tensor", "sparse_csr_tensor",
    "bartlett_window", "blackman_window", "hamming_window", "hann_window",
    "kaiser_window", "from_file", "empty_permuted", "complex", "polar",
]
TENSOR_FACTORIES = ["new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
                    "new_empty_strided"]


def _factory_wrapper(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "device" in kwargs:
            map_kwargs(kwargs)
        if kwargs.get("pin_memory"):  # pinned host memory: meaningless on the stand-in
            kwargs["pin_memory"] = False
        return fn(*args, **kwargs)

    wrapper.__standin_original__ = fn
    return wrapper


def _patch_factories():
    from torch.jit import _builtins

    table = _builtins._get_builtin_table()
    for name in FACTORIES:
        fn = getattr(torch, name, None)
        if fn is None or hasattr(fn, "__standin_original__"):
            continue
        w = _factory_wrapper(fn)
        setattr(torch, name, w)
        op = table.get(id(fn))
        if op is not None:  # keep TorchScript able to compile calls to torch.<name>
            _builtins._register_builtin(w, op)
    for name in TENSOR_FACTORIES:
        fn = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, _factory_wrapper(fn))

    orig_set_default = torch.set_default_device

    @functools.wraps(orig_set_default)
    def set_default_device(device):
        return orig_set_default(map_device(device) if device is not None else device)

    torch.set_default_device = set_default_device


def _mapped_to(orig_to):
    """`Tensor.to`/`Module.to` that send an NPU device (or a bare index) to the CPU."""

    @functools.wraps(orig_to)
    def to(self, *args, **kwargs):
        if args and is_npu_or_index(args[0]):
            args = (CPU,) + args[1:]
        if "device" in kwargs:
            map_kwargs(kwargs)
        return orig_to(self, *args, **kwargs)

    return to


def _patch_tensor():
    T = torch.Tensor
    orig_to = T.to

    to = _mapped_to(orig_to)

    def npu(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        """Stand-in ``Tensor.npu``: the NPU is the CPU, so this is ``.to("cpu")``."""
        return orig_to(self, CPU, non_blocking=non_blocking, memory_format=memory_format)

    def pin_memory(self, device=None):
        """Stand-in: pinned memory does not exist; return a copy, like a real pin would."""
        return self.clone()

    orig_record_stream = T.record_stream

    def record_stream(self, stream):
        from . import _impl

        if isinstance(stream, _impl.Stream):
            return None
        return orig_record_stream(self, stream)

    T.to = to
    T.npu = npu
    T.is_npu = property(lambda self: self.device.type in ("cpu", "npu"),
                        doc="Stand-in: CPU tensors are the NPU's tensors.")
    T.pin_memory = pin_memory
    T.record_stream = record_stream

    for S in (torch.UntypedStorage, torch.TypedStorage):
        S.npu = lambda self, device=None, non_blocking=False: self
        S.is_npu = property(lambda self: self.device.type in ("cpu", "npu"))
        S.pin_memory = lambda self, device=None: self.clone()
    PackedSequence.npu = lambda self, *a, **k: self.to(CPU)
    PackedSequence.is_npu = property(lambda self: self.data.is_npu)


def _patch_module():
    M = torch.nn.Module
    orig_to = M.to
    orig_to_empty = M.to_empty

    to = _mapped_to(orig_to)

    def npu(self, device=None):
        """Stand-in ``Module.npu``: parameters already live on the (CPU) NPU."""
        return orig_to(self, CPU)

    @functools.wraps(orig_to_empty)
    def to_empty(self, *, device, recurse=True):
        return orig_to_empty(self, device=map_device(device), recurse=recurse)

    M.to = to
    M.npu = npu
    M.to_empty = to_empty


class _GeneratorMeta(type(torch._C.Generator)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch._C.Generator)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, torch._C.Generator)


def _patch_generator():
    base = torch._C.Generator

    class Generator(base, metaclass=_GeneratorMeta):
        """``torch.Generator`` that builds a CPU generator for an npu device."""

        def __new__(cls, device="cpu"):
            return base(device=map_device(device))

    Generator.__module__ = "torch"
    Generator.__qualname__ = Generator.__name__ = "Generator"
    torch.Generator = Generator


def _patch_load():
    orig_load = torch.serialization.load

    def _map_location(ml):
        if isinstance(ml, dict):
            return {k: ("cpu" if is_npu_device(v) else v) for k, v in ml.items()}
        if is_npu_or_index(ml):
            return CPU
        return ml

    @functools.wraps(orig_load)
    def load(f, map_location=None, *args, **kwargs):
        return orig_load(f, _map_location(map_location), *args, **kwargs)

    torch.load = load
    torch.serialization.load = load


def _autocast_off():
    return os.environ.get("STANDIN_AUTOCAST", "cpu").lower() in ("off", "0", "false", "none")


def _patch_amp():
    from torch.amp import autocast_mode

    ac = autocast_mode.autocast
    orig_init = ac.__init__

    @functools.wraps(orig_init)
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type == "npu":
            device_type = "cpu"
            if _autocast_off():
                enabled = False
        orig_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    ac.__init__ = __init__

    # torch before 2.3 has no device-generic torch.amp.GradScaler (only torch.cuda.amp's)
    if hasattr(torch.amp, "GradScaler"):
        from torch.amp import grad_scaler

        GS = grad_scaler.GradScaler
        orig_gs_init = GS.__init__

        @functools.wraps(orig_gs_init)
        def gs_init(self, device="cuda", *args, **kwargs):
            orig_gs_init(self, "cpu" if device == "npu" else device, *args, **kwargs)

        GS.__init__ = gs_init

    for name in ("custom_fwd", "custom_bwd"):
        fn = getattr(autocast_mode, name, None)
        if fn is None:  # torch before 2.4 has them in torch.cuda.amp only, without device_type
            continue

        def make(fn):
            @functools.wraps(fn)
            def w(*args, device_type, **kwargs):
                return fn(*args, device_type="cpu" if device_type == "npu" else device_type,
                          **kwargs)
            return w

        w = make(fn)
        setattr(autocast_mode, name, w)
        setattr(torch.amp, name, w)

    for name in ("is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled",
                 "set_autocast_dtype"):
        fn = getattr(torch, name, None)
        if fn is None:  # torch before 2.4 lacks get/set_autocast_dtype (and its others take no device)
            continue

        def make(fn):
            @functools.wraps(fn)
            def w(*args, **kwargs):
                if args and args[0] == "npu":
                    args = ("cpu",) + args[1:]
                return fn(*args, **kwargs)
            return w

        setattr(torch, name, make(fn))


def _create_hccl(store, rank, size, timeout):
    return dist.ProcessGroupGloo(store, rank, size, timeout)


def _patch_flat_collectives():
    """HCCL, as NCCL, takes any gathered tensor of world size times the input's elements
    (`all_gather_into_tensor(torch.empty(world * n), x)`, accelerate's `gather`), and any
    scattered input of world size times the output's; Gloo, under the imitation's hccl, only the
    one concatenated along the first dimension.  On an hccl group the collective runs on a tensor
    of that shape, and a gathered one is copied into the caller's."""
    def adapted(collective, whole_is_output, group_at):
        @functools.wraps(collective)
        def run(output, input, *args, **kwargs):
            group = kwargs["group"] if "group" in kwargs else args[group_at] if len(args) > group_at else None
            if dist.get_backend(group) != "hccl":
                return collective(output, input, *args, **kwargs)
            world = dist.get_world_size(group)
            whole, part = (output, input) if whole_is_output else (input, output)
            shape = (world * part.shape[0], *part.shape[1:]) if part.dim() else (world,)
            # (a collective records no gradient; Gloo, unlike HCCL, copies an input that requires one
            # into views of the output that autograd then refuses: it is given the data alone)
            input = input.detach()
            if whole.shape == shape or whole.numel() != world * part.numel():
                return collective(output, input, *args, **kwargs)
            if not whole_is_output:
                return collective(output, input.reshape(shape), *args, **kwargs)
            gathered = torch.empty(shape, dtype=output.dtype)
            work = collective(gathered, input, *args, **kwargs)
            if work is not None:
                work.wait()
            with torch.no_grad():
                output.copy_(gathered.view(output.shape))
            return _Done() if work is not None else None
        return run

    # (all_gather_into_tensor(output, input, group, async_op), reduce_scatter_tensor(output, input, op, group, ...))
    dist.all_gather_into_tensor = adapted(dist.all_gather_into_tensor, True, 0)
    dist.reduce_scatter_tensor = adapted(dist.reduce_scatter_tensor, False, 1)


class _Done:
    """The work of an asynchronous collective that the imitation ran to its end already."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True


def _patch_distributed():
    if not dist.is_available():
        return
    if "hccl" not in dist.Backend.backend_list:
        dist.Backend.register_backend("hccl", _create_hccl, devices=["cpu", "npu"])
    dist.is_hccl_available = lambda: True

    _patch_flat_collectives()

    DDP = torch.nn.parallel.DistributedDataParallel
    orig_init = DDP.__init__

    @functools.wraps(orig_init)
    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        # DDP on CPU modules requires device_ids=None / output_device=None.
        if device_ids is not None and all(is_npu_or_index(d) for d in device_ids):
            device_ids = None
        if output_device is not None and is_npu_or_index(output_device):
            output_device = None
        orig_init(self, module, device_ids, output_device, *args, **kwargs)

    DDP.__init__ = __init__


# Recent torch releases let Python register PrivateUse1's hooks and device guard (torch._C._acc);
# torch 2.1 has no such module: its C++ side has none registered for it and asks nothing of it.
_PYTHON_HOOKS = hasattr(torch._C, "_acc")

if _PYTHON_HOOKS:
    class _Hooks(torch._C._acc.PrivateUse1Hooks):
        # The C++ side must see no usable PrivateUse1 device, so C++ code (barrier,
        # accelerator queries) keeps choosing the CPU.
        def is_available(self):
            return False

        def has_primary_context(self, dev_id):
            return False

        def is_built(self):
            return False

    class _Guard(torch._C._acc.DeviceGuard):
        def type_(self):
            return torch._C._autograd.DeviceType.PrivateUse1


def install(npu_module):
    if _ORIG.get("installed"):
        return
    torch.utils.rename_privateuse1_backend("npu")
    if _PYTHON_HOOKS:
        torch._C._acc.register_python_privateuseone_hook(_Hooks())
        torch._C._acc.register_python_privateuseone_device_guard(_Guard())
    torch._register_device_module("npu", npu_module)
    _patch_factories()
    _patch_tensor()
    _patch_module()
    _patch_generator()
    _patch_load()
    _patch_amp()
    _patch_distributed()
    _ORIG["installed"] = True
