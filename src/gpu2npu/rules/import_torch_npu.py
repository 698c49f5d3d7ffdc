"""`import torch_npu` once, in every file whose migrated code needs it."""
from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..knowledge.tips import TORCH_FRAMEWORKS
from .base import Example, Rule
from .names import dotted_name
from .placement import after_preamble, line_before, pair_with_originals
from .walk import walk

IMPORT_LINE = "import torch_npu"


def _loaded_packages(small: cst.BaseSmallStatement) -> Set[str]:
    """The top-level packages an import statement loads (`import torch.nn` and `from torch import
    nn` load torch; a relative import loads none)."""
    if isinstance(small, cst.Import):
        return {(dotted_name(a.name) or "").split(".")[0] for a in small.names}
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return {(dotted_name(small.module) or "").split(".")[0]}
    return set()


def _imports_torch(small: cst.BaseSmallStatement) -> bool:
    return "torch" in _loaded_packages(small)


def _is_plain_import(statement: cst.SimpleStatementLine) -> bool:
    """`import torch`, `import torch as th`, `import os, torch`: torch_npu goes right after it.
    (Before a `from torch.x import name` instead, in case torch_npu adds that name.)"""
    return all(isinstance(small, cst.Import) for small in statement.body)


class _Usage(cst.CSTVisitor):
    """The packages some import loads (`loaded`), and whether `name` is bound by an import
    (`bound`: `import torch_npu`, not `from torch_npu.npu import amp`) and used (`used`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loaded: Set[str] = set()
        self.bound = False
        self.used = False
        self.uses = 0

    def visit_Import(self, node: cst.Import) -> bool:
        self.loaded |= _loaded_packages(node)
        self.bound |= _binds(node, self.name)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.loaded |= _loaded_packages(node)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.used = True
            self.uses += 1

    def visit_If(self, node: cst.If) -> bool:
        if _only_for_type_checkers(node.test):  # (its imports never run: they load nothing)
            if node.orelse is not None:
                walk(self, node.orelse)
            return False
        return True


class ImportTorchNpu(Rule):
    """torch_npu must be imported for the NPU device, `Tensor.npu`, the "hccl" backend and
    `torch_npu.npu` to exist.  The import goes right after the file's first `import torch` (or
    just before its first `from torch... import`, so that names torch_npu adds to torch modules
    can be imported), at the level of that statement; a file that already imports torch_npu
    anywhere is left alone, so the import is never duplicated.  A file that imports torch only
    inside functions (so that importing it loads nothing) gets torch_npu beside the import of
    each function the migration changed.  Runs last: it acts on what the other rules did.
    """

    code = "NPU001"
    summary = "import torch_npu after the first torch import of a file that needs NPU"
    triggers = ()
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            '"""Trainer."""\nimport os\nimport torch\nx = torch.zeros(1).cuda()\n',
            '"""Trainer."""\nimport os\nimport torch\nimport torch_npu\nx = torch.zeros(1).npu()\n',
        ),
        Example(
            "import os\nfrom torch import nn\nm = nn.Linear(2, 2).cuda()\n",
            "import os\nimport torch_npu\nfrom torch import nn\nm = nn.Linear(2, 2).npu()\n",
        ),
        # a module of torch imported in a `try` may be missing: torch_npu goes before it
        Example(
            "try:\n    import torch.sdaa\nexcept ImportError:\n    pass\nBACKEND = 'nccl'\n",
            "try:\n    import torch_npu\n    import torch.sdaa\nexcept ImportError:\n    pass\nBACKEND = 'hccl'\n",
        ),
        # torch imported lazily, in the functions that use it: torch_npu beside it there
        Example(
            "import os\n\n\ndef count():\n    import torch\n    return torch.cuda.device_count()\n",
            "import os\n\n\ndef count():\n    import torch\n    import torch_npu\n    return torch_npu.npu.device_count()\n",
        ),
        # torch_npu imported inside one function binds it there only: the module gets its own
        Example(
            "import torch\n\n\ndef is_npu_available():\n    try:\n        import torch_npu\n    except ImportError:\n"
            "        return False\n    return True\n\n\ndef count():\n    return torch.cuda.device_count()\n",
            "import torch\nimport torch_npu\n\n\ndef is_npu_available():\n    try:\n        import torch_npu\n"
            "    except ImportError:\n        return False\n    return True\n\n\ndef count():\n"
            "    return torch_npu.npu.device_count()\n",
        ),
        # a script that reaches torch through a package built on it, which loads torch, not torch_npu
        Example(
            "from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained('m').cuda()\n",
            "import torch_npu\nfrom transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained('m').npu()\n",
        ),
        # an import for type checkers only never runs: torch_npu goes with the one that does
        Example(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch import Tensor\nimport torch\n"
            "BACKEND = 'nccl'\n",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch import Tensor\nimport torch\n"
            "import torch_npu\nBACKEND = 'hccl'\n",
        ),
    )
    unchanged = (
        "import torch\nimport torch_npu\nx = x.npu()\n",
        # torch_npu imported and used in one function only: the name is bound where it is read
        "import torch\n\n\ndef npu_count():\n    import torch_npu\n    return torch_npu.npu.device_count()\n",
        "# a config module: the training script that reads it imports torch_npu\ndevice = 'cuda:0'\n",
        "import yaml\nCONFIG = {'device': 'cuda:0', 'backend': 'nccl'}\n",
        "try:\n    import torch_npu\nexcept ImportError:\n    torch_npu = None\n",
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._torch_at_module_level = _imports_torch_at_level(node.body)
        self._lazy_imports = 0  # functions given `import torch_npu` beside their own `import torch`
        self._uncovered = False  # a function changed that does not import torch itself
        self._lazy_statements: Set[int] = set()  # (ids of those imports, and their edits)
        self._lazy_anchors: List[int] = []
        self._newline = node.default_newline

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        """A file that imports torch only inside functions (lazily: importing the module loads
        nothing) gets torch_npu beside the import of each function the migration changed, not at
        module level, which would load torch with the module."""
        if (self._torch_at_module_level or self._uncovered or not isinstance(updated_node.body, cst.IndentedBlock)
                or updated_node.deep_equals(original_node)):
            return updated_node
        usage = _Usage("torch_npu")
        walk(usage, updated_node.body)
        if usage.bound:
            return updated_node  # (a function inside it imports torch_npu itself)
        new_line = cst.parse_statement(IMPORT_LINE + self._newline)
        self.context.inserted.add(new_line)
        found = _insert_near_torch(updated_node.body.body, original_node.body.body, new_line, self)
        if found is None:  # (the function does not import torch itself)
            self._uncovered = True
            return updated_node
        body, anchor = found
        self._lazy_imports += 1
        self._lazy_statements.add(id(new_line))
        self.record_insert(anchor, f"insert {IMPORT_LINE}")
        self._lazy_anchors.append(anchor)
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def _loads_torch_through_a_framework(self, module: cst.Module, loaded: Set[str]) -> bool:
        """Whether the module loads torch through a package built on it (a script moving a
        transformers model with `.npu()`): that loads torch, not torch_npu, so the file needs the
        import as torch's own do.  Not where that package is the project itself (its modules that
        leave torch out, its constants and its launcher, do so on purpose), nor where the module
        imports it lazily, in functions (the module then loads no torch)."""
        own = self.context.options.project_modules_of(self.context.path)
        return any(_imports_at_level(module.body, package) for package in loaded & TORCH_FRAMEWORKS - own)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        usage = _Usage("torch_npu")
        walk(usage, updated_node)
        # An import of torch_npu inside a function (accelerate's `is_npu_available` tries one)
        # binds the name there only: the module's own code needs one at its level.
        loaded = _imports_at_level(updated_node.body, "torch_npu")
        bound = _imports_at_level(updated_node.body, "torch_npu", binding=True)
        # A file that never imports torch (a config module naming a device) relies on the
        # process having loaded torch_npu elsewhere; it only needs the import to use the name.
        needs_load = self.context.needs_torch_npu and not loaded and (
            "torch" in usage.loaded or self._loads_torch_through_a_framework(updated_node, usage.loaded))
        if self._lazy_imports:  # (the functions' imports bind the name: count what they do not cover)
            needs_load = self.context.needs_torch_npu
        if not (needs_load or (usage.used and not bound and _uses_outside_functions(updated_node))):
            return updated_node
        if self._lazy_imports and not self._uncovered and _uses_outside_functions(updated_node) == 0:
            return updated_node  # each changed function imports torch_npu beside its torch
        if self._lazy_imports:  # the module imports it after all: the functions' imports would repeat it
            updated_node = updated_node.visit(_Without(self._lazy_statements))
            lazy = [(line, f"insert {IMPORT_LINE}") for line in self._lazy_anchors]
            # (in place: the batch of rules holds the list; it replaces its items, so they are matched by value)
            self.edits[:] = [edit for edit in self.edits if (edit.start_line, edit.message) not in lazy]
        new_line = cst.parse_statement(IMPORT_LINE + updated_node.default_newline)
        self.context.inserted.add(new_line)
        found = _insert_near_torch(updated_node.body, original_node.body, new_line, self)
        if found is not None:
            body, anchor = found
        else:
            body = list(updated_node.body)
            pairs = pair_with_originals(body, original_node.body, self.context.inserted, self.context.removed)
            index = after_preamble(body)
            anchor = line_before(pairs, index, self.lines_of, len(original_node.header))
            body.insert(index, new_line)
        self.record_insert(anchor, f"insert {IMPORT_LINE}")
        return updated_node.with_changes(body=body)


class _Without(cst.CSTTransformer):
    """Takes out the statements of `ids` (the functions' imports of torch_npu)."""

    def __init__(self, ids: Set[int]) -> None:
        super().__init__()
        self.ids = ids

    def leave_SimpleStatementLine(self, original_node, updated_node):
        return cst.RemoveFromParent() if id(original_node) in self.ids else updated_node


class _UsesOutsideFunctions(cst.CSTVisitor):
    """Counts the reads of torch_npu that no function's own `import torch_npu` covers."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        usage = _Usage("torch_npu")
        walk(usage, node.body)
        return not usage.bound  # (covered where the function imports it itself)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False  # (`from torch_npu.contrib import ...` loads it; it reads no name)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "torch_npu":
            self.count += 1


def _uses_outside_functions(module: cst.Module) -> int:
    visitor = _UsesOutsideFunctions()
    walk(visitor, module)
    return visitor.count


def _imports_torch_at_level(body) -> bool:
    return _imports_at_level(body, "torch")


def _imports_at_level(body, package: str, binding: bool = False) -> bool:
    """Whether a block imports `package` at its own level (in its if/try blocks too, not in
    functions, classes or `if TYPE_CHECKING:`); `binding`: with an import that binds its name
    (`import torch_npu`, not `from torch_npu.npu import amp`)."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            if any(_binds(small, package) if binding else package in _loaded_packages(small)
                   for small in statement.body):
                return True
        elif isinstance(statement, cst.If) and _only_for_type_checkers(statement.test):
            continue
        elif isinstance(statement, (cst.If, cst.Try)) and isinstance(statement.body, cst.IndentedBlock):
            if _imports_at_level(statement.body.body, package, binding):
                return True
    return False


