"""--optim adamw_bnb_8bit in a launch script, or `optim: paged_adamw_8bit` in a config: transformers
builds a bitsandbytes optimizer from it, as from the Python code's optim="adamw_bnb_8bit" (NPU910),
and bitsandbytes' kernels are CUDA kernels."""
from __future__ import annotations

import re

from ..knowledge.hf_optimizers import HF_BITSANDBYTES_OPTIMIZERS, NAME_WORDS, bitsandbytes_optimizer_tip
from ..records.change import Report
from ..records.finding_kinds import FUSED_OPTIMIZER
from .base import LineReport, ScriptExample, ScriptRule, option_values

# `--optim adamw_bnb_8bit`, `--optim=paged_adamw_8bit`, or a YAML `optim: adamw_8bit`, quoted or not
# (the longest names first: `paged_adamw_8bit` before `adamw_8bit`).
PATTERN = re.compile(
    r"(?<![\w.-])(?P<name>(?:--?)?optim)(?P<separator>\s*=\s*|:\s+|\s+)(?P<quote>['\"]?)"
    r"(?P<value>" + "|".join(sorted(HF_BITSANDBYTES_OPTIMIZERS, key=len, reverse=True)) + r")(?P=quote)(?![\w.-])"
)


class BitsandbytesOptimizerOption(ScriptRule):
    """A launch script or config that chooses transformers' optimizer by name (`--optim`, `optim:`)
    chooses what the Python code's `TrainingArguments(optim=...)` would: a bitsandbytes name
    builds a bitsandbytes optimizer, whose CUDA kernels the NPU does not have, when training
    starts.  It is reported with the torch optimizer of the same algorithm, as in Python (NPU910).
    """

    code = "NPU507"
    summary = "launch scripts and configs: --optim / optim: naming a bitsandbytes optimizer reported"
    triggers = NAME_WORDS
    examples = (
        ScriptExample("torchrun train.py --optim adamw_bnb_8bit --bf16 True\n",
                      "torchrun train.py --optim adamw_bnb_8bit --bf16 True\n", reported=("optim='adamw_bnb_8bit'",)),
        ScriptExample("optimizer:\n  optim: paged_adamw_8bit\n", "optimizer:\n  optim: paged_adamw_8bit\n",
                      path="config.yaml", reported=("optim='paged_adamw_8bit'",)),
    )
    unchanged = ("torchrun train.py --optim adamw_torch\n", "# optim: adamw_8bit on GPUs\n",
                 "python train.py --optim_args adamw_8bit\n")

    finding_kinds = (FUSED_OPTIMIZER.code,)  # (the Python code's same finding)

    @classmethod
    def apply(cls, line, dialect):
        reports = []
        for match in option_values(PATTERN, line, reports):
            name = match.group("value")
            reports.append(LineReport(Report.UNSUPPORTED, f"optim={name!r}", bitsandbytes_optimizer_tip(name),
                                      FUSED_OPTIMIZER.code))
        return [], reports
