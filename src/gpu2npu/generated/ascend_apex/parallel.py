"""apex.parallel's DistributedDataParallel, SyncBatchNorm and convert_syncbn_model on torch.

torch's DistributedDataParallel and SyncBatchNorm run on the NPU over HCCL (the process group the
script initialises).  Each name takes apex's arguments in apex's order with apex's defaults; the
arguments that only chose how apex scheduled or bucketed its all-reduce change nothing in the
result and are accepted; the ones that ask for something torch does not compute (gradient_average
=False, channel_last=True, fuse_relu=True) raise NotImplementedError, naming the way out.
"""
import inspect

import torch

# torch 2.13 renamed the switch for the buffer broadcasts before each forward (forward_sync_buffers;
# it still broadcasts them once at construction, when they are the same on every rank anyway)
_NO_BUFFER_BROADCASTS = (
    {"forward_sync_buffers": False}
    if "forward_sync_buffers" in inspect.signature(torch.nn.parallel.DistributedDataParallel.__init__).parameters
    else {"broadcast_buffers": False})

__all__ = ["DistributedDataParallel", "SyncBatchNorm", "convert_syncbn_model"]


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """apex.parallel.DistributedDataParallel as torch's: the parameters are broadcast from rank 0
    at construction and the gradients averaged over the ranks during backward, as apex does.
    apex never broadcasts buffers after construction (each rank keeps its own BatchNorm running
    statistics): no broadcast before each forward keeps that.  The module stays on the device it is on
    (apex has no device_ids).  message_size, delay_allreduce, allreduce_trigger_params,
    retain_allreduce_buffers, num_allreduce_streams, allreduce_communicators and prof chose when
    and in which chunks apex all-reduced; gradient_predivide_factor (and the deprecated
    gradient_average_split_factor) only split the averaging around the all-reduce.  The all-reduce
    runs in the gradients' dtype (allreduce_always_fp32 asked apex to cast half gradients)."""

    def __init__(self, module, message_size=10000000, delay_allreduce=False, shared_param=None,
                 allreduce_trigger_params=None, retain_allreduce_buffers=False, allreduce_always_fp32=False,
                 num_allreduce_streams=1, allreduce_communicators=None, gradient_average=True,
                 gradient_predivide_factor=1.0, gradient_average_split_factor=None, prof=False):
        if shared_param is not None:
            raise ValueError("DistributedDataParallel(shared_param=...): apex refuses this option too; "
                             "leave it out (shared parameters need nothing special)")
        if not gradient_average:
            raise NotImplementedError(
                "DistributedDataParallel(gradient_average=False): torch's DistributedDataParallel averages the "
                "gradients over the ranks; multiply the loss by the world size to get their sum")
        super().__init__(module, **_NO_BUFFER_BROADCASTS)
        self.gradient_average = gradient_average
        self.gradient_predivide_factor = gradient_predivide_factor


class SyncBatchNorm(torch.nn.SyncBatchNorm):
    """apex.parallel.SyncBatchNorm as torch.nn.SyncBatchNorm (same statistics over the ranks, same
    parameters and buffers), with apex's constructor."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, channel_last=False, fuse_relu=False):
        if channel_last:
            raise NotImplementedError(
                "SyncBatchNorm(channel_last=True): torch.nn.SyncBatchNorm normalizes dimension 1 (NCHW); "
                "permute the input to channels-first, or keep apex on this line")
        if fuse_relu:
            raise NotImplementedError(
                "SyncBatchNorm(fuse_relu=True): apply torch.nn.functional.relu to the output instead")
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats, process_group=process_group)
        self.channel_last = channel_last
        self.fuse_relu = fuse_relu


def convert_syncbn_model(module, process_group=None, channel_last=False):
    """apex.parallel.convert_syncbn_model: every BatchNorm*d of `module` becomes a SyncBatchNorm
    with its parameters and running statistics (torch.nn.SyncBatchNorm.convert_sync_batchnorm)."""
    if channel_last:
        raise NotImplementedError(
            "convert_syncbn_model(channel_last=True): torch.nn.SyncBatchNorm normalizes dimension 1 (NCHW); "
            "permute the input to channels-first, or keep apex on this line")
    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(module, process_group)
