"""An interrupted run (Ctrl-C, SIGTERM) leaves nothing half-written: no output folder at all (or
the previous one, untouched), no staging folder, one line on stderr and a documented status."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT

FILES = 300
TEMPLATE = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader

# module {number}
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Net{number}(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear({number} + 1, 2)

    def forward(self, x):
        return self.layer(x.cuda())


def train(dataset):
    model = Net{number}().cuda()
    loader = DataLoader(dataset, batch_size=4, shuffle=True)
    scaler = torch.cuda.amp.GradScaler()
    for batch in loader:
        with torch.cuda.amp.autocast():
            loss = model(batch.to("cuda")).sum()
        scaler.scale(loss).backward()
    torch.cuda.synchronize()
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("many") / "proj"
    for number in range(FILES):
        folder = root / f"part_{number // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{number:03}.py").write_text(TEMPLATE.format(number=number))
        (folder / f"notes_{number:03}.txt").write_text(f"notes {number}\n")
    return root


def _start(project: Path, out: Path, jobs: str, *extra: str) -> subprocess.Popen:
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen(
        [sys.executable, "-m", "gpu2npu", "-i", str(project), "-o", str(out), "-v", "2.1.0", "-j", jobs, *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
        start_new_session=True,  # a process group of its own, like a job started from a shell
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even if the test runner ignores it
    )


def _wait_until_files_are_migrated(out: Path, process: subprocess.Popen, count: int = 5) -> None:
    """Until the staging folder's log names `count` migrated files: the run is well under way."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        for log in out.glob(".proj_msft.partial-*/msFmkTranspltlog.txt"):
            if log.read_text(errors="replace").count("Operation Type: MODIFY Message: change .cuda()") >= count:
                return
        time.sleep(0.02)
    raise AssertionError("the run did not get under way")


INTERRUPTS = [
    pytest.param(signal.SIGINT, "1", False, 130, "interrupted", id="ctrl-c"),
    pytest.param(signal.SIGTERM, "1", False, 143, "terminated", id="sigterm"),
    pytest.param(signal.SIGINT, "2", True, 130, "interrupted", id="ctrl-c-to-every-process-with-workers"),
    pytest.param(signal.SIGTERM, "2", False, 143, "terminated", id="sigterm-with-workers"),
]


@pytest.mark.parametrize("number, jobs, to_group, status, word", INTERRUPTS)
def test_an_interrupted_run_leaves_nothing_half_written(project, tmp_path, number, jobs, to_group, status, word):
    out = tmp_path / "out"
    process = _start(project, out, jobs)
    _wait_until_files_are_migrated(out, process)
    if to_group:  # what Ctrl-C in a terminal does: every process of the job gets SIGINT
        os.killpg(process.pid, number)
    else:
        process.send_signal(number)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == status, stderr
    assert stderr.splitlines() == [f"gpu2npu: {word}; nothing was left half-written"]
    assert "Traceback" not in stdout + stderr
    assert list(out.iterdir()) == []  # neither a result nor a staging folder


def test_an_interrupted_forced_run_keeps_the_previous_result(project, tmp_path):
    out = tmp_path / "out"
    previous = out / "proj_msft"
    previous.mkdir(parents=True)
    (previous / "from_the_last_run.txt").write_text("kept")
    process = _start(project, out, "1", "--force")
    _wait_until_files_are_migrated(out, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert [p.name for p in out.iterdir()] == ["proj_msft"]
    assert [p.name for p in previous.iterdir()] == ["from_the_last_run.txt"]
    assert (previous / "from_the_last_run.txt").read_text() == "kept"


def test_a_run_stopped_between_files_restores_the_collector_when_its_engine_closes(tmp_path):
    """What Ctrl-C while a result is being written leaves: the engine's generators suspended
    with the collector frozen.  Closing the engine (every command does, in `finally`) ends them
    then, not at interpreter exit, when the modules their clean-up calls are torn down."""
    import gc

    from gpu2npu.knowledge import apidata
    from gpu2npu.reading.discover import walk
    from gpu2npu.migration.engine import COLLECT_EVERY, Engine
    from gpu2npu.records.options import Options

    for number in range(COLLECT_EVERY + 1):  # enough files for the collector to be frozen
        (tmp_path / f"m{number}.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    entries = sorted(walk(tmp_path), key=lambda entry: entry.relative)
    engine = Engine(Options(api=apidata.load("2.1.0")), jobs=1)
    results = engine.results(entries)
    next(results)
    assert gc.get_freeze_count() > 0
    engine.close()
    assert gc.get_freeze_count() == 0
