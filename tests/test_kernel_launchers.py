"""The project's GPU kernels and what launches them, read from each module's text
(reading/kernel_launchers.py): what a device test around a call of one guards."""
import pytest

from gpu2npu.reading.kernel_launchers import (OPERATOR_KEY, launchers_in, module_name, project_launchers,
                                              registered_operators, resolved)

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _k(x_ptr):\n    pass\n\n\n"


@pytest.mark.parametrize("source, expected", [
    # a launch, a launch through another function, an autograd Function
    (HEAD + "def add(x):\n    _k[(1,)](x)\n\n\ndef add_twice(x):\n    return add(add(x))\n\n\n"
     "class AddFunction(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return add(x)\n",
     {"_k", "add", "add_twice", "AddFunction"}),
    # a function that launches only behind its own CUDA test chooses, and runs on the NPU
    (HEAD + "def pick(x):\n    if x.is_cuda:\n        _k[(1,)](x)\n    return x\n", {"_k"}),
    # a plain function before a decorated one is not made one by the decorator's lines
    (HEAD + "def count(d):\n    return d.index\n\n\n@opaque('k', lambda x: _k)\ndef launch(x):\n    _k[(1,)](x)\n",
     {"_k", "launch"}),
    # multi-line decorators; a kernel language handed on by a module of the project
    ("import torch\nfrom .utils import (\n    tl,\n    triton,  # handed on\n)\n\n\n"
     "@triton.autotune(\n    configs=[],\n    key=['n'],\n)\n@triton.jit\ndef _k2(x_ptr, n):\n    pass\n", {"_k2"}),
    # torch.jit compiles for every device; a name that merely ends in jit is no kernel language
    ("import torch\n\n\n@torch.jit.script\ndef f(x):\n    return x\n\n\n@my.jit\ndef g(x):\n    return x\n", set()),
    # kernels defined where Triton is there (`if HAVE_TRITON:`), launched by a module-level function
    ("import torch\ntry:\n    import triton\n    HAVE = True\nexcept ImportError:\n    HAVE = False\n\n"
     "if HAVE:\n\n    @triton.jit\n    def _k(x_ptr):\n        pass\n\n\n@torch.no_grad()\ndef step(x):\n    _k[(1,)](x)\n",
     {"_k", "step"}),
    # a class whose method is a CuTe DSL kernel
    ("import cutlass.cute as cute\n\n\nclass Norm:\n    @cute.kernel\n    def kernel(self, x):\n        pass\n\n\n"
     "def norm(x):\n    return Norm()(x)\n", {"Norm", "norm"}),
    # functions and classes defined in a module-level block (one implementation where torch has
    # custom_op, another where not), and what calls them: launchers too
    (HEAD + "def add(x):\n    _k[(1,)](x)\n\n\nif HAS_CUSTOM_OP:\n\n    @torch.library.custom_op('p::fused_add', mutates_args=())\n"
     "    def _add_op(x: torch.Tensor) -> torch.Tensor:\n        return add(x)\n\n    def _attention(x):\n"
     "        return _add_op(x)\n\nelse:\n\n    class _Add(torch.autograd.Function):\n        @staticmethod\n"
     "        def forward(ctx, x):\n            return add(x)\n\n    def _attention(x):\n        return _Add.apply(x)\n\n\n"
     "def route(x):\n    return _attention(x)\n",
     {"_k", "add", "_add_op", "_attention", "_Add", "route", OPERATOR_KEY + "fused_add"}),
    # ... where only the block's code after a plain function names a launcher: not the function
    (HEAD + "def add(x):\n    _k[(1,)](x)\n\n\ntry:\n    def size(x):\n        return x.numel()\n    FAST = add\n"
     "except ImportError:\n    FAST = None\n\n\ndef count(x):\n    return size(x)\n", {"_k", "add"}),
])
def test_launchers(source, expected):
    assert set(launchers_in(source)) == expected


def test_the_callers_of_a_compiled_extension_s_operator():
    from gpu2npu.reading.kernel_launchers import without_operators

    source = ("import torch\n\n\ndef rms(x):\n    return torch.ops._C.rms_norm(x)\n\n\n"
              "def norm(x):\n    return rms(x)\n\n\ndef add(x):\n    return torch.ops.aten.add(x, x)\n\n\n"
              "def pick(x):\n    if x.is_cuda:\n        return torch.ops._C.rms_norm(x)\n    return x\n\n\n"
              "def mine(x):\n    return torch.ops.proj.mine(x)\n\n\n"
              "class CPUAccelerator:\n    def fp16(self):\n        return torch.ops.mkldnn._is_mkldnn_fp16_supported()\n")
    found = launchers_in(source)
    assert set(found) == {"rms", "norm", "mine"}
    assert found["norm"] == "torch.ops._C.rms_norm, an operator of a compiled extension"
    # an operator the project's Python registers after all (in another file) runs on every device
    assert set(without_operators(found, frozenset({"mine"}))) == {"rms", "norm"}
    assert "mine" not in launchers_in(source + "\ntorch.library.define('proj::mine', '(Tensor x) -> Tensor')\n")


