"""Code that runs only where a CUDA-only package is installed: its rows are notes.

    if is_bnb_available():
        import bitsandbytes as bnb
        weight = bnb.nn.Int8Params(data)
    try:
        import triton
    except ImportError:
        triton = None

A library that supports bitsandbytes, Transformer Engine or Triton as an option tests whether
the package is there before it uses it, or imports it where a failed import is expected.  None of
these packages installs on an Ascend machine, so such code is not reached there: it fails nothing,
and there is nothing to port unless the NPU must do what the package did.  Its rows go to the log
as notes (with the package's tip) instead of the reports that `check` fails on.

Which code runs only after such a test is the file model's answer (reading.package_tests), the
same that the version probes read; this module says what the note says.
"""
from __future__ import annotations

from typing import Optional


def optional_tip(package: str, where: Optional[str], tip: str) -> str:
    """The note of a row that runs only `where` ("where is_bnb_available() holds"; None: an import
    in a `try` that expects it to fail)."""
    if where is None:
        return (f"imported in a try that expects the import to fail: {package} does not install on an Ascend "
                f"machine, so the import fails there as expected; to have the NPU do what it does: {tip}")
    return (f"runs only {where}: {package} does not install on an Ascend machine, so this is not reached there "
            f"and fails nothing; to have the NPU do it: {tip}")
