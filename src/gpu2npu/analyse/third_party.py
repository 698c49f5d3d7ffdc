"""`analyse -m third_party`: which public APIs of a library reach code that cannot run on the NPU.

1. Every file of the library goes through the migration's own analysis (the engine, without a
   tree written): what it would change is *migration needed*, what it reports unsupported or
   unknown for the chosen release is *framework unsupported* or *unknown*.  Calls of CUDA-only
   packages (flash_attn, xformers, apex, ...) and of the library's custom CUDA operators (its
   compiled extensions, `torch.utils.cpp_extension.load`-ed modules, `torch.ops` namespaces it
   registers) are *CUDA operators*.  Each such call site is a hit of the function that contains it.
2. jedi resolves the call graph (call_graph.py); a definition is affected when a chain of calls
   leads from it to a hit.  Constructing a class runs its constructors, calling an instance runs
   its forward (or __call__); methods come through the class hierarchy.
3. Every affected definition is reported under each public name a user can reach it by, with
   the shortest chain, in the incumbent's five CSVs (our columns after theirs).
"""
from __future__ import annotations

import ast
import re
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..records.change import Operation, Report
from ..findings.cuda_ops import operators_in
from ..reading.discover import CUDA_SOURCE_SUFFIXES, Entry, Kind
from ..reading.scan import FileScan, dotted
from ..knowledge.generated_packages import serves
from ..knowledge.tips import ascend_backend_note, cuda_only_package, tip_for
from .call_graph import instance_call, resolve
from .library import CLASS, FUNCTION, METHOD, MODULE, Library

FRAMEWORK_UNSUPPORTED = "framework_unsupported_op.csv"
UNKNOWN = "unknown_op.csv"
MIGRATION_NEEDED = "migration_needed_op.csv"
CUDA_OP = "cuda_op.csv"
FULL_RESULTS = "full_unsupported_results.csv"

# The incumbent's columns first, then ours: how the public API gets there and where the call is.
OP_COLUMNS = ["Torch API", "Affected 3rd-party API", "Call Chain", "File", "Line", "Tips"]
CUDA_OP_COLUMNS = ["OP Name", "Affected 3rd-party API", "Call Chain", "File", "Line", "Tips"]
FULL_COLUMNS = ["File", "3rd-party API", "Message", "Call Chain"]

CATEGORY_FILES = {"framework_unsupported": FRAMEWORK_UNSUPPORTED, "unknown": UNKNOWN,
                  "migration_needed": MIGRATION_NEEDED, "cuda": CUDA_OP}
CATEGORY_WORDS = {"framework_unsupported": "unsupported on NPU", "unknown": "NPU support unknown",
                  "migration_needed": "CUDA API to migrate", "cuda": "CUDA operator"}
CATEGORY_ORDER = ("cuda", "framework_unsupported", "migration_needed", "unknown")

# Migration rows that are not about a CUDA construct of the library (see check.NOT_FINDINGS)
_NOT_CUDA = {"NPU001", "NPU201"}
_CHANGED_NAME = re.compile(r"^change (?:function |import from |import |class |attribute )?(\S+?)\(?\)? (?:to|->) ")
_CHANGED_STRING = re.compile(r"^change (device string|device type|backend|integer device) (\S+) to ")
_EXTENSION_FACTORY = ("CUDAExtension", "load", "load_inline")
# torch.ops namespaces that torch and torch_npu register themselves
_BUILTIN_NAMESPACES = {"aten", "npu", "prims", "quantized", "c10d", "_c10d_functional", "profiler", "_quantized", "higher_order"}


@dataclass(frozen=True, order=True)
class Hit:
    category: str
    api: str
    path: str
    line: int
    tip: str


@dataclass
class ThirdPartyResult:
    rows: Dict[str, List[Tuple]] = field(default_factory=dict)  # CSV name -> rows
    affected: Dict[str, str] = field(default_factory=dict)  # public API -> message
    hits: List[Hit] = field(default_factory=list)
    figures: Dict[str, object] = field(default_factory=dict)
    unparsed: List[str] = field(default_factory=list)


