"""One requirement, one decision: the same for every file that lists packages (requirements
files, environment.yml's pip section, pyproject.toml, setup.py, setup.cfg).

A requirement is read as PEP 508 writes it (`name[extras] spec ; marker`, `name @ url`) or as
pip takes a bare URL (`git+https://github.com/Dao-AILab/flash-attention`); everything else on
its line (options, comments) belongs to the file format and is kept by the caller.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Set, Tuple

from ..knowledge.apidata import ApiData
from ..knowledge.bitsandbytes_devices import requirement_note
from ..records.change import Report
from ..records.finding_kinds import LEFT_ON_PURPOSE
from .table import DependencyTable, PackageRule, normalise

TORCH_RULE = "NPU851"
PAIRED_RULE = "NPU852"
CUDA_ONLY_RULE = "NPU853"
TWIN_RULE = "NPU854"
INDEX_RULE = "NPU855"
CONDA_RULE = "NPU856"
DOCKER_RULE = "NPU857"
CPU_INDEX_WHY = ("the CUDA builds' index; torch_npu needs the CPU build of torch (on x86; aarch64 wheels on PyPI are "
                 "CPU builds)")

_NAMED = re.compile(r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?P<extras>\[[^\]]*\])?\s*(?P<rest>.*)$", re.DOTALL)
_URL = re.compile(r"^(?:git\+|hg\+|svn\+|bzr\+)?(?:https?|file|ssh|git)://|^git\+", re.IGNORECASE)
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
# the distribution a wheel or source archive URL holds: .../torch-2.0.1%2Bcu118-cp311-....whl
_ARCHIVE = re.compile(r"/([A-Za-z0-9][A-Za-z0-9._]*)-\d[^/]*\.(?:whl|tar\.gz|zip)$")


@dataclass(frozen=True)
class Requirement:
    name: Optional[str]  # None: a URL whose package cannot be told
    extras: str = ""  # "[...]" as written
    spec: str = ""  # the version clauses as written ("==2.0.1+cu118", ">=1.13,<2.1")
    marker: str = ""  # "; python_version < '3.10'" as written (with what precedes the ';')
    url: str = ""  # `name @ url`, or a bare URL requirement

    @property
    def normalised(self) -> str:
        return normalise(self.name) if self.name else ""


def parse_requirement(text: str) -> Optional[Requirement]:
    text = text.strip()
    if not text:
        return None
    if _URL.match(text):
        egg = _EGG.search(text)
        archive = _ARCHIVE.search(text.split("#")[0].split("?")[0])
        name = egg.group(1) if egg else archive.group(1) if archive else None
        return Requirement(name, url=text)
    match = _NAMED.match(text)
    if match is None:
        return None
    rest = match.group("rest")
    marker = ""
    if rest.startswith("@"):
        body = rest[1:]
        cut = re.search(r"\s;", body)  # a URL may hold ';': the marker's needs a space before it
        url, marker = (body[:cut.start()], body[cut.start():].rstrip()) if cut else (body, "")
        return Requirement(match.group("name"), match.group("extras") or "", url=url.strip(), marker=marker)
    spec, semicolon, after = rest.partition(";")
    if semicolon:
        marker = (" " if spec.endswith((" ", "\t")) else "") + ";" + after
    return Requirement(match.group("name"), match.group("extras") or "", spec.strip(), marker.rstrip() if marker else "")


@dataclass
class Decision:
    """What becomes of one requirement: `write` replaces it (None: kept as it is; []: removed),
    `insert` follows it, `rule`/`message` make its change row, `report` its finding."""

    rule: str = ""
    write: Optional[List[str]] = None
    insert: List[str] = field(default_factory=list)
    message: str = ""
    insert_message: str = ""
    report: Optional[Tuple[Report, str, str]] = None  # (report, what, tip)
    torch_pin: Optional[str] = None  # the torch spec the project asked for (version check)


@dataclass
class Context:
    api: ApiData
    table: DependencyTable
    # the migrated files that still import any of the modules (None: not known, as in `check`)
    importers: Optional[Callable[[Sequence[str]], List[str]]] = None
    present: Set[str] = field(default_factory=set)  # normalised names listed in the same file
    added: Set[Tuple[str, int]] = field(default_factory=set)  # (name, ASCEND_HOSTS index) this file received
    # the torch_npu release another dependency file of the project pins, as (its spec, that file)
    # (`torch-npu==2.10.0.post2` in requirements/npu.txt): a line added here asks for the same one
    project_torch_npu: Optional[Tuple[str, str]] = None


def decide(requirement: Requirement, context: Context) -> Decision:
    name = requirement.normalised
    if name == "torch":
        return _torch(requirement, context)
    if name in ("torchvision", "torchaudio"):
        return _paired(requirement, context)
    if name == "torch-npu":
        return _own_torch_npu(requirement, context)
    rule = context.table.rule_for(name) if name else None
    if rule is None and requirement.url:
        rule = context.table.rule_for_repository(requirement.url)
    if rule is not None:
        return _cuda_only(requirement, rule, context)
    return Decision()


# The machines torch_npu has wheels for (Linux on x86_64 and aarch64), as PEP 508 markers see them.
ASCEND_HOSTS = tuple({"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": machine}
                     for machine in ("x86_64", "aarch64"))


# (ASCEND_HOSTS' index of the x86 machine, on which torch_npu runs on torch's CPU build)
X86_64 = 0
# What torch build torch_npu runs on (its install guide: the CPU build on x86, PyPI's on aarch64).
CPU_BUILD = "(torch's CPU build on x86, from https://download.pytorch.org/whl/cpu; PyPI's on aarch64)"


def ascend_hosts_of(marker: str) -> Tuple[int, ...]:
    """The ASCEND_HOSTS (by index) a requirement with this marker ("; sys_platform == 'darwin'")
    may install on.  Only the platform variables are known; a comparison of anything else
    (python_version, extras) may hold, and a marker that cannot be read may hold too."""
    text = marker.split(";", 1)[1].strip() if ";" in marker else ""
    try:
        tree = ast.parse(text, mode="eval").body if text else None
    except SyntaxError:
        tree = None
    return tuple(index for index, host in enumerate(ASCEND_HOSTS) if tree is None or _holds(tree, host) is not False)


def _holds(node: ast.AST, host) -> Optional[bool]:
    """A marker's truth on `host`: True, False or None (depends on what is not known)."""
    if isinstance(node, ast.BoolOp):
        values = [_holds(value, host) for value in node.values]
        if isinstance(node.op, ast.And):
            return False if False in values else None if None in values else True
        return True if True in values else None if None in values else False
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = (_value(side, host) for side in (node.left, node.comparators[0]))
        if left is None or right is None:
            return None
        operator = node.ops[0]
        if isinstance(operator, ast.Eq):
            return left == right
        if isinstance(operator, ast.NotEq):
            return left != right
        if isinstance(operator, ast.In):
            return left in right
        if isinstance(operator, ast.NotIn):
            return left not in right
    return None


