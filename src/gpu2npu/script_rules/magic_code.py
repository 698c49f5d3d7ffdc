"""Notebooks: CUDA code inside magics whose content gpu2npu does not migrate is reported."""
from __future__ import annotations

import re

from ..records.change import Report
from .base import LineReport, ScriptExample, ScriptRule

CUDA_WORDS = re.compile(r"cuda|nccl|nvidia", re.IGNORECASE)


class CudaInMagics(ScriptRule):
    """Some IPython magics hold code that is neither plain Python nor a shell command: the
    statement timed by `%time`/`%timeit`/`%%timeit`, `%prun`'s profiled call, the content of
    `%%writefile`, `%%script python` and other cell magics.  gpu2npu leaves that code as written
    (the Python around it is migrated, the magic line itself is kept byte for byte) and reports
    each such magic that mentions CUDA, so that it is checked by hand.
    """

    code = "NPU602"
    summary = "notebooks: CUDA code inside %timeit, %%writefile and other magics reported"
    examples = (
        ScriptExample("import torch\nx = torch.ones(8)\n%timeit x.cuda()\n",
                      "import torch\nx = torch.ones(8)\n%timeit x.cuda()\n",
                      path="example.ipynb", reported=("%timeit",)),
        ScriptExample("%%writefile helper.py\nimport torch\nx = torch.zeros(2).cuda()\n",
                      "%%writefile helper.py\nimport torch\nx = torch.zeros(2).cuda()\n",
                      path="example.ipynb", reported=("%%writefile",)),
    )
    unchanged = ("%matplotlib inline\n",)

    @classmethod
    def report_magic(cls, magic: str, text: str):
        """The report for magic `magic` (e.g. "%timeit") holding `text`, or None."""
        if not CUDA_WORDS.search(text):
            return None
        return LineReport(Report.UNSUPPORTED, magic, "code inside this magic is not migrated: change its CUDA code by hand")

    @classmethod
    def apply(cls, line, dialect):
        return [], []
