"""A CPU reference of apex.optimizers.FusedAdam, written from its documented algorithm (Adam with
bias correction; adam_w_mode=True, the default, decays the weights decoupled from the gradient:
p -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)), in plain tensor arithmetic."""
import torch


class FusedAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, adam_w_mode=True,
                 weight_decay=0.0, amsgrad=False, set_grad_none=True):
        if amsgrad:
            raise RuntimeError("FusedAdam does not support the AMSGrad variant.")
        super().__init__(params, dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps,
                                      weight_decay=weight_decay))
        self.adam_w_mode = adam_w_mode
        self.set_grad_none = set_grad_none

    def zero_grad(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                g = p.grad if self.adam_w_mode else p.grad + group["weight_decay"] * p
                state["m"] = beta1 * state["m"] + (1 - beta1) * g
                state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
                m_hat = state["m"] / (1 - beta1 ** t) if group["bias_correction"] else state["m"]
                v_hat = state["v"] / (1 - beta2 ** t) if group["bias_correction"] else state["v"]
                update = m_hat / (v_hat.sqrt() + group["eps"])
                if self.adam_w_mode:
                    update = update + group["weight_decay"] * p
                p -= group["lr"] * update
