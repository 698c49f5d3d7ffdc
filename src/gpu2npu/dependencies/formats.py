"""Which files hold a project's dependencies, by name (read at discovery: nothing heavy here)."""
from __future__ import annotations

import fnmatch
from pathlib import PurePosixPath
from typing import Optional

REQUIREMENTS = "requirements"
CONDA = "conda"
PYPROJECT = "pyproject"
SETUP_CFG = "setup_cfg"
SETUP_PY = "setup_py"
DOCKERFILE = "dockerfile"

_REQUIREMENT_NAMES = ("requirements*.txt", "requirements*.in", "constraints*.txt", "*-requirements.txt",
                      "*_requirements.txt")
_CONDA_NAMES = ("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml", "*environment.yml",
                "*environment.yaml", "*-env.yml", "*_env.yml")


def dependency_format(relative: str) -> Optional[str]:
    """Which kind of dependency file `relative` is (None: none)."""
    path = PurePosixPath(relative)
    name = path.name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in _REQUIREMENT_NAMES):
        return REQUIREMENTS
    if name.endswith(".txt") and path.parent.name.lower() in ("requirements", "reqs", "requirement"):
        return REQUIREMENTS
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in _CONDA_NAMES):
        return CONDA
    if name == "pyproject.toml":
        return PYPROJECT
    if name == "setup.cfg":
        return SETUP_CFG
    if name == "setup.py":
        return SETUP_PY
    if name in ("dockerfile", "containerfile") or name.startswith("dockerfile.") or name.endswith(".dockerfile"):
        return DOCKERFILE
    return None
