#!/usr/bin/env python3
"""Generate ``src/gpu2npu/data/torch_history.json``: in which torch release each public name of the
tracked torch modules, and each parameter of their functions, appeared.

    python scripts/gen_torch_history.py WHEEL_FOLDER

WHEEL_FOLDER holds one torch wheel per release that gpu2npu has API data for (any platform: the
Python files and type stubs are the same; the aarch64 wheels on PyPI are the smallest)::

    pip download torch==2.1.0 --no-deps --only-binary=:all: --python-version 3.11 \\
        --platform manylinux2014_aarch64 -d WHEEL_FOLDER

Each wheel is read as data, never imported.  The names of a module are what its source defines
at module level (functions, classes, assignments, imports, ``__all__``, ``from X import *`` of a
module whose names are known) and its submodules; torch's own namespace adds the operators its
``_C/_VariableFunctions.pyi`` stub lists (torch binds them at import).  A function a module binds
from C by name (``scaled_dot_product_attention = _add_docstr(torch._C._nn.scaled_dot_product_attention,
...)``) has the parameters its C module's stub declares, and its keywords are tracked from the first
release that has it.  The settings of torch's configuration modules (SETTINGS_MODULES) are what
their source assigns at module level and in its classes (`triton.cudagraphs`), dated from the
module's first release.  A name counts as added in
the first release from which every later release has it (a name that comes and goes is left out:
the reports must not guess).  Names of the oldest release are not listed.
Output is sorted JSON without timestamps: reruns are byte-identical.
"""
from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Dict, Optional, Set, Tuple

DATA = Path(__file__).resolve().parent.parent / "src" / "gpu2npu" / "data" / "torch_history.json"
MODULES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.attention", "torch.nn.init", "torch.nn.utils",
    "torch.distributed", "torch.distributed.fsdp", "torch.distributed.tensor", "torch.distributed.checkpoint",
    "torch.accelerator", "torch.amp", "torch.autograd", "torch.utils.data", "torch.utils.checkpoint",
    "torch.compiler", "torch.optim", "torch.optim.lr_scheduler", "torch.linalg", "torch.fft", "torch.special",
    "torch.export", "torch.func", "torch.library", "torch.backends", "torch.cpu", "torch.mps", "torch.xpu",
)
# torch's configuration modules, which refuse a setting they do not declare (`torch._inductor.config.
# fx_graph_cache = True` raises AttributeError "... does not exist" in a torch without it)
SETTINGS_MODULES = ("torch._inductor.config", "torch._dynamo.config")
VERSION = re.compile(r"torch-(\d+\.\d+\.\d+)")


