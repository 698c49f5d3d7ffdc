"""Jupyter notebooks: the code cells are migrated like one Python file, everything else is kept.

The notebook is read as JSON data (never run).  The Python code cells are joined in order into
one module, so that what one cell imports counts in the next: `import torch_npu` is inserted
once, after the first `import torch` of the notebook.  A comment line marks where each cell
starts, so the migrated module can be cut back into cells.  IPython syntax that is not Python
(`!nvidia-smi`, `%env`, `%%time`, `x = !ls`) is replaced by a placeholder statement before
parsing and put back afterwards; shell commands and `%env` lines are migrated by the
launch-script and notebook-magic rules on their own.

Reports speak of the notebook's cells: the File column is the notebook, Start/End Line are lines
of the cell (1-based, as Jupyter numbers them with line numbers shown), and every message and tip
begins with `cell N:`, N counting all cells from 1 (markdown cells included) in file order.

The migrated notebook is written with the layout of the original (indentation, key order,
escaping of non-ASCII characters, line endings, final newline): the original is re-encoded with
each candidate layout and the one that reproduces it byte for byte is used; a notebook whose
layout cannot be reproduced is copied unchanged and reported.  A notebook that needs no change
is copied byte for byte.
"""
from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Type

import libcst as cst

from ..records.change import Change, Finding, Operation
from .launch_scripts import rewrite_lines
from ..reading.linemap import source_lines
from .pipeline import FileResult, Status, _relevant, migrate_source
from ..rules import Options, Rule
from ..script_rules import LAUNCH_SCRIPT_RULES, ScriptRule
from ..script_rules.env_magic import EnvMagicVisibleDevices
from ..script_rules.magic_code import CudaInMagics
from ..script_rules.nccl_env import NcclEnvironment
from ..script_rules.cuda_tools import CudaToolsAndSettings
from ..reading.shell_syntax import Dialect

SHELL_CELL_MAGICS = ("bash", "sh", "system")
SHELL_PROGRAMS = ("bash", "sh", "zsh")
# Cell magics whose body is Python run by the kernel.
PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun")
ENV_RULES: Tuple[Type[ScriptRule], ...] = (EnvMagicVisibleDevices, NcclEnvironment, CudaToolsAndSettings)

SHELL_ESCAPE = re.compile(r"^(?P<lead>\s*(?:[\w.,\[\]\s]+=\s*)?)(?P<escape>!!?|%sx\s|%system\s)(?P<command>.*)$")
ENV_MAGIC = re.compile(r"^\s*%(env|set_env)\b")
LINE_MAGIC = re.compile(r"^\s*(?:[\w.,\[\]\s]+=\s*)?%(?P<name>[A-Za-z_]\w*)")
HELP = re.compile(r"^\s*(\?\??[\w.]+|[\w.]+\?\??)\s*$")
CELL_MAGIC = re.compile(r"^%%(?P<name>\w+)(?P<arguments>.*)$")
PLACEHOLDER = re.compile(r"^\s*(?:pass  )?# gpu2npu:magic:(\d+)$")


def _cell_marker(number: int) -> str:
    return f"# gpu2npu:cell:{number}"


class NotebookError(Exception):
    """The notebook cannot be processed; the message says why."""


@dataclass
class Records:
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    # the launch-script rules as the run's options configure them (ScriptRule.for_project), for
    # the cells' shell commands
    shell_rules: Sequence[Type[ScriptRule]] = LAUNCH_SCRIPT_RULES


@dataclass
class PythonCell:
    number: int  # 1-based among all cells
    lines: List[str]  # original lines (with "\n")
    masked: List[str]  # what the parser sees
    magics: Dict[int, str]  # placeholder id -> the (migrated) magic line


# -- reading and writing the JSON ----------------------------------------------------------------
def _load(data: bytes) -> Tuple[dict, str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotebookError(f"not a UTF-8 notebook: {error}") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    try:
        notebook = json.loads(text[len(bom):])
    except ValueError as error:
        raise NotebookError(f"not valid notebook JSON: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError("not an nbformat 4 notebook (no list of cells)")
    for number, cell in enumerate(notebook["cells"], 1):
        source = cell.get("source") if isinstance(cell, dict) else None
        if not (isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source))):
            raise NotebookError(f"cell {number} has no source text")
    return notebook, bom


