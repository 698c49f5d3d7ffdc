"""``torch_npu.npu.amp`` stand-in: autocast / GradScaler that run the CPU versions.

* ``autocast(enabled=True, dtype=None, cache_enabled=True)`` is
  ``torch.autocast("cpu", ...)`` (dtype None -> CPU's default, bfloat16).
  With ``STANDIN_AUTOCAST=off`` every NPU autocast is disabled instead.
* ``GradScaler(...)`` is ``torch.amp.GradScaler("cpu", ...)``; with
  ``enabled=False`` it is an exact pass-through.  A torch that lacks it (before 2.3)
  gets torch.cuda.amp's GradScaler with the inf check and scale update done on the
  CPU, the same steps; ``custom_fwd``/``custom_bwd`` likewise (before 2.4).
* ``ShardedGradScaler(...)``, the GradScaler of FSDP's sharded gradients, is torch's
  ``torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler`` for the NPU, with
  torch_npu's signature.
"""

import sys as _sys

import torch as _torch
from torch.amp.autocast_mode import autocast as _autocast_base

from .. import _names

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast_base):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("npu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


if hasattr(_torch.amp, "GradScaler"):
    class GradScaler(_torch.amp.GradScaler):
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True, dynamic=True):
            super().__init__("npu", init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)
            if not dynamic:  # static loss scale: never grows nor backs off
                self._growth_factor = 1.0
                self._backoff_factor = 1.0
else:
    # torch before 2.3 has no device-generic torch.amp.GradScaler, and no CPU kernels for the
    # scaler's inf check and scale update: as torch_npu 2.1 does, GradScaler is torch.cuda.amp's
    # code with the device parts replaced, here by Python doing on the CPU what the kernels do.
    from collections import abc as _abc
    from collections import defaultdict as _defaultdict

    from torch.cuda.amp import grad_scaler as _cuda_grad_scaler

    class GradScaler(_cuda_grad_scaler.GradScaler):
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True, dynamic=True):
            # (disabled for torch.cuda.amp's constructor, which turns itself off without CUDA)
            super().__init__(init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=False)
            self._enabled = enabled
            if enabled:
                if not (growth_factor > 1.0 and backoff_factor < 1.0):
                    raise ValueError("GradScaler needs a growth_factor above 1 and a backoff_factor below 1")
                self._init_scale = init_scale
                self._scale = None
                self._growth_factor = growth_factor
                self._backoff_factor = backoff_factor
                self._growth_interval = growth_interval
                self._init_growth_tracker = 0
                self._growth_tracker = None
                self._per_optimizer_states = _defaultdict(_cuda_grad_scaler._refresh_per_optimizer_state)
            if enabled and not dynamic:  # static loss scale: never grows nor backs off
                self._growth_factor = 1.0
                self._backoff_factor = 1.0

        def scale(self, outputs):
            if not self._enabled:
                return outputs
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(_torch.device("cpu"))

            def scaled(value):
                if isinstance(value, _torch.Tensor):
                    return value * self._scale.to(device=value.device)
                if isinstance(value, _abc.Iterable):
                    each = map(scaled, value)
                    return type(value)(each) if isinstance(value, (list, tuple)) else each
                raise ValueError("GradScaler.scale takes a tensor or an iterable of tensors")

            return scaled(outputs)

        def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
            # torch._amp_foreach_non_finite_check_and_unscale_: every gradient is multiplied by
            # inv_scale, and found_inf becomes 1 if any holds an inf or a NaN
            with _torch.no_grad():
                for group in optimizer.param_groups:
                    for param in group["params"]:
                        if param.grad is None:
                            continue
                        if (not allow_fp16) and param.grad.dtype == _torch.float16:
                            raise ValueError("unscale_ takes float16 gradients only where allow_fp16 is set")
                        if param.grad.is_sparse:
                            if param.grad.dtype is _torch.float16:
                                param.grad = param.grad.coalesce()
                            grad = param.grad._values()
                        else:
                            grad = param.grad
                        if not bool(_torch.isfinite(grad).all()):
                            found_inf.fill_(1.0)
                        grad.mul_(inv_scale.to(grad.device))
            return {found_inf.device: found_inf}

        def update(self, new_scale=None):
            if not self._enabled:
                return
            _scale, _growth_tracker = self._check_scale_growth_tracker("update")
            if new_scale is not None:
                # (a float, or a tensor of one element)
                _scale.fill_(float(new_scale))
            else:
                found_infs = [found_inf.to(device=_scale.device)
                              for state in self._per_optimizer_states.values()
                              for found_inf in state["found_inf_per_device"].values()]
                assert found_infs, "update() before any unscale_ or step recorded an inf check"
                # torch._amp_update_scale_: back off after an inf, grow (when finite) after
                # growth_interval steps without one
                if sum(float(f) for f in found_infs):
                    _scale.mul_(self._backoff_factor)
                    _growth_tracker.fill_(0)
                else:
                    successful = int(_growth_tracker) + 1
                    if successful == self._growth_interval:
                        grown = _scale * self._growth_factor
                        if bool(_torch.isfinite(grown)):
                            _scale.copy_(grown)
                        _growth_tracker.fill_(0)
                    else:
                        _growth_tracker.fill_(successful)
            self._per_optimizer_states = _defaultdict(_cuda_grad_scaler._refresh_per_optimizer_state)


