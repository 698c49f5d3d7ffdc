"""torch.cuda.amp -> torch_npu.npu.amp: a kind of NPU101's edit."""
from __future__ import annotations

from .base import Example, Rule


class TorchCudaAmpToNpu(Rule):
    """torch.cuda.amp (`autocast`, `GradScaler`, `custom_fwd`, `custom_bwd`), imported or
    spelled out, is torch_npu.npu.amp: native mixed precision on the NPU, same arguments.

    A kind of NPU101's edit, with a code of its own because it is reviewed differently: it
    decides the precision the model trains in.  float16 with a GradScaler behaves as on CUDA;
    under bfloat16 the scaler has nothing to do.  torch's device-neutral spelling,
    `torch.autocast("cuda")` / `torch.amp.GradScaler("cuda")`, is a device string (NPU103).
    `-a MODEL` converts native AMP to Ascend's apex amp instead (NPU251).
    """

    code = "NPU115"
    recorded_by = "NPU101"
    summary = "torch.cuda.amp (autocast, GradScaler) -> torch_npu.npu.amp"
    names = frozenset({"amp"})
    examples = (
        Example(
            "import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast(dtype=torch.float16):\n"
            "    loss = model(x)\nscaler.scale(loss).backward()\n",
            "import torch\nimport torch_npu\nscaler = torch_npu.npu.amp.GradScaler()\n"
            "with torch_npu.npu.amp.autocast(dtype=torch.float16):\n    loss = model(x)\nscaler.scale(loss).backward()\n",
        ),
        Example(
            "import torch\nfrom torch.cuda.amp import autocast, GradScaler\nscaler = GradScaler()\n",
            # importing torch_npu.npu.amp loads torch_npu: no separate `import torch_npu` needed
            "import torch\nfrom torch_npu.npu.amp import autocast, GradScaler\nscaler = GradScaler()\n",
        ),
    )
    unchanged = (
        "import torch\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n    pass\n",
    )
