"""Every rule's documented examples are tests: the same text `gpu2npu explain` prints."""
import dataclasses

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.modes import rules_for
from gpu2npu.rules import RULES_BY_CODE, Options

from helpers import parses

OPTIONS = Options(api=apidata.load("2.1.0"))

ALL_RULES = list(RULES_BY_CODE.values())
EXAMPLES = [
    pytest.param(rule, example, id=f"{rule.code}-{number}")
    for rule in ALL_RULES
    for number, example in enumerate(rule.examples, 1)
]
UNCHANGED = [
    pytest.param(rule, source, id=f"{rule.code}-unchanged-{number}")
    for rule in ALL_RULES
    for number, source in enumerate(rule.unchanged, 1)
]


def migrated(source: str, distributed=None, specify_device=None, custom_rules=None, modelarts=False, amp_model=None,
             similar=False, transformers=None):
    options = Options(api=OPTIONS.api, distributed=distributed, specify_device=specify_device,
                      custom_rules=custom_rules, modelarts=modelarts, amp_model=amp_model, similar=similar,
                      transformers=transformers)
    result = migrate_source(source.encode(), "example.py", options, rules_for(options))
    return (result.output or source.encode()).decode(), result


def test_every_rule_documents_itself():
    codes = [rule.code for rule in ALL_RULES]
    assert len(codes) == len(set(codes))
    for rule in ALL_RULES:
        assert rule.code and rule.summary and rule.__doc__, rule
        assert rule.examples, f"{rule.code} has no example"
        assert rule.fix_safety in ("safe", "unsafe")


@pytest.mark.parametrize("rule, example", EXAMPLES)
def test_example(rule, example):
    modes = dict(custom_rules=example.custom_rules, modelarts=example.modelarts, amp_model=example.amp_model,
                 similar=example.similar, transformers=example.transformers)
    output, result = migrated(example.before, example.distributed, example.specify_device, **modes)
    assert output == example.after
    assert any(change.rule == rule.code for change in result.changes), "the example does not exercise its rule"
    assert parses(output.encode())
    # On a second run the output's own init_process_group call is the project's.
    settings = example.distributed and dataclasses.replace(example.distributed, project_initialises=True)
    again, second = migrated(output, settings, example.specify_device, **modes)
    assert again == output and not second.changes, "migrating the result again must change nothing"


@pytest.mark.parametrize("rule, source", UNCHANGED)
def test_unchanged(rule, source):
    # each rule's unchanged sources are checked in the mode that enables the rule
    _, result = migrated(source, amp_model="model" if rule.code == "NPU251" else None,
                         similar=rule.code == "NPU252")
    assert not [change for change in result.changes if change.rule == rule.code]