def analyse_library(root: Path, options, env: Sequence[Path], jobs: int, cache_folder: Optional[Path],
                    engine_results, progress=lambda *done_and_total: None,
                    jedi_seconds: float = 120.0) -> ThirdPartyResult:
    """`engine_results(entries)` yields (entry, FileResult) for Python entries (the migration's
    per-file analysis, cached); returns the rows of the five CSVs."""
    started = time.perf_counter()
    if root.is_dir():
        files = sorted(path for path in root.rglob("*.py")
                       if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts))
    else:  # a single module: its folder is the library's root
        files, root = [root], root.parent
    shapes = _shape_cache(cache_folder)
    try:
        library = Library(root, files, shapes, jobs)
    finally:
        if shapes is not None:
            shapes.close()
    result = ThirdPartyResult(unparsed=list(library.unparsed))
    read = time.perf_counter()
    hits = _hits(library, options, engine_results)
    hit_time = time.perf_counter()
    edges, figures = resolve(library, env, jobs, cache_folder, progress, jedi_seconds)
    resolved = time.perf_counter()
    result.hits = hits
    _report(library, hits, edges, result)
    result.figures = {
        "files": len(library.modules), "modules read (not from the cache)": library.shapes_read,
        "definitions": len(library.definitions), **figures,
        "edges": sum(len(targets) for targets in edges.values()), "hits": len(hits),
        "affected public APIs": len(result.affected),
        "seconds: read": round(read - started, 2), "seconds: analysis": round(hit_time - read, 2),
        "seconds: jedi": round(resolved - hit_time, 2), "seconds: total": round(time.perf_counter() - started, 2),
    }
    return result


def _shape_cache(folder: Optional[Path]):
    """The cache of the modules' shapes (library.ModuleShape), under each module's content and
    gpu2npu's code: a library read before is not parsed again."""
    if folder is None:
        return None
    from ..migration.cache import ResultCache, code_fingerprint

    return ResultCache(folder / "third_party", f"library shapes\0{code_fingerprint()}")


# -- hits ---------------------------------------------------------------------------------------
def _hits(library: Library, options, engine_results) -> List[Hit]:
    entries = [Entry(module.path, module.absolute, Kind.PYTHON) for module in library.sources()]
    operators, extension_modules = _custom_cuda(library)
    modules = {module.path: module for module in library.sources()}
    hits: Set[Hit] = set()
    for entry, outcome in engine_results(entries):
        module = modules[entry.relative]
        facts = library.hit_facts[entry.relative]
        import_lines, optional = facts.import_lines, facts.optional
        for change in outcome.changes:
            if change.operation == Operation.INSERT:
                continue  # a line the migration adds (import torch_npu, a sys.path line): no CUDA construct
            if change.rule in _NOT_CUDA or all(line in import_lines for line in range(change.start_line, change.end_line + 1)):
                continue  # an import renamed: the calls through it are the hits
            hits.add(Hit("migration_needed", _changed_name(change.message), entry.relative, change.start_line,
                         change.message))
        for finding in outcome.findings:
            if finding.report not in (Report.UNSUPPORTED, Report.UNKNOWN) or finding.start_line in import_lines:
                continue
            category = "framework_unsupported" if finding.report == Report.UNSUPPORTED else "unknown"
            if cuda_only_package(finding.api) or _custom_namespace(finding.api):
                if _is_optional(finding.api, optional):
                    continue  # imported where installed, with a fallback: see _optional_imports
                category = "cuda"
            hits.add(Hit(category, finding.api, entry.relative, finding.start_line, finding.tip))
        # (a package the release runs through its own Ascend backend is a note of the migration's)
        found = {Hit("cuda", name, module.path, line, _package_tip(name, package, options.api))
                 for line, name, package in facts.package_calls if ascend_backend_note(package, options.api) is None}
        if operators or extension_modules:  # (read again: the library keeps no trees)
            found |= _custom_calls(module.path, module.tree, operators, extension_modules)
        hits.update(hit for hit in found if not _is_optional(hit.api, optional))
    return sorted(hits)


def _is_optional(name: str, optional: Set[str]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in optional)


def _changed_name(message: str) -> str:
    """The CUDA construct a change row is about: `torch.cuda.manual_seed_all`, `device string 'cuda'`."""
    match = _CHANGED_STRING.match(message)
    if match:
        return f"{match.group(1)} {match.group(2)}"
    match = _CHANGED_NAME.match(message)
    return match.group(1) if match else message.split(":")[0]


