"""Code that runs only where a CUDA-only package is installed (after `is_bnb_available()`, in a
`try` that expects the import to fail) fails nothing on an Ascend machine, where the package is not:
its rows are notes in the log, with the package's tip, and `check` passes them.  Every other use
keeps its row."""
import json
import subprocess
import sys

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.records.change import Report
from gpu2npu.rules import Options

OPTIONS = Options(api=apidata.load("2.1.0"))


def _rows(source: str):
    result = migrate_source(source.encode(), "m.py", OPTIONS, rules_for(OPTIONS))
    unsupported = [(f.start_line, f.api) for f in result.findings if f.report == Report.UNSUPPORTED]
    notes = [(f.start_line, f.api, f.tip) for f in result.findings
             if f.report == Report.NOTE and ("runs only" in f.tip or "expects the import to fail" in f.tip)]
    return unsupported, notes


class TestOnlyWhereThePackageIsThere:
    @pytest.mark.parametrize("source, line, where", [
        # the body of a question whether it is there, by its short name, its name or a probe of it
        ("from peft.import_utils import is_bnb_available\n\ndef q(w):\n    if is_bnb_available():\n"
         "        import bitsandbytes as bnb\n        return bnb.nn.Int8Params(w)\n", 6, "is_bnb_available() holds"),
        ("import importlib.util\n\ndef q(w):\n    if importlib.util.find_spec('bitsandbytes') is not None:\n"
         "        import bitsandbytes\n        return bitsandbytes.nn.Int8Params(w)\n", 6, "holds"),
        ("from transformers.utils import is_torch_available, is_bitsandbytes_available\n\ndef q(w):\n"
         "    if is_torch_available() and is_bitsandbytes_available():\n        import bitsandbytes as bnb\n"
         "        return bnb.nn.Params4bit(w)\n", 6, "is_bitsandbytes_available() holds"),
        # an optional import, then its name tested
        ("try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    bnb = None\n\n\ndef q(w):\n"
         "    if bnb is not None:\n        return bnb.functional.dequantize_4bit(w)\n    return w\n", 9, "bnb is not None holds"),
        # the else of a question asked the other way round, and what follows an early return
        ("def q(w):\n    if not is_te_available():\n        return w\n    else:\n        import transformer_engine\n"
         "        return transformer_engine.pytorch.Linear(2, 2)\n", 6, "is_te_available() holds"),
        ("def q(w):\n    if not is_bnb_available():\n        return w\n    import bitsandbytes as bnb\n"
         "    return bnb.nn.Params4bit(w)\n", 5, "is_bnb_available() holds"),
    ])
    def test_a_use_after_a_question_whether_the_package_is_there_is_a_note(self, source, line, where):
        unsupported, notes = _rows(source)
        assert [row for row in unsupported if row[0] == line] == []
        note = next(note for note in notes if note[0] == line)
        assert where in note[2] and "not reached there" in note[2]
        assert len(note[2].split("to have the NPU do it: ", 1)[1]) > 20  # the package's own tip follows

    def test_an_import_in_a_try_that_expects_it_to_fail_is_a_note(self):
        unsupported, notes = _rows("try:\n    import triton\nexcept ImportError:\n    triton = None\n")
        assert unsupported == []
        assert [(line, api) for line, api, _ in notes] == [(2, "triton")]

    @pytest.mark.parametrize("handler", [
        "except Exception as e:\n    raise e\n",
        "except ImportError:\n    raise\n",
        "except ImportError as error:\n    log('install triton')\n    raise RuntimeError('install triton') from error\n",
    ])
    def test_an_import_in_a_try_whose_handler_raises_again_keeps_its_row(self, handler):
        """A handler that ends by raising stops the program where the import fails, as no `try`
        would: it expects nothing to fail."""
        unsupported, notes = _rows("try:\n    import triton\n" + handler)
        assert (2, "triton") in unsupported and notes == []

    @pytest.mark.parametrize("source, line", [
        ("import bitsandbytes as bnb\nlayer = bnb.nn.Linear4bit(16, 16)\n", 2),  # nothing asked
        ("def q(w):\n    if not is_bnb_available():\n        import bitsandbytes as bnb\n"
         "        return bnb.nn.Params4bit(w)\n", 4),  # where it is NOT there
        ("def q(w, opt):\n    if opt.name in ('Adam8bit', 'PagedAdamW8bit'):\n        import bitsandbytes\n"
         "        return bitsandbytes.optim.GlobalOptimManager.get_instance()\n", 4),  # an option, not a question
        ("def q(w):\n    if is_flash_attn_available():\n        import bitsandbytes as bnb\n"
         "        return bnb.nn.Params4bit(w)\n", 4),  # a question about another package
        # a part of a package that is there on an Ascend machine: vLLM runs there (vllm-ascend)
        ("def q(info):\n    if is_vllm_available():\n        from vllm.distributed.device_communicators.pynccl import "
         "PyNcclCommunicator\n        return PyNcclCommunicator(info, device=0)\n", 4),
        ("try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    bnb = None\nlayer = bnb.nn.Linear4bit(16, 16)\n", 5),
    ])
    def test_every_other_use_keeps_its_row(self, source, line):
        unsupported, _ = _rows(source)
        assert line in [row[0] for row in unsupported], unsupported


