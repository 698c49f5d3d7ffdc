"""(source, expected) pairs beyond the rules' own examples: placement, names, guards, analysis."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.findings.cuda_ops import custom_operators
from gpu2npu.reading.linemap import LineMap, grouped_opcodes, opcodes, unified_diff
from gpu2npu.migration.pipeline import Status, migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

from helpers import run_cli

OPTIONS = Options(api=apidata.load("2.1.0"))


def migrate(source: str):
    result = migrate_source(source.encode(), "f.py", OPTIONS)
    return (result.output or source.encode()).decode(), result


REWRITES = [
    pytest.param(
        '"""Doc."""\nfrom __future__ import annotations\nx = y.cuda()\nimport torch\n',
        '"""Doc."""\nfrom __future__ import annotations\nx = y.npu()\nimport torch\nimport torch_npu\n',
        id="after the first import torch, even late in the file",
    ),
    pytest.param(
        "try:\n    import torch\nexcept ImportError:\n    torch = None\nx = torch.zeros(1).cuda()\n",
        "try:\n    import torch\n    import torch_npu\nexcept ImportError:\n    torch = None\nx = torch.zeros(1).npu()\n",
        id="import inside try keeps to its block",
    ),
    pytest.param(
        "import os\n\n# model code\nfrom torch import nn\nm = nn.Linear(1, 1).cuda()\n",
        "import os\n\n# model code\nimport torch_npu\nfrom torch import nn\nm = nn.Linear(1, 1).npu()\n",
        id="before a from-import, below its comment",
    ),
    pytest.param(
        "import torch\r\nx = torch.zeros(1).cuda()\r\n",
        "import torch\r\nimport torch_npu\r\nx = torch.zeros(1).npu()\r\n",
        id="CRLF kept for inserted lines",
    ),
    pytest.param(
        "import torch\ndef f(gpu: int):\n    return t.to(gpu)\n",
        'import torch\nimport torch_npu\ndef f(gpu: int):\n    return t.to(f"npu:{gpu}")\n',
        id="int-annotated parameter",
    ),
    pytest.param(
        "import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--local-rank', type=int, default=0)\n"
        "args = p.parse_args()\nx = t.to(args.local_rank)\n",
        "import argparse, torch\nimport torch_npu\np = argparse.ArgumentParser()\np.add_argument('--local-rank', type=int, default=0)\n"
        'args = p.parse_args()\nx = t.to(f"npu:{args.local_rank}")\n',
        id="argparse int option with a default",
    ),
    pytest.param(
        "import torch\nif torch.cuda.is_available():\n    pass\nfrom torch.cuda.amp import autocast\n",
        "import torch\nimport torch_npu\nif torch_npu.npu.is_available():\n    pass\nfrom torch_npu.npu.amp import autocast\n",
        id="name use bound by import torch_npu",
    ),
    pytest.param(
        "import torch.distributed as dist\ndist.init_process_group(backend='cpu:gloo,cuda:nccl')\n",
        "import torch.distributed as dist\nimport torch_npu\ndist.init_process_group(backend='cpu:gloo,npu:hccl')\n",
        id="backend map",
    ),
    pytest.param(
        "import torch\nx = torch.zeros(1, device='cuda' if ok else 'cpu')\n",
        "import torch\nimport torch_npu\nx = torch.zeros(1, device='npu' if ok else 'cpu')\n",
        id="conditional device string",
    ),
]


@pytest.mark.parametrize("source, expected", REWRITES)
def test_rewrite(source, expected):
    output, _ = migrate(source)
    assert output == expected
    assert migrate(output)[1].changes == []


NPU_BRANCHES = [
    pytest.param(
        "import torch\nif device == 'npu':\n    x = x.cuda()\nelse:\n    x = x.cuda()\n",
        "import torch\nimport torch_npu\nif device == 'npu':\n    x = x.npu()\nelse:\n    x = x.cuda()\n",
        id="the branch an NPU test selects runs on NPU: migrated; its else is not",
    ),
    pytest.param(
        "import torch\nif not is_npu:\n    torch.cuda.synchronize()\nelif torch.cuda.is_available():\n    y = 'cuda'\n",
        "import torch\nif not is_npu:\n    torch.cuda.synchronize()\nelif torch.cuda.is_available():\n    y = 'cuda'\n",
        id="negated NPU test and CUDA branch stay",
    ),
    pytest.param(
        "import torch\nd = 'cuda' if not use_npu else 'npu'\n",
        "import torch\nd = 'cuda' if not use_npu else 'npu'\n",
        id="conditional expression with a negated NPU test",
    ),
]


@pytest.mark.parametrize("source, expected", NPU_BRANCHES)
def test_npu_branches(source, expected):
    output, _ = migrate(source)
    assert output == expected


def test_cuda_code_in_an_npu_branch_is_reported():
    source = "import torch\nif x.is_npu:\n    torch.cuda.nvtx.range_push('a')\n"
    _, result = migrate(source)
    assert [(f.start_line, f.report) for f in result.findings if f.api.startswith("torch.cuda")] == [
        (3, Report.UNSUPPORTED)
    ]


UNCHANGED = [
    pytest.param("import torch\nx = t.to(args.gpu)\n", id="argparse option that may be None"),
    pytest.param("import argparse\np.add_argument('--gpu', type=int)\nx = t.to(args.gpu)\n", id="int option without default"),
    pytest.param("def f():\n    '''cuda'''\n    return 1\n", id="docstring"),
    pytest.param(
        "import torch\nif hasattr(torch, 'npu') and torch.npu.is_available():\n    d = 'npu'\n"
        "elif torch.cuda.is_available():\n    d = 'cuda'\n",
        id="NPU-aware if/elif chain",
    ),
    pytest.param(
        "def module_for(kind):\n    if kind == 'npu':\n        return torch.npu\n    if kind == 'cuda':\n        return torch.cuda\n",
        id="sibling if beside an NPU-aware one",
    ),
    pytest.param("import torch\nbackend = 'hccl' if device == 'npu' else 'nccl'\n", id="NPU-aware conditional"),
    pytest.param("print('cuda is not available, falling back to cpu')\n", id="prose"),
]


@pytest.mark.parametrize("source", UNCHANGED)
def test_unchanged(source):
    output, result = migrate(source)
    assert output == source and result.changes == []


def test_guarded_cuda_is_noted_not_reported():
    source = "import torch\nd = 'npu' if torch.npu.is_available() else 'cuda'\n"
    _, result = migrate(source)
    assert [f.report for f in result.findings] == [Report.NOTE]


def test_unsupported_torch_cuda_names_are_left_and_reported():
    source = "import torch\nfrom torch.cuda import nvtx, synchronize\ncap = torch.cuda.get_device_capability()\nnvtx.range_push('x')\n"
    output, result = migrate(source)
    assert "from torch.cuda import nvtx, synchronize" in output  # a mixed import stays whole
    assert "torch.cuda.get_device_capability()" in output
    unsupported = {(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED}
    assert (2, "torch.cuda.nvtx") in unsupported
    assert (3, "torch.cuda.get_device_capability") in unsupported
    assert (4, "torch.cuda.nvtx.range_push") in unsupported
    tips = " ".join(f.tip for f in result.findings)
    assert "mstx" in tips and "capability" in tips


def test_findings_use_original_line_numbers_after_insertions():
    source = "import torch\nfrom torch import nn\nm = nn.DataParallel(net).cuda()\ntorch.cuda.nvtx.range_pop()\n"
    output, result = migrate(source)
    assert output.count("\n") > source.count("\n")
    assert [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED] == [
        (4, "torch.cuda.nvtx.range_pop")
    ]


def test_dataloader_roles():
    source = (
        "from torch.utils.data import DataLoader\n"
        "train_loader = DataLoader(train_set, batch_size=8, shuffle=True)\n"
        "val_loader = DataLoader(val_set, batch_size=8)\n"
        "loader = DataLoader(ds, batch_size=8)\n"
        "train_feats = DataLoader(train_set, batch_size=8, drop_last=False)\n"
    )
    output, result = migrate(source)
    assert "train_loader = DataLoader(train_set, batch_size=8, shuffle=True, drop_last=True)" in output
    assert "val_loader = DataLoader(val_set, batch_size=8)\n" in output
    assert "drop_last=False)" in output
    advice = {f.start_line: f.tip for f in result.findings if f.report == Report.PERFORMANCE}
    assert sorted(advice) == [3, 4, 5]
    # the author's drop_last=False: the advice says when to change it, not to change it whatever
    assert "keeps drop_last=False as written" in advice[5] and "where skipping each epoch's last short batch" in advice[5]


@pytest.mark.parametrize("source, line", [
    # a loop builds a loader over each group of samples
    ("from torch.utils.data import DataLoader\n\ndef fit(groups):\n    for samples in groups:\n"
     "        train_loader = DataLoader(samples, batch_size=8, shuffle=True)\n", 5),
    ("from torch.utils.data import DataLoader\nwhile pending:\n    train_loader = DataLoader(pending.pop(), shuffle=True)\n", 3),
    # an iterative trainer's step builds one over that step's inputs
    ("from torch.utils.data import DataLoader\n\nclass T:\n    def step(self, ids):\n"
     "        loader = DataLoader(list(ids), batch_size=4, shuffle=True)\n", 5),
    ("from torch.utils.data import DataLoader\n\ndef training_step_loader(batch):\n"
     "    return DataLoader(batch, shuffle=True)\n", 4),
])
def test_a_training_loader_built_for_each_step_keeps_its_remainder(source, line):
    output, result = migrate(source)
    assert "drop_last" not in output
    rows = [f for f in result.findings if f.report == Report.PERFORMANCE]
    assert [row.start_line for row in rows] == [line] and "built anew for each step" in rows[0].tip


@pytest.mark.parametrize("source", [
    # one loader for the whole run, iterated in the epoch loop
    "from torch.utils.data import DataLoader\n\ndef main(ds):\n    train_loader = DataLoader(ds, shuffle=True)\n"
    "    for epoch in range(3):\n        for batch in train_loader:\n            pass\n",
    # a loop that ended before the loader, and a function named for steps in another sense
    "from torch.utils.data import DataLoader\nfor p in paths:\n    load(p)\ntrain_loader = DataLoader(ds, shuffle=True)\n",
    "from torch.utils.data import DataLoader\n\ndef stepwise_schedule(ds):\n    return DataLoader(ds, shuffle=True)\n",
])
def test_a_training_loader_built_once_still_drops_its_last_batch(source):
    output, _ = migrate(source)
    assert "shuffle=True, drop_last=True)" in output


class TestALoaderFactory:
    """A function that builds a loader and is told by its caller whether to shuffle
    (`make_loader(train_ds, shuffle=True)`, `make_loader(val_ds, shuffle=False)`) serves training
    and evaluation: drop_last there would drop evaluation samples too. Left, with the advice row."""

    @pytest.mark.parametrize("signature", ["ds, bs, shuffle", "ds, bs, shuffle=True", "ds, bs, *, shuffle"])
    def test_shuffle_given_by_the_caller(self, signature):
        source = (f"from torch.utils.data import DataLoader\n\ndef make_loader({signature}):\n"
                  "    return DataLoader(ds, batch_size=bs, shuffle=shuffle, num_workers=2)\n")
        output, result = migrate(source)
        assert "drop_last" not in output
        rows = [f for f in result.findings if f.report == Report.PERFORMANCE]
        assert [row.start_line for row in rows] == [4] and "role could not be told" in rows[0].tip

    @pytest.mark.parametrize("source", [
        # named for training, or shuffled by a setting that is no parameter of the function
        "from torch.utils.data import DataLoader\n\ndef make_train_loader(ds, shuffle):\n"
        "    return DataLoader(ds, shuffle=shuffle)\n",
        "from torch.utils.data import DataLoader\n\ndef make_loader(ds, args):\n    return DataLoader(ds, shuffle=args.shuffle)\n",
        "from torch.utils.data import DataLoader\nshuffle = True\nloader = DataLoader(ds, shuffle=shuffle)\n",
    ])
    def test_a_training_loader_still_drops_its_last_batch(self, source):
        output, _ = migrate(source)
        assert "drop_last=True)" in output


def test_pin_memory_off_before_torch_2_1():
    old = Options(api=apidata.ApiData("1.11.0", "1.11.0", OPTIONS.api.modules, frozenset()))
    source = "from torch.utils.data import DataLoader\ntrain_loader = DataLoader(ds, shuffle=True, pin_memory=True)\n"
    result = migrate_source(source.encode(), "f.py", old)
    assert b"pin_memory=False" in result.output and b"drop_last=True" in result.output


def test_syntax_error_is_a_result_not_an_exception():
    result = migrate_source(b"print 'cuda'\n", "old.py", OPTIONS)
    assert result.status == Status.FAILED and "syntax error at line 1" in result.error


def test_undecodable_file_is_a_result():
    result = migrate_source(b"x = 'cuda'\n\xff\xfe = 1\n", "bad.py", OPTIONS)
    assert result.status == Status.FAILED


def test_file_without_anything_relevant_is_not_parsed():
    assert migrate_source(b"def f(:\n", "noise.py", OPTIONS).status == Status.SKIPPED


def test_custom_operators_from_cpp():
    source = """
    // m.def("commented_out", &f);
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
      m.def("fused_forward", &fused_forward, "doc");
      m.def("fused_backward", &fused_backward);
    }
    TORCH_LIBRARY(myops, lib) {
      lib.def("gelu_fast(Tensor x) -> Tensor");
    }
    TORCH_LIBRARY_IMPL(myops, CUDA, lib) {
      lib.impl("gelu_fast", &gelu_fast_cuda);
    }
    """
    assert custom_operators(source) == ["fused_forward", "fused_backward", "gelu_fast"]


def test_line_map_follows_insertions():
    lines = LineMap(3)
    lines.update("a\nb\nc\n", "a\nnew\nb\nc\n")
    assert [lines.original(n) for n in (1, 2, 3, 4)] == [1, 1, 2, 3]


def _edited(lines, seed):
    import random

    chooser = random.Random(seed)
    new = list(lines)
    for _ in range(chooser.randint(0, 5)):
        at = chooser.randint(0, len(new))
        choice = chooser.random()
        if choice < 0.4:
            new.insert(at, f"inserted {chooser.randint(0, 3)}\n")
        elif new and choice < 0.7:
            del new[min(at, len(new) - 1)]
        elif new:
            new[min(at, len(new) - 1)] = "replaced\n"
    return new


def test_diffs_are_difflibs_on_short_files():
    import difflib

    for seed in range(300):  # files of 0 to 49 lines of few distinct lines, with up to five edits
        old = [f"line {(seed * 7 + k * k) % 9}\n" for k in range(seed % 50)]
        new = _edited(old, seed)
        assert list(unified_diff(old, new, "a/f.py", "b/f.py")) == \
            list(difflib.unified_diff(old, new, "a/f.py", "b/f.py")), seed
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        assert list(grouped_opcodes(old, new)) == list(matcher.get_grouped_opcodes(3)), seed


def test_the_diff_of_a_long_file_of_repeated_lines_shows_each_edit_once():
    # the review page and --diff of a generated 3 MiB file: difflib alone takes minutes on it
    block = ["def step(x):\n", "    x = x.cuda()\n", "    return x\n", "\n"]
    old = block * 2000
    new = [line.replace("cuda()", "npu()") for line in old]
    new.insert(0, "import torch_npu\n")
    diff = list(unified_diff(old, new, "a", "b", context=0))
    removed = [line for line in diff if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert removed == ["-    x = x.cuda()\n"] * 2000
    assert added == ["+import torch_npu\n"] + ["+    x = x.npu()\n"] * 2000


def test_the_opcodes_of_long_files_rebuild_the_new_text():
    for seed in range(20):  # 300 to 20,000 lines, unique lines among repeated ones, 50 edits
        old = [f"line {(seed + k * k) % 13}\n" if k % 5 else f"def f{k}():\n" for k in range(300 + 1000 * seed)]
        new = old
        for part in range(10):
            new = _edited(new, seed * 10 + part)
        rebuilt = []
        old_at = new_at = 0
        for tag, i1, i2, j1, j2 in opcodes(old, new):
            assert (i1, j1) == (old_at, new_at)  # contiguous, covering both texts
            if tag == "equal":
                assert old[i1:i2] == new[j1:j2]
            rebuilt += new[j1:j2]
            old_at, new_at = i2, j2
        assert rebuilt == new and old_at == len(old), seed


def test_a_cuda_switch_of_another_package_keeps_the_cuda_answer_and_is_reported():
    source = (
        "import torch\nfrom mergekit.merge import MergeOptions\nfrom .training import fit\n"
        "options = MergeOptions(device='auto', cuda=torch.cuda.is_available() and not cpu_only)\n"
        "fit(model, use_cuda=torch.cuda.is_available())\n"
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='out', no_cuda=not torch.cuda.is_available())\n"
    )
    output, result = migrate(source)
    # true on an NPU machine, mergekit's switch would run its CUDA code there: it keeps the CUDA answer
    assert "MergeOptions(device='auto', cuda=torch.cuda.is_available() and not cpu_only)" in output
    # the project's own function is migrated with its caller
    assert "fit(model, use_cuda=torch_npu.npu.is_available())" in output
    # transformers chooses the NPU itself: its no_cuda (use_cpu) takes the NPU's answer
    assert "TrainingArguments(output_dir='out', no_cuda=not torch_npu.npu.is_available())" in output
    rows = [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]
    assert rows == [(4, "MergeOptions(cuda=)")]


def test_a_cuda_test_that_decides_a_fused_optimizer_keeps_cuda():
    # torch_npu has a fused kernel for AdamW only: with the NPU's answer, Adam(**extra) raises at the first step
    source = (
        "import torch\nextra = {'fused': fabric.device.type == 'cuda', key: 1}\n"
        "opt = torch.optim.Adam(params, fused=torch.cuda.is_available())\n"
        "device = torch.device('cuda')\n"
        "adamw = torch.optim.AdamW(params, fused=(device_type == 'cuda'))\n"
    )
    output, result = migrate(source)
    assert "extra = {'fused': fabric.device.type == 'cuda', key: 1}" in output
    assert "torch.optim.Adam(params, fused=torch.cuda.is_available())" in output
    assert "device = torch.device('npu')" in output
    # AdamW has its fused kernel on the NPU: its test is migrated
    assert "torch.optim.AdamW(params, fused=(device_type == 'npu'))" in output
    rows = [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]
    assert rows == [(2, "fused"), (3, "fused")]
    assert all("aten::_fused_adamw_" in f.tip for f in result.findings if f.api == "fused")


def test_another_accelerators_index_is_no_cuda_device():
    output, _ = migrate("import torch\nif torch.xpu.is_available():\n    model.to(torch.xpu.current_device())\n"
                        "else:\n    model.to(torch.cuda.current_device())\n")
    assert "model.to(torch.xpu.current_device())" in output
    assert 'model.to(f"npu:{torch_npu.npu.current_device()}")' in output


def test_a_device_test_given_to_another_packages_cuda_switch_keeps_cuda():
    source = (
        "import torch\nfrom onnx2tf import convert\nfrom .export import to_saved_model\n"
        "convert(model, cuda=device.type == 'cuda' and not rocm)\n"
        "to_saved_model(model, cuda=device.type == 'cuda')\n"
    )
    output, result = migrate(source)
    assert "convert(model, cuda=device.type == 'cuda' and not rocm)" in output
    assert "to_saved_model(model, cuda=device.type == 'npu')" in output
    # one row, from the rule that left it (not a second one from the leftover analysis)
    rows = [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]
    assert rows == [(4, "convert(cuda=)")]


def test_operators_without_an_npu_kernel_are_reported():
    source = (
        "import torch\nimport torch.nn.functional as F\n"
        "a = torch.heaviside(x, v)\n"  # CUDA kernel, none in torch_npu 2.1
        "b = torch.matmul(x, v)\n"  # composite: runs through mm/bmm on NPU
        "c = F.layer_norm(x, (4,))\n"  # composite over native_layer_norm, which the NPU has
        "d = torch.cumsum(x, 0)\n"  # NPU kernel
    )
    _, result = migrate(source)
    reported = [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]
    assert reported == [(3, "torch.heaviside")]
    assert "aten::heaviside" in result.findings[0].tip


def test_aten_names_of_torch_namespaces():
    assert apidata.aten_name("torch.linalg.svd") == "linalg_svd"
    assert apidata.aten_name("torch.fft.rfft") == "fft_rfft"
    assert apidata.aten_name("torch.nn.functional.gelu") == "gelu"
    assert apidata.aten_name("torch.heaviside") == "heaviside"
    assert apidata.aten_name("numpy.heaviside") is None


def test_a_defect_in_a_rule_costs_one_file_not_the_run(monkeypatch):
    from gpu2npu.rules.tensor_cuda import TensorCudaToNpu

    def broken(self, original_node, updated_node):
        raise ValueError("boom")

    monkeypatch.setattr(TensorCudaToNpu, "leave_Call", broken)
    result = migrate_source(b"import torch\nx = y.cuda()\n", "f.py", OPTIONS)
    assert result.status == Status.FAILED and "internal error" in result.error and "boom" in result.error


@pytest.mark.parametrize("where", ["gpu2npu.findings.hazards.nvidia_tools.Detector.on_call",
                                   "gpu2npu.reading.scan.api_findings"])
def test_a_defect_in_what_reads_the_file_costs_one_file_not_the_run(monkeypatch, tmp_path, where):
    # (the reading before the rules: API rows, hazards; one broken file, the other migrated)
    from gpu2npu.reading import scan
    real = scan.api_findings

    def broken(*args, **kwargs):
        path = args[1] if where.endswith("api_findings") else args[0].view.path
        if str(path).endswith("probe.py"):
            raise TypeError("boom")
        return real(*args, **kwargs) if where.endswith("api_findings") else None

    monkeypatch.setattr(where, broken)
    project = tmp_path / "project"
    project.mkdir()
    (project / "probe.py").write_text("import subprocess\nsubprocess.run(['nvidia-smi'])\nimport torch\nx = y.cuda()\n")
    (project / "plain.py").write_text("import torch\nx = y.cuda()\n")
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache", "-j", "1")
    assert result.exit_code == 3, result.output
    assert "x = y.npu()" in (tmp_path / "out" / "project_msft" / "plain.py").read_text()
    log = (tmp_path / "out" / "project_msft" / "msFmkTranspltlog.txt").read_text()
    assert "probe.py" in log and "internal error while reading (TypeError: boom)" in log
    checked = run_cli("check", "-v", "2.1.0", "--no-cache", str(project))
    assert checked.exit_code != 0 and "probe.py" in checked.output and "internal error" in checked.output


# Found by tests/test_properties.py.
def test_the_single_npu_wrapper_keeps_crlf_line_endings():
    source = b"import torch\r\nmodel = torch.nn.DataParallel(model)\r\n"
    output = migrate_source(source, "f.py", OPTIONS).output
    assert b'"""torch.nn.DataParallel' in output and output.count(b"\n") == output.count(b"\r\n")


