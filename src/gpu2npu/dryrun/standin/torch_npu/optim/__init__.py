"""``torch_npu.optim`` imitation: the NpuFused optimizers, which torch_npu documents as fused versions
of Adam, AdamW, SGD, RMSprop, Adadelta, AdamP, LAMB, BERT's Adam and TensorFlow-style RMSprop (same
update rule, the parameters of a group combined into one buffer per dtype on the NPU).  On the CPU,
Adam, AdamW, SGD, RMSprop and Adadelta are the torch optimizers of the same algorithm and arguments;
AdamP, LAMB, BertAdam and RMSpropTF, which torch lacks, are written out here parameter by parameter
(the same arithmetic: what acts on a combined buffer element by element acts on each parameter so;
the norms a fused step takes over a combined buffer are taken over the same parameters).  Each has
exactly the signature torch_npu's data lists (a keyword torch_npu does not take is a TypeError), the
parameter dtypes torch_npu takes (float32 and float16: a bfloat16 parameter is refused, as the fused
optimizers refuse it), and `clip_grad_norm_fused_`, their clipping of all the optimizer's gradients.
The modules `npu_fused_adam`, ... hold each class, as in torch_npu."""
import math as _math
import sys as _sys
import types as _types

import torch as _torch
from torch.optim.optimizer import required as _required

from .. import _names


def _check_dtypes(groups):
    """At a step, as torch_npu combines the parameters with gradients by dtype: a frozen parameter of
    another dtype is never combined."""
    for group in groups:
        for p in group["params"]:
            if p.grad is not None and p.dtype not in (_torch.float32, _torch.float16):
                raise TypeError(f"Fused optimizer's parameters must be either float32 or float16, but received "
                                f"{p.dtype} (CPU imitation of torch_npu, gpu2npu dryrun)")


def _required_lr(lr):
    if lr is _required:
        raise ValueError("parameter group didn't specify a value of required optimization parameter lr")
    return lr


def _norm(grads):
    """The 2-norm of `grads` together, in float32 (as the fused optimizers take it over a combined buffer)."""
    return _torch.stack([grad.float().pow(2).sum() for grad in grads]).sum().sqrt()


class _Fused:
    """What every fused optimizer adds to the torch optimizer of its algorithm."""

    def step(self, closure=None):
        _check_dtypes(self.param_groups)
        return super().step(closure)

    def clip_grad_norm_fused_(self, max_norm, norm_type=2):
        """Clip the gradients of all the optimizer's parameters together (their total norm)."""
        grads = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        return _torch.nn.utils.clip_grad_norm_(grads, max_norm, norm_type)


class NpuFusedOptimizerBase(_Fused, _torch.optim.Optimizer):
    """The base of the fused optimizers: `step` runs the subclass's `_group_step(index)` on each
    parameter group, without gradients recorded."""

    @_torch.no_grad()
    def step(self, closure=None):
        _check_dtypes(self.param_groups)
        loss = None
        if closure is not None:
            with _torch.enable_grad():
                loss = closure()
        for index in range(len(self.param_groups)):
            self._group_step(index)
        return loss

    def _group_step(self, group_index):
        raise NotImplementedError("a subclass of NpuFusedOptimizerBase defines _group_step "
                                  "(CPU imitation of torch_npu, gpu2npu dryrun)")

    def _with_grads(self, group):
        for p in group["params"]:
            if p.grad is not None:
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                yield p, self.state[p]

    @staticmethod
    def _moments(state, p, grad, beta1, beta2):
        """Adam's moving averages of the gradient and its square, one step on (state made at the first)."""
        if not state:
            state.update(step=0, exp_avg=_torch.zeros_like(p), exp_avg_sq=_torch.zeros_like(p))
        state["step"] += 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        return exp_avg, exp_avg_sq


class NpuFusedAdam(_Fused, _torch.optim.Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=False)


class NpuFusedAdamW(_Fused, _torch.optim.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=False)


class NpuFusedSGD(_Fused, _torch.optim.SGD):
    def __init__(self, params, lr=_required, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False):
        super().__init__(params, lr=_required_lr(lr), momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov, foreach=False)


class NpuFusedRMSprop(_Fused, _torch.optim.RMSprop):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered, foreach=False)


class NpuFusedAdadelta(_Fused, _torch.optim.Adadelta):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=False)


