"""Notebooks: code cells migrated as one module, everything else kept byte for byte."""
import json
import shutil

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.notebooks import migrate_notebook
from gpu2npu.migration.pipeline import Status
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

from helpers import FIXTURES, migrate, notebook_differences, read_csv, run_cli

OPTIONS = Options(api=apidata.load("2.1.0"))


def notebook(*cells, metadata=None):
    """nbformat 4 notebook from ("code" | "markdown", source) pairs."""
    return {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True),
             **({"execution_count": None, "outputs": []} if kind == "code" else {})}
            for kind, source in cells
        ],
        "metadata": metadata or {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def encode(value, indent=1, ensure_ascii=False, end="\n") -> bytes:
    return (json.dumps(value, indent=indent, ensure_ascii=ensure_ascii) + end).encode("utf-8")


def run(data: bytes):
    return migrate_notebook(data, "nb.ipynb", OPTIONS, rules_for(OPTIONS))


def sources(data: bytes):
    return ["".join(cell["source"]) for cell in json.loads(data)["cells"]]


def rows_of(result):
    return [{"File": c.file, "Start Line": str(c.start_line), "End Line": str(c.end_line),
             "Operation Type": c.operation.value, "Message": c.message} for c in result.changes]


TRAINING = notebook(
    ("markdown", "# Demo\nRuns on `cuda`."),
    ("code", "import os\nimport torch"),
    ("code", "x = torch.ones(2)\ny = x.cuda()\n!nvidia-smi"),
    ("code", "import torch\nz = y.cuda()"),
)


def test_changes_are_reported_by_cell_and_line_and_explain_the_diff():
    data = encode(TRAINING)
    result = run(data)
    assert result.status == Status.MIGRATED
    found = {(c.start_line, c.end_line, c.operation.value, c.rule, c.message) for c in result.changes}
    assert found == {
        (2, 2, "INSERT", "NPU001", "cell 2: insert import torch_npu"),
        (2, 2, "MODIFY", "NPU102", "cell 3: change .cuda() to .npu()"),
        (3, 3, "MODIFY", "NPU502", "cell 3: change nvidia-smi to npu-smi info"),
        (2, 2, "MODIFY", "NPU102", "cell 4: change .cuda() to .npu()"),
    }
    assert sources(result.output) == [
        "# Demo\nRuns on `cuda`.",
        "import os\nimport torch\nimport torch_npu",
        "x = torch.ones(2)\ny = x.npu()\n!npu-smi info",
        "import torch\nz = y.npu()",
    ]
    assert notebook_differences(data, result.output, rows_of(result)) == []


def test_the_invariant_check_sees_an_unexplained_cell_change():
    data = encode(TRAINING)
    result = run(data)
    rows = [row for row in rows_of(result) if not row["Message"].startswith("cell 4: ")]
    assert notebook_differences(data, result.output, rows) == [
        "cell 4: line 2 changed without a MODIFY/DELETE row: b'z = y.cuda()\\n'"]


def test_torch_npu_is_imported_once_after_the_first_torch_import():
    data = encode(notebook(("code", "x = 1"), ("code", "import torch\nimport numpy"), ("code", "import torch\ntorch.cuda.synchronize()")))
    texts = sources(run(data).output)
    assert texts == ["x = 1", "import torch\nimport torch_npu\nimport numpy", "import torch\ntorch_npu.npu.synchronize()"]


@pytest.mark.parametrize("indent, ensure_ascii, end", [(1, False, "\n"), (2, True, ""), (4, False, ""), ("\t", True, "\n"), (None, False, "\n")])
def test_the_layout_of_the_file_is_kept(indent, ensure_ascii, end):
    original = notebook(("markdown", "Précis — “quoted”"), ("code", "import torch\nx = torch.zeros(1).cuda()  # é"))
    data = encode(original, indent, ensure_ascii, end)
    result = run(data)
    expected = json.loads(data)
    expected["cells"][1]["source"] = ["import torch\n", "import torch_npu\n", "x = torch.zeros(1).npu()  # é"]
    assert result.output == encode(expected, indent, ensure_ascii, end)


def test_key_order_and_crlf_line_endings_are_kept():
    original = {"nbformat_minor": 5, "nbformat": 4, "metadata": {}, "cells": [
        {"source": "import torch\ntorch.cuda.empty_cache()", "outputs": [], "metadata": {}, "execution_count": 3,
         "cell_type": "code"}]}
    data = json.dumps(original, indent=1).replace("\n", "\r\n").encode() + b"\r\n"
    output = run(data).output
    original["cells"][0]["source"] = "import torch\nimport torch_npu\ntorch_npu.npu.empty_cache()"  # a string stays one
    assert output == json.dumps(original, indent=1).replace("\n", "\r\n").encode() + b"\r\n"


def test_outputs_and_metadata_are_untouched():
    original = notebook(("code", "import torch\nprint(torch.cuda.is_available())"))
    original["cells"][0]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["cuda True\n"]}]
    original["cells"][0]["metadata"] = {"tags": ["cuda"]}
    result = json.loads(run(encode(original)).output)
    assert result["cells"][0]["outputs"] == original["cells"][0]["outputs"]
    assert result["cells"][0]["metadata"] == {"tags": ["cuda"]} and result["metadata"] == original["metadata"]


