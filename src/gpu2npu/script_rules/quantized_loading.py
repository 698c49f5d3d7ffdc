"""--load_in_4bit True in a launch script or `load_in_4bit: true` in a YAML config (TRL's and the
recipes' model options), decided as the Python code's load_in_4bit=True is (NPU912,
findings.hazards.quantization): by the bitsandbytes and transformers the project pins."""
from __future__ import annotations

import re
from typing import ClassVar

from ..knowledge.bitsandbytes_devices import QUANTIZED_LOADING_TIP, loading_note
from ..records.change import Report
from ..records.finding_kinds import LEFT_ON_PURPOSE, QUANTIZATION
from ..records.options import ProjectPins
from .base import LineReport, ScriptExample, ScriptRule, option_values

# `--load_in_4bit True`, `--load-in-8bit=true`, a YAML `load_in_4bit: true`, quoted or not.
WITH_VALUE = re.compile(
    r"(?<![\w.-])(?P<name>(?:--?)?load[_-]in[_-](?P<bits>[48])bit)(?P<separator>\s*=\s*|:\s+|\s+)(?P<quote>['\"]?)"
    r"(?:[Tt]rue|TRUE|1|yes)(?P=quote)(?![\w.-])"
)
# `--load_in_4bit` alone (a boolean flag of HfArgumentParser), before the next option or the end.
FLAG = re.compile(r"(?<![\w.-])--load[_-]in[_-](?P<bits>[48])bit(?=\s*(?:$|\\|--|[;&|)]))")


class QuantizedLoadingOption(ScriptRule):
    """A launch script or config that asks for 4-bit or 8-bit weights (`--load_in_4bit True`,
    `load_in_4bit: true`) quantizes them with bitsandbytes when the program loads the model, as
    the Python code's `load_in_4bit=True` does: reported the same way (NPU912), a note where the
    project pins a bitsandbytes and a transformers that run it on the NPU (bitsandbytes 0.47 and
    transformers 4.48 on, 5.0 for 8-bit).  Nothing is edited: the weights' precision is the
    user's choice."""

    code = "NPU509"
    summary = "launch scripts and configs: --load_in_4bit / load_in_8bit reported as the Python code's (NPU912)"
    triggers = ("load_in_4bit", "load_in_8bit", "load-in-4bit", "load-in-8bit")
    examples = (
        ScriptExample("model_name_or_path: org/model\nload_in_4bit: true\n", "model_name_or_path: org/model\nload_in_4bit: true\n",
                      path="config_qlora.yaml", reported=("load_in_4bit",)),
        ScriptExample("torchrun train.py --load_in_8bit --lora_r 16\n", "torchrun train.py --load_in_8bit --lora_r 16\n",
                      reported=("load_in_8bit",)),
    )
    unchanged = ("load_in_4bit: false\n", "python train.py --load_in_4bit False\n", "# load_in_4bit: true saves memory\n")
    finding_kinds = (QUANTIZATION.code, LEFT_ON_PURPOSE.code)
    pins: ClassVar[ProjectPins] = ProjectPins()
    torch_version: ClassVar[str] = "2.1.0"

    @classmethod
    def for_project(cls, options):
        return cls.with_settings(pins=options.pins, torch_version=options.api.torch_version)

    @classmethod
    def apply(cls, line, dialect):
        reports = []
        found = [match.group("bits") for match in option_values(WITH_VALUE, line, reports)]
        found += [match.group("bits") for match in FLAG.finditer(line.code) if not line.in_literal(match.start())]
        for bits in found:
            api = f"load_in_{bits}bit"
            note = loading_note(cls.pins.bitsandbytes, cls.pins.transformers, cls.torch_version, bits == "8")
            reports.append(LineReport(Report.NOTE, api, note, LEFT_ON_PURPOSE.code) if note is not None
                           else LineReport(Report.UNSUPPORTED, api, QUANTIZED_LOADING_TIP, QUANTIZATION.code))
        return [], reports
