"""The ascend_flash_attn/ package written at the top of the output when a migrated file imports it
(rule NPU501).

Its files are kept as source in gpu2npu/generated/ (so that the tests run them) and copied byte
for byte; the tool never imports them.  A tree that holds the package already (a second
migration) keeps its own.
"""
from __future__ import annotations

from pathlib import Path

from .generated_packages import copy_package
from .rules.flash_attn import PACKAGE

RULE = "NPU261"
FILES = ("__init__.py", "flash_attn_interface.py", "bert_padding.py")


def write_package(root: Path) -> bool:
    """Write the package into `root`; False when `root` holds one already (it is kept)."""
    return copy_package(root, PACKAGE, FILES)
