"""What chooses a GPU kernel stays as written with it: the kernels of every kernel language
(Helion's beside Triton's), a question the code asks before a launch in any form (`if not
eligible(x): return None` as well as `if eligible(x): launch(x)`), and the device type an
operator's implementation is registered for where that implementation launches a kernel.
Migrated, each would send NPU tensors into a kernel compiled for CUDA, where the code as written
fell back to torch (or the dispatcher said no NPU kernel is registered)."""
import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))

TRITON = "import torch\nimport triton\n\n\n@triton.jit\ndef _k(x_ptr):\n    pass\n\n\ndef launch(x):\n    _k[(1,)](x)\n    return x\n"
HELION = ("import torch\nimport helion\nimport helion.language as hl\n\n\n@helion.kernel(static_shapes=True)\n"
          "def launch(x: torch.Tensor) -> torch.Tensor:\n    out = torch.empty_like(x)\n"
          "    for tile in hl.tile(x.size()):\n        out[tile] = x[tile] * 2\n    return out\n")
TORCH_ONLY = "import torch\n\n\ndef launch(x):\n    return x * 2\n"


def _migrate(source: str):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    return (result.output or source.encode()).decode(), result.findings


class TestHelionKernels:
    def test_each_kernel_and_the_import_have_rows(self):
        _, findings = _migrate(HELION)
        rows = {(f.api, f.start_line) for f in findings if f.report == Report.UNSUPPORTED}
        assert ("helion", 2) in rows and ("Helion kernel launch", 7) in rows
        tip = next(f.tip for f in findings if f.api == "Helion kernel launch")
        assert "compiles through Triton for CUDA" in tip and "Triton-Ascend" in tip

    def test_a_device_test_before_one_stays(self):
        source = HELION + "\n\ndef rope(x):\n    if x.is_cuda:\n        return launch(x)\n    return x * 2\n"
        output, _ = _migrate(source)
        assert "    if x.is_cuda:\n        return launch(x)" in output


# A question asked before a launch, in each form; where the launch is torch's own, the question
# is migrated with the rest.
ELIGIBLE = "\n\ndef eligible(x, c):\n    return (\n        x.is_cuda\n        and c.is_cuda\n        and x.ndim == 4\n    )\n"
ASKED = [
    "\n\ndef apply(x, c):\n    x = x.contiguous()\n    if not eligible(x, c):\n        return None\n    return launch(x)\n",
    "\n\ndef apply(x, c):\n    if eligible(x, c):\n        return launch(x)\n    return None\n",
    # in a block of its own (`if HAS_HELION:`), a line after the test
    "\n\nif True:\n\n    def apply(x, c):\n        if not eligible(x, c):\n            warn('falling back')\n"
    "            return None\n        return launch(x)\n",
]


class TestAQuestionAskedBeforeALaunch:
    @pytest.mark.parametrize("asked", ASKED)
    @pytest.mark.parametrize("kernels", [TRITON, HELION], ids=["triton", "helion"])
    def test_keeps_its_answer_with_a_row(self, kernels, asked):
        output, findings = _migrate(kernels + ELIGIBLE + asked)
        assert "        x.is_cuda\n        and c.is_cuda\n" in output
        assert any(f.api.startswith("device test") and "x.is_cuda" in f.api for f in findings), findings

    @pytest.mark.parametrize("asked", ASKED)
    def test_before_torchs_own_code_is_migrated(self, asked):
        output, _ = _migrate(TORCH_ONLY + ELIGIBLE + asked)
        assert "        x.is_npu\n        and c.is_npu\n" in output


REGISTRATIONS = [
    '@torch.library.custom_op("p::op", mutates_args=(), device_types="cuda")\ndef op(x: torch.Tensor) -> torch.Tensor:\n'
    '    return launch(x)\n',
    '@torch.library.custom_op("p::op", mutates_args=(), device_types=("cuda",))\ndef op(x: torch.Tensor) -> torch.Tensor:\n'
    '    return launch(x)\n',
    '@torch.library.register_kernel("p::op", "cuda")\ndef op(x):\n    return launch(x)\n',
    'torch.library.register_kernel("p::op", "cuda", launch)\n',
    'torch.library.impl("p::op", "cuda", func=launch)\n',
]


