"""What a dry run watches in each of its processes (gpu2npu dryrun; loaded by sitecustomize).

- CUDA left in the user's code fails loudly, naming the file and line: any call of torch.cuda.*,
  `.cuda()`, a "cuda" device given to `.to()` or a factory, the NCCL backend.  The questions an
  NPU machine answers (torch.cuda.is_available() is False there, device_count() 0) are answered
  so and recorded: the run goes on and reports each.  Calls that torch or another library makes
  on its own are let through (they are not the user's lines).
- Names the chosen torch_npu release lacks fail in the CPU imitation of torch_npu, which records
  them here; the torch_npu functions the program calls are counted.
- GPU2NPU_DRYRUN_MAX_STEPS=K: when an optimizer is about to take step K+1, the process ends with
  status 0 (each rank of a distributed run at the same step).
- At exit, GPU2NPU_DRYRUN_DIR/<pid>.json holds what was seen; gpu2npu dryrun merges them.
"""
import atexit
import functools
import importlib.abc
import importlib.machinery
import json
import linecache
import os
import sys
import sysconfig

_DIR = os.environ.get("GPU2NPU_DRYRUN_DIR")
_MAX_STEPS = int(os.environ.get("GPU2NPU_DRYRUN_MAX_STEPS") or 0)
_HERE = os.path.dirname(os.path.abspath(__file__))
_STANDIN = os.path.join(os.path.dirname(_HERE), "standin")

hits = {}  # (kind, what, where) -> count, in the order first met
exercised = {}  # torch_npu name -> calls
state = {"steps": 0, "stopped": False}


class DryRunCudaError(RuntimeError):
    """CUDA in the user's code: on the NPU it fails or silently runs elsewhere."""


# -- where a call comes from ----------------------------------------------------------------------
def _library_roots():
    roots = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    roots.update({_HERE, _STANDIN, sys.prefix, sys.base_prefix})
    return tuple(sorted(os.path.abspath(root) + os.sep for root in roots if root))


_ROOTS = None


def _is_user(filename):
    global _ROOTS
    if filename.startswith("<"):
        return False
    if _ROOTS is None:
        _ROOTS = _library_roots()
    return not os.path.abspath(filename).startswith(_ROOTS)


def _is_machinery(filename):
    """The dry run's own code (the probe, the CPU imitation): skipped when looking for who called."""
    return os.path.abspath(filename).startswith((_HERE + os.sep, _STANDIN + os.sep))


def caller(depth=2):
    """The frame that made the call, above the dry run's own, if it is the user's code; None when
    it is torch's or another library's (`torch.manual_seed` calls torch.cuda itself)."""
    frame = sys._getframe(depth)
    while frame is not None and _is_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or not _is_user(frame.f_code.co_filename):
        return None
    return frame


def _where(frame):
    filename = os.path.relpath(frame.f_code.co_filename)
    return f"{filename}:{frame.f_lineno}"


def record(kind, what, depth=3):
    """Count a hit at the user's line; returns "file:line" (or None: not the user's code, or a
    `hasattr`/`getattr` test of the name, which is how code asks what a release has)."""
    frame = caller(depth)
    if frame is None:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    if not kind.startswith("cuda") and ("hasattr(" in line or "getattr(" in line):
        return None
    where = _where(frame)
    key = (kind, what, where)
    hits[key] = hits.get(key, 0) + 1
    return where


# -- CUDA traps -------------------------------------------------------------------------------------
def _cuda_error(what, where):
    return DryRunCudaError(f"{where}: {what} is CUDA, which the NPU does not have (gpu2npu dryrun: the migration "
                           "left it, or it was written after; use the NPU or a device-neutral call)")


# Questions about CUDA that have an answer on an NPU machine (no CUDA there): answered as there,
# and recorded, so that one run lists every CUDA use that follows instead of stopping at the first.
QUERIES = {"is_available": False, "device_count": 0, "is_initialized": False}


def _trap(function, what):
    @functools.wraps(function)
    def trapped(*args, **kwargs):
        where = record("cuda", what)
        if where is not None:
            raise _cuda_error(what, where)
        return function(*args, **kwargs)

    trapped.__gpu2npu_trapped__ = function
    return trapped


def _query(function, what, answer):
    @functools.wraps(function)
    def answered(*args, **kwargs):
        if record("cuda query", what) is not None:
            return answer
        return function(*args, **kwargs)

    answered.__gpu2npu_trapped__ = function
    return answered


