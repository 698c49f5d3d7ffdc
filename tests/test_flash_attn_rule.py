"""NPU261: flash-attn imports pointed at the generated ascend_flash_attn package; what changes
with it (device tests around flash-attn calls, report rows), what stays, where the package goes."""
import textwrap

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.records.change import Report
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options

from helpers import migrate, read_csv
from standin_runner import run_script

API = apidata.load("2.1.0")


def _migrate(source: str, path: str = "m.py"):
    options = Options(api=API)
    result = migrate_source(textwrap.dedent(source).encode(), path, options, rules_for(options))
    output = result.output.decode() if result.output is not None else textwrap.dedent(source)
    return output, result


def _unsupported(result):
    return [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]


def test_a_device_test_around_a_mapped_call_is_migrated_and_not_reported():
    output, result = _migrate("""\
        from flash_attn import flash_attn_func

        def attend(q, k, v):
            if q.device.type == "cuda" and q.dtype != torch.float32:
                return flash_attn_func(q, k, v, causal=True)
            return sdpa(q, k, v)
        """)
    assert 'if q.device.type == "npu" and q.dtype != torch.float32:' in output
    assert "from ascend_flash_attn import flash_attn_func" in output
    assert _unsupported(result) == []


def test_a_statement_with_a_name_the_package_lacks_stays_whole_and_its_guard_too():
    output, result = _migrate("""\
        from flash_attn import flash_attn_func, flash_attn_with_kvcache

        def attend(q, k, v):
            if q.is_cuda:
                return flash_attn_func(q, k, v)
            return sdpa(q, k, v)
        """)
    assert "from flash_attn import flash_attn_func, flash_attn_with_kvcache" in output
    assert "    if q.is_cuda:" in output  # flash_attn_func still comes from flash-attn: CUDA-only
    assert (1, "flash_attn (flash_attn_func, flash_attn_with_kvcache)") in _unsupported(result)
    assert not any(c.rule == "NPU261" for c in result.changes)


def test_import_flash_attn_is_kept_only_when_every_attribute_is_provided():
    output, _ = _migrate("import flash_attn as fa\nout = fa.flash_attn_varlen_func(q, k, v, cu, cu, 4, 4)\n"
                         "print(fa.__version__)\n")
    assert "import ascend_flash_attn as fa\n" in output
    output, result = _migrate("import flash_attn\nx = flash_attn.flash_attn_func(q, k, v)\n"
                              "y = flash_attn.layers.rotary.apply_rotary_emb(x, c, s)\n")
    assert output.startswith("import flash_attn\n") and not result.changes


def test_calls_with_what_the_operator_cannot_do_are_reported_once_each():
    _, result = _migrate("""\
        from flash_attn import flash_attn_func, flash_attn_varlen_func
        a = flash_attn_func(q, k, v, softcap=30.0)
        b = flash_attn_func(q, k, v, softcap=0.0, alibi_slopes=None, return_attn_probs=False)
        c = flash_attn_varlen_func(q, k, v, cu, cu, 8, 8, alibi_slopes=slopes, return_attn_probs=True)
        d = flash_attn_func(q, k, v, causal=True, window_size=(128, 0))
        """)
    rows = {f.start_line: f for f in result.findings if f.report == Report.UNSUPPORTED}
    assert sorted(rows) == [2, 4]
    assert rows[2].api == "flash_attn.flash_attn_func(softcap=30.0)" and "tanh" in rows[2].tip
    assert rows[4].api == "flash_attn.flash_attn_varlen_func(alibi_slopes=slopes, return_attn_probs=True)"
    assert "pse" in rows[4].tip and "NotImplementedError" in rows[4].tip


def test_unpad_input_keeps_the_arity_the_code_unpacks():
    output, result = _migrate("""\
        from flash_attn.bert_padding import unpad_input
        x1, idx, cu, m = unpad_input(x, mask)
        x2, idx, cu, m, used = unpad_input(x, mask)
        parts = unpad_input(x, mask)
        """)
    assert "x1, idx, cu, m = unpad_input(x, mask)[:4]\n" in output
    assert "x2, idx, cu, m, used = unpad_input(x, mask)\n" in output
    assert "parts = unpad_input(x, mask)\n" in output
    assert [c.start_line for c in result.changes if "four values" in c.message] == [2]


