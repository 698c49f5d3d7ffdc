"""The project's dependencies: requirements files, environment.yml, pyproject.toml, setup.py,
setup.cfg and Dockerfiles, migrated (or reported) after the code, since a CUDA-only package can
only go where no migrated file imports it anymore.

`dependency_format(name)` tells which files these are; `migrate_dependencies` runs one file
with a `Context` that knows the run's torch_npu release and who still imports what.
"""
from __future__ import annotations

from ..records.change import Operation
from .conda_file import migrate_environment
from ..knowledge.versions import satisfies
from .decide import Context
from .dockerfile import report_dockerfile
from ..reading.dependency_files import CONDA, DOCKERFILE, PYPROJECT, REQUIREMENTS, SETUP_CFG, SETUP_PY, dependency_format
from .pyproject_file import migrate_pyproject
from .requirements_file import FileOutcome, migrate_requirements
from .setup_files import migrate_setup_cfg, migrate_setup_py
from .table import load as load_table

_BY_FORMAT = {REQUIREMENTS: migrate_requirements, CONDA: migrate_environment, PYPROJECT: migrate_pyproject,
              SETUP_CFG: migrate_setup_cfg, SETUP_PY: migrate_setup_py, DOCKERFILE: report_dockerfile}


def migrate_dependencies(form: str, text: str, path: str, context: Context) -> FileOutcome:
    outcome = _BY_FORMAT[form](text, path, context)
    outcome.changes.sort(key=lambda c: (c.start_line, c.end_line, c.operation != Operation.INSERT))
    outcome.findings.sort()
    return outcome


__all__ = ["CONDA", "DOCKERFILE", "PYPROJECT", "REQUIREMENTS", "SETUP_CFG", "SETUP_PY", "Context", "FileOutcome",
           "dependency_format", "load_table", "migrate_dependencies", "satisfies"]