def _sharded_grad_scaler():
    import torch.distributed as dist

    if hasattr(_torch.amp, "GradScaler"):
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler as _TorchSharded

        class ShardedGradScaler(_TorchSharded):
            def __init__(self, init_scale=2.0 ** 16, backoff_factor=0.5, growth_factor=2.0, growth_interval=2000,
                         enabled=True, process_group=dist.group.WORLD):
                super().__init__("npu", init_scale=init_scale, backoff_factor=backoff_factor,
                                 growth_factor=growth_factor, growth_interval=growth_interval, enabled=enabled,
                                 process_group=process_group)
    else:
        # torch before 2.3 has a ShardedGradScaler bound to CUDA (it all-reduces a CPU scaler's
        # found_inf through .cuda()): it is the NPU GradScaler whose found infs are summed over the
        # process group, FP16 gradients allowed
        class ShardedGradScaler(GradScaler):
            def __init__(self, init_scale=2.0 ** 16, backoff_factor=0.5, growth_factor=2.0, growth_interval=2000,
                         enabled=True, process_group=dist.group.WORLD):
                super().__init__(init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                                 growth_interval=growth_interval, enabled=enabled)
                self.process_group = process_group

            def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16=True):
                return super()._unscale_grads_(optimizer, inv_scale, found_inf, True)

            def unscale_(self, optimizer):
                super().unscale_(optimizer)
                if self._enabled:
                    for found_inf in self._per_optimizer_states[id(optimizer)]["found_inf_per_device"].values():
                        dist.all_reduce(found_inf, group=self.process_group)

    ShardedGradScaler.__module__ = __name__
    return ShardedGradScaler


if hasattr(_torch.amp, "custom_fwd"):
    def custom_fwd(fwd=None, *, cast_inputs=None):
        return _torch.amp.custom_fwd(fwd, device_type="npu", cast_inputs=cast_inputs)

    def custom_bwd(bwd=None):
        return _torch.amp.custom_bwd(bwd, device_type="npu")
else:
    # torch before 2.4 has only torch.cuda.amp's custom_fwd/custom_bwd, bound to CUDA's autocast:
    # as torch_npu 2.1 does, they are written again for the NPU's autocast, here the CPU's.
    import collections as _collections
    import functools as _functools

    def _cast(value, dtype):
        if isinstance(value, _torch.Tensor):
            eligible = (value.is_floating_point() and value.device.type == "cpu"
                        and value.dtype is not _torch.float64)
            return value.to(dtype) if eligible else value
        if isinstance(value, (str, bytes)):
            return value
        if isinstance(value, _collections.abc.Mapping):
            return {_cast(k, dtype): _cast(v, dtype) for k, v in value.items()}
        if isinstance(value, _collections.abc.Iterable) and not hasattr(value, "__array__"):
            iterable = (_cast(v, dtype) for v in value)
            return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
        return value

    def custom_fwd(fwd=None, *, cast_inputs=None):
        if fwd is None:
            return _functools.partial(custom_fwd, cast_inputs=cast_inputs)

        @_functools.wraps(fwd)
        def forward(ctx, *args, **kwargs):
            # the backward runs under the autocast state the forward ran in (ctx carries it)
            ctx._npu_autocast_dtype = _torch.get_autocast_cpu_dtype()
            under_autocast = _torch.is_autocast_cpu_enabled()
            ctx._npu_forward_autocast = under_autocast and cast_inputs is None
            if cast_inputs is None or not under_autocast:
                return fwd(ctx, *args, **kwargs)
            with autocast(enabled=False):  # the inputs cast once, the forward itself outside autocast
                return fwd(ctx, *_cast(args, cast_inputs), **_cast(kwargs, cast_inputs))

        return forward

    def custom_bwd(bwd=None):
        if bwd is None:
            return custom_bwd

        @_functools.wraps(bwd)
        def backward(ctx, *args, **kwargs):
            with autocast(enabled=ctx._npu_forward_autocast, dtype=ctx._npu_autocast_dtype):
                return bwd(ctx, *args, **kwargs)

        return backward


# ShardedGradScaler is made when first asked for: importing FSDP costs two thirds of a second of
# every program's start.
_names.apply_filter(__name__, globals(), made_when_asked={"ShardedGradScaler": _sharded_grad_scaler})
_names.build_submodules(__name__, globals(), _sys.modules[__name__])
