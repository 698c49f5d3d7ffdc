"""Integer devices in keyword and forwarding positions: FSDP's device_id (an int means a CUDA
device up to torch 2.2) and helpers of the file that hand their argument to `.to()`."""
import json

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

HEADER = ("import os\nimport torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n"
          "local_rank = int(os.environ['LOCAL_RANK'])\n\n\n"
          "def to_device(batch, device):\n    return {k: v.to(device) for k, v in batch.items()}\n\n\n")


def _migrate(source: str, version: str = "2.1.0", **options):
    opts = Options(api=apidata.load(version), **options)
    result = migrate_source(source.encode(), "m.py", opts, rules_for(opts))
    return (result.output or source.encode()).decode(), result


@pytest.mark.parametrize("version", ["1.11.0", "2.1.0", "2.2.0"])
def test_fsdp_device_id_int_is_an_npu_up_to_torch_2_2(version):
    output, _ = _migrate(HEADER + "model = FSDP(model, device_id=local_rank)\n", version)
    assert 'model = FSDP(model, device_id=torch.device("npu", local_rank))' in output


@pytest.mark.parametrize("version", ["2.3.1", "2.6.0"])
def test_newer_fsdp_reads_the_int_itself(version):
    output, _ = _migrate(HEADER + "model = FSDP(model, device_id=local_rank)\n", version)
    assert "device_id=local_rank)" in output


def test_fsdp_device_id_that_may_be_a_device_is_left():
    output, _ = _migrate(HEADER + "model = FSDP(model, device_id=torch.cuda.current_device() if x else dev)\n")
    assert "device_id=torch_npu.npu.current_device() if x else dev" in output


def test_a_forwarding_helper_gets_an_explicit_device():
    output, result = _migrate(HEADER + "b = to_device(batch, local_rank)\nc = to_device(batch, 'cpu')\n"
                              "d = to_device(batch, device=3)\n")
    assert 'b = to_device(batch, f"npu:{local_rank}")' in output
    assert "c = to_device(batch, 'cpu')" in output
    assert 'd = to_device(batch, device="npu:3")' in output


def test_a_helper_that_does_not_forward_is_left():
    source = "import torch\n\ndef log(x, step):\n    print(x, step)\n\nlog(loss, 3)\n"
    output, result = _migrate(source)
    assert output == source and result.changes == []


def test_a_forwarding_method_gets_an_explicit_device():
    source = ("import os\nimport torch\n\nrank = int(os.environ['RANK'])\n\n\nclass Batch:\n"
              "    def to_device(self, device, non_blocking=False):\n"
              "        return Batch(self.x.to(device, non_blocking=non_blocking))\n\n\n"
              "b = batch.to_device(rank)\nc = batch.to_device('cpu')\nd = to_device(rank)\n")
    output, _ = _migrate(source)
    assert 'b = batch.to_device(f"npu:{rank}")' in output
    assert "c = batch.to_device('cpu')" in output
    assert "d = to_device(rank)" in output  # no function of that name forwards


