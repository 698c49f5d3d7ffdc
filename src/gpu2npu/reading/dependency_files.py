"""Which files hold a project's dependencies, by name (read at discovery: nothing heavy here)."""
from __future__ import annotations

import fnmatch
import re
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


# Each list as one pattern: asked of every file of a project, a dozen fnmatch calls per file
# cost more than the rest of a re-run's look at it.
_REQUIREMENT_NAME = re.compile("|".join(fnmatch.translate(pattern) for pattern in _REQUIREMENT_NAMES))
_CONDA_NAME = re.compile("|".join(fnmatch.translate(pattern) for pattern in _CONDA_NAMES))


def dependency_format(relative: str) -> Optional[str]:
    """Which kind of dependency file `relative` is (None: none)."""
    path = PurePosixPath(relative)
    name = path.name.lower()
    if _REQUIREMENT_NAME.match(name):
        return REQUIREMENTS
    if name.endswith(".txt") and path.parent.name.lower() in ("requirements", "reqs", "requirement"):
        return REQUIREMENTS
    if _CONDA_NAME.match(name):
        return CONDA
    if name == "pyproject.toml":
        return PYPROJECT
    if name == "setup.cfg":
        return SETUP_CFG
    if name == "setup.py":
        return SETUP_PY
    # (a variant beside it: Dockerfile.gpu, Dockerfile-cu121, Dockerfile_cuda, gpu.Dockerfile)
    if name in ("dockerfile", "containerfile") or name.startswith(("dockerfile.", "dockerfile-", "dockerfile_")) \
            or name.endswith(".dockerfile"):
        return DOCKERFILE
    return None
