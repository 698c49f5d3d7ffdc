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
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from .affinity_facts import (FileFacts, Matcher, Scope, argument, collect, end_line, int_value, int_values,
                             mentions, target_names)
from ..knowledge.apidata import ApiData
from ..knowledge.tf32 import TF32_SWITCHES, hf32_switch
from ..records.change import Finding, Report
from ..records.finding_kinds import TF32_ADVICE

if TYPE_CHECKING:
    from ..reading.scan import FileScan

# Rule codes of the advice (the Finding.rule field), with what each one finds.
ADVICE = {
    "NPU951": "hand-written RMSNorm -> torch_npu.npu_rms_norm",
    "NPU952": "rotary embedding with rotate_half -> torch_npu.npu_rotary_mul",
    "NPU953": "silu(gate) * up -> torch_npu.npu_swiglu",
    "NPU954": "softmax(q @ k^T) @ v attention -> torch_npu.npu_fusion_attention",
    "NPU955": "torch optimizer -> torch_npu.optim fused optimizer",
    "NPU956": "swin-style torch.roll -> torch_npu.contrib.function.roll",
    "NPU957": "x[condition] = value -> torch_npu.contrib.function.npu_fast_condition_index_put",
    "NPU958": "DropPath -> torch_npu.contrib.module.NpuDropPath",
    "NPU959": "multiclass_nms -> torch_npu.contrib.function.npu_multiclass_nms",
    "NPU960": "torchvision RoIAlign -> torch_npu.contrib.module.ROIAlign",
    "NPU961": "torch RMSNorm -> torch_npu.npu_rms_norm",
    "NPU962": "TF32 switch (no effect on the NPU) -> torch_npu.npu.matmul/conv.allow_hf32",
}

# torch optimizers with a fused counterpart in torch_npu.optim (tips.FUSED_OPTIMIZERS: those whose own
# fused=True has an ATen kernel).
NPU_FUSED_OPTIMIZERS = {
    "torch.optim.Adam": "torch_npu.optim.NpuFusedAdam",
    "torch.optim.AdamW": "torch_npu.optim.NpuFusedAdamW",
    "torch.optim.SGD": "torch_npu.optim.NpuFusedSGD",
    "torch.optim.RMSprop": "torch_npu.optim.NpuFusedRMSprop",
    "torch.optim.Adadelta": "torch_npu.optim.NpuFusedAdadelta",
}
SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
SILU = {"torch.nn.functional.silu"}
RSQRT = {"torch.rsqrt"}
SQRT = {"torch.sqrt"}
ROI_ALIGN = {"torchvision.ops.roi_align", "torchvision.ops.RoIAlign", "torchvision.ops.roi_align.roi_align",
             "torchvision.ops.roi_align.RoIAlign"}
TORCH_RMS_NORM = {"torch.nn.RMSNorm", "torch.nn.modules.normalization.RMSNorm", "torch.nn.functional.rms_norm"}
SDPA = "torch.nn.functional.scaled_dot_product_attention"

