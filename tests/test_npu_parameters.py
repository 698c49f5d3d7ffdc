"""torch.cuda calls whose torch_npu.npu counterpart names a parameter otherwise, or lacks it.

Renamed as written, `torch.cuda.get_device_name(device=0)` and
`torch.cuda.is_bf16_supported(including_emulation=False)` raise TypeError on the NPU where they ran
on CUDA (torch_npu names the first `device_name` and takes the second only from 2.9.0).  What has no
meaning on the NPU is left out, a renamed parameter given by position or by torch_npu's name, and
a call whose parameter changes what it does stays as written, with a row saying why.
"""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.records.change import Report
from gpu2npu.rules import Options

from helpers import read_csv, run_cli


def migrate(source: str, version: str = "2.1.0"):
    result = migrate_source(source.encode(), "f.py", Options(api=apidata.load(version)))
    return (result.output or source.encode()).decode(), result


def unsupported(result):
    return [(f.start_line, f.api, f.rule) for f in result.findings if f.report == Report.UNSUPPORTED]


FITTED = [
    pytest.param("x = torch.cuda()\n", "import torch_npu\nx = torch_npu.npu()\n", id="torch.cuda itself, called"),
    pytest.param("ok = torch.cuda.is_bf16_supported(including_emulation=False)\n",
                 "import torch_npu\nok = torch_npu.npu.is_bf16_supported()\n", id="including_emulation by keyword"),
    pytest.param("ok = torch.cuda.is_bf16_supported(True)\n",
                 "import torch_npu\nok = torch_npu.npu.is_bf16_supported()\n", id="including_emulation by position"),
    pytest.param("ok = torch.cuda.is_bf16_supported(\n    including_emulation=False,\n)\n",
                 "import torch_npu\nok = torch_npu.npu.is_bf16_supported()\n", id="on lines of its own"),
    pytest.param("name = torch.cuda.get_device_name(device=rank)\n",
                 "import torch_npu\nname = torch_npu.npu.get_device_name(rank)\n", id="device of get_device_name"),
    pytest.param("p = torch.cuda.get_device_properties(device=torch.cuda.current_device())\n",
                 "import torch_npu\np = torch_npu.npu.get_device_properties(torch_npu.npu.current_device())\n",
                 id="device of get_device_properties"),
    pytest.param("ok = torch.cuda.can_device_access_peer(device=0, peer_device=1)\n",
                 "import torch_npu\nok = torch_npu.npu.can_device_access_peer(0, 1)\n", id="both devices in place"),
    pytest.param("ok = torch.cuda.can_device_access_peer(peer_device=1, device=0)\n",
                 "import torch_npu\nok = torch_npu.npu.can_device_access_peer(peer_device_id=1, device_id=0)\n",
                 id="devices out of order keep their order, under torch_npu's names"),
    pytest.param("with torch.cuda.graph(cuda_graph=g, stream=s):\n    pass\n",
                 "import torch_npu\nwith torch_npu.npu.graph(g, stream=s):\n    pass\n", id="graph of torch.cuda.graph"),
    pytest.param("import torch.cuda as tc\nname = tc.get_device_name(device=0)\n",
                 "import torch_npu\nimport torch.cuda as tc\nname = torch_npu.npu.get_device_name(0)\n", id="through a module alias"),
    pytest.param("from torch.cuda import get_device_name, is_bf16_supported\n"
                 "print(get_device_name(device=0), is_bf16_supported(including_emulation=False))\n",
                 "from torch_npu.npu import get_device_name, is_bf16_supported\n"
                 "print(get_device_name(0), is_bf16_supported())\n", id="through names imported from torch.cuda"),
    # a partial's arguments are the function's, given when the partial is called
    pytest.param("import functools\nname_of = functools.partial(torch.cuda.get_device_name, device=0)\n",
                 "import torch_npu\nimport functools\nname_of = functools.partial(torch_npu.npu.get_device_name, 0)\n",
                 id="a partial of get_device_name"),
    pytest.param("from functools import partial\nok = partial(torch.cuda.can_device_access_peer, peer_device=1)\n",
                 "import torch_npu\nfrom functools import partial\n"
                 "ok = partial(torch_npu.npu.can_device_access_peer, peer_device_id=1)\n", id="a partial, out of place"),
    pytest.param("from functools import partial\nok = partial(torch.cuda.is_bf16_supported, including_emulation=False)\n",
                 "import torch_npu\nfrom functools import partial\nok = partial(torch_npu.npu.is_bf16_supported)\n",
                 id="a partial given nothing else"),
]


@pytest.mark.parametrize("body, expected", FITTED)
def test_arguments_are_fitted_to_torch_npus_parameters(body, expected):
    output, result = migrate("import torch\n" + body)
    assert output == "import torch\n" + expected
    assert unsupported(result) == []


