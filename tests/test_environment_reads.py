"""A CUDA or NCCL setting that has no effect on Ascend has one on the project's own code where a
file of the project reads it and sets it nowhere (`assert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS")
== "1"` in a tensor-parallel layer, set by its launch scripts and tests): where it is set, it stays
noted in the log (NPU915), not reported as something to act on.  A file that reads what it sets
itself adjusts a setting it hands on (`if os.getenv("NCCL_P2P_DISABLE") is None: os.environ[...] = "1"`):
that says nothing of the program's own use, and the rows stay."""
import pytest

from gpu2npu.reading.environment_reads import environment_reads_in

from helpers import console_script


class TestWhatAFileReads:
    @pytest.mark.parametrize("text", [
        'import os\nassert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1", "set CUDA_DEVICE_MAX_CONNECTIONS=1"\n',
        'import os\nif os.getenv("CUDA_DEVICE_MAX_CONNECTIONS", "0") != "1":\n    warn()\n',
        'import os\nn = int(os.environ["CUDA_DEVICE_MAX_CONNECTIONS"])\n',
        'import os\nok = os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"\n',
        'import os\nif "CUDA_DEVICE_MAX_CONNECTIONS" not in os.environ:\n    raise RuntimeError()\n',
    ])
    def test_a_read_it_does_not_set(self, text):
        assert environment_reads_in(text) == {"CUDA_DEVICE_MAX_CONNECTIONS"}

    @pytest.mark.parametrize("text", [
        'import os\nif os.getenv("NCCL_P2P_DISABLE") is None:\n    os.environ["NCCL_P2P_DISABLE"] = "1"\n',
        'import os\nos.environ.setdefault("NCCL_P2P_DISABLE", "1")\nprint(os.environ["NCCL_P2P_DISABLE"])\n',
        'import os\nold = os.environ.get("NCCL_P2P_DISABLE")\nrun(env=dict(os.environ, NCCL_P2P_DISABLE="1"))\n',
        'import os\nold = os.environ.get("NCCL_P2P_DISABLE")\nrun(env={**os.environ, "NCCL_P2P_DISABLE": "1"})\n',
        'import os\nx = os.environ.get("NCCL_P2P_DISABLE")\nos.environ["NCCL_P2P_DISABLE"] += ",1"\n',
        "print('NCCL_P2P_DISABLE')\n",  # a name in a text, not a read
    ])
    def test_what_it_also_sets_or_does_not_read(self, text):
        assert environment_reads_in(text) == frozenset()


READER = ('import os\n\n\ndef check(tp):\n    if tp > 1:\n        assert os.environ.get("{name}") == "1", '
          '"set {name}=1 for tensor parallelism"\n')


def _migrate(tmp_path, files):
    for relative, text in files.items():
        (tmp_path / "proj" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "proj" / relative).write_text(text)
    done = console_script("-i", str(tmp_path / "proj"), "-o", str(tmp_path / "out"), "-v", "2.1.0")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out" / "proj_msft"
    return (out / "unsupported_api.csv").read_text(), (out / "msFmkTranspltlog.txt").read_text()


class TestASettingTheProjectReads:
    @pytest.mark.parametrize("name", ["CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_NVLS_ENABLE"])
    def test_is_noted_where_it_is_set(self, tmp_path, name):
        rows, log = _migrate(tmp_path, {
            "src/tp/layers.py": READER.format(name=name),
            "tests/test_tp.py": f'import os\n\n\ndef test_tp():\n    os.environ["{name}"] = "1"\n',
            "examples/train.sh": f"#!/bin/bash\nexport {name}=1\ntorchrun --nproc_per_node 8 train.py\n",
        })
        assert name not in rows
        notes = [line for line in log.splitlines() if f"Message: {name}:" in line and "NOTE" in line]
        assert len(notes) == 3, log  # the reader's own line, the test's and the script's
        assert sum("the project's own code reads it (src/tp/layers.py)" in line for line in notes) == 2

    def test_one_read_where_it_is_also_set_is_reported(self, tmp_path):
        rows, _ = _migrate(tmp_path, {
            "src/setup_env.py": 'import os\n\nif os.getenv("NCCL_ALGO") is None:\n    os.environ["NCCL_ALGO"] = "Ring"\n',
            "examples/train.sh": "#!/bin/bash\nexport NCCL_ALGO=Ring\ntorchrun train.py\n",
        })
        assert "src/setup_env.py,4,4,NCCL_ALGO" in rows and "examples/train.sh,2,2,NCCL_ALGO" in rows

    @pytest.mark.parametrize("name", ["NCCL_ALGO", "NCCL_DEBUG", "CUDA_HOME"])
    def test_one_whose_row_says_what_to_do_instead_keeps_it(self, tmp_path, name):
        # (HCCL_DETERMINISTIC, Ascend's logging, the toolkit that is not there: true wherever it is read)
        rows, _ = _migrate(tmp_path, {
            "src/tp/layers.py": READER.format(name=name),
            "examples/train.sh": f"#!/bin/bash\nexport {name}=1\ntorchrun train.py\n",
        })
        assert f"examples/train.sh,2,2,{name}" in rows

    def test_one_with_an_ascend_counterpart_keeps_its_row(self, tmp_path):
        # (3 does not carry over to HCCL_ASYNC_ERROR_HANDLING on torch_npu 2.1.0: what to do stays said)
        rows, _ = _migrate(tmp_path, {
            "src/check.py": 'import os\n\nmode = os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING")\n',
            "examples/train.sh": "#!/bin/bash\nexport TORCH_NCCL_ASYNC_ERROR_HANDLING=3\ntorchrun train.py\n",
        })
        assert "examples/train.sh,2,2,TORCH_NCCL_ASYNC_ERROR_HANDLING" in rows
