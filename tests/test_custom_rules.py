"""-r/--rule FILE: the user's rules in the incumbent's JSON schema, checked before anything is
written, applied before the built-in rules, reported and repeatable."""
import json

import pytest

from gpu2npu.knowledge import apidata
from gpu2npu.migration.pipeline import migrate_source
from gpu2npu.records.rule_file import RuleFileError, from_data
from gpu2npu.modes import rules_for
from gpu2npu.rules import Options
from helpers import read_csv, run_cli, tree_files, unexplained_differences

API = apidata.load("2.1.0")


def migrated(source: str, rules: dict):
    options = Options(api=API, custom_rules=from_data({"rules": rules}))
    result = migrate_source(source.encode(), "example.py", options, rules_for(options))
    output = (result.output or source.encode()).decode()
    again = migrate_source(output.encode(), "example.py", options, rules_for(options))
    assert again.output is None and not again.changes, "migrating the result again must change nothing"
    return output, result


# -- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("document, words", [
    ([], ["top level", "object"]),
    ({"rule": {}}, ["unknown key 'rule'", "top level"]),
    ({}, ["missing key \"rules\""]),
    ({"rules": []}, ['"rules" must be an object']),
    ({"rules": {"ArgModifyRule": []}}, ["unknown rule kind 'ArgModifyRule'", "ArgsModifyRule"]),
    ({"rules": {"FuncNameModifyRule": {"old_name": "a", "new_name": "b"}}}, ["FuncNameModifyRule must be a list"]),
    ({"rules": {"FuncNameModifyRule": ["a"]}}, ["FuncNameModifyRule[0] must be an object"]),
    ({"rules": {"FuncNameModifyRule": [{"old_name": "a"}]}}, ["FuncNameModifyRule[0]", "missing field 'new_name'"]),
    ({"rules": {"FuncNameModifyRule": [{"old_name": "a", "new_name": "b"}, {"old_name": "a", "new_name": "b",
                                                                            "replace_module": True}]}},
     ["FuncNameModifyRule[1]", "unknown field 'replace_module'"]),
    ({"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": "0", "arg_new": "1"}]}},
     ["ArgsModifyRule[0]", "field 'arg_idx'", "whole number", '"0"']),
    ({"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": True, "arg_new": "1"}]}}, ["field 'arg_idx'"]),
    ({"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_new": "1"}]}}, ["ArgsModifyRule[0]", "'arg_idx'",
                                                                          "'arg_keyword'"]),
    ({"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "1 +"}]}},
     ["field 'arg_new'", "Python expression"]),
    ({"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 1, "arg_new": ""}]}},
     ["ArgsModifyRule[0]", "deleted by keyword only"]),
    ({"rules": {"ArgsModifyRule": [{"func_name": "f(", "arg_idx": 0, "arg_new": "1"}]}}, ["field 'func_name'"]),
    ({"rules": {"ModuleNameModifyRule": [{"old_name": "a.b", "new_name": "c", "parent_module": "x"}]}},
     ["ModuleNameModifyRule[0]", "field 'old_name'", "Python name"]),
    ({"rules": {"ModuleNameModifyRule": [{"old_name": "a", "new_name": "c"}]}}, ["missing field 'parent_module'"]),
])
def test_invalid_documents_are_named_precisely(document, words):
    with pytest.raises(RuleFileError) as raised:
        from_data(document)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize("content, words", [
    ('{"rules": {"ArgsModifyRule": [}}', ["not valid JSON", "line 1"]),
    ('{"rules": {}, "rules": {}}', ["'rules' appears twice"]),
    (b"\xff\xfe{}", ["not UTF-8"]),
])
def test_unreadable_files_are_named(tmp_path, content, words):
    rules = tmp_path / "rules.json"
    rules.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = run_cli("-i", str(_project(tmp_path)), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-r", str(rules))
    assert result.exit_code == 2
    assert f"rule file {rules}" in result.output
    for word in words:
        assert word in result.output
    assert not (tmp_path / "out").exists()


def test_unknown_rule_kind_exits_2_and_writes_nothing(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": {"ClassNameModifyRule": [{"old_name": "A", "new_name": "B"}]}}))
    out = tmp_path / "out"
    result = run_cli("-i", str(_project(tmp_path)), "-o", str(out), "-v", "2.1.0", "-r", str(rules))
    assert result.exit_code == 2
    assert "ClassNameModifyRule" in result.output and str(rules) in result.output
    assert not out.exists()


def test_missing_rule_file_exits_2(tmp_path):
    result = run_cli("-i", str(_project(tmp_path)), "-o", str(tmp_path / "out"), "-v", "2.1.0",
                     "-r", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and "no such file" in result.output
    assert not (tmp_path / "out").exists()


# -- each kind -------------------------------------------------------------------------------

def test_args_by_position_and_by_keyword():
    rules = {"ArgsModifyRule": [{"func_name": "torch.load", "arg_idx": 1, "arg_keyword": "map_location",
                                 "arg_new": "'cpu'"}]}
    source = ("import torch as th\na = th.load(p, 'cuda:0')\nb = th.load(p, map_location=dev, weights_only=True)\n"
              "c = th.load(p)\nd = th.load(p, *rest)\n")
    output, result = migrated(source, rules)
    assert output == ("import torch as th\na = th.load(p, 'cpu')\n"
                      "b = th.load(p, map_location='cpu', weights_only=True)\nc = th.load(p)\nd = th.load(p, *rest)\n")
    assert [(c.start_line, c.rule) for c in result.changes] == [(2, "NPU701"), (3, "NPU701")]
    assert "change argument at position 1 of torch.load to 'cpu' (-r ArgsModifyRule[0])" in result.changes[0].message
    assert "argument map_location" in result.changes[1].message


def test_position_counts_positional_arguments_only():
    rules = {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 1, "arg_new": "2"}]}
    output, _ = migrated("f(a, b=1)\nf(a, 9, b=1)\n", rules)
    assert output == "f(a, b=1)\nf(a, 2, b=1)\n"


def test_deleting_a_keyword_argument_keeps_the_call_tidy():
    rules = {"ArgsModifyRule": [{"func_name": "torch.profiler.profile", "arg_keyword": "experimental_config",
                                 "arg_new": ""}]}
    source = "import torch\np = torch.profiler.profile(activities=a, experimental_config=c)\n"
    output, result = migrated(source, rules)
    assert "profile(activities=a)" in output
    assert any(c.operation.value == "MODIFY" and "delete argument experimental_config" in c.message
               for c in result.changes)


def test_function_names_resolve_through_imports():
    rules = {"FuncNameModifyRule": [{"old_name": "torch.foo", "new_name": "bar"}]}
    output, _ = migrated("import torch as th\nfrom torch import foo\nx = th.foo(1)\ny = foo(2)\nz = other.foo(3)\n",
                         rules)
    # th.foo renamed in place; the imported name becomes torch.bar (torch imported for it); the
    # method of some other object is not torch.foo
    assert output == ("import torch as th\nfrom torch import foo\nimport torch\nx = th.bar(1)\ny = torch.bar(2)\n"
                      "z = other.foo(3)\n")


def test_function_renamed_into_cuda_is_then_migrated_by_the_built_in_rules():
    rules = {"FuncNameModifyRule": [{"old_name": "mylib.sync", "new_name": "torch.cuda.synchronize"}]}
    output, result = migrated("import torch\nimport mylib\nmylib.sync()\n", rules)
    assert output == "import torch\nimport torch_npu\nimport mylib\ntorch_npu.npu.synchronize()\n"
    assert [c.rule for c in result.changes if c.start_line == 3] == ["NPU702", "NPU113"]


def test_module_names():
    rules = {"ModuleNameModifyRule": [{"old_name": "amp", "new_name": "amp_npu", "parent_module": "apex"}]}
    source = "import apex\nfrom apex.amp import scale_loss\nfrom apex import amp\nm = apex.amp.initialize(m)\n"
    output, _ = migrated(source, rules)
    assert output == ("import apex\nfrom apex.amp_npu import scale_loss\nfrom apex import amp_npu as amp\n"
                      "m = apex.amp_npu.initialize(m)\n")


def test_custom_rules_alone_make_a_file_worth_reading():
    """A file with no CUDA in it is still read when a custom rule names one of its calls."""
    rules = {"FuncNameModifyRule": [{"old_name": "load_cfg", "new_name": "load_config"}]}
    output, _ = migrated("cfg = load_cfg('a.yaml')\n", rules)
    assert output == "cfg = load_config('a.yaml')\n"


# -- a whole run -----------------------------------------------------------------------------

def _project(tmp_path):
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "train.py").write_text(
        '"""Trainer."""\nimport torch as th\nfrom mylib import ops\n\n'
        "model = ops.build().cuda()\nstate = th.load('w.pt', map_location='cuda:0')\nops.fused_step(model)\n"
    )
    return project