def test_a_deleted_statement_reports_the_blank_lines_that_went_with_it():
    from gpu2npu.rules import DistributedSettings

    options = Options(api=OPTIONS.api, distributed=DistributedSettings(main_file="f.py", project_initialises=True))
    source = b"import torch\nx = 1\n\nmodel = torch.nn.DataParallel(model)\ny = 2\n"
    result = migrate_source(source, "f.py", options, rules_for(options))
    assert b"x = 1\ny = 2\n" in result.output
    assert [(c.start_line, c.end_line, c.operation.value) for c in result.changes if c.rule == "NPU302"] == [(3, 4, "DELETE")]


def test_the_ddp_wrap_uses_the_name_torch_is_imported_as():
    from gpu2npu.rules import DistributedSettings

    options = Options(api=OPTIONS.api, distributed=DistributedSettings(main_file="f.py", project_initialises=True))
    result = migrate_source(b"import torch as th\nmodel = Net()\n", "f.py", options, rules_for(options))
    assert b"model = th.nn.parallel.DistributedDataParallel(model, device_ids=[torch_npu.npu.current_device()])" in result.output


NO_DEVICE_SOURCES = [
    # a checkpoint's RNG states under the key "cuda": written on GPUs, read back after migration
    'import torch\nstate = {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all()}\n',
    # a table whose entries name other things (wheel tags, vendors): labels
    'import torch\nWHEELS = {"cuda": "cu130", "rocm": "rocm6.2"}\nVENDOR = {"cuda": "nvidia", "hip": "amd"}\n',
    'import torch\nif "cuda" in state:\n    torch.cuda.set_rng_state_all(state["cuda"])\n',
    # beside a table of GPU models looked up by the GPU's name (no device type is a key of it)
    'import torch\nPEAK = {"NVIDIA A100": 312e12}\nif torch.cuda.is_available():\n    peak = PEAK[torch.cuda.get_device_name()]\n'
    'state = {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all()}\n',
    'import torch\nFLOPS = {"H100": 989e12}\nflops = FLOPS.get(torch.cuda.get_device_properties(0).name)\n'
    'if "cuda" in state:\n    torch.cuda.set_rng_state_all(state["cuda"])\n',
    'import torch\nstates = ckpt.get("cuda", [])\nckpt.pop("cuda:0")\n',
    # messages for people, and an Enum's labels
    'import logging\nimport torch\nprint("cuda")\nlogging.getLogger(__name__).warning("cuda")\n',
    'import enum\nimport torch\nclass Kind(enum.Enum):\n    GPU = "cuda"\n',
    # a member's label of several parts, its backend too, beside the NPU's own member
    'import enum\nimport torch\nclass Device(enum.Enum):\n    CUDA = ("cuda", "GPU", "nccl")\n    NPU = ("npu", "NPU", "hccl")\n',
    # "cuda:" cut from a device's text in a function that keeps "npu:" for its own NPU branch
    'import torch\ndef parse(d):\n    for remove in "cuda:", "(", ")":\n        d = d.replace(remove, "")\n'
    '    if d.startswith("npu"):\n        return d\n    return d\n',
    # platforms beside "cuda" ("rocm" runs on torch's "cuda" device): a group of GPU platforms, which
    # the NPU would join (a test's expectations for ROCm chosen on the NPU)
    'import torch\ndef score(kind, other):\n    if kind in ["cuda", "rocm"] and other in ["cuda", "rocm"]:\n        return 4\n'
    '    return 0\n',
    'import torch\nGPU_VENDORS = ("cuda", "nvidia", "amd")\nuse = torch.cuda.is_available() and platform in GPU_VENDORS\n',
    # a command-line option whose choices offer "cuda" beside another implementation: a label that
    # launch scripts pass (`--quant-backend cuda`), in its declaration and where it is compared
    'import argparse\nimport torch\np = argparse.ArgumentParser()\n'
    'p.add_argument("--quant-backend", choices=["cuda", "triton"], default="cuda")\nargs = p.parse_args()\n'
    'if args.quant_backend == "cuda":\n    pass\nuse_triton = "cuda" != args.quant_backend\n',
    'import argparse\nimport torch\np = argparse.ArgumentParser()\n'
    'p.add_argument("-k", "--kernel", dest="impl", type=str, choices=("torch", "cuda"), default="cuda")\n'
    'def run(cfg):\n    return cfg.impl in ("cuda",)\n',
    # a class's constants that label a platform or an implementation, as an Enum's members do: the
    # user's "cuda" compared with them would no longer match
    'import torch\nclass Kind:\n    CUDA = "cuda"\n    CPU = "cpu"\ndef pick(kind):\n    if kind == Kind.CUDA:\n'
    '        return 1\n    return 0\n',
    'import torch\nclass QuantLinear(torch.nn.Module):\n    QUANT_TYPE = "cuda"\n',
    'import torch\nclass Cfg:\n    backend: str = "cuda"\nuse_triton = Cfg.backend == "triton"\n',
]
# "cuda" as a platform's label: beside other platforms' labels, or where the same variable, attribute
# or function is elsewhere compared with, given or returning one (an installer's bundle, a profiler,
# an execution provider); renamed, it no longer matches what manifests, assets and callers say
PLATFORM_LABEL_SOURCES = [
    'import torch\nif recorded in ("cpu", "cuda", "vulkan", "metal"):\n    pass\n',
    'from typing import Literal\nimport torch\nProfilerKind = Literal["torch", "cuda", "proton"]\n',
    'import torch\nfusions: Literal["cpu", "cuda", "webgpu", "dml"] = None\n',
    'import torch\nTOKENS = {"cuda": "cuda", "vulkan": "vulkan", "rocm": "rocm"}\n',
    'import torch\nINSTALL = {"rocm": "rocm", "cuda": "cuda", "xpu": "vulkan"}\n',
    # the same variable compared with another platform elsewhere in the file
    'import torch\ndef route(backend):\n    if backend == "cuda":\n        return 1\n    if backend == "rocm":\n'
    '        return 2\n',
    'import torch\ndef floor(route):\n    return route.backend == "cuda"\ndef other(r):\n    return r.backend in ("rocm", "vulkan")\n',
    'import torch\nbackend = "cuda" if nvidia else "vulkan"\nif backend == "cuda":\n    pass\n',
    # a function that returns a platform's label: its other returns, and what is compared with its result
    'import torch\ndef pick():\n    if nvidia_present():\n        return "cuda"\n    return "metal"\nuse = pick() == "cuda"\n',
    # a platform's build cut from a label that is elsewhere compared with a build
    'import torch\nif line == "cuda12":\n    pass\nmajor = int(line.removeprefix("cuda"))\nok = line.startswith("cuda")\n',
    # ... or set from such a holder, an entry read by its key, a loop over builds: the length of
    # its prefix goes with it
    'import torch\ndef line_for(version):\n    return "cuda12" if version < 13 else "cuda13"\n'
    'runtime_line = line_for(v)\nline = artifact.runtime_line\nok = line.startswith("cuda") and line[len("cuda"):].isdigit()\n',
    'import torch\nif artifact.runtime_line == "cuda12":\n    pass\nrecorded = marker.get("runtime_line")\n'
    'fresh = recorded.startswith("cuda")\n',
    'import torch\nfor line in ("cuda13", "cuda12"):\n    if line.startswith("cuda"):\n        print(line)\n',
    # chosen instead of another platform
    'import torch\ntarget = Target(device=dev, backend="rocm" if is_rocm else "cuda")\n',
    # a default beside its choices, or annotated with them
    'import torch\nKERNEL = env_with_choices("KERNEL", "cuda", ["cuda", "triton"])\n',
    'import torch\nfrom typing import Literal\nKERNEL: Literal["cuda", "triton"] = "cuda"\n',
]
# the name of a variable in code that the file parses (torch's version module's `cuda = "12.1"`)
PYTHON_NAME_SOURCES = [
    'import ast\nimport torch\nfor statement in tree.body:\n    target = statement.targets[0]\n'
    '    if isinstance(target, ast.Name) and target.id == "cuda":\n        version = ast.literal_eval(statement.value)\n',
    'from ast import parse, walk, Attribute\nimport torch\nuses = [n for n in walk(parse(text)) if isinstance(n, Attribute) and n.attr == "cuda"]\n',
]
NO_DEVICE_SOURCES += PYTHON_NAME_SOURCES
# "cuda" glued to letters into a longer name (a profiler's sort key, an attribute's name): renamed,
# the name is one that nothing defines
LONGER_NAME_SOURCES = [
    'import torch\ndef sort_key(on_gpu):\n    return f"{\'cuda\' if on_gpu else \'cpu\'}_time_total"\n',
    'import torch\nkey = f"self_{\'cuda\' if torch.cuda.is_available() else \'cpu\'}_memory_usage"\n',
    'import torch\ntotal = getattr(event, "cuda" + "_time_total")\n',
    'import torch\nname = "use_" + "cuda"\n',
    # a framework's name for what its CUDA implementation found (Lightning's accelerator choice):
    # its registry has no "npu", and the class, left as written, says no on an Ascend machine
    'import torch\nfrom lightning.fabric.accelerators.cuda import CUDAAccelerator\ndef choose():\n'
    '    if CUDAAccelerator.is_available():\n        return "cuda"\n    return "cpu"\n',
    'import torch\nimport vllm.platforms.cuda as cuda_platforms\ndef choose():\n'
    '    if cuda_platforms.CudaPlatform.is_available():\n        kind = "cuda"\n    else:\n        kind = "cpu"\n    return kind\n',
]
# the devices that an implementation running on NVIDIA's GPUs alone declares: renamed, a registry
# would offer CuTe or cuTile kernels on the NPU
CUDA_ONLY_IMPLEMENTATION_SOURCES = [
    'import torch\nregister_impl(ImplInfo(name="cute", devices=("cuda",), module_path="pkg.cute.ops"))\n',
    'import torch\nregister(Backend(name="cutile", supported_devices=["cuda"]))\n',
    'import torch\nREGISTRY.add(impl="flashinfer", device="cuda")\n',
]
NO_DEVICE_SOURCES += PLATFORM_LABEL_SOURCES + LONGER_NAME_SOURCES + CUDA_ONLY_IMPLEMENTATION_SOURCES


