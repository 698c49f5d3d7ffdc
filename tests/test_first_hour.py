"""What a new user reads is true and complete: every code a report can carry is documented,
and the text speaks of real things (through the console script, as a user meets it)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu2npu import apidata
from gpu2npu.affinity import find_affinity
from gpu2npu.discover import Kind
from gpu2npu.report_codes import REPORT_CODES
from gpu2npu.rules import Options
from gpu2npu.sources import ALL_RULES_BY_CODE, migrate_file
from helpers import ROOT

GPU2NPU = str(Path(sys.executable).parent / "gpu2npu")
CODE = re.compile(r"^NPU\d{3}$")


def gpu2npu(*args):
    return subprocess.run([GPU2NPU, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def emitted_codes():
    """Every code string the package's source holds: what reports, logs, check and SARIF can carry."""
    codes = set(ALL_RULES_BY_CODE)
    for path in (ROOT / "src" / "gpu2npu").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value):
                codes.add(node.value)
    return codes


def test_every_code_is_listed_and_explained():
    codes = emitted_codes()
    assert {"NPU900", "NPU951", "NPU961", "NPU101", "NPU851"} <= codes
    listed = gpu2npu("rules")
    assert listed.returncode == 0
    shown = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
    assert codes - shown == set()
    for code in sorted(codes):
        explained = gpu2npu("explain", code)
        assert explained.returncode == 0, (code, explained.stderr)
        assert "Example 1" in explained.stdout, code


@pytest.mark.parametrize("code", sorted(REPORT_CODES))
def test_report_code_examples_produce_their_rows(code):
    api = apidata.load("2.1.0")
    report = REPORT_CODES[code]
    assert report.examples
    for source, name, _ in report.examples:
        if report.kind == "advice":
            rows = find_affinity(ast.parse(source), "example.py", api)
        else:
            rows = migrate_file(Kind.PYTHON, source.encode(), "example.py", Options(api=api)).findings
        assert (code, name) in {(row.rule, row.api) for row in rows}


def test_no_internal_labels_in_what_users_read():
    texts = [gpu2npu("--help").stdout, gpu2npu("rules").stdout,
             (ROOT / "README.md").read_text(encoding="utf-8")]
    for command in ("distributed", "check", "analyse", "dryrun", "explain", "rules"):
        texts.append(gpu2npu(command, "--help").stdout)
    for code in ALL_RULES_BY_CODE:
        texts.append(gpu2npu("explain", code).stdout)
    for text in texts:
        assert not re.search(r"seed\s*0\d\d", text, re.IGNORECASE)
    for path in (ROOT / "src" / "gpu2npu").rglob("*.py"):
        assert not re.search(r"seed\s*0\d\d", path.read_text(encoding="utf-8"), re.IGNORECASE), path
