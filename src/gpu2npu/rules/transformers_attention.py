"""transformers' attn_implementation="flash_attention_2", decided by the transformers the project pins."""
from __future__ import annotations

from typing import NamedTuple, Optional

import libcst as cst
from libcst.metadata import PositionProvider

from ..records.change import Finding, Report
from ..records.finding_kinds import LEFT_ON_PURPOSE, TRANSFORMERS_FLASH_ATTENTION, TRANSFORMERS_FLEX_ATTENTION
from ..knowledge.tips import FLEX_ATTENTION_CHOICE, TRANSFORMERS_ATTENTION_VALUES, tip_for
from ..knowledge.transformers_attention import sdpa_runs, verdict
from .base import Example, Rule
from .walk import ParentNodeProvider

FLASH, FLEX = TRANSFORMERS_ATTENTION_VALUES  # (FlexAttention calls torch's flex_attention: no NPU tensors)
OPTION = "attn_implementation"


class TransformersFlashAttention(Rule):
    """transformers' `attn_implementation="flash_attention_2"` runs on an NPU only where the
    transformers release routes it to `torch_npu.npu_fusion_attention`: 4.51 to 4.53, and 4.55.3
    on.  Before 4.51, and from 4.54.0 to 4.55.2, it asks for the flash-attn package, which does
    not install on Ascend, and the model does not load.  The transformers the project pins
    (requirements files, pyproject.toml, setup.py/setup.cfg, environment files of the input)
    decides: where every release it allows runs it, the value stays (the log says why); where
    none does, it becomes `"sdpa"` (scaled_dot_product_attention, which torch_npu runs with its
    fused attention), or `"eager"` (torch's own attention) where the pin allows releases before
    4.48, which run sdpa only from torch 2.1.1 on, and the run's torch is older; where the pin
    does not decide (none, or a range across both), it stays and is reported (NPU927).  The value counts where it is given to transformers: the
    `attn_implementation` keyword, a dict entry of that key, an assignment to a name or attribute
    of that name, or the default of such an option (dataclass field, argparse), or one of the
    values a conditional expression gives it; comparisons with it are left as they are.
    `"flex_attention"` in the same places is reported (NPU931): no transformers release runs it on
    an NPU, as torch's flex_attention raises for NPU tensors.
    """

    code = "NPU266"
    summary = 'attn_implementation="flash_attention_2" -> "sdpa" where the pinned transformers cannot run it on NPU'
    triggers = TRANSFORMERS_ATTENTION_VALUES
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)
    examples = (
        Example(
            "from transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"flash_attention_2\")\n",
            "from transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"sdpa\")\n",
            transformers="==4.50.0",
        ),
        # before 4.48, transformers runs sdpa from torch 2.1.1 on: with torch 2.1.0 (the examples'
        # -v 2.1.0), torch's own attention
        Example(
            "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation='flash_attention_2')\n",
            "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation='eager')\n",
            transformers="==4.45.0",
        ),
        Example(
            "from dataclasses import dataclass, field\n\n\n@dataclass\nclass ModelArguments:\n"
            "    attn_implementation: str = field(default='flash_attention_2')\n\n\n"
            "kwargs = {'attn_implementation': 'flash_attention_2', 'torch_dtype': 'auto'}\n",
            "from dataclasses import dataclass, field\n\n\n@dataclass\nclass ModelArguments:\n"
            "    attn_implementation: str = field(default='sdpa')\n\n\n"
            "kwargs = {'attn_implementation': 'sdpa', 'torch_dtype': 'auto'}\n",
            transformers=">=4.54,<4.55",
        ),
        # one of the values a choice hands to the option
        Example(
            "model = AutoModel.from_pretrained(name, attn_implementation='flash_attention_2' if fast else 'eager')\n",
            "model = AutoModel.from_pretrained(name, attn_implementation='sdpa' if fast else 'eager')\n",
            transformers="==4.50.0",
        ),
    )
    unchanged = (
        # a variable of the program's own (which it may compare or hand on): not the option itself
        "attn_implementation = 'flash_attention_2'\nif attn_implementation == 'flash_attention_2' and not ok:\n"
        "    attn_implementation = 'sdpa'\n",
        # no transformers pinned: reported (NPU927), not changed
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"flash_attention_2\")\n",
        # a comparison reads the option, it does not choose it (also as a choice's test)
        "if args.attn_implementation == 'flash_attention_2':\n    tokenizer.padding_side = 'left'\n",
        "model = AutoModel.from_pretrained(name, attn_implementation='x' if 'flash_attention_2' in seen else 'y')\n",
        # the words in prose
        "print('flash_attention_2 is fastest on GPUs')\nHELP = 'flash_attention_2'\n",
    )

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        value = original_node.evaluated_value
        if value not in (FLASH, FLEX) or not chooses_attention(self, original_node):
            return updated_node
        choice = attention_choice(value, self.context.options.transformers, self.context.api.torch_version)
        if choice.report is not None:
            start, end = self.lines_of(original_node)
            self.findings.append(Finding(self.context.path, start, end, choice.report, choice.api, choice.text, choice.kind))
            return updated_node
        self.record(original_node, choice.text)
        quote = original_node.quote
        return updated_node.with_changes(value=f"{original_node.prefix}{quote}{choice.value}{quote}")