def layout_of(data: bytes) -> Optional[Callable[[dict], bytes]]:
    """An encoder that writes a notebook exactly as `data` was written (indentation, key order,
    escaping, line endings, final newline), or None if no candidate layout reproduces it."""
    text = data.decode("utf-8")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    notebook = json.loads(text[len(bom):])
    newline = "\r\n" if "\r\n" in text else "\n"
    lead = re.match(r"\{\r?\n([ \t]+)", text[len(bom):])
    indents = [(lead.group(1) if "\t" in lead.group(1) else len(lead.group(1))) if lead else None]
    separators = [(",", ": ")] if lead else [(", ", ": "), (",", ":")]
    for indent in indents:
        for separator in separators:
            for ascii_only in (False, True):
                def dump(value, indent=indent, separator=separator, ascii_only=ascii_only) -> str:
                    dumped = json.dumps(value, indent=indent, separators=separator, ensure_ascii=ascii_only)
                    return bom + dumped.replace("\n", newline)
                dumped = dump(notebook)
                if text in (dumped, dumped + newline):
                    end = text[len(dumped):]
                    return lambda value, dump=dump, end=end: (dump(value) + end).encode("utf-8")
    return None


def _text(cell: dict) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def _with_text(cell: dict, text: str) -> dict:
    return {**cell, "source": text if isinstance(cell["source"], str) else text.splitlines(keepends=True)}


# -- records -------------------------------------------------------------------------------------
def _record(number: int, first_line: int, changes, findings, path: str, records: Records) -> None:
    """Records of line rules run on lines of cell `number` starting at line `first_line`:
    `changes` as (line index, rule code, message), `findings` as (line index, rule code, LineReport)."""
    for index, code, message in changes:
        line = first_line + index
        records.changes.append(Change(path, line, line, Operation.MODIFY, code, f"cell {number}: {message}"))
    for index, code, report in findings:
        line = first_line + index
        records.findings.append(Finding(path, line, line, report.report, report.api, f"cell {number}: {report.tip}",
                                        report.kind or code))


# -- cells ---------------------------------------------------------------------------------------
def _magic_line(text: str, number: int, line: int, path: str, records: Records) -> str:
    """The migrated form of one IPython (non-Python) line; records what changed."""
    escape = SHELL_ESCAPE.match(text)
    if escape is not None:
        outcome = rewrite_lines([escape.group("command")], Dialect.SHELL, records.shell_rules)
        _record(number, line, outcome.changes, outcome.findings, path, records)
        return escape.group("lead") + escape.group("escape") + outcome.lines[0]
    if ENV_MAGIC.match(text):
        outcome = rewrite_lines([text], Dialect.SHELL, ENV_RULES)
        _record(number, line, outcome.changes, outcome.findings, path, records)
        return outcome.lines[0]
    magic = LINE_MAGIC.match(text)
    if magic is not None:
        _report_magic(f"%{magic.group('name')}", text, number, line, line, path, records)
    return text


def _report_magic(name: str, text: str, number: int, first: int, last: int, path: str, records: Records) -> None:
    report = CudaInMagics.report_magic(name, text)
    if report is not None:
        records.findings.append(Finding(path, first, last, report.report, report.api,
                                        f"cell {number}: {report.tip}", CudaInMagics.code))


def _is_magic(text: str) -> bool:
    return bool(SHELL_ESCAPE.match(text) or LINE_MAGIC.match(text) or HELP.match(text)) and not _is_python(text)


def _is_python(text: str) -> bool:
    """A line that reads as Python on its own (`a = b % c` is not a magic)."""
    try:
        cst.parse_module(text.strip() + "\n")
        return True
    except Exception:
        return False


def _ipython_lines(bodies: List[str]) -> Dict[int, str]:
    """{line index: "cell" | "line" | "continued"} for the lines of a cell that are IPython, not
    Python: a first-line cell magic, magic and shell lines, and the lines a trailing backslash
    continues them onto.  A line that lies inside a multi-line Python string is text, whatever
    it starts with."""
    found: Dict[int, str] = {}
    continued = False
    for index, body in enumerate(bodies):
        if continued:
            found[index] = "continued"
        elif index == 0 and CELL_MAGIC.match(body):
            found[index] = "cell"
        elif _is_magic(body):
            found[index] = "line"
        continued = index in found and body.endswith("\\")
    inside = _inside_strings(bodies, found)
    return {index: kind for index, kind in found.items() if index not in inside}


