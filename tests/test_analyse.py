"""`gpu2npu analyse`: the four modes through the console script, their files and exit statuses,
and `-api` feeding a library's result into the migration and `check`."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from gpu2npu.analyse import dynamic_shape
from helpers import EXPECTED, FIXTURES, ROOT

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
LIBRARY = ROOT / "fixtures" / "libraries" / "fancylib"
USER = ROOT / "fixtures" / "libraries" / "fancylib_user"
VARLEN = ROOT / "fixtures" / "dynamic_shapes" / "varlen_lm"


def gpu2npu(*args, cwd=None):
    return subprocess.run([GPU2NPU, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def rows(path: Path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def library_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("third_party")
    done = gpu2npu("analyse", "-i", LIBRARY, "-o", out, "-v", "2.1.0", "-m", "third_party", "--no-cache", "-j", "1")
    assert done.returncode == 0, done.stderr
    return out / "fancylib_analysis", done


# Every public name under which fancylib's affected APIs are reachable, worked out by reading the
# fixture: flash-attn three calls below flash_attention, reached by FlashSelfAttention.forward and
# through self.attn by TinyNet.forward; the compiled _C operator below fused_gelu (re-exported as
# gelu), reached by BaseBlock.mix/forward and by Derived, which inherits forward; the torch.ops
# namespace the library registers; torch.cuda and a "cuda" default device in utils; F.rms_norm,
# which torch 2.1 (the -v of the run) does not have.
AFFECTED = {
    "fancylib.FlashSelfAttention", "fancylib.FlashSelfAttention.forward",
    "fancylib.layers.FlashSelfAttention", "fancylib.layers.FlashSelfAttention.forward",
    "fancylib.layers.attention.FlashSelfAttention", "fancylib.layers.attention.FlashSelfAttention.forward",
    "fancylib.flash_attention", "fancylib.layers.flash_attention", "fancylib.layers.attention.flash_attention",
    "fancylib.TinyNet", "fancylib.TinyNet.forward", "fancylib.models.TinyNet", "fancylib.models.TinyNet.forward",
    # a builder that returns a model: its caller runs the model (one of its two returns is TinyNet)
    "fancylib.build_model", "fancylib.models.build_model",
    "fancylib.BaseBlock", "fancylib.BaseBlock.forward", "fancylib.BaseBlock.mix",
    "fancylib.models.BaseBlock", "fancylib.models.BaseBlock.forward", "fancylib.models.BaseBlock.mix",
    "fancylib.Derived", "fancylib.models.Derived",
    "fancylib.gelu", "fancylib.ops.gelu.fused_gelu", "fancylib.ops.gelu.roi_pool",
    "fancylib.seed_all", "fancylib.utils.seed_all", "fancylib.to_device", "fancylib.utils.to_device",
    "fancylib.utils.rms",  # F.rms_norm: not in torch 2.1
}
# Reach nothing that fails on the NPU: construction runs no forward (build_model, TinyNet's
# __init__), Overriding replaces the forward that reaches the operator, apex is optional.
NOT_AFFECTED = {
    "fancylib.PlainNet", "fancylib.models.PlainNet",
    "fancylib.Overriding", "fancylib.models.Overriding", "fancylib.Overriding.forward", "fancylib.Mlp",
    "fancylib.layers.mlp.Mlp", "fancylib.fused_norm", "fancylib.optional.fused_norm", "fancylib.count_params",
    "fancylib.ops.gelu.reference_gelu", "fancylib.Derived.scale", "fancylib.FlashSelfAttention.extra_repr",
    "fancylib.utils.move_to_cpu",
    "fancylib.utils.log_usage",  # its call's NPU support is unknown (unknown_op.csv), not unsupported
}


def test_third_party_lists_every_affected_public_api_and_no_other(library_result):
    folder, _ = library_result
    full = rows(folder / "full_unsupported_results.csv")
    assert full[0] == ["File", "3rd-party API", "Message", "Call Chain"]
    listed = {row[1] for row in full[1:]}
    assert listed == AFFECTED
    assert not listed & NOT_AFFECTED


def test_third_party_judges_torch_apis_for_the_chosen_release(tmp_path):
    done = gpu2npu("analyse", "-i", LIBRARY, "-o", tmp_path, "-v", "2.8.0", "-m", "third_party", "--no-cache")
    assert done.returncode == 0, done.stderr
    listed = {row[1] for row in rows(tmp_path / "fancylib_analysis" / "full_unsupported_results.csv")[1:]}
    assert listed == AFFECTED - {"fancylib.utils.rms"}  # torch 2.8 has F.rms_norm


def test_third_party_chains_lead_through_the_calls(library_result):
    folder, _ = library_result
    chains = {row[1]: row[3] for row in rows(folder / "full_unsupported_results.csv")[1:]}
    assert chains["fancylib.TinyNet"] == (
        "fancylib.models.TinyNet -> fancylib.models.TinyNet.forward -> fancylib.layers.attention.FlashSelfAttention.forward"
        " -> fancylib.layers.attention.flash_attention -> fancylib.layers.attention._scaled"
        " -> fancylib.layers.attention._kernel -> flash_attn.flash_attn_func")
    assert chains["fancylib.Derived"] == ("fancylib.models.Derived -> fancylib.models.BaseBlock.forward -> "
                                          "fancylib.models.BaseBlock.mix -> fancylib.ops.gelu.fused_gelu -> "
                                          "fancylib._C.fused_gelu_forward")
    assert chains["fancylib.seed_all"] == "fancylib.utils.seed_all -> torch.cuda.manual_seed_all"


def test_third_party_sorts_hits_into_the_incumbent_files(library_result):
    folder, done = library_result
    cuda = rows(folder / "cuda_op.csv")
    assert cuda[0][:2] == ["OP Name", "Affected 3rd-party API"]
    operators = {row[0] for row in cuda[1:]}
    assert operators == {"flash_attn.flash_attn_func", "fancylib._C.fused_gelu_forward", "torch.ops.fancylib.roi_pool"}
    migration = rows(folder / "migration_needed_op.csv")
    assert migration[0][:2] == ["Torch API", "Affected 3rd-party API"]
    assert {row[0] for row in migration[1:]} == {"torch.cuda.manual_seed_all", "device string 'cuda'"}
    header = ["Torch API", "Affected 3rd-party API", "Call Chain", "File", "Line", "Tips"]
    framework = rows(folder / "framework_unsupported_op.csv")
    assert framework[0] == header and [row[:5] for row in framework[1:]] == [
        ["torch.nn.functional.rms_norm", "fancylib.utils.rms", "fancylib.utils.rms -> torch.nn.functional.rms_norm",
         "utils.py", "27"]]
    unknown = rows(folder / "unknown_op.csv")
    assert unknown[0] == header and [row[:2] for row in unknown[1:]] == [
        ["torch._C._log_api_usage_once", "fancylib.utils.log_usage"]]
    assert (folder / "pytorch_analysis.txt").is_file()
    assert "31 public APIs reach code that cannot run on the NPU" in done.stdout
    assert f"-api {folder / 'full_unsupported_results.csv'}" in done.stdout


def test_third_party_is_the_same_with_two_processes_and_from_the_cache(library_result, tmp_path):
    folder, _ = library_result
    cache = tmp_path / "cache"
    for attempt in ("first", "cached"):
        out = tmp_path / attempt
        done = gpu2npu("analyse", "-i", LIBRARY, "-o", out, "-v", "2.1.0", "-m", "third_party", "-j", "2",
                       "--cache-dir", cache)
        assert done.returncode == 0, done.stderr
        for name in ("full_unsupported_results.csv", "cuda_op.csv", "migration_needed_op.csv"):
            assert (out / "fancylib_analysis" / name).read_bytes() == (folder / name).read_bytes()
        log = (out / "fancylib_analysis" / "pytorch_analysis.txt").read_text()
        read = int(log.split("modules read (not from the cache): ")[1].split()[0])
        # the second run parses nothing: each module's shape is kept under its content
        assert (read > 0) if attempt == "first" else (read == 0), log


def test_api_results_reach_the_projects_reports(library_result, tmp_path):
    folder, _ = library_result
    apis = folder / "full_unsupported_results.csv"
    done = gpu2npu("-i", USER, "-o", tmp_path, "-v", "2.1.0", "-api", apis)
    assert done.returncode == 0, done.stderr
    found = rows(tmp_path / "fancylib_user_msft" / "unsupported_api.csv")[1:]
    # TinyNet(64) and the builder on the same line (it may return a TinyNet), gelu, seed_all; not
    # PlainNet or count_params
    assert [(row[1], row[3]) for row in found] == [("6", "fancylib.TinyNet"), ("6", "fancylib.build_model"),
                                                    ("9", "fancylib.gelu"), ("10", "fancylib.seed_all")]
    assert "flash_attn.flash_attn_func" in found[0][4] and "fancylib.models.TinyNet.forward" in found[0][4]
    without = gpu2npu("check", USER)
    assert without.returncode == 0, without.stdout
    checked = gpu2npu("check", USER, "-api", apis)
    assert checked.returncode == 1 and "train.py:6: NPU922 fancylib.TinyNet" in checked.stdout
    assert "4 findings" in checked.stderr
    analysed = gpu2npu("analyse", "-i", USER, "-o", tmp_path, "-v", "2.1.0", "-api", apis)
    assert analysed.returncode == 0, analysed.stderr
    assert rows(tmp_path / "fancylib_user_analysis" / "unsupported_api.csv")[1:] == found


def test_api_file_without_the_column_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("File,API\nx.py,foo\n", encoding="utf-8")
    done = gpu2npu("-i", USER, "-o", tmp_path / "out", "-v", "2.1.0", "-api", bad)
    assert done.returncode == 2 and "no '3rd-party API' column" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fixture", ["single_gpu_loop", "nanogpt_style"])
def test_torch_apis_writes_the_migrations_reports_without_a_tree(fixture, tmp_path):
    done = gpu2npu("analyse", "-i", FIXTURES / fixture, "-o", tmp_path, "-v", "2.1.0", "--no-cache")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / f"{fixture}_analysis"
    written = sorted(path.name for path in folder.iterdir())
    assert written == ["api_performance_advice.csv", "change_list.csv", "cuda_op_list.csv", "pytorch_analysis.txt",
                       "unknown_api.csv", "unsupported_api.csv"]
    for name in [n for n in written if n.endswith(".csv")]:
        assert (folder / name).read_bytes() == (EXPECTED / fixture / name).read_bytes(), name
    affinity = gpu2npu("analyse", "-i", FIXTURES / fixture, "-o", tmp_path / "a", "-v", "2.1.0", "-m", "affinity_apis")
    assert affinity.returncode == 0, affinity.stderr
    assert sorted(p.name for p in (tmp_path / "a" / f"{fixture}_analysis").iterdir()) == [
        "affinity_api_call.csv", "pytorch_analysis.txt"]
    assert ((tmp_path / "a" / f"{fixture}_analysis" / "affinity_api_call.csv").read_bytes()
            == (EXPECTED / fixture / "affinity_api_call.csv").read_bytes())


def test_an_earlier_analysis_is_replaced_only_with_force(tmp_path):
    first = gpu2npu("analyse", "-i", FIXTURES / "single_gpu_loop", "-o", tmp_path, "-v", "2.1.0")
    assert first.returncode == 0
    marker = tmp_path / "single_gpu_loop_analysis" / "mine.txt"
    marker.write_text("kept", encoding="utf-8")
    again = gpu2npu("analyse", "-i", FIXTURES / "single_gpu_loop", "-o", tmp_path, "-v", "2.1.0")
    assert again.returncode == 2 and "already exists" in again.stderr and marker.exists()
    forced = gpu2npu("analyse", "-i", FIXTURES / "single_gpu_loop", "-o", tmp_path, "-v", "2.1.0", "--force")
    assert forced.returncode == 0 and not marker.exists()
    assert gpu2npu("analyse", "-i", tmp_path / "missing", "-o", tmp_path, "-v", "2.1.0").returncode == 2
    assert gpu2npu("analyse", "-i", LIBRARY, "-o", tmp_path, "-v", "2.1.0", "-m", "third_party",
                   "-env", "nowhere").returncode == 2


def _losses(output: str):
    return [line for line in output.splitlines() if line.startswith("step ")]


def test_dynamic_shape_copy_trains_the_same_and_reports_varying_shapes(tmp_path):
    pytest.importorskip("torch")
    done = gpu2npu("analyse", "-i", VARLEN, "-o", tmp_path, "-v", "2.1.0", "-m", "dynamic_shape")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "varlen_lm_analysis"
    copy = folder / "varlen_lm"
    assert f"cd {copy} && python train.py" in done.stdout
    original = subprocess.run([sys.executable, "train.py"], cwd=VARLEN, capture_output=True, text=True, timeout=300)
    instrumented = subprocess.run([sys.executable, "train.py"], cwd=copy, capture_output=True, text=True, timeout=300)
    assert original.returncode == 0 and instrumented.returncode == 0, instrumented.stderr
    assert _losses(original.stdout) and _losses(instrumented.stdout) == _losses(original.stdout)
    report = rows(folder / "msft_dynamic_shape_analysis_report.csv")
    assert report[0][:6] == ["Function Name", "File Path", "Line Number", "Call Stack", "Input Shape Range",
                             "Output Shape Range"]
    by_site = {(row[1], row[2], row[0]): row for row in report[1:]}
    embed = by_site[("model.py", "14", "self.embed (Embedding.forward)")]
    # batches of 3 sentences padded to their longest, the last batch of 2 (14 sentences)
    assert embed[4] == "[(2, 8)-(3, 11)]" and embed[8] == "input 0 dims 0, 1"
    assert embed[3].startswith("model.py:14 (forward) <- train.py:51 (main)")
    summary = (folder / "dynamic_shape_summary.txt").read_text(encoding="utf-8")
    assert "model.py:14 self.embed (Embedding.forward): 3 input shapes in 6 calls" in summary
    assert "pad or bucket" in summary
    loss = by_site[("train.py", "52", "F.cross_entropy")]
    assert loss[8] == "input 0 dim 0; input 1 dim 0"


def test_gpu2npu_itself_writes_no_shape_report(tmp_path):
    # dynamic_shape imports the detector to copy it; only the copy in the instrumented project records
    package = Path(dynamic_shape.__file__).parent.parent
    before = sorted(package.rglob("*"))
    done = subprocess.run([sys.executable, "-c", "import gpu2npu.analyse.dynamic_shape"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [p for p in sorted(package.rglob("*")) if "__pycache__" not in p.parts] == \
        [p for p in before if "__pycache__" not in p.parts]
    assert not list(tmp_path.iterdir())


TRICKY = '''"""Docstring first."""
from __future__ import annotations

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    @torch.jit.script_if_tracing
    def scripted(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)

    def forward(self, x):
        parts = list(torch.relu(t) for t in x.unbind(0))
        label = f"{len(parts)} parts of {x.size(0)}"
        return self.fc(torch.stack(parts)), label, sum(v for v in (1, 2)), locals().get("x") is x


def run():
    return Net()(torch.ones(2, 4))
'''


def test_instrumented_code_keeps_its_meaning(tmp_path):
    torch = pytest.importorskip("torch")
    sites, files = {}, {}
    code = dynamic_shape.instrument(TRICKY.encode(), "net.py", 0, sites, files).decode()
    assert code.startswith('"""Docstring first."""\nfrom __future__ import annotations\ntry:')
    assert "DETECTOR.hook_func(torch.relu, 'torch.relu', " in code
    assert "super().__init__" in code and "DETECTOR.hook_func(super," not in code  # builtins are not hooked
    assert 'f"{len(parts)} parts of {x.size(0)}"' in code  # nor calls inside f-strings
    assert "DETECTOR.hook_func(locals," not in code and "DETECTOR.hook_func(locals().get, " in code
    assert "        return torch.relu(x)\n" in code  # the body of a scripted function is left as written
    (tmp_path / "net.py").write_text(code, encoding="utf-8")
    (tmp_path / "gpu2npu_shape_detector.py").write_bytes(Path(dynamic_shape.detector.__file__).read_bytes())
    done = subprocess.run([sys.executable, "-c", "import net; out = net.run(); print(out[1], out[2], out[3])"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"GPU2NPU_SHAPE_REPORT_DIR": str(tmp_path / "reports"), "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 parts of 2 3 True"
    assert files["net.py"] == (2, 6)
    assert torch is not None


def test_a_file_that_does_not_parse_is_named_and_the_run_goes_on(tmp_path):
    library = tmp_path / "vendored"
    library.mkdir()
    (library / "one.py").write_text("import torch\n\n\ndef to_gpu(x):\n    return x.cuda()\n", encoding="utf-8")
    (library / "bad.py").write_text("def broken(:\n", encoding="utf-8")
    done = gpu2npu("analyse", "-i", library, "-o", tmp_path / "out", "-v", "2.1.0", "-m", "third_party")
    assert done.returncode == 3 and "bad.py: not analysed, not parsed as Python" in done.stderr
    assert "2 Python files, 1 could not be analysed" in done.stdout
    full = rows(tmp_path / "out" / "vendored_analysis" / "full_unsupported_results.csv")
    assert [row[:2] for row in full[1:]] == [["one.py", "one.to_gpu"]] and full[1][3] == "one.to_gpu -> .cuda"
    alone = gpu2npu("analyse", "-i", library / "one.py", "-o", tmp_path / "single", "-v", "2.1.0", "-m", "third_party")
    assert alone.returncode == 0 and "1 public API reaches" in alone.stdout
    shaped = gpu2npu("analyse", "-i", library, "-o", tmp_path / "shape", "-v", "2.1.0", "-m", "dynamic_shape")
    assert shaped.returncode == 3 and "bad.py: not analysed, copied without hooks" in shaped.stderr
    copy = tmp_path / "shape" / "vendored_analysis" / "vendored"
    assert (copy / "bad.py").read_bytes() == (library / "bad.py").read_bytes()
    assert "DETECTOR.hook_func(x.cuda, 'x.cuda', 1)" in (copy / "one.py").read_text(encoding="utf-8")


def test_third_party_rows_name_an_api_never_a_line_the_migration_adds(tmp_path):
    """A module whose first line imports flash-attn gets a sys.path line inserted above it when
    migrated: that insertion is no CUDA API, and no row of migration_needed_op.csv names it."""
    library = tmp_path / "mylib"
    library.mkdir()
    (library / "__init__.py").write_text("from flash_attn import flash_attn_func\n\n\n"
                                         "def attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n")
    done = gpu2npu("analyse", "-i", library, "-o", tmp_path / "out", "-v", "2.1.0", "-m", "third_party", "--no-cache")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "out" / "mylib_analysis"
    assert rows(folder / "migration_needed_op.csv")[1:] == []
    assert {row[1] for row in rows(folder / "full_unsupported_results.csv")[1:]} == {"mylib.attend"}


def test_third_party_reads_liger_as_the_migration_does_for_each_release(tmp_path):
    """liger-kernel runs on the NPU through its own Ascend backend from torch_npu 2.6.0 on: the
    migration's rows are notes there, and a library's public API that calls it is no hit; before,
    it is, with the tip the migration gives."""
    library = tmp_path / "mylib"
    library.mkdir()
    (library / "__init__.py").write_text("from liger_kernel.transformers import LigerRMSNorm\n\n\n"
                                         "def norm(width):\n    return LigerRMSNorm(width)\n")
    affected = {}
    for version in ("2.1.0", "2.6.0"):
        done = gpu2npu("analyse", "-i", library, "-o", tmp_path / version, "-v", version, "-m", "third_party",
                       "--no-cache")
        assert done.returncode == 0, done.stderr
        found = rows(tmp_path / version / "mylib_analysis" / "full_unsupported_results.csv")
        affected[version] = {row[1]: row for row in found[1:]}
    assert set(affected["2.1.0"]) == {"mylib.norm"} and affected["2.6.0"] == {}
    tip = " ".join(affected["2.1.0"]["mylib.norm"])
    assert "needs triton-ascend, for torch_npu 2.6.0 and later; with torch_npu 2.1.0" in tip and "npu_rms_norm" in tip


NANOGPT_STYLE = {
    "model.py": '''import math

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.proj(torch.relu(self.fc(x)))


class GPT(nn.Module):
    def __init__(self, width=16, depth=3):
        super().__init__()
        self.embed = nn.Embedding(32, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, 32)
        for name, p in self.named_parameters():
            torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(p.numel()))
        print("parameters:", sum(p.numel() for p in self.parameters()))

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)
''',
    "train.py": '''import torch
import torch.nn.functional as F

from model import GPT

torch.manual_seed(0)
model = GPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(5):
    idx = torch.randint(0, 32, (4, 8))
    logits = model(idx)
    loss = F.cross_entropy(logits.view(-1, 32), idx.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
''',
    "data/openwebtext/prepare.py": 'if __name__ == "__main__":\n    print("downloads tens of GB")\n',
}


def test_dynamic_shape_compares_training_steps_not_initialisation_and_names_the_training_script(tmp_path):
    pytest.importorskip("torch")
    project = tmp_path / "tinygpt"
    for relative, text in NANOGPT_STYLE.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    done = gpu2npu("analyse", "-i", project, "-o", tmp_path / "out", "-v", "2.1.0", "-m", "dynamic_shape")
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "out" / "tinygpt_analysis" / "tinygpt"
    assert f"cd {copy} && python train.py" in done.stdout  # not data/openwebtext/prepare.py
    ran = subprocess.run([sys.executable, "train.py"], cwd=copy, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    report = rows(tmp_path / "out" / "tinygpt_analysis" / "msft_dynamic_shape_analysis_report.csv")
    by_site = {(row[1], row[0]): row for row in report[1:]}
    # initialisation saw many parameter shapes, each block its own: none of that varies by step
    assert int(by_site[("model.py", "torch.nn.init.normal_")][7]) > 3
    assert [row for row in report[1:] if row[8]] == []
    summary = (tmp_path / "out" / "tinygpt_analysis" / "dynamic_shape_summary.txt").read_text()
    assert summary.startswith("Dynamic shapes: 0 of ") and "over 5 steps" in summary


DEEPLIB = {
    "__init__.py": "from .blocks import Block, Mixer\nfrom .models import DeepNet, DictNet, LoopNet, SafeNet, SeqNet, build_model\n",
    "blocks.py": '''import torch.nn as nn
from flash_attn import flash_attn_func


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(flash_attn_func(x, x, x))


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)
''',
    "models.py": '''import torch.nn as nn

from .blocks import Block, Mixer


class DeepNet(nn.Module):
    def __init__(self, dim=8, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class SeqNet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.layers = nn.Sequential(Mixer(dim), Block(dim))

    def forward(self, x):
        return self.layers(x)


class DictNet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.heads = nn.ModuleDict({"a": Block(dim), "b": Mixer(dim)})

    def forward(self, x):
        return sum(head(x) for head in self.heads.values())


class LoopNet(nn.Module):
    def __init__(self, dim=8, depth=2):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers.append(Block(dim))
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
        return x


class SafeNet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.mixers = nn.ModuleList([Mixer(dim) for _ in range(2)])

    def forward(self, x):
        for mixer in self.mixers:
            x = mixer(x)
        return x


def build_model(kind="deep"):
    model = DeepNet() if kind == "deep" else SafeNet()
    return model
''',
}


def test_third_party_follows_modules_held_in_containers_and_the_builders_that_return_them(tmp_path):
    library = tmp_path / "deeplib"
    library.mkdir()
    for name, text in DEEPLIB.items():
        (library / name).write_text(text)
    done = gpu2npu("analyse", "-i", library, "-o", tmp_path / "out", "-v", "2.1.0", "-m", "third_party", "--no-cache")
    assert done.returncode == 0, done.stderr
    results = tmp_path / "out" / "deeplib_analysis" / "full_unsupported_results.csv"
    chains = {row[1]: row[3] for row in rows(results)[1:]}
    top = {name for name in chains if name.count(".") == 1}
    assert top == {"deeplib.Block", "deeplib.DeepNet", "deeplib.SeqNet", "deeplib.DictNet", "deeplib.LoopNet",
                   "deeplib.build_model"}  # not SafeNet nor Mixer: their modules run no CUDA-only kernel
    # the chain names the attribute that holds the blocks
    assert chains["deeplib.DeepNet"] == ("deeplib.models.DeepNet -> deeplib.models.DeepNet.forward -> "
                                         "deeplib.models.DeepNet.blocks -> deeplib.blocks.Block.forward -> "
                                         "flash_attn.flash_attn_func")
    assert "deeplib.models.SeqNet.layers -> deeplib.blocks.Block.forward" in chains["deeplib.SeqNet"]
    assert "deeplib.models.DictNet.heads -> deeplib.blocks.Block.forward" in chains["deeplib.DictNet"]
    assert "deeplib.models.LoopNet.layers -> deeplib.blocks.Block.forward" in chains["deeplib.LoopNet"]
    assert not any("__init__" in name for name in chains)  # building the blocks in __init__ runs none
    # fed back, the user's call of the builder is caught
    user = tmp_path / "user"
    user.mkdir()
    (user / "train.py").write_text("import torch\nfrom deeplib import build_model, SafeNet\n\n"
                                   "model = build_model()\nsafe = SafeNet()\n")
    checked = gpu2npu("check", "-v", "2.1.0", user, "-api", results)
    assert checked.returncode == 1 and "train.py:4: NPU922 deeplib.build_model" in checked.stdout
    assert "train.py:5" not in checked.stdout
