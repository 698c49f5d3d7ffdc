"""bitsandbytes' optimizers on Ascend NPUs, written by gpu2npu into a migrated project.

The migrated code imports this package where it imported `bitsandbytes` for its optimizers only:
`optim.AdamW8bit` and its relatives are torch's optimizers with bitsandbytes' arguments and
defaults.  Their states are 32-bit (bitsandbytes' 8-bit and paged states are CUDA kernels): the
updates are those of the 32-bit algorithm, and the optimizer state takes about four times the
memory of the 8-bit one.
"""
from . import optim

# The bitsandbytes release whose optimizer signatures this package follows.
__version__ = "0.43.3"

__all__ = ["optim"]
