"""What the console, the log and the review page say of each rule (its class name, summary and
description), without importing the rules.

The rules are libcst transformers, and importing them takes longer than the rest of a re-run
whose files all come back from the cache.  So their catalogue is taken from their classes once
per version of gpu2npu's code and kept in the cache beside the results (`ResultCache.derived`,
under the same fingerprint of the code), where such a run reads it back.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from ..migration.cache import ResultCache


@dataclass(frozen=True)
class WrittenPackage:
    """A package that the migration writes into the output for the files a rule changed (the
    rules that point a CUDA-only package's imports at a generated one)."""

    name: str
    files: Tuple[str, ...]  # its files, in gpu2npu/generated/<name>/
    what: str  # what it provides, for the log


@dataclass(frozen=True)
class RuleEntry:
    code: str
    name: str  # the rule's class name
    summary: str
    description: str  # what `gpu2npu explain` says: the class's documentation
    package: Optional[WrittenPackage] = None
    example: str = ""  # its first example, before and after (SARIF's help shows it)
    # A kind of another rule's edit: that rule's code, which named these edits before they had a
    # code of their own (a suppression or baseline entry of it still covers them); "" otherwise.
    recorded_by: str = ""


def from_rules() -> Dict[str, RuleEntry]:
    """The catalogue read off the rules' classes (imports them, and libcst)."""
    from ..rules import REROUTING_RULES
    from ..migration.sources import ALL_RULES_BY_CODE

    packages = {rule.code: WrittenPackage(rule.PACKAGE, tuple(rule.FILES), rule.WHAT) for rule in REROUTING_RULES}
    return {code: RuleEntry(code, rule.__name__, rule.summary, inspect.cleandoc(rule.__doc__ or ""), packages.get(code),
                            _first_example(rule), getattr(rule, "recorded_by", ""))
            for code, rule in ALL_RULES_BY_CODE.items()}


def _first_example(rule) -> str:
    examples = getattr(rule, "examples", ())
    if not examples or not hasattr(examples[0], "before"):
        return ""
    return f"Before:\n{examples[0].before}\nAfter:\n{examples[0].after}"


def rule_catalogue(results: Optional[ResultCache] = None) -> Dict[str, RuleEntry]:
    """Every rule of every kind of file by code, in the order `gpu2npu rules` lists them; read
    back from `results` when they hold it."""
    if results is None:
        return from_rules()
    return results.derived("rule catalogue", from_rules)
