"""What the affinity detectors read from one file's `ast` tree, gathered in a single pass.

`collect` sorts a file's calls, binary operations and assignments by function (its `Scope`); names
are resolved through the file's imports as the scan read them (`scan.ImportTable`); `Matcher`
answers the small shape questions the detectors ask (is this a mean of squares over the last
dimension, a transposed operand, a matrix product...).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

if TYPE_CHECKING:
    from ..reading.scan import ImportTable

MATMUL = {"torch.matmul", "torch.bmm", "torch.einsum"}


# -- one traversal ----------------------------------------------------------------------------

@dataclass
class Scope:
    """The code of one function (or of the module's top level), nested functions excluded."""

    name: str
    class_name: str = ""  # the class this function is a method of
    calls: List[ast.Call] = field(default_factory=list)
    binops: List[ast.BinOp] = field(default_factory=list)
    assigns: List[ast.AST] = field(default_factory=list)  # Assign/AnnAssign/AugAssign, in source order
    mask_stores: List[ast.Assign] = field(default_factory=list)  # x[...] = <number>
    words: Set[str] = field(default_factory=set)  # every Name id and attribute name used


@dataclass
class FileFacts:
    names: "ImportTable"
    scopes: List[Scope]
    functions: List[Tuple[str, ast.AST]]  # (qualified name, FunctionDef)
    classes: List[Tuple[str, ast.ClassDef]]
    silu_attributes: Dict[str, Set[str]]  # class -> attributes of self holding nn.SiLU()

    @property
    def function_nodes(self) -> Dict[str, ast.AST]:
        return dict(self.functions)


# Fields that never hold code worth visiting (ctx and operator singletons, names, flags).
_NOT_CODE = {"ctx", "op", "id", "attr", "arg", "kind", "type_comment", "level", "module", "asname", "conversion",
             "is_async", "names", "decorator_list", "returns", "type_params"}
_FIELDS: Dict[type, Tuple[str, ...]] = {ast.Constant: ()}


def _code_fields(kind: type) -> Tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(name for name in getattr(kind, "_fields", ()) if name not in _NOT_CODE)
    return fields


def _is_number(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def collect(tree: ast.Module, names: "ImportTable") -> FileFacts:
    """One pass over the tree, sorting what the detectors look at by scope (`names`: what its
    imports bind).  It is the hot loop of the advice (every file goes through it), hence the
    hand-rolled traversal."""
    top = Scope("<module>")
    facts = FileFacts(names, [top], [], [], {})
    # bodies still to visit: (statements, their scope, qualified-name prefix, class owning them directly)
    bodies: List[Tuple[list, Scope, str, str]] = [(tree.body, top, "", "")]
    while bodies:
        statements, scope, prefix, owner = bodies.pop()
        words = scope.words
        stack = list(statements)
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Name:
                words.add(node.id)
                continue
            if kind is ast.Attribute:
                words.add(node.attr)
            elif kind is ast.Call:
                scope.calls.append(node)
            elif kind is ast.BinOp:
                scope.binops.append(node)
            elif kind is ast.Assign:
                scope.assigns.append(node)
                if len(node.targets) == 1 and type(node.targets[0]) is ast.Subscript and _is_number(node.value):
                    scope.mask_stores.append(node)
            elif kind is ast.AugAssign or kind is ast.AnnAssign:
                scope.assigns.append(node)
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                qualified = f"{prefix}{node.name}"
                facts.functions.append((qualified, node))
                inner = Scope(qualified, owner)
                facts.scopes.append(inner)
                bodies.append((node.body, inner, f"{qualified}.", ""))
                continue
            elif kind is ast.ClassDef:
                qualified = f"{prefix}{node.name}"
                facts.classes.append((qualified, node))
                bodies.append((node.body, scope, f"{qualified}.", qualified))
                continue
            elif kind is ast.Import or kind is ast.ImportFrom:
                continue
            for name in _code_fields(kind):
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend(value)
                elif isinstance(value, ast.AST):
                    stack.append(value)
    for scope in facts.scopes:
        scope.assigns.sort(key=lambda node: (node.lineno, node.col_offset))
    return facts


# -- small matchers ---------------------------------------------------------------------------

def int_value(node) -> Optional[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = int_value(node.operand)
        return None if value is None else -value
    return None


def int_values(node) -> Optional[Tuple[int, ...]]:
    if isinstance(node, (ast.Tuple, ast.List)):
        values = tuple(int_value(element) for element in node.elts)
        return None if None in values else values
    value = int_value(node)
    return None if value is None else (value,)


def argument(call: ast.Call, index: int, keyword: str):
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


class Matcher:
    """Questions about expressions of one file, answered with its imports."""

    def __init__(self, names: "ImportTable") -> None:
        self.names = names

    def function_call(self, node, qualified: Set[str]) -> bool:
        return isinstance(node, ast.Call) and not self.names.qualified(node.func).isdisjoint(qualified)

    def method_call(self, node, method: str) -> Optional[ast.AST]:
        """The receiver of `<receiver>.method(...)` when the receiver is a value, not a module."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
                and not self.names.is_imported(node.func)):
            return node.func.value
        return None

    def operand_of(self, node, functions: Set[str], method: str):
        """The tensor operand of `torch.f(x, ...)` or of `x.f(...)`, else None."""
        if self.function_call(node, functions):
            return node.args[0] if node.args else argument(node, 0, "input")
        return self.method_call(node, method)

    def squared(self, node):
        """x for x.pow(2), torch.pow(x, 2), x ** 2, x.square(), torch.square(x), x * x."""
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow) and int_value(node.right) == 2:
                return node.left
            if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
                return node.left
            return None
        if not isinstance(node, ast.Call):
            return None
        receiver = self.method_call(node, "pow")
        if receiver is not None and node.args and int_value(node.args[0]) == 2:
            return receiver
        if self.function_call(node, {"torch.pow"}) and len(node.args) == 2 and int_value(node.args[1]) == 2:
            return node.args[0]
        return self.operand_of(node, {"torch.square"}, "square")

    def mean_of_square(self, node):
        """x for a mean of x squared over the last dimension, else None."""
        if not isinstance(node, ast.Call):
            return None
        receiver = self.method_call(node, "mean")
        if receiver is not None:
            dim = argument(node, 0, "dim")
        elif self.function_call(node, {"torch.mean"}) and node.args:
            receiver, dim = node.args[0], argument(node, 1, "dim")
        else:
            return None
        if dim is None or int_values(dim) != (-1,):
            return None
        return self.squared(receiver)

    def transposed(self, node) -> bool:
        """k.transpose(-2, -1), k.transpose(2, 3), torch.transpose(k, -1, -2), k.mT, k.permute(0, 1, 3, 2)."""
        if isinstance(node, ast.Attribute) and node.attr == "mT" and not self.names.is_imported(node):
            return True
        if not isinstance(node, ast.Call):
            return False
        if self.method_call(node, "transpose") is not None:
            dims = tuple(int_value(a) for a in node.args)
        elif self.function_call(node, {"torch.transpose"}):
            dims = tuple(int_value(a) for a in node.args[1:])
        elif self.method_call(node, "permute") is not None:
            order = tuple(int_value(a) for a in node.args) if len(node.args) > 1 else int_values(node.args[0]) if node.args else None
            return bool(order) and None not in order and len(order) >= 3 and order[-1] < order[-2]
        else:
            return False
        return len(dims) == 2 and None not in dims and dims[0] != dims[1]

    def product_operands(self, node) -> Optional[List[ast.AST]]:
        """The operands of a matrix product: a @ b, torch.matmul/bmm(a, b), a.matmul(b), einsum."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return [node.left, node.right]
        if not isinstance(node, ast.Call):
            return None
        qualified = self.names.qualified(node.func)
        if "torch.einsum" in qualified:
            return list(node.args[1:])
        if not qualified.isdisjoint(MATMUL):
            return list(node.args[:2])
        for method in ("matmul", "bmm"):
            receiver = self.method_call(node, method)
            if receiver is not None and node.args:
                return [receiver, node.args[0]]
        return None


def mentions(node, names: Set[str]) -> bool:
    return bool(names) and any(isinstance(sub, ast.Name) and sub.id in names for sub in ast.walk(node))


def _targets(assign) -> List[ast.AST]:
    return assign.targets if isinstance(assign, ast.Assign) else [assign.target]


def target_names(assign) -> Set[str]:
    found = set()
    for target in _targets(assign):
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                found.add(sub.id)
    return found


def end_line(node) -> int:
    return getattr(node, "end_lineno", None) or node.lineno
