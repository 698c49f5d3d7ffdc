"""The dotted text of a chain of names and attributes (`a.b.c`): below every rule and analysis,
npu_aware's included, which names.py imports."""
from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a chain of Names/Attributes, None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def last_name(node: cst.CSTNode) -> Optional[str]:
    """The last name of a Name or an Attribute (`self._ok`: _ok), None for anything else (the libcst
    twin of scan.reading.last_name)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None
