"""The dependency files of a project, migrated once its code has been (a run's last step before
the reports): which modules the migrated files still import decides which packages can go.

Nothing is resolved or downloaded: every file is read as text.
"""
from __future__ import annotations

import ast
import posixpath
import re
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..knowledge.apidata import ApiData
from ..records.change import Change, Finding
from ..reading.discover import Entry, Kind
from ..reading.linemap import LineMap
from . import SETUP_PY, REQUIREMENTS, Context, dependency_format, load_table, migrate_dependencies, satisfies
from .decide import CPU_BUILD, torch_npu_pin_in
from .table import normalise


@dataclass
class DependencyFile:
    entry: Entry
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    output: Optional[bytes] = None  # None: unchanged
    error: str = ""

    @property
    def path(self) -> str:
        return self.entry.relative


@dataclass
class DependencyRun:
    files: List[DependencyFile] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


class Importers:
    """Which migrated files import a module: searched for in the migrated text (`files`: the
    path, a way to read that text, the kind), the files holding the module's name as text parsed
    with `ast` (a file that cannot be parsed counts as importing it: a package is never removed
    on a guess)."""

    def __init__(self, files: Sequence[Tuple[str, Callable[[], bytes], Kind]]) -> None:
        self.files = files
        self._imports: Dict[str, Optional[frozenset]] = {}
        self._data: Dict[str, bytes] = {}

    def __call__(self, modules: Sequence[str], limit: Optional[int] = None) -> List[str]:
        """The files that import one of `modules`, in order; the first `limit` of them where given."""
        users = []
        for relative, read, kind in self.files:
            if any(self._imports_module(relative, read, kind, module) for module in modules):
                users.append(relative)
                if limit is not None and len(users) >= limit:
                    break
        return users

    def _imports_module(self, relative: str, read: Callable[[], bytes], kind: Kind, module: str) -> bool:
        root = module.split(".")[0].encode()
        data = self._data.get(relative)
        if data is None:
            try:
                data = self._data[relative] = read()
            except OSError:
                return False
        if root not in data:
            return False
        if kind != Kind.PYTHON:  # a notebook or script: an import statement naming it, as text
            return re.search(rb"(?:^|[\s\"'])(?:import|from)\s+" + re.escape(module.encode()) + rb"\b", data) is not None
        imported = self._imports.get(relative, ())
        if imported == ():
            imported = self._imports[relative] = _imported_modules(data)
        if imported is None:
            return True
        return any(name == module or name.startswith(module + ".") for name in imported)


def _imported_modules(data: bytes) -> Optional[frozenset]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            names.add(node.args[0].value)
    return frozenset(names)


def dependency_entries(entries: Sequence[Entry]) -> List[Tuple[Entry, str]]:
    """The entries that are dependency files, with their format (the files that requirement
    files include under other names are found while those are migrated)."""
    # (setup.py is Python; the others are copied files: a link or pipe of that name is not read)
    return [(entry, form) for entry in entries for form in [dependency_format(entry.relative)]
            if form is not None and entry.kind in (Kind.OTHER, Kind.PYTHON)]