@pytest.mark.parametrize("cells", [
    [("code", "import numpy as np\nprint(np.ones(2))"), ("markdown", "No GPU here.")],
    [("markdown", "Runs on `cuda` and talks `nccl`."), ("code", "print(1)")],
    [("code", "import torch\nx = torch.ones(2)\nprint(x.device)")],
])
def test_a_notebook_that_needs_nothing_is_copied_byte_for_byte(cells, tmp_path):
    data = encode(notebook(*cells), indent=3, end="")
    assert run(data).output is None
    project = tmp_path / "p"
    project.mkdir()
    (project / "nb.ipynb").write_bytes(data)
    assert (migrate(project, tmp_path / "out") / "nb.ipynb").read_bytes() == data


MAGICS = """\
%matplotlib inline
files = !ls
!CUDA_VISIBLE_DEVICES=0 python train.py --backend nccl
for i in range(2):
    !echo $i
torch.cuda?
!echo one \\
    two
%time y = x.cuda()
x = x.cuda()"""


def test_magics_are_masked_restored_and_migrated():
    data = encode(notebook(("code", "import torch\nx = torch.ones(1)"), ("code", MAGICS)))
    result = run(data)
    assert result.status == Status.MIGRATED
    assert sources(result.output)[1] == MAGICS.replace(
        "!CUDA_VISIBLE_DEVICES=0 python train.py --backend nccl",
        "!ASCEND_RT_VISIBLE_DEVICES=0 python train.py --backend hccl",
    ).replace("x = x.cuda()", "x = x.npu()")
    assert {(f.api, f.start_line) for f in result.findings if f.rule == "NPU602"} == {("%time", 9)}
    assert notebook_differences(data, result.output, rows_of(result)) == []


def test_cell_magics():
    cells = [("code", "%%time\nimport torch\nx = torch.ones(1).cuda()"),
             ("code", "%%bash\nexport CUDA_VISIBLE_DEVICES=1\nnvidia-smi"),
             ("code", "%%writefile job.py\nimport torch\ntorch.cuda.synchronize()"),
             ("code", "%%html\n<b>cuda</b>")]
    result = run(encode(notebook(*cells)))
    assert sources(result.output) == [
        "%%time\nimport torch\nimport torch_npu\nx = torch.ones(1).npu()",
        "%%bash\nexport ASCEND_RT_VISIBLE_DEVICES=1\nnpu-smi info",
        "%%writefile job.py\nimport torch\ntorch.cuda.synchronize()",
        "%%html\n<b>cuda</b>",
    ]
    assert {(f.api, f.start_line, f.end_line) for f in result.findings if f.rule == "NPU602"} == {
        ("%%writefile", 1, 3), ("%%html", 1, 2)}