def _custom_namespace(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 4 and parts[:2] == ["torch", "ops"] and parts[2] not in _BUILTIN_NAMESPACES


def _custom_cuda(library: Library) -> Tuple[Set[str], Set[str]]:
    """The operator names the library's C++/CUDA sources register and the last names of its
    extension modules (compiled files beside its sources, CUDAExtension names in its setup)."""
    operators: Set[str] = set()
    modules: Set[str] = set()
    if not library.root.is_dir():
        return operators, modules
    for path in sorted(library.root.rglob("*")):
        name = path.name
        if name.endswith(CUDA_SOURCE_SUFFIXES) and path.is_file():
            try:
                operators.update(operators_in(path))
            except OSError:
                pass
        elif name.endswith((".so", ".pyd")) and path.is_file():
            modules.add(name.split(".")[0])
    for module in library.sources():
        modules.update(module.cuda_extensions)
    return operators, modules


def _custom_calls(path: str, tree: ast.Module, operators: Set[str], extension_modules: Set[str]) -> Set[Hit]:
    """Calls of the library's custom CUDA operators in one module."""
    scan = FileScan(tree)
    extension_names: Set[str] = set()  # local names bound to a compiled or loaded CUDA extension
    imported_names: Set[str] = set()
    for node in scan.nodes_of_class(ast.Import, ast.ImportFrom, ast.Assign):  # (grouped by the scan)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported_names.add(alias.asname or alias.name.split(".")[0])
                if alias.name.rsplit(".", 1)[-1] in extension_modules:
                    extension_names.add(alias.asname or alias.name.split(".")[0] if isinstance(node, ast.Import)
                                        else alias.asname or alias.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            names = scan.qualified(node.value.func)
            if any(name.startswith("torch.utils.cpp_extension.load") for name in names):
                extension_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    hits: Set[Hit] = set()
    for call in scan.calls:
        func = call.func
        if isinstance(func, ast.Attribute):
            root = func.value
            while isinstance(root, ast.Attribute):
                root = root.value
            # an extension loaded or compiled beside the library, or any imported module whose
            # attribute is an operator the library's C++/CUDA sources register (`_C.fused_gelu_forward`)
            if isinstance(root, ast.Name) and ((root.id in extension_names and (not operators or func.attr in operators))
                                               or (func.attr in operators and root.id in imported_names)):
                qualified = sorted(scan.qualified(func))
                hits.add(Hit("cuda", qualified[0] if qualified else dotted(func) or func.attr, path, func.lineno,
                             "custom CUDA operator of the library's extension: it needs an NPU implementation "
                             "(an Ascend C custom operator, or torch/torch_npu operators)"))
    return hits


def _package_tip(name: str, package: str, api) -> str:
    module, _, function = name.rpartition(".")
    if module.split(".")[0] == "flash_attn" and serves(module, (function,)):
        return (f"CUDA-only package {package}: the library's call fails on the NPU; migrating the library's source "
                "(gpu2npu -i LIBRARY ...) points it at the generated ascend_flash_attn (torch_npu.npu_fusion_attention)")
    return f"CUDA-only package {package}: {tip_for(name, api)}"


# -- propagation and rows -----------------------------------------------------------------------
def _owner_of_lines(library: Library) -> Dict[str, List[Tuple[int, int, str]]]:
    """path -> (first line, last line, key) of every function body, innermost last when sorted by size."""
    spans: Dict[str, List[Tuple[int, int, str]]] = {}
    for key, definition in library.definitions.items():
        if definition.kind in (FUNCTION, METHOD):
            spans.setdefault(definition.path, []).append((*definition.body, key))
    return spans


def _holder(spans: Dict[str, List[Tuple[int, int, str]]], library: Library, path: str, line: int) -> Tuple[str, bool]:
    """The innermost function holding `line` (else the module), and whether the line is in its
    signature: a default value (`device="cuda"`) is used only by the calls that leave it out,
    so such a hit marks the function itself, not its callers."""
    best: Optional[Tuple[int, str]] = None
    for first, last, key in spans.get(path, ()):
        if first <= line <= last and (best is None or last - first < best[0]):
            best = (last - first, key)
    if best is not None:
        return best[1], line <= library.definitions[best[1]].header_end
    return library.module_of(path), False


def _report(library: Library, hits: List[Hit], edges: Dict[str, Set[str]], result: ThirdPartyResult) -> None:
    spans = _owner_of_lines(library)
    callers: Dict[str, Set[str]] = {}
    for caller, targets in edges.items():
        for target in targets:
            callers.setdefault(target, set()).add(caller)
    hits_by_api: Dict[Tuple[str, str], List[Tuple[str, bool, Hit]]] = {}
    for hit in hits:
        holder, in_signature = _holder(spans, library, hit.path, hit.line)
        hits_by_api.setdefault((hit.category, hit.api), []).append((holder, in_signature, hit))
    public = library.public_names()
    rows: Dict[str, Set[Tuple]] = {name: set() for name in CATEGORY_FILES.values()}
    nearest: Dict[str, Tuple[int, int, List[str], Hit]] = {}  # public name -> (rank, length, chain, hit)
    more: Dict[str, Set[str]] = {}
    instance_calls = _instance_calls(library)
    for (category, api), holders in sorted(hits_by_api.items()):
        reached = _reach(holders, callers)
        for key, (chain, hit) in _entry_points(library, reached, instance_calls).items():
            for name in public.get(key, ()):
                shown = " -> ".join([*chain, api])
                rows[CATEGORY_FILES[category]].add((api, name, shown, hit.path, hit.line, hit.tip))
                rank = (CATEGORY_ORDER.index(category), len(chain))
                if category == "unknown":
                    continue  # unknown is not unsupported: not fed back as such (unknown_op.csv has it)
                more.setdefault(name, set()).add(api)
                if name not in nearest or rank < nearest[name][:2]:
                    nearest[name] = (*rank, chain, hit)
    result.rows = {name: sorted(found) for name, found in rows.items()}
    full: List[Tuple] = []
    for name, (rank, _, chain, hit) in sorted(nearest.items()):
        others = sorted(more[name] - {hit.api})
        message = f"{CATEGORY_WORDS[CATEGORY_ORDER[rank]]}: {hit.api} ({hit.path}:{hit.line}): {hit.tip}"
        if others:
            message += f"; also reaches {', '.join(others[:5])}" + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        definition = library.definitions[chain[0]]
        full.append((definition.path, name, message, " -> ".join([*chain, hit.api])))
        result.affected[name] = message
    result.rows[FULL_RESULTS] = full


def _reach(holders: List[Tuple[str, bool, Hit]], callers: Dict[str, Set[str]]) -> Dict[str, Tuple[List[str], Hit]]:
    """Every definition from which a chain of calls leads to one of the hits: key -> (the chain
    of keys from it to the hit's holder, the hit); shortest chains, ties broken by name.  A hit
    in a signature stays with its function."""
    reached: Dict[str, Tuple[List[str], Hit]] = {}
    queue = deque()
    for holder, in_signature, hit in sorted(holders, key=lambda item: (item[1], item[0], item[2])):
        if holder not in reached:
            reached[holder] = ([holder], hit)
            if not in_signature:
                queue.append(holder)
    while queue:
        key = queue.popleft()
        chain, hit = reached[key]
        for caller in sorted(callers.get(key, ())):
            if caller not in reached:
                reached[caller] = ([caller, *chain], hit)
                queue.append(caller)
    return reached


def _entry_points(library: Library, reached: Dict[str, Tuple[List[str], Hit]],
                  instance_calls: Dict[str, str]) -> Dict[str, Tuple[List[str], Hit]]:
    """The reached definitions a user can call, classes included: a class is affected when
    constructing it (its own key) or calling an instance (its forward/__call__, `instance_calls`)
    reaches."""
    points = {key: value for key, value in reached.items()
              if library.definitions[key].kind in (FUNCTION, METHOD, MODULE, CLASS)}
    for key, target in instance_calls.items():
        if key not in points and target in reached:
            chain, hit = reached[target]
            points[key] = ([key, *chain], hit)
    return points


def _instance_calls(library: Library) -> Dict[str, str]:
    """class key -> the method that calling one of its instances runs (its own or inherited)."""
    found: Dict[str, str] = {}
    for key, definition in library.definitions.items():
        target = instance_call(library, key) if definition.kind == CLASS else None
        if target is not None:
            found[key] = target
    return found