"""bitsandbytes' optimizers -> the generated ascend_bitsandbytes package (torch optimizers)."""
from __future__ import annotations

from ..knowledge.generated_packages import PROVIDED as GENERATED
from .base import Example
from .placement import top_folder_on_sys_path
from .reroute import RerouteToGenerated, comment_line

PACKAGE = "ascend_bitsandbytes"
SHORT = "bitsandbytes optimizers on the NPU"

class BitsandbytesOptimizers(RerouteToGenerated):
    """bitsandbytes' optimizers keep 8-bit (or paged) states with CUDA kernels.  A file that uses
    nothing of bitsandbytes but its Adam, AdamW, SGD, RMSprop and Adagrad optimizers
    (`bnb.optim.AdamW8bit`, `PagedAdamW32bit`, ...) imports the generated `ascend_bitsandbytes`
    package instead, written at the top of the output when used: the torch optimizer of the same
    algorithm, with bitsandbytes' arguments and defaults and 32-bit states.  The updates are
    those of the 32-bit algorithm and the optimizer state takes about four times the memory of
    the 8-bit one (a warning says so when such an optimizer is built); percentile_clipping other
    than 100 raises NotImplementedError.  Quantized layers (`Linear8bitLt`, `Linear4bit`),
    `BitsAndBytesConfig` and Lion/LAMB/LARS keep the file on bitsandbytes, reported.
    """

    ROOT = "bitsandbytes"
    PACKAGE = PACKAGE
    PROVIDED = GENERATED["bitsandbytes"]
    FILES = ("__init__.py", "optim.py")
    WHAT = "bitsandbytes' optimizers as torch optimizers with 32-bit states (more optimizer memory)"
    SHORT = SHORT

    code = "NPU264"
    fix_safety = "unsafe"  # 8-bit states become 32-bit: other numerics, more memory
    summary = "bitsandbytes 8-bit/paged optimizers -> generated ascend_bitsandbytes (torch optimizers, 32-bit states)"
    triggers = ("bitsandbytes",)
    examples = (
        Example(
            "import torch\nimport bitsandbytes as bnb\n\n"
            "optimizer = bnb.optim.PagedAdamW8bit(model.parameters(), lr=2e-4, weight_decay=0.0)\n",
            "import torch\nimport os\nimport sys\n\n" + comment_line(PACKAGE, SHORT) + "\n"
            + top_folder_on_sys_path("example.py")
            + "import ascend_bitsandbytes as bnb\n\n"
            "optimizer = bnb.optim.PagedAdamW8bit(model.parameters(), lr=2e-4, weight_decay=0.0)\n",
        ),
    )
    unchanged = (
        "import bitsandbytes as bnb\nlayer = bnb.nn.Linear8bitLt(16, 16)\nopt = bnb.optim.AdamW8bit(layer.parameters())\n",
        # what is read of the module cannot be known, or nothing is: an availability probe
        "import bitsandbytes as bnb\nfeatures = getattr(bnb, 'features', set())\n",
        "import bitsandbytes as bnb  # noqa: F401\n",
        "from bitsandbytes.optim import Lion8bit\n",
    )
