"""distributed: the main file joins the HCCL process group, unless the project already does."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from .base import DistributedSettings, Example, Rule
from .placement import insert_after_imports

COMMENT = (
    "# One process per NPU: run_distributed_npu.sh sets RANK_ID, RANK_SIZE and DEVICE_ID, torchrun sets",
    "# RANK, WORLD_SIZE and LOCAL_RANK.",
)
INIT_BLOCK = '''\
NPU_DEVICE_ID = int(os.environ.get("LOCAL_RANK", os.environ.get("DEVICE_ID", "0")))
torch_npu.npu.set_device(NPU_DEVICE_ID)
torch.distributed.init_process_group(
    "hccl",
    rank=int(os.environ.get("RANK", os.environ.get("RANK_ID", "0"))),
    world_size=int(os.environ.get("WORLD_SIZE", os.environ.get("RANK_SIZE", "1"))),
)
'''


class InitHcclProcessGroup(Rule):
    """The main file (`distributed -m`) sets its NPU and initialises the HCCL process group from
    the launcher's environment, right after its imports.  If any file of the project already
    calls `init_process_group`, nothing is inserted: that call is migrated (nccl -> hccl) and
    never duplicated.
    """

    code = "NPU304"
    summary = "distributed: initialise the HCCL process group in the main file (unless the script does)"
    triggers = ()
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nmodel = Net()\n",
            "import torch\nimport torch_npu\nimport os\n\n" + "\n".join(COMMENT) + "\n" + INIT_BLOCK
            + "model = Net()\nmodel = model.npu()\n"
            "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[torch_npu.npu.current_device()])\n",
            distributed=DistributedSettings(main_file="example.py"),
        ),
    )

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        settings = self.context.options.distributed
        if self.context.path != settings.main_file or settings.project_initialises:
            return updated_node
        return insert_after_imports(self, original_node, updated_node, INIT_BLOCK, COMMENT,
                                    "insert HCCL process-group initialisation (one process per NPU)")
