"""apex's fused normalization modules on Ascend NPUs, written by gpu2npu into a migrated project.

The migrated code imports this package where it imported `apex` for its normalization modules
only: `normalization.FusedRMSNorm` runs torch_npu.npu_rms_norm, `normalization.FusedLayerNorm` is
torch.nn.LayerNorm with apex's constructor.
"""
from . import normalization

__all__ = ["normalization"]