@pytest.mark.parametrize("source", NO_DEVICE_SOURCES)
def test_a_device_name_where_no_device_goes_stays_and_is_not_reported(source):
    output, result = migrate(source)
    assert output.count('"cuda') == source.count('"cuda') and output.count("'cuda") == source.count("'cuda")
    assert output.count('"nccl"') == source.count('"nccl"')
    assert not [f for f in result.findings if "device string" in f.api or "backend" in f.api], result.findings


@pytest.mark.parametrize("data", [
    'def load(state):\n    if "cuda" in state["rng"]:\n        torch.cuda.set_rng_state_all(state["rng"]["cuda"])\n',
    'def save(state):\n    state["rng"]["cuda"] = torch.cuda.get_rng_state_all()\n',
    'def load(ckpt):\n    torch.cuda.set_rng_state_all(ckpt.get("cuda"))\n',
    'rng = {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all()}\nstates = rng["cuda"]\n',
])
def test_rng_states_under_cuda_stay_beside_a_table_of_devices(data):
    """Where the file looks a mapping up by a device, its mappings' "cuda" keys are device types,
    renamed with the device (together: a mapping may flow into another); except under a device's
    RNG states, a checkpoint's data, which checkpoints written on GPUs keep under "cuda"."""
    table = 'import torch\nNAMES = {"cuda": "GPU", "cpu": "CPU"}\nlabel = NAMES.get(args.device)\n'
    output, _ = migrate(table + data)
    assert output.count('"cuda"') == data.count('"cuda"') and '{"npu": "GPU"' in output


