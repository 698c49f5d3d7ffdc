"""torch.cuda's random-number generators -> torch_npu.npu's: a kind of NPU101's edit."""
from __future__ import annotations

from .base import Example, Rule


class TorchCudaRandomToNpu(Rule):
    """torch.cuda's random-number generators (the names of `torch.cuda.random`: `manual_seed`,
    `manual_seed_all`, `seed`, `initial_seed`, `get_rng_state[_all]`, `set_rng_state[_all]`) are
    torch_npu.npu's, with the same arguments.

    A kind of NPU101's edit (TorchCudaApiToNpu resolves every torch.cuda name in one walk), with
    a code of its own because it is reviewed differently: the NPU's generator is not the GPU's.
    The same seed does not give the GPU's random numbers, so dropout masks and initial weights
    differ from a GPU run (compare losses by their course, not bit for bit), and an RNG state
    that a GPU run saved in a checkpoint is CUDA's: restoring it with `set_rng_state` on the NPU
    is only right where its size matches `torch_npu.npu.get_rng_state()`'s; else reseed.
    """

    code = "NPU112"
    recorded_by = "NPU101"
    summary = "torch.cuda's random generators (manual_seed, get_rng_state...) -> torch_npu.npu's"
    names = frozenset({"random", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
                       "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
                       "default_generators"})
    examples = (
        Example(
            "import torch\ntorch.manual_seed(1337)\ntorch.cuda.manual_seed_all(1337)\n",
            "import torch\nimport torch_npu\ntorch.manual_seed(1337)\ntorch_npu.npu.manual_seed_all(1337)\n",
        ),
        Example(
            "import torch\nstate = {'cpu': torch.get_rng_state(), 'device': torch.cuda.get_rng_state()}\n",
            "import torch\nimport torch_npu\nstate = {'cpu': torch.get_rng_state(), 'device': torch_npu.npu.get_rng_state()}\n",
        ),
    )
    unchanged = (
        "import torch\ntorch.manual_seed(0)\ngenerator = torch.Generator().manual_seed(0)\n",
    )
