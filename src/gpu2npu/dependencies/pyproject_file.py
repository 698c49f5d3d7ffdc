"""pyproject.toml: the dependencies of PEP 621 (`[project] dependencies`, `optional-dependencies`)
and of Poetry (`[tool.poetry.dependencies]`, its groups), and any CUDA wheel index the file names
(`[[tool.poetry.source]]`, `[[tool.uv.index]]`).

The file is read with tomlkit (a TOML parser that keeps the text) to know what it says, and
edited as text, string by string: a changed requirement is rewritten inside its quotes, a
removed one is commented out on its own line or taken out of an inline array, an added one is
written on the line after torch's in the same style.  The result is parsed again and must say
what was meant, or the file is left as it was and reported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ..records.change import Change, Finding, Operation, Report
from .decide import CPU_INDEX_WHY, INDEX_RULE, Context, Requirement, decide, parse_requirement
from .requirements_file import REMOVED_NOTE, FileOutcome
from .table import normalise

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY_VALUE = re.compile(r"^(?P<indent>\s*)(?P<key>\"[^\"]+\"|'[^']+'|[A-Za-z0-9_.-]+)\s*=\s*(?P<value>.*)$")


@dataclass
class _String:
    line: int  # 0-based line of the opening quote
    start: int  # offset in the text of the first character inside the quotes
    end: int  # offset of the closing quote
    value: str
    quote: str


def _strings_in(text: str, start: int, end: int) -> List[_String]:
    """The single-line string literals between two offsets (comments skipped)."""
    found, position = [], start
    while position < end:
        char = text[position]
        if char == "#":
            position = text.find("\n", position)
            position = end if position < 0 else position
        elif char in "\"'":
            quote = char
            close = position + 1
            while close < end and text[close] != quote and text[close] != "\n":
                close += 2 if text[close] == "\\" and quote == '"' else 1
            if close >= end or text[close] != quote:
                return found
            found.append(_String(text.count("\n", 0, position), position + 1, close, text[position + 1:close], quote))
            position = close + 1
        else:
            position += 1
    return found


def _array_end(text: str, open_bracket: int) -> int:
    """The offset of the `]` closing the array opened at `open_bracket` (-1: none)."""
    depth, position = 0, open_bracket
    while position < len(text):
        char = text[position]
        if char == "#":
            position = text.find("\n", position)
            if position < 0:
                return -1
            continue
        if char in "\"'":
            close = text.find(char, position + 1)
            if close < 0:
                return -1
            position = close + 1
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return position
        position += 1
    return -1


def _tables(lines: List[str]) -> List[Tuple[str, int, int]]:
    """(table name, first line after its header, last line) of each table of the file."""
    heads = [(number, match.group(1)) for number, line in enumerate(lines) for match in [_HEADER.match(line)] if match]
    tables = [("", 0, (heads[0][0] - 1) if heads else len(lines) - 1)]
    for index, (number, name) in enumerate(heads):
        end = heads[index + 1][0] - 1 if index + 1 < len(heads) else len(lines) - 1
        tables.append((name.replace('"', "").replace("'", ""), number + 1, end))
    return tables


def migrate_pyproject(text: str, path: str, context: Context) -> FileOutcome:
    outcome = FileOutcome(None)
    try:
        import tomlkit

        tomlkit.parse(text)
    except Exception as error:  # not TOML: copied as it is, said why
        outcome.findings.append(Finding(path, 1, 1, Report.UNSUPPORTED, "pyproject.toml",
                                        f"not read as TOML ({type(error).__name__}): its dependencies are not migrated",
                                        INDEX_RULE))
        return outcome
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits: List[Tuple[int, int, str]] = []  # (start offset, end offset, new text)

    pep621 = []  # string literals holding PEP 508 requirements
    poetry = []  # (line number, its `key = value` match) of Poetry dependency lines
    for name, first, last in _tables(lines):
        region_start, region_end = offsets[first], offsets[last + 1]
        if name == "project":
            pep621.extend(_array_strings(text, region_start, region_end, "dependencies"))
        elif name == "project.optional-dependencies":
            pep621.extend(_array_strings(text, region_start, region_end, None))
        elif re.fullmatch(r"tool\.poetry\.(dependencies|dev-dependencies|group\.[\w-]+\.dependencies)", name):
            for number in range(first, last + 1):
                match = _KEY_VALUE.match(lines[number].rstrip("\r\n"))
                if match and not lines[number].lstrip().startswith("#"):
                    poetry.append((number, match))
    names = [parse_requirement(s.value) for s in pep621]
    context.present.update(r.normalised for r in names if r is not None and r.name)
    context.present.update(normalise(m.group("key").strip("\"'")) for _, m in poetry)

    for literal, requirement in zip(pep621, names):
        if requirement is None:
            continue
        decision = decide(requirement, context)
        outcome.record(decision, path, literal.line + 1)
        if decision.write == []:
            edits.append(_remove_literal(text, lines, offsets, literal))
        elif decision.write:
            edits.append((literal.start, literal.end, decision.write[0].replace(literal.quote, "'" if literal.quote == '"' else '"')))
        if decision.insert:
            inline = lines[literal.line].count(literal.quote) > 2 or "[" in lines[literal.line]
            added = "".join(f", {literal.quote}{t}{literal.quote}" for t in decision.insert)
            if inline:
                edits.append((literal.end + 1, literal.end + 1, added))
            else:
                line = lines[literal.line]
                indent = re.match(r"[ \t]*", line).group(0)
                newline = line[len(line.rstrip("\r\n")):] or "\n"
                block = "".join(f"{indent}{literal.quote}{t}{literal.quote},{newline}" for t in decision.insert)
                edits.append((offsets[literal.line + 1], offsets[literal.line + 1], block))
    for number, match in poetry:
        key = match.group("key").strip("\"'")
        if normalise(key) == "python":
            continue
        value = match.group("value")
        spec = _poetry_spec(value)
        requirement = Requirement(key, spec=spec)
        decision = decide(requirement, context)
        outcome.record(decision, path, number + 1)
        line_start = offsets[number]
        line = lines[number]
        newline = line[len(line.rstrip("\r\n")):] or "\n"
        if decision.write == []:
            edits.append((line_start, line_start + len(line.rstrip("\r\n")),
                          f"{match.group('indent')}# {line.strip()}  # {REMOVED_NOTE}"))
        elif decision.write:
            new = parse_requirement(decision.write[0])
            version = _poetry_version(new)
            new_key = new.name if normalise(new.name) != normalise(key) else key
            table_version = re.search(r"(version\s*=\s*[\"'])([^\"']*)", value)
            if table_version and new_key == key:  # `{ version = "...", source = ... }`: its other keys stay
                at = line_start + match.start("value") + table_version.start(2)
                edits.append((at, at + len(table_version.group(2)), version))
            else:
                edits.append((line_start, line_start + len(line.rstrip("\r\n")),
                              f"{match.group('indent')}{new_key} = \"{version}\""))
        if decision.insert:
            block = ""
            for text_ in decision.insert:
                inserted = parse_requirement(text_)
                block += f"{match.group('indent')}{inserted.name.replace('_', '-')} = \"{_poetry_version(inserted)}\"{newline}"
            edits.append((offsets[number + 1], offsets[number + 1], block))
    for literal in _strings_in(text, 0, len(text)):
        found = context.table.cuda_index.match(literal.value)
        if found:
            new = context.table.cpu_index + literal.value[found.end():]
            edits.append((literal.start, literal.end, new))
            outcome.changes.append(Change(path, literal.line + 1, literal.line + 1, Operation.MODIFY, INDEX_RULE,
                                          f"{literal.value} -> {new}: {CPU_INDEX_WHY}", context.table.cpu_index))
    if not edits:
        return outcome
    new_text = text
    for start, end, replacement in sorted(_merged_removals(edits), reverse=True):
        new_text = new_text[:start] + replacement + new_text[end:]
    try:
        tomlkit.parse(new_text)
    except Exception as error:
        outcome.changes = []
        outcome.findings.append(Finding(path, 1, 1, Report.UNSUPPORTED, "pyproject.toml",
                                        f"the edits would not leave valid TOML ({type(error).__name__}): left as it "
                                        "was; migrate its dependencies by hand as the change list of a requirements "
                                        "file shows", INDEX_RULE))
        return outcome
    outcome.output = new_text
    outcome.changes.sort()
    return outcome


def _array_strings(text: str, start: int, end: int, key: Optional[str]) -> List[_String]:
    """The strings of the array `key = [...]` of a table (of every array, for key None)."""
    name = re.escape(key) if key else r"[A-Za-z0-9_.\"'-]+"
    pattern = re.compile(r"^[ \t]*" + name + r"[ \t]*=[ \t]*\[", re.MULTILINE)
    strings = []
    for match in pattern.finditer(text, start, end):
        close = _array_end(text, match.end() - 1)
        if close > 0:
            strings.extend(_strings_in(text, match.end(), close))
    return strings


def _merged_removals(edits: List[Tuple[int, int, str]]) -> List[Tuple[int, int, str]]:
    """The edits with overlapping removals made one: two requirements removed from one inline
    array (`gpu = ["flash-attn", "bitsandbytes"]`) each take a comma beside them, the same one."""
    merged: List[Tuple[int, int, str]] = []
    for start, end, replacement in sorted(edits):
        if merged and not replacement and not merged[-1][2] and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), "")
        else:
            merged.append((start, end, replacement))
    return merged


def _remove_literal(text: str, lines: List[str], offsets: List[int], literal: _String) -> Tuple[int, int, str]:
    line = lines[literal.line]
    body = line.rstrip("\r\n")
    stripped = body.strip().rstrip(",").strip()
    if stripped == f"{literal.quote}{literal.value}{literal.quote}":  # alone on its line: comment it out
        indent = re.match(r"[ \t]*", body).group(0)
        return offsets[literal.line], offsets[literal.line] + len(body), f"{indent}# {body.strip()}  # {REMOVED_NOTE}"
    start, end = literal.start - 1, literal.end + 1  # with its quotes, and its comma
    after = re.match(r"\s*,\s*", text[end:])
    if after:
        return start, end + after.end(), ""
    before = re.search(r",\s*$", text[:start])
    return (before.start() if before else start), end, ""


def _poetry_version(requirement: Requirement) -> str:
    """A requirement's version as Poetry writes it: `==2.1.0` is "2.1.0", none is "*"."""
    return requirement.spec[2:] if requirement.spec.startswith("==") else (requirement.spec or "*")


def _poetry_spec(value: str) -> str:
    """A Poetry version constraint as a PEP 440 spec, roughly (`^2.0` -> `>=2.0`): enough to
    tell which torch the project asked for."""
    match = re.match(r"\s*[\"']([^\"']*)[\"']", value) or re.search(r"version\s*=\s*[\"']([^\"']*)[\"']", value)
    if match is None:
        return ""
    spec = match.group(1).strip()
    if spec in ("", "*"):
        return ""
    spec = re.sub(r"^[\^~]", ">=", spec)
    return spec if re.match(r"[<>=!~]", spec) else f"=={spec}"