class TestAnIntegerHandedToAnotherFile:
    """`device=<an int>` given to a function another of the project's files defines (a method of
    an object, a name no import binds, a relative import) is reported with the NPU way, and left as
    written: what the function does with it is read in its own file."""

    SAMPLER = ("import torch\nimport torch.distributed as dist\n\nrank = dist.get_rank()\n"
               "device = rank % torch.cuda.device_count()\n")

    @pytest.mark.parametrize("call", ["samples = diffusion.p_sample_loop(model, shape, device=device)\n",
                                      "samples = sample_loop(model, shape, device=device)\n",
                                      "from .sampling import sample_loop\nsamples = sample_loop(model, device=3)\n"])
    def test_reported_and_left(self, call):
        output, result = _migrate(self.SAMPLER + call)
        assert call.splitlines()[-1] in output
        [row] = [finding for finding in result.findings if finding.rule == "NPU104"]
        assert row.api.endswith("(device=<int>)") and "cuda:N" in row.tip and 'f"npu:{' in row.tip
        assert row.start_line == len((self.SAMPLER + call).splitlines())

    @pytest.mark.parametrize("call", [
        "samples = diffusion.p_sample_loop(model, shape, device=args.device)\n",  # not certainly an int
        "samples = diffusion.p_sample_loop(model, shape, device='cpu')\n",
        "from transformers import pipeline\npipe = pipeline('text-generation', device=device)\n",  # its own meaning
        "x = torch.zeros(2, device=device)\n",  # rewritten instead
        "def log(step, device):\n    print(step, device)\n\nlog(3, device=device)\n",  # read here: no device use
        # a method of what a call returns (an accelerator abstraction's): whose it is is not known
        "stream = get_accelerator().Stream(device=device)\n",
    ])
    def test_not_reported(self, call):
        _, result = _migrate(self.SAMPLER + call)
        assert [finding for finding in result.findings if finding.rule == "NPU104"] == []

    @pytest.mark.parametrize("call, api", [
        # one of the project's own modules, imported by its absolute name
        ("from pkg.sampling import sample_loop\nsamples = sample_loop(model, device=device)\n", "sample_loop(device=<int>)"),
        # an int its name calls a device, by position
        ("from pkg.noise import make_noise\nz = make_noise((4, 3), device)\n", "make_noise(<int>)"),
        ("import pkg.noise\nlocal_device = device\nz = pkg.noise.make_noise(shape, local_device)\n",
         "pkg.noise.make_noise(<int>)"),
    ])
    def test_reported_where_the_project_defines_it(self, call, api):
        output, result = _migrate(self.SAMPLER + call, project_modules=frozenset({"pkg"}))
        assert call.splitlines()[-1] in output
        [row] = [finding for finding in result.findings if finding.rule == "NPU104"]
        assert row.api == api and "another file defines" in row.tip and 'f"npu:{' in row.tip

    @pytest.mark.parametrize("call", [
        # another package's function, which says what its int means
        "from other_lib.sampling import sample_loop\nsamples = sample_loop(model, device=device)\n",
        "from other_lib.noise import make_noise\nz = make_noise((4, 3), device)\n",
        # an int named for no device (a rank, a count), or for an index that queries take, by position
        "from pkg.setup import init\ninit(args, rank)\n",
        "from pkg.setup import shard\nn_device = torch.cuda.device_count()\nshard(model, n_device)\n",
        "from .attention import smem_limit\ndev = torch.cuda.current_device()\nbudget = smem_limit(dev)\n",
        "from pkg.nvml import nvml_index\ndevice_id = torch.cuda.current_device()\nindex = nvml_index(device_id)\n",
        # by position to a method of an object, or a function a variable holds: whose, is not known
        "samples = diffusion.p_sample_loop(model, shape, device)\n",
        "free = seg.get('device', device)\nids.append(device)\n",
        "end = getattr(torch._C, '_cuda_endAllocateToPool', None)\nend(device, pool)\n",
        # torch's CUDA API through a variable holding the module
        "cuda = _torch().cuda\nstream = cuda.Stream(device=device)\nstream = th.cuda.Stream(device = device)\n",
    ])
    def test_not_reported_elsewhere(self, call):
        _, result = _migrate(self.SAMPLER + call, project_modules=frozenset({"pkg"}))
        assert [finding for finding in result.findings if finding.rule == "NPU104"] == []


def test_the_project_modules_are_what_its_root_and_src_make_importable(tmp_path):
    from gpu2npu.reading.discover import Entry, Kind, project_modules
    files = ["train.py", "pkg/__init__.py", "pkg/noise.py", "src/lib/util.py", "scripts/run.py", "setup.py",
             "docs/conf.txt", "my-tools/x.py"]
    entries = [Entry(name, tmp_path / name, Kind.PYTHON if name.endswith(".py") else Kind.OTHER) for name in files]
    assert project_modules(entries) == {"train", "pkg", "lib", "scripts", "setup"}


def test_a_folder_of_scripts_makes_its_modules_importable_to_its_scripts(tmp_path):
    from gpu2npu.reading.discover import Entry, Kind, modules_beside
    files = ["train.py", "pkg/__init__.py", "pkg/noise.py", "src/lib/util.py", "scripts/sample.py",
             "scripts/sampler.py", "scripts/models/dit.py", "scripts/my-tool.py", "docs/conf.txt"]
    entries = [Entry(name, tmp_path / name, Kind.PYTHON if name.endswith(".py") else Kind.OTHER) for name in files]
    # (a package's folder is no folder of scripts; src/ is read as the root)
    assert dict(modules_beside(entries)) == {"scripts": {"sample", "sampler", "models"},
                                             "scripts/models": {"dit"}, "src/lib": {"util"}}
    options = Options(api=apidata.load("2.1.0"), project_modules=frozenset({"train"}),
                      modules_beside=modules_beside(entries))
    assert options.project_modules_of("scripts/sample.py") == {"train", "sample", "sampler", "models"}
    assert options.project_modules_of("train.py") == {"train"}
    assert options.project_modules_of("pkg/noise.py") == {"train"}


