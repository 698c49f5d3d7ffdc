"""Per-version knowledge of what torch_npu provides.

The JSON files in `data/` are generated from the torch_npu wheels by `scripts/gen_api_data.py`;
nothing in them is typed by hand.  This module only reads them and answers questions about them.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Mapping, Sequence

DATA_PACKAGE = "gpu2npu.data"
NPU_MODULE = "torch_npu.npu"


class UnknownVersionError(ValueError):
    """Raised for a `-v` value that has no data file."""


@dataclass(frozen=True)
class ApiData:
    torch_version: str
    torch_npu_version: str
    modules: Mapping[str, frozenset]
    native_functions: frozenset

    @property
    def version_tuple(self) -> tuple:
        return tuple(int(p) for p in self.torch_version.split(".")[:3] if p.isdigit())

    def npu_has(self, path: Sequence[str]) -> bool:
        """Whether `torch.cuda.<path>` exists as `torch_npu.npu.<path>` in this release.

        `path` is what follows `torch.cuda`, e.g. ("amp", "GradScaler").  The check goes as deep
        as the data does: a submodule's own name list decides its members, deeper attributes
        (methods of a class) are taken to follow their owner.
        """
        if not path:
            return True
        top = self.modules.get(NPU_MODULE, frozenset())
        if path[0] not in top:
            return False
        submodule = self.modules.get(f"{NPU_MODULE}.{path[0]}")
        if submodule is None or len(path) == 1:
            return True
        return path[1] in submodule

    def module_has(self, module: str, name: str) -> bool:
        return name in self.modules.get(module, frozenset())


def available_versions() -> list:
    names = [
        entry.name
        for entry in resources.files(DATA_PACKAGE).iterdir()
        if entry.name.startswith("torch_npu_") and entry.name.endswith(".json")
    ]
    versions = [n[len("torch_npu_") : -len(".json")] for n in names]
    return sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))


@functools.lru_cache(maxsize=None)
def load(version: str) -> ApiData:
    resource = resources.files(DATA_PACKAGE).joinpath(f"torch_npu_{version}.json")
    if not resource.is_file():
        known = ", ".join(available_versions()) or "none"
        raise UnknownVersionError(f"no API data for PyTorch {version} (known versions: {known})")
    raw = json.loads(resource.read_text(encoding="utf-8"))
    return ApiData(
        torch_version=raw["torch_version"],
        torch_npu_version=raw["torch_npu_version"],
        modules={name: frozenset(names) for name, names in raw["modules"].items()},
        native_functions=frozenset(raw.get("native_functions", ())),
    )
