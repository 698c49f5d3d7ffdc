"""Calls of torch APIs that the torch of the chosen torch_npu release (-v) does not have yet:
reported from data/torch_history.json (scripts/gen_torch_history.py reads the torch wheels)."""
import json
from importlib import resources

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.rules import Options

SOURCE = b'''import torch
import torch.distributed as dist
import torch.nn.functional as F


def norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w)


def setup(rank):
    dist.init_process_group("hccl", device_id=rank)
    if hasattr(torch, "accelerator"):
        print(torch.accelerator.current_accelerator())
    ok = hasattr(torch, "xpu") and torch.xpu.is_available()
    try:
        from torch.nn.attention import sdpa_kernel
    except ImportError:
        sdpa_kernel = None
    print(torch.accelerator.device_count())
'''


def newer_rows(version):
    result = migrate_source(SOURCE, "train.py", Options(api=apidata.load(version)))
    return [(f.start_line, f.api) for f in result.findings
            if f.report == Report.UNSUPPORTED and ("does not have it" in f.tip or "takes no" in f.tip)]


def test_what_the_chosen_torch_lacks_is_reported_where_nothing_guards_it():
    assert newer_rows("2.1.0") == [(7, "torch.nn.functional.rms_norm"),
                                   (11, "torch.distributed.init_process_group(device_id=)"),
                                   (19, "torch.accelerator.device_count")]


@pytest.mark.parametrize("version, expected", [
    ("2.3.1", [(7, "torch.nn.functional.rms_norm"), (19, "torch.accelerator.device_count")]),
    ("2.4.0", [(19, "torch.accelerator.device_count")]),
    ("2.6.0", []),
])
def test_a_release_that_has_them_reports_nothing(version, expected):
    assert newer_rows(version) == expected


def test_a_test_of_the_api_itself_is_no_guard():
    source = b"import torch\nif torch.accelerator.is_available():\n    torch.accelerator.set_device_index(0)\n"
    result = migrate_source(source, "a.py", Options(api=apidata.load("2.1.0")))
    assert [f.start_line for f in result.findings if "does not have it" in f.tip] == [2, 3]


def test_the_history_covers_the_torch_of_every_release_with_api_data():
    history = json.loads(resources.files("gpu2npu.data").joinpath("torch_history.json").read_text())
    assert history["releases"] == [apidata.load(v).torch_version for v in apidata.available_versions()]
    # facts that the torch release notes state
    assert history["names"]["torch.accelerator"] == "2.6.0"
    assert history["names"]["torch.nn.functional.rms_norm"] == "2.4.0"
    assert history["keywords"]["torch.distributed.init_process_group"]["device_id"] == "2.3.1"