class NpuFusedAdamP(NpuFusedOptimizerBase):
    """AdamP (Heo et al., 2021): Adam whose update of a weight matrix loses its component along the
    weight where the gradient is nearly orthogonal to it (channel-wise, then layer-wise), and whose
    weight decay is then scaled by `wd_ratio`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, delta=0.1, wd_ratio=0.1,
                 nesterov=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, delta=delta,
                                      wd_ratio=wd_ratio, nesterov=nesterov))

    @staticmethod
    def _cosine(x, y, eps, view):
        x, y = view(x), view(y)
        return (x * y).sum(dim=1).abs() / x.norm(dim=1).add_(eps) / y.norm(dim=1).add_(eps)

    def _projection(self, p, grad, perturb, delta, wd_ratio, eps):
        expand = [-1] + [1] * (p.dim() - 1)
        for view in (lambda x: x.reshape(x.size(0), -1), lambda x: x.reshape(1, -1)):
            if self._cosine(grad, p, eps, view).max() < delta / _math.sqrt(view(p).size(1)):
                unit = p / view(p).norm(dim=1).view(expand).add_(eps)
                return perturb - unit * view(unit * perturb).sum(dim=1).view(expand), wd_ratio
        return perturb, 1

    def _group_step(self, group_index):
        group = self.param_groups[group_index]
        beta1, beta2 = group["betas"]
        for p, state in self._with_grads(group):
            grad = p.grad
            exp_avg, exp_avg_sq = self._moments(state, p, grad, beta1, beta2)
            denom = (exp_avg_sq.sqrt() / _math.sqrt(1 - beta2 ** state["step"])).add_(group["eps"])
            step_size = group["lr"] / (1 - beta1 ** state["step"])
            if group["nesterov"]:
                perturb = (beta1 * exp_avg + (1 - beta1) * grad) / denom
            else:
                perturb = exp_avg / denom
            wd_ratio = 1
            if p.dim() > 1:
                perturb, wd_ratio = self._projection(p, grad, perturb, group["delta"], group["wd_ratio"], group["eps"])
            if group["weight_decay"] > 0:
                p.mul_(1 - group["lr"] * group["weight_decay"] * wd_ratio)
            p.add_(perturb, alpha=-step_size)


class NpuFusedLamb(NpuFusedOptimizerBase):
    """LAMB (You et al., 2020): an Adam step without bias correction, plus weight decay, scaled per
    parameter by the trust ratio ||w|| / ||step|| (||w|| clamped to [0, 10]; 1 where either norm is
    0, and always with adam=True); with use_global_grad_norm, gradients are first divided by their
    global norm where it exceeds 1."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, adam=False,
                 use_global_grad_norm=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.adam = adam
        self.use_global_grad_norm = use_global_grad_norm
        self.global_grad_norm = _torch.ones(1)

    @_torch.no_grad()
    def step(self, closure=None):
        if self.use_global_grad_norm:
            grads = [p.grad for group in self.param_groups for p in group["params"] if p.grad is not None]
            self.global_grad_norm = _norm(grads) if grads else _torch.zeros(())
        return super().step(closure)

    def _group_step(self, group_index):
        group = self.param_groups[group_index]
        beta1, beta2 = group["betas"]
        for p, state in self._with_grads(group):
            grad = p.grad
            if self.global_grad_norm.item() > 1:
                grad = grad / self.global_grad_norm.to(grad.dtype)
            exp_avg, exp_avg_sq = self._moments(state, p, grad, beta1, beta2)
            adam_step = exp_avg / exp_avg_sq.sqrt().add(group["eps"])
            if group["weight_decay"] != 0:
                adam_step.add_(p, alpha=group["weight_decay"])
            trust_ratio = 1.0
            if not self.adam:
                weight_norm = p.pow(2).sum().sqrt().clamp(0, 10)
                adam_norm = adam_step.pow(2).sum().sqrt()
                if weight_norm != 0 and adam_norm != 0:
                    trust_ratio = (weight_norm / adam_norm).item()
            p.add_(adam_step, alpha=-group["lr"] * trust_ratio)


def _warmup_cosine(x, warmup=0.002):
    return x / warmup if x < warmup else 0.5 * (1.0 + _math.cos(_math.pi * x))


def _warmup_constant(x, warmup=0.002):
    return x / warmup if x < warmup else 1.0


def _warmup_linear(x, warmup=0.002):
    return x / warmup if x < warmup else max((x - 1.0) / (warmup - 1.0), 0.0)


def _warmup_poly(x, warmup=0.002, degree=0.5):
    return x / warmup if x < warmup else (1.0 - x) ** degree


_SCHEDULES = {"warmup_cosine": _warmup_cosine, "warmup_constant": _warmup_constant, "warmup_linear": _warmup_linear,
              "warmup_poly": _warmup_poly}


