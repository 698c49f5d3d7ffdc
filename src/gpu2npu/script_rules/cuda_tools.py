"""CUDA tools and CUDA_* settings in launch scripts: reported, with what to use on Ascend."""
from __future__ import annotations

import re
from typing import ClassVar, Dict, FrozenSet

from ..records.change import Report
from ..knowledge import env_vars
from ..reading.shell_syntax import Dialect
from .base import LITERAL_TIP, LineEdit, LineReport, ScriptExample, ScriptRule, kept_variable

TOOL_TIPS = {
    "nvcc": "no NPU equivalent: CUDA kernels do not build for Ascend; port them to Ascend C custom operators "
    "(see cuda_op_list.csv)",
    "nvprof": "profile on Ascend with msprof or torch_npu.profiler",
    "nsys": "profile on Ascend with msprof or torch_npu.profiler",
    "ncu": "profile on Ascend with msprof or torch_npu.profiler",
    "cuda-memcheck": "no NPU equivalent (CUDA debugging tool)",
    "compute-sanitizer": "no NPU equivalent (CUDA debugging tool)",
    "cuda-gdb": "no NPU equivalent (CUDA debugging tool)",
    "nvidia-docker": "no NPU equivalent: Ascend containers use the Ascend Docker runtime with the NPU devices mounted",
}
# transformers' --tf32 (HfArgumentParser: `--tf32`, `--tf32 True`, `--tf32=true`): raises without a CUDA GPU.
_SCRIPT = re.compile(r"[\w./-]+\.py\b")
TF32_FLAG = re.compile(r"(?<![\w-])--tf32(?:[=\s]+(\S+))?")
TF32_TIP = ("transformers raises ValueError for --tf32 True where there is no CUDA GPU: leave it out on the NPU (its "
            "counterpart is HF32: torch_npu.npu.matmul.allow_hf32 = True in the training script)")
# ... and a config's `tf32: true`, which trainers built on transformers (axolotl) hand to it.
TF32_KEY = re.compile(r"^\s*tf32:\s*(?P<value>[^\s#]+)")
TF32_KEY_TIP = ("the trainer hands tf32: true to transformers, which raises ValueError where there is no CUDA GPU: set "
                "it false on the NPU (its counterpart is HF32: torch_npu.npu.matmul.allow_hf32 = True in the training "
                "script)")
GPU_RESOURCE = re.compile(r"(?<![\w.-])nvidia\.com/gpu(?![\w-])")
GPU_RESOURCE_TIP = ("NVIDIA device-plugin resource: on an Ascend cluster request the resource its Ascend device "
                    "plugin registers (e.g. huawei.com/Ascend910)")
# `docker run --gpus all`, `--runtime=nvidia` (NVIDIA's container runtime), on a container command's line.
CONTAINER_GPUS = re.compile(r"(?<![\w-])(?P<option>--gpus|--runtime)(?:[=\s]+)(?P<quote>[\"']?)(?P<value>[^\s\"']+)(?P=quote)"
                            r"(?![\w-])")
# A program the container runs (after the image): an option after it is the program's (`python train.py --gpus 8`).
CONTAINER_PROGRAM = re.compile(r"\s(?:python3?|bash|sh|torchrun|accelerate|deepspeed|llamafactory-cli)\s")
CONTAINER_COMMAND = re.compile(r"(?<![\w-])(?:docker|podman|nerdctl|nvidia-docker)\s+(?:container\s+)?(?:run|create)\b")
CONTAINER_GPUS_TIP = ("NVIDIA's container runtime option: on an Ascend machine mount the NPU devices instead (--device "
                      "/dev/davinci0 --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc and the "
                      "driver folder) or use the Ascend Docker runtime (-e ASCEND_VISIBLE_DEVICES=0), with an image that "
                      "holds CANN and torch_npu")
TOOLS = re.compile(r"(?<![\w./-])(?:[\w.~-]*/)*(" + "|".join(re.escape(t) for t in TOOL_TIPS) + r")(?![\w-])")
# Handled by their own rules: CUDA_VISIBLE_DEVICES (NPU501).
# PYTORCH_ALLOC_CONF is the allocator's device-neutral name (torch 2.9 on): on CUDA machines, CUDA's.
VARIABLES = re.compile(r"(?<![\w])(?:(?:PYTORCH_)?CUDA_(?!VISIBLE_DEVICES\b)[A-Z0-9_]+|PYTORCH_ALLOC_CONF)(?![\w])")


