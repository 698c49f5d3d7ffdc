"""`dryrun --venv DIR`: the environment a dry run runs in, made (or reused) with the torch the
release is built for (its CPU build) and the migrated project's requirement files installed, so
that the dry run also proves that those files install.

torch_npu is not installed: the imitation stands in for it (its lines are left out of the
requirements).  What does not install is reported, requirement by requirement, and is a hit of the
dry run.  pip is run as the user has it configured (its index, its mirror, PIP_* variables); the
CPU build of torch comes from PyPI's index or PyTorch's CPU index.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from ..dependencies.requirements_file import requirement_lines
from ..knowledge.versions import major_minor
from ..reading.dependency_files import REQUIREMENTS, dependency_format

# Where the CPU builds of torch are (PyPI's Linux x86_64 wheels are CUDA builds).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass
class Environment:
    python: Path
    made: bool  # made now (False: reused)
    torch: str  # the torch version it has ("" where torch did not install)
    # (where: a requirement file and line, or "torch"; the requirement; pip's last words)
    not_installed: List[Tuple[str, str, str]] = field(default_factory=list)


def python_of(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def requirement_files(project: Path) -> List[Path]:
    """The requirement files at the top of `project` (and in a requirements/ folder), as the
    migration writes them; not a constraints file, which says which versions, not what to install."""
    found = [path for path in sorted(project.iterdir()) if path.is_file() and dependency_format(path.name) == REQUIREMENTS
             and not path.name.lower().startswith("constraints")]
    folder = project / "requirements"
    if folder.is_dir():
        found += [path for path in sorted(folder.iterdir())
                  if path.is_file() and dependency_format(f"requirements/{path.name}") == REQUIREMENTS]
    return found


def _last_words(done: subprocess.CompletedProcess) -> str:
    lines = [line.strip() for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or [f"exit status {done.returncode}"])[-1][:300]


def torch_of(python: Path) -> str:
    done = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else ""


def _read_requirements(file: Path) -> Tuple[List[str], List[Tuple[int, str]]]:
    """The options of `file` (index URLs; the files it includes, by their absolute paths) and (line
    number, requirement as written) of each requirement pip is to install here: every one but
    torch_npu's, for which the imitation stands in.  Read as the migration reads the file."""
    options, requirements = [], []
    for line in requirement_lines(file.read_text(encoding="utf-8", errors="replace")):
        if line.include is not None:
            flag = "-c" if line.code.startswith(("-c", "--constraint")) else "-r"
            options.append(f"{flag} {(file.parent / line.include).resolve()}")
        elif line.requirement is None:
            options.append(line.code)
        elif line.requirement.normalised != "torch-npu":
            requirements.append((line.number, line.code))
    return options, requirements


def _pip_install(python: Path, lines: Sequence[str], project: Path, scratch: Path, say) -> subprocess.CompletedProcess:
    """pip install the lines of a requirement file (run in the project's folder, as the file's own
    relative paths mean)."""
    scratch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    say(f"$ pip install -r <{'; '.join(lines)}>")
    return subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                           str(scratch)], capture_output=True, text=True, cwd=project, stdin=subprocess.DEVNULL)


def prepare(folder: Path, torch_version: str, project: Path, say: Callable[[str], None] = lambda text: None,
            base_python: Optional[Path] = None) -> Environment:
    """Make (or reuse) the environment in `folder`: the release's torch (CPU), then each
    requirement of the project's requirement files."""
    python = python_of(folder)
    made = not python.exists()
    if made:
        say(f"$ python -m venv {folder}")
        done = subprocess.run([str(base_python or sys.executable), "-m", "venv", str(folder)], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise OSError(f"cannot make a virtual environment in {folder}: {_last_words(done)}")
    environment = Environment(python, made, torch_of(python))
    with tempfile.TemporaryDirectory(prefix="gpu2npu-venv-") as scratch_folder:
        scratch = Path(scratch_folder) / "requirements.txt"
        if major_minor(environment.torch) != major_minor(torch_version):
            wanted = f"torch=={torch_version}"
            # From the CPU index alone (it carries torch's dependencies too): with PyPI beside it,
            # pip may take PyPI's wheel of the same version, a CUDA build (2.1.0+cu121: 2 GB of
            # NVIDIA libraries); PyPI (or the configured mirror) where the PyTorch index is out of reach.
            done = _pip_install(python, [f"--index-url {TORCH_CPU_INDEX}", wanted], project, scratch, say)
            if done.returncode != 0:
                done = _pip_install(python, [f"--extra-index-url {TORCH_CPU_INDEX}", wanted], project, scratch, say)
            if done.returncode != 0:
                environment.not_installed.append(("torch", wanted, _last_words(done)))
            environment.torch = torch_of(python)
        for file in requirement_files(project):
            options, requirements = _read_requirements(file)
            if not requirements:
                continue
            shown = file.relative_to(project).as_posix()
            if _pip_install(python, [*options, *(text for _, text in requirements)], project, scratch, say).returncode == 0:
                continue
            for number, text in requirements:  # which of them: one at a time
                alone = _pip_install(python, [*options, text], project, scratch, say)
                if alone.returncode != 0:
                    environment.not_installed.append((f"{shown}:{number}", text, _last_words(alone)))
    return environment


def hits_of(environment: Environment) -> List[dict]:
    """The dry run's hits for what did not install (each a reason the project does not run as
    its requirement files say)."""
    return [{"kind": "install", "what": f"{requirement} ({why})", "where": where, "count": 1}
            for where, requirement, why in environment.not_installed]


def description(environment: Environment, folder: Path) -> dict:
    """What the dry run's report says of the environment."""
    return {"path": str(folder), "made": environment.made, "torch": environment.torch,
            "not_installed": [{"where": where, "requirement": requirement, "why": why}
                              for where, requirement, why in environment.not_installed]}