UNCHANGED_ARGUMENTS = [
    pytest.param("name = torch.cuda.get_device_name(0)\n", id="a device by position"),
    pytest.param("name = torch.cuda.get_device_name()\n", id="no device"),
    pytest.param("ok = torch.cuda.is_bf16_supported()\n", id="no argument"),
    pytest.param("with torch.cuda.graph(g, pool=p, stream=s):\n    pass\n", id="parameters both name alike"),
    pytest.param("ok = torch.cuda.can_device_access_peer(0, peer)\n", id="devices by position"),
    pytest.param("import functools\nsync = functools.partial(torch.cuda.synchronize, device=0)\n",
                 id="a partial of a function whose parameters name alike"),
    # handed on as a value, not bound: whoever calls it gives the arguments
    pytest.param("import functools\nshow = functools.partial(print, torch.cuda.get_device_name, device=0)\n",
                 id="a function as another's argument"),
]


@pytest.mark.parametrize("body", UNCHANGED_ARGUMENTS)
def test_arguments_torch_npu_takes_as_written_stay(body):
    output, result = migrate("import torch\n" + body)
    expected = body.replace("torch.cuda.", "torch_npu.npu.")
    assert output == "import torch\nimport torch_npu\n" + expected
    assert not any("by position" in change.message or "remove" in change.message for change in result.changes)


def test_a_release_that_takes_including_emulation_keeps_it():
    body = "ok = torch.cuda.is_bf16_supported(including_emulation=False)\n"
    output, _ = migrate("import torch\n" + body, version="2.9.0")
    assert output == "import torch\nimport torch_npu\nok = torch_npu.npu.is_bf16_supported(including_emulation=False)\n"


LEFT = [
    pytest.param("snap = torch.cuda.memory_snapshot(include_traces=False)\n", "torch.cuda.memory_snapshot",
                 "include_traces", id="a snapshot without traces"),
    pytest.param("snap = torch.cuda.memory_snapshot(pool.id)\n", "torch.cuda.memory_snapshot",
                 "mempool_id", id="a snapshot of one pool, by position"),
    pytest.param("pool = torch.cuda.memory.MemPool(use_on_oom=True)\n", "torch.cuda.memory.MemPool",
                 "use_on_oom", id="a pool for when memory runs out"),
    pytest.param("with torch.cuda.graph(g, enable_annotations=True):\n    pass\n", "torch.cuda.graph",
                 "enable_annotations", id="an annotated graph"),
    pytest.param("import functools\nsnap = functools.partial(torch.cuda.memory_snapshot, include_traces=False)\n",
                 "torch.cuda.memory_snapshot", "include_traces", id="a partial of a snapshot without traces"),
]


@pytest.mark.parametrize("body, api, parameter", LEFT)
def test_a_call_whose_parameter_torch_npu_lacks_stays_and_is_reported(body, api, parameter):
    output, result = migrate("import torch\n" + body)
    assert body in output  # renamed, it would raise TypeError
    rows = [f for f in result.findings if f.report == Report.UNSUPPORTED]
    line = 2 + next(number for number, text in enumerate(body.splitlines()) if api.rsplit(".", 1)[-1] in text)
    assert [(f.start_line, f.api, f.rule) for f in rows] == [(line, api, "NPU917")]
    assert parameter in rows[0].tip and "TypeError" in rows[0].tip


def test_a_release_that_takes_the_parameter_renames_the_call():
    body = "pool = torch.cuda.memory.MemPool(use_on_oom=True)\nsnap = torch.cuda.memory_snapshot(pool.id)\n"
    output, result = migrate("import torch\n" + body, version="2.13.0")
    assert output == "import torch\nimport torch_npu\n" + body.replace("torch.cuda.", "torch_npu.npu.")
    assert unsupported(result) == []


def test_a_name_imported_from_torch_cuda_whose_parameter_torch_npu_lacks_is_reported_at_its_call():
    source = "from torch.cuda import memory_snapshot\nsnap = memory_snapshot(include_traces=False)\n"
    output, result = migrate(source)
    assert "snap = memory_snapshot(include_traces=False)" in output
    assert unsupported(result) == [(2, "torch.cuda.memory_snapshot", "NPU917")]


def test_check_and_the_migration_give_the_same_rows(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(
        "import torch\nname = torch.cuda.get_device_name(device=0)\n"
        "snap = torch.cuda.memory_snapshot(include_traces=False)\n")
    out = tmp_path / "out"
    assert run_cli("-i", str(project), "-o", str(out), "-v", "2.1.0").exit_code == 0
    (migrated,) = out.iterdir()
    rows = read_csv(migrated / "unsupported_api.csv")
    assert [(row["Start Line"], row["OP"], row["Rule"]) for row in rows] == [("3", "torch.cuda.memory_snapshot", "NPU917")]
    edits = [row["Message"] for row in read_csv(migrated / "change_list.csv")]
    assert "give torch_npu.npu.get_device_name its device by position: torch_npu names the parameter device_name" in edits
    checked = run_cli("check", str(project), "-v", "2.1.0")
    assert checked.exit_code == 1
    assert "train.py:3: NPU917" in checked.output
    assert "train.py:2: NPU101" in checked.output and "by position" in checked.output
