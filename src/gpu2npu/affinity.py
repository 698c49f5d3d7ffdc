"""Affinity and performance advice: code that a torch_npu fused API does faster on Ascend.

`find_affinity` reads a file's `ast` tree (not libcst: it runs on every file, including those with
nothing to migrate, so it must be cheap) and returns `Finding` records, never edits:

- affinity_api_call.csv (`Report.AFFINITY`): hand-written RMSNorm, rotary embedding, SwiGLU and
  attention, which torch_npu runs as one fused kernel each; swin's `torch.roll`, boolean-mask
  assignment, DropPath, multiclass_nms and torchvision's RoIAlign, which torch_npu.contrib
  replaces;
- api_performance_advice.csv (`Report.PERFORMANCE`): torch optimizers with a torch_npu fused
  counterpart.

Precision comes before recall: a pattern is reported only when its shape is unmistakable (an RMS
over the last dimension feeding rsqrt, a softmax between two matrix products...), and only when
the torch_npu release of `-v` has the replacement.  Deliberately not suggested, although the
incumbent lists them: `torch.matmul` with a transposed operand (`contrib.function.matmul_transpose`
computes the same forward, only its backward differs), `nn.SiLU` and `Mish`
(`torch_npu.contrib.module.SiLU/Mish` are deprecated in favour of the torch modules), YOLOv5's
Focus (the contrib module does the same slicing with another activation), and a global
`TASK_QUEUE_ENABLE` row (the task queue is on by default in every release we have data for).
"""
from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from .apidata import ApiData
from .change import Finding, Report

# Rule codes of the advice (the Finding.rule field), with what each one finds.
ADVICE = {
    "NPU801": "hand-written RMSNorm -> torch_npu.npu_rms_norm",
    "NPU802": "rotary embedding with rotate_half -> torch_npu.npu_rotary_mul",
    "NPU803": "silu(gate) * up -> torch_npu.npu_swiglu",
    "NPU804": "softmax(q @ k^T) @ v attention -> torch_npu.npu_fusion_attention",
    "NPU805": "torch optimizer -> torch_npu.optim fused optimizer",
    "NPU806": "swin-style torch.roll -> torch_npu.contrib.function.roll",
    "NPU807": "x[condition] = value -> torch_npu.contrib.function.npu_fast_condition_index_put",
    "NPU808": "DropPath -> torch_npu.contrib.module.NpuDropPath",
    "NPU809": "multiclass_nms -> torch_npu.contrib.function.npu_multiclass_nms",
    "NPU810": "torchvision RoIAlign -> torch_npu.contrib.module.ROIAlign",
    "NPU811": "torch RMSNorm -> torch_npu.npu_rms_norm",
}

# torch optimizers with a fused counterpart in torch_npu.optim.
FUSED_OPTIMIZERS = {
    "torch.optim.Adam": "torch_npu.optim.NpuFusedAdam",
    "torch.optim.AdamW": "torch_npu.optim.NpuFusedAdamW",
    "torch.optim.SGD": "torch_npu.optim.NpuFusedSGD",
    "torch.optim.RMSprop": "torch_npu.optim.NpuFusedRMSprop",
    "torch.optim.Adadelta": "torch_npu.optim.NpuFusedAdadelta",
}
SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
SILU = {"torch.nn.functional.silu"}
MATMUL = {"torch.matmul", "torch.bmm", "torch.einsum"}
RSQRT = {"torch.rsqrt"}
SQRT = {"torch.sqrt"}
ROI_ALIGN = {"torchvision.ops.roi_align", "torchvision.ops.RoIAlign", "torchvision.ops.roi_align.roi_align",
             "torchvision.ops.roi_align.RoIAlign"}
