"""conda environment files (`environment.yml`), edited as text: comments, order and every
untouched line are kept.

torch_npu is installed with pip, on the pip build of torch (the CPU build on x86): conda's
`pytorch` (and the torchvision/torchaudio built with it) cannot carry it.  So conda's CUDA parts
(`pytorch-cuda`, `cudatoolkit`, `cudnn`, `nccl`, the `nvidia` channel) are commented out, conda's
`pytorch`/`torchvision`/`torchaudio` are commented out too and listed, pinned for the chosen
torch_npu release, in the environment's `pip:` section (made when there is none) with torch_npu.
Requirements already in the pip section get the decisions of a requirements file.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..records.change import Change, Operation
from .decide import CONDA_RULE, Context, Requirement, decide, parse_requirement
from .requirements_file import REMOVED_NOTE, FileOutcome
from .table import normalise

_KEY = re.compile(r"^(\w[\w-]*)\s*:\s*(#.*)?$")
_ITEM = re.compile(r"^(?P<indent>\s*)-\s+(?P<body>.*?)(?P<comment>\s+#.*)?$")
# conda's CUDA packages (their CPU/NPU builds need none of them)
CONDA_CUDA = re.compile(r"^(?:pytorch-cuda|cudatoolkit(?:-dev)?|cuda-toolkit|cuda-[\w-]+|cudnn|nccl|magma-cuda\d*|"
                        r"libcublas[\w-]*|libcusparse[\w-]*|libcufft[\w-]*|libcurand[\w-]*|libnvjitlink[\w-]*)$")
CONDA_TORCH = ("pytorch", "torchvision", "torchaudio")
_CONDA_NAME = re.compile(r"^(?:(?P<channel>[\w.-]+)::)?(?P<name>[A-Za-z0-9][\w.-]*)(?P<rest>.*)$")


def _strip_quotes(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def migrate_environment(text: str, path: str, context: Context) -> FileOutcome:
    lines = text.splitlines(keepends=True)
    outcome = FileOutcome(None)
    section = None
    dependencies: List[Tuple[int, re.Match]] = []  # conda items
    pip_items: List[Tuple[int, re.Match]] = []
    pip_line: Optional[int] = None
    pip_indent: Optional[int] = None
    channels: List[Tuple[int, re.Match]] = []
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        key = _KEY.match(body)
        if key and not body.startswith((" ", "\t")):
            section, pip_indent = key.group(1), None
            continue
        item = _ITEM.match(body)
        if item is None:
            continue
        indent = len(item.group("indent"))
        if section == "channels":
            channels.append((number, item))
        elif section == "dependencies":
            if pip_indent is not None and indent > pip_indent:
                pip_items.append((number, item))
                continue
            pip_indent = None
            if re.fullmatch(r"pip\s*:", item.group("body")):
                pip_line, pip_indent = number, indent
            else:
                dependencies.append((number, item))
    pip_requirements = [(number, item, parse_requirement(_strip_quotes(item.group("body")))) for number, item in pip_items]
    context.present.update(r.normalised for _, _, r in pip_requirements if r is not None and r.name)
    edits: Dict[int, str] = {}

    def comment_out(number: int, item: re.Match, message: str, rule: str = CONDA_RULE) -> None:
        line = lines[number]
        newline = line[len(line.rstrip("\r\n")):]
        indent = item.group("indent")
        edits[number] = f"{indent}# {line.rstrip(chr(13) + chr(10))[len(indent):]}  # {REMOVED_NOTE}{newline}"
        outcome.changes.append(Change(path, number + 1, number + 1, Operation.MODIFY, rule, message, REMOVED_NOTE))

    for number, item in channels:
        if _strip_quotes(item.group("body")) == "nvidia":
            comment_out(number, item, "remove the nvidia channel: it holds NVIDIA's CUDA packages, which the NPU does not use")
    conda_torch = {}
    for number, item in dependencies:
        written = _strip_quotes(item.group("body"))
        conda = _CONDA_NAME.match(written)
        if conda is None:
            continue
        name = normalise(conda.group("name"))
        if CONDA_CUDA.match(name):
            comment_out(number, item, f"remove {written}: CUDA libraries for CUDA builds of torch; torch_npu uses CANN")
        elif name in CONDA_TORCH:
            conda_torch[name] = number
            if name == "pytorch" and conda.group("rest").strip():
                outcome.torch_pins.append((number + 1, conda.group("rest").strip()))
            comment_out(number, item, f"remove conda's {written}: torch_npu installs with pip on the pip build of torch, "
                                      "listed in the pip section")
        else:
            requirement = Requirement(conda.group("name"), spec=conda.group("rest").strip())
            decision = decide(requirement, context)
            outcome.report(decision, path, number + 1)
            if decision.write == []:
                comment_out(number, item, decision.message, decision.rule)
            elif decision.write:
                twin = parse_requirement(decision.write[0]).name
                new_body = f"{conda.group('channel') + '::' if conda.group('channel') else ''}{twin}{conda.group('rest')}"
                line = lines[number]
                edits[number] = line.replace(written, new_body, 1)
                outcome.changes.append(Change(path, number + 1, number + 1, Operation.MODIFY, decision.rule,
                                              decision.message, twin))
    for number, item, requirement in pip_requirements:
        if requirement is None:
            continue
        decision = decide(requirement, context)
        if decision.write == []:
            outcome.report(decision, path, number + 1)
            comment_out(number, item, decision.message, decision.rule)
            continue
        outcome.record(decision, path, number + 1)
        line = lines[number]
        if decision.write:
            edits[number] = line.replace(item.group("body"), decision.write[0], 1)
        if decision.insert:
            newline = line[len(line.rstrip("\r\n")):] or "\n"
            edits[number] = edits.get(number, line) + "".join(f"{item.group('indent')}- {t}{newline}" for t in decision.insert)
    if conda_torch:
        target = context.api.torch_version
        wanted = []
        for name in CONDA_TORCH:
            if name not in conda_torch:
                continue
            pip_name = "torch" if name == "pytorch" else name
            decision = decide(Requirement(pip_name), context)
            decision.torch_pin = None  # (conda's pin of pytorch is recorded above)
            outcome.report(decision, path, conda_torch[name] + 1)
            wanted.extend(decision.write or [])
            wanted.extend(decision.insert)
        if wanted:
            _add_to_pip_section(lines, edits, wanted, pip_line, pip_items, dependencies, path, outcome, target)
    if edits:
        outcome.output = "".join(edits.get(number, line) for number, line in enumerate(lines))
    return outcome


def _add_to_pip_section(lines, edits, inserts, pip_line, pip_items, dependencies, path, outcome, target) -> None:
    """List `inserts` at the end of the pip section, made after the last conda item if missing."""
    if pip_items:
        anchor, item = pip_items[-1]
        prefix = item.group("indent") + "- "
        block = "".join(f"{prefix}{text}\n" for text in inserts)
    else:
        anchor = max([n for n, _ in dependencies] + ([pip_line] if pip_line is not None else []))
        indent = (dependencies[0][1].group("indent") if dependencies else "  ")
        head = "" if pip_line is not None else f"{indent}- pip\n{indent}- pip:\n"
        block = head + "".join(f"{indent}  - {text}\n" for text in inserts)
    line = edits.get(anchor, lines[anchor])
    if not line.endswith("\n"):
        line += "\n"
    edits[anchor] = line + block
    outcome.changes.append(Change(path, anchor + 1, anchor + 1, Operation.INSERT, CONDA_RULE,
                                  f"install {', '.join(inserts)} with pip: torch_npu and the torch it is built for "
                                  f"(torch {target})", inserts[0]))
