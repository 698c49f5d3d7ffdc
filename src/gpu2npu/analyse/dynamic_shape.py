"""`analyse -m dynamic_shape`: an instrumented copy of the project that records tensor shapes.

On Ascend, every new input shape of an operator compiles it again; a training loop whose batches
change shape (the last smaller batch, variable sequence lengths) spends its steps compiling.
The copy (OUTPUT/NAME_analysis/NAME/) is the project with every call of its Python code written
as the incumbent's `DETECTOR.hook_func(fn, "name", index, *args, **kwargs)`, which makes the
call exactly as before and records the shapes of the tensors in and out (detector.py, copied to
the top of the copy as gpu2npu_shape_detector.py, with the table of call sites beside it).
The user runs the copy as they run the project, a few steps are enough; the reports appear in
OUTPUT/NAME_analysis/.

Left as written: builtins (whose frame matters to some: `locals()`, `super()`), decorators,
annotations, calls inside f-strings, and the bodies of functions and classes decorated for
TorchScript or torch.compile (a hook there would break scripting or add graph breaks).  A module
scripted by a call (`torch.jit.script(model)`) cannot be told from the source: its forward is
hooked and scripting it fails in the copy; trace shapes without scripting.
"""
from __future__ import annotations

import builtins
import json
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..reading.discover import Kind, walk
from ..outputs.tree_copy import copy_entry, copy_folder_modes
from . import detector

DETECTOR_MODULE = "gpu2npu_shape_detector"
NOT_HOOKED = frozenset(dir(builtins)) | {"DETECTOR"}
COMPILING_DECORATORS = ("jit", "script", "compile", "trace")


class _Hooks(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, path: str, sites: Dict[int, Tuple[str, int, str]]) -> None:
        super().__init__()
        self.path = path
        self.sites = sites
        self._skip = 0  # inside something not hooked

    # what is not hooked
    def _enter(self, node) -> bool:
        self._skip += 1
        return True

    def _leave(self, original, updated):
        self._skip -= 1
        return updated

    visit_Decorator = visit_Annotation = visit_FormattedString = _enter
    leave_Decorator = leave_Annotation = leave_FormattedString = _leave

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if _compiled(node):
            self._skip += 1
        return True

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        if _compiled(original):
            self._skip -= 1
        return updated

    visit_ClassDef = visit_FunctionDef  # (a @torch.jit.script class too)
    leave_ClassDef = leave_FunctionDef

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self._skip:
            return updated
        func = original.func
        if isinstance(func, cst.Name) and func.value in NOT_HOOKED:
            return updated
        name = cst.Module([]).code_for_node(func)
        if len(name) > 80 or "\n" in name:
            name = name.replace("\n", " ")[:77] + "..."
        index = len(self.sites) + 1
        self.sites[index] = (self.path, self.get_metadata(PositionProvider, original).start.line, name)
        args = [_parenthesised(arg) for arg in updated.args]
        hooked = [cst.Arg(updated.func), cst.Arg(cst.SimpleString(repr(name))), cst.Arg(cst.Integer(str(index))), *args]
        return cst.Call(func=cst.Attribute(cst.Name("DETECTOR"), cst.Name("hook_func")), args=hooked,
                        lpar=updated.lpar, rpar=updated.rpar)


def _compiled(node) -> bool:
    """Decorated with torch.jit.script, torch.compile or the like."""
    return any(word in cst.Module([]).code_for_node(decorator.decorator)
               for decorator in node.decorators for word in COMPILING_DECORATORS)


