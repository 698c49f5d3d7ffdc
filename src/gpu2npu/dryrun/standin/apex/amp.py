"""``apex.amp`` stand-in: the API that ``gpu2npu -a`` writes, run on the CPU.

* ``initialize(models, optimizers, enabled=True, opt_level=..., loss_scale=...)``
  returns its arguments unchanged: nothing is cast (O1/O2 casting needs an
  accelerator), so results stay those of float32 training.  With
  ``enabled=False`` it is a pass-through and the amp state is left
  uninitialised, as in apex (``state_dict()`` then fails).
* ``scale_loss(loss, optimizer)`` yields ``loss * scale`` and, when the block
  ends, divides the gradients of the optimizer's parameters by the scale, as
  apex does before the step.  The scale is a power of two, so for finite
  gradients this is exact: losses equal float32 training bit for bit.  On an
  overflow the gradients are zeroed, the next ``optimizer.step()`` is skipped
  and the scale halves; after 2000 good steps it doubles (apex's dynamic
  scaler).  ``loss_scale=<number>`` is a static scale.
* ``master_params(optimizer)`` yields the parameters the optimizer steps.
* ``state_dict()`` / ``load_state_dict()`` hold ``{"loss_scaler0": {"loss_scale",
  "unskipped"}}``; other keys are refused, as apex refuses them.
"""

import contextlib
import math

_state = {}


def initialize(models, optimizers=None, enabled=True, opt_level="O1", loss_scale=None, **_options):
    _state.clear()
    _state["enabled"] = bool(enabled)
    if enabled:
        dynamic = loss_scale in (None, "dynamic")
        _state["scalers"] = [{"scale": 2.0 ** 16 if dynamic else float(loss_scale), "dynamic": dynamic,
                              "unskipped": 0}]
        _state["opt_level"] = opt_level
    return models if optimizers is None else (models, optimizers)


def _parameters(optimizer):
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            yield parameter


def master_params(optimizer):
    return _parameters(optimizer)


def _skip_next_step(optimizer):
    step = optimizer.step

    def skipped(*args, **kwargs):
        optimizer.step = step

    optimizer.step = skipped


@contextlib.contextmanager
def scale_loss(loss, optimizers, loss_id=0):
    if "enabled" not in _state:
        raise RuntimeError("Invoked 'with amp.scale_loss', but internal Amp state has not been initialized.")
    if not _state["enabled"]:
        yield loss
        return
    scaler = _state["scalers"][loss_id]
    yield loss * scaler["scale"]
    for optimizer in optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]:
        grads = [p.grad for p in _parameters(optimizer) if p.grad is not None]
        overflow = any(not bool(g.isfinite().all()) for g in grads)
        if overflow and scaler["dynamic"]:
            for grad in grads:
                grad.zero_()
            _skip_next_step(optimizer)
            scaler["scale"] /= 2.0
            scaler["unskipped"] = 0
            continue
        for grad in grads:
            grad.div_(scaler["scale"])
    if scaler["dynamic"]:
        scaler["unskipped"] += 1
        if scaler["unskipped"] == 2000:
            scaler["scale"] *= 2.0
            scaler["unskipped"] = 0


def state_dict(destination=None):
    destination = {} if destination is None else destination
    for index, scaler in enumerate(_state["scalers"]):  # KeyError when amp is disabled, as apex fails
        destination[f"loss_scaler{index}"] = {"loss_scale": scaler["scale"], "unskipped": scaler["unskipped"]}
    return destination


def load_state_dict(state):
    unexpected = [key for key in state if "loss_scaler" not in key]
    if unexpected:
        raise RuntimeError(f"Error(s) in loading state_dict. Unexpected key(s) in state_dict: {unexpected}.")
    for index, key in enumerate(k for k in state if "loss_scaler" in k):
        value = state[key]
        if not math.isfinite(value["loss_scale"]):
            raise ValueError("loss scale must be finite")
        _state["scalers"][index]["scale"] = value["loss_scale"]
        _state["scalers"][index]["unskipped"] = value["unskipped"]
