"""Code is "already NPU-aware" only on tokens that mean NPU, on its own test chain or device
variable; never because a name merely contains the letters npu, nor because of a neighbour."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options
from gpu2npu.rules.npu_aware import NOTE_API, names_npu

OPTIONS = Options(api=apidata.load("2.1.0"))


def _migrate(source: str):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result


@pytest.mark.parametrize("name", ["npu", "torch_npu", "is_npu", "use_npu", "npu_available", "NPU_DEVICE_ID",
                                  "npu_fusion_attention", "has_npu", "npu0"])
def test_names_that_mean_npu(name):
    assert names_npu(name)


@pytest.mark.parametrize("name", ["input", "input_val_bin", "inputs", "snpu", "npus_total", "unpublished"])
def test_names_that_merely_contain_the_letters(name):
    assert not names_npu(name)


SUBSTRING_CASES = [
    # `input` is no NPU test: the assertion and the CUDA calls beside it are migrated
    ("import torch\n\ndef check(input):\n    if input.dim() > 2:\n        assert input.is_cuda\n"
     "    torch.cuda.manual_seed(0)\n", ["input.is_npu", "torch_npu.npu.manual_seed(0)"]),
    ("import torch\nif args.input_val_bin:\n    torch.cuda.reset_peak_memory_stats()\n",
     ["torch_npu.npu.reset_peak_memory_stats()"]),
    # a neighbouring `if` on something else does not make this block NPU-aware
    ("import torch\nif args.use_npu:\n    device = 'npu'\nif torch.cuda.is_available():\n    torch.cuda.manual_seed(1)\n",
     ["if torch_npu.npu.is_available():", "torch_npu.npu.manual_seed(1)"]),
]


@pytest.mark.parametrize("source, expected", SUBSTRING_CASES)
def test_no_npu_awareness_by_substring_or_neighbour(source, expected):
    output, result = _migrate(source)
    for text in expected:
        assert text in output, output
    assert not [f for f in result.findings if f.api == NOTE_API]


def test_a_neighbour_testing_the_same_device_variable_is_left_alone():
    source = ("import torch\nif args.device == 'npu':\n    import torch_npu\n"
              "if args.device == 'cuda':\n    torch.cuda.manual_seed(1)\n")
    output, result = _migrate(source)
    assert "if args.device == 'cuda':\n    torch.cuda.manual_seed(1)" in output
    assert [f for f in result.findings if f.api == NOTE_API]


def test_a_line_has_one_verdict():
    source = ("import torch\nimport torch_npu\n"
              "device = 'npu' if torch_npu.npu.is_available() else 'cuda'; x = y.cuda()\n")
    output, result = _migrate(source)
    modified = {c.start_line for c in result.changes if c.operation.value == "MODIFY"}
    noted = {f.start_line for f in result.findings if f.report == Report.NOTE and f.api == NOTE_API}
    assert modified == {3} and not modified & noted


def test_a_dict_keyed_by_device_type_that_has_npu_is_left_whole():
    # renaming its "cuda" key would give two "npu" keys, the CUDA entry's value winning
    output, result = _migrate(
        'import torch\nBACKENDS = {"cuda": "nccl", "npu": "hccl", "xpu": "ccl"}\n'
        'PLAIN = {"cuda": "nccl", "cpu": "gloo"}\nbackend = PLAIN[device.type]\n')
    assert 'BACKENDS = {"cuda": "nccl", "npu": "hccl", "xpu": "ccl"}' in output
    # (a mapping looked up by a device: its keys are device types; see test_edge_cases for data keys)
    assert 'PLAIN = {"npu": "hccl", "cpu": "gloo"}' in output
    assert [(f.start_line, f.api) for f in result.findings if f.report == Report.NOTE] == [(2, NOTE_API)]


def test_a_class_naming_npu_among_its_device_types_keeps_its_cuda_member():
    # accelerate's RNGType: renamed, CUDA and NPU would both hold "npu" and the Enum would make NPU
    # an alias of CUDA; RNGType("cuda"), read from a config, would raise
    source = ('import enum\nimport torch\n\nclass RNGType(str, enum.Enum):\n    TORCH = "torch"\n    CUDA = "cuda"\n'
              '    NPU = "npu"\n    XPU = "xpu"\n\nclass Backends:\n    NCCL: str = "nccl"\n    HCCL: str = "hccl"\n\n'
              'class Plain(str, enum.Enum):\n    CPU = "cpu"\n    CUDA = "cuda"\n\n'
              'def pick():\n    return "cuda" if torch.cuda.is_available() else "cpu"\n')
    output, result = _migrate(source)
    assert '    CUDA = "cuda"\n    NPU = "npu"' in output and '    NCCL: str = "nccl"' in output
    # an Enum's value is a label (read back from configs and checkpoints written on GPUs): kept
    assert '    CUDA = "cuda"' in output.split("class Plain")[1]
    assert 'return "npu" if torch_npu.npu.is_available() else "cpu"' in output
    noted = sorted(f.start_line for f in result.findings if f.report == Report.NOTE and f.api == NOTE_API)
    assert noted == [6, 11]


def test_a_text_that_cannot_mention_npu_has_no_npu_aware_span():
    """The walk for NPU-aware code is skipped where the text cannot mention NPU: on every fixture
    file where that is so, the walk would have found nothing."""
    import libcst as cst
    from helpers import FIXTURES
    from gpu2npu.rules import npu_aware
    from gpu2npu.rules.walk import MetadataWrapper

    skipped = walked = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        spans = npu_aware.guarded_spans(MetadataWrapper(module, unsafe_skip_copy=True))
        if npu_aware.may_mention_npu(text):
            walked += 1
        else:
            assert not spans, path
            skipped += 1
    assert skipped > 10 and walked > 0


def test_an_escaped_npu_string_still_makes_its_test_npu_aware():
    source = 'import torch\nif device == "\\x6epu":\n    x = torch.ones(1).to(device)\nelse:\n    x = torch.ones(1).cuda()\n'
    from gpu2npu.rules import npu_aware

    assert npu_aware.may_mention_npu(source)
    output, result = _migrate(source)
    assert ".cuda()" in output  # the CUDA branch of the project's own NPU test is left as written
    assert not [c for c in result.changes if c.rule != "NPU001"]


class TestAFunctionForCudaBesideOneForNpu:
    """A block that defines a function for each device (accelerate's and transformers'
    `is_cuda_available` beside `is_npu_available`): its callers ask each device its own question,
    so the CUDA one keeps answering for CUDA (False on an NPU machine) and is left as written.
    Migrated, accelerate's `get_backend()` took its CUDA branch on the NPU and called
    `torch.cuda.device_count()` (found by a dry run of its own test script)."""

    TWINS = ("import torch\n\n\ndef is_npu_available():\n    try:\n        import torch_npu  # noqa: F401\n"
             "    except ImportError:\n        return False\n    return torch.npu.is_available()\n\n\n"
             "def is_cuda_available():\n    return torch.cuda.is_available()\n\n\n"
             "def is_torch_cuda_available():\n    return torch.cuda.is_available() and torch.cuda.device_count() > 0\n\n\n"
             "def seed(n):\n    torch.cuda.manual_seed_all(n)\n")

    def test_the_cuda_twins_are_left_and_the_rest_is_migrated(self):
        output, result = _migrate(self.TWINS)
        assert "def is_cuda_available():\n    return torch.cuda.is_available()\n" in output
        assert "    return torch.cuda.is_available() and torch.cuda.device_count() > 0\n" in output
        assert "    torch_npu.npu.manual_seed_all(n)\n" in output
        assert "import torch\nimport torch_npu\n" in output  # (the function's own import binds it there only)
        noted = sorted(f.start_line for f in result.findings if f.report == Report.NOTE and f.api == NOTE_API)
        assert noted == [13, 17]

    @pytest.mark.parametrize("source", [
        # no NPU twin: the CUDA test is how the project reaches the NPU
        "import torch\n\n\ndef is_cuda_available():\n    return torch.cuda.is_available()\n",
        # an NPU function in another block (a class's method) is no twin of a module function
        "import torch\n\n\nclass Probe:\n    def has_npu(self):\n        return False\n\n\n"
        "def is_cuda_available():\n    return torch.cuda.is_available()\n",
        # `cudagraph` is not the word cuda
        "import torch\n\n\ndef is_npu_available():\n    return False\n\n\ndef is_cudagraph_ready():\n"
        "    return torch.cuda.is_available()\n",
        # an action, not a question: its callers may call it on every device
        "import torch\n\n\ndef to_npu(x):\n    return x.npu()\n\n\ndef to_cuda(x):\n"
        "    return x.to('cuda') if torch.cuda.is_available() else x\n",
    ])
    def test_without_a_twin_it_is_migrated(self, source):
        output, _ = _migrate(source)
        assert "torch_npu.npu.is_available()" in output and "torch.cuda" not in output


class TestAQuestionWhetherAGpuKernelCanRun:
    """A function that asks whether a GPU kernel can run on a tensor's device (trl's
    `_use_triton(device)`: `device.type in ("cuda", "xpu")`) lists the accelerators the kernel
    was written for.  Renamed, it would send NPU tensors into Triton kernels that cannot run
    there, where the original fell back to torch: its body is left as written."""

    @pytest.mark.parametrize("name", ["_use_triton", "_supports_trl_loss_kernel", "can_use_fused_kernel",
                                      "is_triton_kernel_supported"])
    def test_left_as_written(self, name):
        source = (f"import torch\n\n\ndef {name}(x):\n    return x.device.type in ('cuda', 'xpu') and x.ndim == 2\n\n\n"
                  "def to_device(x):\n    return x.to('cuda')\n")
        output, result = _migrate(source)
        assert "return x.device.type in ('cuda', 'xpu') and x.ndim == 2" in output
        assert "return x.to('npu')" in output
        assert [f.start_line for f in result.findings if f.report == Report.NOTE and f.api == NOTE_API] == [5]

    @pytest.mark.parametrize("name", ["kernel_size", "use_cuda", "build_kernel", "triton_cache_dir"])
    def test_other_functions_are_migrated(self, name):
        output, _ = _migrate(f"import torch\n\n\ndef {name}(x):\n    return x.device.type == 'cuda'\n")
        assert "x.device.type == 'npu'" in output


class TestTheVariableACudaBranchTests:
    """`pt_cuda = torch.cuda.is_available()` then `if pt_cuda: <CUDA>` `elif pt_npu: <NPU>`: the CUDA
    branch stays as written, and so must the variable it tests (asking the NPU, it would send the
    NPU into the CUDA branch: accelerate's `accelerate env` crashed so)."""

    SOURCE = ("import torch\n\ndef env():\n    pt_cuda_available = torch.cuda.is_available()\n"
              "    pt_npu_available = is_npu_available()\n    if pt_cuda_available:\n"
              "        name = torch.cuda.get_device_name()\n    elif pt_npu_available:\n"
              "        name = torch.npu.get_device_name()\n    return name\n")

    def test_the_variable_stays_with_its_branch(self):
        output, result = _migrate(self.SOURCE)
        assert "pt_cuda_available = torch.cuda.is_available()" in output
        assert "name = torch.cuda.get_device_name()" in output
        assert any(f.api == NOTE_API and f.start_line == 4 for f in result.findings if f.report == Report.NOTE)

    def test_a_variable_tested_by_no_npu_aware_chain_is_migrated(self):
        output, _ = _migrate("import torch\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n"
                             "    torch.cuda.synchronize()\n")
        assert "use_cuda = torch_npu.npu.is_available()" in output


class TestAVariableThatNamesTheNpuElsewhere:
    """`name = "npu"` where the code finds torch_npu, `name = "cuda"` where it finds CUDA: the variable
    already names each device in its branch; renamed, the CUDA branch would say "npu" too."""

    @pytest.mark.parametrize("source", [
        "import torch\n\ndef detect():\n    name = None\n    try:\n        import torch_npu\n        name = 'npu'\n"
        "    except ImportError:\n        pass\n    if name is None and torch.cuda.is_available():\n        name = 'cuda'\n"
        "    return name\n",
        "import os\n\nkind = os.environ.get('KIND')\nif kind == 'ascend':\n    device = 'npu:0'\nelse:\n    device = 'cuda:0'\n",
    ])
    def test_its_cuda_value_stays(self, source):
        output, _ = _migrate(source)
        assert output.count("'cuda") == source.count("'cuda")
        # with the CUDA test that chooses it
        assert output.count("torch.cuda.is_available()") == source.count("torch.cuda.is_available()")

    def test_a_variable_only_given_cuda_is_migrated(self):
        output, _ = _migrate("import torch\nname = 'cuda' if torch.cuda.is_available() else 'cpu'\nother = 'npu'\n")
        assert "name = 'npu' if" in output

    def test_habana_s_hccl_is_no_npu(self):
        # HPUs' collective backend is called "hccl" too: the "nccl" beside it is the NPU's to take
        output, _ = _migrate("import torch\nif device == 'hpu':\n    backend = 'hccl'\nelse:\n    backend = 'nccl'\n"
                             "torch.distributed.init_process_group(backend=backend)\n")
        assert "backend = 'hccl'\nelse:\n    backend = 'hccl'" in output


class TestEachDeviceInItsOwnBlock:
    """`if torch.cuda.is_available(): set_rng("CUDA", torch.cuda, s)` beside `if is_torch_npu_available():
    set_rng("NPU", torch.npu, s)`: the project does each device in its own block, the same way; renamed,
    the CUDA block would run on the NPU too and look the NPU's state up under "cuda" (axolotl's resume)."""

    def test_the_cuda_block_beside_the_npus_is_left(self):
        source = ("import torch\n\ndef load(state):\n    if torch.cuda.is_available():\n"
                  "        set_rng('CUDA', torch.cuda, state)\n    if is_torch_npu_available():\n"
                  "        set_rng('NPU', torch.npu, state)\n")
        output, _ = _migrate(source)
        assert "    if torch.cuda.is_available():\n        set_rng('CUDA', torch.cuda, state)" in output

    @pytest.mark.parametrize("source", [
        # the NPU's block does something else (imports torch_npu): the CUDA block chooses the device
        "import torch\n\ndef pick():\n    if is_torch_npu_available():\n        import torch_npu\n"
        "    if torch.cuda.is_available():\n        device = torch.device('cuda')\n    return device\n",
        # no NPU block at all
        "import torch\n\ndef load(state):\n    if torch.cuda.is_available():\n        set_rng('CUDA', torch.cuda, state)\n",
    ])
    def test_a_cuda_block_not_mirrored_by_an_npu_block_is_migrated(self, source):
        output, _ = _migrate(source)
        assert "torch_npu.npu.is_available()" in output


class TestAFlagPerDevice:
    """`self.is_cuda = ...` beside `self.is_npu = ...` in one block: the project keeps a flag (or a
    value) per device and its readers ask each, so CUDA's goes on answering for CUDA.  Migrated, it
    would ask for the NPU too (and, renamed, overwrite the NPU's own flag), and the reader's CUDA
    branch would take the NPU into torch.cuda."""

    @pytest.mark.parametrize("source", [
        "import torch\n\nclass Loader:\n    def __init__(self, device):\n"
        "        self.is_cuda = device.type == 'cuda' and torch.cuda.is_available()\n"
        "        self.is_npu = device.type == 'npu' and torch.npu.is_available()\n\n"
        "    def streams(self):\n        if self.is_cuda:\n            return torch.cuda\n"
        "        elif self.is_npu:\n            return torch.npu\n        return None\n",
        "import torch\nUSE_CUDA = torch.cuda.is_available()\nUSE_NPU = hasattr(torch, 'npu') and torch.npu.is_available()\n",
        "import torch\ncuda_ok: bool = torch.cuda.is_available()\nnpu_ok: bool = torch.npu.is_available()\n",
    ])
    def test_the_cuda_flag_stays(self, source):
        output, _ = _migrate(source)
        assert [line for line in output.splitlines() if "cuda" in line.lower()] == [
            line for line in source.splitlines() if "cuda" in line.lower()]

    @pytest.mark.parametrize("source, migrated", [
        # no twin: the flag moves with the device
        ("import torch\n\nclass Loader:\n    def __init__(self, device):\n"
         "        self.is_cuda = device.type == 'cuda' and torch.cuda.is_available()\n",
         "device.type == 'npu' and torch_npu.npu.is_available()"),
        # the NPU's flag in another block is no twin of this one
        ("import torch\n\ndef a(device):\n    use_cuda = torch.cuda.is_available()\n    return use_cuda\n\n\n"
         "def b():\n    use_npu = False\n    return use_npu\n", "use_cuda = torch_npu.npu.is_available()"),
    ])
    def test_a_flag_without_its_npu_twin_in_the_block_is_migrated(self, source, migrated):
        output, _ = _migrate(source)
        assert migrated in output


class TestTheProjectsOwnDeviceConstant:
    """A device constant the project compares with "npu" (`DEVICE_TYPE == "npu"`) is one it sets to
    the NPU itself: its tests against "cuda" ask for NVIDIA and stay, with what they choose there.
    Migrated, the NPU would take NVIDIA's branches (Triton kernels, bitsandbytes' CUDA kernels,
    graph capture) where the project's own NPU or generic code ran."""

    CONSTANT = "from .device_type import DEVICE_TYPE\n"

    @pytest.mark.parametrize("body", [
        "if DEVICE_TYPE in ('cuda', 'hip') and torch.cuda.is_available():\n    caps = torch.cuda.get_device_capability()\n",
        "def enabled():\n    return DEVICE_TYPE == 'cuda'\n",
        "if DEVICE_TYPE != 'cuda':\n    fast = False\nelse:\n    torch.cuda.synchronize()\n",
    ])
    def test_in_a_file_that_compares_it_with_npu(self, body):
        source = "import torch\n" + self.CONSTANT + body + "if DEVICE_TYPE == 'npu':\n    torch.npu.synchronize()\n"
        output, _ = _migrate(source)
        assert [line for line in output.splitlines() if "cuda" in line] == [
            line for line in source.splitlines() if "cuda" in line]

    def test_in_another_file_of_the_project(self, tmp_path):
        import subprocess
        import sys
        from pathlib import Path

        root = tmp_path / "proj" / "pkg"
        root.mkdir(parents=True)
        (root / "__init__.py").write_text("")
        (root / "device_type.py").write_text(
            "import torch\nDEVICE_TYPE = 'npu' if hasattr(torch, 'npu') else 'cuda'\nif DEVICE_TYPE == 'npu':\n"
            "    import torch_npu\n")
        kernels = "import torch\n" + self.CONSTANT + "if DEVICE_TYPE == 'cuda':\n    torch.cuda.synchronize()\n"
        (root / "kernels.py").write_text(kernels)
        gpu2npu = str(Path(sys.executable).parent / "gpu2npu")
        done = subprocess.run([gpu2npu, "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.1.0"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "out" / "proj_msft" / "pkg" / "kernels.py").read_text() == kernels

    @pytest.mark.parametrize("source, migrated", [
        # a constant the project never compares with "npu" moves with the device
        ("import torch\nDEVICE = 'cuda'\nif DEVICE == 'cuda':\n    torch.cuda.synchronize()\n", "DEVICE == 'npu'"),
        # a variable (not a constant) compared with "npu" elsewhere is judged where it stands
        ("import torch\n\ndef a(device):\n    return device == 'npu'\n\n\ndef b(device):\n    if device == 'cuda':\n"
         "        torch.cuda.synchronize()\n", "if device == 'npu':"),
    ])
    def test_what_the_project_does_not_set_to_the_npu_moves(self, source, migrated):
        output, _ = _migrate(source)
        assert migrated in output