def test_the_questions_a_module_asks_before_its_calls():
    from gpu2npu.reading.kernel_launchers import asked_questions

    source = ("from pkg.checks import can_use, ready as is_ready\nfrom pkg import ops\n\n\ndef f(x):\n"
              "    if x.dim() == 2 and can_use(x):\n        # the fast path\n        y = ops.gemv(x)\n        return y\n"
              "    elif is_ready(x):\n        return local(x)\n    if x.is_cuda and can_use(x):\n        return other(x)\n"
              "    if isinstance(x, int):\n        return ops.gemv(x)\n    return x\n")
    assert dict(asked_questions(source)) == {"ops.gemv": ("can_use", "x.dim"), "local": ("is_ready",)}


@pytest.mark.parametrize("source, expected", [
    ("x = 1\nelif can_use(x):\n    gemv(x)\n", {"gemv": ("can_use",)}),
    ("x = 1\n\tif ready():\n\t\tgo()\n", {"go": ("ready",)}),
    # not a test that begins its line: a comment, a conditional expression, a word ending in "if"
    ("x = 1\n# if can_use(x):\n    gemv(x)\n", {}),
    ("x = 1\ny = f(x) if can_use(x) else 0\n    gemv(x)\n", {}),
    ("x = 1\nmotif (can_use(x))\n    gemv(x)\n", {}),
    # the first line has no line before it (a module's first statement is not a guarded call's test)
    ("if can_use(x):\n    gemv(x)\n", {}),
])
def test_which_lines_are_tests(source, expected):
    from gpu2npu.reading.kernel_launchers import asked_questions

    assert dict(asked_questions(source)) == expected


def test_a_project_read_in_several_processes_gives_what_one_process_finds(tmp_path, monkeypatch):
    from gpu2npu.reading import parallel
    from gpu2npu.reading.discover import Kind, walk

    for number in range(12):
        (tmp_path / f"ops{number}.py").write_text(HEAD + f"def add{number}(x):\n    _k[(1,)](x)\n")
        (tmp_path / f"model{number}.py").write_text(f"DEVICE_{number} = 'cuda'\nif DEVICE_{number} == 'npu':\n    pass\n")
    entries = [e for e in walk(tmp_path) if e.kind == Kind.PYTHON]
    alone = project_launchers(entries)
    monkeypatch.setattr(parallel, "PARALLEL_FROM", 4)
    forked = []
    real_pool = parallel.multiprocessing.get_context("fork").Pool
    monkeypatch.setattr(parallel.multiprocessing, "get_context",
                        lambda method: type("Context", (), {"Pool": lambda self, *a, **k: forked.append(a) or real_pool(*a, **k)})())
    together = project_launchers(entries, jobs=2)
    assert forked, "the files were read in this process alone"
    assert together == alone and len(dict(together.launchers)) == 24 and len(together.constants) == 12  # (kernel, launcher)


def test_a_question_asked_before_a_launcher_is_known_by_its_module_s_name(tmp_path):
    from gpu2npu.reading.discover import Kind, walk

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .checks import can_use\n")
    (tmp_path / "pkg" / "checks.py").write_text("def can_use(x):\n    return x.is_cuda\n\n\ndef ready(x):\n    return True\n")
    (tmp_path / "pkg" / "ops.py").write_text(HEAD + "def gemv(x):\n    _k[(1,)](x)\n")
    (tmp_path / "pkg" / "model.py").write_text(
        "from pkg import can_use\nfrom .checks import ready\nfrom . import ops\n\n\ndef f(x):\n"
        "    if can_use(x):\n        return ops.gemv(x)\n    if ready(x):\n        return x.sum()\n")
    found = project_launchers([e for e in walk(tmp_path) if e.kind == Kind.PYTHON])
    assert dict(found.kernel_questions) == {"pkg.checks.can_use": "gemv(), which launches the Triton kernel _k"}


def test_an_operator_registered_with_a_launcher_and_its_callers():
    source = (HEAD + "def add(x):\n    _k[(1,)](x)\n    return x\n\n\n"
              "direct_register_custom_op(op_name='fused_add', op_func=add, mutates_args=[])\n\n\n"
              "def fused(x):\n    return torch.ops.vllm.fused_add(x)\n")
    found = launchers_in(source)
    assert {OPERATOR_KEY + "fused_add", "fused"} <= set(found)
    assert registered_operators(source) == {"fused_add"}
    assert registered_operators("torch.library.impl('proj::mul', 'cpu', mul)\nx = 'a::b'\n") == {"mul", "b"}


@pytest.mark.parametrize("relative, expected", [
    ("pkg/ops/add.py", "pkg.ops.add"), ("pkg/__init__.py", "pkg"), ("src/pkg/m.py", "pkg.m"),
    ("scripts/train-gpt.py", None), ("notes.txt", None),
])
def test_module_names(relative, expected):
    assert module_name(relative) == expected


