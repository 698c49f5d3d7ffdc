"""CPU imitation of Huawei's ``torch_npu``, for ``gpu2npu dryrun`` (and gpu2npu's tests).

With its folder (gpu2npu/dryrun/standin) first on PYTHONPATH, ``import torch_npu`` makes the
"npu" device usable on a CPU-only machine by running everything on the CPU.  It is no torch_npu:
it imports only under that name, in a process that gpu2npu dryrun (or a test) started.

Design (torch 2.13):

* ``torch.utils.rename_privateuse1_backend("npu")`` makes "npu", "npu:1",
  ``torch.device("npu", 0)`` valid devices of type "npu".  Python PrivateUse1
  hooks reporting "not available" are registered so that C++-side accelerator
  queries (``dist.barrier``, DataLoader) keep choosing the CPU instead of
  raising, and ``torch_npu.npu`` is registered as ``torch.npu``.
* No tensor is ever allocated on the npu device.  Every entry point that
  receives a device maps an npu device - or a bare int index, which with real
  torch_npu means ``npu:<i>`` - to ``cpu``: ``Tensor.to/npu/new_*``,
  ``Module.to/npu/to_empty``, the ``torch.*`` factory functions (``device=``),
  ``torch.set_default_device``, ``torch.load(map_location=...)``,
  ``torch.Generator(device=...)``, ``autocast``/``GradScaler``/``custom_fwd``
  with device "npu".  ``Tensor.to("npu")`` of a CPU tensor therefore returns
  the tensor itself, exactly as ``.to("cpu")`` would: results are bitwise the
  ones of the same program run with device "cpu".
* ``x.is_npu`` is True for CPU tensors; ``x.device`` reports ``cpu``.
  ``pin_memory()`` returns a copy.  DataLoader ``pin_memory=True`` works.
* NPU autocast is CPU autocast (dtype None -> bfloat16, CPU's default);
  ``STANDIN_AUTOCAST=off`` disables it instead.  NPU GradScaler is
  ``torch.amp.GradScaler("cpu")``; ``enabled=False`` is a pass-through.
* The NPU RNG (``torch.npu.manual_seed`` ...) is a separate generator that
  nothing draws from, like ``torch.cuda.manual_seed`` without CUDA.
* ``torch.distributed``: backend "hccl" is registered and creates a Gloo
  process group; ``dist.is_hccl_available()`` is True; DDP drops
  ``device_ids``/``output_device`` that name NPUs.
* CUDA is untouched: ``.cuda()``, ``device="cuda"`` still fail as on CPU torch.
* Env: ``STANDIN_NPU_COUNT`` (device_count, default 1),
  ``STANDIN_TORCH_NPU_DATA`` (JSON of real names: unlisted names are hidden),
  ``STANDIN_AUTOCAST`` (``cpu`` default, or ``off``).
"""

import os as _os

if __name__ != "torch_npu" or not _os.environ.get("GPU2NPU_DRYRUN"):
    raise ImportError("this is gpu2npu dryrun's CPU imitation of torch_npu, not torch_npu: it loads only in the "
                      "processes that `gpu2npu dryrun` starts")

import torch as _torch  # noqa: F401,E402  (real torch_npu requires torch first)

from . import _conv, _fused, _names, _ops, _patch
from . import npu
from . import optim
from . import profiler
from . import contrib
from . import distributed
from ._conv import *  # noqa: F401,F403
from ._fused import *  # noqa: F401,F403
from ._ops import *  # noqa: F401,F403

__version__ = "2.13.0.standin"
IS_STANDIN = True

_patch.install(npu)

_names.apply_filter(__name__, globals(), judged={*_conv.__all__, *_fused.__all__, *_ops.__all__})
