"""setup.cfg (`[options] install_requires`, `[options.extras_require]`) and setup.py
(`setup(install_requires=[...], extras_require={...})`, directly, through a module-level name
bound to a list, or lists added together): the requirement strings get the decisions of a requirements file.

setup.cfg is edited line by line (a removed requirement is commented out, which setuptools'
reader skips); setup.py through libcst, string by string, with a removed requirement taken out
of its list.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..records.change import Report
from .decide import Context, Decision, decide, parse_requirement
from .requirements_file import REMOVED_NOTE, FileOutcome

_SECTION = re.compile(r"^\s*\[([^\]]+)\]")
_OPTION = re.compile(r"^(?P<key>[A-Za-z0-9_.-]+)\s*[=:]\s*(?P<value>.*)$")


def migrate_setup_cfg(text: str, path: str, context: Context) -> FileOutcome:
    lines = text.splitlines(keepends=True)
    outcome = FileOutcome(None)
    section, in_list = "", False
    values: List[Tuple[int, str]] = []  # (line, requirement text)
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        header = _SECTION.match(body)
        if header:
            section, in_list = header.group(1).strip(), False
            continue
        if not body.strip() or body.lstrip().startswith(("#", ";")):
            continue
        if body[0] in " \t":
            if in_list:
                values.append((number, body.strip()))
            continue
        option = _OPTION.match(body)
        in_list = bool(option) and (section == "options.extras_require" or
                                    (section == "options" and option.group("key") == "install_requires"))
        if in_list and option.group("value").strip() and not option.group("value").strip().startswith("file:"):
            values.append((number, option.group("value").strip()))
    requirements = [(number, written, parse_requirement(written)) for number, written in values]
    context.present.update(r.normalised for _, _, r in requirements if r is not None and r.name)
    edits: Dict[int, str] = {}
    for number, written, requirement in requirements:
        if requirement is None:
            continue
        decision = decide(requirement, context)
        line = lines[number]
        newline = line[len(line.rstrip("\r\n")):] or "\n"
        indent = re.match(r"[ \t]*", line).group(0)
        if decision.write == [] and not indent:  # `key = requirement` on the option's own line
            decision = Decision(rule=decision.rule, report=(
                Report.UNSUPPORTED, requirement.name or written, f"{decision.message}: it stands on the line of the "
                                                                 "option, take it out by hand"))
        new = line
        if decision.write == []:
            new = f"{indent}# {line.strip()}  # {REMOVED_NOTE}{newline}"
        elif decision.write:
            new = line.replace(written, decision.write[0], 1)
        if decision.insert:
            new += "".join(f"{indent or '    '}{text}{newline}" for text in decision.insert)
        if new != line:
            edits[number] = new
        outcome.record(decision, path, number + 1)
    if edits:
        outcome.output = "".join(edits.get(number, line) for number, line in enumerate(lines))
    return outcome


def migrate_setup_py(text: str, path: str, context: Context) -> FileOutcome:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    outcome = FileOutcome(None)
    try:
        module = cst.parse_module(text)
    except Exception:
        return outcome  # the Python migration reports what it cannot parse
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    lists = _requirement_lists(wrapper.module)
    strings = [element for node in lists for element in node.elements
               if isinstance(element.value, cst.SimpleString)]
    parsed = {id(e): parse_requirement(e.value.evaluated_value) for e in strings}
    context.present.update(r.normalised for r in parsed.values() if r is not None and r.name)
    replacements: Dict[int, Optional[List[str]]] = {}
    for element in strings:
        requirement = parsed[id(element)]
        if requirement is None:
            continue
        decision = decide(requirement, context)
        line = positions[element].start.line
        outcome.record(decision, path, line)
        if decision.write is not None or decision.insert:
            replacements[id(element)] = (decision.write, decision.insert)
    if not replacements:
        return outcome

    class Rewrite(cst.CSTTransformer):
        def leave_List(self, original_node, updated_node):
            if not any(id(e) in replacements for e in original_node.elements):
                return updated_node
            elements = []
            for original, element in zip(original_node.elements, updated_node.elements):
                write, insert = replacements.get(id(original), (None, []))
                quote = original.value.quote if isinstance(original.value, cst.SimpleString) else '"'
                if write == []:
                    # what followed it (the next element's indentation, or the closing bracket's
                    # line) now follows the element before it
                    if elements and original is original_node.elements[-1]:
                        elements[-1] = elements[-1].with_changes(comma=element.comma)
                    continue
                if write:
                    element = element.with_changes(value=cst.SimpleString(f"{quote}{write[0]}{quote}"))
                elements.append(element)
                comma = element.comma if element.comma is not cst.MaybeSentinel.DEFAULT else cst.Comma(
                    whitespace_after=cst.SimpleWhitespace(" "))
                for text_ in insert:
                    elements[-1] = elements[-1].with_changes(comma=comma)
                    elements.append(cst.Element(cst.SimpleString(f"{quote}{text_}{quote}"), comma=element.comma))
            return updated_node.with_changes(elements=elements)

    new_module = wrapper.module.visit(Rewrite())
    outcome.output = new_module.code
    return outcome


def _requirement_lists(module) -> list:
    """The list literals that setup() takes as install_requires/extras_require values, found
    in the call or through a module-level name bound to one."""
    import libcst as cst

    bound: Dict[str, cst.BaseExpression] = {}
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                    bound[small.targets[0].target.value] = small.value
    found = []

    def lists_of(value) -> None:
        if isinstance(value, cst.Name) and value.value in bound:
            value = bound[value.value]
        if isinstance(value, cst.List):
            found.append(value)
        elif isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            lists_of(value.left)  # `REQUIRED + ["einops"]`
            lists_of(value.right)
        elif isinstance(value, cst.Dict):
            for element in value.elements:
                if isinstance(element, cst.DictElement):
                    lists_of(element.value)

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if name != "setup":
                return
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in ("install_requires", "extras_require"):
                    lists_of(arg.value)

    module.visit(Calls())
    return found
