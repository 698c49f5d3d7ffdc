"""CUDA and NCCL environment variables named in code -> their Ascend counterparts, or reported."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge import env_vars
from ..records.change import Finding, Report
from ..records.finding_kinds import LEFT_ON_PURPOSE
from .base import Example, Rule
from .names import DocstringTracker, environment_keywords, string_text, with_keywords_renamed, with_string_text
from .walk import ParentNodeProvider, walk

_MENTIONS = re.compile(r"NCCL_|CUDA_|CUBLAS_|PYTORCH_ALLOC_CONF")
_SETTERS = ("setdefault", "putenv", "__setitem__")
# Calls that read a variable's value (their first argument names it).
_READERS = ("get", "getenv", "__getitem__")
_ENVIRONMENT_CALLS = ("get", "getenv", "setdefault", "pop", "putenv", "unsetenv", "__setitem__", "__getitem__")


def _literal(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        return string_text(node)
    if isinstance(node, cst.Integer):
        return node.value
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "str"
            and len(node.args) == 1 and isinstance(node.args[0].value, cst.Integer)):
        return node.args[0].value.value  # str(1)
    return None


class _Writes(cst.CSTVisitor):
    """The values a file gives each variable: `os.environ[NAME] = V`, `setdefault(NAME, V)`,
    `putenv(NAME, V)`, `{NAME: V}` (None: a value that is not a literal)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: Dict[str, List[Optional[str]]] = {}

    def _add(self, key: cst.BaseExpression, value: cst.BaseExpression) -> None:
        name = string_text(key) if isinstance(key, cst.SimpleString) else None
        if name is not None and env_vars.is_cuda_variable(name):
            self.values.setdefault(name, []).append(_literal(value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1 and isinstance(
                    subscript.slice[0].slice, cst.Index):
                self._add(subscript.slice[0].slice.value, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _SETTERS and len(node.args) >= 2 and node.args[0].keyword is None:
            self._add(node.args[0].value, node.args[1].value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._add(node.key, node.value)

    def leave_Call(self, original_node: cst.Call) -> None:
        for arg in environment_keywords(original_node):  # dict(os.environ, NAME=V), env.update(NAME=V)
            if env_vars.is_cuda_variable(arg.keyword.value):
                self.values.setdefault(arg.keyword.value, []).append(_literal(arg.value))


class CudaEnvironmentVariables(DocstringTracker, Rule):
    """CUDA and NCCL read their settings from environment variables that the Ascend stack does not
    read.  A string in code that is exactly such a variable's name (an `os.environ` key, a
    `getenv`/`setdefault` argument, a key of an `env` dict) names the Ascend counterpart instead
    when that one takes the values the file gives it: `PYTORCH_CUDA_ALLOC_CONF` /
    `PYTORCH_ALLOC_CONF` -> `PYTORCH_NPU_ALLOC_CONF` (options max_split_size_mb,
    garbage_collection_threshold, expandable_segments), `CUDA_LAUNCH_BLOCKING` ->
    `ASCEND_LAUNCH_BLOCKING`, `(TORCH_)NCCL_ASYNC_ERROR_HANDLING` -> `HCCL_ASYNC_ERROR_HANDLING` and
    `(TORCH_)NCCL_BLOCKING_WAIT` -> `HCCL_BLOCKING_WAIT` (0 or 1), `NCCL_SOCKET_IFNAME` ->
    `HCCL_SOCKET_IFNAME`.  A value the counterpart does not take (`backend:cudaMallocAsync`, mode
    2 of async error handling, a value computed at run time) leaves every mention of that variable
    in the file as written, reported; so are the variables without a counterpart (`NCCL_DEBUG`,
    `CUBLAS_WORKSPACE_CONFIG`, `CUDA_DEVICE_MAX_CONNECTIONS`...), with the Ascend way: where the
    file sets them (a read of what it sets goes with the setting, which has the row), or a note
    where it only reads them.
    """

    code = "NPU107"
    summary = "PYTORCH_CUDA_ALLOC_CONF, CUDA_LAUNCH_BLOCKING, NCCL_ASYNC_ERROR_HANDLING... -> Ascend variables"
    triggers = ("NCCL_", "CUDA_", "CUBLAS_", "PYTORCH_ALLOC_CONF")
    examples = (
        Example(
            "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
            "os.environ.setdefault('TORCH_NCCL_ASYNC_ERROR_HANDLING', '1')\n",
            "import os\nos.environ['PYTORCH_NPU_ALLOC_CONF'] = 'expandable_segments:True'\n"
            "os.environ.setdefault('HCCL_ASYNC_ERROR_HANDLING', '1')\n",
        ),
        Example(
            "import os\nblocking = os.environ.get('CUDA_LAUNCH_BLOCKING') == '1'\n",
            "import os\nblocking = os.environ.get('ASCEND_LAUNCH_BLOCKING') == '1'\n",
        ),
    )
    unchanged = (
        # values the Ascend variables do not take: left (and reported)
        "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'\n",
        "import os\nos.environ['NCCL_ASYNC_ERROR_HANDLING'] = '3'\n",
        "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = conf\nprint(os.environ['PYTORCH_CUDA_ALLOC_CONF'])\n",
        "import os\nos.environ['NCCL_DEBUG'] = 'INFO'\n",
        "import os\nif os.getenv('NCCL_P2P_DISABLE') is None:\n    os.environ['NCCL_P2P_DISABLE'] = '1'\n",
        "impl = getattr(extension, 'CUDA_IMPL', True)\n",
        'def f():\n    """Set PYTORCH_CUDA_ALLOC_CONF to tune memory."""\n',
    )

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        DocstringTracker.__init__(self)
        self.writes: Dict[str, List[Optional[str]]] = {}

    def _in_environment_position(self, node: cst.SimpleString) -> bool:
        """`x[NAME]`, `get(NAME)`/`getenv(NAME)`/`setdefault(NAME, ...)`, `{NAME: ...}`: where a
        string names an environment variable (not `getattr(module, "CUDA_IMPL")`)."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.Index) or (isinstance(parent, cst.DictElement) and parent.key is node):
            return True
        return self._first_argument_of(parent) in _ENVIRONMENT_CALLS

    def _first_argument_of(self, parent: Optional[cst.CSTNode]) -> Optional[str]:
        """The name of the call (`get`, `getenv`, `setdefault`...) whose first argument is `parent`,
        the string's parent, if it is one."""
        if not isinstance(parent, cst.Arg):
            return None
        call = self.get_metadata(ParentNodeProvider, parent, None)
        if not (isinstance(call, cst.Call) and call.args and call.args[0] is parent):
            return None
        func = call.func
        return func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")

    def _only_read(self, node: cst.SimpleString) -> bool:
        """Whether the string names the variable where its value is read: `environ.get(NAME)`,
        `getenv(NAME)`, `environ[NAME]` read, `NAME in environ`."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.ComparisonTarget) or (isinstance(parent, cst.Comparison) and parent.left is node):
            comparison = parent if isinstance(parent, cst.Comparison) else self.get_metadata(ParentNodeProvider, parent)
            return (isinstance(comparison, cst.Comparison) and comparison.left is node
                    and all(isinstance(target.operator, (cst.In, cst.NotIn)) for target in comparison.comparisons))
        if isinstance(parent, cst.Arg):
            return self._first_argument_of(parent) in _READERS
        if isinstance(parent, cst.Index):
            element = self.get_metadata(ParentNodeProvider, parent, None)
            subscript = self.get_metadata(ParentNodeProvider, element, None) if element is not None else None
            if not isinstance(subscript, cst.Subscript):
                return False
            above = self.get_metadata(ParentNodeProvider, subscript, None)
            assigned = (isinstance(above, (cst.AssignTarget, cst.Del, cst.AugAssign))
                        or (isinstance(above, cst.AnnAssign) and above.target is subscript))
            return not assigned
        return False

    def visit_Module(self, node: cst.Module) -> None:
        if _MENTIONS.search(node.code):
            writes = _Writes()
            walk(writes, node)
            self.writes = writes.values

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        name = string_text(original_node)
        if name is None or not env_vars.is_cuda_variable(name) or self.is_documentation(original_node):
            return updated_node
        known = name in env_vars.RENAMED or name in env_vars.REPORTED or "NCCL_" in name
        if not known and not self._in_environment_position(original_node):
            return updated_node  # an upper-case constant named like a variable: getattr(ext, "CUDA_IMPL")
        if name not in env_vars.RENAMED and name not in self.writes and self._only_read(original_node):
            # (what the launcher sets is read as it was; nothing here sets it for CUDA or NCCL)
            start, end = self.lines_of(original_node)
            self.findings.append(Finding(self.context.path, start, end, Report.NOTE, name,
                                         f"only read here ({env_vars.tip_for(name)}): the program reads it as "
                                         "before, nothing to change", LEFT_ON_PURPOSE.code))
            return updated_node
        counterpart, tip = self._verdict(name)
        if counterpart is None:
            # (a read of what the file sets, `if os.getenv(NAME) is None: os.environ[NAME] = "1"`,
            # is left with the setting, whose row says what to do)
            if not self._only_read(original_node):
                self._report_kept(original_node, name, tip)
            return updated_node
        self.record(original_node, f"change {name} to {counterpart.name} (the Ascend variable; the values "
                    "this file gives it carry over)")
        return with_string_text(updated_node, counterpart.name)

    def _report_kept(self, node: cst.CSTNode, name: str, tip: str) -> None:
        """The row of a variable set here that stays: reported, or noted where a file of the project
        that sets it nowhere reads it (Options.environment_reads): it has its effect on that code."""
        reads = {variable: reader for variable, reader in self.context.options.environment_reads
                 if reader != self.context.path}
        note = env_vars.kept_for_project(name, reads)
        if note is not None:
            start, end = self.lines_of(node)
            self.findings.append(Finding(self.context.path, start, end, Report.NOTE, name, note, LEFT_ON_PURPOSE.code))
            return
        self.report(node, Report.UNSUPPORTED, name, tip)

    def _verdict(self, name: str) -> Tuple[Optional[env_vars.Counterpart], str]:
        """(the Ascend variable that `name` becomes, or None and the tip of its row): it becomes its
        counterpart where that takes every value this file gives it."""
        counterpart = env_vars.RENAMED.get(name)
        takes_anything = counterpart is not None and counterpart.accepts is env_vars.any_value
        refused = [] if takes_anything else [
            value for value in self.writes.get(name, ())
            if value is None or (counterpart is not None and not counterpart.accepts(value))]
        if counterpart is not None and not refused:
            return counterpart, ""
        shown = refused[0] if refused and refused[0] is not None else None
        tip = env_vars.tip_for(name, shown)
        if refused and shown is None:
            tip += f" (the value given to {name} here is computed at run time: check it)"
        return None, tip

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        """The keywords of an environment built by name (`dict(os.environ, NCCL_ASYNC_ERROR_HANDLING="1")`,
        `env.update(CUDA_LAUNCH_BLOCKING="1")`), judged as a string naming the variable is."""
        renamed = {}
        for arg in environment_keywords(original_node):
            name = arg.keyword.value
            if not env_vars.is_cuda_variable(name):
                continue
            counterpart, tip = self._verdict(name)
            if counterpart is None:
                self._report_kept(arg.keyword, name, tip)
                continue
            self.record(arg.keyword, f"change {name} to {counterpart.name} (the Ascend variable; the values "
                        "this file gives it carry over)")
            renamed[id(arg)] = counterpart.name
        return with_keywords_renamed(original_node, updated_node, renamed)
