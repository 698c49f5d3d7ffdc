"""Imports of a CUDA-only package pointed at a generated package that implements the same public
names on the NPU (written into the output; see flash_attn.py and xformers.py).

The generated package mirrors the CUDA package's module layout (`flash_attn.bert_padding` ->
`ascend_flash_attn.bert_padding`), so that only imports change and every call stays as written.
"""
from __future__ import annotations

import re
from typing import ClassVar, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from .base import Rule, code_of
from .names import build_dotted, dotted_name
from .placement import insert_statements, module_names, pair_with_originals, top_folder_on_sys_path
from .walk import walk


class ReroutePlan(cst.CSTVisitor):
    """Which imports of package `root` go to the generated package: a `from` import of a mirrored
    module whose every name the package provides, and `import root[.sub] [as x]` when every
    attribute chain the file reads of the bound name is provided.  All of them or none: a file
    that keeps one import of `root` (of a name the package lacks) needs the package anyway, and
    half of its imports rerouted would be edits that change nothing.  What stays is reported."""

    def __init__(self, root: str, provided: Dict[str, FrozenSet[str]], asked: Optional[FrozenSet[str]] = None) -> None:
        super().__init__()
        self.root = root
        self.provided = provided
        # where some file of the project keeps an import of root (Options.reroute_kept): the names it
        # asks of other modules.  A probe in a function of one of those names, or at module level,
        # answers for that file's code, which yes would let run: it stays (None: no file keeps one)
        self.asked = asked
        self._functions: List[str] = []  # the functions the visit is in, innermost last
        self._answering: Set[int] = set()  # ids of the probes that answer for a file that keeps root
        self.statements: Set[int] = set()  # ids of the Import/ImportFrom nodes to rewrite
        self.names: Set[str] = set()  # the qualified names that then mean the package's
        self._imports: List[Tuple[str, str, cst.Import]] = []  # (local name, module it binds, statement)
        self._chains: Dict[str, Set[str]] = {}  # local name -> dotted attribute chains read of it
        self._chain_bases: Set[int] = set()  # ids of the names that start an attribute chain
        self._names: List[cst.Name] = []  # every other name read or bound
        self._harmless: Set[int] = set()  # names bound to None or tested against it (an optional import)
        # imports that only probe for the package (nothing read, or only its __version__): they
        # follow the file's other imports; alone they stay (an environment report must not
        # print the generated package's version), and so do those that answer for a file that
        # keeps an import of root (`asked`: `is_flash_v2_installed()` asked before `from
        # flash_attn.layers.rotary import ...`, which yes would let run)
        self._probes: List[cst.CSTNode] = []
        self._keeps_root = False  # some import of root cannot be rerouted
        # `find_spec("flash_attn")` calls: they guard the imports that now go to the generated
        # package and are None on an NPU machine, so they follow the imports (spec_probes, the
        # ids of their string arguments); not when the name is also a string elsewhere in the file
        # (`import_module("flash_attn")` would then run where it cannot)
        self.spec_probes: Set[int] = set()
        self._spec_strings: List[cst.SimpleString] = []
        self._root_strings = 0

    @classmethod
    def of(cls, module: cst.Module, code: str, root: str, provided: Dict[str, FrozenSet[str]],
           asked: Optional[FrozenSet[str]] = None) -> "ReroutePlan":
        plan = cls(root, provided, asked)
        if _may_import(code, root):
            walk(plan, module)
            plan._settle()
        return plan

    def _of_root(self, module: str) -> bool:
        return module == self.root or module.startswith(self.root + ".")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        module = dotted_name(node.module) or ""
        if not self._of_root(module):
            return False
        self._note_where(node)
        provided = self.provided.get(module)
        if (provided is not None and not isinstance(node.names, cst.ImportStar)
                and all(dotted_name(alias.name) in provided for alias in node.names)):
            if all(_is_metadata(dotted_name(alias.name)) for alias in node.names):
                self._probes.append(node)  # `from flash_attn import __version__`
            else:
                self.statements.add(id(node))
            self.names.update(f"{module}.{dotted_name(alias.name)}" for alias in node.names)
        else:
            self._keeps_root = True
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if not self._of_root(name):
                continue
            if len(node.names) != 1 or name not in self.provided:
                self._keeps_root = True  # `import os, flash_attn`, `import flash_attn.ops.fused_dense`
                continue
            local = dotted_name(alias.asname.name) if alias.asname else self.root
            self._imports.append((local, name if alias.asname else self.root, node))
            self._note_where(node)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    def _note_where(self, node: cst.CSTNode) -> None:
        """Note an import of root as answering for another file's code where, as a probe, it would
        (`asked`): at module level, or in a function of a name such a file asks."""
        if self.asked is not None and (not self._functions or self._functions[0] in self.asked):
            self._answering.add(id(node))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        chain = dotted_name(node)
        if chain is None:
            return True
        self._chains.setdefault(chain.split(".")[0], set()).add(chain)
        base = node
        while isinstance(base, cst.Attribute):
            base = base.value
        self._chain_bases.add(id(base))
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self._names.append(node)

    # The optional import (`try: import xformers.ops as xops` / `except ImportError: xops = None`)
    # binds the name to None and tests it: no module attribute is read there.
    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "None":
            self._harmless.update(id(target.target) for target in node.targets if isinstance(target.target, cst.Name))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot)):
            sides = (node.left, node.comparisons[0].comparator)
            if any(isinstance(side, cst.Name) and side.value == "None" for side in sides):
                self._harmless.update(id(side) for side in sides if isinstance(side, cst.Name))

    def visit_If(self, node: cst.If) -> None:
        self._tested(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._tested(node.test)

    def _tested(self, test: cst.BaseExpression) -> None:
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        if isinstance(test, cst.Name):
            self._harmless.add(id(test))

    def visit_Call(self, node: cst.Call) -> None:
        callee = dotted_name(node.func) or ""
        if (callee.rsplit(".", 1)[-1] == "find_spec" and len(node.args) == 1
                and isinstance(node.args[0].value, cst.SimpleString)
                and node.args[0].value.evaluated_value in self.provided):
            self._spec_strings.append(node.args[0].value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if isinstance(value, str) and self._of_root(value):
            self._root_strings += 1

    def _provides(self, qualified: str) -> bool:
        module, _, name = qualified.rpartition(".")
        return name in self.provided.get(module, ())

    def _settle(self) -> None:
        # a module name used other than as the start of an attribute chain (getattr(bnb, ...),
        # passed to a function): what is read of it cannot be known
        bare = {name.value for name in self._names if id(name) not in self._chain_bases and id(name) not in self._harmless}
        for local, bound, node in self._imports:
            chains = self._chains.get(local, set())
            qualified = {bound + chain[len(local):] for chain in chains}
            if local in bare or not all(self._provides(name) for name in qualified):
                self._keeps_root = True
                continue
            if all(_is_metadata(name.rsplit(".", 1)[-1]) for name in qualified):
                self._probes.append(node)  # `import flash_attn` to see whether it is installed
            else:
                self.statements.add(id(node))
            self.names.update(qualified)
        if self._keeps_root or not self.statements:
            self.statements.clear()
            self.names.clear()
        else:
            follow = [node for node in self._probes if id(node) not in self._answering]
            self.statements.update(id(node) for node in follow)
            if self._root_strings == len(self._spec_strings) and len(follow) == len(self._probes):
                self.spec_probes.update(id(string) for string in self._spec_strings)


def probe_label(module: str) -> str:
    """How the reports name a find_spec probe of `module`: the hazards row about it (NPU913) and
    the change that points it at the generated package."""
    return f"find_spec({module!r})"


def answers_probe(row_api: str, change_message: str) -> bool:
    """Whether a rerouting rule's change is the one that pointed the probe of that row elsewhere."""
    return row_api.startswith("find_spec(") and change_message.startswith(f"change {row_api} to ")


def comment_line(package: str, short: str, *more: Tuple[str, str]) -> str:
    """The comment above the sys.path line of a file that imports generated packages: each as
    (package, what it is)."""
    held = " and the ".join(f"{name} package ({what})" for name, what in ((package, short), *more))
    return f"# gpu2npu: the output's top folder holds the {held}"


# A line that may import package root (`import os, flash_attn`, `from flash_attn.layers import ...`,
# `try: import flash_attn`): a plan holds only imports, so a file with no such line has none (most
# files that name the package do so in text or other names: `is_flash_attn_2_available()`).
_IMPORT_LINES: Dict[str, "re.Pattern[str]"] = {}


def _may_import(code: str, root: str) -> bool:
    if root not in code:
        return False
    pattern = _IMPORT_LINES.get(root)
    if pattern is None:
        pattern = _IMPORT_LINES[root] = re.compile(r"\b(?:import|from)\b[^\n]*\b%s\b" % re.escape(root))
    return pattern.search(code) is not None


def _is_metadata(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class RerouteToGenerated(Rule):
    """Base of the rules that point a CUDA-only package's imports at a generated package."""

    ROOT: ClassVar[str] = ""  # the CUDA-only package
    PACKAGE: ClassVar[str] = ""  # the generated package, mirroring ROOT's modules
    PROVIDED: ClassVar[Dict[str, FrozenSet[str]]] = {}  # ROOT's modules -> the names PACKAGE has
    FILES: ClassVar[Tuple[str, ...]] = ()  # the package's files in gpu2npu/generated/PACKAGE
    WHAT: ClassVar[str] = ""  # for messages: what the package computes with
    WHAT_OF: ClassVar[Dict[str, str]] = {}  # ROOT's modules whose part of the package is said otherwise
    SHORT: ClassVar[str] = ""  # for the comment above the sys.path line
    # ROOT's modules that import from another of its modules the names PROVIDED lists for them
    # (flash-attn's layers re-export its attention functions) -> that module, which PACKAGE mirrors
    REEXPORTED: ClassVar[Dict[str, str]] = {}

    @classmethod
    def plan_for(cls, module: cst.Module, code: str, own: FrozenSet[str] = frozenset(),
                 kept: Tuple[Tuple[str, FrozenSet[str]], ...] = ()) -> ReroutePlan:
        """The file's plan; an empty one where the package is the project's own (`own`,
        Options.own_packages): its imports load the project's code, migrated here.  `kept`
        (Options.reroute_kept): the packages some file of the project keeps, with the names those
        files ask, whose probes stay."""
        if cls.ROOT in own:
            return ReroutePlan(cls.ROOT, cls.PROVIDED)
        return ReroutePlan.of(module, code, cls.ROOT, cls.PROVIDED, asked=dict(kept).get(cls.ROOT))

    def __init__(self, context) -> None:
        super().__init__(context)
        self.plan: Optional[ReroutePlan] = None

    def visit_Module(self, node: cst.Module) -> None:
        # the pipeline made the plan already (the device guards need it before any rule runs)
        plan = self.context.reroute_plans.get(self.code)
        self.plan = plan if plan is not None else self.plan_for(
            node, node.code, self.context.options.own_packages_of(self.context.path), self.context.options.reroute_kept)

    @classmethod
    def what(cls, module: str) -> str:
        """What the part of the package that replaces `module` computes with."""
        return cls.WHAT_OF.get(module, cls.WHAT)

    def _target(self, module: str) -> str:
        return self.PACKAGE + self.REEXPORTED.get(module, module)[len(self.ROOT):]

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if id(original_node) not in self.plan.statements:
            return updated_node
        module = dotted_name(original_node.module)
        if dotted_name(updated_node.module) != module:
            return updated_node  # an earlier rule rewrote it (NPU262: FusedLayerNorm alone -> torch.nn)
        target = self._target(module)
        self.record(original_node, f"change {module} to {target} ({self.what(module)}, written into the output)")
        self._used(original_node)
        return updated_node.with_changes(module=build_dotted(target))

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        if id(original_node) not in self.plan.statements:
            return updated_node
        alias = updated_node.names[0]
        name = dotted_name(alias.name)
        if alias.asname is not None:  # import xformers.ops as xops -> import ascend_xformers.ops as xops
            target = self._target(name)
            new = alias.with_changes(name=build_dotted(target))
        else:  # import xformers.ops -> import ascend_xformers as xformers (its __init__ imports ops)
            target = f"{self.PACKAGE} as {self.ROOT}"
            new = alias.with_changes(name=cst.Name(self.PACKAGE), asname=cst.AsName(name=cst.Name(self.ROOT)))
        self.record(original_node, f"change import {name} to import {target} ({self.what(name)}, written into the output)")
        self._used(original_node)
        return updated_node.with_changes(names=[new])

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        if id(original_node) not in self.plan.spec_probes:
            return updated_node
        module = original_node.evaluated_value
        target = self._target(module)
        self.record(original_node, f"change {probe_label(module)} to {probe_label(target)} (the package this file's "
                    f"imports now load; {module} is not installed on an NPU machine)")
        self._used(original_node)
        return updated_node.with_changes(value=updated_node.value.replace(module, target))

    def _used(self, node: cst.CSTNode) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        first = self.context.top_folder_users.get(self.code)
        if first is None or line < first[0]:
            self.context.top_folder_users[self.code] = (line, self.PACKAGE, self.SHORT)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        """The output's top folder goes on sys.path before the top-level statement that holds the
        first rewritten import of every generated package the file uses (an import in a try block
        or a function included): once, by the first of their rules to get here."""
        if self.code not in self.context.top_folder_users:
            return updated_node  # (no import of this package was rewritten)
        body = updated_node.body
        statement = top_folder_on_sys_path(self.context.path)
        if any(isinstance(line, cst.SimpleStatementLine) and code_of(line.with_changes(leading_lines=())).strip() == statement.strip()
               for line in body):
            return updated_node  # (another generated package's rule put the top folder there already)
        users = sorted(self.context.top_folder_users.values())
        pairs = pair_with_originals(body, original_node.body, self.context.inserted, self.context.removed)
        index = next(i for i, (_, original) in enumerate(pairs) if original is not None
                     and self.lines_of(original)[1] >= users[0][0])
        (_, package, short), *others = users
        packages = " and ".join(package for _, package, _ in users)
        return insert_statements(self, original_node, updated_node, index, statement,
                                 (comment_line(package, short, *((name, what) for _, name, what in others)),),
                                 f"insert the output's top folder into sys.path (for {packages})",
                                 ("sys", "os"), module_names(body[:index]))