class TestTheDeviceTypeAnImplementationIsRegisteredFor:
    @pytest.mark.parametrize("registration", REGISTRATIONS)
    @pytest.mark.parametrize("kernels", [TRITON, HELION], ids=["triton", "helion"])
    def test_stays_where_it_launches_a_kernel(self, kernels, registration):
        source = kernels + "\n\n" + registration + "y = torch.ones(2, device='cuda')\n"
        output, _ = _migrate(source)
        assert registration in output and "device='npu'" in output

    @pytest.mark.parametrize("registration", REGISTRATIONS)
    def test_is_migrated_where_it_runs_torch(self, registration):
        output, _ = _migrate(TORCH_ONLY + "\n\n" + registration)
        assert '"npu"' in output and '"cuda"' not in output


class TestAnImplementationThatCallsACudaOnlyPackage:
    """Registered for CUDA where its implementation calls a CUDA-only package (DeepEP's dispatch),
    itself or through what the file made with one: the device type stays, the package's row says
    what to do."""

    @pytest.mark.parametrize("body", [
        "    from deep_ep.hybrid_ep_buffer import indices_to_map\n    return indices_to_map(x)\n",
        "    global _buffer\n    out, _ = _buffer.combine(x)\n    return out\n",
    ])
    def test_stays(self, body):
        source = ("import torch\n\n_buffer = None\n\n\ndef init(group):\n    global _buffer\n"
                  "    from deep_ep import HybridEPBuffer\n    _buffer = HybridEPBuffer(group)\n\n\n"
                  '@torch.library.custom_op("ep::op", mutates_args=(), device_types="cuda")\n'
                  f"def op(x: torch.Tensor) -> torch.Tensor:\n{body}")
        output, findings = _migrate(source)
        assert 'device_types="cuda"' in output
        assert any(f.api.startswith("deep_ep") for f in findings), findings

    def test_a_method_of_something_else_is_migrated(self):
        source = ("import torch\n\n_buffer = None\n\n\ndef init(group):\n    global _buffer\n    _buffer = Pool(group)\n\n\n"
                  '@torch.library.custom_op("ep::op", mutates_args=(), device_types="cuda")\n'
                  "def op(x: torch.Tensor) -> torch.Tensor:\n    return _buffer.combine(x)\n")
        output, _ = _migrate(source)
        assert 'device_types="npu"' in output


class TestAnImplementationThatCallsAnotherModulesLauncher:
    """Registered for CUDA where its implementation calls a launcher that another module of the
    project defines (imported in any form): the device type stays, as for a launcher of its own
    file; the kernel's row in the other module says what to do.  Through the console script, as a
    project is migrated."""

    KERNELS = ("import torch\nimport triton\n\n\n@triton.jit\ndef _rope_kernel(x_ptr):\n    pass\n\n\n"
               "def rope_forward(x):\n    _rope_kernel[(1,)](x)\n    return x\n\n\ndef rope_reference(x):\n    return x * 2\n")

    def _migrate_project(self, tmp_path, imports: str, call: str) -> str:
        from tests.helpers import console_script

        package = tmp_path / "proj" / "proj"
        (package / "kernels").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "kernels" / "__init__.py").write_text("from .rope import rope_forward, rope_reference\n")
        (package / "kernels" / "rope.py").write_text(self.KERNELS)
        (package / "ops.py").write_text(
            f"import torch\n{imports}\n\n\n"
            '@torch.library.custom_op("proj::rope", mutates_args=(), device_types="cuda")\n'
            f"def rope(x: torch.Tensor) -> torch.Tensor:\n    return {call}(x.clone())\n\n\n"
            "def run(x):\n    return rope(x.cuda())\n")
        done = console_script("-i", str(tmp_path / "proj"), "-o", str(tmp_path / "out"), "-v", "2.1.0")
        assert done.returncode == 0, done.stderr
        return (tmp_path / "out" / "proj_msft" / "proj" / "ops.py").read_text()

    @pytest.mark.parametrize("imports, call", [
        ("from proj.kernels.rope import rope_forward", "rope_forward"),
        ("from .kernels.rope import rope_forward", "rope_forward"),
        ("from .kernels import rope_forward", "rope_forward"),  # handed on by the package
        ("from proj.kernels import rope", "rope.rope_forward"),
        ("import proj.kernels.rope as kernels", "kernels.rope_forward"),
    ])
    def test_stays(self, tmp_path, imports, call):
        output = self._migrate_project(tmp_path, imports, call)
        assert 'device_types="cuda"' in output and "rope(x.npu())" in output

    @pytest.mark.parametrize("imports, call", [
        ("from proj.kernels.rope import rope_reference", "rope_reference"),
        ("from .kernels import rope_reference", "rope_reference"),
    ])
    def test_one_that_calls_torch_code_of_another_module_is_migrated(self, tmp_path, imports, call):
        output = self._migrate_project(tmp_path, imports, call)
        assert 'device_types="npu"' in output
