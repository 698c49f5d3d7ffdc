"""What a file imports of the CUDA-only packages that gpu2npu points at packages it generates
(knowledge.tips.REROUTED_PACKAGES), read from its text for the whole project: a probe of one of
them (`try: import flash_attn` in `is_flash_v2_installed()`) answers for every file that asks it,
so it is pointed at the generated package only where no file of the project keeps an import the
generated package cannot serve (`from flash_attn.layers.rotary import RotaryEmbedding`), which
the probe would otherwise let run and fail (rules.reroute.ReroutePlan)."""
from __future__ import annotations

import re
from typing import FrozenSet, Tuple

from ..knowledge.tips import REROUTED_PACKAGES

# `from flash_attn.bert_padding import (pad_input,\n unpad_input)`, `import flash_attn.layers.rotary`
_ROOTS = "|".join(re.escape(root) for root in REROUTED_PACKAGES)
_FROM = re.compile(r"^[ \t]*from[ \t]+((?:%s)(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|(?:[^\n#;\\]|\\\r?\n)+)"
                   % _ROOTS, re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)
# what begins a line that imports a package, up to its name
_IMPORT_BEFORE = re.compile(r"[ \t]*(?:from[ \t]+|import[ \t](?:[^#;]*[ \t,])?)$")
_NAME = re.compile(r"([\w.]+)(?:\s+as\s+\w+)?")

PackageImports = Tuple[Tuple[str, Tuple[str, ...]], ...]
# the names a file imports from any module (`from pkg.attention import is_flash_v2_installed`) or calls
# as an attribute (`attention.is_flash_v2_installed()`): the project's functions it may ask
_ASKED = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(\([^)]*\)|(?:[^\n#;\\]|\\\r?\n)+)|\.(\w+)\(",
                    re.MULTILINE)


def package_imports_in(text: str) -> PackageImports:
    """(module, the names imported from it) of each `from` import of a REROUTED_PACKAGES package in
    `text`, and (module, ()) of each `import` of one of its submodules (`import flash_attn.layers`);
    sorted, each once.  A plain `import flash_attn` names no part: what the file reads of it is its
    own plan's to judge."""
    if not any(root in text for root in REROUTED_PACKAGES) or not _imports_one(text):
        return ()
    found = set()
    for match in _FROM.finditer(text):
        names = tuple(sorted({name.group(1) for name in _NAME.finditer(match.group(2).strip("()"))}))
        found.add((match.group(1), names))
    for match in _IMPORT.finditer(text):
        for name in _NAME.finditer(match.group(1)):
            module = name.group(1)
            if "." in module and module.split(".")[0] in REROUTED_PACKAGES:
                found.add((module, ()))
    return tuple(sorted(found))


def _imports_one(text: str) -> bool:
    """Whether an import statement of `text` names one of the packages: looked for from their
    names, which few lines hold (the expressions above, anchored at line starts, try every line)."""
    for root in REROUTED_PACKAGES:
        found = text.find(root)
        while found >= 0:
            line_start = text.rfind("\n", 0, found) + 1
            if _IMPORT_BEFORE.match(text, line_start, found):
                return True
            found = text.find(root, found + len(root))
    return False


def names_asked_in(text: str) -> FrozenSet[str]:
    """The names `text` imports from any module or calls as an attribute (_ASKED): where the file
    keeps an import of a package, a probe of the package that another file defines in a function of
    one of these names answers for this file's code too."""
    names = set()
    for match in _ASKED.finditer(text):
        if match.group(2):
            names.add(match.group(2))
        else:
            names.update(name.group(1).rsplit(".", 1)[-1] for name in _NAME.finditer(match.group(1).strip("()")))
    return frozenset(names)