def migrate_project_dependencies(found: List[Tuple[Entry, str]], all_entries: Sequence[Entry], code_files,
                                 migrated_text: Callable[[Entry], bytes], api: ApiData) -> DependencyRun:
    """Each dependency file's rows and new text (nothing is written), and the run's warnings (a
    torch pin other than -v's, a package imported that needs an Ascend plugin no file lists);
    `code_files` as `Importers` takes them; `migrated_text(entry)`: a setup.py as the code
    migration left it."""
    run = DependencyRun()
    importers = Importers(code_files)
    table = load_table()
    by_relative = {entry.relative: entry for entry in all_entries if entry.kind == Kind.OTHER}
    queue = list(found)
    seen = {entry.relative for entry, _ in queue}
    pins: List[Tuple[str, int, str]] = []
    listed = _listed_with_includes(found, by_relative)
    own_pin = _project_torch_npu_pin(found)
    torch_npu_listed = False  # (some file lists torch_npu, pinned or not)
    while queue:
        entry, form = queue.pop(0)
        try:
            original = entry.absolute.read_bytes()
            current = migrated_text(entry) if form == SETUP_PY else original
            text = current.decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            run.files.append(DependencyFile(entry, error=f"not read as UTF-8 text ({error}): its dependencies "
                                                         "are not migrated"))
            continue
        torch_npu_listed = torch_npu_listed or _TORCH_NPU.search(text) is not None
        # what a requirements file installs with its includes (-r common.txt holding numpy)
        context = Context(api, table, importers, present=set(listed.get(entry.relative, ())), project_torch_npu=own_pin)
        outcome = migrate_dependencies(form, text, entry.relative, context)
        result = DependencyFile(entry, outcome.changes, outcome.findings)
        if form == SETUP_PY and current != original:  # rows at the lines of the file as the user wrote it
            lines = LineMap(len(original.decode("utf-8", "replace").splitlines()))
            lines.update(original.decode("utf-8", "replace"), text)
            result.changes = [_moved(c, lines) for c in result.changes]
            result.findings = [_moved(f, lines) for f in result.findings]
            outcome.torch_pins = [(lines.original(line), spec) for line, spec in outcome.torch_pins]
        if outcome.output is not None:
            result.output = outcome.output.encode("utf-8")
        run.files.append(result)
        pins.extend((entry.relative, line, spec) for line, spec in outcome.torch_pins)
        for include in outcome.includes:
            normal = posixpath.normpath(posixpath.join(posixpath.dirname(entry.relative), include))
            included = by_relative.get(normal)
            if included is not None and normal not in seen:
                seen.add(normal)
                queue.append((included, REQUIREMENTS))
    declared = {normalise(finding.api) for file in run.files for finding in file.findings}
    run.warnings.extend(undeclared_plugins(code_files, declared, _project_packages(all_entries)))
    if found and not torch_npu_listed and not any(change.message.startswith("add torch_npu")
                                                  for file in run.files for change in file.changes):
        run.warnings.extend(_torch_npu_nowhere(importers, api))
    target = api.torch_version
    for relative, line, spec in pins:
        if spec and not spec.startswith(("git+", "http", "file:")) and satisfies(target, spec) is False:
            run.warnings.append(f"{relative}:{line} asks for torch {spec}, but -v {target} migrates for torch {target} "
                                f"(torch_npu {api.torch_npu_version}): the reports and the pinned versions are for that "
                                f"release; {_nearer_release(spec)}")
    return run


# torch_npu named in a dependency file (`torch-npu`, `torch_npu==2.1.0.post17`)
_TORCH_NPU = re.compile(r"(?<![\w.-])torch[-_]npu(?![\w-])", re.IGNORECASE)


def _torch_npu_nowhere(importers: Importers, api: ApiData) -> List[str]:
    """The warning of a project whose migrated code imports torch_npu while none of its dependency
    files lists torch (the line torch_npu is added beside) nor torch_npu: installed from them, it
    has no torch_npu, and the first `import torch_npu` fails.  (`importers`: the run's, which has
    read the migrated files already.)"""
    users = importers(["torch_npu"])
    if users:
        return [f"{len(users)} migrated file{'s' if len(users) != 1 else ''} import torch_npu ({_shown(users)}), which "
                f"no dependency file lists, nor torch beside which it would be added: add torch=={api.torch_version} "
                f"and torch_npu=={api.torch_npu_version} to the project's requirements {CPU_BUILD}"]
    # From torch_npu 2.5.1 on, torch loads torch_npu itself where it is installed (its torch.backends
    # entry point): code that imports only torch needs it all the same.
    # (the first few files that do: every file of a large project imports torch)
    users = importers(["torch"], limit=4) if api.version_tuple[:2] >= AUTOLOADED_FROM else []
    if not users:
        return []
    return [f"the project's code imports torch ({_shown(users)}), and no dependency file lists torch_npu (the "
            f"migration added it to none): torch {api.torch_version} loads torch_npu "
            f"itself where it is installed, and without it there is no NPU (code that names one fails; what chooses "
            f"the device itself, transformers or accelerate, runs on the CPU): add torch_npu=={api.torch_npu_version} "
            f"to the project's requirements"]


# The first torch whose torch_npu loads itself when torch is imported.
AUTOLOADED_FROM = (2, 5)


def _shown(users: List[str]) -> str:
    return ", ".join(users[:3]) + (", ..." if len(users) > 3 else "")