class TestADeviceTablesCudaOnlyEntry:
    """A table looked up by the device type whose "cuda" entry holds what CUDA alone has (torch
    profiler's CUDA activity, a CUDA-only kernel library, a profiler kind beside "proton"): under
    "npu" the NPU would get CUDA's activities, where it found no entry and said so.  The key stays,
    reported; entries that go with the device (a backend, a device, a torch.cuda function, a
    display name) are renamed with it."""

    @pytest.mark.parametrize("source", [
        'import torch\nACTIVITIES = {"cpu": ("CPU",), "cuda": ("CPU", "CUDA"), "xpu": ("CPU", "XPU")}\n'
        'def activities(device_type):\n    return ACTIVITIES[device_type]\n',
        'import torch\nKINDS = {"cpu": frozenset(("torch",)), "cuda": frozenset(("torch", "cuda", "proton"))}\n'
        'kinds = KINDS[current_platform.device_type]\n',
        'import torch\nfrom torch.profiler import ProfilerActivity\n'
        'ACTS = {"cpu": [ProfilerActivity.CPU], "cuda": [ProfilerActivity.CPU, ProfilerActivity.CUDA]}\n'
        'acts = ACTS[x.device.type]\n',
        'import torch\nGEMM = {"cuda": "cutlass", "cpu": "mkl"}\nlibrary = GEMM.get(args.device)\n',
    ])
    def test_stays_reported(self, source):
        output, result = migrate(source)
        assert '"cuda":' in output and not [c for c in result.changes if c.rule == "NPU103"], result.changes
        assert [f.api for f in result.findings if f.api.startswith("{'cuda': ...}")] == [
            "{'cuda': ...} (a device table's entry)"]

    def test_a_table_of_platforms_beside_one_of_devices_has_no_row(self):
        source = ('import torch\nINSTALL = {"rocm": "rocm", "cuda": "cuda", "xpu": "vulkan"}\n'
                  'names = NAMES[x.device.type]\n')
        output, result = migrate(source)
        assert output.count('"cuda"') == 2 and not [f for f in result.findings if "device table" in f.api]

    @pytest.mark.parametrize("source, expected", [
        ('import torch\nBACKENDS = {"cuda": "nccl", "cpu": "gloo"}\nbackend = BACKENDS[x.device.type]\n',
         '{"npu": "hccl", "cpu": "gloo"}'),
        ('import torch\nNAMES = {"cuda": "GPU", "cpu": "CPU"}\nlabel = NAMES.get(args.device)\n', '{"npu": "GPU"'),
        ('import torch\nSEEDS = {"cuda": torch.cuda.manual_seed}\nSEEDS.get(torch_device)(0)\n', '{"npu": torch_npu'),
        ('import torch\nPLACES = {"cuda": ("cuda", "cpu"), "tpu": ("cpu",)}\nplaces = PLACES[x.device.type]\n',
         '{"npu": ("npu", "cpu")'),
    ])
    def test_an_entry_that_goes_with_the_device_is_renamed(self, source, expected):
        output, _ = migrate(source)
        assert expected in output


