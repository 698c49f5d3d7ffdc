"""``torch_npu.npu.amp`` stand-in: autocast / GradScaler that run the CPU versions.

* ``autocast(enabled=True, dtype=None, cache_enabled=True)`` is
  ``torch.autocast("cpu", ...)`` (dtype None -> CPU's default, bfloat16).
  With ``STANDIN_AUTOCAST=off`` every NPU autocast is disabled instead.
* ``GradScaler(...)`` is ``torch.amp.GradScaler("cpu", ...)``; with
  ``enabled=False`` it is an exact pass-through.
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


class GradScaler(_torch.amp.GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True, dynamic=True):
        super().__init__("npu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
        if not dynamic:  # static loss scale: never grows nor backs off
            self._growth_factor = 1.0
            self._backoff_factor = 1.0


def _sharded_grad_scaler():
    import torch.distributed as dist
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler as _TorchSharded

    class ShardedGradScaler(_TorchSharded):
        def __init__(self, init_scale=2.0 ** 16, backoff_factor=0.5, growth_factor=2.0, growth_interval=2000,
                     enabled=True, process_group=dist.group.WORLD):
            super().__init__("npu", init_scale=init_scale, backoff_factor=backoff_factor,
                             growth_factor=growth_factor, growth_interval=growth_interval, enabled=enabled,
                             process_group=process_group)

    ShardedGradScaler.__module__ = __name__
    return ShardedGradScaler


def custom_fwd(fwd=None, *, cast_inputs=None):
    return _torch.amp.custom_fwd(fwd, device_type="npu", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return _torch.amp.custom_bwd(bwd, device_type="npu")


# ShardedGradScaler is made when first asked for: importing FSDP costs two thirds of a second of
# every program's start.
_names.apply_filter(__name__, globals(), made_when_asked={"ShardedGradScaler": _sharded_grad_scaler})
_names.build_submodules(__name__, globals(), _sys.modules[__name__])