def test_findings_name_the_cell():
    result = run(encode(notebook(("markdown", "x"), ("code", "import torch\ntorch.cuda.nvtx.range_push('a')"))))
    finding = next(f for f in result.findings if f.api.startswith("torch.cuda.nvtx"))
    assert (finding.file, finding.start_line) == ("nb.ipynb", 2) and finding.tip.startswith("cell 2: ")


def test_migrating_again_changes_nothing():
    first = run(encode(notebook(("code", MAGICS.replace("x = x", "import torch\nx = torch")))))
    assert first.status == Status.MIGRATED
    second = run(first.output)
    assert second.output is None and not second.changes


@pytest.mark.parametrize("data, reason", [
    (b'{"cells": [', "not valid notebook JSON"),
    (b'{"worksheets": []}', "not an nbformat 4 notebook"),
    (b"\xff\xfe{}", "not a UTF-8 notebook"),
    (encode(notebook(("markdown", "a"), ("code", "import torch\nx = (torch.cuda.is_available("))), "cell 2 is not valid Python 3"),
])
def test_a_notebook_that_cannot_be_read_is_a_failure_with_its_reason(data, reason):
    result = run(data)
    assert result.status == Status.FAILED and result.output is None and reason in result.error


def test_other_languages_are_left_alone():
    data = encode(notebook(("code", "x <- cuda()"), metadata={"language_info": {"name": "R"}}))
    assert run(data).status == Status.SKIPPED


def test_broken_notebook_is_copied_the_run_goes_on_and_exits_3(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "notebook_and_scripts", project)
    (project / "broken.ipynb").write_bytes(b'{"cells": [{"cell_type": "code", "source": "x.cuda()"')
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert result.exit_code == 3
    target = tmp_path / "out" / "p_msft"
    assert (target / "broken.ipynb").read_bytes() == (project / "broken.ipynb").read_bytes()
    log = (target / "msFmkTranspltlog.txt").read_text()
    assert "[WARNING] broken.ipynb: copied unchanged, not valid notebook JSON" in log
    assert any(row["File"] == "fit_line.ipynb" for row in read_csv(target / "change_list.csv"))
    assert "broken.ipynb: copied unchanged" in result.output


def test_notebooks_get_the_single_card_migration_in_every_mode(tmp_path):
    """A notebook runs in one kernel: `distributed` does not give its loaders a DistributedSampler."""
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "single_card_for_multi", project)
    cells = ("code", "import torch\nfrom torch.utils.data import DataLoader\n"
                     "loader = DataLoader(train_set, batch_size=2, shuffle=True)\nx = torch.ones(1).cuda()")
    (project / "explore.ipynb").write_bytes(encode(notebook(cells)))
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "distributed", "-m", "train.py")
    assert result.exit_code == 0, result.output
    text = sources((tmp_path / "out" / "p_msft_multi" / "explore.ipynb").read_bytes())[0]
    assert "x = torch.ones(1).npu()" in text and "Sampler" not in text and "drop_last=True" in text


def test_lines_of_a_multi_line_string_are_not_magics():
    cell = 'import torch\nusage = """\n%d runs on cuda\n!nvidia-smi shows the cards\n"""\nx = torch.ones(1).cuda()\n!nvidia-smi'
    result = run(encode(notebook(("code", cell))))
    assert sources(result.output)[0] == cell.replace("x = torch.ones(1).cuda()\n!nvidia-smi",
                                                     "x = torch.ones(1).npu()\n!npu-smi info").replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1)
    assert not [f for f in result.findings if f.rule == "NPU602"]


def test_a_notebook_whose_only_cuda_switch_names_no_cuda_is_migrated():
    """The notebook's gate is the scan's: cuDNN's TF32 switch (no CUDA word in it) is migrated
    and a CUDA-only package is reported, as they are in a .py file."""
    result = run(encode(notebook(("code", "import torch\ntorch.backends.cudnn.allow_tf32 = True"))))
    assert result.status == Status.MIGRATED and "allow_hf32" in sources(result.output)[0]
    reported = run(encode(notebook(("code", "import liger_kernel\nliger_kernel.apply()"))))
    assert "liger_kernel" in {finding.api for finding in reported.findings}
