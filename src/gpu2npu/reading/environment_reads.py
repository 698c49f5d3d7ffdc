"""The environment variables that the project's own Python reads where it sets none of them
(`assert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1"` in a tensor-parallel layer, which
its launchers and tests set): a setting of CUDA's or NCCL's that has no effect on Ascend still
has one on that code, and stays where it is set, noted instead of reported
(rules.environment_variables, script_rules.cuda_tools, script_rules.nccl_env)."""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, Iterable, Tuple

# A read of a variable by its name: os.environ.get("X"), os.getenv("X"), os.environ["X"] (not
# assigned to), "X" in os.environ.
_READ = re.compile(r"""(?:environ\.get|getenv)\(\s*["']([A-Z][A-Z0-9_]*)["']"""
                   r"""|environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\](?!\s*(?:=(?!=)|[-+*/|&]=))"""
                   r"""|["']([A-Z][A-Z0-9_]*)["']\s+(?:not\s+)?in\s+(?:os\.)?environ\b""")
# A setting of one: os.environ["X"] = ..., os.environ.setdefault("X", ...), os.putenv("X", ...),
# os.environ.update(X=...), dict(os.environ, X=...), {"X": ...} handed on as an environment.
_WRITE = re.compile(r"""environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]\s*(?:=(?!=)|[-+*/|&]=)"""
                    r"""|(?:setdefault|putenv)\(\s*["']([A-Z][A-Z0-9_]*)["']"""
                    r"""|["']([A-Z][A-Z0-9_]*)["']\s*:|[(,]\s*([A-Z][A-Z0-9_]*)\s*=(?!=)""")


def environment_reads_in(text: str) -> FrozenSet[str]:
    """The variables `text` reads by name and sets nowhere: what it reads of its environment as
    the program's own setting (a file that reads what it also sets adjusts a setting it hands on:
    `if os.getenv("NCCL_P2P_DISABLE") is None: os.environ["NCCL_P2P_DISABLE"] = "1"`)."""
    if "environ" not in text and "getenv" not in text:
        return frozenset()
    read = {next(group for group in match.groups() if group) for match in _READ.finditer(text)}
    if not read:
        return frozenset()
    written = {next(group for group in match.groups() if group) for match in _WRITE.finditer(text)}
    return frozenset(read - written)


def project_environment_reads(read_by_file: Iterable[Tuple[str, FrozenSet[str]]]) -> Tuple[Tuple[str, str], ...]:
    """(variable, the first file in path order that reads it and sets it nowhere), sorted."""
    first: Dict[str, str] = {}
    for relative, names in sorted(read_by_file):
        for name in names:
            first.setdefault(name, relative)
    return tuple(sorted(first.items()))
