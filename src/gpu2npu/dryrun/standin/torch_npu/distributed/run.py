"""``python -m torch_npu.distributed.run``: torchrun (torch.distributed.run), as torch_npu's is."""

from torch.distributed.run import *  # noqa: F401,F403
from torch.distributed.run import main

if __name__ == "__main__":
    main()