def test_run_reports_custom_rules_with_the_built_in_ones_and_repeats_cleanly(tmp_path):
    project = _project(tmp_path)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": {
        "ArgsModifyRule": [{"func_name": "torch.load", "arg_keyword": "map_location", "arg_new": "'cpu'"}],
        "FuncNameModifyRule": [{"old_name": "mylib.ops.fused_step", "new_name": "npu_ops.step"}],
    }}))
    result = run_cli("-i", str(project), "-o", str(tmp_path / "out"), "-v", "2.1.0", "-r", str(rules))
    assert result.exit_code == 0, result.output
    target = tmp_path / "out" / "proj_msft"
    after = (target / "train.py").read_text()
    assert after == ('"""Trainer."""\nimport torch as th\nimport torch_npu\nfrom mylib import ops\nimport npu_ops\n\n'
                     "model = ops.build().npu()\nstate = th.load('w.pt', map_location='cpu')\nnpu_ops.step(model)\n")
    rows = read_csv(target / "change_list.csv")
    assert {r["Rule"] for r in rows} == {"NPU001", "NPU701", "NPU702", "NPU102"}
    assert unexplained_differences((project / "train.py").read_bytes(), after.encode(), rows) == []
    assert "NPU701" in result.output  # the per-rule summary names the custom rules too
    # migrating the output again with the same rules changes nothing
    for name in tree_files(target):
        if name != "train.py":
            (target / name).unlink()
    again = run_cli("-i", str(target), "-o", str(tmp_path / "again"), "-v", "2.1.0", "-r", str(rules))
    assert again.exit_code == 0
    assert read_csv(tmp_path / "again" / "proj_msft_msft" / "change_list.csv") == []


def test_rules_and_explain_list_the_custom_kinds():
    listing = run_cli("rules").output
    for code, kind in (("NPU701", "ArgsModifyRule"), ("NPU702", "FuncNameModifyRule"),
                       ("NPU703", "ModuleNameModifyRule")):
        assert code in listing and kind in listing
    explained = run_cli("explain", "NPU702").output
    assert "rules.json:" in explained and '"FuncNameModifyRule"' in explained
