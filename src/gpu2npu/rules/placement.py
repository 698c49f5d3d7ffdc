"""Where inserted statements go, and on which original line a report says they went."""
from __future__ import annotations

from typing import Sequence, Set

import libcst as cst

from ..records.change import Operation
from .base import Edit
from .node_set import NodeSet


def is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def is_docstring_line(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_future_import(statement: cst.CSTNode) -> bool:
    return is_import_line(statement) and any(
        isinstance(small, cst.ImportFrom)
        and isinstance(small.module, cst.Name)
        and small.module.value == "__future__"
        for small in statement.body
    )


def after_preamble(body: Sequence[cst.CSTNode]) -> int:
    """Index of the first statement that may follow new imports: after a module docstring and
    `from __future__` imports, which must stay first."""
    index = 0
    if body and is_docstring_line(body[0]):
        index = 1
    while index < len(body) and is_future_import(body[index]):
        index += 1
    return index


def after_imports(body: Sequence[cst.CSTNode]) -> int:
    """Index just past the leading run of docstring and import lines."""
    index = after_preamble(body)
    while index < len(body) and is_import_line(body[index]):
        index += 1
    return index


def bound_names(statement: cst.CSTNode) -> Set[str]:
    """Names an import line binds at module level."""
    names: Set[str] = set()
    if not is_import_line(statement):
        return names
    for small in statement.body:
        if isinstance(small.names, cst.ImportStar):
            continue
        for alias in small.names:
            if alias.asname is not None:
                names.add(alias.asname.name.value)
            else:
                node = alias.name
                while isinstance(node, cst.Attribute):
                    node = node.value
                names.add(node.value)
    return names


def module_names(body: Sequence[cst.CSTNode]) -> Set[str]:
    """Names the import lines of a block bind."""
    names: Set[str] = set()
    for statement in body:
        names |= bound_names(statement)
    return names


_MAIN_TESTS = ('__name__=="__main__"', '"__main__"==__name__')


def is_main_guard(statement: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":` (either quote, either order, no elif/else)."""
    if not (isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock)):
        return False
    test = cst.Module(body=()).code_for_node(statement.test).replace("'", '"').replace(" ", "")
    return test in _MAIN_TESTS


def header_line_count(module: cst.Module) -> int:
    return len(module.header)


def pair_with_originals(updated_body: Sequence[cst.CSTNode], original_body: Sequence[cst.CSTNode], inserted: NodeSet,
                        removed: NodeSet = NodeSet()):
    """Pair each statement of an updated block with the original statement it came from (None
    for statements a rule inserted, which are in `inserted`).  Rules edit statements in place,
    insert new ones and remove some (the removed originals are in `removed`, FileContext.removed),
    so the rest correspond one to one, in order."""
    originals = iter([statement for statement in original_body if statement not in removed])
    return [(statement, None if statement in inserted else next(originals, None)) for statement in updated_body]


def line_before(pairs, index: int, lines_of, header_lines: int) -> int:
    """The original line after which a statement inserted at `index` of a block stands: the
    last line of the nearest original statement above it, with the comment and blank lines that
    close its indented blocks (a compound statement's position ends at its last statement)."""
    for _, original in reversed(pairs[:index]):
        if original is not None:
            return lines_of(original)[1] + footer_lines(original)
    return header_lines


def footer_lines(statement: cst.CSTNode) -> int:
    """How many comment and blank lines close the indented blocks at the end of `statement`
    (`if x:\n    y()\n    # done\n` has one), innermost block first."""
    block = _last_block(statement)
    if block is None:
        return 0
    inner = footer_lines(block.body[-1]) if block.body else 0
    return inner + len(block.footer)


def _last_block(node: cst.CSTNode):
    for child in reversed(node.children):
        if isinstance(child, cst.IndentedBlock):
            return child
        if isinstance(child, (cst.If, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)):
            return _last_block(child)
        if isinstance(child, (cst.BaseSuite, cst.Comma, cst.SimpleWhitespace, cst.Colon)):
            continue
    return None


def insert_after_imports(rule, original_module: cst.Module, updated_module: cst.Module, source: str,
                         comment: Sequence[str], message: str, needs: Sequence[str] = ("os", "torch")) -> cst.Module:
    """Insert the statements of `source` after the module's leading imports, preceded by a blank
    line and `comment` lines (if any), importing the modules in `needs` first if the module does
    not; the insertion is recorded on `rule` as one INSERT."""
    body = updated_module.body
    module = insert_statements(rule, original_module, updated_module, after_imports(body), source, comment, message,
                               needs, module_names(body))
    rule.context.needs_torch_npu = True
    return module


def insert_statements(rule, original_module: cst.Module, updated_module: cst.Module, index: int, source: str,
                      comment: Sequence[str], message: str, needs: Sequence[str], bound: Set[str]) -> cst.Module:
    """Insert the statements of `source` at `index` of the module's body, preceded by a blank line
    and `comment` lines (if any), importing first the modules in `needs` that are not in `bound`;
    recorded on `rule` as one INSERT after the original line above."""
    body = list(updated_module.body)
    new = list(cst.parse_module(source, config=updated_module.config_for_parsing).body)
    if comment:
        comments = [cst.EmptyLine(comment=cst.Comment(line)) for line in comment]
        new[0] = new[0].with_changes(leading_lines=[cst.EmptyLine(), *comments])
    for module in needs:
        if module not in bound:
            new.insert(0, cst.parse_statement(f"import {module}" + updated_module.default_newline))
    pairs = pair_with_originals(body, original_module.body, rule.context.inserted, rule.context.removed)
    anchor = line_before(pairs, index, rule.lines_of, header_line_count(original_module))
    for statement in new:
        rule.context.inserted.add(statement)
    body[index:index] = new
    rule.record_insert(anchor, message)
    return updated_module.with_changes(body=body)


def remove_statement(original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """What replaces a deleted statement: nothing, or `pass` under the comments that stood above
    it, so that no comment is lost (libcst writes `pass` itself for a block left empty)."""
    if _keeps_leading_lines(original):
        return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=updated.leading_lines)
    return cst.RemoveFromParent()


def _keeps_leading_lines(original: cst.SimpleStatementLine) -> bool:
    return any(line.comment is not None for line in original.leading_lines)


def record_removal(rule, original: cst.SimpleStatementLine, message: str) -> None:
    """Record the DELETE of a statement `remove_statement` removes.  The blank lines above a
    statement belong to it in libcst and go with it: the row covers them too, so that the
    change list explains every line that left."""
    start, end = rule.lines_of(original)
    if not _keeps_leading_lines(original):
        start -= len(original.leading_lines)
        rule.context.removed.add(original)  # gone from its block (see pair_with_originals)
    rule.edits.append(Edit(start, end, Operation.DELETE, message))


def top_folder_on_sys_path(path: str) -> str:
    """A statement that puts the output's top folder on sys.path, for a file at `path` (relative
    to it), whichever folder the program was started from; appended, not prepended, so that the
    project's own modules keep their priority.  Needs `os` and `sys`."""
    depth = path.count("/")
    folder = "os.path.dirname(os.path.abspath(__file__))"
    if depth:
        folder = f"os.path.join({folder}{', os.pardir' * depth})"
    return f"sys.path.append({folder})\n"