TORCH_RMS_NORM = {"torch.nn.RMSNorm", "torch.nn.modules.normalization.RMSNorm", "torch.nn.functional.rms_norm"}
SDPA = "torch.nn.functional.scaled_dot_product_attention"
# The last names of every API call looked at (a cheap filter before resolving names).
CALLED_NAMES = ({q.rsplit(".", 1)[1] for q in (*FUSED_OPTIMIZERS, *ROI_ALIGN, *TORCH_RMS_NORM, SDPA)} | {"roll"})
NUMPY_LIKE = ("numpy", "cv2", "PIL", "pandas", "scipy")
HOST_METHODS = ("numpy", "copy", "astype", "tolist")  # methods of arrays, not of tensors


# -- names ----------------------------------------------------------------------------------

class Names:
    """What the imports of one file bind: `import torch as th`, `from torch import nn`,
    `import torch.nn.functional as F`, `from torch.nn import functional as F`.  Function-local
    imports count for the whole file (a name is rarely imported as two different things)."""

    def __init__(self) -> None:
        self.aliases: Dict[str, str] = {}

    def add(self, node) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    self.aliases[top] = top
        else:  # a relative import keeps its dots: it never resolves to torch
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name != "*":
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def qualified(self, expr) -> Optional[str]:
        """`th.nn.functional.softmax` -> "torch.nn.functional.softmax"; None when the leftmost
        name is not an import (a local variable, `self`)."""
        parts = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        base = self.aliases.get(expr.id)
        if base is None:
            return None
        return ".".join([base] + parts[::-1])

    def imports(self, package: str) -> bool:
        return any(q == package or q.startswith(package + ".") for q in self.aliases.values())


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
    names: Names
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


def _collect(tree: ast.Module) -> FileFacts:
    """One pass over the tree, sorting what the detectors look at by scope.  It is the hot loop of
    the advice (every file goes through it), hence the hand-rolled traversal."""
    names = Names()
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
                names.add(node)
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

