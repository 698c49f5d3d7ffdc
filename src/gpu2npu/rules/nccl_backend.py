"""The NCCL collective backend becomes HCCL, consistently, wherever code names it."""
from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Report
from .base import Example, Rule
from .names import (DocstringTracker, an_enum_value, enum_label, foreign_collective, qualified_names, string_text,
                    with_string_text)
from .walk import ParentNodeProvider

# "cpu:gloo,cuda:nccl" style backend maps (PyTorch >= 2.0).
_BACKEND_MAP = re.compile(r"^(\w+:\w+,)*\w+:\w+$")
_STRINGS = {"nccl": "hccl", "NCCL": "HCCL"}
_NAMES = {
    "torch.distributed.is_nccl_available": "is_hccl_available",
    "torch.distributed.Backend.NCCL": "HCCL",
    "torch.distributed.distributed_c10d.is_nccl_available": "is_hccl_available",
}


def foreign_collective_tip(library: str) -> str:
    return (f"this backend name goes to {library} (NCCL outside torch's process groups), which has no HCCL "
            "backend: left as written; on the NPU move the tensors with torch.distributed over 'hccl' "
            "(or vllm-ascend's PyHcclCommunicator)")


class NcclToHccl(DocstringTracker, Rule):
    """NCCL is CUDA's collective library; Ascend's is HCCL.

    Every spelling changes together, so a script that checks its own choice later
    (`if args.dist_backend == "nccl":`) keeps working: `init_process_group("nccl")`,
    `backend="nccl"`, argparse `default="nccl"`, `"cpu:gloo,cuda:nccl"`, `Backend.NCCL` and
    `is_nccl_available()` (torch_npu registers the "hccl" backend and `is_hccl_available`).
    A name that the file hands to another collective library (Ray's collective groups, vLLM's
    NCCL communicator, CuPy's NCCL) is that library's, not torch's: left as written and reported.
    """

    code = "NPU105"
    summary = '"nccl" -> "hccl", Backend.NCCL -> Backend.HCCL, is_nccl_available -> is_hccl_available'
    triggers = ("nccl", "NCCL")
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "import torch.distributed as dist\ndist.init_process_group(backend='nccl', init_method='env://')\n",
            "import torch.distributed as dist\nimport torch_npu\ndist.init_process_group(backend='hccl', init_method='env://')\n",
        ),
        Example(
            "import torch\nparser.add_argument('--dist-backend', default='nccl', type=str)\nif args.dist_backend == 'nccl':\n    pass\n",
            "import torch\nimport torch_npu\nparser.add_argument('--dist-backend', default='hccl', type=str)\nif args.dist_backend == 'hccl':\n    pass\n",
        ),
        Example(
            "import torch.distributed as dist\nif dist.is_nccl_available():\n    backend = dist.Backend.NCCL\n",
            "import torch.distributed as dist\nimport torch_npu\nif dist.is_hccl_available():\n    backend = dist.Backend.HCCL\n",
        ),
    )
    unchanged = (
        'print("NCCL timed out, see the NCCL docs")\n',
        # another library's NCCL (Ray's collective groups, vLLM's communicator), not torch's process groups
        "import ray.util.collective as collective\n"
        "parser.add_argument('--weight-sync-backend', default='nccl')\n"
        "if args.weight_sync_backend == 'nccl':\n"
        "    collective.init_collective_group(world, rank, backend=args.weight_sync_backend, group_name='sync')\n",
        # written into another program's config (vLLM's --weight-transfer-config)
        "import json\ncommand += ['--weight-transfer-config', json.dumps({'backend': 'nccl'})]\n",
    )

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        DocstringTracker.__init__(self)

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        if self.is_documentation(original_node):
            return updated_node
        text = string_text(original_node)
        if text is None:
            return updated_node
        if text in _STRINGS and (enum_label(self, original_node) or an_enum_value(self, original_node)):
            # an Enum member's label (`CUDA = ("cuda", "GPU", "nccl")` beside an NPU member), or
            # its value handed to what turns it into the member (`Backend("nccl")`)
            return updated_node
        if text in _STRINGS:
            library = foreign_collective(self, original_node)
            if library is not None:
                self.report(original_node, Report.UNSUPPORTED, f"backend {text!r}", foreign_collective_tip(library))
                return updated_node
            new_text = _STRINGS[text]
        elif _BACKEND_MAP.match(text) and "nccl" in text:
            new_text = text.replace("cuda:nccl", "npu:hccl").replace("nccl", "hccl")
        else:
            return updated_node
        self.record(original_node, f"change backend {text!r} to {new_text!r}")
        self.context.needs_torch_npu = True
        return with_string_text(updated_node, new_text)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        for name in sorted(qualified_names(self, original_node)):
            if name in _NAMES:
                new_attr = _NAMES[name]
                self.record(original_node, f"change {name} to {name.rsplit('.', 1)[0]}.{new_attr}")
                self.context.needs_torch_npu = True
                return updated_node.with_changes(attr=cst.Name(new_attr))
        return updated_node
