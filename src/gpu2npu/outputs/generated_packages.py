"""Copy a package kept as source in gpu2npu/generated/ into a migrated tree (byte for byte; the
tool never imports it).  A tree that holds the package already keeps its own."""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Sequence

SOURCE = "gpu2npu.generated"  # importing it runs nothing (a docstring)


def package_file(name: str, file: str) -> bytes:
    """The bytes of one file of package `name`, as the migration writes it."""
    return (resources.files(SOURCE) / name / file).read_bytes()


def copy_package(root: Path, name: str, files: Sequence[str]) -> bool:
    """Write package `name` into `root`; False when `root` holds one already (it is kept)."""
    folder = root / name
    if folder.exists():
        return False
    folder.mkdir()
    for file in files:
        (folder / file).write_bytes(package_file(name, file))
    return True

