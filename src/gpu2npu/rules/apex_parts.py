"""apex's normalization modules, optimizers and parallel wrappers -> the generated ascend_apex package."""
from __future__ import annotations

from ..knowledge.generated_packages import PROVIDED as GENERATED
from .base import Example
from .placement import top_folder_on_sys_path
from .reroute import RerouteToGenerated, comment_line

PACKAGE = "ascend_apex"
SHORT = "apex normalization, optimizers and parallel on the NPU"


class ApexPartsToGenerated(RerouteToGenerated):
    """apex's `FusedRMSNorm`, `MixedFusedRMSNorm`, `FusedAdam`, `FusedSGD`, `FusedAdagrad` and
    `apex.parallel` are CUDA kernels and NCCL code.  A file that uses nothing of apex but these and
    `FusedLayerNorm` (`from apex.normalization import FusedRMSNorm`, `from apex.optimizers import
    FusedAdam`, `import apex.optimizers`, `from apex.parallel import DistributedDataParallel as
    DDP`) imports the generated `ascend_apex` package instead, written at the top of the output
    when used: `FusedRMSNorm` with apex's arguments, defaults (eps=1e-5) and `weight` parameter on
    torch_npu.npu_rms_norm, `MixedFusedRMSNorm` likewise with the output in the weight's dtype;
    `FusedLayerNorm` as torch.nn.LayerNorm with apex's constructor; the optimizers as the
    torch.optim optimizers of the same algorithms with apex's constructors, defaults and zero_grad
    (FusedAdam: AdamW with adam_w_mode=True, apex's default, Adam with L2 decay otherwise);
    `apex.parallel`'s DistributedDataParallel as torch's with apex's constructor and without buffer
    broadcasts (apex has none), SyncBatchNorm and convert_syncbn_model as torch.nn.SyncBatchNorm's.
    The options torch has no algorithm for (bias_correction=False, wd_after_momentum,
    adagrad_w_mode, master_weights, gradient_average=False, channel_last, fuse_relu) raise
    NotImplementedError at construction.
    A statement importing only FusedLayerNorm goes to torch.nn directly (NPU262).
    FusedLAMB and FusedNovoGrad (no torch optimizer computes them), amp and apex.contrib keep the
    file on apex, reported.
    """

    ROOT = "apex"
    PACKAGE = PACKAGE
    PROVIDED = GENERATED["apex"]
    FILES = ("__init__.py", "normalization.py", "optimizers.py", "parallel.py")
    WHAT = "apex's fused normalization on torch_npu.npu_rms_norm, its optimizers on torch.optim, its parallel on torch"
    WHAT_OF = {"apex.normalization": "apex's FusedRMSNorm and MixedFusedRMSNorm on torch_npu.npu_rms_norm",
               "apex.optimizers": "apex's optimizers as the torch.optim ones of the same algorithms",
               "apex.parallel": "apex's DistributedDataParallel and SyncBatchNorm as torch's"}
    SHORT = SHORT

    code = "NPU265"
    summary = "apex FusedRMSNorm, FusedAdam/SGD/Adagrad, parallel -> generated ascend_apex (npu_rms_norm, torch)"
    triggers = ("apex",)
    examples = (
        Example(
            "import torch\nfrom apex.normalization import FusedRMSNorm\n\nnorm = FusedRMSNorm(4096, eps=1e-6)\n",
            "import torch\nimport os\nimport sys\n\n" + comment_line(PACKAGE, SHORT) + "\n"
            + top_folder_on_sys_path("example.py")
            + "from ascend_apex.normalization import FusedRMSNorm\n\nnorm = FusedRMSNorm(4096, eps=1e-6)\n",
        ),
        Example(
            "import torch\nimport apex\n\ndef build(model):\n"
            "    return apex.optimizers.FusedAdam(model.parameters(), lr=3e-4, weight_decay=0.1)\n",
            "import torch\nimport os\nimport sys\n\n" + comment_line(PACKAGE, SHORT) + "\n"
            + top_folder_on_sys_path("example.py")
            + "import ascend_apex as apex\n\ndef build(model):\n"
            "    return apex.optimizers.FusedAdam(model.parameters(), lr=3e-4, weight_decay=0.1)\n",
        ),
    )
    unchanged = (
        "from apex.normalization import FusedRMSNorm\nfrom apex import amp\n",
        "from apex.optimizers import FusedAdam, FusedLAMB\n",
        "from apex.optimizers import FusedNovoGrad\n",
        "from apex.parallel import DistributedDataParallel\nfrom apex import amp\n",
    )
