"""The migrated notebook really trains: its code cells, run in order as one script (IPython
lines left out, shell cells skipped), against the CPU stand-in of torch_npu, give the losses
of the original notebook run on the CPU."""
import json
import re

import pytest

pytest.importorskip("torch")

from gpu2npu.knowledge import apidata  # noqa: E402
from helpers import FIXTURES, migrate  # noqa: E402
from standin_runner import parse_losses, run_script  # noqa: E402

NOTEBOOK = "fit_line.ipynb"
IPYTHON_LINE = re.compile(r"^\s*(!|%)")


def as_script(notebook_path, script_path):
    """The Python of a notebook as a script, as a kernel runs it (without IPython's own lines)."""
    cells = json.loads(notebook_path.read_text(encoding="utf-8"))["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if source.startswith("%%") and not source.startswith("%%time"):
            continue  # %%bash and other non-Python cells
        lines += [line for line in source.splitlines() if not IPYTHON_LINE.match(line)]
    script_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return script_path


@pytest.mark.parametrize("version", ["2.1.0", "2.8.0"])
def test_migrated_notebook_trains_like_the_original(version, tmp_path):
    source = FIXTURES / "notebook_and_scripts"
    original = run_script(as_script(source / NOTEBOOK, tmp_path / "original.py"), [], cwd=tmp_path, use_standin=False)
    assert original.returncode == 0, original.stderr
    target = migrate(source, tmp_path / "out", version)
    script = as_script(target / NOTEBOOK, tmp_path / "migrated.py")
    assert "import torch_npu" in script.read_text() and "cuda" not in script.read_text()
    data = apidata.resources.files(apidata.DATA_PACKAGE).joinpath(f"torch_npu_{version}.json")
    migrated = run_script(script, [], cwd=tmp_path, env_extra={"STANDIN_TORCH_NPU_DATA": str(data)})
    assert migrated.returncode == 0, migrated.stderr
    expected = parse_losses(original.stdout)
    assert len(expected) == 6 and expected[-1] < expected[0]
    assert parse_losses(migrated.stdout) == pytest.approx(expected, rel=1e-6, abs=1e-7)
    assert "training on cpu" in original.stdout and "training on npu" in migrated.stdout
    assert "peak memory" in migrated.stdout  # the NPU branch ran, with torch_npu.npu's memory statistics
