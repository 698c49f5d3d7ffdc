"""``torch_npu.contrib.module`` stand-in: each module computes, with torch on the CPU, what
torch_npu documents for it, with the same parameters and buffers (a checkpoint written on the NPU
loads); those without such a meaning are explained (torch_npu/_explained.py) and fail as not
imitated."""

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


def _counting_in_int32(base):
    """`base` (a torch norm class) counting its batches in int32, as torch_npu's fast batch norms
    do (torch counts in int64): the buffer, and so a checkpoint's entry, has that dtype."""

    def __init__(self, *args, **kwargs):
        base.__init__(self, *args, **kwargs)
        if self.track_running_stats:
            self.num_batches_tracked = _torch.tensor(0, dtype=_torch.int32)

    return type(f"Fast{base.__name__}", (base,), {
        "__init__": __init__, "__module__": __name__, "__doc__": f"{base.__name__}, counting batches in int32."})


FastBatchNorm1d = _counting_in_int32(_torch.nn.BatchNorm1d)
FastBatchNorm2d = _counting_in_int32(_torch.nn.BatchNorm2d)
FastBatchNorm3d = _counting_in_int32(_torch.nn.BatchNorm3d)
FastSyncBatchNorm = _counting_in_int32(_torch.nn.SyncBatchNorm)


class LabelSmoothingCrossEntropy(_torch.nn.Module):
    """Cross entropy against label-smoothed one-hot targets: the true class weighs
    1 - smooth_factor, each of the other num_classes - 1 classes smooth_factor / (num_classes - 1);
    the mean over the batch, in float32."""

    def __init__(self, num_classes=1000, smooth_factor=0.):
        super().__init__()
        self.on_value = 1.0 - smooth_factor
        self.off_value = 1.0 * smooth_factor / (num_classes - 1)

    def forward(self, pred, target):
        smoothed = _torch.full_like(pred, self.off_value).scatter_(1, target.long()[:, None], self.on_value)
        loss = -(smoothed * _torch.log_softmax(pred, dim=1)).sum(dim=1)
        return loss.mean(dtype=_torch.float32)


class ChannelShuffle(_torch.nn.Module):
    """Channel shuffle of two inputs (ShuffleNet): x1 and x2 joined on the channels, which are
    then read group-interleaved (channel i of each of the `groups` groups in turn); with
    `split_shuffle` the result comes back as its two halves."""

    def __init__(self, in_channels, groups=2, split_shuffle=True):
        super().__init__()
        self.split_shuffle = split_shuffle
        self.group_len = in_channels // groups
        self.out_channels = _torch.arange(in_channels).reshape(groups, self.group_len).t().flatten()

    def forward(self, x1, x2):
        shuffled = _torch.cat([x1, x2], dim=1).index_select(1, self.out_channels.to(x1.device))
        if self.split_shuffle:
            return shuffled[:, :self.group_len], shuffled[:, self.group_len:]
        return shuffled


class _Dropout(_torch.nn.Dropout):
    """Dropout whose masks torch_npu makes ahead of time on a stream of their own (the values
    are dropout's); `enable_dropout_ensemble(model)` sets that up, which on the CPU is nothing."""

    def __init__(self, p=0.5, module_name=None):
        super().__init__(p)
        self.module_name = module_name

    @classmethod
    def enable_dropout_ensemble(cls, model):
        return None


class NpuFairseqDropout(_Dropout):
    """Dropout (fairseq's FairseqDropout on the NPU)."""


class NpuCachedDropout(_Dropout):
    """Dropout (masks made ahead of time on the NPU)."""


class NpuPreGenDropout(_Dropout):
    """Dropout (masks made ahead of time on the NPU)."""


class DropoutWithByteMask(_torch.nn.Dropout):
    """Dropout (the NPU keeps its mask as bytes; the values are dropout's)."""

    def __init__(self, p=0.5, inplace=False, max_seed=2 ** 10 - 1):
        super().__init__(p, inplace)
        self.max_seed = max_seed


class BiLSTM(_torch.nn.Module):
    """A bidirectional LSTM as two one-way LSTMs (`fw_rnn` over the sequence, `bw_rnn` over it
    reversed), their outputs joined on the features: (seq_len, batch, 2 * hidden_size)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.fw_rnn = _torch.nn.LSTM(input_size, hidden_size, bidirectional=False)
        self.bw_rnn = _torch.nn.LSTM(input_size, hidden_size, bidirectional=False)

    def forward(self, inputs):
        forward, _ = self.fw_rnn(inputs)
        backward, _ = self.bw_rnn(_torch.flip(inputs, [0]))
        return _torch.cat((forward, _torch.flip(backward, [0])), 2)


class Prefetcher:
    """Iterates a loader of (input, target) pairs one batch ahead, each moved to the NPU on a
    stream of its own (on the CPU: moved at once); `next()` gives (None, None) at the end."""

    def __init__(self, loader, stream=None):
        self.loader = iter(loader)
        self.stream = stream
        self._preload()

    def _preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = self.next_target = None
            return
        self.next_input, self.next_target = self.next_input.npu(), self.next_target.npu()

    def next(self):
        batch = self.next_input, self.next_target
        if self.next_target is not None:
            self._preload()
        return batch


# The release's modules of this package, each holding its classes (torch_npu.contrib.module.crossentropy...).
_SUBMODULES = {
    "activations": ("Mish", "SiLU", "Swish"),
    "batchnorm_with_int32_count": ("FastBatchNorm1d", "FastBatchNorm2d", "FastBatchNorm3d", "FastSyncBatchNorm"),
    "bidirectional_lstm": ("BiLSTM",),
    "channel_shuffle": ("ChannelShuffle",),
    "crossentropy": ("LabelSmoothingCrossEntropy",),
    "deform_conv": ("ModulatedDeformConv", "DCNv2"),
    "drop_path": ("NpuDropPath",),
    "ensemble_dropout": ("NpuFairseqDropout", "NpuCachedDropout"),
    "focus": ("Focus",),
    "fusedcolorjitter": ("FusedColorJitter",),
    "linear_a8w8_quant": ("LinearA8W8Quant",),
    "linear_quant": ("LinearQuant",),
    "linear_weight_quant": ("LinearWeightQuant",),
    "multihead_attention": ("MultiheadAttention",),
    "npu_modules": ("DropoutWithByteMask",),
    "prefetcher": ("Prefetcher",),
    "ps_roi_pooling": ("PSROIPool",),
    "quant_conv2d": ("QuantConv2d",),
    "roi_align": ("ROIAlign",),
}

def _from_torchvision(name):
    """ROIAlign is torchvision's RoIAlign, FusedColorJitter torchvision's ColorJitter (the same
    random brightness, contrast, saturation and hue changes, which torch_npu makes in one matrix
    product), made when first asked for where torchvision is installed; without it they fail as
    missing names do."""

    def make():
        try:
            from torchvision.ops import RoIAlign
            from torchvision.transforms import ColorJitter
        except ImportError:
            raise _names.missing(__name__, name) from None
        return RoIAlign if name == "ROIAlign" else ColorJitter

    return make


_MADE_FROM_TORCHVISION = ("ROIAlign", "FusedColorJitter")
_names.apply_filter(__name__, globals(),
                    made_when_asked={name: _from_torchvision(name) for name in _MADE_FROM_TORCHVISION})
_names.package_modules(__name__, globals(), _SUBMODULES)
