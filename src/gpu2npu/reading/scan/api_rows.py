"""The API rows of a file: operators without an NPU kernel, and torch names or Tensor methods whose NPU
support the data cannot decide (unsupported_api.csv, unknown_api.csv)."""
from __future__ import annotations

import ast
import dataclasses
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ...knowledge import apidata
from ...records.change import Finding, Report
from ...records.finding_kinds import LEFT_ON_PURPOSE, NEWER_TORCH, NO_NPU_KERNEL, UNKNOWN_SUPPORT
from ...knowledge.ascend_functions import equivalents
from ...knowledge.private_torch import device_neutral, device_neutral_note
from ...knowledge.tips import CUDA_BUILD_BINDINGS
from .file_scan import FileScan, names_the_accelerator

def api_findings(scan: FileScan, path: str, api: apidata.ApiData, similar: bool = False) -> List[Finding]:
    """unsupported_api.csv / unknown_api.csv rows for the calls of one file; `similar`: the run
    has -sim (which rewrites the calls it has an equivalent for, so the tip differs)."""
    findings: List[Finding] = []
    registered: Optional[FrozenSet[Tuple[str, str]]] = None  # (read when a custom operator is first called)
    for call in scan.calls:
        names = sorted(scan.qualified(call.func))
        finding = None
        for name in names:
            finding = _judge_torch_call(call, name, path, api, similar)
            if finding is not None and finding.rule == UNKNOWN_SUPPORT.code and name.startswith("torch.ops."):
                if registered is None:
                    registered = _operators_registered_here(scan)
                if _registered(name, registered):
                    finding = None
            if finding is not None:
                accelerator = _other_accelerator(name)
                if accelerator and (scan.accelerator_guarded(call.lineno, accelerator)
                                    or _file_of_the_accelerator(path, accelerator)
                                    or (finding.rule == UNKNOWN_SUPPORT.code and _plugin_module(accelerator))):
                    finding = None  # code for another accelerator, skipped on the NPU: not unknown
                break
        if finding is None and not names and isinstance(call.func, ast.Attribute):
            finding = _judge_method_call(call, path, api)
            if finding is not None and _own_method(scan, call):
                finding = None  # (asked only of a method without an NPU kernel: the classes are read per call)
        if finding is not None:
            findings.append(finding)
        for name in names:
            newer = _judge_release(call, name, path, api)
            if newer and not scan.release_guarded(call.lineno) and not scan.optionally_imported(call.func):
                accelerator = _other_accelerator(name)
                if accelerator and _file_of_the_accelerator(path, accelerator):
                    break  # the accelerator's backend module, loaded where that accelerator is chosen
                if accelerator and scan.accelerator_guarded(call.lineno, accelerator) and not scan.in_accelerator_test(
                        call.func, accelerator):
                    break  # it runs only after a test of that accelerator, whose own row says the torch lacks it
                if accelerator and not _answers_without_the_device(name):
                    break  # it raises wherever that accelerator is missing: it runs only where it is, not on the NPU
                findings.extend(newer)
                break
    findings.extend(_newer_dtypes(scan, path, api))
    return sorted(_newer_names_together(findings))


def _newer_names_together(findings: List[Finding]) -> List[Finding]:
    """One row for the names at one place that the same torch release added, with the same tip:
    `DTensor.from_local(x, mesh, [Replicate()])` is one thing to port."""
    places: Dict[Tuple[int, int, str], List[Finding]] = {}
    others = []
    for finding in findings:
        if finding.rule == NEWER_TORCH.code:
            places.setdefault((finding.start_line, finding.end_line, finding.tip), []).append(finding)
        else:
            others.append(finding)
    return others + [rows[0] if len(rows) == 1 else dataclasses.replace(
        rows[0], api=NAMES_APART.join(dict.fromkeys(row.api for row in rows))) for rows in places.values()]


# How a newer-torch row lists the names it stands for.
NAMES_APART = ", "


# The dtypes that came with later torch releases (torch_history.json tracks these families): read,
# not called, so the calls above never see them; one the torch lacks raises AttributeError where
# its line runs, at import for a module-level table of dtypes.
_NEWER_DTYPE_FAMILIES = ("float8_", "float4_")


