"""Integer devices made explicit: x.to(0) -> x.to("npu:0"), device=1 -> device="npu:1"."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..reading.scan import OTHER_ACCELERATORS
from ..records.change import Report
from .base import Example, Rule, code_of
from .names import dotted_name, nodes_within, qualified_names
from .walk import ParentNodeProvider, walk

# Methods whose device argument, when an int, means "CUDA device N" in PyTorch.
DEVICE_METHODS = {"to", "to_empty", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
# FSDP's device_id: an int means a CUDA device up to torch 2.2 (later ones ask the accelerator).
FSDP = {"torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"}
FSDP_INT_MEANS_CUDA_UNTIL = (2, 2)
# Calls that return a device index.
INDEX_RETURNING = {"current_device", "get_rank", "get_local_rank", "device_count", "get_world_size"}


def _of_another_accelerator(module: cst.BaseExpression) -> bool:
    """`torch.xpu` of `torch.xpu.current_device()`: an XPU's index, not a CUDA device's."""
    name = dotted_name(module)
    return name is not None and name.rsplit(".", 1)[-1] in OTHER_ACCELERATORS


# The nodes that open a scope of names: a name bound in one is that scope's own.
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def scope_chain(scopes: Sequence[cst.CSTNode]) -> Tuple[Optional[cst.CSTNode], ...]:
    """Where a name read inside `scopes` (outermost first) is looked up, innermost first, as
    Python does: the innermost scope, the functions around it (a class body is not seen from the
    functions in it), then the module (None)."""
    inner = list(scopes[-1:])
    return (*inner, *(scope for scope in reversed(scopes[:-1]) if not isinstance(scope, cst.ClassDef)), None)


class _IntNames(cst.CSTVisitor):
    """Which names and `self.x` / `args.x` attributes hold an int wherever they are bound: a name
    in its scope (a function's local `device = rank % count` is not its parameter `device` of
    another function), an attribute in the whole file.  A name bound even once in its scope to
    something else (a parameter without an `int` annotation, a loop target, a non-int value) is not
    an int: we only make explicit what is certain."""

    def __init__(self) -> None:
        # (scope or None for the module and for attributes, name) -> [(value, scope chain)]
        self.values: Dict[tuple, list] = {}
        self.not_int: Set[tuple] = set()
        self.int_options: Set[str] = set()  # argparse dests declared with type=int
        self._scopes: List[cst.CSTNode] = []
        self._global: Dict[Optional[cst.CSTNode], Set[str]] = {}  # names a scope declares global
        self._unsure: Set[str] = set()  # names some function declares nonlocal

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._scopes.append(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._scopes.pop()

    def visit_Global(self, node: cst.Global) -> None:
        scope = self._scopes[-1] if self._scopes else None
        self._global.setdefault(scope, set()).update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._unsure.update(item.name.value for item in node.names)

    def _key(self, name: str) -> tuple:
        scope = self._scopes[-1] if self._scopes else None
        if "." in name or name in self._global.get(scope, ()):
            return None, name
        return scope, name

    def _bind(self, target: cst.CSTNode, value: Optional[cst.BaseExpression]) -> None:
        name = dotted_name(target)
        if name is None:
            for sub in _targets(target):
                self._bind(sub, None)
            return
        key = self._key(name)
        if value is None:
            self.not_int.add(key)
        else:
            self.values.setdefault(key, []).append((value, scope_chain(self._scopes)))

    def _bind_int(self, name: str) -> None:
        self.values.setdefault(self._key(name), []).append((cst.Integer("0"), ()))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        is_int = isinstance(node.annotation.annotation, cst.Name) and node.annotation.annotation.value == "int"
        if is_int:
            self._bind_int(dotted_name(node.target) or "")
        else:
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target, None)  # (in the scope around the comprehension: certain, if stricter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_Param(self, node: cst.Param) -> None:
        annotation = node.annotation.annotation if node.annotation else None
        if isinstance(annotation, cst.Name) and annotation.value == "int":
            self._bind_int(node.name.value)
        else:
            self._bind(node.name, None)

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument"):
            return
        keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        type_ = keywords.get("type")
        if not (isinstance(type_, cst.Name) and type_.value == "int"):
            return
        # Without an int default (or required=True) the option may be None at run time.
        required = keywords.get("required")
        if not isinstance(keywords.get("default"), cst.Integer) and not (
            isinstance(required, cst.Name) and required.value == "True"
        ):
            return
        dest = keywords.get("dest")
        if isinstance(dest, cst.SimpleString):
            self.int_options.add(dest.raw_value)
            return
        flags = [a.value.raw_value for a in node.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        longs = [f for f in flags if f.startswith("--")] or flags
        if longs:
            self.int_options.add(longs[0].lstrip("-").replace("-", "_"))

    def _binding(self, name: str, chain: Sequence[Optional[cst.CSTNode]]) -> Optional[tuple]:
        """The key under which `name`, read where `chain` says, is bound; None: nowhere."""
        if "." in name:
            key = (None, name)
            return key if key in self.values or key in self.not_int else None
        for scope in chain:
            key = (scope, name)
            if key in self.values or key in self.not_int:
                return key
        return None

    def is_int(self, expr: cst.BaseExpression, chain: Sequence[Optional[cst.CSTNode]] = (None,),
               seen: Optional[Set[tuple]] = None) -> bool:
        """Whether `expr`, read where `chain` (scope_chain) says, holds an int."""
        seen = set() if seen is None else seen
        if isinstance(expr, cst.Integer):
            return True
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            return self.is_int(expr.expression, chain, seen)
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
        ):
            return self.is_int(expr.left, chain, seen) and self.is_int(expr.right, chain, seen)
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Name) and expr.func.value == "int":
                return True
            return (isinstance(expr.func, cst.Attribute) and expr.func.attr.value in INDEX_RETURNING
                    and not _of_another_accelerator(expr.func.value))
        name = dotted_name(expr)
        if name is None or name.split(".", 1)[0] in self._unsure:
            return False
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            if expr.attr.value in self.int_options and expr.value.value not in ("self", "cls"):
                return True
        key = self._binding(name, chain)
        if key is None or key in self.not_int or key in seen:
            return False
        seen.add(key)
        return all(self.is_int(value, value_chain or chain, seen) for value, value_chain in self.values[key])


class _Forwarders(cst.CSTVisitor):
    """Functions and methods of the file that hand one of their parameters to `.to(...)` or
    `device=` as it is (`def to_device(batch, device): return batch.to(device)`, a batch class's
    `def to_device(self, device)`), and use it for nothing else: name -> (index of the argument in
    a call, parameter).  A parameter also used otherwise (`rank=rank` beside `.to(rank)`) must
    stay an int: an "npu:N" given for it would reach that use too."""

    def __init__(self) -> None:
        super().__init__()
        self.functions: Dict[str, tuple] = {}  # called by name
        self.methods: Dict[str, tuple] = {}  # called as obj.name(...): `self` is not an argument
        self.defined: Set[str] = set()  # every function and method the file defines
        # those that hand a parameter to a device position and use it otherwise too
        self.mixed: Dict[str, tuple] = {}
        self.mixed_methods: Dict[str, tuple] = {}
        self._scopes: list = []
        self._method_definitions: Dict[str, int] = {}  # method name -> how many classes define it
        # per function being read: parameter -> [uses of its name, of them as a device]
        self._uses: List[Dict[str, List[int]]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._scopes and isinstance(self._scopes[-1], cst.ClassDef):
            self._method_definitions[node.name.value] = self._method_definitions.get(node.name.value, 0) + 1
        self._scopes.append(node)
        self.defined.add(node.name.value)
        self._uses.append({p.name.value: [-1, 0] for p in node.params.params})  # (-1: the Param's own name)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        uses = self._uses.pop()
        depth, outer = len(self._scopes), self._scopes[0]  # (the function itself included)
        self._scopes.pop()
        if original_node.name.value in DEVICE_METHODS:
            return
        params = [p.name.value for p in original_node.params.params]
        name = next((param for param in params if uses[param][1]), None)
        if name is None:
            return
        only_device = uses[name][0] == uses[name][1]
        position = params.index(name)
        if depth == 1:
            (self.functions if only_device else self.mixed)[original_node.name.value] = (position, name)
        elif depth == 2 and isinstance(outer, cst.ClassDef):
            bound = params[:1] in (["self"], ["cls"])
            method = original_node.name.value
            if bound and position > 0 and not method.startswith("__"):  # (dunders are called by Python)
                (self.methods if only_device else self.mixed_methods)[method] = (position - 1, name)
        # (nested functions are called through other names)

    def unambiguous(self, methods: Dict[str, tuple]) -> Dict[str, tuple]:
        """The methods of `methods` that one class of the file defines: a call `obj.name(...)`
        names no class, so a name two classes define may be either's."""
        return {name: found for name, found in methods.items() if self._method_definitions.get(name, 0) == 1}

    def _counted(self, name: str) -> Optional[List[int]]:
        """The counts of `name` as a parameter of the innermost function that has one, if any."""
        for uses in reversed(self._uses):
            if name in uses:
                return uses[name]
        return None

    def visit_Name(self, node: cst.Name) -> None:
        self._count(node, 1)

    # (names that are no use of a variable: a keyword's, an attribute's)
    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._count(node.keyword, -1)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._count(node.attr, -1)

    def _count(self, name: cst.Name, step: int) -> None:
        counts = self._counted(name.value)
        if counts is not None:
            counts[0] += step

    def visit_Call(self, node: cst.Call) -> None:
        if not self._uses:
            return
        is_to = isinstance(node.func, cst.Attribute) and node.func.attr.value in ("to", "to_empty")
        for index, arg in enumerate(node.args):
            if not isinstance(arg.value, cst.Name):
                continue
            if not ((arg.keyword is not None and arg.keyword.value == "device") or
                    (is_to and index == 0 and arg.keyword is None)):
                continue
            counts = self._counted(arg.value.value)
            if counts is not None and not (arg.keyword is not None and _spells_cuda_api(node.func)):
                counts[1] += 1  # (torch.cuda's own device= takes the card's index, as torch_npu.npu's does)


