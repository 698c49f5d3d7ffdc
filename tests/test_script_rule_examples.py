"""The launch-script (NPU5xx) and notebook-magic (NPU6xx) rules' documented examples are tests,
as the Python rules' are: the text `gpu2npu explain` prints is what the migration does."""
import dataclasses
import json

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.launch_scripts import migrate_script
from gpu2npu.migration.notebooks import migrate_notebook
from gpu2npu.modes import rules_for
from gpu2npu.rules import RULES_BY_CODE, Options
from gpu2npu.script_rules import SCRIPT_RULES_BY_CODE

from helpers import run_cli

OPTIONS = Options(api=apidata.load("2.1.0"))
RULES = list(SCRIPT_RULES_BY_CODE.values())
EXAMPLES = [pytest.param(rule, example, id=f"{rule.code}-{number}")
            for rule in RULES for number, example in enumerate(rule.examples, 1)]
UNCHANGED = [pytest.param(rule, source, id=f"{rule.code}-unchanged-{number}")
             for rule in RULES for number, source in enumerate(rule.unchanged, 1)]


def one_cell_notebook(source: str) -> bytes:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(notebook, indent=1) + "\n").encode()


def migrated(source: str, path: str, transformers=None):
    """(output text, result): a notebook example is the source of one code cell; `transformers`:
    the requirement the example's project pins."""
    if path.endswith(".ipynb"):
        result = migrate_notebook(one_cell_notebook(source), path, OPTIONS, rules_for(OPTIONS))
        output = source if result.output is None else "".join(json.loads(result.output)["cells"][0]["source"])
        return output, result
    result = migrate_script(source.encode(), path, options=dataclasses.replace(OPTIONS, transformers=transformers))
    return (source if result.output is None else result.output.decode()), result


def test_every_rule_documents_itself():
    assert not set(SCRIPT_RULES_BY_CODE) & set(RULES_BY_CODE)
    for rule in RULES:
        assert rule.code[:4] in ("NPU5", "NPU6") and rule.summary and rule.__doc__, rule
        assert rule.examples, f"{rule.code} has no example"


@pytest.mark.parametrize("rule, example", EXAMPLES)
def test_example(rule, example):
    output, result = migrated(example.before, example.path, example.transformers)
    assert output == example.after
    assert result.status != result.status.FAILED, result.error
    if example.before != example.after:
        assert any(change.rule == rule.code for change in result.changes), "the example does not exercise its rule"
    codes = {rule.code, *rule.finding_kinds}
    reported = {finding.api for finding in result.findings if finding.rule in codes}
    assert reported == set(example.reported)
    again, second = migrated(output, example.path, example.transformers)
    assert again == output and not second.changes, "migrating the result again must change nothing"


@pytest.mark.parametrize("rule, source", UNCHANGED)
def test_unchanged(rule, source):
    path = "example.ipynb" if rule.code.startswith("NPU6") else "train.sh"
    _, result = migrated(source, path)
    assert not [change for change in result.changes if change.rule == rule.code]
    assert not [finding for finding in result.findings if finding.rule in {rule.code, *rule.finding_kinds}]


def test_listed_and_explained_by_the_cli():
    listing = run_cli("rules").output
    assert all(code in listing for code in SCRIPT_RULES_BY_CODE)
    explained = run_cli("explain", "npu502")
    assert explained.exit_code == 0
    assert "watch -n 1 npu-smi info" in explained.output and "reported: nvidia-smi" in explained.output
    assert "(a code cell of a notebook)" in run_cli("explain", "NPU601").output
