"""bitsandbytes.optim's Adam, AdamW, SGD, RMSprop and Adagrad families on torch.optim.

Each class takes bitsandbytes' arguments in bitsandbytes' order and with its defaults, and is the
torch optimizer of the same algorithm with 32-bit states.  The arguments that only choose how
bitsandbytes stores its states (optim_bits, min_8bit_size, block_wise, is_paged, args) change
nothing here; percentile_clipping other than 100 (adaptive gradient clipping) has no torch
counterpart and raises NotImplementedError.
"""
import warnings

import torch

__all__ = [
    "Adam", "Adam8bit", "Adam32bit", "PagedAdam", "PagedAdam8bit", "PagedAdam32bit",
    "AdamW", "AdamW8bit", "AdamW32bit", "PagedAdamW", "PagedAdamW8bit", "PagedAdamW32bit",
    "SGD", "SGD8bit", "SGD32bit", "RMSprop", "RMSprop8bit", "RMSprop32bit",
    "Adagrad", "Adagrad8bit", "Adagrad32bit",
]

_warned = set()


def _check(name, percentile_clipping, optim_bits):
    if percentile_clipping != 100:
        raise NotImplementedError(
            f"{name}(percentile_clipping={percentile_clipping}): bitsandbytes' adaptive gradient clipping has no "
            "torch counterpart: clip with torch.nn.utils.clip_grad_norm_ before optimizer.step()")
    if (name.endswith("8bit") or optim_bits == 8) and name not in _warned:
        _warned.add(name)
        warnings.warn(f"{name} runs as the 32-bit torch optimizer on the NPU: its state takes about 4x the memory "
                      "of bitsandbytes' 8-bit state", stacklevel=3)


def _adam_family(name, base, weight_decay_default):
    class Optimizer(base):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay_default,
                     amsgrad=False, optim_bits=32, args=None, min_8bit_size=4096, percentile_clipping=100,
                     block_wise=True, is_paged=False):
            _check(name, percentile_clipping, optim_bits)
            super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)

    Optimizer.__name__ = Optimizer.__qualname__ = name
    return Optimizer


def _sgd(name):
    class Optimizer(torch.optim.SGD):
        def __init__(self, params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False, optim_bits=32,
                     args=None, min_8bit_size=4096, percentile_clipping=100, block_wise=True):
            _check(name, percentile_clipping, optim_bits)
            super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                             nesterov=nesterov)

    Optimizer.__name__ = Optimizer.__qualname__ = name
    return Optimizer


def _rmsprop(name):
    class Optimizer(torch.optim.RMSprop):
        def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                     optim_bits=32, args=None, min_8bit_size=4096, percentile_clipping=100, block_wise=True):
            _check(name, percentile_clipping, optim_bits)
            super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                             centered=centered)

    Optimizer.__name__ = Optimizer.__qualname__ = name
    return Optimizer


def _adagrad(name):
    class Optimizer(torch.optim.Adagrad):
        def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                     optim_bits=32, args=None, min_8bit_size=4096, percentile_clipping=100, block_wise=True):
            _check(name, percentile_clipping, optim_bits)
            super().__init__(params, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                             initial_accumulator_value=initial_accumulator_value, eps=eps)

    Optimizer.__name__ = Optimizer.__qualname__ = name
    return Optimizer


# bitsandbytes runs its Adam and AdamW classes with one kernel that decays weights decoupled from
# the gradient, as torch.optim.AdamW does; the classes differ in their weight_decay default (0, 1e-2).
Adam, Adam8bit, Adam32bit, PagedAdam, PagedAdam8bit, PagedAdam32bit = (
    _adam_family(name, torch.optim.AdamW, 0)
    for name in ("Adam", "Adam8bit", "Adam32bit", "PagedAdam", "PagedAdam8bit", "PagedAdam32bit"))
AdamW, AdamW8bit, AdamW32bit, PagedAdamW, PagedAdamW8bit, PagedAdamW32bit = (
    _adam_family(name, torch.optim.AdamW, 1e-2)
    for name in ("AdamW", "AdamW8bit", "AdamW32bit", "PagedAdamW", "PagedAdamW8bit", "PagedAdamW32bit"))
SGD, SGD8bit, SGD32bit = (_sgd(name) for name in ("SGD", "SGD8bit", "SGD32bit"))
RMSprop, RMSprop8bit, RMSprop32bit = (_rmsprop(name) for name in ("RMSprop", "RMSprop8bit", "RMSprop32bit"))
Adagrad, Adagrad8bit, Adagrad32bit = (_adagrad(name) for name in ("Adagrad", "Adagrad8bit", "Adagrad32bit"))
