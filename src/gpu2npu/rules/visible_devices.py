"""CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES in code."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from .base import Example, Rule
from .names import (DocstringTracker, environment_keywords, nodes_within, qualified_names, string_text,
                    with_keywords_renamed, with_string_text)

CUDA_VARIABLE = "CUDA_VISIBLE_DEVICES"
RAY_GPU_IDS = "ray.get_gpu_ids"
NPU_VARIABLE = "ASCEND_RT_VISIBLE_DEVICES"


class VisibleDevicesEnv(DocstringTracker, Rule):
    """Ascend's runtime reads `ASCEND_RT_VISIBLE_DEVICES` to restrict the devices a process sees.

    Every string in code that names `CUDA_VISIBLE_DEVICES` (an `os.environ` key, a `getenv`
    argument, a command line built in Python), and the keyword of an environment built by name
    (`dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))`, `env.update(...)`), names the Ascend
    variable instead.  Not the key of a table of functions that read the environment (vLLM's
    `envs`: `{"CUDA_VISIBLE_DEVICES": lambda: os.environ.get("CUDA_VISIBLE_DEVICES")}`): that key
    is the name the program reads the value by (`envs.CUDA_VISIBLE_DEVICES`), and stays with its
    readers; the variable the function reads is renamed.  So do the same name's other mentions as
    an entry of a list, set or tuple in a file with such a table at its top (`IGNORED = {"LOCAL_RANK",
    "CUDA_VISIBLE_DEVICES"}`): they name the table's entries, not the variable.  Nor the variable set
    from the GPU ids Ray gave the task (`os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str,
    ray.get_gpu_ids()))`): an Ascend node has none, and the empty value, renamed, would hide every NPU;
    the call's row says where the NPU ids are (NPU911).
    """

    code = "NPU106"
    summary = "CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES"
    triggers = (CUDA_VARIABLE,)
    examples = (
        Example(
            "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0,1'\n",
            "import os\nos.environ['ASCEND_RT_VISIBLE_DEVICES'] = '0,1'\n",
        ),
        Example(
            "import os\nenv = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))\n",
            "import os\nenv = dict(os.environ, ASCEND_RT_VISIBLE_DEVICES=str(gpu))\n",
        ),
        Example(
            "import os\nreaders = {'CUDA_VISIBLE_DEVICES': lambda: os.environ.get('CUDA_VISIBLE_DEVICES')}\n",
            "import os\nreaders = {'CUDA_VISIBLE_DEVICES': lambda: os.environ.get('ASCEND_RT_VISIBLE_DEVICES')}\n",
        ),
    )
    unchanged = ("import os\n# export CUDA_VISIBLE_DEVICES=0\n", "import os\nrun(cmd, CUDA_VISIBLE_DEVICES=gpu)\n",
                 "import os\nreaders = {'CUDA_VISIBLE_DEVICES': lambda: None}\nignored = {'LOCAL_RANK', 'CUDA_VISIBLE_DEVICES'}\n")

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        DocstringTracker.__init__(self)
        self._reader_names: set = set()  # ids of the keys of a table of functions reading the environment
        self._reader_tables: set = set()  # the names of such tables
        self._table_keys: set = set()  # the keys of such tables at the module's top
        self._listed: set = set()  # ids of strings standing as entries of a list, set or tuple
        self._gpu_ids_keys: set = set()  # ids of the keys of variables set from ray.get_gpu_ids()

    def visit_Module(self, node: cst.Module) -> None:
        for statement in node.body:
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
                if isinstance(value, cst.Dict):
                    self._table_keys.update(string_text(element.key) for element in value.elements
                                            if _reads_the_environment(element))

    def visit_Element(self, node: cst.Element) -> None:
        if isinstance(node.value, cst.SimpleString):
            self._listed.add(id(node.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        # (the table's name: a lookup in it by the key is a reader's too)
        if _a_table_of_readers(node.value):
            self._reader_tables.update(target.target.value for target in node.targets if isinstance(target.target, cst.Name))
        if self._from_ray_gpu_ids(node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Subscript):
                    self._gpu_ids_keys.update(id(string) for element in target.target.slice
                                              for string in nodes_within(element, cst.SimpleString))

    def _from_ray_gpu_ids(self, value: cst.BaseExpression) -> bool:
        """Whether `value` is computed from the GPU ids Ray gave the task (`ray.get_gpu_ids()`)."""
        return any(RAY_GPU_IDS in qualified_names(self, call.func) for call in nodes_within(value, cst.Call))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        # (`environment_variables: dict[str, Callable[[], Any]] = {...}`, as vLLM's envs.py writes it)
        if _a_table_of_readers(node.value) and isinstance(node.target, cst.Name):
            self._reader_tables.add(node.target.value)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if _reads_the_environment(node):
            self._reader_names.add(id(node.key))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if isinstance(node.value, cst.Name) and node.value.value in self._reader_tables and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index):
                self._reader_names.add(id(index.value))

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        text = string_text(original_node)
        if (self.is_documentation(original_node) or text is None or CUDA_VARIABLE not in text
                or id(original_node) in self._reader_names or id(original_node) in self._gpu_ids_keys
                or (id(original_node) in self._listed and text in self._table_keys)):
            return updated_node
        self.record(original_node, f"change {CUDA_VARIABLE} to {NPU_VARIABLE}")
        return with_string_text(updated_node, text.replace(CUDA_VARIABLE, NPU_VARIABLE))

    def leave_FormattedStringText(self, original_node, updated_node):
        if CUDA_VARIABLE not in original_node.value:
            return updated_node
        self.record(original_node, f"change {CUDA_VARIABLE} to {NPU_VARIABLE}")
        return updated_node.with_changes(value=original_node.value.replace(CUDA_VARIABLE, NPU_VARIABLE))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        renamed = {id(arg): NPU_VARIABLE for arg in environment_keywords(original_node)
                   if arg.keyword.value == CUDA_VARIABLE and not self._from_ray_gpu_ids(arg.value)}
        for arg in original_node.args:
            if id(arg) in renamed:
                self.record(arg.keyword, f"change {CUDA_VARIABLE} to {NPU_VARIABLE}")
        return with_keywords_renamed(original_node, updated_node, renamed)


def _a_table_of_readers(value: Optional[cst.BaseExpression]) -> bool:
    """A dict with an entry of a function that reads the environment."""
    return isinstance(value, cst.Dict) and any(_reads_the_environment(element) for element in value.elements)


def _reads_the_environment(element: cst.BaseElement) -> bool:
    """An entry of a table of functions that read the environment: a key with a lambda."""
    return isinstance(element, cst.DictElement) and isinstance(element.value, cst.Lambda)
