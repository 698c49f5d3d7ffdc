"""What the imports of a file bind, read through its scopes: the one resolver of names for everything
that reads the file's `ast`."""
from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from ..scopes import Scopes, import_bindings
from .reading import NOT_PARSABLE, ast_of, nodes_by_class

class ImportTable:
    """What the imports of one file bind: the one resolver of names for everything that reads
    the file's `ast` (the scan, the API rows, the hazards, the advice).  `import a.b` binds a,
    `import a.b as x` binds x to a.b, `from a import b as y` binds y to a.b; a relative import
    binds its name to a path starting with its dots, which never resolves to an installed
    package.  A name is read through Python's scopes (`scopes.Scopes`): a parameter, local or
    loop variable of an imported name is not the import, and an import inside a function binds
    its name there only."""

    def __init__(self, nodes, tree: Optional[ast.Module] = None, groups=None, data: Optional[bytes] = None) -> None:
        self.bound: Dict[str, Set[str]] = {}  # local name -> what the imports anywhere bind it to
        for node in nodes:
            for name, target in import_bindings(node):
                self.bound.setdefault(name, set()).add(target)
        # local name -> the installed modules and names it may stand for (relative imports left out)
        self.aliases: Dict[str, Set[str]] = {}
        for name, targets in self.bound.items():
            absolute = {target for target in targets if not target.startswith(".")}
            if absolute:
                self.aliases[name] = absolute
        # what the names whose meaning depends on the place stand for where they are read
        self.scopes: Optional[Scopes] = None
        if tree is not None and self.bound:
            self.scopes = Scopes.of(tree, groups if groups is not None else nodes_by_class(tree), set(self.bound), data)

    def _here(self, name: ast.Name, likely: bool, absolute: bool) -> Optional[Set[str]]:
        """What the imports bind a Name whose meaning depends on the place to where it stands: the
        installed modules and names (`absolute`) or relative paths too; `likely`: a local named as
        its module (`def pick(torch)`) is that module, as the reports read it."""
        meaning = self.scopes.of_node(name, likely)
        if meaning is None:  # (a node not in the tree)
            return (self.aliases if absolute else self.bound).get(name.id)
        return {target for target in meaning if not target.startswith(".")} if absolute else meaning

    def qualified(self, node: ast.AST) -> Set[str]:
        """The qualified names a Name/Attribute chain may stand for (the imports its root stands for)."""
        # (asked of every name and attribute of a file: the root is looked up before any text is made)
        parts = []
        while node.__class__ is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if node.__class__ is not ast.Name:
            return set()
        scopes = self.scopes
        if scopes is not None and node.id in scopes.names:
            targets = self._here(node, likely=True, absolute=True)
        else:
            targets = self.aliases.get(node.id)
        if not targets:
            return set()
        if not parts:
            return set(targets)
        rest = ".".join(reversed(parts))
        return {f"{target}.{rest}" for target in targets}

    def is_imported(self, node: ast.AST) -> bool:
        """Whether an import (relative ones too) binds the root of a Name/Attribute chain: a
        module or a name of one, not a value of the file's own (a local variable, `self`)."""
        while node.__class__ is ast.Attribute:
            node = node.value
        if node.__class__ is not ast.Name:
            return False
        scopes = self.scopes
        if scopes is not None and node.id in scopes.names:
            return bool(self._here(node, likely=False, absolute=False))
        return node.id in self.bound

    def imports(self, package: str) -> bool:
        """Whether the file imports `package` or something in it."""
        return any(target == package or target.startswith(package + ".")
                   for targets in self.aliases.values() for target in targets)


def scopes_of_code(code: str) -> Optional[Scopes]:
    """The scopes of a text the scan has not read (the one libcst was given, after the custom rules
    or cut down; the migrated output), or None where it needs none or `ast` cannot read it."""
    try:  # (the text itself: a coding line must not decode it again)
        tree = ast_of(code)
    except NOT_PARSABLE:
        return None
    return Scopes.of(tree, nodes_by_class(tree), text=code)
