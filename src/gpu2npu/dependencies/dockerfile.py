"""Dockerfiles: reported, never rewritten.  A CUDA base image cannot become an Ascend one by a
text edit (the Ascend images carry CANN and the driver's user-space parts, and are chosen per
NPU model and CANN release), and a `pip install` in a RUN line belongs to that image."""
from __future__ import annotations

import re
from typing import List

from ..records.change import Finding, Report
from .decide import CUDA_ONLY_RULE, DOCKER_RULE, TWIN_RULE, Context, decide, parse_requirement
from .requirements_file import FileOutcome

CUDA_IMAGE = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?P<image>(?:\S*/)?(?:nvidia/cuda|cuda)\S*|\S*nvcr\.io/nvidia/\S+|"
                        r"(?:\S*/)?pytorch/pytorch:\S*cuda\S*|\S*pytorch\S*cu\d+\S*)", re.IGNORECASE)
IMAGE_TIP = ("a CUDA image: on Ascend, build FROM an image with the CANN toolkit for the NPU model and CANN release of "
             "the machine (Ascend's ascendai/cann images, or the ascend-pytorch images of the Ascend Hub) and "
             "install torch and torch_npu of the release the migration chose; run it with the NPU devices mounted "
             "(--device /dev/davinci0 --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc "
             "and the driver folder)")
# `ARG from=nvidia/cuda:${CUDA_VERSION}-devel` (a default that FROM ${from} reads), `$name` or `${name}` read
_ARG = re.compile(r"^\s*ARG\s+(?P<name>\w+)=(?P<value>\S+)", re.IGNORECASE)
_ARG_READ = re.compile(r"\$\{(\w+)\}|\$(\w+)")
# `FROM [--platform=...] image [AS name]`: a later `FROM name` builds on that stage, whose own FROM has the row
_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?P<image>\S+)(?:\s+AS\s+(?P<stage>[\w.-]+))?\s*$",
                   re.IGNORECASE)
_PIP = re.compile(r"\bpip3?\s+install\s+(?P<args>[^&;|]+)")
_ENV_DEVICES = re.compile(r"^\s*ENV\s+.*\b(?P<name>NVIDIA_VISIBLE_DEVICES|NVIDIA_DRIVER_CAPABILITIES|CUDA_VISIBLE_DEVICES)\b")


def report_dockerfile(text: str, path: str, context: Context) -> FileOutcome:
    outcome = FileOutcome(None)
    lines = text.splitlines()
    logical: List[tuple] = []  # (first line, last line, joined text)
    first, parts = None, []
    for number, line in enumerate(lines, 1):
        if first is None:
            first = number
        body = line.rstrip()
        if body.endswith("\\"):
            parts.append(body[:-1])
            continue
        parts.append(body)
        logical.append((first, number, " ".join(parts)))
        first, parts = None, []
    if parts:
        logical.append((first, len(lines), " ".join(parts)))
    arguments = {}  # the ARG defaults declared so far, as FROM reads them (themselves expanded)
    stages = set()  # the names of the build stages so far
    for start, end, instruction in logical:
        if instruction.lstrip().startswith("#"):
            continue
        declared = _ARG.match(instruction)
        if declared:
            arguments[declared.group("name")] = _expanded(declared.group("value").strip("'\""), arguments)
            continue
        if instruction.lstrip()[:4].upper() == "FROM":
            instruction = _expanded(instruction, arguments)
            built = _FROM.match(instruction)
            if built is not None and built.group("stage"):
                stages.add(built.group("stage").lower())
            if built is not None and built.group("image").lower() in stages:
                continue  # (a stage of this file, reported where it names its image)
        image = CUDA_IMAGE.match(instruction)
        if image:
            outcome.findings.append(Finding(path, start, start, Report.UNSUPPORTED, f"FROM {image.group('image')}",
                                            IMAGE_TIP, DOCKER_RULE))
            continue
        environment = _ENV_DEVICES.match(instruction)
        if environment:
            outcome.findings.append(Finding(
                path, start, end, Report.UNSUPPORTED, environment.group("name"),
                "NVIDIA's container runtime setting: on Ascend the devices are mounted into the container "
                "(--device /dev/davinciN) and chosen with ASCEND_RT_VISIBLE_DEVICES", DOCKER_RULE))
        for pip in _PIP.finditer(instruction):
            for word in pip.group("args").split():
                if context.table.cuda_index.match(word.strip("'\"")):
                    outcome.findings.append(Finding(path, start, end, Report.UNSUPPORTED, word.strip("'\""),
                                                    "an index of CUDA builds: use https://download.pytorch.org/whl/cpu "
                                                    "for the torch that torch_npu needs (on x86)", DOCKER_RULE))
                    continue
                if word.startswith("-"):
                    continue
                requirement = parse_requirement(word.strip("'\""))
                if requirement is None:
                    continue
                decision = decide(requirement, context)
                what = requirement.name or requirement.url
                # (a torch pin is the image's business: the tip of its FROM line says which)
                if decision.rule in (CUDA_ONLY_RULE, TWIN_RULE) and (decision.write is not None or decision.report):
                    tip = decision.report[2] if decision.report else decision.message
                    outcome.findings.append(Finding(path, start, end, Report.UNSUPPORTED, f"pip install {what}",
                                                    f"in the image: {tip}", DOCKER_RULE))
    return outcome


def _expanded(text: str, arguments) -> str:
    """`text` with the ARG defaults it reads put in (one it does not know stays as written)."""
    return _ARG_READ.sub(lambda read: arguments.get(read.group(1) or read.group(2), read.group(0)), text)
