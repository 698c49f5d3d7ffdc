"""apex's FusedRMSNorm -> the generated ascend_apex package (torch_npu.npu_rms_norm)."""
from __future__ import annotations

from .base import Example
from .placement import top_folder_on_sys_path
from .reroute import RerouteToGenerated, comment_line

PACKAGE = "ascend_apex"
SHORT = "apex normalization on the NPU"
_NORMALIZATION = frozenset({"FusedRMSNorm", "FusedLayerNorm"})


class ApexRmsNormToNpu(RerouteToGenerated):
    """apex's `FusedRMSNorm` is a CUDA kernel; torch_npu has the same computation as one NPU
    kernel, `torch_npu.npu_rms_norm`.  A file that uses nothing of apex but its normalization
    modules (`from apex.normalization import FusedRMSNorm, FusedLayerNorm`, `import
    apex.normalization`) imports the generated `ascend_apex` package instead, written at the top of
    the output when used: `FusedRMSNorm` with apex's arguments, defaults (eps=1e-5) and `weight`
    parameter on npu_rms_norm, `FusedLayerNorm` as torch.nn.LayerNorm with apex's constructor.
    A statement importing only FusedLayerNorm goes to torch.nn directly (NPU262).
    `MixedFusedRMSNorm` (its output dtype follows the weight), apex's optimizers, amp and parallel
    keep the file on apex, reported.
    """

    ROOT = "apex"
    PACKAGE = PACKAGE
    PROVIDED = {"apex": frozenset({"normalization"}), "apex.normalization": _NORMALIZATION}
    FILES = ("__init__.py", "normalization.py")
    WHAT = "apex's FusedRMSNorm on torch_npu.npu_rms_norm"
    SHORT = SHORT

    code = "NPU265"
    summary = "apex FusedRMSNorm -> generated ascend_apex on torch_npu.npu_rms_norm"
    triggers = ("apex",)
    examples = (
        Example(
            "import torch\nfrom apex.normalization import FusedRMSNorm\n\nnorm = FusedRMSNorm(4096, eps=1e-6)\n",
            "import torch\nimport os\nimport sys\n\n" + comment_line(PACKAGE, SHORT) + "\n"
            + top_folder_on_sys_path("example.py")
            + "from ascend_apex.normalization import FusedRMSNorm\n\nnorm = FusedRMSNorm(4096, eps=1e-6)\n",
        ),
    )
    unchanged = (
        "from apex.normalization import FusedRMSNorm\nfrom apex import amp\n",
        "from apex.normalization import MixedFusedRMSNorm\n",
    )