def _binds(small: cst.BaseSmallStatement, name: str) -> bool:
    """Whether an import statement binds `name` (`import torch_npu`, `import torch_npu.npu`)."""
    if not isinstance(small, cst.Import):
        return False
    return any((dotted_name(alias.asname.name) if alias.asname else (dotted_name(alias.name) or "").split(".")[0])
               == name for alias in small.names)


def _only_for_type_checkers(test: cst.BaseExpression) -> bool:
    return (dotted_name(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"


def _imports_a_torch_module(statement: cst.SimpleStatementLine) -> bool:
    """`import torch.sdaa`: a module of torch, which may be missing (another vendor's backend)."""
    return any(isinstance(small, cst.Import) and any((dotted_name(alias.name) or "").startswith("torch.")
                                                     for alias in small.names) for small in statement.body)


def _insert_near_torch(updated_body, original_body, new_line, rule: Rule, in_try: bool = False) -> Optional[Tuple]:
    """Insert next to the first module-level torch import (inside if/try blocks too, never
    inside functions or classes).  Returns (new body, original line the new one follows).  In a
    `try`, the import of a torch module (`import torch.sdaa`, which raises where that backend is
    not installed) would skip what follows it: torch_npu goes before it."""
    pairs = pair_with_originals(updated_body, original_body, rule.context.inserted, rule.context.removed)
    body = list(updated_body)
    for index, (statement, original) in enumerate(pairs):
        if original is None:
            continue
        if isinstance(statement, cst.SimpleStatementLine):
            if not any(_imports_torch(small) for small in statement.body):
                continue
            if _is_plain_import(statement) and not (in_try and _imports_a_torch_module(statement)):
                body.insert(index + 1, new_line)
                return body, rule.lines_of(original)[1]
            # Before a `from torch... import`: the new line takes over the comments and blank
            # lines above it, so it sits right on top of that import.
            body[index] = statement.with_changes(leading_lines=())
            placed = new_line.with_changes(leading_lines=statement.leading_lines)
            rule.context.inserted.add(placed)
            body.insert(index, placed)
            return body, rule.lines_of(original)[0] - 1
        if isinstance(statement, cst.If) and _only_for_type_checkers(statement.test):
            continue  # (`if TYPE_CHECKING:` never runs: an import there loads nothing)
        if isinstance(statement, (cst.If, cst.Try)) and isinstance(statement.body, cst.IndentedBlock):
            found = _insert_near_torch(statement.body.body, original.body.body, new_line, rule,
                                       in_try or isinstance(statement, cst.Try))
            if found is not None:
                new_block_body, anchor = found
                body[index] = statement.with_changes(body=statement.body.with_changes(body=new_block_body))
                return body, anchor
    return None
