"""Release numbers against requirement specifiers (`>=2.1,<2.3`, `==2.1.*`, `~=4.40`): what the
dependency rules, the torch pin and the transformers pin ask, read without packaging."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

# (PEP 440 reads a leading "v" as nothing: `transformers>=v4.51.0` asks for 4.51.0 on)
_VERSION = re.compile(r"[vV]?(\d+(?:\.\d+)*)")
_CLAUSE = re.compile(r"\s*(===|==|!=|~=|<=|>=|<|>)\s*([^\s,;]+)\s*")


def release_numbers(text: str) -> Tuple[int, ...]:
    """(2, 4, 0) for "2.4.0+cu121": the numbers a release starts with; () where it starts with none."""
    match = _VERSION.match(text)
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def satisfies(version: str, spec: str) -> Optional[bool]:
    """Whether `version` meets every clause of `spec` (local versions and `.*` read loosely);
    None when a clause cannot be read."""
    wanted = release_numbers(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            return None
        operator, text = match.groups()
        if text.endswith(".*"):
            prefix = release_numbers(text[:-2])
            same = wanted[:len(prefix)] == prefix
            if (operator == "==" and not same) or (operator == "!=" and same):
                return False
            continue
        other = release_numbers(text.split("+")[0])
        if not other:
            return None
        width = max(len(wanted), len(other))
        left, right = wanted + (0,) * (width - len(wanted)), other + (0,) * (width - len(other))
        ok = {"==": left == right, "===": left == right, "!=": left != right, "<=": left <= right, ">=": left >= right,
              "<": left < right, ">": left > right,
              "~=": left >= right and left[:len(other) - 1] == right[:len(other) - 1]}[operator]
        if not ok:
            return False
    return True


def allowed_releases(spec: Optional[str], tried: Tuple[str, ...]) -> List[str]:
    """The releases of `tried`, and those `spec` names itself, that `spec` allows ([] without one):
    what a library's requirement can install, tried on the releases around what decides a verdict."""
    if spec is None:
        return []
    named = tuple(re.findall(r"\d+(?:\.\d+){1,2}", spec))
    return [version for version in tried + named if satisfies(version, spec)]


def major_minor(version: str) -> Tuple[str, ...]:
    """("2", "1") for "2.1.0+cpu": what decides whether two torch builds take the same code."""
    return tuple(version.split("+")[0].split(".")[:2])
