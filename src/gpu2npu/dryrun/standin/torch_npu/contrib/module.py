"""``torch_npu.contrib.module`` stand-in: the modules gpu2npu's advice names, computing what
torch_npu documents with torch on the CPU; the others fail as not imitated."""

import torch as _torch

from .. import _names


class NpuDropPath(_torch.nn.Module):
    """Stochastic depth: in training, each sample's residual branch is dropped with probability
    `drop_prob` and the kept ones scaled by 1 / (1 - drop_prob)."""

    def __init__(self, drop_prob=None):
        super().__init__()
        self.drop_prob = drop_prob or 0.0

    def forward(self, x):
        if not self.training or self.drop_prob == 0.0:
            return x
        keep = 1.0 - self.drop_prob
        mask = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(keep)
        return x * mask / keep


SiLU = _torch.nn.SiLU
Swish = _torch.nn.SiLU
Mish = _torch.nn.Mish


_names.apply_filter(__name__, globals())
_missing_name = globals()["__getattr__"]


def __getattr__(name):
    """ROIAlign is torchvision's RoIAlign where torchvision is installed; the rest fail as missing."""
    if name == "ROIAlign":
        try:
            from torchvision.ops import RoIAlign

            return RoIAlign
        except ImportError:
            pass
    return _missing_name(name)
