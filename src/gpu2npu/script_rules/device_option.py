"""--device cuda -> --device npu (and every option, variable or key naming a device)."""
from __future__ import annotations

import re

from .base import LineEdit, ScriptExample, ScriptRule, option_values

PATTERN = re.compile(
    r"(?<![\w.-])(?P<name>(?:--?)?[\w.-]*device)(?P<separator>\s*=\s*|:\s+|\s+)(?P<quote>['\"]?)"
    r"(?P<value>cuda)(?P<index>:\d+)?(?P=quote)(?![\w.:-])",
    re.IGNORECASE,
)


class DeviceOption(ScriptRule):
    """The migrated Python code speaks of "npu" where it spoke of "cuda" (NPU103 rewrites device
    strings, argparse defaults and `choices` included), so a launch script or config passing
    `--device cuda` or `device: cuda:0` must pass the NPU too, or the script would still ask
    for CUDA (or be refused by its own `choices`).  The index is kept.
    """

    code = "NPU505"
    summary = "launch scripts: --device cuda[:N] / device: cuda -> npu"
    triggers = ("cuda", "CUDA")
    examples = (
        ScriptExample("python eval.py --device cuda:1 --ckpt last.pt\n", "python eval.py --device npu:1 --ckpt last.pt\n"),
        ScriptExample("trainer:\n  device: \"cuda\"\n", "trainer:\n  device: \"npu\"\n", path="config.yaml"),
    )
    unchanged = ("python eval.py --device cpu\n", "python train.py --device-ids 0,1 --cuda\n")

    @classmethod
    def apply(cls, line, dialect):
        edits, reports = [], []
        for match in option_values(PATTERN, line, reports):
            old = match.group("value") + (match.group("index") or "")
            new = "npu" + (match.group("index") or "")
            edits.append(LineEdit(match.start("value"), match.end("index") if match.group("index") else match.end("value"),
                                  new, f"change {match.group('name')} {old} to {new}"))
        return edits, reports
