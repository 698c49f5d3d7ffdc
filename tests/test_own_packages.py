"""A project that is itself a CUDA-only package (liger_kernel, flash-attn, DeepSpeed migrated on
their own trees): its imports of its own modules load the code being migrated, so no row calls
them CUDA-only packages and no rule points them at a generated package; what is CUDA in that code
keeps its own rows.  And the rows of CUDA-only packages carry the code of their kind."""
import json
from pathlib import Path

from gpu2npu.reading.discover import own_packages
from helpers import migrate, read_csv, run_cli, write_project

KERNEL = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef copy_kernel(x_ptr, y_ptr):\n"
          "    offsets = tl.arange(0, 16)\n    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets))\n\n\n"
          "def block_size(n):\n    return triton.next_power_of_2(n)\n")
USER = ("import torch\nfrom liger_kernel.ops.utils import block_size\n\n\n"
        "def rows(x):\n    return block_size(x.shape[-1])\n")


def _check(root: Path):
    result = run_cli("check", "-v", "2.1.0", "--format", "json", str(root))
    return [(Path(f["path"]).relative_to(root).as_posix(), f["rule"], f["message"].split(" has no NPU")[0])
            for f in json.loads(result.stdout)["findings"]]


class TestAProjectThatIsThePackage:
    def test_its_own_modules_are_no_cuda_only_package(self, tmp_path):
        root = write_project(tmp_path / "liger", {"liger_kernel/__init__.py": "", "liger_kernel/ops/__init__.py": "",
                                                  "liger_kernel/ops/utils.py": KERNEL, "liger_kernel/layers.py": USER})
        rows = _check(root)
        assert not [row for row in rows if row[2].startswith("liger_kernel")], rows
        # what is CUDA in its code keeps its rows: the kernel language imported, the kernel itself
        assert ("liger_kernel/ops/utils.py", "NPU929", "triton") in rows
        assert ("liger_kernel/ops/utils.py", "NPU909", "Triton kernel copy_kernel") in rows

    def test_an_unpacked_sdist_or_a_src_layout_is_the_package_too(self, tmp_path):
        sdist = write_project(tmp_path / "sdist", {"liger_kernel-0.8.5/liger_kernel/__init__.py": "",
                                                   "liger_kernel-0.8.5/liger_kernel/layers.py": USER,
                                                   "liger_kernel-0.8.5/pyproject.toml": "[project]\nname = 'liger'\n"})
        src = write_project(tmp_path / "src_layout", {"src/liger_kernel/__init__.py": "", "src/liger_kernel/layers.py": USER})
        assert own_packages(sdist) == own_packages(src) == frozenset({"liger_kernel"})
        assert not [row for row in _check(sdist) + _check(src) if row[2].startswith("liger_kernel")]

    def test_its_imports_are_not_pointed_at_a_generated_package(self, tmp_path):
        source = "import torch\nfrom flash_attn.bert_padding import pad_input, unpad_input\n"
        root = write_project(tmp_path / "flash-attention", {
            "flash_attn/__init__.py": "", "flash_attn/bert_padding.py": "def pad_input(x):\n    return x\n",
            "training/run.py": source})
        target = migrate(root, tmp_path / "out")
        assert (target / "training/run.py").read_text().startswith(source)
        assert not (target / "ascend_flash_attn").exists()
        assert not [row for row in read_csv(target / "unsupported_api.csv") if row["OP"].startswith("flash_attn")]