def test_a_call_into_a_module_beside_a_script_is_reported_through_the_console_script(tmp_path, monkeypatch):
    from helpers import read_csv, run_cli
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "scripts" / "noise.py").write_text("import torch\n\n\ndef make_noise(shape, device):\n"
                                                  "    return torch.randn(shape, device=device)\n")
    (project / "scripts" / "sample.py").write_text(TestAnIntegerHandedToAnotherFile.SAMPLER
                                                   + "from noise import make_noise\nz = make_noise((4, 3), device)\n")
    assert run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache").exit_code == 0
    rows = read_csv(tmp_path / "out" / "project_msft" / "unsupported_api.csv")
    assert [(row["File"], row["Start Line"], row["OP"]) for row in rows] == [
        ("scripts/sample.py", "7", "make_noise(<int>)")]
    monkeypatch.chdir(project)
    for named in (str(project), ".", "scripts", "scripts/sample.py"):
        found = json.loads(run_cli("check", "-v", "2.1.0", "--no-cache", "--format", "json", named).stdout)["findings"]
        assert [(f["start_line"], f["rule"]) for f in found if f["rule"] == "NPU104"] == [(7, "NPU104")], named


def test_a_call_into_a_module_of_the_project_is_reported_through_the_console_script(tmp_path, monkeypatch):
    from helpers import read_csv, run_cli
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "noise.py").write_text("import torch\n\n\ndef make_noise(shape, device):\n"
                                                "    return torch.randn(shape, device=device)\n")
    (project / "sample.py").write_text(TestAnIntegerHandedToAnotherFile.SAMPLER
                                       + "from pkg.noise import make_noise\nz = make_noise((4, 3), device)\n")
    assert run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache").exit_code == 0
    rows = read_csv(tmp_path / "out" / "project_msft" / "unsupported_api.csv")
    assert [(row["File"], row["Start Line"], row["OP"]) for row in rows] == [("sample.py", "7", "make_noise(<int>)")]
    assert run_cli("analyse", "-i", str(project), "-o", str(tmp_path / "an"), "-v", "2.1.0", "--no-cache").exit_code == 0
    assert read_csv(tmp_path / "an" / "project_analysis" / "unsupported_api.csv") == rows
    # check says the same, whichever way the project is named
    monkeypatch.chdir(project)
    for named in (str(project), ".", "sample.py", str(project / "sample.py")):
        found = json.loads(run_cli("check", "-v", "2.1.0", "--no-cache", "--format", "json", named).stdout)["findings"]
        assert [(f["start_line"], f["rule"]) for f in found if f["rule"] == "NPU104"] == [(7, "NPU104")], named


# A name is an int where it is read, in its own scope: the same name bound otherwise in another
# function (a parameter, a loop variable) says nothing about it here.
INT_IN_ITS_SCOPE = [
    # the caller's local, beside a helper's parameter of the same name
    ("def make(args, device):\n    return torch.zeros(4, device=device)\n\n\n"
     "def main(args):\n    device = local_rank % torch.cuda.device_count()\n    return make(args, device)\n",
     'return make(args, f"npu:{device}")'),
    # a module-level int read in a function that does not bind it
    ("gpu = 1\n\n\ndef other(gpu):\n    return gpu\n\n\ndef main(x):\n    return x.to(gpu)\n",
     'return x.to(f"npu:{gpu}")'),
    # a walrus in the function
    ("def main(x):\n    if (rank := int(os.environ['RANK'])) >= 0:\n        return x.to(rank)\n\n\n"
     "def other(rank):\n    return rank\n",
     'return x.to(f"npu:{rank}")'),
]
NOT_AN_INT_HERE = [
    # the function's own parameter, whatever the module binds under that name
    "device = 0\n\n\ndef move(x, device):\n    return x.to(device)\n",
    # a loop variable of the function that shadows the module's int
    "gpu = 0\n\n\ndef main(xs, devices):\n    for gpu in devices:\n        xs.to(gpu)\n",
    # a name some function declares nonlocal
    "def outer(x):\n    dev = 0\n\n    def inner():\n        nonlocal dev\n        dev = 'cpu'\n    inner()\n"
    "    return x.to(dev)\n",
    # a class attribute is not seen from the class's methods
    "class Runner:\n    dev = 0\n\n    def move(self, x):\n        return x.to(dev)\n",
]


@pytest.mark.parametrize("body, expected", INT_IN_ITS_SCOPE)
def test_a_name_is_an_int_in_its_own_scope(body, expected):
    output, _ = _migrate(HEADER + body)
    assert expected in output


@pytest.mark.parametrize("body", NOT_AN_INT_HERE)
def test_a_name_bound_otherwise_in_its_scope_is_left(body):
    output, _ = _migrate(HEADER + body)
    assert 'f"npu:{' not in output and output.count(".to(") == body.count(".to(") + 1  # (+1: HEADER's)


