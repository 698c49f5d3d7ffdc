"""What a project pins (its torch, for a command given no -v; its transformers, for NPU266), read
from the dependency files at the project's root (requirements*.txt and requirements/,
pyproject.toml, setup.py, setup.cfg, conda environment files): torch as the migration reads it,
another package's version clauses from the requirement strings."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from ..reading.dependency_files import DOCKERFILE, dependency_format
from ..records.options import ProjectPins


@dataclass(frozen=True)
class PinnedTorch:
    version: str  # the release gpu2npu has data for that the pin allows (the lowest, where several)
    where: str  # "requirements.txt:3"
    spec: str  # the pin as written ("==2.1.0", ">=2.1,<2.3")


def _candidates(root: Path) -> List[Path]:
    found = []
    for folder in (root, root / "requirements"):
        try:
            children = sorted(folder.iterdir())
        except OSError:
            continue
        for child in children:
            relative = child.relative_to(root).as_posix()
            form = dependency_format(relative)
            if form is not None and form != DOCKERFILE and child.is_file():
                found.append(child)
    # the files pip reads first come first: requirements, then the packaging metadata
    return sorted(found, key=lambda path: (not path.name.startswith("requirements"), path.name != "requirements.txt",
                                           path.relative_to(root).as_posix()))


def pinned_torch(root: Path) -> Optional[PinnedTorch]:
    """The first torch pin of the project at `root` that names a release gpu2npu has data for."""
    from ..knowledge.apidata import available_versions, load
    from . import Context, load_table, migrate_dependencies
    from ..knowledge.versions import satisfies

    versions = available_versions()
    context = None
    for path in _candidates(root):
        relative = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "torch" not in text:
            continue
        context = context or Context(load(versions[-1]), load_table())
        try:
            outcome = migrate_dependencies(dependency_format(relative), text, relative, context)
        except Exception:  # a file the migration would report; it decides no version here
            continue
        for line, spec in outcome.torch_pins:
            if not spec or spec.startswith(("git+", "http", "file:")):
                continue
            matching = [version for version in versions if satisfies(version, spec)]
            if matching:
                return PinnedTorch(matching[0], f"{relative}:{line}", spec)
    return None


def _requirement_pattern(name: str) -> "re.Pattern[str]":
    clause = r"(?:===|==|!=|~=|<=|>=|<|>|=)\s*[\w.*+!-]+"
    return re.compile(rf"(?<![\w.-]){re.escape(name)}\s*(?:\[[^\]]*\])?\s*({clause}(?:\s*,\s*{clause})*)", re.IGNORECASE)


def pinned_requirement(root: Path, name: str) -> Optional[str]:
    """The version clauses of the first requirement on `name` in the dependency files at `root`
    (">=4.51,<4.54"; a conda `=4.45` is "==4.45"); None where none gives a version."""
    pattern = _requirement_pattern(name)
    for path in _candidates(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if name not in text.lower():
            continue
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            match = pattern.search(line)
            if match:
                return re.sub(r"(?<![<>=!~])=(?!=)", "==", re.sub(r"\s+", "", match.group(1)))
    return None


def project_pins(root: Path) -> ProjectPins:
    """What the project at `root` pins of the libraries whose releases decide what runs on the NPU."""
    return ProjectPins(*(pinned_requirement(root, name) for name in ProjectPins._fields))