def test_check_passes_optional_support_and_fails_on_a_use_without_a_question(tmp_path):
    (tmp_path / "quant.py").write_text(
        "from peft.import_utils import is_bnb_available\n\ndef q(w):\n    if is_bnb_available():\n"
        "        import bitsandbytes as bnb\n        return bnb.nn.Int8Params(w)\n    return w\n")
    command = [sys.executable, "-m", "gpu2npu", "check", "-v", "2.1.0", "--no-cache", "--format", "json", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["findings"] == []
    (tmp_path / "train.py").write_text("import bitsandbytes as bnb\nlayer = bnb.nn.Linear4bit(16, 16)\n")
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 1
    assert {(f["path"].rsplit("/", 1)[-1], f["rule"]) for f in json.loads(done.stdout)["findings"]} == {("train.py", "NPU916")}


def test_an_option_that_names_the_package_is_no_question_whether_it_is_there():
    unsupported, notes = _rows("def build(args):\n    if args.use_bnb_linear is not None:\n"
                               "        import bitsandbytes as bnb\n        return bnb.nn.Linear8bitLt(2, 2)\n")
    assert [line for line, _ in unsupported] == [3, 4] and notes == []


# -- one model of the tests, read by the leftover rows and the version probes alike -----------------
_GUARDED_USE = "    import bitsandbytes as bnb\n    V = importlib.metadata.version('bitsandbytes')\n"


def _unsupported_lines(source: str):
    """The lines of the import's and the version probe's rows (not the find_spec probes' of a test)."""
    unsupported, _ = _rows(source)
    return {line for line, api in unsupported if "bitsandbytes" in api and not api.startswith("find_spec")}


def _indent_of_last(lines: str) -> str:
    last = lines.rsplit("\n", 2)[-2]
    return last[:len(last) - len(last.lstrip())]


class TestOneAnswerForTheImportAndTheVersionProbe:
    """Where the package's import is a note, its version() probe is no row (it cannot raise
    there), and where one keeps its row, so does the other: the same model of the file answers."""

    @pytest.mark.parametrize("test_lines", [
        # a question, asked directly, through a variable, with its polarity
        "if is_bnb_available():\n",
        "HAS = importlib.util.find_spec('bitsandbytes') is not None\nif HAS:\n",
        "HAS = is_torch_available() and is_bitsandbytes_available()\nif HAS:\n",
        "HAS = False\nif is_torch_available():\n    HAS = is_bitsandbytes_available()\nif HAS:\n",
        "if not is_bnb_available():\n    pass\nelse:\n",
        # set to True in a try after the import, to False where it failed
        "try:\n    import bitsandbytes\n    BNB_OK = True\nexcept ImportError:\n    BNB_OK = False\nif BNB_OK:\n",
        # the optional module itself, or what is set only after its import
        "try:\n    import bitsandbytes as bnb_module\nexcept ImportError:\n    bnb_module = None\n"
        "if bnb_module is not None:\n",
        "try:\n    import bitsandbytes\n    layer_class = bitsandbytes.nn.Linear4bit\nexcept ImportError:\n"
        "    layer_class = None\nif layer_class is not None:\n",
        # a name each function sets anew for its own package: this function's
        "def flash_ok():\n    package_exists = _is_package_available('flash_attn')\n    return package_exists\n\n"
        "def load():\n    package_exists = _is_package_available('bitsandbytes')\n    if package_exists:\n",
        # a module's flag read in a function
        "HAS = is_bnb_available()\n\ndef load():\n    if HAS:\n",
        # an attribute set from a question, read in another method
        "class Q:\n    def __init__(self):\n        self.has_bnb = is_bnb_available()\n\n    def load(self):\n"
        "        if self.has_bnb:\n",
    ])
    def test_a_block_run_only_where_the_package_is_there(self, test_lines):
        indent = _indent_of_last(test_lines)
        source = "import importlib.metadata\nimport importlib.util\n" + test_lines + "".join(
            indent + line + "\n" for line in _GUARDED_USE.splitlines())
        assert _unsupported_lines(source) == set(), source

    @pytest.mark.parametrize("source", [
        # what follows an early return, a raise or a continue of a question asked the other way round
        "def load():\n    if not is_bnb_available():\n        return None\n" + _GUARDED_USE,
        "def load():\n    if not is_bnb_available():\n        raise RuntimeError('no bnb')\n" + _GUARDED_USE,
        "def load(names):\n    for name in names:\n        if not is_bnb_available():\n            continue\n"
        + "".join("    " + line + "\n" for line in _GUARDED_USE.splitlines()),
    ])
    def test_the_rest_of_a_block_after_leaving_where_it_is_not(self, source):
        assert _unsupported_lines("import importlib.metadata\n" + source) == set(), source

    def test_a_conditional_expression_and_an_and_chain(self):
        source = ("import importlib.metadata\n"
                  "V = importlib.metadata.version('bitsandbytes') if is_bnb_available() else None\n"
                  "W = is_bnb_available() and importlib.metadata.version('bitsandbytes')\n"
                  "X = not is_bnb_available() or importlib.metadata.version('bitsandbytes')\n"
                  "Y = None if not is_bnb_available() else importlib.metadata.version('bitsandbytes')\n")
        assert _unsupported_lines(source) == set()

    def test_a_version_probe_in_a_try_that_catches_its_error(self):
        source = ("import importlib.metadata\ntry:\n    V = importlib.metadata.version('bitsandbytes')\n"
                  "except importlib.metadata.PackageNotFoundError:\n    V = None\n")
        assert _unsupported_lines(source) == set()
        uncaught = source.replace("importlib.metadata.PackageNotFoundError", "KeyError")
        assert _unsupported_lines(uncaught) == {3}

    @pytest.mark.parametrize("test_lines", [
        "if True:\n",  # nothing asked
        "if not is_bnb_available():\n",  # where it is NOT there
        "if args.use_bnb:\n",  # an option that names it
        "if is_flash_attn_available():\n",  # another package
        # a variable that two different questions set: which one made it true is unknown
        "if a:\n    HAS = is_bnb_available()\nelse:\n    HAS = is_flash_attn_available()\nif HAS:\n",
        "HAS = not is_bnb_available()\nif HAS:\n",  # set the other way round
        "HAS = is_bnb_available()\nif HAS is not None:\n",  # a test's answer is never None
        # the name set for this package in another function, for another one in this function
        "def bnb_ok():\n    package_exists = _is_package_available('bitsandbytes')\n    return package_exists\n\n"
        "def load():\n    package_exists = _is_package_available('flash_attn')\n    if package_exists:\n",
        "try:\n    import bitsandbytes\nexcept KeyError:\n    pass\nif True:\n",  # a try that catches no failed import
    ])
    def test_every_other_block_keeps_both_rows(self, test_lines):
        indent = _indent_of_last(test_lines) + "    "
        source = "import importlib.metadata\n" + test_lines + "".join(
            indent + line.strip() + "\n" for line in _GUARDED_USE.splitlines())
        lines = len(source.splitlines())
        assert _unsupported_lines(source) >= {lines - 1, lines}, source


def test_a_file_this_python_cannot_read_whole_is_judged_alike(newer_syntax):
    newer = newer_syntax
    source = ("from peft.import_utils import is_bnb_available\n\ndef q(w):\n    if is_bnb_available():\n"
              "        import bitsandbytes as bnb\n        return bnb.nn.Int8Params(w)\n")
    whole_unsupported, whole_notes = _rows(source)
    unsupported, notes = _rows(newer + source)
    assert [(line - 1, api) for line, api in unsupported if api != "syntax this Python cannot parse"] == whole_unsupported
    assert [(line - 1, api) for line, api, _ in notes] == [(line, api) for line, api, _ in whole_notes] != []