def _version_key(version: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


class Wheel:
    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path)
        self.files = set(self.zip.namelist())
        self.own: Dict[str, Optional[Set[str]]] = {}  # module -> what its source defines itself
        self.stars: Dict[str, Set[str]] = {}  # module -> modules it imports * from
        self.links: Set[Tuple[str, str]] = set()  # (function where defined, name it has in a module)
        self.parameters: Dict[str, Set[str]] = {}
        # functions bound from C by name (`scaled_dot_product_attention = _add_docstr(
        # torch._C._nn.scaled_dot_product_attention, ...)`), whose parameters its stub declares
        self.bound_from_c: Set[str] = set()
        self.links_from: Dict[str, list] = {}  # module -> (module, name) it imports by name
        self._final: Dict[str, Set[str]] = {}

    def source_of(self, module: str) -> Optional[str]:
        base = module.replace(".", "/")
        for candidate in (f"{base}/__init__.py", f"{base}.py"):
            if candidate in self.files:
                return self.zip.read(candidate).decode("utf-8", "replace")
        return None

    def is_package(self, module: str) -> bool:
        return f"{module.replace('.', '/')}/__init__.py" in self.files

    def read(self, modules) -> None:
        """Read `modules` and every torch module they import from, then close the star imports
        and the functions' parameters over what was read (imports go round in circles)."""
        todo = list(modules)
        while todo:
            module = todo.pop()
            if module in self.own:
                continue
            self.own[module] = self._own(module)
            todo.extend(origin for origin, _ in self.links_from.pop(module, ()))
            todo.extend(self.stars.get(module, ()))
        final = {module: set(names) for module, names in self.own.items() if names is not None}
        changed = True
        while changed:
            changed = False
            for module, origins in self.stars.items():
                if module not in final:
                    continue
                for origin in origins:
                    new = {n for n in final.get(origin, ()) if not n.startswith("_")} - final[module]
                    if new:
                        final[module] |= new
                        changed = True
        self._final = final
        for module, origins in self.stars.items():
            for origin in origins:
                for name in final.get(origin, ()):
                    self.links.add((f"{origin}.{name}", f"{module}.{name}"))
        changed = True
        while changed:
            changed = False
            for origin, here in self.links:
                if origin in self.parameters and here not in self.parameters:
                    self.parameters[here] = self.parameters[origin]
                    changed = True

    def settings(self, module: str) -> Optional[Set[str]]:
        """The settings a configuration module declares, as its config module names them: each
        module-level assignment (in its `if`/`try` blocks too), and each of a class's at module
        level under the class's name (`triton.cudagraphs`); None where the wheel has no such module."""
        source = self.source_of(module)
        if source is None:
            return None
        found: Set[str] = set()

        def declare(body, prefix: str) -> None:
            for statement in body:
                if isinstance(statement, ast.ClassDef):
                    declare(statement.body, f"{prefix}{statement.name}.")
                    continue
                if isinstance(statement, (ast.If, ast.Try)):
                    for block in (statement.body, statement.orelse, getattr(statement, "finalbody", []),
                                  *[handler.body for handler in getattr(statement, "handlers", [])]):
                        declare(block, prefix)
                    continue
                targets = (statement.targets if isinstance(statement, ast.Assign)
                           else [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value else [])
                for target in targets:
                    if isinstance(target, ast.Name) and not target.id.startswith("__") and not (
                            isinstance(statement.value, ast.Lambda)):
                        found.add(prefix + target.id)

        declare(ast.parse(source).body, "")
        return found

    def names(self, module: str) -> Optional[Set[str]]:
        if self.own.get(module) is None:
            return None
        return {n for n in self._final.get(module, ()) if not n.startswith("_")}

    def _own(self, module: str) -> Optional[Set[str]]:
        source = self.source_of(module)
        if source is None:
            return None
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        names: Set[str] = set()
        imported = []
        package = module if self.is_package(module) else module.rpartition(".")[0]
        for statement in _module_level(tree.body):
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(statement.name)
                arguments = statement.args
                # ("**": it takes any keyword, so none is new to it)
                self.parameters[f"{module}.{statement.name}"] = {
                    a.arg for a in arguments.args + arguments.kwonlyargs} | ({"**"} if arguments.kwarg else set())
            elif isinstance(statement, ast.ClassDef):
                names.add(statement.name)
            elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                stubbed = self._stub_parameters(statement.value) if len(targets) == 1 else None
                if stubbed is not None and isinstance(targets[0], ast.Name):
                    self.parameters[f"{module}.{targets[0].id}"] = stubbed
                    self.bound_from_c.add(f"{module}.{targets[0].id}")
                for target in targets:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            names.add(node.id)
                if _is_all(statement):
                    names.update(_strings(statement.value))
            elif isinstance(statement, ast.Import):
                names.update(alias.asname or alias.name.split(".")[0] for alias in statement.names)
            elif isinstance(statement, ast.ImportFrom):
                origin = _resolve(package, statement.module, statement.level)
                for alias in statement.names:
                    if alias.name == "*":
                        if origin and origin.startswith("torch"):
                            self.stars.setdefault(module, set()).add(origin)
                    else:
                        names.add(alias.asname or alias.name)
                        if origin and origin.startswith("torch") and origin != module:
                            self.links.add((f"{origin}.{alias.name}", f"{module}.{alias.asname or alias.name}"))
                            imported.append((origin, alias.name))
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                call = statement.value  # __all__.extend([...]) / __all__.append("x")
                if (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                        and call.func.value.id == "__all__" and call.args):
                    names.update(_strings(call.args[0]))
        self.links_from[module] = imported
        if module == "torch":
            stub = "torch/_C/_VariableFunctions.pyi"
            if stub in self.files:
                names.update(re.findall(r"^def (\w+)\(", self.zip.read(stub).decode("utf-8", "replace"), re.MULTILINE))
            names.update(self._low_precision_dtypes())
        if self.is_package(module):
            prefix = module.replace(".", "/") + "/"
            for name in self.files:
                if name.startswith(prefix):
                    rest = name[len(prefix):].split("/")
                    if len(rest) == 2 and rest[1] == "__init__.py" or len(rest) == 1 and rest[0].endswith(".py"):
                        names.add(rest[0][:-3] if rest[0].endswith(".py") else rest[0])
        return names

    def _stub_parameters(self, value: Optional[ast.AST]) -> Optional[Set[str]]:
        """The parameters (of all its overloads) that the stub of torch's C module declares for the
        function a module binds with `_add_docstr(torch._C.<module>.<name>, ...)`, or None."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "_add_docstr"
                and value.args and isinstance(value.args[0], ast.Attribute)):
            return None
        bound = ast.unparse(value.args[0])
        c_module, _, name = bound.rpartition(".")
        if not c_module.startswith("torch._C"):
            return None
        stub = c_module.replace(".", "/") + ".pyi"
        if stub not in self.files:
            stub = c_module.replace(".", "/") + "/__init__.pyi"
            if stub not in self.files:
                return None
        found: Optional[Set[str]] = None
        for node in ast.parse(self.zip.read(stub).decode("utf-8", "replace")).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                arguments = node.args
                found = (found or set()) | {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
                if arguments.kwarg:
                    found.add("**")
        return found

    def _low_precision_dtypes(self) -> Set[str]:
        """The float8 and float4 dtypes of the release (torch binds its dtypes in C): those that
        torch/_C/__init__.pyi declares, and those of c10's ScalarType.h, whose Python names are
        their C++ names in lower case (2.1.0's stub lacks its two float8 dtypes; later headers
        moved).  Older dtypes are not tracked: every release listed has them, while old stubs
        omit some (1.11.0's has no complex32)."""
        found: Set[str] = set()
        stub = "torch/_C/__init__.pyi"
        if stub in self.files:
            found.update(re.findall(r"^((?:float8|float4)_\w+): dtype\b", self.zip.read(stub).decode("utf-8", "replace"),
                                    re.MULTILINE))
        header = "torch/include/c10/core/ScalarType.h"
        if header in self.files:
            found.update(name.lower() for name in re.findall(r"_\(\s*(?:c10|at)::\w+\s*,\s*((?:Float8|Float4)_\w+)\s*\)",
                                                               self.zip.read(header).decode("utf-8", "replace")))
        return found


def _module_level(body):
    """Statements at module level, also inside if/try/with blocks."""
    for statement in body:
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            yield from _module_level(statement.body)
            yield from _module_level(getattr(statement, "orelse", []))
            for handler in getattr(statement, "handlers", []):
                yield from _module_level(handler.body)
        else:
            yield statement


def _is_all(statement) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _strings(node) -> Set[str]:
    return {e.value for e in getattr(node, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _resolve(package: str, module: Optional[str], level: int) -> Optional[str]:
    if level == 0:
        return module
    parts = package.split(".")
    if level > 1:
        parts = parts[:-(level - 1)]
    return ".".join(parts + ([module] if module else []))


def _module_of(setting: str) -> str:
    return next(module for module in SETTINGS_MODULES if setting.startswith(module + "."))


def main() -> int:
    folder = Path(sys.argv[1])
    releases: Dict[str, Wheel] = {}
    for path in folder.glob("torch-*.whl"):
        releases[VERSION.search(path.name).group(1)] = Wheel(path)
    versions = sorted(releases, key=_version_key)
    present: Dict[str, Set[str]] = {}  # qualified name -> releases having it
    signatures: Dict[str, Dict[str, Set[str]]] = {}  # function -> release -> its keyword parameters
    bound_from_c: Set[str] = set()
    declared: Dict[str, Set[str]] = {}  # setting of a configuration module -> releases declaring it
    settings_since: Dict[str, list] = {}  # configuration module -> releases that have it
    for version in versions:
        wheel = releases[version]
        wheel.read(MODULES)
        for module in MODULES:
            names = wheel.names(module)
            if names is None:
                continue
            present.setdefault(module, set()).add(version)
            for name in names:
                present.setdefault(f"{module}.{name}", set()).add(version)
        for function, parameters in wheel.parameters.items():
            if function.rpartition(".")[0] in MODULES:
                signatures.setdefault(function, {})[version] = parameters
        bound_from_c |= wheel.bound_from_c
        for module in SETTINGS_MODULES:
            settings = wheel.settings(module)
            if settings is None:
                continue
            settings_since.setdefault(module, []).append(version)
            for setting in settings:
                declared.setdefault(f"{module}.{setting}", set()).add(version)

    def added(having: Set[str], among: Optional[list] = None) -> Optional[str]:
        """The first release (of `among`: all by default) from which every later one has it; None:
        in the oldest, or not kept."""
        among = versions if among is None else among
        for index, version in enumerate(among):
            if version in having:
                if index == 0 or any(later not in having for later in among[index:]):
                    return None
                return version
        return None

    names_added = {name: version for name, having in present.items() for version in [added(having)] if version}
    keywords_added = {}
    for function, by_release in signatures.items():
        if function.rpartition(".")[2].startswith("_"):
            continue
        # only where the function is a Python def in every release: a binding of C code shows no
        # parameters (F.pad before it became a def); or bound from C, with its stub's parameters, in
        # every release from the first that has it (SDPA's enable_gqa, added in a release after it)
        since = [version for version in versions if version in by_release]
        if since != versions and not (function in bound_from_c and since == versions[versions.index(since[0]):]):
            continue
        for parameter in set().union(*by_release.values()) - {"**"}:
            if parameter.startswith("_"):
                continue
            having = {v for v, parameters in by_release.items() if parameter in parameters or "**" in parameters}
            version = added(having, since)
            if version:
                keywords_added.setdefault(function, {})[parameter] = version
    # a setting is dated from the first release of its module that declares it, where every later
    # one does (the module's own first release: none)
    settings_added = {setting: version for setting, having in declared.items()
                      for version in [added(having, settings_since[_module_of(setting)])] if version}
    data = {
        "_about": ("First torch release (of those listed) that has each public name of the tracked modules, each "
                   "keyword parameter of their functions and each setting of its configuration modules; generated "
                   "by scripts/gen_torch_history.py from torch wheels"),
        "releases": versions,
        "modules": list(MODULES),
        "names": names_added,
        "keywords": keywords_added,
        "settings": settings_added,
    }
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(names_added)} names, {sum(map(len, keywords_added.values()))} keywords and {len(settings_added)} "
          f"settings added after {versions[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