def _value(node: ast.AST, host) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return host.get(node.id)
    return None


def _torch(requirement: Requirement, context: Context) -> Decision:
    api = context.api
    hosts = ascend_hosts_of(requirement.marker)
    if not hosts:
        return Decision()  # (the macOS or Windows line of a project that pins torch per platform)
    target = api.torch_version
    release = _torch_npu_release(context)
    decision = Decision(rule=TORCH_RULE, torch_pin=requirement.spec or requirement.url or None)
    if not _pinned_to(requirement, target):
        decision.write = [f"{requirement.name}{requirement.extras}=={target}{requirement.marker}"]
        was = requirement.url or requirement.spec or "(any version)"
        decision.message = f"torch {was} -> =={target}: torch_npu {release} is built for torch {target} {CPU_BUILD}"
    # (what the release the line asks for imports undeclared, where the table knows it; else the run's)
    needs_of = release if release in context.table.torch_npu else api.torch_npu_version
    for needed in ["torch_npu"] + context.table.runtime_needs(needs_of):
        key = normalise(needed)
        # after each torch line for a machine that has none yet (a file may pin torch per machine)
        if key in context.present or all((key, host) in context.added for host in hosts):
            continue
        context.added.update((key, host) for host in hosts)
        text = f"torch_npu=={release}" if needed == "torch_npu" else needed
        decision.insert.append(text + requirement.marker)
    if decision.insert:
        added = ", ".join(text.split(";")[0].strip() for text in decision.insert)
        undeclared = [text for text in decision.insert if not text.startswith("torch_npu")]
        imported = (f"torch_npu {needs_of} imports {', '.join(t.split(';')[0] for t in undeclared)} without declaring it"
                    if undeclared else "")
        if len(undeclared) == len(decision.insert):  # (torch_npu is listed already: what it needs is not)
            decision.insert_message = f"add {added}: {imported}"
        else:
            own = (f" (the release {context.project_torch_npu[1]} pins, for the same torch)"
                   if release != api.torch_npu_version else "")
            # (the torch line is the project's own, as it was: where it may install on x86 and names
            # no CPU build, what torch_npu runs on there is said here, as a re-pinned line says it)
            build = (f" {CPU_BUILD}" if decision.write is None and X86_64 in hosts
                     and not requirement.spec.endswith("+cpu") and not requirement.url else "")
            decision.insert_message = (f"add {added}: the NPU build of torch for torch {target}{own}{build}"
                                       + (f" ({imported})" if imported else ""))
    if decision.write is None and not decision.insert:
        return Decision(torch_pin=decision.torch_pin)
    return decision


def _torch_npu_release(context: Context) -> str:
    """The torch_npu release a line added asks for: the project's own pin where another of its
    files has one for the run's torch (two pins of one package cannot be installed together), else
    the run's."""
    own = context.project_torch_npu
    if own is not None and _built_for(own[0], context.api.torch_version):
        return own[0].lstrip("=").strip()
    return context.api.torch_npu_version