def _newer_dtypes(scan: FileScan, path: str, api: apidata.ApiData) -> List[Finding]:
    rows = []
    target = api.torch_version
    for node in scan.nodes_of_class(ast.Attribute):
        if not node.attr.startswith(_NEWER_DTYPE_FAMILIES) or scan.release_guarded(node.lineno):
            continue
        for name in sorted(scan.qualified(node)):
            added = apidata.torch_added_in(name, target) if name.startswith("torch.") else None
            if added is not None:
                rows.append(Finding(path, node.lineno, node.end_lineno or node.lineno, Report.UNSUPPORTED, name,
                                    f"torch {target}, which torch_npu {api.torch_npu_version} is built for, has no "
                                    f"such dtype (torch {added} has) and raises AttributeError here: choose the -v of "
                                    f"the project's torch, or test for it (hasattr(torch, \"{node.attr}\"))",
                                    NEWER_TORCH.code))
                break
    return rows


# What torch_npu has in place of a device-neutral API that came with a later torch.
OLDER_TORCH_WAYS = {
    name: "torch_npu.npu.amp.GradScaler(...) takes the same arguments without the device (init_scale, "
          "growth_factor, backoff_factor, growth_interval, enabled)"
    for name in ("torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler")
}


# torch's modules for accelerators other than CUDA and the NPU (and their availability words)
# (`torch.neuron` is AWS Neuron's, added by torch-neuronx; `torch.hip` a ROCm build's; `torch.supa`
# Biren's, added by torch_supa)
OTHER_ACCELERATORS = ("xpu", "mlu", "musa", "hpu", "mps", "mtia", "xla", "ipu", "dml", "sdaa", "gcu", "neuron", "hip",
                      "supa")


# The platforms whose name an operator library of theirs carries (ROCm's runs on torch's "cuda"
# device, with no module of its own)
_OTHER_PLATFORMS = (*OTHER_ACCELERATORS, "rocm")


def _other_accelerator(name: str) -> Optional[str]:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "torch" and parts[1] in OTHER_ACCELERATORS else None


def _answers_without_the_device(name: str) -> bool:
    """Whether a function of another accelerator's module (`torch.xpu.device_count`) answers on a
    machine without that accelerator: its availability questions, counts and build facts, and the
    seeds it queues until the device is first used.  Any other (`get_device_properties`,
    `current_device`, `synchronize`) initializes the device and raises where it is missing, so a
    program calls it only where that accelerator is (behind a test of its name, its device
    properties or its availability), never on the NPU machine."""
    last = name.rsplit(".", 1)[-1]
    return last.startswith(("is_", "_is_", "manual_seed", "seed")) or last in ("device_count", "get_arch_list",
                                                                             "get_gencode_flags")