class AttentionChoice(NamedTuple):
    """What becomes of an attention option's value: a finding (`report`, `api`, `text` its tip,
    `kind` its code) where it stays, or the value it becomes (report None, `text` the change's
    message, `value` "sdpa" or "eager")."""

    report: Optional[Report]
    api: str
    text: str
    kind: str = ""
    value: str = "sdpa"


def attention_choice(value: str, spec: Optional[str], torch_version: str) -> AttentionChoice:
    """The decision for `attn_implementation=value` (FLASH or FLEX) under the transformers
    requirement `spec` the project pins and the run's torch: the Python code's (NPU266) and its
    launch scripts' (NPU506)."""
    if value == FLEX:  # no transformers runs it on the NPU: reported, left as written
        return AttentionChoice(Report.UNSUPPORTED, FLEX_ATTENTION_CHOICE, tip_for(FLEX_ATTENTION_CHOICE),
                               TRANSFORMERS_FLEX_ATTENTION.code)
    api = f'{OPTION}="{FLASH}"'
    decided = verdict(spec)
    if decided is True:
        return AttentionChoice(Report.NOTE, api, f"transformers {spec} runs it on the NPU with "
                               "torch_npu.npu_fusion_attention", LEFT_ON_PURPOSE.code)
    if decided is None:
        return AttentionChoice(Report.UNSUPPORTED, api, (
            "transformers " + (f"{spec} allows releases" if spec else "is not pinned: releases") + " that run it "
            "on the NPU (4.51-4.53, 4.55.3 on) and releases that need the flash-attn package, which Ascend "
            "does not have (before 4.51, 4.54.0-4.55.2): pin transformers>=4.55.3, or use "
            "attn_implementation=\"sdpa\""), TRANSFORMERS_FLASH_ATTENTION.code)
    if not sdpa_runs(spec, torch_version):  # (-v 2.1.0: transformers before 4.48 runs sdpa from torch 2.1.1 on)
        return AttentionChoice(None, api, f"flash_attention_2 -> eager: transformers {spec} needs the flash-attn "
                               f"package for it, which does not install on Ascend, and runs sdpa with torch {torch_version} "
                               "only from 4.48.0 on (before, it raises ImportError below torch 2.1.1); eager is torch's "
                               "own attention (transformers>=4.55.3 runs flash_attention_2 on the NPU)", value="eager")
    return AttentionChoice(None, api, f"flash_attention_2 -> sdpa: transformers {spec} needs the flash-attn package "
                           "for it, which does not install on Ascend (sdpa runs torch_npu's fused attention; "
                           "transformers>=4.55.3 runs flash_attention_2 on the NPU)")


def chooses_attention(rule, node: cst.SimpleString) -> bool:
    """Whether the string is the value handed to transformers' attention option (`rule` declares
    ParentNodeProvider)."""
    parent = rule.get_metadata(ParentNodeProvider, node, None)
    # one of the values a choice gives the option (`"flash_attention_2" if fast else "sdpa"`)
    while isinstance(parent, cst.IfExp) and node is not parent.test:
        node, parent = parent, rule.get_metadata(ParentNodeProvider, parent, None)
    if isinstance(parent, cst.Arg) and parent.keyword is not None:
        if parent.keyword.value == OPTION:
            return True
        if parent.keyword.value == "default":  # field(default=...), add_argument(..., default=...)
            call = rule.get_metadata(ParentNodeProvider, parent, None)
            return isinstance(call, cst.Call) and _names_the_option(rule, call)
        return False
    if isinstance(parent, cst.DictElement) and parent.value is node:
        key = parent.key
        return isinstance(key, cst.SimpleString) and key.evaluated_value == OPTION
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
        return _stores_the_option(parent)
    return False


def _names_the_option(rule, call: cst.Call) -> bool:
    """A call whose result is stored under the option's name (a dataclass field), or an
    argparse option of that name."""
    for arg in call.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString) and \
                OPTION in (arg.value.evaluated_value or "").replace("-", "_"):
            return True
    holder = rule.get_metadata(ParentNodeProvider, call, None)
    return isinstance(holder, (cst.Assign, cst.AnnAssign)) and holder.value is call and _stores_the_option(holder)


def _stores_the_option(statement) -> bool:
    """An assignment to an attribute of that name (`config._attn_implementation = ...`) or an
    annotated field of it (a dataclass's); a plain variable of that name may be the program's own
    choice (vLLM's), not what it hands to transformers."""
    if isinstance(statement, cst.AnnAssign):
        targets = [statement.target]
    else:
        targets = [t.target for t in statement.targets if isinstance(t.target, cst.Attribute)]
    names = [target.value if isinstance(target, cst.Name) else target.attr.value if isinstance(target, cst.Attribute)
             else "" for target in targets]
    return any(name.lstrip("_") == OPTION for name in names)
