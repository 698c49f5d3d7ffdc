"""pip requirement files (`requirements*.txt`, `constraints*.txt` and what they include with
`-r`/`-c`), edited line by line: every line a rule does not touch is kept byte for byte.

Lines are read as pip reads them: a line ending in a backslash continues on the next (unless it
is a comment), ` #` starts a comment, options follow the requirement (`--hash=...`).  A removed
requirement is commented out, with the reason, rather than deleted: the file keeps its lines and
the reader sees what was there.  A requirement whose version changes loses its `--hash` options
(they name the old files); a file that pins hashes is reported once, since pip's hash-checking
mode needs a hash for every line: regenerate them (`pip-compile --generate-hashes`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from ..records.change import Change, Finding, Operation, Report
from .decide import CPU_INDEX_WHY, INDEX_RULE, TORCH_RULE, Context, Decision, Requirement, decide, parse_requirement

_COMMENT = re.compile(r"(^|\s+)#.*$")
_OPTIONS = re.compile(r"\s+-{1,2}[A-Za-z]")  # where the options after a requirement begin
_HASH = re.compile(r"\s*--hash[=\s]\S+")
_INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)(\S+)")
_INDEX = re.compile(r"^\s*(?:-i|--index-url|--extra-index-url|-f|--find-links)(?:\s*=\s*|\s+)(\S+)")
_EDITABLE = re.compile(r"^(\s*(?:-e|--editable)(?:\s*=\s*|\s+))(\S+)")
HASHES_TIP = ("the file pins hashes: pip's hash-checking mode needs one for every requirement, and the changed "
              "and added lines have none; regenerate them on the Ascend machine (pip-compile --generate-hashes)")
REMOVED_NOTE = "removed by gpu2npu"


@dataclass
class FileOutcome:
    output: Optional[str]  # None: unchanged
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    includes: List[str] = field(default_factory=list)  # -r/-c targets as written
    torch_pins: List[Tuple[int, str]] = field(default_factory=list)  # (line, torch spec as written)

    def report(self, decision: Decision, path: str, first: int, last: Optional[int] = None) -> None:
        """The decision's finding and torch pin, at the requirement's lines."""
        if decision.torch_pin is not None:
            self.torch_pins.append((first, decision.torch_pin))
        if decision.report is not None:
            report, what, tip = decision.report
            self.findings.append(Finding(path, first, last or first, report, what, tip, decision.rule))

    def record(self, decision: Decision, path: str, first: int, last: Optional[int] = None) -> None:
        """The decision's finding and rows, for a requirement on lines first..last (what it
        inserts stands after the last)."""
        last = last or first
        self.report(decision, path, first, last)
        if decision.write is not None:
            wrote = REMOVED_NOTE if decision.write == [] else decision.write[0].split(";")[0].strip()
            self.changes.append(Change(path, first, last, Operation.MODIFY, decision.rule, decision.message, wrote))
        if decision.insert:
            self.changes.append(Change(path, last, last, Operation.INSERT, decision.rule, decision.insert_message,
                                       decision.insert[0].split(";")[0].strip()))


@dataclass
class _Logical:
    first: int  # 0-based index of its first physical line
    last: int
    code: str  # the joined text without comment


def _logical_lines(lines: List[str]) -> List[_Logical]:
    result: List[_Logical] = []
    index = 0
    while index < len(lines):
        first, parts = index, []
        while True:
            body = lines[index].rstrip("\r\n")
            if body.endswith("\\") and not _COMMENT.search(body):
                parts.append(body[:-1])
                if index + 1 < len(lines):
                    index += 1
                    continue
                break
            parts.append(body)
            break
        joined = "".join(parts)
        result.append(_Logical(first, index, _COMMENT.sub("", joined)))
        index += 1
    return result


def _read(logical: List[_Logical]) -> Tuple[List[str], List[Tuple[_Logical, Requirement]]]:
    """The files a requirements file includes (-r/-c) and its requirements (editable ones too)."""
    includes, requirements = [], []
    for entry in logical:
        include, requirement = _parse(entry.code.strip())
        if include is not None:
            includes.append(include)
        elif requirement is not None:
            requirements.append((entry, requirement))
    return includes, requirements


def _parse(code: str) -> Tuple[Optional[str], Optional[Requirement]]:
    """(the file a -r/-c line names, None) or (None, the requirement a line names, editable ones
    too; None for an option line)."""
    include = _INCLUDE.match(code)
    if include:
        return include.group(1), None
    editable = _EDITABLE.match(code)
    target = editable.group(2) if editable else None if code.startswith("-") else code
    return None, parse_requirement(_OPTIONS.split(target, maxsplit=1)[0]) if target else None


@dataclass(frozen=True)
class RequirementLine:
    """One line of a requirements file as pip reads it (continuation lines joined, the comment
    removed), for a reader other than the migration (`dryrun --venv` installs them)."""

    number: int  # of its first physical line, 1-based
    code: str  # stripped
    include: Optional[str]  # the file a -r/-c line names, as written
    requirement: Optional[Requirement]  # what it installs; None for an include or another option


def requirement_lines(text: str) -> List[RequirementLine]:
    return [RequirementLine(entry.first + 1, entry.code.strip(), *_parse(entry.code.strip()))
            for entry in _logical_lines(text.splitlines(keepends=True)) if entry.code.strip()]


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")):] or "\n"


def migrate_requirements(text: str, path: str, context: Context) -> FileOutcome:
    lines = text.splitlines(keepends=True)
    logical = _logical_lines(lines)
    includes, requirements = _read(logical)
    outcome = FileOutcome(None, includes=includes)
    context.present.update(requirement.normalised for _, requirement in requirements if requirement.name)
    hashed = any("--hash" in entry.code for entry in logical)
    replaced = {}  # first physical line -> its new lines
    for entry in logical:
        code = entry.code.strip()
        index = _INDEX.match(code)
        if index:
            _index_line(entry, index.group(1), lines, path, context, outcome, replaced)
    for entry, requirement in requirements:
        decision = decide(requirement, context)
        outcome.record(decision, path, entry.first + 1, entry.last + 1)
        _apply(decision, entry, lines, replaced)
    if hashed and any(c.wrote != REMOVED_NOTE and c.rule != INDEX_RULE for c in outcome.changes):
        outcome.findings.append(Finding(path, 1, 1, Report.UNSUPPORTED, "--hash", HASHES_TIP, TORCH_RULE))
    if not replaced:
        return outcome
    new_lines: List[str] = []
    skip_until = -1
    for number, line in enumerate(lines):
        if number <= skip_until:
            continue
        if number in replaced:
            block_end, text_lines = replaced[number]
            new_lines.extend(text_lines)
            skip_until = block_end
        else:
            new_lines.append(line)
    outcome.output = "".join(new_lines)
    return outcome


def _index_line(entry: _Logical, url: str, lines: List[str], path: str, context: Context, outcome: FileOutcome,
                replaced) -> None:
    table = context.table
    line_number = entry.first + 1
    if table.cuda_index.match(url) and entry.first == entry.last:
        line = lines[entry.first]
        new = table.cuda_index.sub(table.cpu_index, line, count=1)
        replaced[entry.first] = (entry.last, [new])
        outcome.changes.append(Change(path, line_number, line_number, Operation.MODIFY, INDEX_RULE,
                                      f"{url} -> {table.cpu_index}: {CPU_INDEX_WHY}", table.cpu_index))
    elif table.cuda_index.match(url) or any(pattern.match(url) for pattern in table.reported_indexes):
        outcome.findings.append(Finding(path, line_number, entry.last + 1, Report.UNSUPPORTED, url,
                                        "an index of CUDA packages: not needed on Ascend once the CUDA-only packages "
                                        "are gone", INDEX_RULE))


def _apply(decision: Decision, entry: _Logical, lines: List[str], replaced) -> None:
    """The new lines of the requirement's block, by the decision (its rows are recorded apart)."""
    if decision.write is None and not decision.insert:
        return
    block = lines[entry.first:entry.last + 1]
    newline = _newline(block[-1])
    if decision.write == []:
        commented = [f"# {line}" if line.strip() else line for line in block]
        body = commented[-1].rstrip("\r\n")
        commented[-1] = f"{body}  # {REMOVED_NOTE}: CUDA-only{newline}"
        replaced[entry.first] = (entry.last, commented)
        return
    written = list(block) if decision.write is None else [_rewritten(block, decision.write[0], newline)]
    indent = re.match(r"[ \t]*", block[0]).group(0)
    written.extend(f"{indent}{text}{newline}" for text in decision.insert)
    replaced[entry.first] = (entry.last, written)


