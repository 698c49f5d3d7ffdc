"""What happens to each package of a project's dependencies: the data of data/dependencies.json.

One table a reviewer can read: the CUDA-only distributions (by PEP 503 name or an fnmatch pattern
of one), the modules each provides (a requirement is removed only when no migrated file imports
them) and the action; the torchvision/torchaudio releases built for each torch; and, per
torch_npu release, what it needs at run time (its Requires-Dist, which pip installs with it, and
the modules its code imports without declaring them, which the project must list itself).
"""
from __future__ import annotations

import fnmatch
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Dict, List, Optional, Tuple

from ..knowledge.apidata import DATA_PACKAGE


@dataclass(frozen=True)
class PackageRule:
    names: Tuple[str, ...]  # normalised names or fnmatch patterns of them
    imports: Tuple[str, ...]  # the modules it provides (dotted: `nvidia.dali`)
    action: str  # "remove" | "replace" | "report"
    why: str
    repos: Tuple[str, ...] = ()  # owner/name of its source repository (git+https requirements)
    replacement: Optional[str] = None
    plugin: Optional[str] = None  # the Ascend plugin it runs through (vllm-ascend)


@dataclass(frozen=True)
class DependencyTable:
    packages: Tuple[PackageRule, ...]
    torch_pairs: Dict[str, Dict[str, Optional[str]]]
    torch_npu: Dict[str, Dict[str, List[str]]]
    cuda_index: "re.Pattern"
    cpu_index: str
    reported_indexes: Tuple["re.Pattern", ...]

    def rule_for(self, name: str) -> Optional[PackageRule]:
        normalised = normalise(name)
        for rule in self.packages:  # exact names first: `nvidia-dali-cuda120` before `nvidia-*`
            if normalised in rule.names:
                return rule
        for rule in self.packages:
            if any(fnmatch.fnmatchcase(normalised, pattern) for pattern in rule.names if "*" in pattern):
                return rule
        return None

    def rule_for_import(self, module: str) -> Optional[PackageRule]:
        """The rule of the package that provides the module `module` (`flash_attn`)."""
        return next((rule for rule in self.packages if module in rule.imports), None)

    def rule_for_repository(self, url: str) -> Optional[PackageRule]:
        lowered = url.lower()
        for rule in self.packages:
            if any(re.search(rf"[/:]{re.escape(repo.lower())}(?:\.git)?(?:[/@#]|$)", lowered) for repo in rule.repos):
                return rule
        return None

    def paired(self, package: str, torch_version: str) -> Optional[str]:
        """The torchvision or torchaudio release built for `torch_version` (None: there is none)."""
        return self.torch_pairs.get(torch_version, {}).get(package)

    def runtime_needs(self, torch_npu_version: str) -> List[str]:
        """Modules torch_npu imports without declaring them: the project must install them."""
        return list(self.torch_npu.get(torch_npu_version, {}).get("undeclared", ()))


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=None)
def load() -> DependencyTable:
    raw = json.loads(resources.files(DATA_PACKAGE).joinpath("dependencies.json").read_text(encoding="utf-8"))
    packages = tuple(
        PackageRule(tuple(normalise(n) for n in entry["names"]), tuple(entry["imports"]), entry["action"], entry["why"],
                    tuple(entry.get("repos", ())), entry.get("replacement"), entry.get("plugin"))
        for entry in raw["packages"]
    )
    indexes = raw["cuda_indexes"]
    return DependencyTable(packages, raw["torch_pairs"], raw["torch_npu"], re.compile(indexes["pattern"]),
                           indexes["cpu"], tuple(re.compile(p) for p in indexes["report"]))
