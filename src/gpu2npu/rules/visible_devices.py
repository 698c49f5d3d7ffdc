"""CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES in code."""
from __future__ import annotations

import libcst as cst

from .base import Example, Rule
from .names import DocstringTracker, environment_keywords, string_text, with_keywords_renamed, with_string_text

CUDA_VARIABLE = "CUDA_VISIBLE_DEVICES"
NPU_VARIABLE = "ASCEND_RT_VISIBLE_DEVICES"


class VisibleDevicesEnv(DocstringTracker, Rule):
    """Ascend's runtime reads `ASCEND_RT_VISIBLE_DEVICES` to restrict the devices a process sees.

    Every string in code that names `CUDA_VISIBLE_DEVICES` (an `os.environ` key, a `getenv`
    argument, a command line built in Python), and the keyword of an environment built by name
    (`dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))`, `env.update(...)`), names the Ascend
    variable instead.
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
    )
    unchanged = ("import os\n# export CUDA_VISIBLE_DEVICES=0\n", "import os\nrun(cmd, CUDA_VISIBLE_DEVICES=gpu)\n")

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        DocstringTracker.__init__(self)

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        text = string_text(original_node)
        if self.is_documentation(original_node) or text is None or CUDA_VARIABLE not in text:
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
                   if arg.keyword.value == CUDA_VARIABLE}
        for arg in original_node.args:
            if id(arg) in renamed:
                self.record(arg.keyword, f"change {CUDA_VARIABLE} to {NPU_VARIABLE}")
        return with_keywords_renamed(original_node, updated_node, renamed)