class CudaToolsAndSettings(ScriptRule):
    """CUDA's compiler, profilers and debuggers, `CUDA_*` environment variables and the
    `nvidia.com/gpu` resource of Kubernetes jobs have no counterpart that takes the same
    arguments or values on Ascend.

    They are left as written and reported with what to use instead: msprof or
    `torch_npu.profiler` for nsys/nvprof/ncu, Ascend C custom operators for kernels built with
    nvcc.  The CUDA variables with an Ascend counterpart that takes the value the script gives
    are renamed: `CUDA_LAUNCH_BLOCKING=0|1` -> `ASCEND_LAUNCH_BLOCKING`,
    `PYTORCH_CUDA_ALLOC_CONF` (or `PYTORCH_ALLOC_CONF`) with max_split_size_mb,
    garbage_collection_threshold or expandable_segments -> `PYTORCH_NPU_ALLOC_CONF`.
    """

    code = "NPU590"
    summary = ("launch scripts: nvcc, nsys, CUDA_*, transformers' --tf32 reported; CUDA_LAUNCH_BLOCKING, "
               "PYTORCH_CUDA_ALLOC_CONF renamed")
    triggers = (*TOOL_TIPS, "CUDA_", "PYTORCH_ALLOC_CONF", "nvidia.com/gpu", "--tf32", "tf32:", "--gpus", "--runtime")
    examples = (
        ScriptExample("nvcc --version\n", "nvcc --version\n", reported=("nvcc",)),
        ScriptExample("CUDA_LAUNCH_BLOCKING=1 nsys profile python train.py\n",
                      "ASCEND_LAUNCH_BLOCKING=1 nsys profile python train.py\n",
                      reported=("nsys",)),
        ScriptExample("PYTORCH_ALLOC_CONF=expandable_segments:True torchrun train.py\n",
                      "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True torchrun train.py\n"),
        ScriptExample("export PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync\n",
                      "export PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync\n",
                      reported=("PYTORCH_CUDA_ALLOC_CONF",)),
        ScriptExample("torchrun --nproc_per_node 8 train.py --bf16 True --tf32 True\n",
                      "torchrun --nproc_per_node 8 train.py --bf16 True --tf32 True\n", reported=("--tf32",)),
        ScriptExample("resources:\n  limits:\n    nvidia.com/gpu: 8\n", "resources:\n  limits:\n    nvidia.com/gpu: 8\n",
                      path="job.yaml", reported=("nvidia.com/gpu",)),
        ScriptExample("bf16: true\ntf32: true\n", "bf16: true\ntf32: true\n", path="config.yaml", reported=("tf32: true",)),
        ScriptExample("docker run --gpus all -it qwenllm/qwen:cu117 python cli_demo.py\n",
                      "docker run --gpus all -it qwenllm/qwen:cu117 python cli_demo.py\n", reported=("--gpus all",)),
    )
    unchanged = ("# nvcc is not needed\n", "torchrun train.py --tf32 False --bf16 True\n",
                 "python train.py --gpus 8\n")  # (a program's own option: no container's)
    # (a Makefile's own variables are no CUDA settings; unchanged sources are shell scripts, so
    # that case is tested in tests/test_launch_scripts.py)

    # The project's scripts that declare --tf32 themselves (Options.scripts_with_own_tf32).
    own_tf32: ClassVar[FrozenSet[str]] = frozenset()

    # The variables a file of the project reads and sets nowhere (Options.environment_reads).
    project_reads: ClassVar[Dict[str, str]] = {}

    @classmethod
    def for_project(cls, options):
        if not options.scripts_with_own_tf32 and not options.environment_reads:
            return cls
        return cls.with_settings(own_tf32=frozenset(options.scripts_with_own_tf32),
                                 project_reads=dict(options.environment_reads))

    @classmethod
    def _own_option(cls, before: str) -> bool:
        """Whether the script the line runs, the last one named before the option, is one of the
        project's that declares --tf32 itself."""
        scripts = _SCRIPT.findall(before)
        return bool(scripts) and any(own == scripts[-1] or own.endswith("/" + scripts[-1].lstrip("./"))
                                     or scripts[-1].endswith("/" + own) for own in cls.own_tf32)

    @classmethod
    def apply(cls, line, dialect):
        reports = [LineReport(Report.UNSUPPORTED, m.group(1), TOOL_TIPS[m.group(1)]) for m in TOOLS.finditer(line.code)]
        edits = []
        for match in VARIABLES.finditer(line.code):
            name = match.group(0)
            if dialect == Dialect.MAKE and not env_vars.read_by_cuda(name):
                continue  # a make variable of the Makefile's own (llm.c's CUDA_OUTPUT_FILE = -o $@)
            new_name, tip = (None, LITERAL_TIP) if line.in_literal(match.start()) else env_vars.script_edit(
                name, line.code, match.end())
            if new_name is not None:
                edits.append(LineEdit(match.start(), match.end(), new_name, f"change {name} to {new_name}"))
            else:
                reports.append(kept_variable(name, tip, cls.project_reads))
        reports += [LineReport(Report.UNSUPPORTED, m.group(0), GPU_RESOURCE_TIP) for m in GPU_RESOURCE.finditer(line.code)]
        container = CONTAINER_COMMAND.search(line.code)
        for match in CONTAINER_GPUS.finditer(line.code) if container is not None else ():
            if (match.start() > container.end() and not CONTAINER_PROGRAM.search(line.code, container.end(), match.start())
                    and (match.group("option") == "--gpus" or match.group("value") == "nvidia")):
                reports.append(LineReport(Report.UNSUPPORTED, f"{match.group('option')} {match.group('value')}",
                                          CONTAINER_GPUS_TIP))
        for match in TF32_FLAG.finditer(line.code):
            value = (match.group(1) or "").strip("'\"\\")
            if (not value or value.startswith("-") or value.lower() in ("true", "1", "yes")) and not cls._own_option(
                    line.code[:match.start()]):
                reports.append(LineReport(Report.UNSUPPORTED, "--tf32", TF32_TIP))
        key = TF32_KEY.match(line.code) if dialect == Dialect.YAML else None
        if key is not None and key.group("value").strip("'\"").lower() in ("true", "yes", "on"):
            reports.append(LineReport(Report.UNSUPPORTED, "tf32: true", TF32_KEY_TIP))
        return edits, reports