def _spells_cuda_api(callee: cst.BaseExpression) -> bool:
    """Whether a callee is written as torch's CUDA API (`torch.cuda.Stream`, `cuda.Stream`), whatever
    name holds the module: its `device=` takes the card's index, as torch_npu.npu's does."""
    return "cuda" in code_of(callee).split(".")


# The names an int goes by where it stands for a device (`device`, `local_device`), not an index
# that queries take (`dev`, `device_id`, `gpu`: `get_device_properties(dev)` takes it on the NPU
# too), nor a count of them (`num_device`).
_DEVICE_VARIABLE = re.compile(r"^(?!(?:n|num|number|total|max|min|count)_)(?:\w+_)?device$")


def _named_as_device(expression: cst.BaseExpression) -> bool:
    """Whether `expression` is a name (or an attribute) that calls its value a device."""
    name = expression.value if isinstance(expression, cst.Name) else \
        expression.attr.value if isinstance(expression, cst.Attribute) else None
    return name is not None and _DEVICE_VARIABLE.match(name) is not None


def _bound_method_call(call: cst.Call) -> bool:
    """Whether `call` calls a method on an object, which it passes as self (`batch.to_device(rank)`):
    not `super().name(...)` (the parent's method) nor `Class.name(self, ...)` (self given too)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or isinstance(func.value, cst.Call):
        return False
    first = call.args[0].value if call.args else None
    return not (isinstance(first, cst.Name) and first.value in ("self", "cls"))


def _targets(node: cst.CSTNode):
    if isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            yield element.value
    elif isinstance(node, cst.StarredElement):
        yield node.value


class IntegerDevices(Rule):
    """An integer device means a CUDA device in PyTorch; on Ascend it must say "npu".

    `x.to(0)` and `torch.ones(2, device=1)` fail on NPU (torch reads the int as `cuda:N`).  A
    literal becomes `"npu:N"`; a name or option that holds an int wherever the file binds it
    (`local_rank = int(os.environ["LOCAL_RANK"])`, `parser.add_argument("--gpu", type=int)`,
    a parameter annotated `int`) becomes `f"npu:{name}"`.  Anything that might be a
    `torch.device` or a string is left alone: no blanket `isinstance` wrapping.  Such an int
    given as `device=` to a function that another of the project's files defines is reported
    (unsupported_api.csv), not rewritten: whether that function uses it only as a device is read
    in its own file.
    """

    code = "NPU104"
    summary = 'integer devices: x.to(0) -> x.to("npu:0"), device=rank -> device=f"npu:{rank}"'
    # (the last two: an int named for a device given by position to another file's function)
    triggers = (".to(", "device=", "device_id=", ".new_", "to_empty", "device)", "device,")
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example("import torch\nx = x.to(0)\n", 'import torch\nimport torch_npu\nx = x.to("npu:0")\n'),
        Example(
            "import torch\nones = torch.ones(2, device=1)\n",
            'import torch\nimport torch_npu\nones = torch.ones(2, device="npu:1")\n',
        ),
        Example(
            "import os\nimport torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\nmodel.to(local_rank)\n",
            "import os\nimport torch\nimport torch_npu\nlocal_rank = int(os.environ['LOCAL_RANK'])\nmodel.to(f\"npu:{local_rank}\")\n",
        ),
    )
    unchanged = (
        "import torch\nx = x.to(device)\ny = y.to(torch.float16)\n",
        "import torch\ndef f(d):\n    return t.to(d)\n",
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._ints = _IntNames()
        walk(self._ints, node)
        forwarders = _Forwarders()
        walk(forwarders, node)
        self._forwarders, self._forwarding_methods = forwarders.functions, forwarders.unambiguous(forwarders.methods)
        self._mixed, self._mixed_methods = forwarders.mixed, forwarders.unambiguous(forwarders.mixed_methods)
        self._defined = forwarders.defined
        self._torch = next((local for local, targets in (self.import_aliases or {}).items() if "torch" in targets), None)
        self._choices = self._device_choices(node)

    # -- `device = torch.cuda.current_device() if torch.cuda.is_available() else "cpu"` -----------
    def _int_branch(self, choice: cst.CSTNode) -> Optional[str]:
        """"body" or "orelse": the branch of a choice between an int and a string (`rank if ok
        else "cpu"`) that holds the int; None for any other expression."""
        if not isinstance(choice, cst.IfExp):
            return None
        for branch, other in (("body", choice.orelse), ("orelse", choice.body)):
            value = getattr(choice, branch)
            if isinstance(other, cst.SimpleString) and self._is_explicit_candidate(value):
                return branch
        return None

    def _device_choices(self, module: cst.Module) -> Set[int]:
        """The choices bound to a name that the file reads only as a device argument (the one
        binding of the name where it is read): ids of those IfExps, whose int branch is made
        explicit where it stands (a use site's f"npu:{name}" would make "npu:cpu" of the other).
        Only names bound once to such a choice are looked for: most files have none."""
        candidates = {key: bound[0][0] for key, bound in self._ints.values.items()
                      if len(bound) == 1 and key not in self._ints.not_int and self._int_branch(bound[0][0]) is not None}
        if not candidates:
            return set()
        names = {name for _, name in candidates}
        as_device: Dict[tuple, int] = {}
        for call in nodes_within(module, cst.Call):
            for _, arg in self._device_arguments(call):
                if isinstance(arg.value, cst.Name) and arg.value.value in names:
                    key = self._ints._binding(arg.value.value, self._chain_of(arg.value))
                    if key in candidates:
                        as_device[key] = as_device.get(key, 0) + 1
        reads: Dict[tuple, int] = {}
        for name in nodes_within(module, cst.Name) if as_device else ():
            if name.value not in names:
                continue
            parent = self.get_metadata(ParentNodeProvider, name, None)
            if isinstance(parent, (cst.AssignTarget, cst.Attribute, cst.Arg, cst.Param)) and (
                    not isinstance(parent, cst.Arg) or parent.keyword is name) and (
                    not isinstance(parent, cst.Attribute) or parent.attr is name):
                continue  # (a binding, an attribute's or a keyword's name: no read)
            key = self._ints._binding(name.value, self._chain_of(name))
            if key in as_device:
                reads[key] = reads.get(key, 0) + 1
        return {id(candidates[key]) for key, count in as_device.items() if reads.get(key) == count}

    def _device_arguments(self, call: cst.Call, positions=None) -> List[Tuple[int, cst.Arg]]:
        """(index, argument) of the arguments in `call`'s device position (`positions`, or
        _device_positions where not given)."""
        positions = positions or self._device_positions(call)
        if positions is None:
            return []
        keyword, position = positions
        return [(index, arg) for index, arg in enumerate(call.args)
                if (arg.keyword is not None and arg.keyword.value == keyword)
                or (position == index and arg.keyword is None and arg.star == "")]

    def _explicit_choice(self, updated: cst.IfExp, original: cst.IfExp) -> Optional[cst.IfExp]:
        branch = self._int_branch(original)
        explicit = self._explicit(getattr(updated, branch), getattr(original, branch)) if branch else None
        return updated.with_changes(**{branch: explicit}) if explicit is not None else None

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp):
        if id(original_node) not in self._choices:
            return updated_node
        explicit = self._explicit_choice(updated_node, original_node)
        if explicit is None:
            return updated_node
        branch = getattr(original_node, self._int_branch(original_node))
        self.record(original_node, f"change integer device {code_of(branch)} to "
                    f"{code_of(getattr(explicit, self._int_branch(original_node)))}")
        self.context.needs_torch_npu = True
        return explicit

    def _is_explicit_candidate(self, original: cst.BaseExpression) -> bool:
        return isinstance(original, cst.Integer) or self._ints.is_int(original, self._chain_of(original))

    def _chain_of(self, node: cst.CSTNode) -> Tuple[Optional[cst.CSTNode], ...]:
        """The scopes where a name in `node` is looked up (scope_chain)."""
        scopes = []
        parent = self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None:
            if isinstance(parent, _SCOPES):
                scopes.append(parent)
            parent = self.get_metadata(ParentNodeProvider, parent, None)
        return scope_chain(scopes[::-1])

    def _explicit(self, value: cst.BaseExpression, original: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """`value` (the argument as the rules before left it) in its explicit NPU form; whether
        it is an int is judged on the `original` argument."""
        if isinstance(original, cst.Integer):
            if self.context.options.device_per_process:
                return cst.SimpleString('"npu"')  # the process's own NPU, set at start-up
            return cst.SimpleString(f'"npu:{original.value}"')
        if self.context.options.specify_device is not None:
            return cst.SimpleString('"npu"')  # -s: the NPU named by DEVICE_ID
        code = cst.Module(body=()).code_for_node(value)
        if "{" in code or "}" in code or '"' in code:
            return None
        return cst.FormattedString(
            parts=(cst.FormattedStringText("npu:"), cst.FormattedStringExpression(expression=value)),
        )

    def _fsdp_device(self, value: cst.BaseExpression, original: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """FSDP's device_id takes an int or a torch.device: `torch.device("npu", N)`."""
        if self._torch is None or self.context.options.device_per_process:
            # One process per NPU: the script's index need not be the process's NPU; left for
            # a person (the analysis reports the integer device_id).
            return None
        return cst.parse_expression(f'{self._torch}.device("npu", {cst.Module(body=()).code_for_node(value)})')

    def _is_device_call(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in DEVICE_METHODS:
            return True
        return any(name.startswith("torch.") and not name.startswith("torch.cuda") for name in qualified_names(self, func))

    def _device_positions(self, call: cst.Call):
        """(keyword, positional index or None) of `call`'s device argument, or None."""
        func = call.func
        if isinstance(func, cst.Name) and func.value in self._forwarders:
            index, keyword = self._forwarders[func.value]  # a helper that hands it to .to()
            return keyword, index
        if _bound_method_call(call) and func.attr.value in self._forwarding_methods:
            index, keyword = self._forwarding_methods[func.attr.value]  # batch.to_device(rank)
            return keyword, index
        if qualified_names(self, func) & FSDP:
            return "device_id", None
        if not self._is_device_call(call):
            return None
        positional_device = isinstance(func, cst.Attribute) and func.attr.value in ("to", "to_empty")
        return "device", 0 if positional_device else None

    def _report_handed_on(self, call: cst.Call) -> None:
        """`device=<an int>` given to a function of another of the project's files (a method of an
        object, a name no import binds, a relative import or one of the project's own modules),
        or an int that its name calls a device given by position to a function the file imports
        from one of the project's modules (`make_noise(shape, device)`): what it does with the int
        is read there, not here.  Where it hands it to torch's `device=` or `.to()`, torch reads the
        int as a CUDA device (DiT's sampler: `diffusion.p_sample_loop(..., device=rank % count)`
        creates its noise with `torch.randn(..., device=device)`), so the row says how to give it
        an NPU."""
        if not any(arg.keyword.value == "device" if arg.keyword is not None else _named_as_device(arg.value)
                   for arg in call.args):
            return  # (most calls: nothing more to read)
        func = call.func
        callee = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if callee is None or callee in self._defined:
            return  # (this file's own functions are read here: forwarders are rewritten above)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            return  # a method of what a call returns (DeepSpeed's get_accelerator().Stream): whose, is not known
        if _spells_cuda_api(func):
            return  # torch's CUDA API through a name of the module (`torch = _torch()`): not the project's
        own = self.context.options.project_modules_of(self.context.path)
        names = qualified_names(self, func)
        if any(not name.startswith(".") and name.split(".", 1)[0] not in own for name in names):
            return  # torch's, a builtin or another package's, which says what its int means
        # by keyword, to any function of the project; by position, only where an import says it is
        # one (a method of an object, `seg.get("device", device)`, may be a dict's or a list's)
        handed = [arg for arg in call.args if (arg.keyword.value == "device" if arg.keyword is not None
                                               else names and not arg.star and _named_as_device(arg.value))]
        for arg in handed:
            if not self._is_explicit_candidate(arg.value):
                continue
            value, where = code_of(arg.value), code_of(func)
            given = f"device={value}" if arg.keyword is not None else value
            self.report(call, Report.UNSUPPORTED, f"{where}(device=<int>)" if arg.keyword is not None else f"{where}(<int>)",
                        f"{given} hands an integer to {where}, which another file defines: where it reaches torch's "
                        f'device= or .to(), torch reads an int N as cuda:N. Give it f"npu:{{{value}}}" (or '
                        f'torch.device("npu", {value})) if {where} uses it only as a device')

    def _report_used_otherwise(self, call: cst.Call) -> None:
        """An int given to a parameter of the file's own function that hands it to `.to()` or
        `device=` and uses it otherwise too (`def setup(model, rank)` with `rank=rank` beside
        `model.to(rank)`): "npu:N" would reach the other use, the int reaches torch as cuda:N."""
        func = call.func
        found = (self._mixed.get(func.value) if isinstance(func, cst.Name) else
                 self._mixed_methods.get(func.attr.value) if _bound_method_call(call) else None)
        if found is None:
            return
        index, parameter = found
        for position, arg in enumerate(call.args):
            given = (arg.keyword.value == parameter) if arg.keyword is not None else (position == index and not arg.star)
            if given and self._is_explicit_candidate(arg.value):
                where = code_of(func)
                self.report(call, Report.UNSUPPORTED, f"{where}(<int>)",
                            f"{code_of(arg.value)} is an integer handed to {where}'s parameter {parameter}, which "
                            f"gives it to .to() or device= and also uses it otherwise: torch reads an int device "
                            f'as cuda:N; inside {where}, give the device as f"npu:{{{parameter}}}" where it is one')

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        positions = self._device_positions(original_node)
        if positions is None:
            self._report_handed_on(original_node)
            self._report_used_otherwise(original_node)
            return updated_node
        fsdp = positions[0] == "device_id"
        if fsdp and self.context.api.version_tuple[:2] > FSDP_INT_MEANS_CUDA_UNTIL:
            return updated_node  # newer FSDP reads an int as an index of the current accelerator
        new_args = list(updated_node.args)
        changed = False
        for index, arg in self._device_arguments(original_node, positions):
            if not fsdp and self._int_branch(arg.value) is not None:
                # `device=rank if ok else "cpu"`: the int branch only
                explicit = self._explicit_choice(new_args[index].value, arg.value)
            elif not self._is_explicit_candidate(arg.value):
                continue
            elif fsdp:
                explicit = self._fsdp_device(new_args[index].value, arg.value)
            else:
                # Built from the updated argument: other rules may have rewritten inside it
                # (`.to(torch.cuda.current_device())`).
                explicit = self._explicit(new_args[index].value, arg.value)
            if explicit is None:
                continue
            new_args[index] = new_args[index].with_changes(value=explicit)
            old = cst.Module(body=()).code_for_node(arg.value)
            self.record(original_node, f"change integer device {old} to {cst.Module(body=()).code_for_node(explicit)}")
            changed = True
        if not changed:
            return updated_node
        self.context.needs_torch_npu = True
        return updated_node.with_changes(args=new_args)