# The last names of every API call looked at (a cheap filter before resolving names).
CALLED_NAMES = ({q.rsplit(".", 1)[1] for q in (*NPU_FUSED_OPTIMIZERS, *ROI_ALIGN, *TORCH_RMS_NORM, SDPA)} | {"roll"})
NUMPY_LIKE = ("numpy", "cv2", "PIL", "pandas", "scipy")
HOST_METHODS = ("numpy", "copy", "astype", "tolist")  # methods of arrays, not of tensors


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

    # NPU951
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
                centered |= target_names(assign)
            line = self._mean_square_line(value, centered, mean_squares)
            for name in target_names(assign):
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
            self.add(min(line, node.lineno), end_line(node), "NPU951", Report.AFFINITY, "special",
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
            if (isinstance(squared, ast.BinOp) and isinstance(squared.op, ast.Sub)) or mentions(squared, centered):
                continue
            return sub.lineno
        return None

    # NPU952
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
            self.add(node.lineno, end_line(node), "NPU952", Report.AFFINITY, "special",
                     "x * cos + rotate_half(x) * sin", replacement,
                     f"rotary position embedding in {scope.name}: torch_npu.npu_rotary_mul(x, cos, sin) applies it "
                     "in one kernel; x, cos and sin must be 4-D with cos/sin broadcastable to x (e.g. [B, S, 1, D] "
                     "or [1, S, 1, D] for a [B, S, N, D] x), and rotate_half's half-split layout is its default mode")

    # NPU953
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
            for name in target_names(assign):  # a half changed after the split (clamped...)
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
                self.add(start, end_line(node), "NPU953", Report.AFFINITY, "special", "silu(gate) * up", replacement, tip)
                break

    def _two_way_split(self, assign) -> Optional[ast.Call]:
        """The call of `a, b = x.chunk(2, dim=-1)` / `torch.chunk(x, 2, -1)`, else None."""
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0], ast.Tuple) and len(assign.targets[0].elts) == 2
                and all(isinstance(e, ast.Name) for e in assign.targets[0].elts)):
            return None
        call = assign.value
        if self.match.method_call(call, "chunk") is not None and call.args and int_value(call.args[0]) == 2:
            return call
        if self.match.function_call(call, {"torch.chunk"}) and len(call.args) >= 2 and int_value(call.args[1]) == 2:
            return call
        return None

    # NPU954
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
                return node.args[0] if node.args else argument(node, 0, "input")
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
            targets = target_names(assign)
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
            self.add(min(lines[0], node.lineno), end_line(node), "NPU954", Report.AFFINITY, "special",
                     "softmax(q @ k^T * scale + mask) @ v", replacement,
                     f"attention written out in {scope.name}: torch_npu.npu_fusion_attention(q, k, v, head_num, "
                     "input_layout='BNSD', scale=..., atten_mask=..., keep_prob=1 - dropout) runs it as one "
                     "flash-attention kernel and returns a tuple (use [0]); its atten_mask is boolean with True = "
                     "masked out (not an additive -inf mask); for inference only, npu_prompt_flash_attention"
                     + (f"; or call torch.nn.functional.scaled_dot_product_attention, which torch_npu "
                        f"{self.api.torch_npu_version} implements with its own kernel" if sdpa_native else ""))

    def _is_einsum(self, node) -> bool:
        return isinstance(node, ast.Call) and "torch.einsum" in self.match.names.qualified(node.func)

    # NPU955, NPU956, NPU960, NPU961 and scaled_dot_product_attention: calls of known APIs
    def api_calls(self, scope: Scope) -> None:
        names = self.facts.names
        for call in scope.calls:
            func = call.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if last not in CALLED_NAMES:
                continue
            if not names.is_imported(func):
                if self.match.method_call(call, "roll") is not None:
                    self._roll(call, scope, "x.roll", 0)
                continue
            # A name imported as several things (`try: from apex... import X` / `except ImportError:
            # from torch... import X`) may be any of them: the NPU runs the torch one.
            for qualified in sorted(names.qualified(func)):
                if self._known_call(call, scope, qualified):
                    break

    def _known_call(self, call: ast.Call, scope: Scope, qualified: str) -> bool:
        """Advise on a call of `qualified` where there is advice on it; whether there was."""
        if qualified in NPU_FUSED_OPTIMIZERS:
            self._optimizer(call, qualified)
        elif qualified == "torch.roll":
            self._roll(call, scope, qualified, 1)
        elif qualified in ROI_ALIGN:
            self.add(call.lineno, end_line(call), "NPU960", Report.AFFINITY, "torchvision", qualified,
                     "torch_npu.contrib.module.ROIAlign",
                     "torchvision's RoIAlign has no NPU kernel; torch_npu.contrib.module.ROIAlign(output_size, "
                     "spatial_scale, sampling_ratio, aligned=...) runs torch_npu.npu_roi_align: its aligned "
                     "defaults to True (torchvision: False), so pass it explicitly; results differ slightly")
        elif qualified in TORCH_RMS_NORM and not ({"rms_norm", "_fused_rms_norm"} & self.api.native_functions):
            self.add(call.lineno, end_line(call), "NPU961", Report.AFFINITY, "torch", qualified,
                     "torch_npu.npu_rms_norm",
                     f"torch_npu {self.api.torch_npu_version} has no kernel of its own for rms_norm (it runs as "
                     "separate pow/mean/rsqrt/mul ops): torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0] is one "
                     "kernel; it normalises over the trailing dimensions of weight's shape")
        elif qualified == SDPA and "scaled_dot_product_attention" not in self.api.native_functions:
            self.add(call.lineno, end_line(call), "NPU954", Report.AFFINITY, "torch", qualified,
                     "torch_npu.npu_fusion_attention",
                     f"torch_npu {self.api.torch_npu_version} runs scaled_dot_product_attention as separate ops: "
                     "torch_npu.npu_fusion_attention(q, k, v, head_num, input_layout='BNSD', scale=...)[0] is "
                     "one kernel; its atten_mask is boolean with True = masked out")
        else:
            return False
        return True

    # NPU962: the TF32 switches set the precision of float32 matmuls and convolutions on CUDA only
    def tf32_switches(self, scope: Scope) -> None:
        if "allow_tf32" not in scope.words:
            return
        for assign in scope.assigns:
            targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
            for target in targets:
                candidates = self.facts.names.qualified(target) if isinstance(target, ast.Attribute) else ()
                switches = ((name, hf32_switch(self.api, name)) for name in sorted(candidates))
                qualified, switch = next(((name, switch) for name, switch in switches if switch), (None, None))
                if qualified is None:
                    continue
                _, what, default = TF32_SWITCHES[qualified]
                self.findings.append(Finding(
                    self.path, assign.lineno, end_line(assign), Report.PERFORMANCE, qualified,
                    f"{qualified} only sets how CUDA computes float32 {what}; on the NPU it changes nothing. "
                    f"The NPU's counterpart is HF32 (float32 {what} computed with a shorter mantissa, like "
                    f"TF32): {switch} = True or False, {default} by default",
                    TF32_ADVICE, "torch", switch))

    def _optimizer(self, call: ast.Call, qualified: str) -> None:
        replacement = NPU_FUSED_OPTIMIZERS[qualified]
        accepted = self.api.optimizer_signatures.get(replacement, ())
        extra = [k.arg for k in call.keywords if k.arg is not None and k.arg not in accepted]
        if accepted and not any(p.startswith("**") for p in accepted) and extra:
            drop = "; it takes no " + ", ".join(extra) + (": leave it out" if len(extra) == 1 else ": leave them out")
        else:
            drop = ""
        self.add(call.lineno, end_line(call), "NPU955", Report.PERFORMANCE, "torch", qualified, replacement,
                 f"{replacement} updates all parameters in a few fused kernels instead of several ops per "
                 f"tensor (same hyperparameters{drop}); parameters must be float32 or float16 (not bfloat16) "
                 "and are combined into contiguous buffers at the first step, so build it after the model is on "
                 "the NPU; clip gradients with optimizer.clip_grad_norm_fused_(max_norm)")

    def _roll(self, call: ast.Call, scope: Scope, name: str, shift_index: int) -> None:
        shifts = argument(call, shift_index, "shifts")
        dims = argument(call, shift_index + 1, "dims")
        if not (isinstance(shifts, ast.Tuple) and len(shifts.elts) == 2 and dims is not None and int_values(dims) == (1, 2)):
            return
        if "torch_npu" in scope.words:
            return
        self.add(call.lineno, end_line(call), "NPU956", Report.AFFINITY, "torch", "torch.roll",
                 "torch_npu.contrib.function.roll",
                 f"swin-style shifted window in {scope.name}: torch_npu.contrib.function.roll(x, shifts, dims) does "
                 "the roll of a 4-D [N, H, W, C] tensor over dims (1, 2) with a cached index_select, faster on NPU; "
                 "it requires exactly that layout and two shifts")

    # NPU957
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
            targets = target_names(assign)
            if self._is_condition(value, conditions):
                conditions |= targets
            if self._host_value(value) or mentions(value, host_arrays):
                host_arrays |= targets
        for assign in scope.mask_stores:
            target = assign.targets[0]
            if not self._is_condition(target.slice, conditions) or mentions(target.value, host_arrays):
                continue
            replacement = _masked_fill(assign)
            self.add(assign.lineno, end_line(assign), "NPU957", Report.AFFINITY, "special", "input[condition] = value",
                     "torch_npu.contrib.function.npu_fast_condition_index_put",
                     f"boolean-mask assignment in {scope.name}: on NPU it becomes a nonzero (a result of data-"
                     "dependent shape, which synchronises with the host) plus an index_put; "
                     + (f"here: {replacement} " if replacement else "")
                     + "(x.masked_fill_(condition, value), or npu_fast_condition_index_put(x, condition, value) = "
                     "torch.where(condition, value, x)) keeps shapes static; only for torch tensors with a bool "
                     "condition and a scalar or broadcastable value")

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
                if any(name.split(".")[0] in NUMPY_LIKE for name in self.facts.names.qualified(sub.func)):
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
        for parameter in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            annotation = parameter.annotation
            if annotation is not None and any(
                    name.split(".")[0] in NUMPY_LIKE
                    for sub in ast.walk(annotation) if isinstance(sub, (ast.Name, ast.Attribute))
                    for name in self.facts.names.qualified(sub)):
                found.add(parameter.arg)
        return found

    # NPU958, NPU959: user classes and functions torch_npu.contrib has fast versions of
    def definitions(self) -> None:
        for qualified, node in self.facts.classes:
            if node.name == "DropPath":
                self.add(node.lineno, node.lineno, "NPU958", Report.AFFINITY, "class", qualified,
                         "torch_npu.contrib.module.NpuDropPath",
                         "torch_npu.contrib.module.NpuDropPath(drop_prob) draws its random masks ahead of time on a "
                         "side stream; it drops nothing unless NpuDropPath.enable_droppath_ensemble(model) is called "
                         "once on the model, and it does not support dynamic shapes")
        for qualified, node in self.facts.functions:
            if node.name == "multiclass_nms":
                self.add(node.lineno, node.lineno, "NPU959", Report.AFFINITY, "function", qualified,
                         "torch_npu.contrib.function.npu_multiclass_nms",
                         "torch_npu.contrib.function.npu_multiclass_nms(multi_bboxes, multi_scores, score_thr, "
                         "nms_thr, max_num) runs the NMS on the NPU; it takes nms_thr as a float, pads its output to "
                         "max_num (no -1) and with dynamic shapes handles at most 20 classes and 10000 boxes")

    def rotate_names(self) -> Set[str]:
        """Functions that rotate half of the last dimension: those of this file returning
        cat((-x2, x1), -1) (whatever their name: an interleaved `rotate_half_pairs` is another
        layout), and `rotate_half` imported from another module."""
        found = {name for name, targets in self.facts.names.bound.items()
                 if any(target.endswith(".rotate_half") for target in targets)}
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