def _names_cuda(value):
    import torch

    if isinstance(value, str):
        return value == "cuda" or value.startswith("cuda:")
    return isinstance(value, torch.device) and value.type == "cuda"


def _device_trap(function, what):
    @functools.wraps(function)
    def checked(*args, **kwargs):
        if any(_names_cuda(value) for value in (*args, kwargs.get("device"))):
            where = record("cuda", f"{what}(cuda device)")
            if where is not None:
                raise _cuda_error(f"a cuda device given to {what}", where)
        return function(*args, **kwargs)

    checked.__gpu2npu_trapped__ = function
    return checked


_FACTORIES = ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "tensor", "as_tensor",
              "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randperm",
              "linspace", "eye")


def _install_cuda_traps(torch):
    import inspect
    import types

    for name, value in list(vars(torch.cuda).items()):
        if name.startswith("_") or not callable(value) or inspect.isclass(value) or isinstance(value, types.ModuleType):
            continue
        if name in QUERIES:
            setattr(torch.cuda, name, _query(value, f"torch.cuda.{name}", QUERIES[name]))
        else:
            setattr(torch.cuda, name, _trap(value, f"torch.cuda.{name}"))
    amp = getattr(torch.cuda, "amp", None)
    for name in ("GradScaler", "autocast"):
        cls = getattr(amp, name, None) if amp is not None else None
        if inspect.isclass(cls):
            setattr(amp, name, _trapped_class(cls, f"torch.cuda.amp.{name}"))
    for name in ("Stream", "Event"):
        cls = getattr(torch.cuda, name, None)
        if inspect.isclass(cls):
            setattr(torch.cuda, name, _trapped_class(cls, f"torch.cuda.{name}"))
    torch.Tensor.cuda = _trap(torch.Tensor.cuda, "Tensor.cuda()")
    torch.nn.Module.cuda = _trap(torch.nn.Module.cuda, "Module.cuda()")
    torch.Tensor.to = _device_trap(torch.Tensor.to, "Tensor.to")
    torch.nn.Module.to = _device_trap(torch.nn.Module.to, "Module.to")
    for name in _FACTORIES:
        if hasattr(torch, name):
            original = getattr(torch, name)
            trapped = _device_trap(original, f"torch.{name}")
            _keep_scriptable(original, trapped)
            setattr(torch, name, trapped)
    import torch.distributed as dist

    for name in ("init_process_group", "new_group"):
        function = getattr(dist, name, None)
        if function is not None:
            setattr(dist, name, _backend_trap(function, f"torch.distributed.{name}"))


def _keep_scriptable(original, wrapper):
    """TorchScript (torch.jit.script, and torch's own scripted code: ZeroRedundancyOptimizer's
    module) compiles a call of `torch.zeros` by finding the function, by identity, in its table of
    builtins: the wrapper is entered there under the original's operator, so that scripted code
    compiles to the same operator as without the dry run (the trap is for eager calls)."""
    try:
        from torch.jit import _builtins

        operator = _builtins._find_builtin(original)
        if operator is not None:
            _builtins._register_builtin(wrapper, operator)
    except Exception:  # (a torch without that table: eager code is trapped all the same)
        pass


