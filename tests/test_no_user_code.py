"""SPEC section 6, invariant 7: the tool never executes, imports or evaluates the user's code.

Every file of the project below announces itself by writing a marker file when it is executed:
module-level code, the files Python or pytest run by themselves (sitecustomize.py, conftest.py,
setup.py, __main__.py), and files named like modules the tool imports (json.py, inspect.py),
which `python -m` would pick up from the current folder.  A migration in every mode, run from
inside the project, must leave no marker.
"""
import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT

NAMES = ["train.py", "model.py", "conftest.py", "setup.py", "sitecustomize.py", "usercustomize.py", "__main__.py",
         "__init__.py", "json.py", "inspect.py", "typing.py", "enum.py", "csv.py", "logging.py", "token.py",
         "pkg/__init__.py", "pkg/layers.py"]


def _announcing(marker_dir, name):
    return (
        "import os, torch\n"
        f"open(os.path.join({str(marker_dir)!r}, {name.replace('/', '_')!r}), 'w').write('executed')\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
        "loader = torch.utils.data.DataLoader([], batch_size=2, shuffle=True)\n"
        "if __name__ == '__main__':\n"
        "    model(torch.zeros(2).cuda())\n"
    )


@pytest.mark.parametrize("mode", [[], ["-s"], ["distributed", "-m", "train.py", "-t", "model"]],
                         ids=["single", "specify-device", "distributed"])
def test_no_project_file_is_ever_executed(tmp_path, mode):
    markers = tmp_path / "markers"
    markers.mkdir()
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    for name in NAMES:
        (project / name).write_text(_announcing(markers, name))
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": _announcing(markers, "notebook").splitlines(keepends=True)}],
                "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    (project / "notebook.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    completed = subprocess.run(
        [sys.executable, "-m", "gpu2npu", "-i", ".", "-o", str(tmp_path / "out"), "-v", "2.1.0", "-j", "2", *mode],
        cwd=project, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    migrated = next((tmp_path / "out").iterdir())
    assert b".npu()" in (migrated / "pkg" / "layers.py").read_bytes()  # the files were read and migrated
