"""``torch_npu.optim`` imitation: the NpuFused optimizers torch_npu documents as fused versions of
torch's Adam, AdamW, SGD and RMSprop (same update rule, parameters combined into one buffer on the
NPU).  On the CPU each is the torch optimizer of the same algorithm with the same arguments, with
exactly the signature torch_npu's data lists (a keyword torch_npu does not take is a TypeError), and
the parameter dtypes torch_npu takes (float32 and float16: a bfloat16 parameter is refused, as
torch_npu's fused optimizers refuse it)."""
import torch as _torch

from .. import _names


def _check_dtypes(params):
    for group in params:
        for p in group["params"]:
            if p.dtype not in (_torch.float32, _torch.float16):
                raise TypeError(f"NpuFused optimizers take float32 and float16 parameters, not {p.dtype} "
                                "(CPU imitation of torch_npu, gpu2npu dryrun)")


class NpuFusedAdam(_torch.optim.Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=False)
        _check_dtypes(self.param_groups)


class NpuFusedAdamW(_torch.optim.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=False)
        _check_dtypes(self.param_groups)


class NpuFusedSGD(_torch.optim.SGD):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov, foreach=False)
        _check_dtypes(self.param_groups)


class NpuFusedRMSprop(_torch.optim.RMSprop):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered, foreach=False)
        _check_dtypes(self.param_groups)


_names.apply_filter(__name__, globals())
