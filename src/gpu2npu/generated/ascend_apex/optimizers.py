"""apex.optimizers' FusedAdam, FusedSGD and FusedAdagrad with apex's constructors, on torch.optim.

apex runs these algorithms as CUDA kernels over lists of tensors; torch.optim computes the same
updates and, on the NPU, runs them over lists of tensors too (its foreach path).  Each class takes
apex's arguments in apex's order with apex's defaults and keeps apex's zero_grad.  The arguments
that select an algorithm torch.optim does not have (bias_correction=False, wd_after_momentum=True,
adagrad_w_mode=True, master_weights=True) raise NotImplementedError at construction, naming the
way out.

torch_npu.optim's NpuFusedAdamW/NpuFusedSGD are not used here: they refuse bfloat16 parameters and
zero_grad(set_to_none=True), and step with stale gradients once something replaces the gradient
tensors they combined at the first step (model.zero_grad() sets them to None by default).  Where a
project keeps its parameters in float32/float16 and zeroes gradients only through the optimizer,
they are a further speed-up to try.
"""
import torch

__all__ = ["FusedAdam", "FusedSGD", "FusedAdagrad"]


class _ApexOptions:
    """apex's zero_grad: set_grad_none=True sets gradients to None, otherwise torch's default.
    apex's options are kept through copy.deepcopy and pickle (torch's optimizers keep only their
    defaults, state and groups)."""

    OPTIONS = ("set_grad_none",)

    def __getstate__(self):
        state = super().__getstate__()
        state.update({name: getattr(self, name) for name in self.OPTIONS})
        return state

    def zero_grad(self, set_to_none=None):
        if set_to_none is None and self.set_grad_none:
            set_to_none = True
        if set_to_none is None:
            super().zero_grad()
        else:
            super().zero_grad(set_to_none=set_to_none)


class FusedAdam(_ApexOptions, torch.optim.Optimizer):
    """apex.optimizers.FusedAdam: with adam_w_mode=True (apex's default) the weight decay is
    decoupled from the gradient, as torch.optim.AdamW computes it; with adam_w_mode=False it is
    added to the gradient (L2), as torch.optim.Adam computes it.  An instance is an instance of
    FusedAdam and of the torch optimizer that runs it."""

    OPTIONS = ("adam_w_mode", "set_grad_none")

    def __new__(cls, params=None, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, adam_w_mode=True,
                weight_decay=0.0, amsgrad=False, set_grad_none=True, capturable=False, master_weights=False):
        if cls is FusedAdam:
            cls = _DecoupledFusedAdam if adam_w_mode else _L2FusedAdam
        return torch.optim.Optimizer.__new__(cls)

    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, adam_w_mode=True,
                 weight_decay=0.0, amsgrad=False, set_grad_none=True, capturable=False, master_weights=False):
        if amsgrad:
            raise RuntimeError("FusedAdam does not support the AMSGrad variant.")
        if not bias_correction:
            raise NotImplementedError(
                "FusedAdam(bias_correction=False): torch.optim's Adam always corrects the moment estimates' "
                "bias; keep apex on this line or write the update without the correction")
        if master_weights:
            raise NotImplementedError(
                "FusedAdam(master_weights=True): torch.optim keeps no float32 copy of low-precision parameters; "
                "keep the parameters in float32 and train under torch.autocast instead")
        # capturable (the step count kept on the device, for graph capture) is passed only when
        # set: torch 1.11's Adam does not take it
        extra = {"capturable": True} if capturable else {}
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **extra)
        self.adam_w_mode = adam_w_mode
        self.set_grad_none = set_grad_none


class _DecoupledFusedAdam(FusedAdam, torch.optim.AdamW):
    pass


class _L2FusedAdam(FusedAdam, torch.optim.Adam):
    pass


class FusedSGD(_ApexOptions, torch.optim.SGD):
    """apex.optimizers.FusedSGD: the weight decay is added to the gradient before the momentum, as
    torch.optim.SGD computes it (wd_after_momentum=False, apex's default).  materialize_master_grads
    only concerned apex.amp's float32 master gradients.  lr has no default, as in apex."""

    def __init__(self, params, lr, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, wd_after_momentum=False, materialize_master_grads=True, set_grad_none=False):
        if wd_after_momentum:
            raise NotImplementedError(
                "FusedSGD(wd_after_momentum=True): torch.optim.SGD adds the weight decay before the momentum; "
                "keep apex on this line or add the decay to the update yourself")
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov)
        self.materialize_master_grads = materialize_master_grads
        self.set_grad_none = set_grad_none


class FusedAdagrad(_ApexOptions, torch.optim.Adagrad):
    """apex.optimizers.FusedAdagrad: the weight decay is added to the gradient (L2,
    adagrad_w_mode=False, apex's default), as torch.optim.Adagrad computes it."""

    def __init__(self, params, lr=1e-2, eps=1e-10, weight_decay=0.0, set_grad_none=True, adagrad_w_mode=False):
        if adagrad_w_mode:
            raise NotImplementedError(
                "FusedAdagrad(adagrad_w_mode=True): torch.optim.Adagrad adds the weight decay to the gradient; "
                "keep apex on this line or decay the weights yourself before step()")
        super().__init__(params, lr=lr, weight_decay=weight_decay, eps=eps)
        self.set_grad_none = set_grad_none
