"""What `third_party` needs of a module's tree to find its hits, kept with the module's shape so
that a library read from the cache is not parsed again: the lines of its imports (a renamed import
is not a hit: the calls through it are), the imports it makes optional (inside a `try` that
catches their ImportError: calls of them run only where the package is installed, which on an NPU
it is not) and its calls of CUDA-only packages (flash_attn, xformers, apex, ...).

Calls of the library's own compiled operators depend on what the whole library registers, so
they are found from the tree again, and only in a library that has such operators
(third_party._custom_calls).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, List, Set, Tuple

from ..reading.package_tests import catches_failed_import
from ..reading.scan import FileScan
from ..knowledge.tips import cuda_only_package


@dataclass(frozen=True)
class HitFacts:
    import_lines: FrozenSet[int]
    optional: FrozenSet[str]  # qualified names imported where a missing package is caught
    package_calls: Tuple[Tuple[int, str, str], ...]  # (line, qualified name, CUDA-only package)


def hit_facts_of(tree: ast.Module) -> HitFacts:
    scan = FileScan(tree)
    package_calls = []
    for call in scan.calls:
        for name in sorted(scan.qualified(call.func)):
            package = cuda_only_package(name)
            if package is not None:
                package_calls.append((call.func.lineno, name, package))
                break
    # (the scan has grouped the tree's nodes by class: no other walk of it)
    return HitFacts(frozenset(_import_lines(scan.nodes_of_class(ast.Import, ast.ImportFrom))),
                    frozenset(_optional_imports(scan.nodes_of_class(ast.Try))), tuple(package_calls))


def _import_lines(imports: List[ast.AST]) -> Set[int]:
    lines: Set[int] = set()
    for node in imports:
        lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _optional_imports(tries: List[ast.AST]) -> Set[str]:
    """Qualified names a module imports inside a `try` that catches their ImportError: the
    library runs without them (`try: from apex... import fused_rms_norm; has_apex = True`), so
    calling them happens only where the package is installed, which on an NPU it is not."""
    names: Set[str] = set()
    for node in tries:
        if not catches_failed_import(node):
            continue
        for statement in node.body:
            if isinstance(statement, ast.Import):
                names.update(alias.name for alias in statement.names)
            elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                names.update(f"{statement.module}.{alias.name}" for alias in statement.names)
    return names