def _inside_strings(bodies: List[str], ipython: Dict[int, str]) -> set:
    """Indices of lines that continue a multi-line string literal, found by tokenizing the cell
    with its IPython lines blanked (tokenizing reads text; nothing is run)."""
    text = "".join("pass\n" if index in ipython else body + "\n" for index, body in enumerate(bodies))
    inside = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))  # 0-based indices of rows 2..end
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set()
    return inside


def _python_cell(number: int, text: str, path: str, records: Records, next_id: List[int]) -> PythonCell:
    lines = source_lines(text, keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    masked: List[str] = []
    magics: Dict[int, str] = {}
    ipython = _ipython_lines(bodies)
    for index, (line, body) in enumerate(zip(lines, bodies)):
        kind = ipython.get(index)
        if kind is None:
            masked.append(line if line.endswith("\n") else line + "\n")
            continue
        if kind == "cell":
            _report_magic(f"%%{CELL_MAGIC.match(body).group('name')}", body, number, 1, 1, path, records)
            new = body
        elif kind == "continued":
            new = body  # the rest of a magic continued with a backslash
        else:
            new = _magic_line(body, number, index + 1, path, records)
        placeholder_id = next_id[0]
        next_id[0] += 1
        magics[placeholder_id] = new + line[len(body):]
        indent = re.match(r"[ \t]*", body).group(0)
        statement = "# " if kind == "continued" else "pass  # "
        masked.append(f"{indent}{statement}gpu2npu:magic:{placeholder_id}\n")
    return PythonCell(number, lines, masked, magics)


def _shell_cell(number: int, text: str, path: str, records: Records) -> str:
    lines = source_lines(text, keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    outcome = rewrite_lines(bodies[1:], Dialect.SHELL, records.shell_rules)
    _record(number, 2, outcome.changes, outcome.findings, path, records)
    return "".join([lines[0]] + [new + line[len(old):] for new, old, line in zip(outcome.lines, bodies[1:], lines[1:])])


def _cell_kind(text: str) -> str:
    first = text.split("\n", 1)[0].rstrip("\r")
    magic = CELL_MAGIC.match(first)
    if magic is None or magic.group("name") in PYTHON_CELL_MAGICS:
        return "python"
    arguments = magic.group("arguments").split()
    if magic.group("name") in SHELL_CELL_MAGICS or (magic.group("name") == "script" and arguments
                                                    and arguments[0].rsplit("/", 1)[-1] in SHELL_PROGRAMS):
        return "shell"
    return "other"


# -- the Python of all cells as one module -------------------------------------------------------
def _migrate_python(cells: List[PythonCell], path: str, options: Options, rules, records: Records) -> Dict[int, str]:
    """Migrate the joined Python cells; returns {cell number: new text} for every cell."""
    module: List[str] = []
    origin: List[Tuple[int, int]] = []  # module line k+1 -> (cell number, line in cell; 0 = before it)
    for position, cell in enumerate(cells):
        if position:
            module.append(_cell_marker(cell.number) + "\n")
            origin.append((cell.number, 0))
        module.extend(cell.masked)
        origin.extend((cell.number, line) for line in range(1, len(cell.masked) + 1))
    source = "".join(module).encode("utf-8")
    result = migrate_source(source, path, options, rules)
    if result.status == Status.FAILED:
        raise NotebookError(_locate_failure(cells, result.error))

    def place(line: int) -> Tuple[int, int]:
        return origin[line - 1] if 0 < line <= len(origin) else (cells[0].number, 0)

    for change in result.changes:
        number, start = place(change.start_line)
        _, end = place(change.end_line)
        records.changes.append(Change(path, start, end, change.operation, change.rule, f"cell {number}: {change.message}"))
    for finding in result.findings:
        number, start = place(finding.start_line)
        _, end = place(finding.end_line)
        records.findings.append(Finding(path, start, end, finding.report, finding.api,
                                        f"cell {number}: {finding.tip}", finding.rule))
    output = source.decode("utf-8") if result.output is None else result.output.decode("utf-8")
    return _split_cells(output, cells)


def _locate_failure(cells: List[PythonCell], error: str) -> str:
    for cell in cells:
        try:
            cst.parse_module("".join(cell.masked))
        except cst.ParserSyntaxError as problem:
            return (f"cell {cell.number} is not valid Python 3 (syntax error at line {problem.raw_line}, "
                    f"column {problem.raw_column + 1})")
        except Exception:
            continue
    return f"the code cells cannot be migrated together: {error}"


def _split_cells(output: str, cells: List[PythonCell]) -> Dict[int, str]:
    texts: Dict[int, List[str]] = {cells[0].number: []}
    current = cells[0].number
    markers = {_cell_marker(cell.number): cell.number for cell in cells[1:]}
    for line in source_lines(output, keepends=True):
        number = markers.get(line.rstrip("\r\n"))
        if number is not None:
            current = number
            texts[current] = []
        else:
            texts[current].append(line)
    if sorted(texts) != sorted(cell.number for cell in cells):
        raise NotebookError("internal error: the cells could not be told apart after migration; please report it")
    result = {}
    for cell in cells:
        restored = []
        for line in texts[cell.number]:
            placeholder = PLACEHOLDER.match(line.rstrip("\r\n"))
            restored.append(cell.magics.pop(int(placeholder.group(1))) if placeholder else line)
        if cell.magics:
            raise NotebookError("internal error: an IPython line was lost in migration; please report it")
        text = "".join(restored)
        original = "".join(cell.lines)
        if not original.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        result[cell.number] = text
    return result


# -- the whole notebook --------------------------------------------------------------------------
def _language(notebook: dict) -> str:
    metadata = notebook.get("metadata") or {}
    info = metadata.get("language_info") or {}
    kernel = metadata.get("kernelspec") or {}
    return str(info.get("name") or kernel.get("language") or "python").lower()


def migrate_notebook(data: bytes, path: str, options: Options, rules: Sequence[Type[Rule]]) -> FileResult:
    try:
        return _migrate(data, path, options, rules)
    except NotebookError as error:
        return FileResult(path, Status.FAILED, error=str(error))
    except RecursionError:
        return FileResult(path, Status.FAILED, error="nested too deeply to migrate")
    except Exception as error:  # a defect of ours must cost one file, not the run
        return FileResult(path, Status.FAILED,
                          error=f"internal error while migrating ({type(error).__name__}: {error}); please report it")


def _migrate(data: bytes, path: str, options: Options, rules) -> FileResult:
    notebook, _ = _load(data)
    if _language(notebook) != "python":
        return FileResult(path, Status.SKIPPED)
    code = {number: _text(cell) for number, cell in enumerate(notebook["cells"], 1) if cell.get("cell_type") == "code"}
    joined = "\n".join(code.values())
    if not _relevant(joined.encode("utf-8"), options.api) and not any(r.wants(joined) and r.triggers for r in LAUNCH_SCRIPT_RULES):
        return FileResult(path, Status.SKIPPED)
    records = Records(shell_rules=[rule.for_project(options) for rule in LAUNCH_SCRIPT_RULES])
    new_texts: Dict[int, str] = {}
    python: List[PythonCell] = []
    next_id = [0]
    for number, text in code.items():
        kind = _cell_kind(text)
        if kind == "shell":
            new_texts[number] = _shell_cell(number, text, path, records)
        elif kind == "other":
            lines = max(1, len(source_lines(text)))
            _report_magic("%%" + CELL_MAGIC.match(text.split("\n", 1)[0]).group("name"), text, number, 1, lines, path, records)
        else:
            python.append(_python_cell(number, text, path, records, next_id))
    if python:
        new_texts.update(_migrate_python(python, path, options, rules, records))
    findings = sorted(set(records.findings))
    changed = {number: text for number, text in new_texts.items() if text != code[number]}
    if not records.changes:
        return FileResult(path, Status.UNCHANGED, findings=findings)
    encode = layout_of(data)
    if encode is None:
        raise NotebookError("its JSON layout cannot be reproduced, so it is left as written")
    cells = [_with_text(cell, changed[number]) if number in changed else cell
             for number, cell in enumerate(notebook["cells"], 1)]
    output = encode({**notebook, "cells": cells})
    changes = sorted(records.changes, key=lambda c: (_cell_of(c.message), c.start_line, c.end_line, c.operation != Operation.INSERT))
    return FileResult(path, Status.MIGRATED, output, changes, findings)


def _cell_of(message: str) -> int:
    return int(message.split(":", 1)[0].split()[1])
