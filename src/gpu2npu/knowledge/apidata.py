"""Per-version knowledge of what torch_npu provides.

The JSON files in `data/` are generated from the torch_npu wheels by `scripts/gen_api_data.py`;
nothing in them is typed by hand.  This module only reads them and answers questions about them.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Mapping, Optional, Sequence

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
    custom_functions: frozenset = frozenset()
    # torch_npu.optim class -> the parameter names of its __init__ ("**name" for **kwargs)
    optimizer_signatures: Mapping[str, tuple] = field(default_factory=dict)
    # What torch.compile can use on the NPU ("npu", "npugraph_ex", "inductor"); None where the
    # data file does not record it (the releases built from source before the field existed).
    compile_backends: Optional[tuple] = None

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

    def has(self, qualified: str) -> bool:
        """Whether this release provides `qualified`: a name of one of the listed torch_npu
        modules, or a `torch_npu.<op>` custom operator (torch_npu binds those at top level)."""
        module, _, name = qualified.rpartition(".")
        if module == "torch_npu":
            return name in self.custom_functions
        return self.module_has(module, name)


def available_versions() -> list:
    names = [
        entry.name
        for entry in resources.files(DATA_PACKAGE).iterdir()
        if entry.name.startswith("torch_npu_") and entry.name.endswith(".json")
    ]
    versions = [n[len("torch_npu_") : -len(".json")] for n in names]
    return sorted(versions, key=version_key)


def resolve_version(text: str) -> str:
    """The known version `text` names: itself; without a local suffix (`2.1.0+cu121` -> 2.1.0);
    or the one release a prefix names (`2.1` -> 2.1.0).  UnknownVersionError otherwise, naming the
    candidates of an ambiguous prefix or the nearest known versions."""
    known = available_versions()
    text = text.strip()
    bare = text.split("+", 1)[0].lstrip("v")
    if bare in known:
        return bare
    if bare and all(part.isdigit() for part in bare.split(".")):
        matching = [version for version in known if version.startswith(bare + ".")]
        if len(matching) == 1:
            return matching[0]
        if matching:
            raise UnknownVersionError(f"-v {text} names several PyTorch versions with API data: "
                                      f"{', '.join(matching)}; give one of them")
        wanted = version_key(bare)
        below = [version for version in known if version_key(version) < wanted]
        above = [version for version in known if version_key(version) > wanted]
        nearest = (below[-1:] + above[:1])
        raise UnknownVersionError(f"no API data for PyTorch {text}; the nearest known: {' and '.join(nearest)} "
                                  f"(all: {', '.join(known)})")
    raise UnknownVersionError(f"-v {text} is not a PyTorch version (known versions: {', '.join(known)})")


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
        custom_functions=frozenset(raw.get("custom_functions", ())),
        optimizer_signatures={name: tuple(params) for name, params in raw.get("optimizer_signatures", {}).items()},
        compile_backends=tuple(raw["compile_backends"]) if "compile_backends" in raw else None,
    )


@functools.lru_cache(maxsize=None)
def kernel_ops() -> frozenset:
    """ATen operators that need a device kernel of their own (data/torch_ops.json)."""
    resource = resources.files(DATA_PACKAGE).joinpath("torch_ops.json")
    return frozenset(json.loads(resource.read_text(encoding="utf-8"))["kernel_ops"])


# Python namespaces whose functions are ATen operators named with a prefix.
_OP_PREFIXES = (("torch.nn.functional.", ""), ("torch.fft.", "fft_"), ("torch.linalg.", "linalg_"),
                ("torch.special.", "special_"), ("torch.", ""))


def aten_name(qualified: str):
    """The ATen operator a torch function call runs (`torch.linalg.svd` -> `linalg_svd`), or None."""
    for prefix, op_prefix in _OP_PREFIXES:
        if qualified.startswith(prefix):
            rest = qualified[len(prefix):]
            return op_prefix + rest if rest.isidentifier() else None
    return None


def lacks_npu_kernel(api: ApiData, qualified: str):
    """The ATen operator behind `qualified` when it needs a device kernel that this torch_npu
    release does not list (an in-place `op_` counts as present when `op` is); else None."""
    op = aten_name(qualified)
    if op is None or op not in kernel_ops():
        return None
    known = api.native_functions | api.custom_functions
    if op in known or (op.endswith("_") and op[:-1] in known):
        return None
    return op


def release_kernel_for(api: ApiData, qualified: str) -> bool:
    """Whether `torch.<op>` is an ATen operator this torch_npu release registers an NPU kernel for
    (`torch._foreach_add_`): then the torch it is built for has the operator, bound on `torch`, and
    it runs on the NPU, whether or not the name is public API."""
    parts = qualified.split(".")
    return len(parts) == 2 and parts[0] == "torch" and parts[1] in api.native_functions | api.custom_functions


_MISSING: dict = {}


def ops_without_npu_kernel(api: ApiData) -> frozenset:
    """Names (without namespace prefix) whose call this release cannot run on the NPU."""
    key = (api.torch_version, api.torch_npu_version)
    if key not in _MISSING:
        _MISSING[key] = _ops_without_npu_kernel(api)
    return _MISSING[key]


def _ops_without_npu_kernel(api: ApiData) -> frozenset:
    known = api.native_functions | api.custom_functions
    missing = {op for op in kernel_ops() if op not in known and not (op.endswith("_") and op[:-1] in known)}
    names = set(missing)
    for _, op_prefix in _OP_PREFIXES:
        if op_prefix:
            names |= {op[len(op_prefix):] for op in missing if op.startswith(op_prefix)}
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def _torch_ops_file() -> dict:
    resource = resources.files(DATA_PACKAGE).joinpath("torch_ops.json")
    return json.loads(resource.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _public_api():
    api = _torch_ops_file()["api"]
    return frozenset(api["modules"]), {module: frozenset(names) for module, names in api["names"].items()}


@functools.lru_cache(maxsize=4096)
def torch_api_knows(qualified: str) -> bool:
    """Whether `torch.a.b...` is a name of PyTorch's public API (data/torch_ops.json "api").

    The deepest known module of the path decides: where its names are listed the next part must
    be one of them; below a module whose names are not listed (or below a listed name: a class's
    methods) everything is taken as known.  Private names (`torch._C...`) are not public API.
    """
    parts = qualified.split(".")
    for index, part in enumerate(parts):
        if part.startswith("__") and part.endswith("__"):
            parts = parts[:index + 1]  # torch.__version__.split: a dunder's members are Python's
            break
        if part.startswith("_"):
            return False
    if parts[-1].startswith("__") and parts[-1].endswith("__"):
        return True
    modules, names = _public_api()
    depth = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules or i == 1)
    module = ".".join(parts[:depth])
    if module not in modules or depth == len(parts):
        return module in modules
    listed = names.get(module)
    return listed is None or parts[depth] in listed


# Methods that Python's own containers and strings have too: on an object of unknown type such a
# call says nothing about tensors.
_BUILTIN_METHODS = frozenset(
    name for kind in (list, dict, set, str, bytes, int, float, tuple) for name in dir(kind)
)


@functools.lru_cache(maxsize=None)
def _method_ops() -> frozenset:
    return frozenset(
        op for op in _torch_ops_file()["method_ops"] if not op.startswith("_") and op not in _BUILTIN_METHODS
    )


def method_lacks_npu_kernel(api: ApiData, method: str, arguments: Optional[int] = None):
    """For `x.method(...)` with `x` of unknown type, given `arguments` (None: not known, a `*args`):
    the ATen operator without an NPU kernel in this release that the call runs if `x` is a tensor,
    else None.  A call with more arguments than torch's method takes is another class's."""
    if method not in _method_ops():
        return None
    most = _torch_ops_file().get("method_arguments", {}).get(method)
    if arguments is not None and most is not None and arguments > most:
        return None
    return lacks_npu_kernel(api, f"torch.{method}")


@functools.lru_cache(maxsize=None)
def _torch_history() -> dict:
    resource = resources.files(DATA_PACKAGE).joinpath("torch_history.json")
    if not resource.is_file():
        return {"names": {}, "keywords": {}, "releases": []}
    return json.loads(resource.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def first_release_with_npu_inductor() -> Optional[str]:
    """The first release whose torch_npu registers inductor for the NPU (torch.compile's default
    backend compiles there), or None."""
    return next((version for version in available_versions() if "inductor" in (load(version).compile_backends or ())),
                None)


def version_key(version: str) -> tuple:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def torch_added_in(qualified: str, torch_version: str) -> Optional[str]:
    """The torch release that added `qualified` (or the module above it) when that is after
    `torch_version`, else None (data/torch_history.json, scripts/gen_torch_history.py)."""
    names = _torch_history()["names"]
    parts = qualified.split(".")
    # the latest release among the name and the modules above it that the data knows: a name
    # comes with its module or after it (torch.nn.attention came with 2.3, its flex_attention
    # with 2.5), and a module's names the data does not list come with the module
    known = [added for added in (names.get(".".join(parts[:depth])) for depth in range(2, len(parts) + 1)) if added]
    added = max(known, key=version_key) if known else None
    return added if added is not None and version_key(added) > version_key(torch_version) else None


def torch_setting_added_in(setting: str, torch_version: str) -> Optional[str]:
    """The torch release whose configuration module first declares `setting`
    (`torch._inductor.config.fx_graph_cache`) when that is after `torch_version`, else None: such
    a module refuses a setting it does not declare (AttributeError "... does not exist")."""
    added = _torch_history().get("settings", {}).get(setting)
    return added if added is not None and version_key(added) > version_key(torch_version) else None


def torch_keyword_added_in(qualified: str, keyword: str, torch_version: str) -> Optional[str]:
    """The torch release that added the keyword parameter `keyword` of the function `qualified`
    when that is after `torch_version`, else None."""
    added = _torch_history()["keywords"].get(qualified, {}).get(keyword)
    return added if added is not None and version_key(added) > version_key(torch_version) else None
