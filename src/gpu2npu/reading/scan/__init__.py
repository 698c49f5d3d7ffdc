"""What Python's own `ast` can tell about a file, at a tenth of the cost of a libcst parse.

Most files of a real repository mention no CUDA at all: they move tensors with `.to(device)` and
call `torch.*` operators.  For those a full libcst parse, rewrite and re-print is wasted, yet they
still need the API analysis (operators without an NPU kernel, unknown `torch.*` names).  So every
file is first read with `ast`:

- `needs_rewrite` is a deliberately generous test: True whenever any rule *might* edit the file
  (a CUDA/NCCL word in code, a DataLoader or DataParallel, a possibly-integer device argument, a
  CUDA-only package).  Only those files go through libcst, where the rules decide exactly.
  Comments and docstrings cannot make a file need rewriting: no rule edits them.
- `api_findings` resolves every call's name through the file's imports (`import torch as th`,
  `from torch import nn`, function-local imports) and reports, for the chosen torch_npu release,
  operators with no NPU kernel (unsupported_api.csv) and `torch.*` names or Tensor methods whose
  NPU support the data cannot decide (unknown_api.csv).

The scan reads the original text, so its line numbers are those of the input file.
"""
from __future__ import annotations

from .api_rows import OTHER_ACCELERATORS, api_findings
from .file_scan import FileScan
from .imports import ImportTable, scopes_of_code
from .reading import NOT_PARSED, dotted, nodes_by_class, nodes_of, not_parsed_row, parse
from .words import DEVICE_METHODS, INDEX_RETURNING, REWRITE_WORDS, SPELLING_ESCAPE, could_need_rewrite

__all__ = ["DEVICE_METHODS", "INDEX_RETURNING", "NOT_PARSED", "OTHER_ACCELERATORS", "REWRITE_WORDS",
           "SPELLING_ESCAPE", "FileScan", "ImportTable", "api_findings", "could_need_rewrite", "dotted",
           "nodes_by_class", "nodes_of", "not_parsed_row", "parse", "scopes_of_code"]
