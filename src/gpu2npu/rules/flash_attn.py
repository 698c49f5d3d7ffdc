"""flash-attn -> the generated ascend_flash_attn package (flash-attn's API on npu_fusion_attention)."""
from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst
from libcst.metadata import PositionProvider

from .base import Example, Rule
from .names import build_dotted, dotted_name, qualified_names
from .placement import line_before, module_names, pair_with_originals, top_folder_on_sys_path

PACKAGE = "ascend_flash_attn"
COMMENT = f"# gpu2npu: the output's top folder holds the {PACKAGE} package (flash-attn on the NPU)"

_FUNCTIONS = frozenset({
    "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func", "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func",
    "flash_attn_unpadded_func", "flash_attn_unpadded_kvpacked_func", "flash_attn_unpadded_qkvpacked_func",
})
_PADDING = frozenset({"index_first_axis", "index_put_first_axis", "pad_input", "unpad_input"})
# flash-attn's modules the package mirrors -> the names each one provides.
PROVIDED: Dict[str, frozenset] = {
    "flash_attn": _FUNCTIONS | {"__version__", "flash_attn_interface", "bert_padding"},
    "flash_attn.flash_attn_interface": _FUNCTIONS,
    "flash_attn.bert_padding": _PADDING,
}
# Arguments the NPU operator has no counterpart for, with the value that means "not used".
# Arguments the NPU operator has no counterpart for: the values that mean "not used", and what
# to do instead.
REFUSED = {
    "softcap": ((0, 0.0), "softcap: cap the scores with softcap * tanh(scores / softcap) in plain attention"),
    "alibi_slopes": ((None,), "alibi_slopes: build the ALiBi bias and pass it as pse to torch_npu.npu_fusion_attention"),
    "return_attn_probs": ((False,), "return_attn_probs: compute softmax(q @ k^T * scale) yourself where the "
                                    "probabilities are needed"),
    "block_table": ((None,), "block_table: a paged KV cache is decoding; use torch_npu.npu_incre_flash_attention"),
}


class ReroutePlan(cst.CSTVisitor):
    """Which flash-attn imports of a file go to ascend_flash_attn: a `from` import of a mirrored
    module whose every name the package provides, and `import flash_attn [as x]` when every
    attribute the file reads of it is provided.  All of them or none: a file that keeps one
    flash-attn import (of a name the package lacks) needs flash-attn anyway, and half of its
    imports rerouted would be edits that change nothing.  What stays is reported."""

    def __init__(self) -> None:
        super().__init__()
        self.statements: Set[int] = set()  # ids of the Import/ImportFrom nodes to rewrite
        self.names: Set[str] = set()  # the qualified names that then mean the package's
        self._modules: Dict[str, List[cst.Import]] = {}  # local name of `import flash_attn` -> imports
        self._attributes: Dict[str, Set[str]] = {}  # local name -> attributes read of it
        self._keeps_flash_attn = False  # some flash-attn import cannot be rerouted

    @classmethod
    def of(cls, module: cst.Module, code: str) -> "ReroutePlan":
        plan = cls()
        if "flash_attn" in code:
            module.visit(plan)
            plan._settle()
        return plan

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        if isinstance(node.names, cst.ImportStar):
            self._keeps_flash_attn |= (dotted_name(node.module) or "").split(".")[0] == "flash_attn"
            return False
        module = dotted_name(node.module) or ""
        provided = PROVIDED.get(module)
        if provided is not None and all(dotted_name(alias.name) in provided for alias in node.names):
            self.statements.add(id(node))
            self.names.update(f"{module}.{dotted_name(alias.name)}" for alias in node.names)
        elif module.split(".")[0] == "flash_attn":
            self._keeps_flash_attn = True
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name.startswith("flash_attn."):
                self._keeps_flash_attn = True  # `import flash_attn.ops.fused_dense`
            if name != "flash_attn":
                continue
            local = dotted_name(alias.asname.name) if alias.asname else "flash_attn"
            self._modules.setdefault(local, []).append(node)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name):
            self._attributes.setdefault(node.value.value, set()).add(node.attr.value)

    def _settle(self) -> None:
        for local, imports in self._modules.items():
            attributes = self._attributes.get(local, set())
            # `import os, flash_attn` is left (and reported) rather than split
            if not attributes <= PROVIDED["flash_attn"] or any(len(node.names) != 1 for node in imports):
                self._keeps_flash_attn = True
                continue
            self.statements.update(id(node) for node in imports)
            self.names.update(f"flash_attn.{name}" for name in attributes)
        if self._keeps_flash_attn:
            self.statements.clear()
            self.names.clear()


