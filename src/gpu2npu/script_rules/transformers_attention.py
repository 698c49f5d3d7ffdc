"""--attn_implementation flash_attention_2 in a launch script or a YAML config, decided as the
Python code's attn_implementation="flash_attention_2" is (NPU266, rules.transformers_attention.attention_choice):
by the transformers the project pins."""
from __future__ import annotations

import re
from typing import ClassVar, Optional

from ..records.finding_kinds import LEFT_ON_PURPOSE, TRANSFORMERS_FLASH_ATTENTION, TRANSFORMERS_FLEX_ATTENTION
from ..rules.transformers_attention import attention_choice
from .base import LineEdit, LineReport, ScriptExample, ScriptRule, option_values

# `--attn_implementation flash_attention_2`, `--attn-implementation=flash_attention_2`, or a YAML
# `attn_implementation: flash_attention_2`, quoted or not.
PATTERN = re.compile(
    r"(?<![\w.-])(?P<name>(?:--?)?attn[_-]implementation)(?P<separator>\s*=\s*|:\s+|\s+)(?P<quote>['\"]?)"
    r"(?P<value>flash_attention_2|flex_attention)(?P=quote)(?![\w.-])"
)


class TransformersAttentionOption(ScriptRule):
    """A launch script or config that passes `--attn_implementation flash_attention_2` overrides
    whatever the Python code chooses, so it is decided the same way (NPU266): where every
    transformers release the project pins runs it on the NPU (4.51 to 4.53, 4.55.3 on: on
    torch_npu.npu_fusion_attention) it stays, noted in the log; where none does (they need the
    flash-attn package, which does not install on Ascend) it becomes `sdpa`; where the pin does not
    decide it stays and is reported.  `flex_attention` is reported: no transformers release runs
    it on an NPU.
    """

    code = "NPU506"
    summary = "launch scripts and configs: --attn_implementation flash_attention_2 -> sdpa where the pinned transformers cannot run it"
    triggers = ("flash_attention_2", "flex_attention")
    examples = (
        ScriptExample("torchrun train.py --attn_implementation flash_attention_2 --bf16 True\n",
                      "torchrun train.py --attn_implementation sdpa --bf16 True\n", transformers="==4.50.0"),
        # (before 4.48 sdpa wants torch 2.1.1; the examples' torch is 2.1.0)
        ScriptExample("torchrun train.py --attn_implementation flash_attention_2\n",
                      "torchrun train.py --attn_implementation eager\n", transformers="==4.45.0"),
        ScriptExample("model:\n  attn_implementation: flash_attention_2\n", "model:\n  attn_implementation: sdpa\n",
                      path="config.yaml", transformers="==4.50.0"),
        ScriptExample("python train.py --attn_implementation=flash_attention_2\n",
                      "python train.py --attn_implementation=flash_attention_2\n",
                      reported=('attn_implementation="flash_attention_2"',)),
    )
    unchanged = ("python train.py --attn_implementation sdpa\n", "# use flash_attention_2 on GPUs\n")

    # (the same findings as the Python code's: NPU927 undecided, NPU931 flex_attention, NPU915 the note)
    finding_kinds = (TRANSFORMERS_FLASH_ATTENTION.code, TRANSFORMERS_FLEX_ATTENTION.code, LEFT_ON_PURPOSE.code)
    transformers: ClassVar[Optional[str]] = None  # the project's transformers requirement (Options.transformers)
    torch_version: ClassVar[str] = "2.1.0"  # the run's torch (what runs "sdpa" depends on it)

    @classmethod
    def for_project(cls, options):
        if options.transformers is None:
            return cls
        return cls.with_settings(transformers=options.transformers, torch_version=options.api.torch_version)

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match in option_values(PATTERN, line, reports):
            choice = attention_choice(match.group("value"), cls.transformers, cls.torch_version)
            if choice.report is None:
                edits.append(LineEdit(match.start("value"), match.end("value"), choice.value, choice.text))
            else:
                reports.append(LineReport(choice.report, choice.api, choice.text, choice.kind))
        return edits, reports
