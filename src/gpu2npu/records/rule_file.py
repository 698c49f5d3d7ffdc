"""-r/--rule FILE: the user's own rules, in the incumbent's JSON schema.

    {"rules": {
        "ArgsModifyRule":       [{"func_name": "torch.load", "arg_keyword": "map_location", "arg_new": "'cpu'"}],
        "FuncNameModifyRule":   [{"old_name": "torch.foo", "new_name": "bar"}],
        "ModuleNameModifyRule": [{"old_name": "amp", "new_name": "amp2", "parent_module": "torch.cuda"}]}}

The file is read as data (JSON), never executed; `arg_new` is parsed as a Python expression
with libcst to check it, never evaluated.  Everything is checked before anything is written, and
every problem is named by file, rule kind, index and field: any key outside the schema (at any
level), a missing or mistyped field, invalid JSON or an unreadable file is a usage error.
The rules themselves are in rules/custom.py.
"""
from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

MAX_BYTES = 10 * 1024 * 1024  # the incumbent's limit
IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


class RuleFileError(ValueError):
    """The rule file cannot be used; the message names the file, the rule and the field."""


@dataclass(frozen=True)
class ArgsModify:
    """ArgsModifyRule: in calls of `func_name`, the argument at `arg_idx` (among the positional
    arguments) or passed as `arg_keyword` becomes `arg_new`; an empty `arg_new` deletes it."""

    func_name: str
    arg_new: str
    arg_idx: Optional[int] = None
    arg_keyword: Optional[str] = None
    label: str = ""  # "ArgsModifyRule[0]", for messages


@dataclass(frozen=True)
class FuncNameModify:
    """FuncNameModifyRule: calls of `old_name` call `new_name` instead."""

    old_name: str
    new_name: str
    label: str = ""


@dataclass(frozen=True)
class ModuleNameModify:
    """ModuleNameModifyRule: module `old_name` of `parent_module` is called `new_name`."""

    old_name: str
    new_name: str
    parent_module: str
    label: str = ""


@dataclass(frozen=True)
class CustomRules:
    args: Tuple[ArgsModify, ...] = ()
    func_names: Tuple[FuncNameModify, ...] = ()
    module_names: Tuple[ModuleNameModify, ...] = ()

    def to_data(self) -> Dict[str, Any]:
        """The rules as a rule-file document (for `gpu2npu explain`)."""
        def entry(rule, fields):
            return {name: getattr(rule, name) for name in fields if getattr(rule, name) is not None}
        rules: Dict[str, Any] = {}
        if self.args:
            rules["ArgsModifyRule"] = [entry(r, ("func_name", "arg_idx", "arg_keyword", "arg_new")) for r in self.args]
        if self.func_names:
            rules["FuncNameModifyRule"] = [entry(r, ("old_name", "new_name")) for r in self.func_names]
        if self.module_names:
            rules["ModuleNameModifyRule"] = [entry(r, ("old_name", "new_name", "parent_module"))
                                             for r in self.module_names]
        return {"rules": rules}

    def words(self) -> Tuple[str, ...]:
        """Names without which no rule can apply to a file (the last part of each name)."""
        names = [rule.func_name for rule in self.args] + [rule.old_name for rule in self.func_names]
        names += [f"{rule.parent_module}.{rule.old_name}" for rule in self.module_names]
        return tuple(sorted({name.split(".")[-1] for name in names}))


# kind -> (field -> (check, description), required fields)
_TEXT = (lambda value: isinstance(value, str), "a string")
_INDEX = (lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= -1,
          "a whole number >= 0 (-1: not given)")
_NAME = (lambda value: isinstance(value, str) and IDENTIFIER.match(value) is not None and not keyword.iskeyword(value),
         "a Python name such as map_location")
_DOTTED_NAME = (lambda value: isinstance(value, str) and DOTTED.match(value) is not None,
                "a dotted name such as torch.load")

SCHEMA: Dict[str, Tuple[Dict[str, tuple], Tuple[str, ...]]] = {
    "ArgsModifyRule": (
        {"func_name": _DOTTED_NAME, "arg_idx": _INDEX, "arg_keyword": _NAME, "arg_new": _TEXT},
        ("func_name", "arg_new"),
    ),
    "FuncNameModifyRule": ({"old_name": _DOTTED_NAME, "new_name": _DOTTED_NAME}, ("old_name", "new_name")),
    "ModuleNameModifyRule": (
        {"old_name": _NAME, "new_name": _NAME, "parent_module": _DOTTED_NAME},
        ("old_name", "new_name", "parent_module"),
    ),
}
KINDS = tuple(SCHEMA)


