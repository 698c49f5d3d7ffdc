"""torch.cuda.X -> torch_npu.npu.X, for every X that the chosen torch_npu release provides.

One walk resolves every torch.cuda name; the edits are recorded by kind (random generators,
memory, streams and graphs, amp: each a module of its own with its code and examples), and
NPU101 is the rest: device selection and queries."""
from __future__ import annotations

from typing import List, Optional

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge.tips import migratable_cuda_path
from ..records.change import Report
from .base import Example, Rule, code_of
from .cuda_amp import TorchCudaAmpToNpu
from .cuda_memory import TorchCudaMemoryToNpu
from .cuda_random import TorchCudaRandomToNpu
from .cuda_streams import TorchCudaStreamsToNpu
from .names import build_dotted, cuda_switch_of, cuda_switch_tip, dotted_name, properties_query_stays, qualified_names
from .walk import ParentNodeProvider

CUDA = "torch.cuda"
NPU = "torch_npu.npu"
# torch.cuda names whose torch_npu counterpart has another name (same methods and arguments).
RENAMED = {"CUDAGraph": "NPUGraph"}
# The kinds of this rule's edit with codes of their own, by the first name after torch.cuda.
KINDS = (TorchCudaRandomToNpu, TorchCudaStreamsToNpu, TorchCudaMemoryToNpu, TorchCudaAmpToNpu)
_KIND_OF_NAME = {name: kind for kind in KINDS for name in kind.names}


def kind_of(path: List[str]):
    """The kind of edit that renaming torch.cuda.<path> is (None: NPU101's own)."""
    return _KIND_OF_NAME.get(path[0]) if path else None


# Why torch.cuda.get_device_properties stays in a file that reads CUDA-only fields of it
# (names.properties_query_stays).
PROPERTIES_TIP = ("left as written: the file reads a field of CUDA's device properties (major, minor, "
                  "multi_processor_count...) that torch_npu's have not; renamed, the query would answer on the NPU and "
                  "the field raise AttributeError where CUDA's absence raised what the code expects (RuntimeError); "
                  "decide with torch_npu.npu.is_bf16_supported() or torch_npu.npu.get_device_name() instead")


def npu_path(api, path: List[str]) -> Optional[List[str]]:
    """The torch_npu.npu path for torch.cuda.<path>, or None when it stays CUDA."""
    if path and path[0] in RENAMED and api.npu_has([RENAMED[path[0]]]):
        return [RENAMED[path[0]], *path[1:]]
    return path if migratable_cuda_path(api, path) else None