def _parenthesised(arg: cst.Arg) -> cst.Arg:
    """A lone generator argument `f(x for x in y)` needs its own parentheses among others."""
    value = arg.value
    if isinstance(value, cst.GeneratorExp) and not value.lpar:
        return arg.with_changes(value=value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
    return arg


def instrument(code: bytes, path: str, depth: int, sites: Dict[int, Tuple[str, int, str]],
               files: Dict[str, Tuple[int, int]]) -> bytes:
    """The instrumented text of one file; `depth`: how many folders below the copy's top it lies."""
    module = cst.parse_module(code)
    hooked = MetadataWrapper(module).visit(_Hooks(path, sites))
    up = ", ".join(['".."'] * depth)
    import_lines = [
        "try:  # gpu2npu analyse -m dynamic_shape: records the shapes of each call's tensors",
        f"    from {DETECTOR_MODULE} import DETECTOR",
        "except ImportError:  # run from a subfolder: the detector sits at the top of the instrumented copy",
        "    import os as _gpu2npu_os, sys as _gpu2npu_sys",
        f"    _gpu2npu_sys.path.append(_gpu2npu_os.path.normpath(_gpu2npu_os.path.join("
        f"_gpu2npu_os.path.dirname(_gpu2npu_os.path.abspath(__file__)){', ' + up if up else ''})))",
        f"    from {DETECTOR_MODULE} import DETECTOR",
    ]
    statements = cst.parse_module("\n".join(import_lines) + "\n").body
    body = list(hooked.body)
    position = 0
    # after the docstring and `from __future__` imports, which must come first
    while position < len(body) and _stays_first(body[position], position):
        position += 1
    # the call stacks are told at the original lines: where the import went and its length
    after = 0
    if position:
        after = len(hooked.with_changes(body=body[:position], footer=[]).code.splitlines())
    files[path] = (after, len(import_lines))
    body[position:position] = statements
    return hooked.with_changes(body=body).code.encode(hooked.encoding)


def _stays_first(statement: cst.CSTNode, position: int) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0]
    if position == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"


# Scripts that prepare or convert data, or package the project: no training run to trace.
_NOT_TRAINING = ("prepare", "download", "setup", "convert", "export", "preprocess", "tokeni")


def _entry_script(source: Path, mains: List[str], files: List[str]):
    """The project's likely training entry: a train*.py (nanoGPT's has no __main__ guard), the
    shallowest first; else a file with a __main__ guard (`mains`) that does not prepare data."""
    if source.is_file():
        return source.name
    training = [name for name in files if Path(name).name.startswith(("train", "pretrain", "finetune"))]
    pool = training or [name for name in mains if not Path(name).name.startswith(_NOT_TRAINING)] or mains
    candidates = sorted(pool, key=lambda name: (name.count("/"), not Path(name).name.startswith("train"), name))
    return candidates[0] if candidates else None


def write_instrumented(source: Path, staging: Path, target: Path, result, logger) -> None:
    name = source.stem if source.is_file() else source.name
    copy = staging / name
    copy.mkdir()
    sites: Dict[int, Tuple[str, int, str]] = {}
    files: Dict[str, Tuple[int, int]] = {}
    folders: List = []
    mains: List[str] = []  # files with a __main__ guard, read as they are instrumented
    python_files: List[str] = []
    for entry in walk(source):
        destination = copy / entry.relative
        if entry.kind != Kind.PYTHON:
            if entry.kind == Kind.DIRECTORY:
                folders.append((entry, destination))
            instead = copy_entry(entry, destination, source)
            if instead is not None:
                logger.warning(f"{entry.relative}: {instead}")
            continue
        result.files += 1
        python_files.append(entry.relative)
        try:
            data = entry.absolute.read_bytes()
            if b"__main__" in data:
                mains.append(entry.relative)
            destination.write_bytes(instrument(data, entry.relative, entry.relative.count("/"), sites, files))
            shutil.copymode(entry.absolute, destination)
        except OSError as error:
            result.failed.append((entry.relative, f"cannot be read: {error.strerror or error}"))
        except (cst.ParserSyntaxError, RecursionError, UnicodeDecodeError) as error:
            shutil.copy2(entry.absolute, destination)
            result.failed.append((entry.relative, f"copied without hooks: not parsed ({str(error).splitlines()[0]})"))
    copy_folder_modes(folders)
    shutil.copyfile(detector.__file__, copy / f"{DETECTOR_MODULE}.py")
    table = {"sites": {str(k): list(v) for k, v in sites.items()}, "files": {k: list(v) for k, v in files.items()}}
    (copy / detector.SITES_FILE).write_text(json.dumps(table, indent=0), encoding="utf-8")
    logger.info(f"instrumented {result.files} Python files: {len(sites)} call sites hooked into {target / name}")
    result.rows[f"{name}/ (instrumented copy)"] = len(sites)
    entry = _entry_script(source, mains, python_files)
    result.summary += [
        f"{len(sites)} call sites hooked in {target / name}",
        f"next: run the copy as you run the project (a few steps are enough), e.g. cd {target / name} && python "
        f"{entry or 'YOUR_SCRIPT.py'} ...; the reports appear in "
        f"{target}: {detector.REPORT} (shape ranges per call site) and {detector.SUMMARY} (the call sites whose "
        "shapes vary, ranked, with the fix)",
    ]