@pytest.mark.parametrize("source, expected", [
    # the values of a map_location dict are devices (its keys: test_a_checkpoints_recorded_locations_stay)
    ('import torch\nckpt = torch.load(p, map_location={"cuda:0": f"cuda:{rank}"})\n', '{"cuda:0": f"npu:{rank}"}'),
    ('import torch\nif "cuda" in str(x.device):\n    pass\n', '"npu" in str(x.device)'),
    ('import torch\nif "cuda" not in args.device:\n    pass\n', '"npu" not in args.device'),
    ('import torch\nconfig = {"device": "cuda"}\n', '{"device": "npu"}'),
    ('import torch\nx = batch["input"].to("cuda")\n', 'to("npu")'),
    # torch's device types beside it: a group of devices
    ('import torch\nif x.device.type in ("cuda", "xpu"):\n    pass\n', 'in ("npu", "xpu")'),
    ('import torch\nd = torch.device("cuda:" + str(rank))\n', 'torch.device("npu:" + str(rank))'),
    # a device chosen inside an f-string or joined to its index: still a device
    ('import torch\ndef dev(rank):\n    return f"{\'cuda\' if torch.cuda.is_available() else \'cpu\'}:{rank}"\n',
     "f\"{'npu' if torch_npu.npu.is_available() else 'cpu'}:{rank}\""),
    ('import torch\nd = "cuda" + ":0"\n', '"npu" + ":0"'),
    # the devices an implementation that runs on the NPU too declares (Triton's kernels, torch's own)
    ('import torch\nregister_impl(ImplInfo(name="triton", devices=("cuda", "xpu")))\n', 'devices=("npu", "xpu")'),
    ('import torch\nregister_impl(ImplInfo(name="torch", default_devices=("cuda",)))\n', 'default_devices=("npu",)'),
    # a device test answered by torch (no framework's CUDA class): the choice goes with it
    ('import torch\ndef choose():\n    if torch.cuda.is_available():\n        return "cuda"\n    return "cpu"\n',
     'return "npu"'),
    ('import torch\nfrom .accelerators import CUDAAccelerator\ndef choose():\n    if CUDAAccelerator.is_available():\n'
     '        pass\n    else:\n        return "cuda"\n', 'return "npu"'),
    ('import torch\nif device.startswith("cuda:"):\n    torch.cuda.set_device(device)\n', 'device.startswith("npu:")'),
    ('import torch\nif device.startswith("cuda:"):\n    index = int(device[len("cuda:"):])\n', 'device[len("npu:"):]'),
    # an attribute named like a syntax tree's field, in a file that reads none
    ('import torch\nif device.id == "cuda":\n    x = x.cuda()\n', 'device.id == "npu"'),
    # a holder compared with a build elsewhere: its own device tests stay devices' where it holds a device
    ('import torch\nif line == "cuda12":\n    pass\nok = str(x.device).startswith("cuda")\n', 'startswith("npu")'),
    # cut from a device's text where nothing handles the NPU: "npu:0" must lose its prefix as "cuda:0" did
    ('import torch\nindex = int(str(device).replace("cuda:", ""))\n', 'replace("npu:", "")'),
    ('import torch\ndef parse(d):\n    for remove in "cuda:", "(", ")":\n        d = d.replace(remove, "")\n    return d\n',
     'for remove in "npu:", "(", ")"'),
    # a mapping looked up by a device: its keys are device types, renamed with the device
    ('import torch\nBACKENDS = {"cuda": "nccl", "cpu": "gloo"}\nbackend = BACKENDS[x.device.type]\n',
     '{"npu": "hccl", "cpu": "gloo"}'),
    ('import torch\nSEEDS = {"cuda": torch.cuda.manual_seed}\nSEEDS.get(torch_device)(0)\n', '{"npu": torch_npu'),
    # handed to a function of the file that looks it up by what it is given, beside a table of devices
    ('import torch\nNAMES = {"cuda": "GPU", "cpu": "CPU"}\nlabel = NAMES.get(args.device)\n'
     'TRAINS = {"cuda": True, "mps": False}\ndef dispatch(device, table):\n    return table[device]\n'
     'ok = dispatch(torch_device, TRAINS)\n', 'TRAINS = {"npu": True'),
    # other mappings of such a file, which may flow into each other (a function's result): renamed together
    ('import torch\nNAMES = {"cuda": "GPU"}\nlabel = NAMES.get(args.device)\ndef probe():\n'
     '    return {"cuda": None, "xpu": None}\nm = probe()\nok = m["cuda"] or "cuda" in m\n',
     'ok = m["npu"] or "npu" in m'),
    ('import torch\nNAMES = {"cuda": "GPU"}\nlabel = NAMES.get(args.device)\ndef probe():\n'
     '    return {"cuda": None, "xpu": None}\nm = probe()\nok = m["cuda"] or "cuda" in m\n',
     'return {"npu": None, "xpu": None}'),
    # looked up by a variable the file gives a device name, beside another table of devices
    ('import torch\nNAMES = {"cuda": "GPU", "cpu": "CPU"}\nlabel = NAMES.get(args.device)\n'
     'kind = "cuda" if torch.cuda.is_available() else "cpu"\nstats = {"cuda": 0, "cpu": 0}\nstats[kind] += 1\n',
     'stats = {"npu": 0, "cpu": 0}'),
    ('import torch\nkind = "cuda" if torch.cuda.is_available() else "cpu"\nself.counts: dict = {"cuda": 0}\n'
     'self.counts[kind] += 1\n', '{"npu": 0}'),
    # a table whose entry goes with the device (a device, a backend, a torch.cuda function): renamed
    # together even where the file looks nothing up (another file does)
    ('import torch\nSUPPORTED = {"cuda": ("cuda", "cpu"), "tpu": ("cpu",)}\n', '{"npu": ("npu", "cpu")'),
    ('import torch\nBACKENDS = {"cuda": "nccl", "cpu": "gloo"}\n', '{"npu": "hccl"'),
    ('import torch\nSEEDS = {"cuda": torch.cuda.manual_seed, "cpu": torch.manual_seed}\n', '{"npu": torch_npu.npu.manual_seed'),
    # an option that chooses a device: its choices are devices (or a choice of one), or its name says so
    ('import argparse\nimport torch\np = argparse.ArgumentParser()\n'
     'p.add_argument("--backend", choices=["cuda", "cpu", "auto"], default="cuda")\n', 'choices=["npu", "cpu", "auto"], default="npu"'),
    ('import argparse\nimport torch\np = argparse.ArgumentParser()\n'
     'p.add_argument("--device", choices=["cuda", "cpu", "custom"], default="cuda")\nargs = p.parse_args()\n'
     'if args.device == "cuda":\n    pass\n', 'if args.device == "npu"'),
    # a class's constant whose name says device, or that the file hands to a device position
    ('import torch\nclass TrainConfig:\n    device: str = "cuda"\n', 'device: str = "npu"'),
    ('import torch\nclass Cfg:\n    DEVICE_TYPE = "cuda"\n', 'DEVICE_TYPE = "npu"'),
    ('import torch\nclass Kind:\n    CUDA = "cuda"\nx = torch.zeros(2, device=Kind.CUDA)\n', 'CUDA = "npu"'),
    ('import torch\nclass Kind:\n    CUDA = "cuda"\nd = torch.device(Kind.CUDA)\n', 'CUDA = "npu"'),
    ('import torch\nclass M(torch.nn.Module):\n    BACKEND = "cuda"\n    def go(self, x):\n'
     '        return x.to(self.BACKEND)\n', 'BACKEND = "npu"'),
    ('import torch\nclass Kind:\n    GPU = "cuda"\ndef on_gpu(x):\n    return x.device.type == Kind.GPU\n',
     'GPU = "npu"'),
    ('import torch\nclass Kind:\n    GPU = "cuda"\nclass Run:\n    def __init__(self):\n'
     '        self.device = Kind.GPU\n', 'GPU = "npu"'),
    ('import torch\nclass Kind:\n    GPU = "cuda"\nname = f"{Kind.GPU}:{rank}"\n', 'GPU = "npu"'),
    # beside devices only, or with a device's name or type compared with a platform elsewhere:
    # still a device
    ('import torch\nif x.device.type in ("cuda", "mps", "cpu"):\n    pass\n', '("npu", "mps", "cpu")'),
    ('import torch\nif gpu.type == "nvidia":\n    pass\nif x.device.type == "cuda":\n    pass\n',
     'x.device.type == "npu"'),
    ('import torch\nif device == "rocm":\n    pass\nx = torch.zeros(2, device="cuda")\nif device == "cuda":\n    pass\n',
     'if device == "npu"'),
    ('import torch\nPAIRS = [("cuda", "float16"), ("cpu", "float32")]\n', '("npu", "float16")'),
    ('import torch\ndevice = "cuda" if torch.cuda.is_available() else "mps"\n', 'device = "npu" if'),
    ('import torch\nBACKENDS = {"cuda": "nccl", "cpu": "gloo"}\n', '{"npu": "hccl", "cpu": "gloo"}'),
    ('import torch\nkwargs = {"dtype": torch.bfloat16, "device": "cuda", **extra}\n', '"device": "npu"'),
    ('import torch\nfrom typing import Literal\nDev = Literal[str, "cuda"]\nx = torch.zeros(2, device="cuda")\n',
     'device="npu"'),
    ('import torch\nVENDOR_DEVICE = {"nvidia": "cuda"}\nd = torch.device(VENDOR_DEVICE[vendor])\n', '{"nvidia": "npu"}'),
    # an option's default beside another option whose default is a label
    ('import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument("--profiler", default="torch")\n'
     'p.add_argument("--device", default="cuda", type=str)\n', 'default="npu"'),
    # another variable of the file holds a platform: this one is a device
    ('import torch\nif backend == "rocm":\n    pass\nx = batch.to(target)\nif target == "cuda":\n    pass\n',
     'if target == "npu"'),
])
def test_a_device_name_in_a_device_position_is_still_migrated(source, expected):
    output, _ = migrate(source)
    assert expected in output