@pytest.mark.parametrize("name, module, package, expected", [
    (".kernels.add", "pkg.model", False, "pkg.kernels.add"),
    ("..ops.add", "pkg.sub.model", False, "pkg.ops.add"),
    (".add", "pkg", True, "pkg.add"),
    ("pkg.kernels.add", "pkg.model", False, "pkg.kernels.add"),
])
def test_relative_names_resolved(name, module, package, expected):
    assert resolved(name, module, package) == expected


def test_a_launcher_a_package_hands_on_is_known_by_the_package_s_name(tmp_path):
    from gpu2npu.reading.discover import Kind, walk

    package = tmp_path / "pkg" / "moe"
    package.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from .moe import fused_experts\n")
    (package / "__init__.py").write_text("from pkg.moe.fused import fused_experts\n")
    (package / "fused.py").write_text(HEAD + "def fused_experts(x):\n    _k[(1,)](x)\n")
    launchers, *_ = project_launchers([e for e in walk(tmp_path) if e.kind == Kind.PYTHON])
    names = dict(launchers)
    assert {"pkg.moe.fused.fused_experts", "pkg.moe.fused_experts", "pkg.fused_experts"} <= set(names)


def test_a_file_of_the_same_size_and_time_is_not_read_again(tmp_path, monkeypatch):
    from gpu2npu.reading import kernel_launchers
    from gpu2npu.reading.discover import Kind, walk

    (tmp_path / "ops.py").write_text(HEAD + "def add(x):\n    _k[(1,)](x)\n")
    (tmp_path / "model.py").write_text("import torch\nDEVICE = 'cpu'\n")
    entries = [e for e in walk(tmp_path) if e.kind == Kind.PYTHON]
    first = project_launchers(entries)
    monkeypatch.setattr(kernel_launchers, "_file_kernels", lambda entry, module: pytest.fail(f"read {entry.relative}"))
    again = project_launchers(entries, known=first[3])
    assert again[:3] == first[:3] and "ops.add" in dict(again[0])
    # a changed file is read again
    (tmp_path / "model.py").write_text("import torch\nDEVICE = 'npu'\nif DEVICE == 'npu':\n    pass\n")
    monkeypatch.undo()
    assert project_launchers(entries, known=first[3])[2] == {"DEVICE"}


class TestAFolderOfTritonAscendKernels:
    """A file that reads the NPU's cores from Triton's driver (`get_device_properties(dev)
    ["num_aicore"]`) is written for Triton-Ascend, and so is its folder: its kernels are the
    project's own NPU backend (no kernel rows, no launchers), as a folder named for the NPU is.
    Run through the console script."""

    KERNEL = "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef _add(x_ptr):\n    pass\n\n\n" \
             "def add(x):\n    _add[(1,)](x)\n    return x\n"
    CORES = "import torch\nimport triton.runtime.driver as driver\n\n\ndef properties():\n" \
            "    return driver.active.utils.get_device_properties(torch.npu.current_device())\n\n\n" \
            "CUBE_CORES = properties()[\"num_aicore\"]\n"
    # (a function asking for the count where there is one: no module of Triton-Ascend's)
    ASKS = "import triton\n\n\ndef core_count(default=20):\n    try:\n" \
           "        return triton.runtime.driver.active.utils.get_device_properties(0)[\"num_vectorcore\"]\n" \
           "    except Exception:\n        return default\n"
    CALLER = "import torch\nfrom fla.add import add\n\n\ndef step(x):\n    if x.is_cuda:\n        return add(x)\n    return x\n"

    def _run(self, tmp_path, files):
        from helpers import console_script, read_csv, write_project
        source = write_project(tmp_path / "proj", files)
        result = console_script("-i", str(source), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--no-cache")
        assert result.returncode == 0, result.stderr
        out = tmp_path / "out" / "proj_msft"
        return read_csv(out / "unsupported_api.csv"), (out / "train.py").read_text()

    def test_its_kernels_are_the_npus(self, tmp_path):
        rows, train = self._run(tmp_path, {"fla/__init__.py": "", "fla/utils.py": self.CORES, "fla/add.py": self.KERNEL,
                                           "train.py": self.CALLER})
        assert not [row for row in rows if row["File"].startswith("fla/")], rows
        assert "if x.is_npu:" in train

    @pytest.mark.parametrize("where, helper", [("tools/cores.py", "CORES"), ("fla/cores.py", "ASKS")])
    def test_a_folder_without_it_keeps_its_rows(self, tmp_path, where, helper):
        rows, train = self._run(tmp_path, {"fla/__init__.py": "", "fla/add.py": self.KERNEL, "train.py": self.CALLER,
                                           where: getattr(self, helper)})
        assert any(row["OP"] == "Triton kernel _add" for row in rows), rows
        assert "if x.is_cuda:" in train