def test_a_helper_that_also_uses_its_device_parameter_otherwise_is_given_the_int_and_a_row():
    source = (HEADER + "def setup(model, rank):\n    dist.init_process_group('nccl', rank=rank, world_size=2)\n"
              "    return model.to(rank)\n\n\nmodel = setup(model, local_rank)\n")
    output, result = _migrate(source)
    assert "model = setup(model, local_rank)\n" in output and "model.to(rank)" in output
    rows = [f for f in result.findings if f.api == "setup(<int>)"]
    assert len(rows) == 1 and 'f"npu:{rank}"' in rows[0].tip and rows[0].start_line == source.count("\n")


# Calls that name no method of the file's own that forwards a device: a parent's method reached
# through super() or through its class with self given, a dunder Python calls itself, a name two
# classes define.  Their int arguments (counts, sizes) are no devices.
NOT_THE_FILES_FORWARDER = [
    "class Wrapper(Base):\n    def __init__(self, tokens: int, batches: int, device):\n"
    "        Base.__init__(self, tokens, batches, device)\n        self.buf = torch.zeros(tokens, device=device)\n",
    "class Impl(Base):\n    def __init__(self, heads: int, device):\n        super().__init__(device, heads)\n"
    "        self.buf = torch.zeros(heads).to(device)\n",
    "class A:\n    def put(self, x, device):\n        return x.to(device)\n\n\nclass B:\n    def put(self, x, count):\n"
    "        return [x] * count\n\n\ndef fill(b, x):\n    return b.put(x, local_rank)\n",
]


@pytest.mark.parametrize("body", NOT_THE_FILES_FORWARDER)
def test_an_int_given_to_a_method_the_file_does_not_forward_is_left(body):
    output, result = _migrate(HEADER + body)
    assert 'f"npu:{' not in output and not [f for f in result.findings if f.rule == "NPU104"]


def test_torch_cudas_own_device_keyword_makes_no_forwarder():
    # torch.cuda.Stream(device=index) takes the card's index, as torch_npu.npu.Stream does: a helper
    # that gives it its parameter (and keys a cache with it) hands no device on, and its callers' int stays
    source = ("import torch\n\n_STREAMS = {}\n\n\ndef capture_stream(index):\n"
              "    return _STREAMS.setdefault(index, torch.cuda.Stream(device=index))\n\n\n"
              "def capture():\n    device = torch.cuda.current_device()\n    return capture_stream(device)\n")
    output, result = _migrate(source)
    assert "return capture_stream(device)" in output
    assert [finding for finding in result.findings if finding.rule == "NPU104"] == []


class TestAChoiceBetweenAnIntAndTheCpu:
    """`device = torch.cuda.current_device() if torch.cuda.is_available() else "cpu"`, then
    `torch.zeros((), device=device)`: migrated, the choice holds an int on the NPU, which torch's
    factories read as cuda:N.  The int branch becomes "npu:N" where it stands (the device argument,
    or the one binding of a name read only as a device); f"npu:{device}" at the use would make
    "npu:cpu" of the other branch."""

    CHOICE = "torch.cuda.current_device() if torch.cuda.is_available() else 'cpu'"
    EXPLICIT = "f\"npu:{torch_npu.npu.current_device()}\" if torch_npu.npu.is_available() else 'cpu'"

    @pytest.mark.parametrize("source, expected", [
        (f"import torch\n\n\ndef norm():\n    device = {CHOICE}\n    return torch.zeros((), device=device)\n",
         f"    device = {EXPLICIT}\n    return torch.zeros((), device=device)\n"),
        (f"import torch\n\n\ndef norm():\n    return torch.zeros((), device={CHOICE})\n",
         f"    return torch.zeros((), device={EXPLICIT})\n"),
        ("import os\nimport torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\n\n\ndef norm():\n"
         "    device = 'cpu' if not torch.cuda.is_available() else local_rank\n"
         "    return torch.ones(2, device=device), torch.zeros(2, device=device)\n",
         "    device = 'cpu' if not torch_npu.npu.is_available() else f\"npu:{local_rank}\"\n"),
    ])
    def test_the_int_branch_names_the_npu(self, source, expected):
        output, result = _migrate(source)
        assert expected in output
        assert any(change.rule == "NPU104" for change in result.changes)

    @pytest.mark.parametrize("source", [
        # read as a number too, or bound twice: left as the other rules leave it
        f"import torch\n\n\ndef norm():\n    device = {CHOICE}\n    print(device + 1)\n    return torch.zeros((), device=device)\n",
        f"import torch\n\n\ndef norm(other):\n    device = {CHOICE}\n    if other:\n        device = other\n"
        "    return torch.zeros((), device=device)\n",
        # a choice between two strings, or of something that may not be an int
        "import torch\n\n\ndef norm(rank):\n    device = rank if ok else 'cpu'\n    return torch.zeros((), device=device)\n",
    ])
    def test_a_name_read_otherwise_or_not_an_int_stays(self, source):
        _, result = _migrate(source)
        assert not [change for change in result.changes if change.rule == "NPU104"]