def test_two_generated_packages_share_one_sys_path_line():
    source = ("import torch\nfrom flash_attn import flash_attn_func\nimport xformers.ops as xops\n\n\n"
              "def attn(q, k, v):\n    return flash_attn_func(q, k, v) + xops.memory_efficient_attention(q, k, v)\n")
    output, result = migrate(source)
    assert output.count("sys.path.append(") == 1
    assert output.index("sys.path.append(") < output.index("from ascend_flash_attn") < output.index("import ascend_xformers")
    inserts = [c for c in result.changes if "sys.path" in c.message]
    assert len(inserts) == 1


def test_two_generated_packages_imported_apart_share_one_sys_path_line_before_both():
    # (the later package's rule leaves its module first: the line still goes before the earlier import)
    source = ("import torch\n\ntry:\n    import xformers.ops as xops\nexcept ImportError:\n    xops = None\n\n"
              "from flash_attn import flash_attn_func\n\n\ndef attn(q, k, v):\n    if xops is not None:\n"
              "        return xops.memory_efficient_attention(q, k, v)\n    return flash_attn_func(q, k, v)\n")
    output, result = migrate(source)
    assert output.count("sys.path.append(") == 1 and output.count("import sys\n") == 1
    assert output.index("sys.path.append(") < output.index("try:") < output.index("from ascend_flash_attn")
    assert "ascend_xformers package" in output and "ascend_flash_attn package" in output
    inserts = [(c.start_line, c.message) for c in result.changes if "sys.path" in c.message]
    assert inserts == [(1, "insert the output's top folder into sys.path (for ascend_xformers and ascend_flash_attn)")]
    again, rerun = migrate(output)
    assert again == output and not [c for c in rerun.changes if "sys.path" in c.message]


FOREIGN_NCCL = [
    # handed to Ray's collective groups directly, or through an option, a field, a variable
    "import ray.util.collective as col\ncol.init_collective_group(2, 0, backend='nccl', group_name='g')\n",
    "import ray.util.collective as col\nfrom dataclasses import dataclass\n\n@dataclass\nclass Args:\n"
    "    sync_backend: str = 'nccl'\n\ndef go(a):\n    col.init_collective_group(2, 0, a.sync_backend, 'g')\n",
    "import argparse\nfrom ray.util import collective\np = argparse.ArgumentParser()\n"
    "p.add_argument('--sync-backend', default='nccl')\nargs = p.parse_args()\n"
    "if args.sync_backend == 'nccl':\n    collective.init_collective_group(2, 0, backend=args.sync_backend)\n",
    # a test of the name before vLLM's own NCCL communicator
    "from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator\n\ndef sync(self):\n"
    "    if self.backend == 'nccl':\n        self.comm = PyNcclCommunicator(self.group, device=self.device)\n",
    # the trainer's side of vLLM's weight transfer (RL weight sync), chosen by a backend name
    "from vllm.distributed.weight_transfer.nccl_common import trainer_init\n\ndef join(info, backend='nccl'):\n"
    "    if backend == 'nccl':\n        return trainer_init(info)\n",
    # an option (default and choices) handed to the file's own class, whose __init__ hands it on
    "import argparse\nimport ray.util.collective as col\n\n\nclass Sync:\n    def __init__(self, world, backend='nccl'):\n"
    "        if backend == 'nccl':\n            col.init_collective_group(world, 0, backend=backend)\n\n\n"
    "p = argparse.ArgumentParser()\np.add_argument('--sync-backend', default='nccl', choices=['nccl', 'gloo'])\n"
    "args = p.parse_args()\nsync = Sync(4, backend=args.sync_backend)\n",
    # positionally, through two of the file's functions
    "import ray.util.collective as col\n\n\ndef join(world, how):\n    col.init_collective_group(world, 0, how)\n\n\n"
    "def start(cfg, name):\n    join(cfg.world, name)\n\n\nclass Cfg:\n    weight_backend = 'nccl'\n\n\n"
    "start(Cfg(), Cfg.weight_backend)\n",
    # torchft's fault-tolerant process groups, chosen by a field set by keyword elsewhere in the file
    "import torchft\n\n\ndef make(cfg):\n    if cfg.process_group == 'gloo':\n        return torchft.ProcessGroupGloo()\n"
    "    elif cfg.process_group == 'nccl':\n        return torchft.ProcessGroupNCCL()\n\n\n"
    "FT = FaultTolerance(enable=True, process_group='nccl')\n",
    # vLLM's weight-transfer settings, as vllm.config exports them, given one value of a choice
    "from vllm.config import WeightTransferConfig\n\n\ndef make(hybrid):\n"
    "    return WeightTransferConfig(backend='ipc' if hybrid else 'nccl')\n",
    "import ray.util.collective as col\n\n\ndef join(world, args):\n"
    "    col.init_collective_group(world, 0, backend=args.sync_backend or 'nccl')\n",
]


@pytest.mark.parametrize("source", FOREIGN_NCCL)
def test_an_nccl_name_for_another_collective_library_stays_and_is_reported(source):
    output, result = migrate(source)
    assert "hccl" not in output
    rows = [f for f in result.findings if f.api == "backend 'nccl'"]
    assert rows and all("no HCCL backend" in row.tip for row in rows), result.findings


@pytest.mark.parametrize("source", [
    # a field set by keyword that nothing hands to another library
    "import torch.distributed as dist\nCFG = Config(backend='nccl')\ndist.init_process_group(backend=CFG.backend)\n",
    # one value of a choice handed to torch's process groups
    "import torch\nimport torch.distributed as dist\n"
    "dist.init_process_group(backend='nccl' if torch.cuda.is_available() else 'gloo')\n",
    "import torch.distributed as dist\n\n\ndef init(args):\n    dist.init_process_group(backend=args.backend or 'nccl')\n",
    # torch's own makers of process groups, given the name by keyword beside a foreign field of that name
    "import torch.distributed as dist\nimport torchft\n\n\ndef make(cfg):\n    if cfg.backend == 'nccl':\n"
    "        return torchft.ProcessGroupNCCL()\n\n\ndist.new_group(ranks=[0, 1], backend='nccl')\n",
])
def test_an_nccl_name_given_by_keyword_to_torch_or_to_no_library_is_renamed(source):
    output, _ = migrate(source)
    assert "'hccl'" in output


def test_an_nccl_name_for_torchs_process_groups_beside_another_librarys_is_renamed():
    source = ("import torch.distributed as dist\nimport ray.util.collective as col\n"
              "dist.init_process_group(backend='nccl')\ncol.init_collective_group(2, 0, backend='nccl')\n")
    output, _ = migrate(source)
    assert "init_process_group(backend='hccl')" in output and "init_collective_group(2, 0, backend='nccl')" in output


def test_an_option_the_files_own_function_hands_to_torch_is_renamed_beside_one_it_hands_to_ray():
    source = ("import argparse\nimport torch.distributed as dist\nimport ray.util.collective as col\n\n\n"
              "def setup(backend):\n    dist.init_process_group(backend=backend)\n\n\n"
              "def sync_group(backend):\n    col.init_collective_group(2, 0, backend=backend)\n\n\n"
              "p = argparse.ArgumentParser()\np.add_argument('--dist-backend', default='nccl', choices=['nccl', 'gloo'])\n"
              "p.add_argument('--sync-backend', default='nccl')\nargs = p.parse_args()\n"
              "setup(args.dist_backend)\nsync_group(backend=args.sync_backend)\n")
    output, result = migrate(source)
    assert "add_argument('--dist-backend', default='hccl', choices=['hccl', 'gloo'])" in output
    assert "add_argument('--sync-backend', default='nccl')" in output
    assert [f.start_line for f in result.findings if f.api == "backend 'nccl'"] == [16]


def _padded(head: str, tail: str) -> str:
    """A file long enough to be migrated through its relevant statements only (partial), with
    `head` and `tail` far apart and unrelated code between them."""
    filler = "".join(f"def helper_{n}(x):\n    return x + {n}\n\n\n" for n in range(80))
    return head + "\n\n" + filler + tail


def test_what_the_whole_file_says_holds_in_a_file_migrated_in_pieces():
    from gpu2npu.migration import partial

    # the mapping and its lookup by device are far apart: the pieces the rules see hold only the mapping
    source = _padded('import torch\nBACKENDS = {"cuda": "nccl", "cpu": "gloo"}\n',
                     "def backend(device):\n    return BACKENDS[device.type]\n")
    assert len(source.splitlines()) >= partial.PARTIAL_FROM_LINES
    output, _ = migrate(source)
    assert 'BACKENDS = {"npu": "hccl", "cpu": "gloo"}' in output
    # an option handed to Ray's collective groups at the end of the file
    source = _padded("import argparse\nimport ray.util.collective as col\np = argparse.ArgumentParser()\n"
                     "p.add_argument('--sync-backend', default='nccl')\n",
                     "def sync(args):\n    col.init_collective_group(2, 0, backend=args.sync_backend)\n")
    output, result = migrate(source)
    assert "default='nccl'" in output and any(f.api == "backend 'nccl'" for f in result.findings)


@pytest.mark.parametrize("source, rerouted", [
    # the optional import: bound to None where the package is missing, tested before use
    ("import torch\ntry:\n    import xformers.ops as xops\nexcept ImportError:\n    xops = None\n\n\ndef attn(q, k, v):\n"
     "    if xops is not None:\n        return xops.memory_efficient_attention(q, k, v)\n    return q\n", True),
    ("import torch\ntry:\n    import xformers.ops as xops\nexcept ImportError:\n    xops = None\nUSE = not xops\n", False),
    ("import torch\ntry:\n    import xformers.ops as xops\nexcept ImportError:\n    xops = None\n\n\ndef attn(q, k, v):\n"
     "    if not xops:\n        return q\n    return xops.memory_efficient_attention(q, k, v)\n", True),
    # the module handed on: what is read of it cannot be known
    ("import torch\ntry:\n    import xformers.ops as xops\nexcept ImportError:\n    xops = None\nregister(xops)\n"
     "out = xops.memory_efficient_attention(q, k, v)\n", False),
])
def test_an_optional_xformers_import_is_rerouted_like_flash_attns(source, rerouted):
    output, _ = migrate(source)
    assert ("import ascend_xformers.ops as xops" in output) is rerouted