class NpuFusedBertAdam(NpuFusedOptimizerBase):
    """BERT's Adam: no bias correction, weight decay added to the update, the learning rate scheduled
    over t_total steps after a warmup fraction, and the gradients of each group's parameters of one
    dtype clipped together to max_grad_norm first (the fused buffer's norm)."""

    def __init__(self, params, lr=_required, warmup=-1, t_total=-1, schedule="warmup_linear",
                 b1=0.9, b2=0.999, e=1e-6, weight_decay=0.01, max_grad_norm=1.0):
        if lr is not _required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr} - should be >= 0.0")
        if schedule not in _SCHEDULES:
            raise ValueError(f"Invalid schedule parameter: {schedule}")
        if not 0.0 <= warmup < 1.0 and warmup != -1:
            raise ValueError(f"Invalid warmup: {warmup} - should be in [0.0, 1.0[ or -1")
        if not 0.0 <= b1 < 1.0 or not 0.0 <= b2 < 1.0:
            raise ValueError(f"Invalid b1 or b2 parameter: {b1}, {b2} - should be in [0.0, 1.0[")
        if not e >= 0.0:
            raise ValueError(f"Invalid epsilon value: {e} - should be >= 0.0")
        super().__init__(params, dict(lr=lr, schedule=schedule, warmup=warmup, t_total=t_total, b1=b1, b2=b2, e=e,
                                      weight_decay=weight_decay, max_grad_norm=max_grad_norm))
        self.max_grad_norm = max_grad_norm

    def _group_step(self, group_index):
        group = self.param_groups[group_index]
        with_grads = list(self._with_grads(group))
        if self.max_grad_norm > 0:
            for dtype in {p.dtype for p, _ in with_grads}:
                grads = [p.grad for p, _ in with_grads if p.dtype == dtype]
                coefficient = self.max_grad_norm / (_norm(grads) + 1e-6)
                if coefficient < 1.0:
                    for grad in grads:
                        grad.mul_(coefficient.to(grad.dtype))
        for p, state in with_grads:
            exp_avg, exp_avg_sq = self._moments(state, p, p.grad, group["b1"], group["b2"])
            update = exp_avg / (exp_avg_sq.sqrt() + group["e"])
            if group["weight_decay"] > 0.0:
                update += group["weight_decay"] * p
            lr = group["lr"]
            if group["t_total"] != -1:  # (scheduled by the steps taken before this one)
                lr = lr * _SCHEDULES[group["schedule"]]((state["step"] - 1) / group["t_total"], group["warmup"])
            p.add_(update, alpha=-lr)


class NpuFusedRMSpropTF(NpuFusedOptimizerBase):
    """RMSprop as TensorFlow has it: the squared average starts at one and eps is inside the square
    root; with momentum, the learning rate is accumulated in the momentum buffer (lr_in_momentum);
    decoupled_decay shrinks the weights instead of adding decay to the gradient."""

    def __init__(self, params, lr=1e-2, alpha=0.9, eps=1e-10, weight_decay=0, momentum=0., centered=False,
                 decoupled_decay=False, lr_in_momentum=True):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, decoupled_decay=decoupled_decay,
                                      lr_in_momentum=lr_in_momentum))

    def _group_step(self, group_index):
        group = self.param_groups[group_index]
        one_minus_alpha = 1.0 - group["alpha"]
        for p, state in self._with_grads(group):
            grad = p.grad
            if not state:
                state.update(step=0, square_avg=_torch.ones_like(p))
                if group["momentum"] > 0:
                    state["momentum_buffer"] = _torch.zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = _torch.zeros_like(p)
            state["step"] += 1
            if group["weight_decay"] != 0:
                if group["decoupled_decay"]:
                    p.add_(p, alpha=-group["weight_decay"])
                else:
                    grad = grad.add(p, alpha=group["weight_decay"])
            square_avg = state["square_avg"]
            square_avg.add_(grad.pow(2) - square_avg, alpha=one_minus_alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"]
                grad_avg.add_(grad - grad_avg, alpha=one_minus_alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).add(group["eps"]).sqrt_()
            else:
                avg = square_avg.add(group["eps"]).sqrt_()
            if group["momentum"] > 0:
                buf = state["momentum_buffer"]
                if group["lr_in_momentum"]:
                    buf.mul_(group["momentum"]).addcdiv_(grad, avg, value=group["lr"])
                    p.add_(-buf)
                else:
                    buf.mul_(group["momentum"]).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-group["lr"])
            else:
                p.addcdiv_(grad, avg, value=-group["lr"])


def _class_modules():
    """torch_npu.optim.npu_fused_adam, ...: the module of each class, as the package has them."""
    for module_name, class_name in (
            ("npu_fused_optim_base", "NpuFusedOptimizerBase"), ("npu_fused_sgd", "NpuFusedSGD"),
            ("npu_fused_adadelta", "NpuFusedAdadelta"), ("npu_fused_lamb", "NpuFusedLamb"),
            ("npu_fused_adam", "NpuFusedAdam"), ("npu_fused_adamw", "NpuFusedAdamW"),
            ("npu_fused_adamp", "NpuFusedAdamP"), ("npu_fused_bert_adam", "NpuFusedBertAdam"),
            ("npu_fused_rmsprop", "NpuFusedRMSprop"), ("npu_fused_rmsprop_tf", "NpuFusedRMSpropTF")):
        module = _types.ModuleType(f"{__name__}.{module_name}")
        module.__dict__.update({class_name: globals()[class_name], "__all__": [class_name]})
        _sys.modules[module.__name__] = module
        globals()[module_name] = module


_class_modules()

_names.apply_filter(__name__, globals())
