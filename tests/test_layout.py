"""The package's imports point one way: no module reaches itself again through imports, whether
they stand at the top of a module or inside a function (an import deferred for speed is still a
dependency), and each stage of the pipeline (a folder of src/gpu2npu) imports only from itself and
the stages below it."""
import ast
from pathlib import Path
from typing import Dict, Set

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "gpu2npu"
# Code that the migrated projects run, or that gpu2npu writes out as text: not imported by the tool.
NOT_THE_TOOL = ("gpu2npu.generated.", "gpu2npu.dryrun.standin.", "gpu2npu.dryrun.boot.")


def _modules() -> Dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name.startswith(NOT_THE_TOOL):
            modules[name] = path
    return modules


def import_graph() -> Dict[str, Set[str]]:
    """Module -> the package's modules it imports anywhere in its text (`from . import x` names
    module x where x is one, else the package it is taken from)."""
    modules = _modules()
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                targets.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                               for alias in node.names)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def cycle_in(graph: Dict[str, Set[str]]):
    """One cycle of the graph as a list of modules, or None."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path = []

    def visit(module: str):
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_module_imports_itself_back():
    graph = import_graph()
    assert len(graph) > 50 and "gpu2npu.rules.walk" in graph["gpu2npu.rules.names"]
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph))


# The stages, lowest first (the package's own __init__ holds only its version; cli.py is the top).
STAGES = ("gpu2npu", "data", "generated", "knowledge", "records", "reading", "outputs", "rules", "script_rules", "dependencies", "findings",
          "modes", "migration", "reports", "commands", "analyse", "dryrun", "cli", "__main__")


def stage_of(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_stage_imports_only_from_itself_and_the_stages_below():
    graph = import_graph()
    assert {stage_of(module) for module in graph} <= set(STAGES), "a folder that is no stage: add it to STAGES"
    rank = {stage: number for number, stage in enumerate(STAGES)}
    upward = sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                    if rank[stage_of(target)] > rank[stage_of(module)])
    assert not upward, upward
    assert "gpu2npu.knowledge.apidata" in graph["gpu2npu.rules.base"] or any(
        target.startswith("gpu2npu.knowledge") for target in graph["gpu2npu.rules.names"])


def test_the_cycle_finder_finds_cycles():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_libcsts_private_api_is_used_in_one_module_only():
    """libcst's private or undocumented parts (pinned in pyproject.toml) are reached through
    rules/libcst_private.py alone: an attribute with one leading underscore of what libcst defines,
    or an import from a private or undocumented libcst module, anywhere else fails this test."""
    import libcst

    private = {name for module in (libcst.CSTNode, libcst.Module, libcst.MetadataWrapper, libcst.metadata.BaseMetadataProvider)
               for name in dir(module) if name.startswith("_") and not name.startswith("__")}
    private.add("_metadata")  # (an instance attribute of MetadataWrapper: not in dir() of the class)
    assert {"_codegen", "_is_removable", "_visit_and_replace_children", "_gen"} <= private
    found = []
    for name, path in _modules().items():
        if name == "gpu2npu.rules.libcst_private":
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append(f"{name}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                    ("libcst._", "libcst.metadata.position_provider")):
                found.append(f"{name}:{node.lineno} from {node.module}")
    assert found == []