class TestACopyKeptDeeperInTheTree:
    """A package's own files load the package they sit in; the files of a Python project kept
    deeper in the tree (a vendored dependency with its examples) load the package it installs.
    The project's other files still load the installed, CUDA-only package."""

    def test_a_bare_copys_own_files_load_that_copy(self, tmp_path):
        root = write_project(tmp_path / "trainer", {"third_party/liger_kernel/__init__.py": "",
                                                    "third_party/liger_kernel/ops/__init__.py": "",
                                                    "third_party/liger_kernel/ops/utils.py": KERNEL,
                                                    "third_party/liger_kernel/layers.py": USER,
                                                    "train.py": USER})
        rows = _check(root)
        assert not [row for row in rows if row[0].startswith("third_party/") and row[2].startswith("liger_kernel")]
        assert ("third_party/liger_kernel/ops/utils.py", "NPU909", "Triton kernel copy_kernel") in rows
        assert ("train.py", "NPU916", "liger_kernel.ops.utils.block_size") in rows

    def test_a_vendored_projects_examples_load_the_package_it_installs(self, tmp_path):
        for marker, package in (("setup.py", "deps/liger/liger_kernel"), ("pyproject.toml", "deps/liger/src/liger_kernel"),
                                ("setup.cfg", "deps/liger/liger_kernel")):
            root = write_project(tmp_path / marker, {f"deps/liger/{marker}": "", f"{package}/__init__.py": "",
                                                     "deps/liger/examples/run.py": USER, "train.py": USER})
            rows = _check(root)
            assert not [row for row in rows if row[0] == "deps/liger/examples/run.py"], (marker, rows)
            assert ("train.py", "NPU916", "liger_kernel.ops.utils.block_size") in rows, marker

    def test_the_siblings_of_a_copy_in_no_project_load_the_installed_package(self, tmp_path):
        # (run from deps/liger/examples, `import liger_kernel` finds no copy on the path)
        root = write_project(tmp_path / "trainer", {"deps/liger/liger_kernel/__init__.py": "",
                                                    "deps/liger/examples/run.py": USER})
        assert ("deps/liger/examples/run.py", "NPU916", "liger_kernel.ops.utils.block_size") in _check(root)

    def test_a_subpackage_of_the_name_is_not_the_package(self, tmp_path):
        # (mylib/patches/liger_kernel/ is imported as mylib.patches.liger_kernel: `import
        # liger_kernel` in it loads the installed package)
        root = write_project(tmp_path / "trainer", {"mylib/__init__.py": "", "mylib/patches/__init__.py": "",
                                                    "mylib/patches/liger_kernel/__init__.py": "",
                                                    "mylib/patches/liger_kernel/layers.py": USER})
        assert ("mylib/patches/liger_kernel/layers.py", "NPU916", "liger_kernel.ops.utils.block_size") in _check(root)

    def test_a_vendored_flash_attn_keeps_its_imports_and_the_trainer_is_rerouted(self, tmp_path):
        source = "import torch\nfrom flash_attn.bert_padding import pad_input, unpad_input\n"
        root = write_project(tmp_path / "trainer", {
            "vendor/flash-attention/setup.py": "", "vendor/flash-attention/flash_attn/__init__.py": "",
            "vendor/flash-attention/flash_attn/bert_padding.py": "def pad_input(x):\n    return x\n",
            "vendor/flash-attention/training/run.py": source, "train.py": source})
        target = migrate(root, tmp_path / "out")
        assert (target / "vendor/flash-attention/training/run.py").read_text().startswith(source)
        assert "ascend_flash_attn.bert_padding" in (target / "train.py").read_text()

    def test_a_cached_result_follows_the_tree(self, tmp_path):
        root = write_project(tmp_path / "trainer", {"deps/liger/liger_kernel/__init__.py": "",
                                                    "deps/liger/examples/run.py": USER})
        cache = tmp_path / "cache"

        def rows():
            result = run_cli("check", "-v", "2.1.0", "--format", "json", "--cache-dir", str(cache), str(root))
            return [f["rule"] for f in json.loads(result.stdout)["findings"] if f["path"].endswith("examples/run.py")]

        assert "NPU916" in rows()
        (root / "deps/liger/setup.py").write_text("")
        assert rows() == []


class TestAProjectThatUsesThePackage:
    def test_an_import_of_the_installed_package_is_reported(self, tmp_path):
        root = write_project(tmp_path / "trainer", {"train.py": USER})
        assert own_packages(root) == frozenset()
        assert ("train.py", "NPU916", "liger_kernel.ops.utils.block_size") in _check(root)

    def test_a_copy_kept_in_a_folder_on_no_path_is_not_the_projects(self, tmp_path):
        # (third_party/ is not where Python looks: `import liger_kernel` loads the installed one)
        root = write_project(tmp_path / "trainer", {"third_party/liger_kernel/__init__.py": "", "train.py": USER})
        assert own_packages(root) == frozenset()
        assert ("train.py", "NPU916", "liger_kernel.ops.utils.block_size") in _check(root)

    def test_a_folder_without_init_is_no_package_of_the_project(self, tmp_path):
        # (a namespace folder loses to the installed regular package of the name)
        root = write_project(tmp_path / "trainer", {"liger_kernel/notes.py": "", "train.py": USER})
        assert own_packages(root) == frozenset()
        assert ("train.py", "NPU916", "liger_kernel.ops.utils.block_size") in _check(root)

    def test_its_flash_attn_imports_still_go_to_the_generated_package(self, tmp_path):
        source = "import torch\nfrom flash_attn.bert_padding import pad_input, unpad_input\n"
        root = write_project(tmp_path / "trainer", {"run.py": source})
        target = migrate(root, tmp_path / "out")
        assert "ascend_flash_attn.bert_padding" in (target / "run.py").read_text()


class TestTheKindOfAPackage:
    def test_each_kind_has_its_code(self, tmp_path):
        root = write_project(tmp_path / "project", {
            "kernels.py": KERNEL,
            "monitor.py": "import pynvml\n\n\ndef init():\n    pynvml.nvmlInit()\n",
            "arrays.py": "import cupy\n\n\ndef zeros():\n    return cupy.zeros(3)\n",
        })
        codes = {(path, api): code for path, code, api in _check(root)}
        assert codes[("kernels.py", "triton")] == "NPU929"  # a GPU kernel language, imported: once a file
        assert ("kernels.py", "triton.language") not in codes
        assert codes[("kernels.py", "Triton kernel copy_kernel")] == "NPU909"  # a kernel written in it
        assert codes[("monitor.py", "pynvml")] == codes[("monitor.py", "pynvml.nvmlInit")] == "NPU924"  # NVML
        assert codes[("arrays.py", "cupy")] == "NPU916"  # CUDA kernels: the import's row lists the call
        assert ("arrays.py", "cupy.zeros") not in codes
