"""-r/--rule FILE: the user's rules (records/rule_file.py reads and checks them), one Rule per kind.

They run in a pass of their own before the built-in rules (`apply_custom_rules`), so the
built-in rules see the user's renamed names and arguments as if the user had written them, and
resolve them afresh.  Names are resolved like everywhere else: with `import torch as th`,
`th.foo()` is a call of `torch.foo`.  Each edit is one change_list.csv row naming the rule
(`-r ArgsModifyRule[0]`); migrating the result again changes nothing.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, QualifiedNameSource

from ..records.rule_file import ArgsModify, CustomRules, FuncNameModify, from_data
from .base import Edit, Example, FileContext, Options, Rule, code_of
from .batch import run_batch
from .names import build_dotted, dotted_name, qualified_names
from .placement import after_imports, line_before, module_names, pair_with_originals


def _rules(document: dict) -> CustomRules:
    return from_data({"rules": document})


def _called(rule: Rule, func: cst.BaseExpression, name: str) -> Optional[str]:
    """The resolved name by which `func` matches `name`, or None.  A dotted name matches calls
    that resolve to it; a bare name (as in the incumbent) matches any call whose last name it
    is, which is how methods (`x.name(...)`) are named."""
    resolved = qualified_names(rule, func)
    if "." in name:
        return name if name in resolved else None
    for candidate in sorted(resolved):
        if candidate.split(".")[-1] == name:
            return candidate
    spelled = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    return name if spelled == name else None


def _same_expression(left: str, right: str) -> bool:
    """Whether two expressions are the same code, spacing aside (compared as parsed data)."""
    try:
        return ast.dump(ast.parse(left.strip(), mode="eval")) == ast.dump(ast.parse(right.strip(), mode="eval"))
    except SyntaxError:
        return left.strip() == right.strip()


def _label(entry) -> str:
    return f"(-r {entry.label})"


class CustomArgs(Rule):
    """`ArgsModifyRule` entries of the -r file: in every call of `func_name`, the argument at
    position `arg_idx` (counted among the positional arguments) or passed as `arg_keyword`
    becomes `arg_new`, a Python expression written as a JSON string; the argument keeps the form
    it was written in (positional or keyword).  Given both, either form matches.  An empty
    `arg_new` deletes the argument; that is done by keyword only, since deleting by position
    would delete the next argument on a second run.  A call without the argument is left as it
    is (the rule changes arguments, it does not add them), and so is one that already passes
    `arg_new`.
    """

    code = "NPU701"
    summary = "-r ArgsModifyRule: change or delete an argument of the calls of a function"
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)
    examples = (
        Example(
            "import torch as th\nstate = th.load(path, map_location=device)\n",
            "import torch as th\nstate = th.load(path, map_location='cpu')\n",
            custom_rules=_rules({"ArgsModifyRule": [
                {"func_name": "torch.load", "arg_keyword": "map_location", "arg_new": "'cpu'"}]}),
        ),
        Example(
            "writer = make_writer(log_dir, 5)\ntrainer.configure(model, legacy_kernels=True)\n",
            "writer = make_writer(log_dir, 30)\ntrainer.configure(model)\n",
            custom_rules=_rules({"ArgsModifyRule": [
                {"func_name": "make_writer", "arg_idx": 1, "arg_new": "30"},
                {"func_name": "configure", "arg_keyword": "legacy_kernels", "arg_new": ""}]}),
        ),
    )

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        for entry in self.context.options.custom_rules.args:
            if _called(self, original_node.func, entry.func_name) is None:
                continue
            updated_node = self._apply(entry, original_node, updated_node)
        return updated_node

    def _apply(self, entry: ArgsModify, original_node: cst.Call, call: cst.Call) -> cst.Call:
        found = _find_argument(call.args, entry)
        if found is None:
            return call
        index, where = found
        args = list(call.args)
        if entry.arg_new == "":
            deleted = args.pop(index)
            if index == len(args) and index > 0:  # the new last argument takes over the comma (or its absence)
                args[index - 1] = args[index - 1].with_changes(comma=deleted.comma)
            self.record(original_node, f"delete argument {where} of {entry.func_name} {_label(entry)}")
            return call.with_changes(args=args)
        if _same_expression(code_of(args[index].value), entry.arg_new):
            return call  # already migrated
        args[index] = args[index].with_changes(value=cst.parse_expression(entry.arg_new.strip()))
        new = entry.arg_new.strip()
        self.record(original_node, f"change argument {where} of {entry.func_name} to {new} {_label(entry)}")
        return call.with_changes(args=args)


def _find_argument(args: Sequence[cst.Arg], entry: ArgsModify) -> Optional[Tuple[int, str]]:
    """(index in `args`, description) of the argument `entry` names, or None."""
    if entry.arg_keyword is not None:
        for index, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == entry.arg_keyword:
                return index, entry.arg_keyword
    if entry.arg_idx is not None:
        position = 0
        for index, arg in enumerate(args):
            if arg.keyword is not None or arg.star:
                break  # past the plain positional arguments (or behind *args: position unknown)
            if position == entry.arg_idx:
                return index, f"at position {entry.arg_idx}"
            position += 1
    return None


class CustomFuncName(Rule):
    """`FuncNameModifyRule` entries of the -r file: calls of `old_name` call `new_name`.

    `old_name` is a dotted name (`torch.foo`, matched through imports and aliases) or a bare
    one (`foo`, any call whose last name it is, methods included).  A bare `new_name` replaces
    the last name of the call (`th.foo()` -> `th.bar()`, `x.foo()` -> `x.bar()`); a dotted one in
    another module replaces the whole callee, and its package is imported when the file does not
    import it (torch_npu by NPU001).  A name imported with `from m import foo` is called as
    `m.bar` so that the import it came from keeps working.  Only calls are renamed.
    """

    code = "NPU702"
    summary = "-r FuncNameModifyRule: calls of one function call another"
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)
    examples = (
        Example(
            "import torch as th\nx = th.foo(1)\ny = layer.forward_old(x)\n",
            "import torch as th\nx = th.bar(1)\ny = layer.forward(x)\n",
            custom_rules=_rules({"FuncNameModifyRule": [
                {"old_name": "torch.foo", "new_name": "bar"}, {"old_name": "forward_old", "new_name": "forward"}]}),
        ),
        Example(
            "from mylib.ops import fused_adam\nopt = fused_adam(params)\n",
            "from mylib.ops import fused_adam\nimport npu_ops\nopt = npu_ops.adam(params)\n",
            custom_rules=_rules({"FuncNameModifyRule": [
                {"old_name": "mylib.ops.fused_adam", "new_name": "npu_ops.adam"}]}),
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._imports: List[Tuple[str, FuncNameModify]] = []  # packages the new names need

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        for entry in self.context.options.custom_rules.func_names:
            resolved = _called(self, original_node.func, entry.old_name)
            if resolved is None:
                continue
            new_func = self._renamed(original_node.func, updated_node.func, resolved, entry)
            if new_func is None or code_of(new_func) == code_of(updated_node.func):
                continue
            self.record(original_node, f"change function {entry.old_name} to {entry.new_name} {_label(entry)}")
            return updated_node.with_changes(func=new_func)
        return updated_node

    def _renamed(self, original_func, func, resolved: str, entry: FuncNameModify) -> Optional[cst.BaseExpression]:
        parent = resolved.rpartition(".")[0]
        new_parent, _, new_last = entry.new_name.rpartition(".")
        if new_parent and new_parent == parent:
            new_parent = ""  # same module: a rename of the last name keeps the file's spelling
        if not new_parent and isinstance(func, cst.Attribute):
            return func.with_changes(attr=cst.Name(new_last))
        if not new_parent and isinstance(func, cst.Name) and not self._imported(original_func):
            return func.with_changes(value=new_last)
        full = entry.new_name if new_parent else f"{parent}.{new_last}"
        if "." not in full or not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        self._imports.append((full.split(".")[0], entry))
        return build_dotted(full).with_changes(lpar=func.lpar, rpar=func.rpar)

    def _imported(self, func: cst.CSTNode) -> bool:
        try:
            names = self.get_metadata(QualifiedNameProvider, func, set())
        except KeyError:
            return False
        return any(name.source == QualifiedNameSource.IMPORT for name in names)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        bound = module_names(updated_node.body)
        needed: List[Tuple[str, FuncNameModify]] = []
        for package, entry in self._imports:
            # torch_npu: NPU001 imports it, where it belongs among the torch imports.
            if package not in bound and package != "torch_npu" and package not in [p for p, _ in needed]:
                needed.append((package, entry))
        if not needed:
            return updated_node
        body = list(updated_node.body)
        pairs = pair_with_originals(body, original_node.body, self.context.inserted, self.context.removed)
        index = after_imports(body)
        anchor = line_before(pairs, index, self.lines_of, len(original_node.header))
        for offset, (package, entry) in enumerate(needed):
            statement = cst.parse_statement(f"import {package}{updated_node.default_newline}")
            self.context.inserted.add(statement)
            body.insert(index + offset, statement)
            self.record_insert(anchor, f"insert import {package} (for {entry.new_name}) {_label(entry)}")
        return updated_node.with_changes(body=body)


class CustomModuleName(Rule):
    """`ModuleNameModifyRule` entries of the -r file: module `old_name` of package
    `parent_module` is called `new_name`, in attribute chains (`torch.cuda.amp.autocast` with
    parent `torch.cuda` and old name `amp`; aliases resolved) and in imports
    (`from torch.cuda.amp import X`, `import torch.cuda.amp`, and `from torch.cuda import amp`,
    which becomes `from torch.cuda import new as amp` so that the code below keeps its name).
    """

    code = "NPU703"
    summary = "-r ModuleNameModifyRule: a module of a package is renamed"
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)
    examples = (
        Example(
            "import mylib as ml\nfrom mylib.legacy import helper\nfrom mylib import legacy\nml.legacy.run()\n",
            "import mylib as ml\nfrom mylib.modern import helper\nfrom mylib import modern as legacy\n"
            "ml.modern.run()\n",
            custom_rules=_rules({"ModuleNameModifyRule": [
                {"old_name": "legacy", "new_name": "modern", "parent_module": "mylib"}]}),
        ),
    )

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # import statements spell names out; leave_Import handles them

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        for entry in self.context.options.custom_rules.module_names:
            if original_node.attr.value != entry.old_name:
                continue
            if f"{entry.parent_module}.{entry.old_name}" in qualified_names(self, original_node):
                self.record(original_node, f"change module {entry.old_name} to {entry.new_name} {_label(entry)}")
                return updated_node.with_changes(attr=cst.Name(entry.new_name))
        return updated_node

    def _renamed_module(self, name: Optional[str]) -> Optional[Tuple[str, object]]:
        for entry in self.context.options.custom_rules.module_names:
            old = f"{entry.parent_module}.{entry.old_name}"
            if name is not None and (name == old or name.startswith(old + ".")):
                return f"{entry.parent_module}.{entry.new_name}{name[len(old):]}", entry
        return None

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        names = list(updated_node.names)
        for index, alias in enumerate(names):
            renamed = self._renamed_module(dotted_name(alias.name))
            if renamed is not None:
                new_name, entry = renamed
                names[index] = alias.with_changes(name=build_dotted(new_name))
                self.record(original_node, f"change import {dotted_name(alias.name)} to {new_name} {_label(entry)}")
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if original_node.relative or original_node.module is None:
            return updated_node
        module = dotted_name(original_node.module)
        renamed = self._renamed_module(module)
        if renamed is not None:
            new_module, entry = renamed
            self.record(original_node, f"change import from {module} to import from {new_module} {_label(entry)}")
            return updated_node.with_changes(module=build_dotted(new_module))
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        names = list(updated_node.names)
        for index, alias in enumerate(names):
            for entry in self.context.options.custom_rules.module_names:
                if module == entry.parent_module and dotted_name(alias.name) == entry.old_name:
                    asname = alias.asname or cst.AsName(name=cst.Name(entry.old_name))
                    names[index] = alias.with_changes(name=cst.Name(entry.new_name), asname=asname)
                    self.record(original_node, f"change import of {module}.{entry.old_name} to "
                                                f"{module}.{entry.new_name} {_label(entry)}")
                    break
        return updated_node.with_changes(names=names)


# In the order the incumbent's documentation asks for: arguments, then function names, then
# module names (an ArgsModifyRule names the function as the user's code calls it).
CUSTOM_RULES = (CustomArgs, CustomFuncName, CustomModuleName)


def apply_custom_rules(module: cst.Module, path: str, options: Options) -> Tuple[cst.Module, List[Tuple[str, Edit]]]:
    """The user's rules on one file, in a traversal of their own: (new module, (code, edit)
    pairs in the file's own line numbers)."""
    rules = options.custom_rules
    kinds = (rules.args, rules.func_names, rules.module_names)
    wanted = [rule for rule, entries in zip(CUSTOM_RULES, kinds) if entries]
    code = module.code
    if not wanted or not any(word in code for word in rules.words()):
        return module, []
    outcome = run_batch(wanted, MetadataWrapper(module, unsafe_skip_copy=True), FileContext(path=path, options=options))
    return outcome.module, outcome.edits
