"""Every change row's edit is in the output: what the rule wrote stands at the row's lines.

`unexplained_differences` checks that the changed lines are the rows' lines; this checks the
edits themselves, so that an outer rewrite that rebuilds a construct from the original (and so
drops an inner rewrite that the change list still claims) fails, as in
`f"cuda:{torch.cuda.current_device()}"` or `x.to(torch.cuda.current_device())`.
"""
from pathlib import Path

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.reading.discover import Kind, kind_of
from gpu2npu.migration.pipeline import Status, migrate_source
from gpu2npu.commands.request import DistributedRequest, RunRequest, check_request
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options, SpecifyDeviceSettings
from helpers import DISTRIBUTED_CASES, FIXTURES, lost_edits, tree_files, unexplained_differences
from test_invariants import CASES, CASE_IDS

API = apidata.load("2.1.0")


def _options(name: str, mode: str) -> Options:
    request = RunRequest(input=FIXTURES / name, output=Path("/nonexistent"), version="2.1.0",
                         specify_device=mode == "specify", modelarts=mode == "modelarts",
                         amp_model="model" if mode == "amp" else None, similar=mode == "similar")
    if mode == "distributed":
        main_file, target = DISTRIBUTED_CASES[name]
        request.distributed = DistributedRequest(main=Path(main_file), target=target)
    return check_request(request, writes=False)[2]


@pytest.mark.parametrize("name, mode", CASES, ids=CASE_IDS)
def test_every_fixture_edit_is_in_the_output(name, mode):
    options = _options(name, mode)
    checked = migrated = 0
    for relative, path in tree_files(FIXTURES / name).items():
        if kind_of(Path(relative)) != Kind.PYTHON:
            continue
        data = path.read_bytes()
        result = migrate_source(data, relative, options, rules_for(options))
        if result.status != Status.MIGRATED:
            continue
        assert lost_edits(data, result.output, result.changes) == [], relative
        migrated += 1
        checked += sum(1 for change in result.changes if change.wrote)
    assert checked or not migrated, "no edit of this fixture says what it wrote"


NESTED = [
    # f-strings and format calls with calls inside
    'import torch\ndev = f"cuda:{torch.cuda.current_device()}"\n',
    'import torch as th\ndev = "cuda:{}".format(th.cuda.current_device())\n',
    # device arguments holding calls
    "import torch\nx = torch.ones(2).to(torch.cuda.current_device())\n",
    "import torch\ny = torch.zeros(2, device=torch.cuda.current_device())\n",
    'import torch\nx = torch.ones(2).to(f"cuda:{torch.cuda.current_device()}")\n',
    # calls inside .cuda() / .to() arguments
    "import torch\ny = x.cuda(torch.cuda.current_device(), non_blocking=True)\n",
    'import torch\ny = x.to(torch.device("cuda", torch.cuda.current_device()))\n',
    # a rewritten name inside a rewritten call
    "import torch\nn = torch.nn.DataParallel(model.cuda(), device_ids=list(range(torch.cuda.device_count())))\n",
    'import torch\nimport torch.distributed as dist\ndist.init_process_group("nccl", rank=torch.cuda.current_device())\n',
]


@pytest.mark.parametrize("mode", ["single", "specify"])
@pytest.mark.parametrize("source", NESTED)
def test_nested_edits_are_all_in_the_output(source, mode):
    options = Options(api=API)
    if mode == "specify":
        options = Options(api=API, specify_device=SpecifyDeviceSettings(entry_files=frozenset({"prog.py"})))
    data = source.encode()
    result = migrate_source(data, "prog.py", options, rules_for(options))
    assert result.status == Status.MIGRATED
    assert lost_edits(data, result.output, result.changes) == []
    rows = [{"Start Line": str(c.start_line), "End Line": str(c.end_line), "Operation Type": c.operation.value}
            for c in result.changes]
    assert unexplained_differences(data, result.output, rows) == []
    assert b"torch.cuda" not in result.output and b"th.cuda" not in result.output, result.output.decode()


def test_the_check_catches_a_lost_edit():
    """The checker itself: a row whose text is not at its line is named."""
    from gpu2npu.records.change import Change, Operation

    before = b'dev = f"cuda:{torch.cuda.current_device()}"\n'
    after = b'dev = f"npu:{torch.cuda.current_device()}"\n'
    rows = [Change("a.py", 1, 1, Operation.MODIFY, "NPU103", "f-string", wrote="npu"),
            Change("a.py", 1, 1, Operation.MODIFY, "NPU101", "rename", wrote="torch_npu.npu")]
    problems = lost_edits(before, after, rows)
    assert len(problems) == 1 and "NPU101" in problems[0]
