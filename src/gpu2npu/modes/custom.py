"""`-r RULE_FILE`: the user's own rules (the incumbent's JSON format), run before the built-in
ones in a pass of their own (rules/custom.py)."""
from __future__ import annotations

from ..records import rule_file
from ..records.usage import UsageError

# The user's rules may read anything of a file: it is migrated whole.
CUTS = False


def active(options) -> bool:
    return options.custom_rules is not None


def settings(request, source):
    """The rules of the rule file, read and checked before anything is written."""
    if request.rule_file is None:
        return None
    try:
        return rule_file.load(request.rule_file)
    except rule_file.RuleFileError as error:
        raise UsageError(str(error)) from None


def place(rules, options):
    return rules  # (not among the built-in rules: apply_custom_rules runs them first)


def write(staging, target, options, result, logger):
    return []


def new_files(folder, options):
    return []