def _file_of_the_accelerator(path: str, accelerator: str) -> bool:
    """Whether the file is named for another accelerator (DeepSpeed's xpu_accelerator.py, a
    project's hpu_utils.py): that accelerator's backend, which a program loads where it runs on
    that accelerator, as the project's own NPU backend is loaded on the NPU."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return names_the_accelerator(stem, accelerator)


def _plugin_module(accelerator: str) -> bool:
    """Whether `torch.<accelerator>` is no module of torch's but one a vendor's extension registers
    (torch_mlu's `torch.mlu`, torch_musa's `torch.musa`, Habana's `torch.hpu`): code that calls it
    runs only where that extension is installed, neither on the GPU the project ran on nor on the
    NPU, and is nothing to migrate (DeepSpeed's MLU_Accelerator class)."""
    return not apidata.torch_api_knows(f"torch.{accelerator}")


def _judge_release(call: ast.Call, name: str, path: str, api: apidata.ApiData) -> List[Finding]:
    """Rows for what the call needs of a torch newer than the one -v migrates for: the function
    (or its module), or a keyword its function took on later."""
    if not name.startswith("torch.") or name.startswith(("torch.cuda.", "torch.npu.")):
        return []
    target = api.torch_version
    added = apidata.torch_added_in(name, target)
    if added is not None:
        instead = OLDER_TORCH_WAYS.get(name)
        return [_row(call, path, NEWER_TORCH, Report.UNSUPPORTED, name,
                     f"torch {target}, which torch_npu {api.torch_npu_version} is built for, does not have it "
                     f"(torch {added} has): choose the -v of the project's torch, or write it with what torch "
                     f"{target} has" + (f": {instead}" if instead else ""))]
    rows = []
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        added = apidata.torch_keyword_added_in(name, keyword.arg, target)
        if added is not None:
            rows.append(_row(call, path, NEWER_TORCH, Report.UNSUPPORTED, _keyword_subject(name, keyword.arg),
                             f"{name} of torch {target} (torch_npu {api.torch_npu_version}) takes no {keyword.arg} "
                             f"(torch {added} does) and raises TypeError: choose the -v of the project's torch, or "
                             "leave it out"))
    return rows


def newer_torch_note(names: List[str], api: apidata.ApiData) -> Optional[str]:
    """One line for the whole run where its rows of APIs newer than the release's torch (NPU903,
    their OPs `names`) are many: the release whose torch has them all, which a -v of it migrates
    for (a project written for a later torch gets one such row per use)."""
    names = [name for row in names for name in row.split(NAMES_APART)]
    if len(names) < _NEWER_TORCH_NOTE_FROM:
        return None
    needed = [added for added in (_added_in(subject, api.torch_version) for subject in names) if added is not None]
    if not needed:
        return None
    newest = max(needed, key=apidata.version_key)
    release = next((version for version in apidata.available_versions()
                    if apidata.version_key(version) >= apidata.version_key(newest)), None)
    where = (f"torch {newest} has all of them: -v {release} (torch_npu {release}) migrates for it" if release
             else f"torch {newest} has all of them, newer than every torch_npu release gpu2npu knows")
    return (f"{len(names)} uses of torch APIs that torch {api.torch_version}, which torch_npu {api.torch_npu_version} is "
            f"built for, does not have yet (NPU903): {where}, where the project's torch is that new")


# From this many rows of newer-torch APIs a run says which release has them all.
_NEWER_TORCH_NOTE_FROM = 10


def _keyword_subject(name: str, keyword: str) -> str:
    """The OP of a row about a keyword a function took on later (`torch.load(weights_only=)`)."""
    return f"{name}({keyword}=)"


def _added_in(subject: str, torch_version: str) -> Optional[str]:
    """The torch release after `torch_version` that added what a newer-torch row's OP names: a name,
    or a keyword (_keyword_subject)."""
    name, _, keyword = subject.partition("(")
    if keyword:
        return apidata.torch_keyword_added_in(name, keyword[:-len("=)")], torch_version)
    return apidata.torch_added_in(name, torch_version)


def _row(call: ast.Call, path: str, kind, report: Report, api_name: str, tip: str) -> Finding:
    func = call.func
    return Finding(path, func.lineno, func.end_lineno or func.lineno, report, api_name, tip, kind.code)


def _judge_torch_call(call: ast.Call, name: str, path: str, api: apidata.ApiData, similar: bool) -> Optional[Finding]:
    # (the CUDA builds' own bindings, torch._C._cuda_*, are the leftover analysis' too)
    if not name.startswith("torch.") or name.startswith(("torch.cuda.", "torch.npu.", *CUDA_BUILD_BINDINGS)):
        # torch.cuda is the rules' and the leftover analysis' business; torch.npu is torch_npu's own
        return None
    op = apidata.lacks_npu_kernel(api, name)
    if op is not None:
        return _row(call, path, NO_NPU_KERNEL, Report.UNSUPPORTED, name,
                    f"aten::{op} has no NPU kernel in torch_npu {api.torch_npu_version} (it runs on the "
                    f"CPU at best): {_remedy(name, similar)}")
    if name.startswith("torch.ops."):
        return _judge_dispatcher_op(call, name, path, api)
    if not apidata.torch_api_knows(name) and not apidata.release_kernel_for(api, name):
        what = device_neutral(name)
        if what is not None:
            return _row(call, path, LEFT_ON_PURPOSE, Report.NOTE, name, device_neutral_note(name, what))
        return _row(call, path, UNKNOWN_SUPPORT, Report.UNKNOWN, name,
                    "not in PyTorch's public API lists: check that it exists for this torch version "
                    "and runs on NPU")
    return None


def _remedy(name: str, similar: bool) -> str:
    equivalent = equivalents().get(name)
    if equivalent is None:
        return "replace it or move it off the hot path"
    if similar:  # -sim left the call: it passes an argument the equivalent does not take
        return (f"call ascend_function.{equivalent.function} (an exact NPU equivalent) without the "
                "arguments it does not take, e.g. out=")
    return f"gpu2npu -sim calls ascend_function.{equivalent.function}, an exact NPU equivalent"


def _judge_dispatcher_op(call: ast.Call, name: str, path: str, api: apidata.ApiData) -> Optional[Finding]:
    parts = name.split(".")
    if len(parts) < 4:
        return None
    namespace, op = parts[2], parts[3]
    if namespace == "aten":
        missing = apidata.lacks_npu_kernel(api, f"torch.{op}")
        if missing is None:
            return None
        return _row(call, path, NO_NPU_KERNEL, Report.UNSUPPORTED, name,
                    f"aten::{missing} has no NPU kernel in torch_npu {api.torch_npu_version}")
    if namespace == "npu" or any(names_the_accelerator(namespace, other) for other in _OTHER_PLATFORMS):
        # another accelerator's operator library (vLLM's `_xpu_C`, `_rocm_C`): no CUDA build has it
        # either, so the project calls it only where it runs on that accelerator, never on the NPU
        return None
    return _row(call, path, UNKNOWN_SUPPORT, Report.UNKNOWN, name,
                f"custom operator namespace '{namespace}': it runs on NPU only if its library registers "
                "an NPU (PrivateUse1) kernel")


# What gives a custom operator a kernel from a Python function (torch.library's, a Library's, and the
# helpers LLM serving projects wrap them in); its first string names the operator.  (A schema alone,
# `define`, and a fake kernel for tracing, `register_fake`, run nothing: the kernel may be C++.)
_REGISTERING = frozenset({"custom_op", "impl", "direct_register_custom_op", "register_custom_op"})
_OPERATOR_KEYWORDS = frozenset({"op_name", "qualname", "name"})
# Dispatch keys and device types of one kind of device: a kernel for them is none for the NPU.
_ONE_DEVICE = frozenset({"cuda", "cpu", "xpu", "hip", "mps", "meta"})


def _operators_registered_here(scan: FileScan) -> FrozenSet[Tuple[str, str]]:
    """(namespace, operator) of the custom operators this file gives a kernel from Python for every
    device: the operator runs a function of the file, whose own calls have their rows.  (One whose
    kernels are for given devices, `impl("op", f, "CUDA")`, has none on the NPU.)  Registered under
    its name alone (the library elsewhere), it is the operator of that name that the file calls,
    where it calls one namespace's only: `torch.ops._C.gemm` beside `torch.ops.proj.gemm` may be
    the C++ kernel the Python one wraps."""
    found: Set[Tuple[Optional[str], str]] = set()
    for_one_device: Set[str] = set()
    for call in scan.calls:
        func = call.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if last not in _REGISTERING:
            continue
        strings = [(keyword, node.value) for keyword, node in
                   [(None, arg) for arg in call.args] + [(k.arg, k.value) for k in call.keywords]
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        text = next((text for keyword, text in strings if keyword is None or keyword in _OPERATOR_KEYWORDS), None)
        if not text:
            continue
        namespace, _, operator = text.partition("::") if "::" in text else (None, "", text)
        operator = operator.split("(", 1)[0].split(".", 1)[0].strip()
        if operator.isidentifier():
            # (a device given in a tuple or list too: `device_types=("cuda",)`)
            named = [node.value for value in [*call.args, *(k.value for k in call.keywords)] for node in ast.walk(value)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str)]
            if any(other.lower() in _ONE_DEVICE for other in named):
                for_one_device.add(operator)
            found.add((namespace, operator))
    namespaces: Dict[str, Set[str]] = {}  # operator -> the namespaces the file calls it in
    for name in (name for call in scan.calls for name in scan.qualified(call.func)):
        parts = name.split(".")
        if len(parts) >= 4 and parts[:2] == ["torch", "ops"]:
            namespaces.setdefault(parts[3], set()).add(parts[2])
    return frozenset((namespace, operator) if namespace is not None else (next(iter(namespaces[operator])), operator)
                     for namespace, operator in found if operator not in for_one_device
                     and (namespace is not None or len(namespaces.get(operator, ())) == 1))


def _registered(name: str, registered: FrozenSet[Tuple[str, str]]) -> bool:
    parts = name.split(".")
    return len(parts) >= 4 and (parts[2], parts[3]) in registered


def _own_method(scan: FileScan, call: ast.Call) -> bool:
    """Whether `call` calls, through `self` or `cls`, a method that the class around it defines
    (`self.dequantize(locations, size)` in a processor class): no tensor's method."""
    receiver = call.func.value  # type: ignore[attr-defined]
    if not (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")):
        return False
    method = call.func.attr  # type: ignore[attr-defined]
    return any(node.lineno <= call.lineno <= (node.end_lineno or node.lineno)
               and any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method
                       for item in node.body)
               for node in scan.groups.get(ast.ClassDef, ()))


def _judge_method_call(call: ast.Call, path: str, api: apidata.ApiData) -> Optional[Finding]:
    method = call.func.attr  # type: ignore[attr-defined]
    unpacked = any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords)
    op = apidata.method_lacks_npu_kernel(api, method, None if unpacked else len(call.args) + len(call.keywords))
    if op is None:
        return None
    return _row(call, path, UNKNOWN_SUPPORT, Report.UNKNOWN, f"Tensor.{method}",
                f"if the receiver is a tensor: aten::{op} has no NPU kernel in torch_npu "
                f"{api.torch_npu_version} (it runs on the CPU at best)")
