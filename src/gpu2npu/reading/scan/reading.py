"""Reading a file with Python's `ast`: the tree, its nodes by class, and the row of a file it cannot read."""
from __future__ import annotations

import ast
import sys
import warnings
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

from ...records.change import Finding, Report
from ...records.finding_kinds import NOT_ANALYSED

def last_name(node: ast.AST) -> Optional[str]:
    """The last name of a name or an attribute (`args.sync_backend`: sync_backend), or None."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def called_name(call: ast.Call) -> Optional[str]:
    return last_name(call.func)


# The fields of each node class that can hold nodes we look at: not the operator singletons
# (`ctx`, `op`, `ops`) nor the fields that hold names, numbers or flags.
_CHILD_FIELDS: Dict[type, tuple] = {ast.Constant: ()}
_NOT_NODES = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "asname", "kind", "type_comment",
                        "level", "conversion", "is_async", "type_ignores"})


def nodes_of(tree: ast.AST) -> List[ast.AST]:
    """Every node of `tree` (but operator singletons): what `ast.walk` yields, in another order,
    in a third of its time."""
    return [node for group in nodes_by_class(tree).values() for node in group]


def nodes_by_class(tree: ast.AST) -> Dict[type, List[ast.AST]]:
    """Every node of `tree` (but operator singletons) by its class, each group in the order of a
    walk that lists a node before its children.  What looks at a file asks for a few classes
    of node (calls, imports, assignments): it gets them without going through the millions of
    others, and the walk is made once for all."""
    groups: Dict[type, List[ast.AST]] = {}
    todo = [tree]
    pop, push, node_class = todo.pop, todo.append, ast.AST
    fields_of, group_of = _CHILD_FIELDS.get, groups.get
    while todo:
        node = pop()
        kind = node.__class__
        group = group_of(kind)
        if group is None:
            group = groups[kind] = []
        group.append(node)
        fields = fields_of(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(f for f in node._fields if f not in _NOT_NODES)
        for name in fields:
            value = getattr(node, name)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, node_class):
                        push(item)
            elif isinstance(value, node_class):
                push(value)
    return groups


def caught_names(node: ast.Try) -> FrozenSet[str]:
    """The names of the exceptions a `try` catches and goes on from (a bare `except:` catches
    BaseException): not those of a handler that ends by raising (`except Exception as e: raise e`,
    `except ImportError: raise RuntimeError("install flash-attn")`), which stops where the error
    came as surely as no `try` would."""
    names = set()
    for handler in node.handlers:
        if handler.body and isinstance(handler.body[-1], ast.Raise):
            continue
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for kind in kinds:
            names.add("BaseException" if kind is None else kind.id if isinstance(kind, ast.Name)
                      else kind.attr if isinstance(kind, ast.Attribute) else "")
    return frozenset(names)


# What Python's parser raises for a text it cannot parse.
NOT_PARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def ast_of(data) -> ast.Module:
    """The ast of `data` (bytes, or a text); raises one of NOT_PARSABLE."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes in the user's strings are not our report
        return ast.parse(data)


def parse(data: bytes) -> Optional[ast.Module]:
    """The ast of `data`, or None when this Python cannot parse it (libcst may still)."""
    try:
        return ast_of(data)
    except NOT_PARSABLE:
        return None


def ast_of_statements(statements: Iterable[Tuple[int, str]]) -> ast.Module:
    """What `ast` can read of a file it cannot read whole (a newer Python's syntax in some
    statement, read by libcst): each top-level statement, given as (its first line, its text),
    that it can read, its nodes at the file's lines."""
    body = []
    for first_line, text in statements:
        try:
            tree = ast_of(text)
        except NOT_PARSABLE:
            continue
        ast.increment_lineno(tree, first_line - 1)
        body.extend(tree.body)
    return ast.Module(body=body, type_ignores=[])


# The api of the row that says a file was not analysed because this Python cannot parse it.
NOT_PARSED = "syntax this Python cannot parse"


def not_parsed_row(data: bytes, path: str) -> Optional[Finding]:
    """For a file `parse` gave up on: the unknown_api.csv row that says its API calls and hazards
    were not looked at (they are read from the ast), where there is any torch in it to look at
    (a file of newer syntax, which libcst may migrate all the same, or a broken one)."""
    if b"torch" not in data:
        return None
    try:  # (parsed again for the reason: only files `parse` gave up on come here)
        ast_of(data)
        return None
    except SyntaxError as error:  # (the row stands at its line)
        line, reason = error.lineno or 1, error.msg
    except NOT_PARSABLE as error:
        line, reason = 1, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Finding(path, line, line, Report.UNKNOWN, NOT_PARSED,
                   f"Python {python}, which runs gpu2npu, cannot parse this file ({reason} here), so its torch API calls "
                   "and CUDA hazards (torch.compile, CUDA version checks, quantization) were not analysed: run gpu2npu "
                   "with the Python the project needs, or mend the syntax", NOT_ANALYSED.code)


def dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None
