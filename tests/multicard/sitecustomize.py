"""Record what a multi-process (DDP) training run really did, without touching the script.

Python imports ``sitecustomize`` at start-up from the first directory on ``sys.path`` that has
one, so putting ``tests/multicard`` on PYTHONPATH loads this file in every Python process started
with that environment: the launcher's ranks, but also any helper interpreter.  It therefore does
nothing at all unless the environment variable ``MULTICARD_RECORD_DIR`` is set, and even then it
does not import torch: it installs an import hook that applies the patches right after the
script's own ``import torch`` has finished (so the script's import order, and anything it sets in
``os.environ`` before importing torch, stay as written).  A process that never imports torch
records nothing and writes nothing.

When active, each process writes ``$MULTICARD_RECORD_DIR/rank<r>.json`` (``r`` from ``RANK_ID``,
else ``RANK``, else ``torch.distributed.get_rank()``, else ``pid<pid>``), rewritten atomically
after every recorded event so that a process that dies late still leaves its record:

``samplers``
    one entry per ``torch.utils.data.distributed.DistributedSampler`` instance, in order of first
    iteration, with its ``num_replicas``, ``rank``, ``shuffle``, ``drop_last``, ``seed``, the
    dataset length, and ``iterations``: ``[{"epoch": e, "indices": [...]}, ...]``, one per
    ``iter(sampler)`` (a DataLoader iterates its sampler once per pass over the loader).
``ddp_models``
    one entry per ``torch.nn.parallel.DistributedDataParallel`` built: class of the wrapped module,
    parameter names, and parameter checksums ``at_init`` (after DDP's broadcast of rank 0's
    weights), ``first_step`` (right after the first optimizer step taken once the model exists)
    and ``at_exit`` (interpreter exit).  A checksum is the sha256 of the concatenated float64
    bytes of the module's parameters, in ``state_dict`` order (buffers are hashed separately as
    ``buffers_*``: batch-norm statistics are legitimately rank-local between forward passes).
``optimizer_steps``
    how many ``Optimizer.step`` calls the process made.
``errors``
    anything that went wrong inside the instrumentation (the test fails on a non-empty list).

Why each patch is safe (the script must behave exactly as without it):

* ``DistributedSampler.__iter__``: the original builds the complete list of indices (from its own
  ``torch.Generator`` seeded with ``seed + epoch``; no global RNG is touched) and returns
  ``iter(list)``.  The wrapper calls it, materialises that same finite list, records a copy and
  returns ``iter`` over it: same values, same order, same laziness as far as the caller can tell.
  A subclass that overrides ``__iter__`` without calling ``super()`` is not recorded.
* ``DistributedDataParallel.__init__``: the original runs first with the arguments unchanged; the
  wrapper then keeps a *weak* reference to the DDP object (so it can never keep DDP alive) and a
  strong one to the wrapped module (to read its parameters at exit), and reads the parameters.
* ``torch.optim.optimizer.register_optimizer_step_post_hook``: a documented global hook called
  after every ``step()``; it counts steps and, once, reads the DDP modules' parameters.
* Reading parameters: ``detach()``, under ``torch.no_grad()``, copied to the CPU as float64; no
  tensor of the model, no autograd state and no RNG is touched.
* ``atexit`` hook, registered before the script runs, so it runs after the script's own atexit
  handlers: writes the ``at_exit`` checksums, then runs ``gc.collect()``.  With torch 2.13 + Gloo
  a DDP object still alive at interpreter shutdown can abort the process ("terminate called
  without an active exception", exit status 134) although the training succeeded; DDP objects
  sit in reference cycles, so a script that merely lets ``model`` go out of scope still leaves
  them to be destroyed during finalisation.  Collecting them here, while the interpreter is
  intact, avoids that.  If a DDP object is still referenced (a module-level ``model`` in
  ``__main__``), the hook drops ``__main__``'s global names bound to it and collects again; this
  happens after the script has finished and only affects the shutdown order.
"""
import os