def find_affinity(file_scan: "FileScan", path: str, api: ApiData) -> List[Finding]:
    """Advice for one scanned file: fused torch_npu replacements that exist in `api`'s release."""
    facts = collect(file_scan.tree, file_scan.imports)
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
        detector.tf32_switches(scope)
    detector.definitions()
    return sorted(set(detector.findings))


# A file none of whose bytes match cannot hold any advice: it is not even parsed for it.
_MIGHT_HAVE_ADVICE = re.compile(
    rb"softmax|sqrt|silu|SiLU|cat\(|optim|roll|DropPath|multiclass_nms|roi_align|RoIAlign|RMSNorm|rms_norm"
    rb"|scaled_dot_product|allow_tf32|\]\s*=\s*-?\.?\d")


def _masked_fill(assign: ast.Assign) -> Optional[str]:
    """`x.masked_fill_(condition, value)` written with the assignment's own expressions."""
    target = assign.targets[0]
    try:
        return (f"`{ast.unparse(target.value)}.masked_fill_({ast.unparse(target.slice)}, "
                f"{ast.unparse(assign.value)})`")
    except (AttributeError, ValueError, RecursionError):  # (ast.unparse: Python 3.9+)
        return None


# Advice is for code that runs on the device, once per source of truth: not in files generated
# from another (transformers' modeling files generated from modular_*.py say so in their first
# lines), not in a definition copied from another ("# Copied from ..." above it: the original has
# the row), not in host-side preprocessing (tokenizers, image/video/feature processors, data
# collators, conversion scripts).
_GENERATED = re.compile(rb"automatically generated from|This file was automatically generated|DO NOT EDIT", re.IGNORECASE)
_HOST_SIDE = re.compile(r"(^|/)(image_processing|video_processing|feature_extraction|processing|tokenization|convert|"
                        r"data_collator)[^/]*\.py$")
_COPIED = "# Copied from"


def generated_file(data: bytes) -> bool:
    return _GENERATED.search(data[:4096]) is not None


def _copied_spans(data: bytes, file_scan: "FileScan") -> List[Tuple[int, int]]:
    if _COPIED.encode() not in data:
        return []
    lines = data.split(b"\n")
    spans = []
    for node in file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        first = min([decorator.lineno for decorator in node.decorator_list] + [node.lineno])
        if first >= 2 and _COPIED.encode() in lines[first - 2]:
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def advice_for_source(data: bytes, path: str, api: ApiData, file_scan: "FileScan") -> List[Finding]:
    """find_affinity for a parsed file (its bytes and its scan, whose tree and definitions it
    reads): [] for what is not device code or not the source of truth (see _GENERATED)."""
    if b"torch" not in data or not _MIGHT_HAVE_ADVICE.search(data):
        return []
    if _HOST_SIDE.search(path) or generated_file(data):
        return []
    try:
        found = find_affinity(file_scan, path, api)
    except RecursionError:
        return []
    copied = _copied_spans(data, file_scan)
    return [row for row in found if not any(first <= row.start_line <= last for first, last in copied)]