def _trapped_class(cls, what):
    def __init__(self, *args, **kwargs):
        where = record("cuda", what)
        if where is not None:
            raise _cuda_error(what, where)
        cls.__init__(self, *args, **kwargs)

    import warnings

    with warnings.catch_warnings():  # (torch.cuda.amp's classes warn of their deprecation when subclassed)
        warnings.simplefilter("ignore")
        return type(cls.__name__, (cls,), {"__init__": __init__, "__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__})


def _backend_trap(function, what):
    @functools.wraps(function)
    def checked(*args, **kwargs):
        backend = kwargs.get("backend", args[0] if args and what.endswith("init_process_group") else None)
        if isinstance(backend, str) and "nccl" in backend.lower():
            where = record("cuda", f"{what}(backend={backend!r})")
            if where is not None:
                raise _cuda_error(f"the {backend} backend", where)
        return function(*args, **kwargs)

    return checked


# -- torch.compile ----------------------------------------------------------------------------------
class DryRunCompileError(RuntimeError):
    """A torch.compile backend the chosen torch_npu release does not have for the NPU."""


@functools.lru_cache(maxsize=None)
def _release_data():
    """The release's data (STANDIN_TORCH_NPU_DATA), read once; None where it is not at hand."""
    try:
        with open(os.environ["STANDIN_TORCH_NPU_DATA"], encoding="utf-8") as handle:
            return json.load(handle)
    except (KeyError, OSError, ValueError):
        return None


def _release():
    """The release's version and its compile backends (None: unknown)."""
    data = _release_data()
    if data is None:
        return "", None
    backends = data.get("compile_backends")
    return data.get("torch_npu_version", ""), (tuple(backends) if isinstance(backends, list) else None)


# the release's own backends, which torch does not know without torch_npu and torchair: the CPU runs
# their graphs eagerly (the same results)
_NPU_BACKENDS = ("npu", "npugraph_ex")


def _install_compile_check(torch):
    """torch.compile with a backend the release has no NPU compiler for (inductor before
    torch_npu 2.6) fails here as the migration report says it does on the NPU."""
    release, backends = _release()
    original = getattr(torch, "compile", None)
    if backends is None or original is None:
        return

    @functools.wraps(original)
    def compile(*args, **kwargs):
        backend = kwargs.get("backend", "inductor")
        if isinstance(backend, str) and not kwargs.get("disable"):
            if backend not in backends:
                where = record("compile", f"torch.compile(backend={backend!r})")
                if where is not None:
                    raise DryRunCompileError(
                        f"{where}: torch_npu {release} has no {backend!r} compiler for the NPU (it has "
                        f"{', '.join(repr(name) for name in backends) or 'none'}): compile with backend='npu' after "
                        "`import torchair`, or run eagerly (gpu2npu dryrun)")
            elif backend in _NPU_BACKENDS:
                kwargs["backend"] = "eager"
        return original(*args, **kwargs)

    compile.__gpu2npu_trapped__ = original
    torch.compile = compile


# -- fused optimizers -------------------------------------------------------------------------------
class DryRunFusedError(RuntimeError):
    """fused=True where the chosen torch_npu release has no NPU kernel for the optimizer's fused update."""


def _fused_kernels():
    """torch optimizer (qualified) -> the ATen operator its fused=True update runs: the migration's
    table (tips.FUSED_OPTIMIZERS), handed over by gpu2npu dryrun."""
    try:
        return json.loads(os.environ.get("GPU2NPU_DRYRUN_FUSED_KERNELS") or "{}")
    except ValueError:
        return {}


def _release_kernels():
    """The operators the release has NPU kernels for (None: its data is not at hand)."""
    data = _release_data()
    if data is None:
        return None
    return frozenset(data.get("native_functions", ())) | frozenset(data.get("custom_functions", ()))


def _install_fused_check(torch):
    """An optimizer asked for its fused update fails where the release has no NPU kernel for it, as
    the migration report says (NPU910); elsewhere it runs, unfused where this torch has no CPU kernel
    for it (torch before 2.4 fuses on CUDA and PrivateUse1 only): the same update."""
    kernels = _release_kernels()
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
        cpu_fuses = "cpu" in _get_fused_kernels_supported_devices()
    except ImportError:
        cpu_fuses = False
    release, _ = _release()
    wrapped = set()
    for qualified, kernel in _fused_kernels().items():
        optimizer = torch
        for part in qualified.split(".")[1:]:
            optimizer = getattr(optimizer, part, None)
        if optimizer is None or optimizer in wrapped:
            continue  # (not in this torch, or named twice: torch.optim.AdamW is torch.optim.adamw.AdamW)
        wrapped.add(optimizer)

        def __init__(self, *args, _original=optimizer.__init__, _name=qualified, _kernel=kernel, **kwargs):
            if kwargs.get("fused"):
                if kernels is not None and _kernel not in kernels:
                    where = record("fused", f"{_name}(fused=True)")
                    if where is not None:
                        short = _name.rsplit(".", 1)[-1]
                        raise DryRunFusedError(
                            f"{where}: torch_npu {release} has no NPU kernel for {short}'s fused update ({_kernel}): "
                            "leave fused unset (the default update) (gpu2npu dryrun)")
                if not cpu_fuses:
                    kwargs["fused"] = None
            _original(self, *args, **kwargs)

        functools.update_wrapper(__init__, optimizer.__init__)
        optimizer.__init__ = __init__


# -- steps ------------------------------------------------------------------------------------------
def _install_step_counter(torch):
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    # A step of an optimizer that wraps another (ZeroRedundancyOptimizer, a framework's wrapper)
    # takes the inner one's step inside its own: one step, counted when the outer one ends.
    def counted(optimizer, args, kwargs):
        if state.get("outer") is not optimizer:
            return
        state["outer"] = None
        state["steps"] += 1
        if state.get("loader") is not None:  # the loader whose batches this step trained on
            trained.add(state["loader"])

    def stop_before_one_more(optimizer, args, kwargs):
        if state.get("outer") is None:
            state["outer"] = optimizer
        # at the start of step K+1, so that whatever the program does after step K (printing
        # its loss) is done
        if _MAX_STEPS and state["steps"] >= _MAX_STEPS:
            state["stopped"] = True
            write()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

    register_optimizer_step_pre_hook(stop_before_one_more)
    register_optimizer_step_post_hook(counted)


# -- ranks ------------------------------------------------------------------------------------------
# What the ranks of a distributed run are compared on (gpu2npu dryrun --nproc): the NPU each selected
# or used, and the first samples each took from the loaders it trained on.
trained = set()  # sites (file:line) of the loaders whose batches an optimizer step followed
samples = {}  # loader site -> the first indices taken in its first epoch
_SAMPLES_KEPT = 256


def _world_size():
    try:
        return int(os.environ.get("WORLD_SIZE") or os.environ.get("RANK_SIZE") or 1)
    except ValueError:
        return 1


def _device_text(device):
    """A device argument as text ("npu:1", "npu", "cpu"); "" for what names no device (a dtype)."""
    return device if isinstance(device, str) else str(device) if type(device).__name__ == "device" else ""


def _npu_of(device):
    """The NPU index a device argument names (None: none named, or not an NPU)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    text = _device_text(device)
    if text.startswith("npu:") and text[4:].isdigit():
        return int(text[4:])
    return None


def _install_rank_watch(npu):
    """The NPU each rank selects (set_device) or puts tensors on, a DDP told another rank's NPU,
    and a tensor or module put on an NPU that is not the rank's."""
    import torch

    original_set_device = npu.set_device
    # (asked here, not by the user: the uncounted function)
    current_device = getattr(npu.current_device, "__wrapped__", npu.current_device)

    @functools.wraps(original_set_device)
    def set_device(device, *args, **kwargs):
        result = original_set_device(device, *args, **kwargs)
        frame = caller(2)
        if frame is not None:
            state["npu"] = (current_device(), _where(frame))
        return result

    npu.set_device = set_device

    def placed(device, what):
        index = _npu_of(device)
        if index is None and device is not None and not _device_text(device).startswith("npu"):
            return  # (not an NPU: a dtype, another tensor, the CPU)
        current = current_device()
        frame = caller(3)
        if frame is None:
            return
        state.setdefault("npu", (current, _where(frame)))
        if index is not None and index != current and _world_size() > 1:
            record("rank", f"{what} put on NPU {index} by the rank whose NPU is {current}", depth=4)

    def watching(function, what):
        @functools.wraps(function)
        def moved(self, *args, **kwargs):
            device = kwargs.get("device", args[0] if args else None)
            if what.endswith(".npu()"):
                device = "npu" if device is None else device
            placed(device, what)
            return function(self, *args, **kwargs)

        return moved

    for owner, name in ((torch.Tensor, "to"), (torch.Tensor, "npu"), (torch.nn.Module, "to"), (torch.nn.Module, "npu")):
        function = getattr(owner, name, None)
        if function is not None:
            setattr(owner, name, watching(function, f"{'a tensor' if owner is torch.Tensor else 'a module'} "
                                                    f"(.{name}{'()' if name == 'npu' else ''})"))
    ddp = torch.nn.parallel.DistributedDataParallel
    original_init = ddp.__init__

    @functools.wraps(original_init)
    def __init__(self, module, device_ids=None, *args, **kwargs):
        named = [_npu_of(device) for device in (device_ids or ())]
        current = current_device()
        if any(index is not None and index != current for index in named):
            record("rank", f"DistributedDataParallel(device_ids={[index for index in named]}) in the rank whose "
                           f"NPU is {current}")
        return original_init(self, module, device_ids, *args, **kwargs)

    ddp.__init__ = __init__


def _install_sample_watch(torch):
    """The first indices each training loader gives in its first epoch, by where it was made."""
    from torch.utils.data import DataLoader
    from torch.utils.data import dataloader as loading

    original_init, original_iterator, original_next = DataLoader.__init__, DataLoader._get_iterator, \
        loading._BaseDataLoaderIter._next_index

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        frame = caller(2)
        self._gpu2npu_site = _where(frame) if frame is not None else None
        self._gpu2npu_epochs = 0
        return original_init(self, *args, **kwargs)

    def _get_iterator(self):
        iterator = original_iterator(self)
        site = getattr(self, "_gpu2npu_site", None)
        first = getattr(self, "_gpu2npu_epochs", 1) == 0
        self._gpu2npu_epochs = getattr(self, "_gpu2npu_epochs", 0) + 1
        iterator._gpu2npu_site = site if first else None
        return iterator

    def _next_index(self):
        index = original_next(self)
        site = getattr(self, "_gpu2npu_site", None)
        if site is not None:
            state["loader"] = site
            kept = samples.setdefault(site, [])
            if len(kept) < _SAMPLES_KEPT:
                kept.extend(index if isinstance(index, list) else [index])
        return index

    DataLoader.__init__ = __init__
    DataLoader._get_iterator = _get_iterator
    loading._BaseDataLoaderIter._next_index = _next_index


# -- torch_npu calls ----------------------------------------------------------------------------------
def _count_calls(module, prefix):
    import types

    for name, value in list(vars(module).items()):
        if name.startswith("_") or not isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
            continue

        def counted(*args, __function=value, __name=f"{prefix}.{name}", **kwargs):
            if caller(2) is not None:
                exercised[__name] = exercised.get(__name, 0) + 1
            try:
                return __function(*args, **kwargs)
            except TypeError as error:
                _keyword_hit(__name, error)
                raise

        functools.update_wrapper(counted, value)
        setattr(module, name, counted)


def _keyword_hit(name, error):
    """A keyword (or argument) the release's API does not take: recorded at the user's line."""
    text = str(error)
    if "unexpected keyword argument" in text or "positional argument" in text:
        keyword = text.rsplit("'", 2)[-2] if text.count("'") >= 2 else "?"
        record("keyword", f"{name}({keyword}=)" if "keyword" in text else name, depth=4)


def _count_constructions(module, prefix):
    """The classes of torch_npu.optim: their construction counted, a keyword they lack recorded."""
    import inspect

    for name, value in list(vars(module).items()):
        if name.startswith("_") or not inspect.isclass(value):
            continue
        original = value.__init__

        def __init__(self, *args, __original=original, __name=f"{prefix}.{name}", **kwargs):
            if caller(2) is not None:
                exercised[__name] = exercised.get(__name, 0) + 1
            try:
                __original(self, *args, **kwargs)
            except TypeError as error:
                _keyword_hit(__name, error)
                raise

        functools.update_wrapper(__init__, original)
        value.__init__ = __init__


# -- after-import patches ---------------------------------------------------------------------------
class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a patch right after a module is first imported (torch, torch_npu)."""

    def __init__(self, patches):
        self.patches = patches

    def find_spec(self, name, path, target=None):
        patch = self.patches.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module, _original=original, _patch=patch, _name=name):
            _original(module)
            self.patches.pop(_name, None)
            _patch(module)

        loader.exec_module = exec_module
        return spec


def _after_torch(torch):
    state["torch"] = str(getattr(torch, "__version__", ""))  # the torch that runs, said in the report
    _install_cuda_traps(torch)
    _install_compile_check(torch)
    _install_fused_check(torch)
    _install_sample_watch(torch)
    _install_step_counter(torch)


def _after_torch_npu(torch_npu):
    _count_calls(torch_npu, "torch_npu")
    npu = sys.modules.get("torch_npu.npu")
    if npu is not None:
        _count_calls(npu, "torch_npu.npu")
    optim = sys.modules.get("torch_npu.optim")
    if optim is not None:
        _count_constructions(optim, "torch_npu.optim")
    if npu is not None:
        _install_rank_watch(npu)


def write():
    if not _DIR:
        return
    report = {
        "pid": os.getpid(), "rank": os.environ.get("RANK", os.environ.get("RANK_ID", "")),
        "steps": state["steps"], "stopped": state["stopped"], "argv": sys.argv, "torch": state.get("torch", ""),
        "npu": state.get("npu"),
        "samples": {site: [int(i) if isinstance(i, int) else repr(i) for i in kept[:_SAMPLES_KEPT]]
                    for site, kept in samples.items() if site in trained},
        "hits": [{"kind": kind, "what": what, "where": where, "count": count}
                 for (kind, what, where), count in hits.items()],  # in the order first met
        "exercised": exercised,
    }
    try:
        with open(os.path.join(_DIR, f"{os.getpid()}.json"), "w", encoding="utf-8") as handle:
            json.dump(report, handle)
    except OSError:
        pass


def start():
    if not _DIR:
        return
    sys.meta_path.insert(0, _AfterImport({"torch": _after_torch, "torch_npu": _after_torch_npu}))
    atexit.register(write)