def _project_torch_npu_pin(found: List[Tuple[Entry, str]]) -> Optional[Tuple[str, str]]:
    """(the spec, the file) of the torch_npu pin some dependency file of the project already has
    (a project that supports Ascend keeps one in requirements/npu.txt), or None."""
    for entry, _ in sorted(found, key=lambda pair: pair[0].relative):
        try:
            spec = torch_npu_pin_in(entry.absolute.read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
        if spec is not None:
            return spec, entry.relative
    return None


def undeclared_plugins(code_files, declared: Set[str], project_packages: Set[str]) -> List[str]:
    """A warning for each package that runs on Ascend only through a plugin (vLLM through
    vllm-ascend) where the code imports it and no dependency file lists it (those that do have
    their row): on an Ascend machine without the plugin it finds no device.  Not where the project
    is that package or its plugin (`project_packages`: its top-level packages), nor where the code
    imports the plugin itself."""
    warnings = []
    for rule in load_table().packages:
        plugin = rule.plugin
        if plugin is None or declared & set(rule.names) or project_packages & {*rule.imports, plugin.replace("-", "_")}:
            continue
        # (the files are read once here and not kept: only those with the text of an import
        # statement of the package are parsed, not every file that mentions it; the words are
        # looked for first, the statement's pattern only where one is)
        roots = {module.split(".")[0] for module in rule.imports} | {plugin.replace("-", "_")}
        statement, words = _import_statement(roots), [root.encode() for root in roots]
        importers = Importers([(relative, read, kind) for relative, read, kind in code_files
                               if _may_import(_text_of(read), words, statement)])
        users = importers(rule.imports)
        if users and not importers([plugin.replace("-", "_")]):
            shown = ", ".join(users[:3]) + (", ..." if len(users) > 3 else "")
            warnings.append(f"{len(users)} file{'s' if len(users) != 1 else ''} import {rule.names[0]} ({shown}), which "
                            f"no dependency file lists: {rule.why}; without {plugin}, {rule.names[0]} finds no device on "
                            "an Ascend machine")
    return warnings


def _import_statement(roots: Set[str]) -> "re.Pattern":
    """What an import of one of the modules `roots` looks like as text (generous: `Importers`
    parses what it finds): a line importing it, or `import_module("...")`/`__import__("...")`."""
    names = "|".join(re.escape(root) for root in sorted(roots))
    return re.compile(rb"^[ \t]*(?:from[ \t]+(?:%s)\b|import[ \t]+(?:[\w.]+[ \t]*(?:as[ \t]+\w+[ \t]*)?,[ \t]*)*(?:%s)\b)"
                      rb"|(?:import_module|__import__)\([ \t]*[\"'](?:%s)\b" % ((names.encode(),) * 3), re.MULTILINE)


def _may_import(text: bytes, words: List[bytes], statement: "re.Pattern") -> bool:
    return any(word in text for word in words) and statement.search(text) is not None


def _text_of(read: Callable[[], bytes]) -> bytes:
    try:
        return read()
    except OSError:
        return b""


def _project_packages(entries: Sequence[Entry]) -> Set[str]:
    """The top-level packages of the project: its folders with an __init__.py, and the project's
    own folder where it is a package itself."""
    packages = set()
    for entry in entries:
        if entry.relative == "__init__.py":
            packages.add(entry.absolute.parent.name)
        elif entry.relative.endswith("/__init__.py"):
            packages.add(entry.relative.split("/")[0])
    return packages


def _nearer_release(spec: str) -> str:
    """Which -v would match the project's torch, among the releases gpu2npu knows."""
    from ..knowledge.apidata import available_versions

    matching = [version for version in available_versions() if satisfies(version, spec)]
    if len(matching) == 1:
        return f"-v {matching[0]} matches it"
    if matching:
        return f"-v {matching[0]} (up to {matching[-1]}) matches it"
    wanted = re.search(r"\d+\.\d+", spec)
    close = [version for version in available_versions() if wanted and version.startswith(wanted.group(0) + ".")]
    if close:
        return f"-v {close[-1]} is torch_npu's release for torch {wanted.group(0)}"
    return "no torch_npu release gpu2npu knows is built for it"


def _listed_with_includes(found, by_relative) -> Dict[str, List[str]]:
    """For each requirements file, the names it and the files it includes (-r/-c) list."""
    from .requirements_file import requirement_names

    read: Dict[str, Tuple[List[str], List[str]]] = {}

    def names_and_includes(relative: str, entry) -> Tuple[List[str], List[str]]:
        if relative not in read:
            try:
                read[relative] = requirement_names(entry.absolute.read_bytes().decode("utf-8"))
            except (OSError, UnicodeDecodeError):
                read[relative] = ([], [])
        return read[relative]

    listed: Dict[str, List[str]] = {}
    for entry, form in found:
        if form != REQUIREMENTS:
            continue
        names, todo, seen = [], [(entry.relative, entry)], set()
        while todo:
            relative, current = todo.pop()
            if relative in seen:
                continue
            seen.add(relative)
            own, includes = names_and_includes(relative, current)
            names.extend(own)
            for include in includes:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(relative), include))
                if target in by_relative:
                    todo.append((target, by_relative[target]))
        listed[entry.relative] = names
    return listed


def _moved(row, lines: LineMap):
    import dataclasses

    return dataclasses.replace(row, start_line=lines.original(row.start_line), end_line=lines.original(row.end_line))