_ENV = "MULTICARD_RECORD_DIR"


def _chain_next_sitecustomize():
    """Run the sitecustomize this file shadows (e.g. a distribution's), if there is one."""
    import importlib.machinery
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


class _Recorder:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.pid = os.getpid()
        self.samplers = []        # [(sampler object, record dict)]
        self.ddp = []             # [(weakref to DDP, wrapped module, record dict)]
        self.steps = 0
        self.first_step_done = False
        self.errors = []
        self.dirty = False

    # -- helpers -------------------------------------------------------------------------------
    def _fresh_process_check(self):
        # A forked child (e.g. fork-started ranks) starts its own record.
        if os.getpid() != self.pid:
            self.__init__(self.out_dir)

    @staticmethod
    def rank():
        for name in ("RANK_ID", "RANK"):
            value = os.environ.get(name, "").strip()
            if value:
                return value
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                return str(dist.get_rank())
        except Exception:  # noqa: BLE001 - best effort
            pass
        return "pid%d" % os.getpid()

    @staticmethod
    def checksums(module):
        import hashlib

        import torch

        params = dict(module.named_parameters())
        h_params, h_buffers = hashlib.sha256(), hashlib.sha256()
        names = []
        with torch.no_grad():
            for name, tensor in module.state_dict(keep_vars=True).items():
                if not isinstance(tensor, torch.Tensor):
                    continue
                data = tensor.detach().to(device="cpu", dtype=torch.float64).clone(
                    memory_format=torch.contiguous_format)
                blob = bytes(data.untyped_storage())
                if name in params:
                    names.append(name)
                    h_params.update(blob)
                else:
                    h_buffers.update(blob)
        return names, h_params.hexdigest(), h_buffers.hexdigest()

    def snapshot(self, when):
        for _ref, module, record in self.ddp:
            names, params, buffers = self.checksums(module)
            record["param_names"] = names
            record["params_" + when] = params
            record["buffers_" + when] = buffers

    def error(self, where, exc):
        import sys
        import traceback

        text = "%s: %s" % (where, "".join(traceback.format_exception_only(type(exc), exc)).strip())
        self.errors.append(text)
        self.dirty = True
        print("[multicard sitecustomize] " + text, file=sys.stderr, flush=True)

    def write(self):
        import json

        if not (self.samplers or self.ddp or self.steps or self.errors):
            return
        data = {
            "rank": self.rank(),
            "pid": os.getpid(),
            "env": {k: os.environ.get(k) for k in ("RANK_ID", "RANK", "RANK_SIZE", "WORLD_SIZE",
                                                   "DEVICE_ID", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")},
            "samplers": [record for _s, record in self.samplers],
            "ddp_models": [record for _r, _m, record in self.ddp],
            "optimizer_steps": self.steps,
            "errors": self.errors,
        }
        os.makedirs(self.out_dir, exist_ok=True)
        path = os.path.join(self.out_dir, "rank%s.json" % data["rank"])
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
        self.dirty = False

    # -- events --------------------------------------------------------------------------------
    def on_sampler_iter(self, sampler, indices):
        self._fresh_process_check()
        for obj, record in self.samplers:
            if obj is sampler:
                break
        else:
            record = {
                "serial": len(self.samplers),
                "num_replicas": int(sampler.num_replicas),
                "rank": int(sampler.rank),
                "shuffle": bool(sampler.shuffle),
                "drop_last": bool(sampler.drop_last),
                "seed": int(sampler.seed),
                "dataset_len": len(sampler.dataset),
                "iterations": [],
            }
            self.samplers.append((sampler, record))
        record["iterations"].append({"epoch": int(sampler.epoch), "indices": [int(i) for i in indices]})
        self.write()

    def on_ddp_init(self, ddp):
        import weakref

        self._fresh_process_check()
        record = {"module_class": type(ddp.module).__name__}
        self.ddp.append((weakref.ref(ddp), ddp.module, record))
        names, params, buffers = self.checksums(ddp.module)
        record.update(param_names=names, params_at_init=params, buffers_at_init=buffers)
        self.write()

    def on_step(self):
        self._fresh_process_check()
        self.steps += 1
        if not self.first_step_done and self.ddp:
            self.first_step_done = True
            self.snapshot("first_step")
            for _r, _m, record in self.ddp:
                record["first_step_index"] = self.steps
            self.write()

    def at_exit(self):
        import gc
        import sys

        if os.getpid() != self.pid:
            return
        try:
            if self.ddp:
                self.snapshot("at_exit")
        except Exception as exc:  # noqa: BLE001
            self.error("at_exit checksum", exc)
        try:
            self.write()
        except Exception as exc:  # noqa: BLE001
            print("[multicard sitecustomize] cannot write record: %r" % (exc,), file=sys.stderr)
        # Free DDP objects now rather than during interpreter finalisation (see module docstring).
        gc.collect()
        main = sys.modules.get("__main__")
        alive = [ref() for ref, _m, _r in self.ddp if ref() is not None]
        if alive and main is not None:
            for name, value in list(vars(main).items()):
                if any(value is obj for obj in alive):
                    delattr(main, name)
            del alive
            gc.collect()


def _install_patches(rec):
    """Called once, right after ``import torch`` has completed."""
    import functools

    import torch
    import torch.nn.parallel
    import torch.utils.data.distributed
    # ``torch.optim`` deletes its ``optimizer`` attribute: import the name, not the module path.
    from torch.optim.optimizer import register_optimizer_step_post_hook

    sampler_cls = torch.utils.data.distributed.DistributedSampler
    orig_iter = sampler_cls.__iter__

    @functools.wraps(orig_iter)
    def __iter__(self):
        indices = list(orig_iter(self))
        try:
            rec.on_sampler_iter(self, indices)
        except Exception as exc:  # noqa: BLE001 - never break the script
            rec.error("DistributedSampler.__iter__", exc)
        return iter(indices)

    sampler_cls.__iter__ = __iter__

    ddp_cls = torch.nn.parallel.DistributedDataParallel
    orig_init = ddp_cls.__init__

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        try:
            rec.on_ddp_init(self)
        except Exception as exc:  # noqa: BLE001
            rec.error("DistributedDataParallel.__init__", exc)

    ddp_cls.__init__ = __init__

    def step_post_hook(optimizer, args, kwargs):
        try:
            rec.on_step()
        except Exception as exc:  # noqa: BLE001
            rec.error("optimizer step hook", exc)

    register_optimizer_step_post_hook(step_post_hook)


def _install(out_dir):
    import atexit
    import importlib.abc
    import importlib.util
    import sys

    rec = _Recorder(out_dir)
    atexit.register(rec.at_exit)

    class TorchImportHook(importlib.abc.MetaPathFinder):
        """Wraps the loader of the top-level ``torch`` package to patch once it has loaded."""

        busy = False

        def find_spec(self, fullname, path=None, target=None):
            if fullname != "torch" or self.busy:
                return None
            self.busy = True
            try:
                spec = importlib.util.find_spec("torch")
            finally:
                self.busy = False
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            orig_exec = spec.loader.exec_module

            def exec_module(module):
                orig_exec(module)
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                try:
                    _install_patches(rec)
                except Exception as exc:  # noqa: BLE001
                    rec.error("installing patches", exc)

            spec.loader.exec_module = exec_module
            return spec

    if "torch" in sys.modules:  # cannot happen at start-up, but be exact
        _install_patches(rec)
    else:
        sys.meta_path.insert(0, TorchImportHook())
    return rec


if os.environ.get(_ENV):
    _RECORDER = _install(os.path.abspath(os.environ[_ENV]))

try:
    _chain_next_sitecustomize()
except Exception:  # noqa: BLE001 - a broken foreign sitecustomize must not break our runs
    pass
