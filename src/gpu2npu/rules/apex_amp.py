"""-a MODEL_VAR: native AMP (autocast + GradScaler) of one model becomes Ascend apex AMP."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Operation, Report
from .base import Edit, Example, Rule
from .names import dotted_name, qualified_names
from .placement import insert_after_imports
from .walk import ParentNodeProvider, walk

GRAD_SCALERS = {
    "torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
}
AUTOCASTS = {
    "torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast",
    "torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast",
}
CLIPS = {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm",
         "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_value_"}
FP16 = {"torch.float16", "torch.half"}
# apex O2: the model runs in float16 with float32 master weights and dynamic loss scaling, whose
# defaults (initial scale 2**16, x2 after 2000 good steps, /2 on overflow) are GradScaler's.
OPT_LEVEL = "O2"
LOSS_SCALE = "dynamic"
SCALED = "scaled_loss"


@dataclass
class _Use:
    kind: str  # backward, step, update, unscale, get_scale, is_enabled, state_dict, load_state_dict
    node: cst.CSTNode  # the statement (statement kinds) or the call (expression kinds)
    function: Optional[cst.CSTNode]
    optimizer: Optional[str] = None
    key_owner: Optional[str] = None  # load_state_dict(CHECKPOINT[...]): CHECKPOINT


@dataclass
class _Plan:
    """What the conversion of one file does, decided before anything is changed."""

    scaler: str
    optimizer: str
    construction: cst.SimpleStatementLine
    enabled: Optional[str]  # code of GradScaler(enabled=...), None when always on
    anchor: cst.CSTNode  # the statement after which model and optimizer exist
    amp: str = "amp"
    statements: Dict[int, str] = field(default_factory=dict)  # id(original statement) -> action
    calls: Dict[int, str] = field(default_factory=dict)  # id(original call) -> action
    optimizer_loads: Dict[int, cst.Subscript] = field(default_factory=dict)  # id(statement) -> checkpoint[...]
    optimizer_dicts: Set[int] = field(default_factory=set)  # ids of Dict nodes that get the amp state
    withs: Dict[int, Set[int]] = field(default_factory=dict)  # id(With) -> ids of its autocast items


def _only_expression(statement: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Expr):
        return statement.body[0].value
    return None


def _assignment(statement: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(target, value) of `target = value` / `target: T = value` standing alone on its line."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = dotted_name(small.targets[0].target)
        return None if target is None else (target, small.value)
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        target = dotted_name(small.target)
        return None if target is None else (target, small.value)
    return None


def _is_literal(expression: cst.BaseExpression) -> bool:
    return isinstance(expression, cst.Name) and expression.value in ("True", "False")


class _Survey(cst.CSTVisitor):
    """Everything the conversion needs to know about a file, read from the original tree."""

    def __init__(self, rule: "ApexAmp") -> None:
        super().__init__()
        self.rule = rule
        self.model = rule.context.options.amp_model
        self.functions: List[Optional[cst.CSTNode]] = [None]
        self.function_of: Dict[int, Optional[cst.CSTNode]] = {}
        self.constructions: Dict[str, List[cst.SimpleStatementLine]] = {}
        self.optimizers: Dict[str, List[cst.SimpleStatementLine]] = {}
        self.autocast_items: List[Tuple[cst.With, cst.WithItem, bool]] = []  # (with, item, removable)
        self.clips: List[cst.Call] = []
        self.names: Dict[str, List[cst.CSTNode]] = {}  # dotted name -> nodes spelling it
        self.optimizer_state_calls: List[cst.Call] = []
        self.optimizer_loads: List[cst.SimpleStatementLine] = []
        self.binds_amp = False
        self.attribute_names: Set[int] = set()  # ids of the `attr` Names of attributes

    def _qualified(self, node) -> Set[str]:
        return qualified_names(self.rule, node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.function_of[id(node)] = self.functions[-1]
        assigned = _assignment(node)
        if assigned is None:
            return
        target, value = assigned
        if isinstance(value, cst.Call) and self._qualified(value.func) & GRAD_SCALERS:
            self.constructions.setdefault(target, []).append(node)
        elif isinstance(value, cst.Call) and _mentions_parameters(value, self.model):
            self.optimizers.setdefault(target, []).append(node)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and self._qualified(call.func) & AUTOCASTS and item.asname is None:
                self.autocast_items.append((node, item, self._float16_autocast(call)))

    def _float16_autocast(self, call: cst.Call) -> bool:
        """Whether apex O2 (float16) does what this autocast did: a CUDA autocast to float16."""
        generic = not (self._qualified(call.func) & {"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
        for index, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword else None
            if generic and (name == "device_type" or (name is None and index == 0)):
                if not (isinstance(arg.value, cst.SimpleString) and arg.value.raw_value == "cuda"):
                    return False
            elif name == "dtype" or (not generic and name is None and index == 1):
                if not self._qualified(arg.value) & FP16:
                    return False
            elif name not in ("enabled", "cache_enabled") and not (not generic and name is None and index == 0):
                return False
        return True

    def visit_Call(self, node: cst.Call) -> None:
        self.function_of[id(node)] = self.functions[-1]
        if self._qualified(node.func) & CLIPS and node.args and _is_parameters_call(node.args[0].value, self.model):
            self.clips.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self.attribute_names:
            return  # `x.scaler` is not the name `scaler`
        self.names.setdefault(node.value, []).append(node)
        if node.value == "amp":
            self.binds_amp = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attribute_names.add(id(node.attr))
        name = dotted_name(node)
        if name is not None:
            self.names.setdefault(name, []).append(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        # `from apex import amp` is the import this conversion wants, not a clash.
        if isinstance(node.names, cst.ImportStar) or dotted_name(node.module or cst.Name("")) == "apex":
            return False
        return True


def _is_parameters_call(node: cst.CSTNode, model: str) -> bool:
    return isinstance(node, cst.Call) and not node.args and dotted_name(node.func) == f"{model}.parameters"


def _mentions_parameters(call: cst.Call, model: str) -> bool:
    """Whether an optimizer is built from `model.parameters()` (also in param groups, filter(...))."""
    found = []

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if _is_parameters_call(node, model):
                found.append(node)

    for arg in call.args:
        walk(_Finder(), arg)
    return bool(found)


class ApexAmp(Rule):
    """`-a MODEL_VAR`: the native mixed precision (torch.cuda.amp / torch.amp autocast and
    GradScaler) that trains MODEL_VAR becomes Ascend apex AMP, as the Ascend multi-card migration of pytorch/examples imagenet does:

    - `from apex import amp` is imported (as `apex_amp` where the file already uses the name `amp`);
    - the GradScaler is replaced by `model, optimizer = amp.initialize(model, optimizer,
      opt_level="O2", loss_scale="dynamic")` where both exist (`enabled=` is passed on); the
      optimizer is the one the scaler steps, and it must be built from `MODEL_VAR.parameters()`;
      O2 and dynamic loss scaling (the Ascend imagenet multi-card guide and the Ascend apex guide) keep GradScaler's schedule;
    - `scaler.scale(loss).backward()` becomes `with amp.scale_loss(loss, optimizer) as scaled_loss:
      scaled_loss.backward()`; `scaler.step(optimizer)` becomes `optimizer.step()`;
      `scaler.update()` and `scaler.unscale_(optimizer)` go (apex unscales when `scale_loss` ends);
    - float16 autocast contexts go, their bodies kept (O2 casts the model itself);
    - gradient clipping of `MODEL_VAR.parameters()` next to the step clips `amp.master_params(optimizer)`,
      the float32 weights apex steps;
    - checkpoints: `"amp": amp.state_dict()` is saved next to the optimizer state (or in place of
      the scaler's) and `amp.load_state_dict(...)` follows `optimizer.load_state_dict(...)`, when
      the checkpoint has it (checkpoints written before the migration do not);
    - `scaler.get_scale()` reads the loss scale from `amp.state_dict()`.

    A scaler used in any other way, stepping several optimizers, or an optimizer not built from
    MODEL_VAR.parameters() is left as native NPU AMP and reported in unsupported_api.csv.
    """

    code = "NPU251"
    summary = "-a: native AMP of the model (autocast, GradScaler) -> Ascend apex amp"
    fix_safety = "unsafe"
    triggers = ("GradScaler",)
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "import torch\n"
            "from torch.cuda.amp import autocast, GradScaler\n"
            "model = Net().cuda()\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "scaler = GradScaler()\n"
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    with autocast():\n"
            "        loss = model(x.cuda()).sum()\n"
            "    scaler.scale(loss).backward()\n"
            "    scaler.step(optimizer)\n"
            "    scaler.update()\n",
            "import torch\n"
            # importing torch_npu.npu.amp loads torch_npu; the names stay imported, unused
            "from torch_npu.npu.amp import autocast, GradScaler\n"
            "from apex import amp\n"
            "model = Net().npu()\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            'model, optimizer = amp.initialize(model, optimizer, opt_level="O2", loss_scale="dynamic")\n'
            "for x, y in loader:\n"
            "    optimizer.zero_grad()\n"
            "    loss = model(x.npu()).sum()\n"
            "    with amp.scale_loss(loss, optimizer) as scaled_loss:\n"
            "        scaled_loss.backward()\n"
            "    optimizer.step()\n",
            amp_model="model",
        ),
        Example(
            "import torch\n"
            "def main(args):\n"
            "    model = Net().to('cuda')\n"
            "    optimizer = torch.optim.AdamW(model.parameters())\n"
            "    scaler = torch.amp.GradScaler('cuda', enabled=args.amp)\n"
            "    if args.resume:\n"
            "        checkpoint = torch.load(args.resume)\n"
            "        optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "    with torch.autocast('cuda', dtype=torch.float16, enabled=args.amp):\n"
            "        loss = model(batch)  # forward\n"
            "    scaler.scale(loss).backward()\n"
            "    # clip the true gradients\n"
            "    scaler.unscale_(optimizer)\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    scaler.step(optimizer)\n"
            "    scaler.update()\n"
            "    torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, 'last.pt')\n",
            "import torch\n"
            "import torch_npu\n"
            "from apex import amp\n"
            "def main(args):\n"
            "    model = Net().to('npu')\n"
            "    optimizer = torch.optim.AdamW(model.parameters())\n"
            '    model, optimizer = amp.initialize(model, optimizer, opt_level="O2", loss_scale="dynamic", enabled=args.amp)\n'
            "    if args.resume:\n"
            "        checkpoint = torch.load(args.resume)\n"
            "        optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "        if args.amp and 'amp' in checkpoint:\n"
            "            amp.load_state_dict(checkpoint['amp'])\n"
            "    loss = model(batch)  # forward\n"
            "    with amp.scale_loss(loss, optimizer) as scaled_loss:\n"
            "        scaled_loss.backward()\n"
            "    # clip the true gradients\n"
            "    torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)\n"
            "    optimizer.step()\n"
            "    torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), "
            "'amp': amp.state_dict() if args.amp else {}}, 'last.pt')\n",
            amp_model="model",
        ),
    )
    unchanged = (
        # the scaler steps an optimizer of another model: reported, left as native AMP
        "import torch\nopt = torch.optim.SGD(head.parameters())\nscaler = torch.cuda.amp.GradScaler()\n"
        "scaler.scale(loss).backward()\nscaler.step(opt)\nscaler.update()\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.model = context.options.amp_model
        self.plan: Optional[_Plan] = None

    # -- deciding ----------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        survey = _Survey(self)
        walk(survey, node)
        self.survey = survey
        plans = []
        for scaler, statements in survey.constructions.items():
            plan, problem = self._plan_for(scaler, statements, survey)
            if plan is None:
                for statement in statements:
                    call = _assignment(statement)[1]
                    self.report(statement, Report.UNSUPPORTED, min(qualified_names(self, call.func) & GRAD_SCALERS),
                                f"-a {self.model}: left as native NPU AMP, {problem}; convert it to apex "
                                "amp.initialize/amp.scale_loss by hand if it trains the same model")
            else:
                plans.append(plan)
        if len(plans) > 1:
            for plan in plans:
                self.report(plan.construction, Report.UNSUPPORTED, "torch.cuda.amp.GradScaler",
                            f"-a {self.model}: several GradScalers step optimizers of {self.model}: apex needs one "
                            "amp.initialize with all of them (num_losses=...); convert by hand")
            return
        if plans:
            self.plan = plans[0]
            self._claim(self.plan, survey)

    def _plan_for(self, scaler: str, statements, survey: _Survey) -> Tuple[Optional[_Plan], str]:
        if len(statements) != 1:
            return None, f"{scaler} is built more than once"
        construction = statements[0]
        call = _assignment(construction)[1]
        enabled = None
        for index, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword else None
            if name == "enabled":
                enabled = arg.value
            elif not (name in ("device", None) and index == 0 and isinstance(arg.value, cst.SimpleString)
                      and arg.value.raw_value == "cuda"):
                return None, f"GradScaler argument {cst.Module(body=()).code_for_node(arg).strip(', ')} has no apex equivalent"
        uses, problem = self._uses(scaler, construction, survey)
        if uses is None:
            return None, problem
        optimizers = {use.optimizer for use in uses if use.optimizer is not None}
        if len(optimizers) != 1:
            return None, f"{scaler} steps {len(optimizers) or 'no'} optimizers"
        optimizer = optimizers.pop()
        built = survey.optimizers.get(optimizer)
        if not built:
            return None, f"the optimizer it steps, {optimizer}, is not built from {self.model}.parameters() in this file"
        anchor = self._common_statement(built)
        if anchor is None:
            return None, f"{optimizer} is built in several places"
        enabled_code = None if enabled is None or (isinstance(enabled, cst.Name) and enabled.value == "True") else (
            cst.Module(body=()).code_for_node(enabled))
        construction_function = survey.function_of[id(construction)]
        same_block = self._block_of(construction) is self._block_of(anchor)
        if enabled_code is not None and not _is_literal(enabled):
            if not same_block:
                return None, f"its enabled= flag is not known where {optimizer} is built"
            checkpoint_uses = [u for u in uses if u.kind in ("state_dict", "load_state_dict", "get_scale", "is_enabled")]
            if any(use.function is not construction_function for use in checkpoint_uses):
                return None, "its state is read where its enabled= flag is not known"
        plan = _Plan(scaler, optimizer, construction, enabled_code, anchor)
        plan.amp = "apex_amp" if survey.binds_amp else "amp"
        for use in uses:
            (plan.statements if use.kind in _STATEMENT_KINDS else plan.calls)[id(use.node)] = use.kind
        # The body of the construction's statement is replaced by amp.initialize when the model
        # and the optimizer already exist there; otherwise amp.initialize follows the optimizer.
        after_anchor = same_block and self.lines_of(construction)[0] > self.lines_of(anchor)[1]
        plan.statements[id(construction)] = "initialize" if after_anchor else "delete"
        if not after_anchor:
            plan.statements[id(anchor)] = "initialize after"
        if not any(use.kind in ("state_dict", "load_state_dict") for use in uses):
            self._plan_checkpoints(plan, survey, construction_function)
        return plan, ""

    def _plan_checkpoints(self, plan: _Plan, survey: _Survey, construction_function) -> None:
        """The amp state travels with the optimizer state (the Ascend imagenet multi-card guide, steps 13-14)."""
        for node in survey.names.get(f"{plan.optimizer}.state_dict", ()):
            call = self.get_metadata(ParentNodeProvider, node, None)
            element = call and self.get_metadata(ParentNodeProvider, call, None)
            owner = element and self.get_metadata(ParentNodeProvider, element, None)
            if not (isinstance(call, cst.Call) and isinstance(element, cst.DictElement) and isinstance(owner, cst.Dict)):
                continue
            if plan.enabled is not None and survey.function_of.get(id(call)) is not construction_function:
                continue
            keys = [e.key.raw_value for e in owner.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)]
            if "amp" not in keys:
                plan.optimizer_dicts.add(id(owner))
        for node in survey.names.get(f"{plan.optimizer}.load_state_dict", ()):
            call = self.get_metadata(ParentNodeProvider, node, None)
            expression = self.get_metadata(ParentNodeProvider, call, None) if isinstance(call, cst.Call) else None
            statement = expression and self.get_metadata(ParentNodeProvider, expression, None)
            if not (isinstance(statement, cst.SimpleStatementLine) and _only_expression(statement) is call):
                continue
            owner = _subscript_owner(call.args[0].value) if len(call.args) == 1 else None
            if owner is None:
                continue
            if plan.enabled is not None and survey.function_of.get(id(statement)) is not construction_function:
                continue
            plan.optimizer_loads[id(statement)] = call.args[0].value

    def _uses(self, scaler: str, construction, survey: _Survey):
        uses: List[_Use] = []
        target = construction.body[0].targets[0].target if isinstance(construction.body[0], cst.Assign) else (
            construction.body[0].target)
        for node in survey.names.get(scaler, ()):
            if node is target or self._inside(node, target):
                continue
            parent = self.get_metadata(ParentNodeProvider, node, None)
            if isinstance(parent, cst.Attribute) and dotted_name(parent) is not None and parent.value is node:
                use = self._method_use(parent, survey)
                if use is not None:
                    uses.append(use)
                    continue
            line = self.lines_of(node)[0]
            return None, f"{scaler} is used in a way gpu2npu does not convert (line {line})"
        return uses, ""

    def _inside(self, node, ancestor) -> bool:
        while node is not None:
            if node is ancestor:
                return True
            node = self.get_metadata(ParentNodeProvider, node, None)
        return False

    def _method_use(self, attribute: cst.Attribute, survey: _Survey) -> Optional[_Use]:
        call = self.get_metadata(ParentNodeProvider, attribute, None)
        if not (isinstance(call, cst.Call) and call.func is attribute):
            return None
        method = attribute.attr.value
        args = call.args
        positional = all(arg.keyword is None and not arg.star for arg in args)
        function = survey.function_of.get(id(call))
        if method in ("get_scale", "is_enabled") and not args:
            return _Use(method, call, function)
        if method == "state_dict" and not args:
            element = self.get_metadata(ParentNodeProvider, call, None)
            if isinstance(element, cst.DictElement) and element.value is call:
                return _Use("state_dict", call, function)
            return None
        if method == "scale":
            backward_attr = self.get_metadata(ParentNodeProvider, call, None)
            backward = backward_attr and self.get_metadata(ParentNodeProvider, backward_attr, None)
            if not (len(args) == 1 and positional and isinstance(backward_attr, cst.Attribute)
                    and backward_attr.attr.value == "backward" and isinstance(backward, cst.Call)):
                return None
            statement = self._statement_of(backward)
            return None if statement is None else _Use("backward", statement, function)
        statement = self._statement_of(call)
        if statement is None or not positional:
            return None
        if method in ("step", "unscale_") and len(args) == 1 and dotted_name(args[0].value) is not None:
            return _Use("step" if method == "step" else "unscale", statement, function, optimizer=dotted_name(args[0].value))
        if method == "update" and not args:
            return _Use("update", statement, function)
        if method == "load_state_dict" and len(args) == 1 and _subscript_owner(args[0].value) is not None:
            return _Use("load_state_dict", statement, function, key_owner=_subscript_owner(args[0].value))
        return None

    def _statement_of(self, call: cst.Call) -> Optional[cst.SimpleStatementLine]:
        expression = self.get_metadata(ParentNodeProvider, call, None)
        statement = expression and self.get_metadata(ParentNodeProvider, expression, None)
        if isinstance(statement, cst.SimpleStatementLine) and _only_expression(statement) is call:
            return statement
        return None

    def _block_of(self, statement):
        """The block (IndentedBlock or Module) a statement stands in."""
        return self.get_metadata(ParentNodeProvider, statement, None)

    def _common_statement(self, statements):
        """The innermost statement holding every assignment of the optimizer (if/else branches)."""
        if len(statements) == 1:
            return statements[0]
        chains = []
        for statement in statements:
            chain, node = [], statement
            while node is not None:
                chain.append(node)
                node = self.get_metadata(ParentNodeProvider, node, None)
            chains.append(chain)
        for candidate in chains[0]:
            if isinstance(candidate, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return None
            if isinstance(candidate, cst.BaseCompoundStatement) and all(
                any(c is candidate for c in chain) for chain in chains[1:]
            ):
                return candidate
        return None

    def _claim(self, plan: _Plan, survey: _Survey) -> None:
        claimed = self.context.claimed
        claimed[id(plan.construction)] = self.code
        for with_node, item, removable in survey.autocast_items:
            if removable:
                plan.withs.setdefault(id(with_node), set()).add(id(item))
                claimed[id(item)] = self.code
            else:
                self.report(item, Report.UNSUPPORTED, "torch.autocast",
                            f"-a {self.model}: kept: apex O2 computes in float16, this autocast asks for another "
                            "dtype or device; remove it if the model should follow apex")
        for clip in survey.clips:
            if survey.function_of.get(id(clip)) in {survey.function_of.get(s) for s, kind in plan.statements.items()
                                                    if kind == "step"}:
                plan.calls[id(clip)] = "clip"
            else:
                self.report(clip, Report.UNSUPPORTED, "torch.nn.utils.clip_grad_norm_",
                            f"-a {self.model}: under apex O2 the optimizer steps float32 master weights: clip "
                            f"{plan.amp}.master_params(optimizer) instead of {self.model}.parameters()")

    # -- rewriting ---------------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        plan = self.plan
        if plan is None or id(original_node) not in plan.calls:
            return updated_node
        kind = plan.calls[id(original_node)]
        amp = plan.amp
        if kind == "clip":
            self.record(original_node, f"clip {amp}.master_params({plan.optimizer}), the weights apex steps")
            first = updated_node.args[0].with_changes(value=cst.parse_expression(f"{amp}.master_params({plan.optimizer})"))
            return updated_node.with_changes(args=[first, *updated_node.args[1:]])
        if kind == "get_scale":
            q = self._quote_inside(original_node)
            text = f"{amp}.state_dict()[{q}loss_scaler0{q}][{q}loss_scale{q}]"
            if plan.enabled is not None and not self._guarded_by_enabled(original_node):
                text = f"({text} if {plan.enabled} else 1.0)"
            self.record(original_node, f"read the loss scale from {amp}.state_dict()")
            return cst.parse_expression(text)
        if kind == "is_enabled":
            self.record(original_node, f"{plan.scaler}.is_enabled() becomes its enabled flag")
            return cst.parse_expression(f"({plan.enabled})" if plan.enabled is not None else "True")
        return updated_node

    def _quote_inside(self, node: cst.CSTNode) -> str:
        """A quote that may stand at `node`: not the one of an f-string around it (Python < 3.12)."""
        while node is not None:
            if isinstance(node, cst.FormattedString):
                return "'" if '"' in node.start else '"'
            node = self.get_metadata(ParentNodeProvider, node, None)
        return '"'

    def _guarded_by_enabled(self, call: cst.Call) -> bool:
        """`scaler.get_scale() if use_amp else ...` already asks the flag."""
        parent = self.get_metadata(ParentNodeProvider, call, None)
        return isinstance(parent, cst.IfExp) and parent.body is call and (
            cst.Module(body=()).code_for_node(parent.test) == self.plan.enabled)

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict):
        plan = self.plan
        if plan is None:
            return updated_node
        value = f"{plan.amp}.state_dict()" + (f" if {plan.enabled} else {{}}" if plan.enabled is not None else "")
        elements = list(updated_node.elements)
        for index, (element, original) in enumerate(zip(elements, original_node.elements)):
            if isinstance(original, cst.DictElement) and plan.calls.get(id(original.value)) == "state_dict":
                quote = original.key.quote if isinstance(original.key, cst.SimpleString) else '"'
                elements[index] = element.with_changes(key=cst.SimpleString(f"{quote}amp{quote}"),
                                                       value=cst.parse_expression(value))
                self.record(original, f"save {plan.amp}.state_dict() instead of the GradScaler state")
                return updated_node.with_changes(elements=elements)
        if id(original_node) not in plan.optimizer_dicts:
            return updated_node
        for index, original in enumerate(original_node.elements):
            if not (isinstance(original, cst.DictElement) and isinstance(original.value, cst.Call)
                    and dotted_name(original.value.func) == f"{plan.optimizer}.state_dict"):
                continue
            element = elements[index]
            quote = original.key.quote if isinstance(original.key, cst.SimpleString) else '"'
            had_comma = not isinstance(element.comma, cst.MaybeSentinel)
            if had_comma:
                comma = element.comma
            else:
                neighbours = [e.comma for e in elements[:index] if not isinstance(e.comma, cst.MaybeSentinel)]
                comma = neighbours[-1] if neighbours else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            new = cst.DictElement(key=cst.SimpleString(f"{quote}amp{quote}"), value=cst.parse_expression(value),
                                  comma=element.comma if had_comma else cst.MaybeSentinel.DEFAULT)
            elements[index:index + 1] = [element.with_changes(comma=comma), new]
            start, end = self.lines_of(original)
            if isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
                if not had_comma:
                    self.record(original, "add a comma for the amp state")
                self.record_insert(end, f"save {plan.amp}.state_dict() with the optimizer state")
            else:
                self.record(original, f"save {plan.amp}.state_dict() with the optimizer state")
            return updated_node.with_changes(elements=elements)
        return updated_node

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        if self.plan is None:
            return updated_node
        body = self._rewrite_block(original_node.body, updated_node.body)
        if not body:
            body = [cst.SimpleStatementLine(body=[cst.Pass()])]
        return updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self.plan is None:
            return updated_node
        updated_node = updated_node.with_changes(body=self._rewrite_block(original_node.body, updated_node.body))
        if self.plan.amp == "amp" and "apex.amp" in _imported(original_node):
            return updated_node
        line = "from apex import amp" + ("" if self.plan.amp == "amp" else " as apex_amp")
        return insert_after_imports(self, original_node, updated_node, line + updated_node.default_newline, (),
                                    f"insert {line} (Ascend apex)", needs=())

    def _rewrite_block(self, original_body, updated_body) -> list:
        plan = self.plan
        originals = iter(original_body)
        result: list = []
        carried: list = []  # comment lines of removed statements, for the next statement kept
        for statement in updated_body:
            original = None if statement in self.context.inserted else next(originals, None)
            action = plan.statements.get(id(original)) if original is not None else None
            if original is not None and id(original) in plan.withs:
                new, carried = self._unwrap(original, statement, carried)
            elif action == "initialize after":
                new = self._rewrite_statement(action, original, statement)
            elif action is None or not isinstance(statement, cst.SimpleStatementLine):
                new = [statement]
            else:
                new = self._rewrite_statement(action, original, statement)
            if new is None:  # deleted
                carried = carried + [line for line in statement.leading_lines]
                continue
            if carried and new:
                new[0] = new[0].with_changes(leading_lines=[*carried, *new[0].leading_lines])
                carried = []
            result.extend(new)
        if carried:
            comments = [line for line in carried if line.comment is not None]
            if comments:
                result.append(cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carried))
        return result

    def _initialize_line(self) -> str:
        plan = self.plan
        model, optimizer = self.model, plan.optimizer
        enabled = f", enabled={plan.enabled}" if plan.enabled is not None else ""
        return (f"{model}, {optimizer} = {plan.amp}.initialize({model}, {optimizer}, opt_level=\"{OPT_LEVEL}\", "
                f"loss_scale=\"{LOSS_SCALE}\"{enabled})")

    def _rewrite_statement(self, action: str, original, statement: cst.SimpleStatementLine):
        plan, amp = self.plan, self.plan.amp
        if action == "initialize":
            self.record(original, f"replace {plan.scaler} = GradScaler(...) with {amp}.initialize(...) (apex O2)")
            small = cst.parse_statement(self._initialize_line() + "\n").body[0]
            return [statement.with_changes(body=[small])]
        if action == "initialize after":
            new = cst.parse_statement(self._initialize_line() + "\n")
            self.context.inserted.add(new)
            self.record_insert(self.lines_of(original)[1], f"insert {amp}.initialize({self.model}, {plan.optimizer}, ...) (apex O2)")
            return [statement, new]
        if action in ("delete", "update", "unscale"):
            what = {"delete": f"{plan.scaler} = GradScaler(...): amp.initialize replaces it",
                    "update": f"{plan.scaler}.update(): apex updates the loss scale itself",
                    "unscale": f"{plan.scaler}.unscale_(...): apex unscales when scale_loss ends"}[action]
            self.record(original, f"remove {what}", Operation.DELETE)
            return None
        if action == "step":
            self.record(original, f"change {plan.scaler}.step({plan.optimizer}) to {plan.optimizer}.step()")
            return [statement.with_changes(body=[cst.Expr(cst.parse_expression(f"{plan.optimizer}.step()"))])]
        if action == "backward":
            backward = _only_expression(statement)
            loss = backward.func.value.args[0].value
            inner = cst.SimpleStatementLine(
                body=[cst.Expr(backward.with_changes(func=backward.func.with_changes(value=cst.Name(SCALED))))],
                trailing_whitespace=statement.trailing_whitespace,
            )
            scale = cst.Call(func=cst.parse_expression(f"{amp}.scale_loss"),
                             args=[cst.Arg(loss, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                                   cst.Arg(cst.parse_expression(plan.optimizer))])
            new = cst.With(items=[cst.WithItem(scale, asname=cst.AsName(cst.Name(SCALED)))],
                           body=cst.IndentedBlock(body=[inner]), leading_lines=statement.leading_lines)
            start, end = self.lines_of(original)
            self.record(original, f"change {plan.scaler}.scale(loss).backward() to with {amp}.scale_loss(loss, "
                        f"{plan.optimizer}) as {SCALED}: {SCALED}.backward()")
            self.record_insert(end, f"{SCALED}.backward() inside {amp}.scale_loss")
            return [new]
        if action == "load_state_dict":
            return [self._guarded_load(original, statement, _only_expression(original).args[0].value, replace=True)]
        return [statement]

    def _guarded_load(self, original, statement, subscript: cst.Subscript, replace: bool):
        """`if "amp" in checkpoint: amp.load_state_dict(checkpoint["amp"])`: checkpoints written
        before the migration have no amp state, and resuming from them must keep working."""
        plan, amp = self.plan, self.plan.amp
        owner, q = _subscript_owner(subscript), subscript.slice[0].slice.value.quote
        condition = f"{q}amp{q} in {owner}"
        if plan.enabled is not None:
            condition = f"{plan.enabled} and {condition}"
        text = f"if {condition}:\n    {amp}.load_state_dict({owner}[{q}amp{q}])\n"
        guarded = cst.parse_statement(text)
        if replace:
            self.record(original, f"load the amp state with {amp}.load_state_dict (GradScaler state is not apex's)")
            return guarded.with_changes(leading_lines=statement.leading_lines)
        return guarded

    def _unwrap(self, original: cst.With, statement, carried):
        """Remove the autocast items of a with statement; with none left, its body takes its place."""
        if not isinstance(statement, cst.With):
            return [statement], carried
        removed = self.plan.withs[id(original)]
        kept = [item for item, old in zip(statement.items, original.items) if id(old) not in removed]
        start = self.lines_of(original)[0]
        header_end = self.lines_of(original.body.body[0])[0] - 1 if isinstance(original.body, cst.IndentedBlock) else start
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            self.edits.append(Edit(start, start, Operation.MODIFY, "remove autocast from the with statement (apex O2 casts)"))
            return [statement.with_changes(items=kept)], carried
        if not isinstance(statement.body, cst.IndentedBlock):
            body = [cst.SimpleStatementLine(body=list(statement.body.body))]
        else:
            body = list(statement.body.body)
        lead = list(statement.leading_lines)
        header = statement.body.header if isinstance(statement.body, cst.IndentedBlock) else None
        if header is not None and header.comment is not None:
            lead.append(cst.EmptyLine(comment=header.comment))
        body[0] = body[0].with_changes(leading_lines=[*carried, *lead, *body[0].leading_lines])
        end = self.lines_of(original)[1]
        self.edits.append(Edit(start, max(start, header_end), Operation.DELETE,
                                "remove the autocast context (apex O2 casts the model)"))
        if end > header_end:
            self.edits.append(Edit(header_end + 1, end, Operation.MODIFY, "dedent the body of the removed autocast context"))
        footer = list(statement.body.footer) if isinstance(statement.body, cst.IndentedBlock) else []
        return body, footer

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)
        plan = self.plan
        if plan is None or not isinstance(original_node, cst.SimpleStatementLine):
            return updated_node
        subscript = plan.optimizer_loads.get(id(original_node))
        if subscript is None:
            return updated_node
        guarded = self._guarded_load(original_node, updated_node, subscript, replace=False)
        self.context.inserted.add(guarded)
        self.record_insert(self.lines_of(original_node)[1], f"insert {plan.amp}.load_state_dict after the optimizer state")
        return cst.FlattenSentinel([updated_node, guarded])


_STATEMENT_KINDS = ("backward", "step", "update", "unscale", "load_state_dict")


def _subscript_owner(node: cst.CSTNode) -> Optional[str]:
    """`checkpoint` of `checkpoint["key"]`."""
    if (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
            and isinstance(node.slice[0].slice.value, cst.SimpleString)):
        return dotted_name(node.value)
    return None


def _imported(module: cst.Module) -> Set[str]:
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar) and small.module:
                    for alias in small.names:
                        names.add(f"{dotted_name(small.module)}.{dotted_name(alias.name)}")
    return names
