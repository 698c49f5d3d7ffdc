"""apex's fused normalization modules, optimizers and parallel wrappers on Ascend NPUs, written by
gpu2npu into a migrated project.

The migrated code imports this package where it imported `apex` for these parts only:
`normalization.FusedRMSNorm` runs torch_npu.npu_rms_norm, `normalization.FusedLayerNorm` is
torch.nn.LayerNorm with apex's constructor, `optimizers.FusedAdam/FusedSGD/FusedAdagrad` are the
torch.optim optimizers of the same algorithms with apex's constructors,
`parallel.DistributedDataParallel/SyncBatchNorm/convert_syncbn_model` are torch's with apex's.
"""
from . import normalization, optimizers, parallel

__all__ = ["normalization", "optimizers", "parallel"]