class TorchCudaApiToNpu(Rule):
    """Calls into `torch.cuda` go to `torch_npu.npu`, which mirrors its API on Ascend.

    Names are resolved, not spelled: `import torch as th; th.cuda.device_count()`,
    `from torch import cuda`, `import torch.cuda as tc` and function-local imports are all found.
    `from torch.cuda[.sub] import name` imports are rewritten in place, so the imported names keep
    working unchanged below.  What exists on NPU is read from the per-version data; a name that
    does not exist there is left as it is and listed in unsupported_api.csv.

    NPU101 itself is device selection and queries (`is_available`, `device_count`,
    `set_device`, `current_device`, `get_device_name`, `is_bf16_supported`...) and whatever
    torch.cuda name has no kind of its own; the random generators (NPU112), streams, events and
    graphs (NPU113), the memory API (NPU114) and amp (NPU115) are the same rename, recorded
    under their own codes because each is reviewed differently.  A device query now asks about
    NPUs: `device_count()` counts NPUs, `get_device_name()` names an Ascend chip.
    """

    code = "NPU101"
    summary = "torch.cuda's device queries (is_available, set_device...) and the rest -> torch_npu.npu where provided"
    triggers = ("cuda",)
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "import torch as th\nn = th.cuda.device_count()\n",
            "import torch as th\nimport torch_npu\nn = torch_npu.npu.device_count()\n",
        ),
        Example(
            "from torch import cuda\nif cuda.is_available():\n    cuda.set_device(0)\n",
            "import torch_npu\nfrom torch import cuda\nif torch_npu.npu.is_available():\n    torch_npu.npu.set_device(0)\n",
        ),
        Example(
            "def describe():\n    import torch\n    return torch.cuda.get_device_name(torch.cuda.current_device())\n",
            "def describe():\n    import torch\n    import torch_npu\n"
            "    return torch_npu.npu.get_device_name(torch_npu.npu.current_device())\n",
        ),
        Example(
            "import torch\nfrom torch.cuda import is_available, device_count\nn = device_count() if is_available() else 0\n",
            "import torch\nfrom torch_npu.npu import is_available, device_count\nn = device_count() if is_available() else 0\n",
        ),
    )
    unchanged = (
        "import torch\ntorch.cuda.nvtx.range_push('step')\n",
        # another package's CUDA switch: true on NPU it would run that package's CUDA code
        "import torch\nfrom mergekit.merge import MergeOptions\noptions = MergeOptions(cuda=torch.cuda.is_available())\n",
        "import torch\n# torch.cuda.synchronize() in a comment\n",
        "import torch\nimport torch_npu\ntorch_npu.npu.synchronize()\n",
    )

    # -- use sites ---------------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _cuda_root(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node of `node`'s chain that *is* the torch.cuda module, if any."""
        for part in _chain(node):
            if CUDA in qualified_names(self, part):
                return part
        return None

    def _is_chain_top(self, node: cst.CSTNode) -> bool:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        return not (isinstance(parent, cst.Attribute) and parent.value is node)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        return self._rewrite_chain(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name):
        return self._rewrite_chain(original_node, updated_node)

    def _rewrite_chain(self, original_node, updated_node):
        if not self._is_chain_top(original_node):
            return updated_node
        root = self._cuda_root(original_node)
        if root is None:
            return updated_node
        option = cuda_switch_of(self, original_node, self.context.api)
        if option is not None:
            self.report(original_node, Report.UNSUPPORTED, option, cuda_switch_tip(code_of(original_node), option))
            return updated_node
        originals = _chain(original_node)
        depth = originals.index(root)  # how many attributes stand above torch.cuda
        path = [part.attr.value for part in reversed(originals[:depth])]
        new_path = npu_path(self.context.api, path)
        if new_path is None:
            return updated_node  # left for the analysis to report, with a tip
        if properties_query_stays(self, original_node, ".".join([CUDA, *path])):
            return updated_node  # (the leftover analysis reports it, where no other rule rewrote it)
        if new_path != path:  # a renamed class: torch.cuda.CUDAGraph -> torch_npu.npu.NPUGraph
            renamed = build_dotted(".".join([NPU, new_path[0]]))
            new_node = _replace_at_depth(updated_node, depth - 1, renamed)
        else:
            new_node = _replace_at_depth(updated_node, depth, build_dotted(NPU))
        old_name = ".".join([CUDA, *path])
        self.record(original_node, f"change {old_name} to {'.'.join([NPU, *new_path])}", kind=kind_of(path))
        self.context.needs_torch_npu = True
        return new_node

    # -- imports -----------------------------------------------------------------------------
    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if original_node.relative or original_node.module is None:
            return updated_node
        module = dotted_name(original_node.module)
        if module is None or not (module == CUDA or module.startswith(CUDA + ".")):
            return updated_node
        if isinstance(original_node.names, cst.ImportStar):
            return updated_node
        prefix = module.split(".")[2:]
        supported = [a for a in updated_node.names if migratable_cuda_path(self.context.api, prefix + [dotted_name(a.name)])]
        if len(supported) != len(updated_node.names):
            return updated_node  # a mixed import stays whole; the analysis names what is missing
        new_module = ".".join([NPU, *prefix])
        kinds = {kind_of(prefix or [dotted_name(alias.name)]) for alias in updated_node.names}
        self.record(original_node, f"change import from {module} to import from {new_module}",
                    kind=kinds.pop() if len(kinds) == 1 else None)
        return updated_node.with_changes(module=build_dotted(new_module))

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        names = []
        changed = []
        for alias in updated_node.names:
            module = dotted_name(alias.name)
            if (
                alias.asname is not None
                and module is not None
                and module.startswith(CUDA + ".")
                and migratable_cuda_path(self.context.api, module.split(".")[2:])
            ):
                new_module = ".".join([NPU, *module.split(".")[2:]])
                names.append(alias.with_changes(name=build_dotted(new_module)))
                changed.append((f"change import {module} to import {new_module}", kind_of(module.split(".")[2:])))
            else:
                names.append(alias)
        if not changed:
            return updated_node
        for message, kind in changed:
            self.record(original_node, message, kind=kind)
        return updated_node.with_changes(names=names)


def _chain(node: cst.CSTNode) -> List[cst.CSTNode]:
    parts = [node]
    while isinstance(parts[-1], cst.Attribute):
        parts.append(parts[-1].value)
    return parts


def _replace_at_depth(node: cst.BaseExpression, depth: int, replacement: cst.BaseExpression):
    if depth == 0:
        return replacement.with_changes(lpar=getattr(node, "lpar", ()), rpar=getattr(node, "rpar", ()))
    assert isinstance(node, cst.Attribute)
    return node.with_changes(value=_replace_at_depth(node.value, depth - 1, replacement))
