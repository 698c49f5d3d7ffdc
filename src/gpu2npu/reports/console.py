"""The summary printed at the end of a run (prettytable)."""
from __future__ import annotations

from collections import Counter
from typing import Dict, Sequence

from prettytable import PrettyTable

from ..records.change import Change


def counted(number: int, noun: str) -> str:
    """`1 file`, `3 files`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def report_table(counts: Dict[str, int]) -> str:
    table = PrettyTable(["report", "rows"])
    table.align["report"] = "l"
    table.align["rows"] = "r"
    for name, rows in counts.items():
        table.add_row([name, rows])
    return table.get_string()


def rule_table(changes: Sequence[Change], titles: Dict[str, str]) -> str:
    per_rule = Counter(change.rule for change in changes)
    files_per_rule: Dict[str, set] = {}
    for change in changes:
        files_per_rule.setdefault(change.rule, set()).add(change.file)
    table = PrettyTable(["rule", "what", "files", "changes"])
    table.align["what"] = "l"
    for code in sorted(per_rule):
        table.add_row([code, titles.get(code, ""), len(files_per_rule[code]), per_rule[code]])
    return table.get_string()


def file_table(changes: Sequence[Change], limit: int = 20) -> str:
    per_file = Counter(change.file for change in changes)
    table = PrettyTable(["file", "changes"])
    table.align["file"] = "l"
    for name, count in sorted(per_file.items(), key=lambda item: (-item[1], item[0]))[:limit]:
        table.add_row([name, count])
    if len(per_file) > limit:
        table.add_row([f"... {len(per_file) - limit} more files", ""])
    return table.get_string()
