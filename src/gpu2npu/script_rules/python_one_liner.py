"""`python -c '...torch.cuda.device_count()...'` in a launch script: the code run is Python, its
torch.cuda calls are migrated as the Python files' are (torch_npu.npu, torch_npu imported first)."""
from __future__ import annotations

import re
from typing import ClassVar, Optional

from ..knowledge.apidata import ApiData
from ..records.change import Report
from ..records.options import Options
from .base import LineEdit, LineReport, ScriptExample, ScriptRule

# `python -c CODE`, `python3.10 -u -c "CODE"`: the quoted code (no escaped quote in it).
ONE_LINER = re.compile(r"(?<![\w./-])(?:[\w./~-]*/)?python(?:3(?:\.\d+)?)?(?:\s+-[A-Za-z]+)*\s+-c\s+(['\"])([^'\"\\]*)\1")
CUDA_CALL = re.compile(r"(?<![\w.])torch\.cuda\.(\w+)")
# What such code asks whose NPU answer means the same to the script reading it (a count, a yes or
# no, a name, memory in bytes); others (get_device_capability, which is None on the NPU where the
# script may parse "(8, 0)") are reported.
SAME_ANSWER = frozenset({"device_count", "is_available", "current_device", "get_device_name", "mem_get_info",
                         "memory_allocated", "max_memory_allocated", "memory_reserved", "empty_cache", "synchronize",
                         "is_bf16_supported", "set_device"})
MISSING_TIP = "torch_npu {release} has no torch_npu.npu.{name}: change this python -c code by hand"
OTHER_TIP = ("python -c code that asks torch.cuda.{name}: the NPU's answer (torch_npu.npu.{name}, with import "
             "torch_npu first) may not read as the script expects: change it by hand")


class PythonOneLiner(ScriptRule):
    """A launch script that runs a line of Python (`GPUS=$(python -c 'import torch;
    print(torch.cuda.device_count())')`) asks CUDA for what the program is given: on an Ascend
    machine torch.cuda counts no device, and `torchrun --nproc_per_node 0` refuses to start.  The
    code's torch.cuda calls whose NPU answer reads the same to the script (a count, a yes or no, a
    name, bytes: SAME_ANSWER) become torch_npu.npu's, with `import torch_npu` put first in the code,
    as in a migrated Python file; where the code asks anything else (get_device_capability, None on
    the NPU where the script may parse "(8, 0)") or what the release lacks, it is reported instead.
    """

    code = "NPU508"
    summary = "launch scripts: torch.cuda in python -c code -> torch_npu.npu (torch_npu imported in it)"
    triggers = ("torch.cuda",)
    api: ClassVar[Optional[ApiData]] = None  # the release's API data (for_project)
    examples = (
        ScriptExample("GPUS_PER_NODE=$(python -c 'import torch; print(torch.cuda.device_count())')\n",
                      "GPUS_PER_NODE=$(python -c 'import torch_npu; import torch; print(torch_npu.npu.device_count())')\n"),
        ScriptExample('python3 -c "import torch; assert torch.cuda.is_available()" && torchrun train.py\n',
                      'python3 -c "import torch_npu; import torch; assert torch_npu.npu.is_available()" && torchrun '
                      'train.py\n'),
    )
    unchanged = (
        "python -c 'import torch; print(torch.__version__)'\n",
        "python train.py --note torch.cuda.device_count\n",  # no code run: an argument
    )

    @classmethod
    def for_project(cls, options: Options):
        return cls.with_settings(api=options.api)

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match in ONE_LINER.finditer(line.code):
            code_start, code = match.start(2), match.group(2)
            calls = list(CUDA_CALL.finditer(code))
            left = [call for call in calls if call.group(1) not in SAME_ANSWER
                    or (cls.api is not None and not cls.api.npu_has((call.group(1),)))]
            for call in left:
                name = call.group(1)
                tip = (MISSING_TIP.format(release=cls.api.torch_npu_version, name=name)
                       if cls.api is not None and not cls.api.npu_has((name,)) else OTHER_TIP.format(name=name))
                reports.append(LineReport(Report.UNSUPPORTED, f"torch.cuda.{name}", tip))
            if not calls or left:
                continue
            if "torch_npu" not in code:
                edits.append(LineEdit(code_start, code_start, "import torch_npu; ",
                                      "import torch_npu first in the python -c code"))
            for call in calls:
                start = code_start + call.start()
                edits.append(LineEdit(start, start + len("torch.cuda"), "torch_npu.npu",
                                      f"change torch.cuda.{call.group(1)} to torch_npu.npu.{call.group(1)} in python -c code"))
        return edits, reports