def test_relative_star_and_foreign_imports_stay():
    for source in ("from .flash_attn import flash_attn_func\n", "from flash_attn import *\n",
                   "from flash_attn.modules.mha import MHA\n", "import os, flash_attn\n"):
        output, result = _migrate(source)
        assert output == source and not any(c.rule == "NPU261" for c in result.changes), source


def test_migrating_twice_changes_nothing_more():
    once, _ = _migrate("import torch\nfrom flash_attn import flash_attn_func\ny = flash_attn_func(q, k, v)\n")
    twice, result = _migrate(once)
    assert twice == once and not result.changes


def test_package_is_written_only_when_used_and_imports_from_any_depth(tmp_path):
    project = tmp_path / "proj"
    (project / "pkg" / "layers").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "layers" / "__init__.py").write_text("")
    (project / "pkg" / "layers" / "attn.py").write_text(
        "import torch\nfrom flash_attn import flash_attn_qkvpacked_func\n\n"
        "def attend(qkv):\n    return flash_attn_qkvpacked_func(qkv, causal=True)\n")
    (project / "main.py").write_text(
        "import torch\nfrom pkg.layers.attn import attend\n"
        "qkv = torch.randn(2, 5, 3, 2, 4, generator=torch.Generator().manual_seed(0))\n"
        "q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))\n"
        "want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)\n"
        "print('max error', float((attend(qkv) - want).abs().max()))\n")
    target = migrate(project, tmp_path / "out")
    assert (target / "ascend_flash_attn" / "__init__.py").is_file()
    attn = (target / "pkg" / "layers" / "attn.py").read_text()
    assert "sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))" in attn
    rows = [(r["File"], r["Rule"]) for r in read_csv(target / "change_list.csv")]
    assert ("pkg/layers/attn.py", "NPU261") in rows
    # run from another folder: the package is found through the file's own location
    result = run_script(target / "main.py", [], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.split()[-1]) <= 1e-5

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    assert not (migrate(plain, tmp_path / "out2") / "ascend_flash_attn").exists()


def test_a_device_test_around_rerouted_xformers_is_migrated_and_one_around_the_rest_is_not():
    output, _ = _migrate("""\
        from xformers.ops import memory_efficient_attention as mea

        def attn(q, k, v, device):
            if str(device).startswith('cuda'):
                return mea(q, k, v)
        """)
    assert "    if str(device).startswith('npu'):" in output and "from ascend_xformers.ops import" in output
    output, _ = _migrate("""\
        import xformers.ops as xops

        def attn(q, k, v, lengths):
            if q.is_cuda:
                return xops.memory_efficient_attention(q, k, v, xops.fmha.BlockDiagonalMask.from_seqlens(lengths))
        """)
    assert "    if q.is_cuda:" in output and "import xformers.ops as xops" in output


def test_an_import_only_probing_for_the_package_follows_the_rest_of_the_file():
    output, _ = _migrate("""\
        try:
            import flash_attn  # noqa: F401
            HAS_FLASH = True
        except ImportError:
            HAS_FLASH = False

        def attend(q, k, v):
            from flash_attn import flash_attn_func
            return flash_attn_func(q, k, v)
        """)
    assert "import ascend_flash_attn as flash_attn  # noqa: F401" in output
    assert "from ascend_flash_attn import flash_attn_func" in output
    output, result = _migrate("try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n")
    assert "import flash_attn\n" in output and not result.changes


def test_a_version_probe_alone_is_not_rerouted():
    # an environment report must print the installed package's version, not the generated one's
    for source in ("import flash_attn\nprint(flash_attn.__version__)\n",
                   "from flash_attn import __version__\nprint(__version__)\n",
                   "try:\n    import bitsandbytes as bnb\n    v = bnb.__version__\nexcept ImportError:\n    v = None\n"):
        output, result = _migrate(source)
        assert output == source and not result.changes, source