def load(path: Path) -> CustomRules:
    """Read and check a rule file; raises RuleFileError with a message naming what is wrong."""
    try:
        if path.is_symlink():
            raise RuleFileError(f"rule file {path}: is a symbolic link; pass the file it points to")
        if not path.is_file():
            raise RuleFileError(f"rule file {path}: no such file")
        if path.stat().st_size > MAX_BYTES:
            raise RuleFileError(f"rule file {path}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
        data = path.read_bytes()
    except OSError as error:
        raise RuleFileError(f"rule file {path}: cannot be read: {error.strerror or error}") from None
    try:
        document = json.loads(data.decode("utf-8-sig"), object_pairs_hook=_no_duplicate_keys)
    except UnicodeDecodeError as error:
        raise RuleFileError(f"rule file {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise RuleFileError(f"rule file {path}: not valid JSON: {error.msg} at line {error.lineno}, "
                            f"column {error.colno}") from None
    except _DuplicateKey as error:
        raise RuleFileError(f"rule file {path}: key {str(error)!r} appears twice in one object") from None
    try:
        return from_data(document)
    except RuleFileError as error:
        raise RuleFileError(f"rule file {path}: {error}") from None


def from_data(document: Any) -> CustomRules:
    """Check a decoded rule document (messages name the rule and field, not the file)."""
    if not isinstance(document, dict):
        raise RuleFileError(f'the top level must be an object {{"rules": {{...}}}}, not {_kind_of(document)}')
    extra = [key for key in document if key != "rules"]
    if extra:
        raise RuleFileError(f"unknown key {extra[0]!r} at the top level: only \"rules\" is allowed")
    if "rules" not in document:
        raise RuleFileError('missing key "rules" at the top level')
    rules = document["rules"]
    if not isinstance(rules, dict):
        raise RuleFileError(f'"rules" must be an object mapping rule kinds to lists, not {_kind_of(rules)}')
    for kind in rules:
        if kind not in SCHEMA:
            raise RuleFileError(f"unknown rule kind {kind!r}: the kinds are {', '.join(KINDS)}")
    parsed: Dict[str, List] = {kind: [] for kind in KINDS}
    for kind, entries in rules.items():
        if not isinstance(entries, list):
            raise RuleFileError(f"{kind} must be a list of rules, not {_kind_of(entries)}")
        for index, entry in enumerate(entries):
            parsed[kind].append(_entry(kind, index, entry))
    return CustomRules(tuple(parsed["ArgsModifyRule"]), tuple(parsed["FuncNameModifyRule"]),
                       tuple(parsed["ModuleNameModifyRule"]))


def _entry(kind: str, index: int, entry: Any):
    label = f"{kind}[{index}]"
    if not isinstance(entry, dict):
        raise RuleFileError(f"{label} must be an object, not {_kind_of(entry)}")
    fields, required = SCHEMA[kind]
    for name in entry:
        if name not in fields:
            raise RuleFileError(f"{label}: unknown field {name!r}; the fields of {kind} are {', '.join(fields)}")
    for name in required:
        if name not in entry:
            raise RuleFileError(f"{label}: missing field {name!r}")
    for name, value in entry.items():
        check, description = fields[name]
        if not check(value):
            raise RuleFileError(f"{label}: field {name!r} must be {description}, not {json.dumps(value)}")
    if kind == "ArgsModifyRule":
        return _args_entry(label, entry)
    if kind == "FuncNameModifyRule":
        return FuncNameModify(entry["old_name"], entry["new_name"], label)
    return ModuleNameModify(entry["old_name"], entry["new_name"], entry["parent_module"], label)


def _args_entry(label: str, entry: Dict[str, Any]) -> ArgsModify:
    index = entry.get("arg_idx", -1)
    index = None if index == -1 else index
    word = entry.get("arg_keyword")
    if index is None and word is None:
        raise RuleFileError(f"{label}: give the argument's position (field 'arg_idx') or keyword (field 'arg_keyword')")
    new = entry["arg_new"]
    if new.strip() == "":
        if index is not None:
            # A second run would delete the argument that moved into that position.
            raise RuleFileError(f"{label}: field 'arg_new' is empty (delete the argument): an argument is deleted "
                                "by keyword only (field 'arg_keyword', no 'arg_idx'), so that migrating twice "
                                "does not delete the next one")
        new = ""
    else:
        import libcst as cst  # (only -r needs it)

        try:
            cst.parse_expression(new)
        except Exception:  # libcst's parser errors: the text is not an expression
            message = f"{label}: field 'arg_new' must be a Python expression, not {json.dumps(new)}"
            raise RuleFileError(message) from None
    return ArgsModify(entry["func_name"], new, index, word, label)


class _DuplicateKey(Exception):
    pass


def _no_duplicate_keys(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def _kind_of(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
