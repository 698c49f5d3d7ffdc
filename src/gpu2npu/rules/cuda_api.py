"""torch.cuda.X -> torch_npu.npu.X, for every X that the chosen torch_npu release provides.

One walk resolves every torch.cuda name; the edits are recorded by kind (random generators,
memory, streams and graphs, amp: each a module of its own with its code and examples), and
NPU101 is the rest: device selection and queries."""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge import npu_keywords
from ..knowledge.tips import migratable_cuda_path
from ..records.change import Finding, Report
from ..records.finding_kinds import CUDA_API, LEFT_ON_PURPOSE
from .base import Example, Rule, code_of
from .cuda_amp import TorchCudaAmpToNpu
from .cuda_memory import TorchCudaMemoryToNpu
from .cuda_random import TorchCudaRandomToNpu
from .cuda_streams import TorchCudaStreamsToNpu
from .names import (arguments_the_npu_lacks, build_dotted, cuda_switch_of, cuda_switch_tip, dotted_name,
                    parameters_given, properties_query_stays, qualified_names)
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


# Why torch.cuda stays where a test double patches an attribute of it (_patched_module).
PATCHED_TIP = ("a test double of {name}: left as written, as patch(\"{name}\") is: it replaces what the code under "
               "test reads, which keeps torch.cuda where it asks about CUDA itself; where that code now reads "
               "torch_npu.npu instead, patch torch_npu.npu")

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

    A call's arguments are fitted to torch_npu's parameters (knowledge/npu_keywords.py): a keyword
    torch_npu names otherwise is given by position (`get_device_name(device=0)` -> `(0)`), one
    without meaning on the NPU is left out (`is_bf16_supported(including_emulation=False)` before
    torch_npu 2.9.0), and a call given one that changes what it does stays as written, reported
    (NPU917).
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
        Example(
            "import torch\nname = torch.cuda.get_device_name(device=0)\nbf16 = torch.cuda.is_bf16_supported(including_emulation=False)\n",
            "import torch\nimport torch_npu\nname = torch_npu.npu.get_device_name(0)\nbf16 = torch_npu.npu.is_bf16_supported()\n",
        ),
    )
    unchanged = (
        "import torch\ntorch.cuda.nvtx.range_push('step')\n",
        # torch_npu's memory_snapshot takes no include_traces: the call stays, reported (NPU917)
        "import torch\nsnap = torch.cuda.memory_snapshot(include_traces=False)\n",
        # another package's CUDA switch: true on NPU it would run that package's CUDA code
        "import torch\nfrom mergekit.merge import MergeOptions\noptions = MergeOptions(cuda=torch.cuda.is_available())\n",
        "import torch\n# torch.cuda.synchronize() in a comment\n",
        "import torch\nimport torch_npu\ntorch_npu.npu.synchronize()\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # The calls whose function (of npu_keywords.FUNCTIONS) this rule renamed, by the Call's id,
        # with their torch.cuda path: their arguments are fitted to torch_npu's counterpart when the
        # call is left.
        # id of a call -> (torch.cuda path of the function it calls, how many of its arguments
        # stand before the function's own: 1 in functools.partial(function, ...))
        self._calls_to_fit: Dict[int, Tuple[List[str], int]] = {}
        # The torch.cuda functions of npu_keywords.FUNCTIONS whose `from torch.cuda... import`
        # this rule made torch_npu.npu's.
        self._imported_to_npu: Set[str] = set()

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
        if self._patched_module(original_node, path):
            return updated_node
        new_path = npu_path(self.context.api, path)
        if new_path is None:
            return updated_node  # left for the analysis to report, with a tip
        if properties_query_stays(self, original_node, ".".join([CUDA, *path])):
            return updated_node  # (the leftover analysis reports it, where no other rule rewrote it)
        # (not torch.cuda itself, `torch.cuda()`; only the functions whose parameters differ)
        call, before = self._call_of(original_node) if path and path[-1] in npu_keywords.FUNCTIONS else (None, 0)
        lacking = arguments_the_npu_lacks(_own_arguments(call, before), path[-1],
                                          self.context.api.version_tuple) if call is not None else []
        if lacking:
            if before:  # (the leftover analysis reports a call of the function, not its partial)
                self._report_lacking(call, path, lacking)
            return updated_node  # (the leftover analysis reports it)
        if call is not None:
            self._calls_to_fit[id(call)] = (path, before)
        if new_path != path:  # a renamed class: torch.cuda.CUDAGraph -> torch_npu.npu.NPUGraph
            renamed = build_dotted(".".join([NPU, new_path[0]]))
            new_node = _replace_at_depth(updated_node, depth - 1, renamed)
        else:
            new_node = _replace_at_depth(updated_node, depth, build_dotted(NPU))
        old_name = ".".join([CUDA, *path])
        self.record(original_node, f"change {old_name} to {'.'.join([NPU, *new_path])}", kind=kind_of(path))
        self.context.needs_torch_npu = True
        return new_node

    def _patched_module(self, module: cst.CSTNode, path: List[str]) -> bool:
        """Whether `module` (torch.cuda, or torch.cuda.<path>) is what a test double patches an attribute of
        (`monkeypatch.setattr(torch.cuda, "is_available", lambda: True)`, `mock.patch.object(torch.cuda,
        ...)`).  It stays, reported, as the same patch written `patch("torch.cuda.is_available")` does:
        the test double replaces what the code under test reads, and that code keeps torch.cuda where
        it asks about CUDA itself (a capability, a CUDA-only branch)."""
        argument = self.get_metadata(ParentNodeProvider, module, None)
        if not isinstance(argument, cst.Arg) or argument.keyword is not None:
            return False
        call = self.get_metadata(ParentNodeProvider, argument, None)
        if not (isinstance(call, cst.Call) and call.args and call.args[0] is argument
                and isinstance(call.func, cst.Attribute)):
            return False
        function = dotted_name(call.func) or ""
        if not (call.func.attr.value in ("setattr", "delattr") or function.endswith("patch.object")):
            return False
        name = call.args[1].value if len(call.args) > 1 else None
        patched = ".".join([CUDA, *path, *([name.evaluated_value] if isinstance(name, cst.SimpleString) else [])])
        start, end = self.lines_of(module)
        self.findings.append(Finding(self.context.path, start, end, Report.NOTE, patched,
                                     PATCHED_TIP.format(name=patched), LEFT_ON_PURPOSE.code))
        return True

    def _call_of(self, function: cst.CSTNode) -> Tuple[Optional[cst.Call], int]:
        """The call that gives `function` its arguments, and how many of its arguments stand before
        them: `function(...)`, or `functools.partial(function, ...)` whose arguments are the
        function's when the partial is called."""
        parent = self.get_metadata(ParentNodeProvider, function, None)
        if isinstance(parent, cst.Call) and parent.func is function:
            return parent, 0
        if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
            call = self.get_metadata(ParentNodeProvider, parent, None)
            if (isinstance(call, cst.Call) and call.args and call.args[0] is parent
                    and "functools.partial" in qualified_names(self, call.func)):
                return call, 1
        return None, 0

    # -- arguments torch_npu.npu's counterpart names otherwise, or does not take ---------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        path, before = self._calls_to_fit.pop(id(original_node), (None, 0))
        if path is None:
            path = self._imported_callee(original_node)
            if path is None:
                return updated_node
            lacking = arguments_the_npu_lacks(original_node, path[-1], self.context.api.version_tuple)
            if lacking:  # (the import is renamed already: the call's row says what to change)
                self._report_lacking(original_node, path, lacking)
                return updated_node
        if before:
            fitted = self._fit_arguments(original_node, _own_arguments(updated_node, before), path).args
            kept = list(updated_node.args[:before])
            if not fitted:  # (`partial(function, )`: the comma went with what followed)
                kept[-1] = kept[-1].with_changes(comma=updated_node.args[-1].comma)
            return updated_node.with_changes(args=(*kept, *fitted))
        return self._fit_arguments(original_node, updated_node, path)

    def _imported_callee(self, call: cst.Call) -> Optional[List[str]]:
        """The torch.cuda path of a function this rule's import edit made torch_npu.npu's, called
        by `call` (`from torch.cuda import get_device_name; get_device_name(device=0)`)."""
        if not self._imported_to_npu:
            return None
        for name in qualified_names(self, call.func):
            if name in self._imported_to_npu:
                return name.split(".")[2:]
        return None

    def _report_lacking(self, call: cst.Call, path: List[str], lacking: List[str]) -> None:
        name = ".".join([CUDA, *path])
        start, end = self.lines_of(call)
        self.findings.append(Finding(self.context.path, start, end, Report.UNSUPPORTED, name,
                                     lacking_arguments_tip(path[-1], lacking), CUDA_API.code))

    def _fit_arguments(self, original_node: cst.Call, updated_node: cst.Call, path: List[str]) -> cst.Call:
        """The renamed call with the arguments torch_npu's counterpart takes: what has no meaning on
        the NPU left out, a keyword torch_npu names otherwise given by position (or by its name)."""
        name = path[-1]
        version = self.context.api.version_tuple
        missing = npu_keywords.MISSING_PARAMETERS.get(name, {})
        renamed = dict(npu_keywords.RENAMED_PARAMETERS.get(name, ()))
        order = [cuda for cuda, _ in npu_keywords.RENAMED_PARAMETERS.get(name, ())]
        args: List[cst.Arg] = []
        for arg, parameter in zip(updated_node.args, parameters_given(updated_node.args, missing)):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if parameter in missing and missing[parameter].droppable and missing[parameter].missing_in(version):
                self.record(original_node, f"remove {parameter} from {NPU}.{name}: {missing[parameter].why} "
                            f"({npu_keywords.npu_parameter_text(name, parameter, missing[parameter].since)})",
                            kind=kind_of(path))
                continue
            if keyword in renamed:
                in_place = len(args) == order.index(keyword) and all(a.keyword is None and not a.star for a in args)
                arg = (arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) if in_place
                       else arg.with_changes(keyword=cst.Name(renamed[keyword])))
                self.record(original_node, f"give {NPU}.{name} its {keyword} "
                            + ("by position" if in_place else f"as {renamed[keyword]}")
                            + f": torch_npu names the parameter {renamed[keyword]}", kind=kind_of(path))
            args.append(arg)
        if len(args) == len(updated_node.args) and all(a is b for a, b in zip(args, updated_node.args)):
            return updated_node
        if not args:  # (nor the line break of an argument on a line of its own)
            return updated_node.with_changes(args=(), whitespace_before_args=cst.SimpleWhitespace(""))
        if len(args) < len(updated_node.args) and updated_node.args[-1] is not args[-1]:
            args[-1] = args[-1].with_changes(comma=updated_node.args[-1].comma)
        return updated_node.with_changes(args=args)

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
        self._imported_to_npu.update(f"{module}.{dotted_name(alias.name)}" for alias in updated_node.names
                                     if dotted_name(alias.name) in npu_keywords.FUNCTIONS)
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


def lacking_arguments_tip(name: str, lacking: List[str]) -> str:
    """The tip of a torch.cuda call left as written for arguments torch_npu's counterpart lacks."""
    missing = npu_keywords.MISSING_PARAMETERS[name]
    facts = "; ".join(npu_keywords.npu_parameter_text(name, keyword, missing[keyword].since) for keyword in lacking)
    asked = " or ".join(missing[keyword].why for keyword in lacking)
    newer = [missing[keyword].since for keyword in lacking]
    later = (f", or migrate for torch_npu {max(newer, key=_release_key)} or later (-v)"
             if all(newer) else "")
    return (f"left as written: {facts}, so renamed the call would raise TypeError; on the NPU call "
            f"{NPU}.{name} without {' and '.join(lacking)} if the program can do without {asked}{later}")


def _release_key(release: str):
    return tuple(int(part) for part in release.split("."))


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


def _own_arguments(call: cst.Call, before: int) -> cst.Call:
    """`call` with only the arguments that go to the function it calls or binds (those after
    `before`)."""
    return call.with_changes(args=call.args[before:]) if before else call