def _built_for(spec: str, torch_version: str) -> bool:
    """Whether a torch_npu pin (`==2.10.0.post2`) asks for a release built for `torch_version`."""
    return re.fullmatch(rf"==\s*{re.escape(torch_version)}(\.post\d+)?", spec) is not None


# A pin of torch_npu written in a dependency file of any form (a requirement line, a string of
# pyproject.toml or setup.py): `torch-npu==2.10.0.post2`.
_TORCH_NPU_PIN = re.compile(r"(?<![\w.-])torch[-_]npu\s*(==\s*[0-9][\w.+!]*)", re.IGNORECASE)


def torch_npu_pin_in(text: str) -> Optional[str]:
    """The spec of the first torch_npu pin of a dependency file's text, or None."""
    match = _TORCH_NPU_PIN.search(text)
    return match.group(1) if match else None


def _pinned_to(requirement: Requirement, version: str) -> bool:
    """Whether the requirement asks for exactly `version` (or its CPU build)."""
    return not requirement.url and re.fullmatch(rf"==\s*{re.escape(version)}(\+cpu)?", requirement.spec) is not None


def _own_torch_npu(requirement: Requirement, context: Context) -> Decision:
    """A torch_npu pin the project has itself: kept where it is built for the run's torch (the
    project's choice of post release), moved with torch where it is for another (torch_npu
    2.1.0.post17 beside torch 2.10.0 cannot be installed)."""
    target = context.api.torch_version
    if requirement.url or not re.fullmatch(r"==\s*[0-9][\w.+!]*", requirement.spec or ""):
        return Decision()  # (a range or a wheel's address: what it allows is the project's)
    if _built_for(requirement.spec, target):
        return Decision()
    wanted = context.api.torch_npu_version
    return Decision(rule=TORCH_RULE, write=[f"{requirement.name}{requirement.extras}=={wanted}{requirement.marker}"],
                    message=f"torch_npu {requirement.spec} -> =={wanted}, the release built for torch {target} "
                            "(the torch this migration pins)")


def _paired(requirement: Requirement, context: Context) -> Decision:
    target = context.api.torch_version
    name = requirement.normalised
    paired = context.table.paired(name, target)
    if paired is None:
        return Decision(rule=PAIRED_RULE, report=(
            Report.UNSUPPORTED, name, f"no {name} release is built for torch {target}: drop it, or choose the "
                                      f"torch_npu release (-v) of a torch that has one"))
    if _pinned_to(requirement, paired):
        return Decision()
    return Decision(rule=PAIRED_RULE,
                    write=[f"{requirement.name}{requirement.extras}=={paired}{requirement.marker}"],
                    message=f"{name} {requirement.url or requirement.spec or '(any version)'} -> =={paired}, "
                            f"the release built for torch {target}")


def _cuda_only(requirement: Requirement, rule: PackageRule, context: Context) -> Decision:
    shown = requirement.name or requirement.url
    if rule.action == "replace":
        spec = "" if requirement.url else requirement.spec
        return Decision(rule=TWIN_RULE, write=[f"{rule.replacement}{requirement.extras}{spec}{requirement.marker}"],
                        message=f"{shown} -> {rule.replacement}: {rule.why}")
    modules = ", ".join(rule.imports)
    if rule.action == "report":
        return Decision(rule=CUDA_ONLY_RULE, report=(Report.UNSUPPORTED, shown, rule.why))
    # (a release range whose every release runs on the NPU after all stays where a file uses it)
    note = (requirement_note(normalise(requirement.name), requirement.spec, context.api.torch_version)
            if requirement.name else None)
    users = context.importers(rule.imports) if context.importers is not None else None
    if note is not None and users is None:
        return Decision(rule=LEFT_ON_PURPOSE.code, report=(Report.NOTE, shown, note))
    if note is not None and users:
        return Decision(rule=LEFT_ON_PURPOSE.code, report=(Report.NOTE, shown, f"{note}; kept: {_listed(users)} "
                                                                             f"import{'s' if len(users) == 1 else ''} "
                                                                             f"{modules}"))
    if users is None:  # `check`: no migration to ask
        return Decision(rule=CUDA_ONLY_RULE, report=(
            Report.UNSUPPORTED, shown, f"CUDA-only: {rule.why}; the migration removes it where no migrated file "
                                       f"imports {modules}"))
    if users:
        return Decision(rule=CUDA_ONLY_RULE, report=(
            Report.UNSUPPORTED, shown, f"CUDA-only ({rule.why}), kept: {_listed(users)} still "
                                       f"import{'s' if len(users) == 1 else ''} {modules} after the migration"))
    return Decision(rule=CUDA_ONLY_RULE, write=[],
                    message=f"remove {shown}: CUDA-only ({rule.why}); no migrated file imports {modules}")


def _listed(users: Sequence[str]) -> str:
    return ", ".join(users[:3]) + (f" and {len(users) - 3} more" if len(users) > 3 else "")