def test_an_import_of_torch_for_type_checkers_only_loads_nothing():
    # a registry naming a backend, torch imported for annotations only: like a config module, it
    # relies on the process having loaded torch_npu (importing it here would load torch)
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n"
              "BACKENDS = {'default': 'nccl'}\n")
    output, _ = migrate(source)
    assert "import torch_npu" not in output and "'hccl'" in output
    # a lazy import in a function beside it: torch_npu goes there
    output, _ = migrate(source + "\n\ndef sync():\n    import torch\n    torch.cuda.synchronize()\n")
    assert "    import torch\n    import torch_npu\n    torch_npu.npu.synchronize()" in output
    assert output.count("import torch_npu") == 1


@pytest.mark.parametrize("source", [
    "from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained('m').cuda()\n",
    "import timm\nmodel = timm.create_model('resnet50').to('cuda')\n",
    "from accelerate import Accelerator\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nacc = Accelerator()\n"
    "batch = next(iter(loader)).cuda()\n",
    "import torchvision\nnet = torchvision.models.resnet18().cuda()\n",
])
def test_a_script_reaching_torch_through_a_package_built_on_it_imports_torch_npu(source):
    # the package loads torch, not torch_npu: `.npu()` and the "npu" device exist only with it
    output, result = migrate(source)
    assert output.count("import torch_npu\n") == 1, output
    assert [c.message for c in result.changes].count("insert import torch_npu") == 1


def test_a_module_importing_a_package_built_on_torch_lazily_gets_no_module_level_torch_npu():
    # the function loads trl when it runs; the module's own "nccl" needs no torch at import
    source = ("import os\n\nBACKEND = 'nccl'\n\n\ndef client():\n    from trl.generation.vllm_client import VLLMClient\n"
              "    return VLLMClient()\n")
    output, _ = migrate(source)
    assert "import torch_npu" not in output and "'hccl'" in output


@pytest.mark.parametrize("source", [
    "from ultralytics.utils import LOGGER\nDEFAULT = 'cuda:0'\n",
    "from deepspeed.accelerator import get_accelerator\nBACKEND = 'nccl'\n",
])
def test_a_module_of_the_package_built_on_torch_itself_still_relies_on_the_program(source):
    # the project is that package: its modules that leave torch out (constants, analytics) do so on purpose
    package = source.split()[1].split(".")[0]
    options = Options(api=apidata.load("2.1.0"), project_modules=frozenset({package}))
    result = migrate_source(source.encode(), f"{package}/utils/constants.py", options, rules_for(options))
    output = result.output.decode()
    assert "import torch_npu" not in output and ("'npu:0'" in output or "'hccl'" in output)


def test_a_lazy_file_that_needs_torch_npu_at_module_level_gets_it_once():
    # a changed function without its own torch import: the module imports torch_npu, and the
    # functions' imports would only repeat it
    source = "import os\n\n\ndef to_gpu(x):\n    import torch\n    return x.cuda()\n\n\ndef move(x):\n    return x.cuda()\n"
    output, result = migrate(source)
    assert output.count("import torch_npu") == 1 and output.startswith("import torch_npu\n")
    assert [c.start_line for c in result.changes if c.message == "insert import torch_npu"] == [0]


class TestAMethodsNameHandedToGetattr:
    """`self._apply("cuda")` with `def _apply(self, fn): getattr(v, fn)()` calls a method named cuda
    of whatever v is: a tensor, a module or a class of the project's (ultralytics' Results and its
    parts), whose own cuda() is renamed npu() with its callers: the name goes with them."""

    SOURCE = ("import torch\n\nclass Part:\n    def cuda(self):\n        return Part(self.data.cuda())\n\n"
              "class Results:\n    def cuda(self):\n        return self._apply('cuda')\n\n"
              "    def _apply(self, fn, *args):\n        return [getattr(v, fn)(*args) for v in self.parts]\n")

    def test_renamed_with_the_classes_methods(self):
        output, result = migrate(self.SOURCE)
        assert "def npu(self):\n        return self._apply('npu')" in output
        assert "def npu(self):\n        return Part(self.data.npu())" in output
        assert [c.start_line for c in result.changes if "method name" in c.message] == [9]
        assert not [f for f in result.findings if "'cuda'" in f.api], result.findings

    def test_a_device_handed_to_another_parameter_is_still_a_device(self):
        output, _ = migrate("import torch\n\ndef move(x, device, fn='to'):\n    return getattr(x, fn)(device)\n\n"
                            "y = move(t, 'cuda')\n")
        assert "move(t, 'npu')" in output

    @pytest.mark.parametrize("source", [
        # a function that only reads an attribute by the name it is given (vLLM reads torch's
        # version module from its file, without importing torch): "cuda" is CUDA's version there
        "import torch, importlib\n\ndef version_attr(attr):\n    module = importlib.util.module_from_spec(spec)\n"
        "    return getattr(module, attr, None)\n\ndef cuda_version():\n    return version_attr('cuda')\n",
        "import torch\n\ndef option(args, name):\n    return getattr(args, name, False)\n\nuse_gpu = option(args, 'cuda')\n",
    ])
    def test_a_name_only_read_with_is_no_method(self, source):
        output, result = migrate(source)
        assert "'cuda'" in output and not [c for c in result.changes if c.rule == "NPU103"], result.changes


class TestAnAttributesNameOfATorchModule:
    """"cuda" handed to getattr/hasattr with one of torch's modules below torch (`torch.version`,
    `torch.backends`) names CUDA's attribute there, no device: torch_npu adds no "npu" beside it,
    so renamed, the code would read an attribute no release has; so does a getattr of another
    object whose value is only read.  The name of a method the file calls, or of torch's own
    module torch.cuda, goes with the device."""

    @pytest.mark.parametrize("source", [
        'import torch\ncuda_version = getattr(torch.version, "cuda", None)\n',
        'import torch\nok = hasattr(torch.backends, "cuda") and torch.backends.cuda.is_built()\n',
        'import torch\nfrom torch import version\nv = getattr(version, "cuda", None) or "cpu"\n',
        # torch handed in as a parameter, or its module looked up with getattr too
        'import torch\n\ndef gpus(torch):\n    return {"cuda": getattr(torch.version, "cuda", None)}\n',
        'import torch\ntag = getattr(getattr(torch, "version", None), "cuda", None)\n',
        'import torch\n\nclass Probe:\n    def built(self):\n        return hasattr(self.torch.backends, "cuda")\n',
        # another object's attribute, read and not called: an option's flag (`--cuda`), the CUDA
        # version of a version module loaded by hand; "npu" there reads what nothing sets
        'import torch\nuse_gpu = getattr(args, "cuda", False)\nif use_gpu:\n    print(args.cuda)\n',
        'import torch\nmodule = load_version_module()\ncuda_version = getattr(module, "cuda", None)\n',
        'import torch\nmove = getattr(tensor, "cuda")\n',
    ])
    def test_stays(self, source):
        output, result = migrate(source)
        assert '"cuda"' in output and not [c for c in result.changes if "'cuda'" in c.message], result.changes

    @pytest.mark.parametrize("source, expected", [
        ('import torch\nmove = getattr(tensor, "cuda")\ny = move()\n', 'getattr(tensor, "npu")'),
        ('import torch\ny = getattr(batch, "cuda")(non_blocking=True)\n', 'getattr(batch, "npu")'),
        ('import torch\n\ndef load():\n    torch = import_torch()\n    return getattr(torch, "cuda", None)\n',
         'getattr(torch, "npu", None)'),
        ('import torch\nmodule = getattr(torch, "cuda")\n', 'getattr(torch, "npu")'),
        ('import torch\noriginal = getattr(torch.Tensor, "cuda", None)\n', 'getattr(torch.Tensor, "npu", None)'),
    ])
    def test_a_method_or_torchs_device_module_goes_with_the_device(self, source, expected):
        output, result = migrate(source)
        assert expected in output
        # (the row says what the string is: an attribute's name, not a device)
        assert [c.message for c in result.changes if c.rule == "NPU103"] == [
            "change the attribute name 'cuda' to 'npu' (looked up with getattr)"]


@pytest.mark.parametrize("source", [
    'import torch\nckpt = torch.load(p, map_location={"cuda:0": "cpu", "cuda:1": "cpu"})\n',
    'import torch\nstate = torch.load(p, map_location={"cuda:0": "cpu"}, weights_only=True)\n',
])
def test_a_checkpoints_recorded_locations_stay(source):
    # a checkpoint written on GPUs records "cuda:0": renamed to "npu:0", the key would match none of
    # its tensors, which torch then restores to CUDA, and that raises on the NPU
    output, result = migrate(source)
    assert '{"cuda:0": "cpu"' in output
    assert not [f for f in result.findings if "device string" in f.api]