def refused_arguments(call: cst.Call) -> List[str]:
    """The arguments of a flash-attn call that the NPU operator cannot honour (the package
    raises NotImplementedError for them), as written."""
    found = []
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value not in REFUSED:
            continue
        value = arg.value
        if isinstance(value, cst.Name) and value.value in ("None", "False"):
            constant = None if value.value == "None" else False
        elif isinstance(value, (cst.Integer, cst.Float)):
            constant = value.evaluated_value
        else:
            constant = "unknown"
        if constant not in REFUSED[arg.keyword.value][0]:
            found.append(f"{arg.keyword.value}={cst.Module(body=()).code_for_node(value)}")
    return found


class FlashAttnToNpu(Rule):
    """flash-attn's kernels are CUDA-only; its attention functions have an NPU counterpart,
    `torch_npu.npu_fusion_attention`.  The imports of flash-attn's attention functions
    (`flash_attn_func`, `flash_attn_varlen_func`, the packed forms, the 1.x `unpadded` names) and
    of its `bert_padding` helpers are pointed at the generated `ascend_flash_attn` package,
    written at the top of the output when a file uses it, which implements the same signatures on
    npu_fusion_attention for the chosen release: layout BSND (TND with cumulative sequence ends for
    varlen), the scale (1/sqrt(head_dim) by default), keep_prob = 1 - dropout_p, causal as the
    bottom-right aligned causal sparse mode, window_size as a band mask, fewer key/value heads
    (GQA).  The calls themselves are unchanged.  What the operator cannot do (softcap, ALiBi
    slopes, return_attn_probs, a paged KV cache, a window with varlen) raises NotImplementedError
    at the call, and calls passing those are listed in unsupported_api.csv.  An import naming
    anything else of flash-attn (`flash_attn_with_kvcache`, its layers and losses) is left as
    written and reported, and so are the file's other flash-attn imports (it needs flash-attn
    anyway).  `a, b, c, d = unpad_input(...)` (flash-attn before 2.6 returned four
    values; the package returns five, as 2.6 and later) becomes `unpad_input(...)[:4]`.  The file
    gets a line that puts the output's top folder on sys.path before its first such import.
    """

    code = "NPU261"
    summary = "flash-attn attention functions -> generated ascend_flash_attn on torch_npu.npu_fusion_attention"
    triggers = ("flash_attn",)
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import torch\nfrom flash_attn import flash_attn_func\n\n"
            "def attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
            "import torch\nimport os\nimport sys\n\n" + COMMENT + "\n" + top_folder_on_sys_path("example.py")
            + "from ascend_flash_attn import flash_attn_func\n\n"
            "def attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
        ),
        Example(
            "import os\nimport sys\ntry:\n"
            "    from flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func\n"
            "    from flash_attn.bert_padding import pad_input, unpad_input\nexcept ImportError:\n"
            "    flash_attn_varlen_qkvpacked_func = None\n\n"
            "def forward(x, mask):\n    x_unpad, indices, cu_seqlens, max_s = unpad_input(x, mask)\n"
            "    return pad_input(x_unpad, indices, x.shape[0], x.shape[1])\n",
            "import os\nimport sys\n\n" + COMMENT + "\n" + top_folder_on_sys_path("example.py") + "try:\n"
            "    from ascend_flash_attn.flash_attn_interface import flash_attn_varlen_qkvpacked_func\n"
            "    from ascend_flash_attn.bert_padding import pad_input, unpad_input\nexcept ImportError:\n"
            "    flash_attn_varlen_qkvpacked_func = None\n\n"
            "def forward(x, mask):\n    x_unpad, indices, cu_seqlens, max_s = unpad_input(x, mask)[:4]\n"
            "    return pad_input(x_unpad, indices, x.shape[0], x.shape[1])\n",
        ),
        Example(
            "import flash_attn\nfrom packaging import version\n"
            "NEW = version.parse(flash_attn.__version__) >= version.parse('2.1')\n"
            "out = flash_attn.flash_attn_func(q, k, v)\n",
            "import os\nimport sys\n\n" + COMMENT + "\n" + top_folder_on_sys_path("example.py")
            + "import ascend_flash_attn as flash_attn\nfrom packaging import version\n"
            "NEW = version.parse(flash_attn.__version__) >= version.parse('2.1')\n"
            "out = flash_attn.flash_attn_func(q, k, v)\n",
        ),
    )
    unchanged = (
        # a name the package does not provide: the whole statement stays, and is reported
        "from flash_attn import flash_attn_func, flash_attn_with_kvcache\n",
        # ... and the file's other flash-attn imports with it
        "from flash_attn.bert_padding import pad_input\nfrom flash_attn.cute import flash_attn_func\n",
        "import flash_attn\nfrom flash_attn.layers.rotary import apply_rotary_emb\nx = flash_attn.ops.rms_norm\n",
        "from flash_attn.losses.cross_entropy import CrossEntropyLoss\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.plan: Optional[ReroutePlan] = None
        self.first_statement: Optional[int] = None  # index of the top-level statement of the first rewrite

    def visit_Module(self, node: cst.Module) -> None:
        self.plan = ReroutePlan.of(node, node.code)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if id(original_node) not in self.plan.statements:
            return updated_node
        module = dotted_name(original_node.module)
        target = PACKAGE + module[len("flash_attn"):]
        self.record(original_node, f"change {module} to {target} (flash-attn's functions on "
                    "torch_npu.npu_fusion_attention, written into the output)")
        self._used(original_node)
        return updated_node.with_changes(module=build_dotted(target))

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        if id(original_node) not in self.plan.statements:
            return updated_node
        alias = updated_node.names[0]
        local = alias.asname if alias.asname is not None else cst.AsName(name=cst.Name("flash_attn"))
        self.record(original_node, f"change import flash_attn to import {PACKAGE} (flash-attn's functions on "
                    "torch_npu.npu_fusion_attention, written into the output)")
        self._used(original_node)
        return updated_node.with_changes(names=[alias.with_changes(name=cst.Name(PACKAGE), asname=local)])

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        # flash-attn < 2.6 returned four values from unpad_input; the package returns five.
        target = original_node.targets[0].target if len(original_node.targets) == 1 else None
        call = original_node.value
        if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 4 and isinstance(call, cst.Call)
                and "flash_attn.bert_padding.unpad_input" in self.plan.names
                and "flash_attn.bert_padding.unpad_input" in qualified_names(self, call.func)):
            return updated_node
        self.record(call, "take the first four values of unpad_input (ascend_flash_attn returns five, "
                    "as flash-attn 2.6 and later)")
        sliced = cst.Subscript(value=updated_node.value, slice=[cst.SubscriptElement(
            slice=cst.Slice(lower=None, upper=cst.Integer("4")))])
        return updated_node.with_changes(value=sliced)

    def _used(self, node: cst.CSTNode) -> None:
        line = self.get_metadata(PositionProvider, node).start.line
        if self.first_statement is None or line < self.first_statement:
            self.first_statement = line

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self.first_statement is None:
            return updated_node
        body = list(updated_node.body)
        pairs = pair_with_originals(body, original_node.body, self.context.inserted)
        index = next(i for i, (_, original) in enumerate(pairs) if original is not None
                     and self.lines_of(original)[1] >= self.first_statement)
        bootstrap = top_folder_on_sys_path(self.context.path)
        new = list(cst.parse_module(bootstrap, config=updated_node.config_for_parsing).body)
        new[0] = new[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(comment=cst.Comment(COMMENT))])
        bound = module_names(body[:index])
        for module in ("sys", "os"):
            if module not in bound:
                new.insert(0, cst.parse_statement(f"import {module}" + updated_node.default_newline))
        anchor = line_before(pairs, index, self.lines_of, len(original_node.header))
        for statement in new:
            self.context.inserted.add(id(statement))
        body[index:index] = new
        self.record_insert(anchor, f"insert the output's top folder into sys.path (for {PACKAGE})")
        return updated_node.with_changes(body=body)
