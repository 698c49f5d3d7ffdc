"""Cutting a large file to its relevant statements (gpu2npu.partial) must not change anything
but the time taken: on every fixture file, forced to be cut, the output, the change rows and the
findings are those of the whole-file migration."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu2npu import apidata, partial, scan
from gpu2npu.pipeline import migrate_source
from gpu2npu.rules import Options

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cuda_scripts"
PY_FILES = sorted(p for p in FIXTURES.rglob("*.py"))
OPTIONS = Options(api=apidata.load("2.1.0"))


def _cut_everything(monkeypatch):
    monkeypatch.setattr(partial, "PARTIAL_FROM_LINES", 0)
    monkeypatch.setattr(partial, "PARTIAL_MAX_SHARE", 1.0)


@pytest.mark.parametrize("path", PY_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_cut_migration_equals_whole_migration(path, monkeypatch):
    data = path.read_bytes()
    whole = migrate_source(data, path.name, OPTIONS)
    _cut_everything(monkeypatch)
    cut = migrate_source(data, path.name, OPTIONS)
    assert (cut.status, cut.output, cut.changes, cut.findings) == (
        whole.status, whole.output, whole.changes, whole.findings)


LIBRARY = '''"""A model library with one CUDA spot."""
import torch
from torch import nn


class Block(nn.Module):
    """Not about devices."""

    scale = 2

    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x) * self.scale

    def pinned(self, x):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return x.to("cuda:0")


def helper(x):
    return x + 1
'''


def test_a_cut_file_keeps_only_relevant_statements(monkeypatch):
    _cut_everything(monkeypatch)
    data = LIBRARY.encode()
    tree = scan.parse(data)
    reduction = partial.reduce(data, tree, scan.FileScan(tree).relevant_lines())
    assert reduction is not None
    kept = reduction.source
    assert "def pinned" in kept and "class Block" in kept and "import torch" in kept
    assert "def forward" not in kept and "def helper" not in kept and "def __init__" not in kept
    assert "scale = 2" not in kept  # inside a class, only the statements that matter are kept
    result = migrate_source(data, "lib.py", OPTIONS)
    whole_text = result.output.decode()
    assert whole_text.count("def forward") == 1 and "def helper" in whole_text
    assert 'x.to("npu:0")' in whole_text and "torch_npu.npu.synchronize()" in whole_text
    for change in result.changes:  # rows name lines of the original file
        if change.operation.value == "MODIFY":
            assert "cuda" in LIBRARY.splitlines()[change.start_line - 1]


def test_files_that_are_not_plainly_cut_are_left_whole(monkeypatch):
    _cut_everything(monkeypatch)
    tree = scan.parse(LIBRARY.encode())
    lines = scan.FileScan(tree).relevant_lines()
    assert partial.reduce(LIBRARY.replace("\n", "\r\n").encode(), scan.parse(LIBRARY.replace("\n", "\r\n").encode()), lines) is None
    assert partial.reduce(b"\xef\xbb\xbf" + LIBRARY.encode(), tree, lines) is None
    assert partial.reduce(LIBRARY.encode()[:-1], scan.parse(LIBRARY.encode()[:-1]), lines) is None


def test_uses_of_names_imported_from_cuda_modules_are_kept(monkeypatch):
    _cut_everything(monkeypatch)
    source = (
        "from torch.cuda import nvtx\nfrom apex import amp\n\n\ndef step(loss, opt):\n"
        "    nvtx.range_push('step')\n    with amp.scale_loss(loss, opt) as scaled:\n        scaled.backward()\n\n\n"
        "def unrelated():\n    return 1\n"
    ).encode()
    tree = scan.parse(source)
    kept = partial.reduce(source, tree, scan.FileScan(tree).relevant_lines()).source
    assert "def step" in kept and "def unrelated" not in kept
