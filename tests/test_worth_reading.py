"""A file whose bytes hold nothing that any reader of its tree looks for is neither parsed nor
scanned (pipeline._worth_reading); every file that could give a row or a change still is, and
gives what it gave when every file was parsed."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration import pipeline
from gpu2npu.migration.pipeline import Status, migrate_source
from gpu2npu.records.options import Options

OPTIONS = Options(api=apidata.load("2.1.0"))
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _read_everything(monkeypatch, data: bytes, path: str = "f.py", options: Options = OPTIONS):
    """The result of `data` when every file is parsed."""
    with monkeypatch.context() as patched:
        patched.setattr(pipeline, "_worth_reading", lambda *args: True)
        return migrate_source(data, path, options)


def _same(left, right) -> bool:
    """Same output, changes and findings (the status of a file left alone may be `skipped`)."""
    return (left.output, left.changes, left.findings, left.error) == (right.output, right.changes, right.findings,
                                                                      right.error)


class TestSkipped:
    """Configurations, tokenizers, plain helpers: nothing of torch, CUDA or its packages."""

    @pytest.mark.parametrize("source", [
        "class LlamaConfig:\n    model_type = 'llama'\n\n    def __init__(self, hidden_size=4096):\n"
        "        self.hidden_size = hidden_size\n",
        "import json\n\n\ndef load_vocab(path):\n    with open(path) as f:\n        return json.load(f)\n",
        "import numpy as np\n\n\ndef normalize(image, mean, std):\n    return (image - mean) / std\n",
    ])
    def test_a_file_with_nothing_to_look_for_is_not_parsed(self, monkeypatch, source):
        result = migrate_source(source.encode(), "f.py", OPTIONS)
        assert result.status == Status.SKIPPED
        everything = _read_everything(monkeypatch, source.encode())
        assert everything.status == Status.UNCHANGED and _same(result, everything)


class TestStillRead:
    """Files without the word torch that still give rows or changes."""

    @pytest.mark.parametrize("source", [
        "import triton\n\n\n@triton.jit\ndef kernel(x_ptr):\n    pass\n",  # a CUDA-only package
        "import os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '0,1'\n",  # CUDA's environment variable
        "def move(batch):\n    return batch.cuda()\n",  # a tensor's .cuda() without an import
        "def to_device(x):\n    return x.to(0)\n",  # an integer device
        "import bitsandbytes as bnb\n\nlayer = bnb.nn.Linear8bitLt(4, 4)\n",  # quantization kernels
        "import apex\n",
        "def load(cls):\n    return cls.from_pretrained('m', attn_implementation='flash_attention_2')\n",
        "import xformers.ops\n",
        "def start(dist):\n    dist.init_process_group('nccl')\n",  # the NCCL backend
    ])
    def test_what_any_reader_looks_for_is_read(self, monkeypatch, source):
        result = migrate_source(source.encode(), "f.py", OPTIONS)
        assert result.status != Status.SKIPPED
        everything = _read_everything(monkeypatch, source.encode())
        assert _same(result, everything)
        assert result.changes or result.findings, "a case that finds nothing proves nothing"

    def test_what_is_no_source_is_refused_with_its_reason(self):
        result = migrate_source(b"MAGIC\0\x01\x02", "blob.py", OPTIONS)
        assert result.status == Status.FAILED and "NUL byte" in result.error

    def test_a_method_without_an_npu_kernel_is_read(self, monkeypatch):
        missing = sorted(apidata.ops_without_npu_kernel(OPTIONS.api))
        assert missing, "the release lists operators without an NPU kernel"
        source = f"def f(x):\n    return x.{missing[0]}(0)\n".encode()
        assert pipeline._worth_reading(source, "f.py", OPTIONS, pipeline.SINGLE_CARD_RULES)
        assert _same(migrate_source(source, "f.py", OPTIONS), _read_everything(monkeypatch, source))


class TestFixtures:
    def test_every_fixture_file_gives_what_it_gave_when_every_file_was_parsed(self, monkeypatch):
        compared = skipped = 0
        for path in sorted(FIXTURES.rglob("*.py")):
            data = path.read_bytes()
            result = migrate_source(data, path.name, OPTIONS)
            assert _same(result, _read_everything(monkeypatch, data, path.name)), path
            compared += 1
            skipped += result.status == Status.SKIPPED
        assert compared > 100 and skipped > 0