def _rewritten(block: List[str], requirement: str, newline: str) -> str:
    """The requirement's line with `requirement` in place of the old one: its indentation, the
    options that still hold (not the hashes of other files) and its comment kept."""
    first = block[0].rstrip("\r\n")
    joined = "".join(line.rstrip("\r\n")[:-1] if line.rstrip("\r\n").endswith("\\") else line.rstrip("\r\n")
                     for line in block)
    comment = _COMMENT.search(first)  # (a line with a comment continues on no other)
    code = _COMMENT.sub("", joined)
    indent = re.match(r"[ \t]*", code).group(0)
    body = code.strip()
    editable = _EDITABLE.match(body)
    if editable:
        body = body[editable.end():]  # an editable VCS requirement becomes a plain one
    options = ""
    cut = _OPTIONS.search(body)
    if cut:
        options = _HASH.sub("", body[cut.start():]).rstrip()
    tail = comment.group(0) if comment else ""
    return f"{indent}{requirement}{options}{tail}{newline}"


def requirement_names(text: str) -> Tuple[List[str], List[str]]:
    """The normalised names a requirements file lists, and the files it includes (-r/-c)."""
    includes, requirements = _read(_logical_lines(text.splitlines(keepends=True)))
    return [requirement.normalised for _, requirement in requirements if requirement.name], includes
