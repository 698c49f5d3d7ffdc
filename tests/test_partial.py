"""Cutting a large file to its relevant statements (gpu2npu.migration.partial) must not change anything
but the time taken: on every fixture file, forced to be cut, the output, the change rows and the
findings are those of the whole-file migration."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration import partial
from gpu2npu.reading import scan
from gpu2npu.migration.pipeline import migrate_source
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
    # inside a class, only the statements that matter (and attributes holding strings) are kept
    assert "scale = 2" not in kept
    result = migrate_source(data, "lib.py", OPTIONS)
    whole_text = result.output.decode()
    assert whole_text.count("def forward") == 1 and "def helper" in whole_text
    assert 'x.to("npu:0")' in whole_text and "torch_npu.npu.synchronize()" in whole_text
    for change in result.changes:  # rows name lines of the original file
        if change.operation.value == "MODIFY":
            assert "cuda" in LIBRARY.splitlines()[change.start_line - 1]


def test_a_cut_class_keeps_the_attributes_that_make_it_npu_aware(monkeypatch):
    # only `CUDA = "cuda"` holds a rewrite word; without `NPU = "npu"` beside it the cut module's
    # class would not be NPU-aware, and its CUDA member would be renamed into a second "npu"
    source = ('import enum\nimport torch\n\n\nclass RNGType(str, enum.Enum):\n    TORCH = "torch"\n'
              '    CUDA = "cuda"\n    NPU = "npu"\n\n    def seed(self):\n        return 0\n\n\n'
              + "".join(f"def helper_{k}(x):\n    return x + {k}\n\n\n" for k in range(60))
              + "def step(x):\n    return x.cuda()\n").encode()
    whole = migrate_source(source, "m.py", OPTIONS)
    _cut_everything(monkeypatch)
    tree = scan.parse(source)
    kept = partial.reduce(source, tree, scan.FileScan(tree).relevant_lines()).source
    assert 'NPU = "npu"' in kept and "def helper_1" not in kept and "def seed" not in kept
    cut = migrate_source(source, "m.py", OPTIONS)
    assert (cut.output, cut.changes, cut.findings) == (whole.output, whole.changes, whole.findings)
    assert b'    CUDA = "cuda"\n' in cut.output and b"return x.npu()" in cut.output


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


KERNEL_QUESTIONS = [
    # a question of the file answered by a device test, asked around a launch of the file's kernel
    # on a line that names no CUDA: the cut file keeps the asking test, which decides the question
    ("import torch\nimport triton\n\n\ndef _ok(x):\n    if x.numel() < 10:\n        return False\n    return x.is_cuda\n\n\n"
     "def _launch(x):\n    _k[(1,)](x)\n    return x\n\n\ndef scale(x):\n    if _ok(x):\n        return _launch(x)\n"
     "    return x * 2\n\n\ndef unrelated():\n    return 1\n\n\n@triton.jit\ndef _k(x_ptr):\n    pass\n", {}),
    # ... around a launcher of another file of the project
    ("import torch\nfrom .ops import fused_scale\n\n\ndef _ok(x):\n    return x.is_cuda and x.dtype == torch.float16\n\n\n"
     "def scale(x):\n    if _ok(x):\n        return fused_scale(x)\n    return x * 2\n\n\ndef unrelated():\n    return 1\n",
     {"kernel_launchers": (("pkg.ops.fused_scale", "the Triton kernel _scale_kernel"),)}),
]


@pytest.mark.parametrize("source, facts", KERNEL_QUESTIONS)
def test_a_cut_file_keeps_the_tests_that_ask_its_questions_about_a_kernel(source, facts, monkeypatch):
    import dataclasses

    options = dataclasses.replace(OPTIONS, **facts)
    whole = migrate_source(source.encode(), "pkg/m.py", options)
    assert whole.output is None and [f.start_line for f in whole.findings if f.rule == "NPU914"]
    _cut_everything(monkeypatch)
    cut = migrate_source(source.encode(), "pkg/m.py", options)
    assert (cut.status, cut.output, cut.changes, cut.findings) == (
        whole.status, whole.output, whole.changes, whole.findings)


def _chunked(data: bytes, monkeypatch):
    """The migration of `data` as if it were too large to parse whole, in the smallest pieces it
    can be cut into (each definition to migrate alone, with the module-level context)."""
    from gpu2npu.migration import pipeline
    from gpu2npu.reading import source_limits as guards

    monkeypatch.setattr(guards, "MAX_SOURCE_BYTES", 0)
    tree = scan.parse(data)
    if tree is not None:
        relevant = scan.FileScan(tree).relevant_lines()
        low, high = 1, len(data) + 4096  # the smallest piece size that can still take the file
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if partial.chunks(data, tree, relevant, middle) is not None else (middle + 1, high)
        monkeypatch.setattr(pipeline, "CHUNK_BYTES", low)
    return migrate_source(data, "m.py", OPTIONS)


@pytest.mark.parametrize("path", PY_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_file_migrated_in_pieces_equals_the_whole_migration_or_is_not_migrated(path, monkeypatch):
    # a file above guards.MAX_SOURCE_BYTES is parsed in pieces; where the pieces agree on the
    # module-level context the result is the whole-file migration's, otherwise the file is
    # copied unchanged with the reason, as every too-large file was before
    data = path.read_bytes()
    whole = migrate_source(data, "m.py", OPTIONS)
    pieces = _chunked(data, monkeypatch)
    if pieces.status.value == "failed":
        assert whole.status.value == "failed" or "too large to migrate" in pieces.error
        return
    if path.name == "main.py" and path.parent.name == "ddp_spawn_imagenet":
        from gpu2npu.migration import pipeline

        tree = scan.parse(data)  # (at least one fixture is really cut in several pieces)
        assert len(partial.chunks(data, tree, scan.FileScan(tree).relevant_lines(), pipeline.CHUNK_BYTES)) > 1
    assert (pieces.status, pieces.output, pieces.changes, pieces.findings) == (
        whole.status, whole.output, whole.changes, whole.findings)


def test_a_library_too_large_to_parse_whole_is_migrated_in_pieces(monkeypatch):
    functions = "".join(f"\n\ndef step_{n}(x):\n    torch.cuda.synchronize()\n    return x.cuda() * {n}\n"
                        for n in range(60))
    data = ("import torch\nimport os\n\nDEVICE = 'cuda'\n" + functions).encode()
    whole = migrate_source(data, "m.py", OPTIONS)
    from gpu2npu.migration import pipeline
    from gpu2npu.reading import source_limits as guards

    monkeypatch.setattr(guards, "MAX_SOURCE_BYTES", len(data) // 2)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", len(data) // 5)  # five pieces or more
    reductions = partial.chunks(data, scan.parse(data), scan.FileScan(scan.parse(data)).relevant_lines(),
                                pipeline.CHUNK_BYTES)
    assert len(reductions) >= 5
    pieces = migrate_source(data, "m.py", OPTIONS)
    assert pieces.status == whole.status and pieces.output == whole.output
    assert pieces.changes == whole.changes and pieces.findings == whole.findings
    text = pieces.output.decode()
    assert text.count("import torch_npu\n") == 1 and "DEVICE = 'npu'" in text and ".cuda()" not in text


def test_pieces_that_disagree_on_the_context_leave_the_file_unmigrated():
    texts = ["import torch\nimport torch_npu\n", "import torch\nimport ascend_x\n"]
    assert partial._widest(texts) is None
    assert partial._widest(["import torch\n", "import torch\nimport torch_npu\n"]) == "import torch\nimport torch_npu\n"
