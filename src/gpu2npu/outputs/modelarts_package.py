"""-m/--modelarts: the ascend_modelarts_function/ package written at the top of the output.

Its files are kept as source in gpu2npu/generated/ (so the tests run them) and copied byte for
byte; the tool never imports them.  A migrated tree that already holds the package (a second
migration, or one whose path_mapping_config.py the user filled in) keeps its own.
"""
from __future__ import annotations

from pathlib import Path

from .generated_packages import copy_package

PACKAGE_NAME = "ascend_modelarts_function"
FILES = ("__init__.py", "modelarts_path_manager.py", "path_mapping_config.py")


def write_package(root: Path) -> bool:
    """Write the package into `root`; False when `root` holds one already (it is kept)."""
    return copy_package(root, PACKAGE_NAME, FILES)