def _int(node) -> Optional[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _int(node.operand)
        return None if value is None else -value
    return None


def _ints(node) -> Optional[Tuple[int, ...]]:
    if isinstance(node, (ast.Tuple, ast.List)):
        values = tuple(_int(element) for element in node.elts)
        return None if None in values else values
    value = _int(node)
    return None if value is None else (value,)


def _argument(call: ast.Call, index: int, keyword: str):
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


class Matcher:
    """Questions about expressions of one file, answered with its imports."""

    def __init__(self, names: Names) -> None:
        self.names = names

    def function_call(self, node, qualified: Set[str]) -> bool:
        return isinstance(node, ast.Call) and self.names.qualified(node.func) in qualified

    def method_call(self, node, method: str) -> Optional[ast.AST]:
        """The receiver of `<receiver>.method(...)` when the receiver is a value, not a module."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
                and self.names.qualified(node.func) is None):
            return node.func.value
        return None

    def operand_of(self, node, functions: Set[str], method: str):
        """The tensor operand of `torch.f(x, ...)` or of `x.f(...)`, else None."""
        if self.function_call(node, functions):
            return node.args[0] if node.args else _argument(node, 0, "input")
        return self.method_call(node, method)

    def squared(self, node):
        """x for x.pow(2), torch.pow(x, 2), x ** 2, x.square(), torch.square(x), x * x."""
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow) and _int(node.right) == 2:
                return node.left
            if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
                return node.left
            return None
        if not isinstance(node, ast.Call):
            return None
        receiver = self.method_call(node, "pow")
        if receiver is not None and node.args and _int(node.args[0]) == 2:
            return receiver
        if self.function_call(node, {"torch.pow"}) and len(node.args) == 2 and _int(node.args[1]) == 2:
            return node.args[0]
        return self.operand_of(node, {"torch.square"}, "square")

    def mean_of_square(self, node):
        """x for a mean of x squared over the last dimension, else None."""
        if not isinstance(node, ast.Call):
            return None
        receiver = self.method_call(node, "mean")
        if receiver is not None:
            dim = _argument(node, 0, "dim")
        elif self.function_call(node, {"torch.mean"}) and node.args:
            receiver, dim = node.args[0], _argument(node, 1, "dim")
        else:
            return None
        if dim is None or _ints(dim) != (-1,):
            return None
        return self.squared(receiver)

    def transposed(self, node) -> bool:
        """k.transpose(-2, -1), k.transpose(2, 3), torch.transpose(k, -1, -2), k.mT, k.permute(0, 1, 3, 2)."""
        if isinstance(node, ast.Attribute) and node.attr == "mT" and self.names.qualified(node) is None:
            return True
        if not isinstance(node, ast.Call):
            return False
        if self.method_call(node, "transpose") is not None:
            dims = tuple(_int(a) for a in node.args)
        elif self.function_call(node, {"torch.transpose"}):
            dims = tuple(_int(a) for a in node.args[1:])
        elif self.method_call(node, "permute") is not None:
            order = tuple(_int(a) for a in node.args) if len(node.args) > 1 else _ints(node.args[0]) if node.args else None
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
        if qualified == "torch.einsum":
            return list(node.args[1:])
        if qualified in MATMUL:
            return list(node.args[:2])
        for method in ("matmul", "bmm"):
            receiver = self.method_call(node, method)
            if receiver is not None and node.args:
                return [receiver, node.args[0]]
        return None


def _contains(node, wanted) -> bool:
    return any(wanted(sub) for sub in ast.walk(node))


def _mentions(node, names: Set[str]) -> bool:
    return bool(names) and any(isinstance(sub, ast.Name) and sub.id in names for sub in ast.walk(node))


def _targets(assign) -> List[ast.AST]:
    return assign.targets if isinstance(assign, ast.Assign) else [assign.target]


def _target_names(assign) -> Set[str]:
    found = set()
    for target in _targets(assign):
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                found.add(sub.id)
    return found


def _end(node) -> int:
    return getattr(node, "end_lineno", None) or node.lineno


# -- the detectors ----------------------------------------------------------------------------

class _Detector:
    def __init__(self, facts: FileFacts, path: str, api: ApiData) -> None:
        self.facts = facts
        self.path = path
        self.api = api
        self.match = Matcher(facts.names)
        self.findings: List[Finding] = []

    def add(self, start: int, end: int, rule: str, report: Report, api_type: str, call: str,
            replacement: str, tip: str) -> None:
        if not self.api.has(replacement):
            return  # never suggest what the user's torch_npu release lacks
        self.findings.append(Finding(self.path, start, end, report, call, tip, rule, api_type, replacement))

    @staticmethod
    def already_uses(scope: Scope, replacement: str) -> bool:
        """Code that already calls the fused API (an NPU branch next to the generic one)."""
        return replacement.rsplit(".", 1)[-1] in scope.words

    # NPU801
    def rms_norm(self, scope: Scope) -> None:
        replacement = "torch_npu.npu_rms_norm"
        if not ({"rsqrt", "sqrt"} & scope.words and "mean" in scope.words) or self.already_uses(scope, replacement):
            return
        match = self.match
        centered: Set[str] = set()  # names holding x - mean: a LayerNorm, not an RMSNorm
        mean_squares: Dict[str, int] = {}  # name -> line of the mean of squares it holds
        for assign in scope.assigns:
            value = assign.value
            if value is None:
                continue
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Sub):
                centered |= _target_names(assign)
            line = self._mean_square_line(value, centered, mean_squares)
            for name in _target_names(assign):
                if line is not None:
                    mean_squares[name] = line
                else:
                    mean_squares.pop(name, None)
        for node in scope.calls + scope.binops:
            root = None
            if isinstance(node, ast.Call):
                root = match.operand_of(node, RSQRT, "rsqrt")
            elif isinstance(node.op, ast.Div):
                root = match.operand_of(node.right, SQRT, "sqrt")
            if root is None:
                continue
            line = self._mean_square_line(root, centered, mean_squares)
            if line is None:
                continue
            self.add(min(line, node.lineno), _end(node), "NPU801", Report.AFFINITY, "special",
                     "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight", replacement,
                     f"RMSNorm written out in {scope.name}: torch_npu.npu_rms_norm(x, weight, epsilon=eps) computes "
                     "it in one kernel and returns (y, rstd): use [0]; check the dtype it returns for fp16/bf16 "
                     "inputs and whether your version adds 1 to the weight (Gemma-style)")

    def _mean_square_line(self, node, centered: Set[str], mean_squares: Dict[str, int]) -> Optional[int]:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in mean_squares:
                return mean_squares[sub.id]
            squared = self.match.mean_of_square(sub)
            if squared is None:
                continue
            if (isinstance(squared, ast.BinOp) and isinstance(squared.op, ast.Sub)) or _mentions(squared, centered):
                continue
            return sub.lineno
        return None

    # NPU802
    def rotary(self, scope: Scope, rotate_names: Set[str]) -> None:
        replacement = "torch_npu.npu_rotary_mul"
        if not (rotate_names & scope.words) or self.already_uses(scope, replacement):
            return

        def rotates(node) -> bool:
            if not isinstance(node, ast.Call):
                return False
            func = node.func
            return (isinstance(func, ast.Name) and func.id in rotate_names) or (
                isinstance(func, ast.Attribute) and func.attr in rotate_names)

        for node in scope.binops:
            if not (isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.left, ast.BinOp)
                    and isinstance(node.right, ast.BinOp)
                    and isinstance(node.left.op, ast.Mult) and isinstance(node.right.op, ast.Mult)):
                continue
            if not any(rotates(side) for product in (node.left, node.right) for side in (product.left, product.right)):
                continue
            self.add(node.lineno, _end(node), "NPU802", Report.AFFINITY, "special",
                     "x * cos + rotate_half(x) * sin", replacement,
                     f"rotary position embedding in {scope.name}: torch_npu.npu_rotary_mul(x, cos, sin) applies it "
                     "in one kernel; x, cos and sin must be 4-D with cos/sin broadcastable to x (e.g. [B, S, 1, D] "
                     "or [1, S, 1, D] for a [B, S, N, D] x), and rotate_half's half-split layout is its default mode")

    # NPU803
    def swiglu(self, scope: Scope) -> None:
        replacement = "torch_npu.npu_swiglu"
        silu_attributes = self.facts.silu_attributes.get(scope.class_name, set())
        if not ("silu" in scope.words or silu_attributes & scope.words) or self.already_uses(scope, replacement):
            return
        halves: Dict[str, Tuple[int, ast.Call]] = {}  # name -> (which half, the chunk call)
        for assign in scope.assigns:
            chunk = self._two_way_split(assign)
            if chunk is not None:
                first, second = assign.targets[0].elts
                halves[first.id] = (0, chunk)
                halves[second.id] = (1, chunk)
                continue
            for name in _target_names(assign):  # a half changed after the split (clamped...)
                halves.pop(name, None)

        def silu_input(node):
            if self.match.function_call(node, SILU) and node.args:
                return node.args[0]
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
                    and node.func.attr in silu_attributes and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "self"):
                return node.args[0]
            return None

        for node in scope.binops:
            if not isinstance(node.op, ast.Mult):
                continue
            for activated, other in ((node.left, node.right), (node.right, node.left)):
                gate = silu_input(activated)
                if gate is None:
                    continue
                if (isinstance(gate, ast.Name) and isinstance(other, ast.Name) and gate.id in halves
                        and other.id in halves and halves[gate.id][1] is halves[other.id][1]
                        and halves[gate.id][0] == 0 and halves[other.id][0] == 1):
                    chunk = halves[gate.id][1]
                    tip = (f"SwiGLU in {scope.name} on the two halves of one tensor: "
                           f"torch_npu.npu_swiglu(x, dim=d) computes silu(first half) * second half of x in one "
                           "kernel (same split as chunk(2, dim=d)); check the dim and the dtype")
                    start = min(chunk.lineno, node.lineno)
                elif isinstance(gate, ast.Call) and isinstance(other, ast.Call) and ast.dump(gate) != ast.dump(other):
                    # silu(gate_proj(x)) * up_proj(x); a gate on some other value (Mamba's gated
                    # norm, a scale) is not the feed-forward that npu_swiglu fuses
                    tip = (f"SwiGLU in {scope.name}: torch_npu.npu_swiglu(x, dim=-1) computes silu(first half) * "
                           "second half of x in one kernel; with separate gate and up projections, fuse them into "
                           "one Linear whose output is [gate, up] (concatenate the weights when loading checkpoints)")
                    start = node.lineno
                else:
                    continue
                self.add(start, _end(node), "NPU803", Report.AFFINITY, "special", "silu(gate) * up", replacement, tip)
                break

    def _two_way_split(self, assign) -> Optional[ast.Call]:
        """The call of `a, b = x.chunk(2, dim=-1)` / `torch.chunk(x, 2, -1)`, else None."""
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0], ast.Tuple) and len(assign.targets[0].elts) == 2
                and all(isinstance(e, ast.Name) for e in assign.targets[0].elts)):
            return None
        call = assign.value
        if self.match.method_call(call, "chunk") is not None and call.args and _int(call.args[0]) == 2:
            return call
        if self.match.function_call(call, {"torch.chunk"}) and len(call.args) >= 2 and _int(call.args[1]) == 2:
            return call
        return None

    # NPU804
    def attention(self, scope: Scope) -> None:
        replacement = "torch_npu.npu_fusion_attention"
        sdpa_native = "scaled_dot_product_attention" in self.api.native_functions
        if "softmax" not in scope.words or self.already_uses(scope, replacement) or self.already_uses(
                scope, "npu_prompt_flash_attention"):
            return
        if sdpa_native and "scaled_dot_product_attention" in scope.words:
            return  # the written-out attention is the fallback of an SDPA call, which the NPU takes
        match = self.match
        transposed_names: Set[str] = set()
        score_names: Dict[str, int] = {}  # names holding q @ k^T (or something computed from it) -> its line
        prob_names: Dict[str, int] = {}  # names holding softmax(scores) -> line of q @ k^T

        def scores_line(node) -> Optional[int]:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id in score_names:
                    return score_names[sub.id]
                operands = match.product_operands(sub)
                if operands and (self._is_einsum(sub) or any(
                        match.transposed(o) or (isinstance(o, ast.Name) and o.id in transposed_names)
                        for o in operands)):
                    return sub.lineno
            return None

        def softmax_input(node):
            if match.function_call(node, SOFTMAX):
                return node.args[0] if node.args else _argument(node, 0, "input")
            return match.method_call(node, "softmax")

        def probs_line(node) -> Optional[int]:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id in prob_names:
                    return prob_names[sub.id]
                source = softmax_input(sub)
                if source is not None:
                    line = scores_line(source)
                    if line is not None:
                        return line
            return None

        for assign in scope.assigns:
            value = assign.value
            if value is None:
                continue
            targets = _target_names(assign)
            if match.transposed(value):
                transposed_names |= targets
            probs = probs_line(value)
            scores = None if probs is not None else scores_line(value)
            for name in targets:
                for table, line in ((prob_names, probs), (score_names, scores)):
                    if line is not None:
                        table[name] = line
                    elif not isinstance(assign, ast.AugAssign):
                        table.pop(name, None)
        seen: Set[int] = set()
        for node in scope.calls + scope.binops:
            operands = match.product_operands(node)
            if not operands:
                continue
            lines = [line for line in (probs_line(o) for o in operands) if line is not None]
            if not lines or node.lineno in seen:
                continue
            seen.add(node.lineno)
            self.add(min(lines[0], node.lineno), _end(node), "NPU804", Report.AFFINITY, "special",
                     "softmax(q @ k^T * scale + mask) @ v", replacement,
                     f"attention written out in {scope.name}: torch_npu.npu_fusion_attention(q, k, v, head_num, "
                     "input_layout='BNSD', scale=..., atten_mask=..., keep_prob=1 - dropout) runs it as one "
                     "flash-attention kernel and returns a tuple (use [0]); its atten_mask is boolean with True = "
                     "masked out (not an additive -inf mask); for inference only, npu_prompt_flash_attention"
                     + (f"; or call torch.nn.functional.scaled_dot_product_attention, which torch_npu "
                        f"{self.api.torch_npu_version} implements with its own kernel" if sdpa_native else ""))

    def _is_einsum(self, node) -> bool:
        return isinstance(node, ast.Call) and self.match.names.qualified(node.func) == "torch.einsum"

    # NPU805, NPU806, NPU810, NPU811 and scaled_dot_product_attention: calls of known APIs
    def api_calls(self, scope: Scope) -> None:
        names = self.facts.names
        for call in scope.calls:
            func = call.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if last not in CALLED_NAMES:
                continue
            qualified = names.qualified(func)
            if qualified is None:
                if self.match.method_call(call, "roll") is not None:
                    self._roll(call, scope, "x.roll", 0)
                continue
            if qualified in FUSED_OPTIMIZERS:
                self._optimizer(call, qualified)
            elif qualified == "torch.roll":
                self._roll(call, scope, qualified, 1)
            elif qualified in ROI_ALIGN:
                self.add(call.lineno, _end(call), "NPU810", Report.AFFINITY, "torchvision", qualified,
                         "torch_npu.contrib.module.ROIAlign",
                         "torchvision's RoIAlign has no NPU kernel; torch_npu.contrib.module.ROIAlign(output_size, "
                         "spatial_scale, sampling_ratio, aligned=...) runs torch_npu.npu_roi_align: its aligned "
                         "defaults to True (torchvision: False), so pass it explicitly; results differ slightly")
            elif qualified in TORCH_RMS_NORM and not ({"rms_norm", "_fused_rms_norm"} & self.api.native_functions):
                self.add(call.lineno, _end(call), "NPU811", Report.AFFINITY, "torch", qualified,
                         "torch_npu.npu_rms_norm",
                         f"torch_npu {self.api.torch_npu_version} has no kernel of its own for rms_norm (it runs as "
                         "separate pow/mean/rsqrt/mul ops): torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0] is one "
                         "kernel; it normalises over the trailing dimensions of weight's shape")
            elif qualified == SDPA and "scaled_dot_product_attention" not in self.api.native_functions:
                self.add(call.lineno, _end(call), "NPU804", Report.AFFINITY, "torch", qualified,
                         "torch_npu.npu_fusion_attention",
                         f"torch_npu {self.api.torch_npu_version} runs scaled_dot_product_attention as separate ops: "
                         "torch_npu.npu_fusion_attention(q, k, v, head_num, input_layout='BNSD', scale=...)[0] is "
                         "one kernel; its atten_mask is boolean with True = masked out")

    def _optimizer(self, call: ast.Call, qualified: str) -> None:
        replacement = FUSED_OPTIMIZERS[qualified]
        accepted = self.api.optimizer_signatures.get(replacement, ())
        extra = [k.arg for k in call.keywords if k.arg is not None and k.arg not in accepted]
        if accepted and not any(p.startswith("**") for p in accepted) and extra:
            drop = "; it takes no " + ", ".join(extra) + (": leave it out" if len(extra) == 1 else ": leave them out")
        else:
            drop = ""
        self.add(call.lineno, _end(call), "NPU805", Report.PERFORMANCE, "torch", qualified, replacement,
                 f"{replacement} updates all parameters in a few fused kernels instead of several ops per "
                 f"tensor (same hyperparameters{drop}); parameters must be float32 or float16 (not bfloat16) "
                 "and are combined into contiguous buffers at the first step, so build it after the model is on "
                 "the NPU; clip gradients with optimizer.clip_grad_norm_fused_(max_norm)")

    def _roll(self, call: ast.Call, scope: Scope, name: str, shift_index: int) -> None:
        shifts = _argument(call, shift_index, "shifts")
        dims = _argument(call, shift_index + 1, "dims")
        if not (isinstance(shifts, ast.Tuple) and len(shifts.elts) == 2 and dims is not None and _ints(dims) == (1, 2)):
            return
        if "torch_npu" in scope.words:
            return
        self.add(call.lineno, _end(call), "NPU806", Report.AFFINITY, "torch", "torch.roll",
                 "torch_npu.contrib.function.roll",
                 f"swin-style shifted window in {scope.name}: torch_npu.contrib.function.roll(x, shifts, dims) does "
                 "the roll of a 4-D [N, H, W, C] tensor over dims (1, 2) with a cached index_select, faster on NPU; "
                 "it requires exactly that layout and two shifts")

    # NPU807
    def condition_index_put(self, scope: Scope) -> None:
        if not scope.mask_stores or not self.facts.names.imports("torch"):
            return
        conditions: Set[str] = set()
        # numpy/PIL/... values: their boolean indexing is not a device operation
        host_arrays: Set[str] = self._host_parameters(scope)
        for assign in scope.assigns:
            value = assign.value
            if value is None:
                continue
            targets = _target_names(assign)
            if self._is_condition(value, conditions):
                conditions |= targets
            if self._host_value(value) or _mentions(value, host_arrays):
                host_arrays |= targets
        for assign in scope.mask_stores:
            target = assign.targets[0]
            if not self._is_condition(target.slice, conditions) or _mentions(target.value, host_arrays):
                continue
            self.add(assign.lineno, _end(assign), "NPU807", Report.AFFINITY, "special", "input[condition] = value",
                     "torch_npu.contrib.function.npu_fast_condition_index_put",
                     f"boolean-mask assignment in {scope.name}: on NPU it becomes a nonzero (a result of data-"
                     "dependent shape, which synchronises with the host) plus an index_put; "
                     "npu_fast_condition_index_put(x, condition, value) (= torch.where(condition, value, x)) or "
                     "x.masked_fill_(condition, value) keep shapes static; only for torch tensors with a bool condition")

    def _is_condition(self, node, conditions: Set[str]) -> bool:
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.Name):
            return node.id in conditions
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self._is_condition(node.operand, conditions)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            return self._is_condition(node.left, conditions) and self._is_condition(node.right, conditions)
        return False

    def _host_value(self, node) -> bool:
        """A numpy-like value: made by numpy/cv2/PIL..., or by a method only arrays have."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                qualified = self.facts.names.qualified(sub.func)
                if qualified and qualified.split(".")[0] in NUMPY_LIKE:
                    return True
                if any(self.match.method_call(sub, method) is not None for method in HOST_METHODS):
                    return True
        return False

    def _host_parameters(self, scope: Scope) -> Set[str]:
        """Parameters of the scope's function annotated with a numpy-like type."""
        function = self.facts.function_nodes.get(scope.name)
        if function is None:
            return set()
        found = set()
        arguments = function.args
        for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            annotation = argument.annotation
            if annotation is not None and any(
                    (self.facts.names.qualified(sub) or "").split(".")[0] in NUMPY_LIKE
                    for sub in ast.walk(annotation) if isinstance(sub, (ast.Name, ast.Attribute))):
                found.add(argument.arg)
        return found

    # NPU808, NPU809: user classes and functions torch_npu.contrib has fast versions of
    def definitions(self) -> None:
        for qualified, node in self.facts.classes:
            if node.name == "DropPath":
                self.add(node.lineno, node.lineno, "NPU808", Report.AFFINITY, "class", qualified,
                         "torch_npu.contrib.module.NpuDropPath",
                         "torch_npu.contrib.module.NpuDropPath(drop_prob) draws its random masks ahead of time on a "
                         "side stream; it drops nothing unless NpuDropPath.enable_droppath_ensemble(model) is called "
                         "once on the model, and it does not support dynamic shapes")
        for qualified, node in self.facts.functions:
            if node.name == "multiclass_nms":
                self.add(node.lineno, node.lineno, "NPU809", Report.AFFINITY, "function", qualified,
                         "torch_npu.contrib.function.npu_multiclass_nms",
                         "torch_npu.contrib.function.npu_multiclass_nms(multi_bboxes, multi_scores, score_thr, "
                         "nms_thr, max_num) runs the NMS on the NPU; it takes nms_thr as a float, pads its output to "
                         "max_num (no -1) and with dynamic shapes handles at most 20 classes and 10000 boxes")

    def rotate_names(self) -> Set[str]:
        """Functions that rotate half of the last dimension: those of this file returning
        cat((-x2, x1), -1) (whatever their name: an interleaved `rotate_half_pairs` is another
        layout), and `rotate_half` imported from another module."""
        found = {name for name, qualified in self.facts.names.aliases.items() if qualified.endswith(".rotate_half")}
        for _, node in self.facts.functions:
            if any(isinstance(stmt, ast.Return) and self._negated_cat(stmt.value) for stmt in node.body):
                found.add(node.name)
        return found

    def _negated_cat(self, node) -> bool:
        if not (self.match.function_call(node, {"torch.cat", "torch.concat", "torch.concatenate"}) and node.args):
            return False
        parts = node.args[0]
        return (isinstance(parts, (ast.Tuple, ast.List)) and len(parts.elts) == 2
                and isinstance(parts.elts[0], ast.UnaryOp) and isinstance(parts.elts[0].op, ast.USub))

    def silu_attributes(self) -> None:
        """Remember, per class, the attributes of self that hold an nn.SiLU()."""
        for scope in self.facts.scopes:
            if not scope.class_name:
                continue
            for assign in scope.assigns:
                if not (isinstance(assign, ast.Assign) and self.match.function_call(assign.value, {"torch.nn.SiLU"})):
                    continue
                for target in assign.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                        self.facts.silu_attributes.setdefault(scope.class_name, set()).add(target.attr)


def find_affinity(tree: ast.Module, path: str, api: ApiData) -> List[Finding]:
    """Advice for one parsed file: fused torch_npu replacements that exist in `api`'s release."""
    facts = _collect(tree)
    detector = _Detector(facts, path, api)
    detector.silu_attributes()
    rotate_names = detector.rotate_names()
    for scope in facts.scopes:
        detector.rms_norm(scope)
        detector.rotary(scope, rotate_names)
        detector.swiglu(scope)
        detector.attention(scope)
        detector.api_calls(scope)
        detector.condition_index_put(scope)
    detector.definitions()
    return sorted(set(detector.findings))


# A file none of whose bytes match cannot hold any advice: it is not even parsed for it.
_MIGHT_HAVE_ADVICE = re.compile(
    rb"softmax|sqrt|silu|SiLU|cat\(|optim|roll|DropPath|multiclass_nms|roi_align|RoIAlign|RMSNorm|rms_norm"
    rb"|scaled_dot_product|\]\s*=\s*-?\.?\d")


def advice_for_source(data: bytes, path: str, api: ApiData) -> List[Finding]:
    """find_affinity for a file's bytes: [] when it cannot be parsed (the migration reports that)."""
    if b"torch" not in data or not _MIGHT_HAVE_ADVICE.search(data):
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the user's strings are not our report
            tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    try:
        return find_affinity(tree, path, api)
    except RecursionError:
        return []