class TestTheCudaMethodHandedOn:
    """`Tensor.cuda` or `Module.cuda` given to a call that calls it (`map(torch.Tensor.cuda, xs)`)
    raises on the NPU as a call of `.cuda()` does: it becomes torch_npu's `npu`, which takes the
    same arguments. Kept in a variable, replaced, or copied by a wrapper, it stays."""

    @pytest.mark.parametrize("body, expected", [
        ("xs = list(map(torch.Tensor.cuda, xs))\n", "xs = list(map(torch.Tensor.npu, xs))\n"),
        ("from torch import Tensor\nxs = list(map(Tensor.cuda, xs))\n", "from torch import Tensor\nxs = list(map(Tensor.npu, xs))\n"),
        ("import torch.nn as nn\nmodels = list(map(nn.Module.cuda, models))\n",
         "import torch.nn as nn\nmodels = list(map(nn.Module.npu, models))\n"),
        ("batch = apply_to_collection(batch, torch.Tensor, function=torch.Tensor.cuda)\n",
         "batch = apply_to_collection(batch, torch.Tensor, function=torch.Tensor.npu)\n"),
    ])
    def test_migrated(self, body, expected):
        output, result = migrate("import torch\n" + body)
        assert output == "import torch\nimport torch_npu\n" + expected
        assert any(change.rule == "NPU102" for change in result.changes)

    @pytest.mark.parametrize("body", [
        "_original_cuda = torch.Tensor.cuda\n",
        "torch.Tensor.cuda = patched_cuda\n",
        "import functools\n\n@functools.wraps(torch.Tensor.cuda)\ndef cuda(self, *args):\n    return self\n",
        "xs = list(map(loader.cuda, xs))\n",  # an object of the project's, not torch's class
    ])
    def test_unchanged(self, body):
        output, result = migrate("import torch\n" + body)
        assert output == "import torch\n" + body



@pytest.mark.parametrize("source, expected", [
    # a class's own cuda(): every `.cuda()` call becomes `.npu()`, so the method is renamed with them
    ("import torch\nclass Cache:\n    def cuda(self):\n        self.k = self.k.cuda()\n        return self\n"
     "cache = Cache().cuda()\n", "    def npu(self):\n        self.k = self.k.npu()\n        return self\ncache = Cache().npu()"),
    # a module's override reaches torch_npu's Module.npu through super()
    ("import torch\nclass Net(torch.nn.Module):\n    def cuda(self, device=None):\n        self.extra = self.extra.cuda()\n"
     "        return super().cuda(device)\nnet = Net().cuda()\n",
     "    def npu(self, device=None):\n        self.extra = self.extra.npu()\n        return super().npu(device)\n"
     "net = Net().npu()"),
    # a property, read as `.is_cuda` (which becomes `.is_npu`)
    ("import torch\nclass Results:\n    @property\n    def is_cuda(self):\n        return self.data.is_cuda\n"
     "ok = Results().is_cuda\n", "    def is_npu(self):\n        return self.data.is_npu\nok = Results().is_npu"),
    # a property with a setter: both, and the setter's decorator
    ("import torch\nclass Holder:\n    @property\n    def is_cuda(self):\n        return self._on\n"
     "    @is_cuda.setter\n    def is_cuda(self, value):\n        self._on = value\n",
     "    def is_npu(self):\n        return self._on\n    @is_npu.setter\n    def is_npu(self, value):"),
    # an attribute of the class, read as `.is_cuda`
    ("import torch\nclass Batch:\n    is_cuda = False\n    def moved(self):\n        return self.is_cuda\n",
     "    is_npu = False\n    def moved(self):\n        return self.is_npu\n"),
    # an attribute that no line of its file reads
    ("class Batch:\n    is_cuda = False\n", "class Batch:\n    is_npu = False\n"),
    # a class with nothing of torch's in its file: its callers in other files are renamed all the same
    ("class Batch:\n    def cuda(self, non_blocking=False):\n        return self\n",
     "    def npu(self, non_blocking=False):"),
])
def test_a_class_own_cuda_method_is_renamed_with_its_callers(source, expected):
    output, result = migrate(source)
    assert expected in output, output
    assert "cuda" not in output.replace("torch.cuda", ""), output
    assert any(row.message.startswith(("change the method", "change the attribute")) for row in result.changes), \
        result.changes


@pytest.mark.parametrize("source", [
    # the NPU's method defined beside it: both kept
    "class Box:\n    def cuda(self):\n        return self\n    def npu(self):\n        return self\n",
    "class Box:\n    @property\n    def is_cuda(self):\n        return True\n    @property\n    def is_npu(self):\n"
    "        return True\n",
    # a method is_cuda(), called (torch's is_cuda is a property): another class's question (vLLM's
    # Platform), asked of it as written
    "import torch\nclass Platform:\n    def is_cuda(self) -> bool:\n        return self.kind == 'gpu'\n"
    "if current_platform.is_cuda():\n    torch.ops.load_library('kernels.so')\n",
    "import torch\nuse_graphs = current_platform.is_cuda() and not eager\n",
    # an annotated attribute (a dataclass's field: its constructor's callers name it), or one beside is_npu
    "import dataclasses\n@dataclasses.dataclass\nclass Options:\n    is_cuda: bool = False\n",
    "class Box:\n    is_cuda = False\n    is_npu = False\n",
    # a property `cuda`, read (`cfg.cuda`, a flag): no read of it is renamed
    "class Config:\n    @property\n    def cuda(self):\n        return self.gpus > 0\nuse = Config().cuda\n",
    # functions that are no class's method: a module's, a method's inner one
    "def cuda(x):\n    return x\n",
    "class Runner:\n    def go(self):\n        def cuda(x):\n            return x\n        return cuda(1)\n",
])
def test_a_cuda_function_that_no_call_of_cuda_reaches_stays(source):
    output, result = migrate(source)
    assert output == source, output
    assert not [f for f in result.findings if "is_cuda" in f.api or "Tensor.cuda" in f.api], result.findings


@pytest.mark.parametrize("source", [
    # the Hub kernels' device of a layer mapping: that package's word for its CUDA build
    'import torch\nfrom kernels import CUDAProperties, Device\n'
    'mapping = {Device(type="cuda", properties=CUDAProperties(min_capability=80)): "repo"}\n',
    'import torch\nimport kernels\nd = kernels.Device(type="cuda")\n',
])
def test_a_device_name_given_to_a_cuda_only_packages_api_stays(source):
    output, result = migrate(source)
    assert '"cuda"' in output and not [c for c in result.changes if c.rule in ("NPU103", "NPU116")]


def test_a_device_name_given_to_torch_beside_it_moves():
    output, _ = migrate('import torch\nfrom kernels import Device\nx = torch.zeros(2, device="cuda")\n')
    assert 'device="npu"' in output


class TestACudaMethodOfAnotherClass:
    """`.cuda(...)` with arguments torch's Tensor.cuda and Module.cuda do not take is another
    class's method (HQQ's `quantizer.cuda(qtensor, meta=meta, device=d)`), which has no `npu` of
    the same name: left as written, with a row that says whose it is."""

    @pytest.mark.parametrize("call", [
        "self.quantizer.cuda(qtensor, meta=meta, device=self.device)",
        "q.cuda(w, 0, True, None)",
        "q.cuda(0, device=1)",
    ])
    def test_stays_with_a_row(self, call):
        source = f"import torch\n\ndef f(self, q, qtensor, meta, w):\n    {call}\n"
        output, result = migrate(source)
        assert call in output
        rows = [f for f in result.findings if f.start_line == 4]
        assert len(rows) == 1 and "another class's method" in rows[0].tip and rows[0].api.endswith(".cuda")

    @pytest.mark.parametrize("call, migrated", [
        ("x.cuda(0, non_blocking=True)", "x.npu(0, non_blocking=True)"),
        ("model.cuda(device=1)", "model.npu(device=1)"),
        ("x.cuda(*args, **kwargs)", "x.npu(*args, **kwargs)"),
    ])
    def test_torchs_arguments_move(self, call, migrated):
        output, _ = migrate(f"import torch\ny = {call}\n")
        assert migrated in output


class TestTritonsBackendName:
    """The backend Triton compiles for (`triton.runtime.driver.active.get_current_target().backend`)
    says "cuda" for Triton's CUDA backend, no torch device (under Triton-Ascend it says "npu"
    itself): compared with it, or a key of a table looked up by it, "cuda" stays."""

    @pytest.mark.parametrize("source", [
        "import triton\n\ndef flags():\n    backend = triton.runtime.driver.active.get_current_target().backend\n"
        "    if backend == 'cuda':\n        return 'nvidia'\n    return None\n",
        "import triton\n\ndef get_available_device():\n    return triton.runtime.driver.active.get_current_target().backend\n\n\n"
        "def platform():\n    device = get_available_device()\n    mapping = {'cuda': 'nvidia', 'hip': 'amd'}\n"
        "    return mapping.get(device, device)\n",
    ])
    def test_stays(self, source):
        output, result = migrate(source)
        assert output == source

    def test_a_torch_device_beside_it_moves(self):
        output, _ = migrate("import torch\nimport triton\nbackend = triton.runtime.driver.active.get_current_target().backend\n"
                            "x = torch.zeros(2, device='cuda')\n")
        assert "device='npu'" in output


def test_a_device_name_given_to_a_cuda_only_package_of_the_project_s_own_moves():
    # a vendored AutoGPTQ is migrated with the project: its device= takes the NPU's name
    source = 'import torch\nfrom auto_gptq import AutoGPTQForCausalLM\nm = AutoGPTQForCausalLM.from_quantized(d, device="cuda:0")\n'
    own = Options(api=apidata.load("2.1.0"), own_packages=frozenset({"auto_gptq"}))
    result = migrate_source(source.encode(), "m.py", own, rules_for(own))
    assert 'device="npu:0"' in result.output.decode()
    output, _ = migrate(source)
    assert 'device="cuda:0"' in output
