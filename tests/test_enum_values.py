"""A string handed where one of the project's Enums takes it as a member's value is a label, no
device: `TimerType("cuda")`, a parameter annotated with the Enum or turned into a member by its
function, a dataclass field of the Enum's type, in the Enum's file or any other.  Renamed to
"npu", the conversion raises ValueError at start.  A device given beside it is still renamed.
Run through the console script, as a project (the Enum and its users in different files)."""
import json

import pytest

from helpers import console_script, write_project

TIMERS = (
    "from dataclasses import dataclass\nfrom enum import Enum\nfrom typing import Optional, Union\n\nimport torch\n\n\n"
    "class TimerType(Enum):\n    CPU = 'cpu'\n    CUDA = 'cuda'\n\n\n"
    "class Backend(str, Enum):\n    NCCL = 'nccl'\n    GLOO = 'gloo'\n\n\n"
    "@dataclass\nclass Record:\n    name: str\n    timer_type: TimerType = TimerType.CUDA\n\n\n"
    "class Timers:\n    def __call__(self, name: str, timer_type: Union[TimerType, str] = TimerType.CUDA):\n"
    "        return Record(name, TimerType(timer_type))\n\n\n"
    "class Clock:\n    def __init__(self, kind: Optional['TimerType'] = None):\n        self.kind = kind\n\n"
    "    def restart(self, how):\n        self.kind = TimerType(how)\n\n\n"
    "def make(kind):\n    return TimerType(kind)\n\n\n"
    "def sync_with(backend: Backend):\n    return backend\n\n\n"
    "def place(device):\n    return torch.zeros(1, device=device)\n\n\n"
    "timer = Timers()\nDEFAULT = TimerType('cuda')\n"
)

# (a line of the training script, the line it must become)
LINES = [
    # an Enum's value: stays
    ("a = timer('step', 'cuda')", "a = timer('step', 'cuda')"),
    ("b = timer('step', timer_type='cuda')", "b = timer('step', timer_type='cuda')"),
    ("c = make('cuda')", "c = make('cuda')"),
    ("d = Record(name='x', timer_type='cuda')", "d = Record(name='x', timer_type='cuda')"),
    ("e = Clock('cuda')", "e = Clock('cuda')"),
    ("f = Clock(kind='cuda')", "f = Clock(kind='cuda')"),
    ("Clock().restart('cuda')", "Clock().restart('cuda')"),
    ("g = TimerType('cuda')", "g = TimerType('cuda')"),
    ("h = timers.TimerType(value='cuda')", "h = timers.TimerType(value='cuda')"),
    ("i = sync_with('nccl')", "i = sync_with('nccl')"),
    # devices: renamed as before
    ("x = torch.ones(2, device='cuda')", "x = torch.ones(2, device='npu')"),
    ("y = place('cuda')", "y = place('npu')"),
    ("z = torch.ones(2).to('cuda')", "z = torch.ones(2).to('npu')"),
    # no member's value: what the Enum would refuse anyway is not its label
    ("w = make('cuda:0')", "w = make('npu:0')"),
]

TRAIN = ("import torch\nfrom pkg import timers\nfrom pkg.timers import Clock, Record, TimerType, make, place, "
         "sync_with, timer\n\n" + "\n".join(line for line, _ in LINES) + "\n")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("enum_values")
    source = write_project(root / "proj", {"pkg/__init__.py": "", "pkg/timers.py": TIMERS, "train.py": TRAIN})
    result = console_script("-i", str(source), "-o", str(root / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    return source, root / "out" / "proj_msft"


@pytest.mark.parametrize("written, expected", LINES)
def test_each_line_keeps_a_label_and_renames_a_device(migrated, written, expected):
    _, out = migrated
    lines = (out / "train.py").read_text().splitlines()
    assert expected in lines, lines


def test_the_enums_own_file_keeps_its_values(migrated):
    _, out = migrated
    text = (out / "pkg" / "timers.py").read_text()
    assert "DEFAULT = TimerType('cuda')" in text and "CUDA = 'cuda'" in text and "NCCL = 'nccl'" in text


def test_rows_name_the_renamed_devices_only(migrated):
    _, out = migrated
    rows = [row.split(",") for row in (out / "change_list.csv").read_text().splitlines()[1:]]
    renamed = sorted(int(row[1]) for row in rows if row[0] == "train.py" and row[5] == "NPU103")
    expected = sorted(4 + number for number, (written, after) in enumerate(LINES, 1) if written != after)
    assert renamed == expected


def test_check_reports_the_devices_and_not_the_labels(migrated):
    source, _ = migrated
    checked = console_script("check", ".", "-v", "2.1.0", "--format", "json", "--no-cache", cwd=source)
    lines = sorted({finding["start_line"] for finding in json.loads(checked.stdout)["findings"]
                    if finding["path"].endswith("train.py") and finding["rule"] == "NPU103"})
    assert lines == sorted(4 + number for number, (written, after) in enumerate(LINES, 1) if written != after)


@pytest.mark.parametrize("method", ["to", "set_device"])
def test_a_project_method_named_as_torchs_device_calls_leaves_torchs_calls_to_move(tmp_path, method):
    # a project's `def to(self, device: Kind)` is not told apart from Tensor.to where it is called:
    # torch's calls are the common ones, and they move
    enums = ("import enum\n\n\nclass Kind(enum.Enum):\n    CUDA = 'cuda'\n    CPU = 'cpu'\n\n\n"
             f"class Box:\n    def {method}(self, device: Kind):\n        return self\n")
    train = "import torch\nfrom pkg.kinds import Box\n\nx = torch.ones(2).to('cuda')\nb = Box()\n"
    source = write_project(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/kinds.py": enums, "train.py": train})
    result = console_script("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
    assert result.returncode == 0, result.stderr
    assert "x = torch.ones(2).to('npu')" in (tmp_path / "out" / "proj_msft" / "train.py").read_text()