def test_a_find_spec_probe_follows_the_imports_and_is_reported_where_it_cannot():
    guarded = ("import importlib.util\nimport torch\n\nFLASH = importlib.util.find_spec('flash_attn') is not None\n"
               "if FLASH:\n    from flash_attn import flash_attn_func\n")
    output, result = _migrate(guarded)
    assert "FLASH = importlib.util.find_spec('ascend_flash_attn') is not None\n" in output
    # the output's top folder is on sys.path before the probe runs
    assert output.index("sys.path.append") < output.index("find_spec(")
    assert [c.start_line for c in result.changes if "find_spec" in c.message] == [4]
    assert not [api for _, api in _unsupported(result) if "find_spec" in api]
    again, second = _migrate(output)
    assert again == output and not second.changes

    # imported by string elsewhere: the probe stays and is reported
    by_string = guarded + "    fa = importlib.import_module('flash_attn')\n"
    output, result = _migrate(by_string)
    assert "find_spec('flash_attn')" in output and "from ascend_flash_attn import flash_attn_func" in output
    assert [api for _, api in _unsupported(result) if "find_spec" in api] == ["find_spec('flash_attn')"]

    # no import to point anywhere: reported with the package's name, and a version check too
    output, result = _migrate("import importlib.util\nfrom importlib.metadata import version\n"
                              "HAS = importlib.util.find_spec('xformers') is not None\nV = version('flash-attn')\n")
    assert not result.changes
    rows = {f.api: f.tip for f in result.findings if f.report == Report.UNSUPPORTED}
    assert "probe 'ascend_xformers'" in rows["find_spec('xformers')"]
    assert "PackageNotFoundError" in rows["version('flash-attn')"] and "__version__" in rows["version('flash-attn')"]


class TestAttentionFunctionsImportedThroughTheLayersModule:
    """flash-attn 2's `flash_attn.modules.mha` imports the packed attention functions from the
    package, and projects import them from there (`from flash_attn.modules.mha import
    flash_attn_varlen_kvpacked_func`): the same functions, pointed at ascend_flash_attn's.  A
    statement that imports the module's layers too (MHA) stays, reported."""

    def test_an_import_of_the_functions_alone_is_rerouted(self):
        output, result = _migrate("""\
            import torch
            from flash_attn.modules.mha import flash_attn_qkvpacked_func, flash_attn_varlen_kvpacked_func


            def attend(q, kv, cu, longest):
                return flash_attn_varlen_kvpacked_func(q, kv, cu, cu, longest, longest, causal=True)
            """)
        assert "from ascend_flash_attn import flash_attn_qkvpacked_func, flash_attn_varlen_kvpacked_func\n" in output
        assert "flash_attn.modules" not in output and not _unsupported(result)

    def test_an_import_of_its_layers_stays_reported(self):
        source = "import torch\nfrom flash_attn.modules.mha import MHA, flash_attn_varlen_kvpacked_func\n"
        output, result = _migrate(source)
        assert output == source and [line for line, _ in _unsupported(result)] == [2]


class TestAPackageImportedOnlyForItsVersion:
    """`import flash_attn` to log `flash_attn.__version__` (nanotron's environment report, run at
    every trainer start) uses none of its kernels, but the migration takes flash-attn out of the
    project's dependencies: on an Ascend machine the import raises, so it is a row `check` fails
    on, not a note.  Inside a try that expects ImportError it is a note; so is a part of a package
    that installs there (DeepSpeed's ops)."""

    @staticmethod
    def _rows(source):
        options = Options(api=API)
        result = migrate_source(textwrap.dedent(source).encode(), "env.py", options, rules_for(options))
        return [(f.start_line, f.report, f.rule) for f in result.findings]

    def test_an_unguarded_import_is_a_row(self):
        rows = self._rows("""\
            import logging


            def log_versions(logger):
                import flash_attn
                import xformers
                logger.info("flash-attn %s, xformers %s", flash_attn.__version__, xformers.__version__)
            """)
        assert rows == [(5, Report.UNSUPPORTED, "NPU916"), (6, Report.UNSUPPORTED, "NPU916")]

    def test_a_class_whose_init_is_called_is_used_not_read_for_its_metadata(self):
        options = Options(api=API)
        source = ("from bitsandbytes.optim.optimizer import Optimizer2State\n\n\ndef build(optimizer, params):\n"
                  "    Optimizer2State.__init__(optimizer, 'adam', params)\n")
        result = migrate_source(source.encode(), "opt.py", options, rules_for(options))
        first = next(f for f in result.findings if f.start_line == 1)
        assert first.report == Report.UNSUPPORTED and "metadata" not in first.tip

    def test_an_import_that_may_fail_or_of_an_installable_package_is_a_note(self):
        rows = self._rows("""\
            try:
                import flash_attn
                version = flash_attn.__version__
            except ImportError:
                version = None
            import deepspeed.ops.gds as gds
            print(gds.__version__)
            """)
        assert [(line, report) for line, report, _ in rows] == [(2, Report.NOTE), (6, Report.NOTE)]


