"""Start-up: what is not needed is not imported.  libcst and the rules are imported only where a
file is migrated; `--help`, `--version` and a re-run whose files all come back from the cache
(a migration or a check) do without them, and say exactly what they said with them.  Where
libcst is needed, a module of it that only some rules need in some files is not imported before
them (libcst.matchers alone costs a tenth of a second)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from gpu2npu.migration import cache
from gpu2npu.reports import catalogue

from helpers import FIXTURES

# (no setup.py: dependency files are migrated on every run, setup.py through libcst; writes a package)
PROJECT = FIXTURES / "flash_attn_patch"

# The console script, run by a probe that says on its last line of stderr whether libcst was
# imported by the time the command ended.
PROBE = """
import runpy, sys
sys.argv = ["gpu2npu", *sys.argv[1:]]
try:
    runpy.run_module("gpu2npu", run_name="__main__", alter_sys=True)
    status = 0
except SystemExit as end:
    status = end.code
sys.stderr.write("\\nlibcst imported: %s\\n" % ("libcst" in sys.modules))
sys.exit(status)
"""


def _console(*args: str):
    process = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300,
                             stdin=subprocess.DEVNULL)
    stderr, _, probe = process.stderr.rpartition("libcst imported: ")
    return process.returncode, process.stdout, stderr, probe.strip() == "True"


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("check", "--help")])
def test_help_and_version_do_without_libcst(args):
    status, out, _, imported = _console(*args)
    assert status == 0 and out and not imported


def test_the_rules_start_without_libcst_matchers():
    code = "import sys, gpu2npu.migration.sources; print('libcst' in sys.modules, 'libcst.matchers' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "False"]


def _log_rule_lines(target):
    log = (target / "msFmkTranspltlog.txt").read_text()
    return [re.sub(r"^.*?\[\w+\] ", "", line) for line in log.splitlines() if re.search(r"rule NPU\d+ \(|wrote \w+/", line)]


def test_a_rerun_served_by_the_cache_does_without_libcst_and_says_the_same(tmp_path):
    command = ("-i", str(PROJECT), "-o", str(tmp_path / "out"), "-v", "2.1.0", "--force",
               "--cache-dir", str(tmp_path / "cache"))
    cold = _console(*command)
    target = tmp_path / "out" / f"{PROJECT.name}_msft"
    cold_log = _log_rule_lines(target)
    warm = _console(*command)
    assert cold[3], "the first run migrates: it needs libcst (else this test proves nothing)"
    assert not warm[3]
    assert warm[:3] == cold[:3]  # exit status, console (rule titles included), warnings
    assert "NPU" in cold[1] and cold_log and _log_rule_lines(target) == cold_log  # rule class names in the log


def test_a_check_served_by_the_cache_does_without_libcst_and_says_the_same(tmp_path):
    command = ("check", str(PROJECT), "-v", "2.1.0", "--format", "sarif", "--cache-dir", str(tmp_path / "cache"))
    cold = _console(*command)
    warm = _console(*command)
    assert cold[3] and not warm[3]
    assert warm[:3] == cold[:3] and cold[0] == 1
    rules = json.loads(cold[1])["runs"][0]["tool"]["driver"]["rules"]
    assert len(rules) > 20 and all(rule["shortDescription"]["text"] for rule in rules)


def test_the_kept_catalogue_is_the_rules_own_and_follows_the_code(tmp_path, monkeypatch):
    results = cache.ResultCache(tmp_path, salt="s")
    built = catalogue.rule_catalogue(results)
    assert built == catalogue.from_rules()
    from gpu2npu.rules import REROUTING_RULES
    from gpu2npu.migration.sources import ALL_RULES_BY_CODE

    assert list(built) == list(ALL_RULES_BY_CODE)
    assert {code: rule.package.name for code, rule in built.items() if rule.package} == \
        {rule.code: rule.PACKAGE for rule in REROUTING_RULES}
    assert built["NPU101"].name == ALL_RULES_BY_CODE["NPU101"].__name__

    # read back, not built again, while the code is the same; built again when it changed
    monkeypatch.setattr(catalogue, "from_rules", lambda: pytest.fail("built although kept"))
    assert catalogue.rule_catalogue(results) == built
    monkeypatch.setattr(cache, "code_fingerprint", lambda: "another build of the tool")
    monkeypatch.setattr(catalogue, "from_rules", lambda: {"NPU999": "rebuilt"})
    assert catalogue.rule_catalogue(results) == {"NPU999": "rebuilt"}
    results.close()