class TestAProbeAnswersForEveryFileThatAsksIt:
    """`is_flash_v2_installed()` (a probe: `import flash_attn` for its version) in a module whose own
    imports go to ascend_flash_attn follows them, answering yes on the NPU, only where no file of the
    project keeps an import the generated package has not (`from flash_attn.layers.rotary import
    RotaryEmbedding`): another module asks the probe before that import, which would then run and
    fail on an Ascend machine.  Through the console script, as a project is migrated."""

    PROBE = ("from packaging import version\n\n\ndef is_flash_v2_installed():\n    try:\n        import flash_attn\n"
             "    except ImportError:\n        return False\n"
             "    return version.parse(flash_attn.__version__) >= version.parse('2.0.0')\n\n\n"
             "def attend(q, k, v):\n    from flash_attn import flash_attn_func\n    return flash_attn_func(q, k, v)\n")

    @staticmethod
    def _migrate(tmp_path, model):
        from helpers import console_script

        (tmp_path / "proj" / "pkg").mkdir(parents=True)
        (tmp_path / "proj" / "pkg" / "__init__.py").write_text("")
        (tmp_path / "proj" / "pkg" / "attention.py").write_text(TestAProbeAnswersForEveryFileThatAsksIt.PROBE)
        (tmp_path / "proj" / "pkg" / "model.py").write_text(model)
        done = console_script("-i", str(tmp_path / "proj"), "-o", str(tmp_path / "out"), "-v", "2.1.0")
        assert done.returncode == 0, done.stderr
        return (tmp_path / "out" / "proj_msft" / "pkg" / "attention.py").read_text()

    @pytest.mark.parametrize("kept", [
        "    from flash_attn.layers.rotary import RotaryEmbedding\n",
        # (asked as an attribute of its module: `attention.is_flash_v2_installed()`)
        "    from flash_attn.layers.rotary import RotaryEmbedding\nimport pkg.attention as attention\n"
        "USE = attention.is_flash_v2_installed()\n",
        "    from flash_attn.layers.rotary import \\\n        RotaryEmbedding as Rotary\n",
        "    import flash_attn.ops.fused_dense\n",
        "    from flash_attn import bert_padding, flash_attn_with_kvcache_paged_unknown\n",
    ])
    def test_it_stays_where_another_file_keeps_an_import(self, tmp_path, kept):
        model = "from pkg.attention import is_flash_v2_installed\n\nif is_flash_v2_installed():\n" + kept
        output = self._migrate(tmp_path, model)
        assert "        import flash_attn\n" in output  # the probe: False on an Ascend machine
        assert "from ascend_flash_attn import flash_attn_func" in output  # the file's own import still goes

    @pytest.mark.parametrize("model", [
        # a file keeps flash_attn but asks nothing of the probe's module
        "from flash_attn.layers.rotary import RotaryEmbedding\n",
        "from pkg.attention import attend\nfrom flash_attn.layers.rotary import RotaryEmbedding\n",
    ])
    def test_it_follows_where_no_file_that_keeps_an_import_asks_it(self, tmp_path, model):
        output = self._migrate(tmp_path, model)
        assert "        import ascend_flash_attn as flash_attn\n" in output

    def test_it_follows_where_every_file_s_imports_go(self, tmp_path):
        model = ("from pkg.attention import is_flash_v2_installed\n\nif is_flash_v2_installed():\n"
                 "    from flash_attn.bert_padding import pad_input, unpad_input\n")
        output = self._migrate(tmp_path, model)
        assert "        import ascend_flash_attn as flash_attn\n" in output
