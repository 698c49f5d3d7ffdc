"""A baseline of `gpu2npu check`: the findings a team has accepted, so that the gate fails only on
new ones.

    gpu2npu check . --write-baseline gpu2npu-baseline.json   # record today's findings
    gpu2npu check . --baseline gpu2npu-baseline.json         # fail only on findings not recorded

A finding is known by its file, its code and the text of its first line (stripped of the
indentation), not by its line number: lines added or removed elsewhere in the file do not make
an old finding new, while a second copy of a recorded line is new (each entry has a count).
Paths are relative to the baseline file's folder, so the check may be run from anywhere.  The
file is sorted JSON, one entry per line group, to be committed and reviewed.
"""
from __future__ import annotations

import collections
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Counter, Dict, List, Optional, Sequence, Tuple

from ..reading.suppressions import code_cells

FORMAT = 1
Key = Tuple[str, str, str]  # (path, code, line text)


class BaselineError(ValueError):
    """A baseline file that cannot be read (a usage error: exit 2)."""


@dataclass(frozen=True)
class Matched:
    new: list  # the findings not in the baseline
    known: int  # findings the baseline accepts
    gone: int  # recorded findings no longer found (fixed: the baseline may be written again)


def _path_key(path: str, folder: Path) -> str:
    """A finding's path relative to the baseline's folder (as shown where it lies outside)."""
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(folder).as_posix()
    except ValueError:
        return Path(os.path.relpath(absolute, folder)).as_posix() if absolute.anchor == folder.anchor else path


def keys_of(findings: Sequence, line_text: Callable[[object], str], folder: Path) -> List[Key]:
    return [(_path_key(f.path, folder), f.rule, line_text(f)) for f in findings]


def write_baseline(file: Path, findings: Sequence, line_text: Callable[[object], str]) -> int:
    """Record `findings` in `file`; the number of entries written."""
    counts: Counter[Key] = collections.Counter(keys_of(findings, line_text, file.resolve().parent))
    entries = [{"path": path, "code": code, "line": text, "count": count}
               for (path, code, text), count in sorted(counts.items())]
    data = {"gpu2npu-baseline": FORMAT, "findings": entries}
    file.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(entries)


def read_baseline(file: Path) -> Dict[Key, int]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise BaselineError(f"--baseline {file}: cannot be read ({error.strerror or error})") from None
    except ValueError as error:
        raise BaselineError(f"--baseline {file}: not JSON ({error})") from None
    if not isinstance(data, dict) or data.get("gpu2npu-baseline") != FORMAT or not isinstance(data.get("findings"), list):
        raise BaselineError(f"--baseline {file}: not a baseline written by `gpu2npu check --write-baseline`")
    counts: Dict[Key, int] = {}
    for entry in data["findings"]:
        try:
            key = (str(entry["path"]), str(entry["code"]), str(entry["line"]))
            counts[key] = counts.get(key, 0) + int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError):
            raise BaselineError(f"--baseline {file}: an entry lacks path, code or line: {entry!r}") from None
    return counts


def match_baseline(file: Path, findings: Sequence, line_text: Callable[[object], str],
                   recorded_by: Optional[Dict[str, str]] = None) -> Matched:
    """Split `findings` into those the baseline in `file` records and the new ones.  A finding of
    a kind of edit (`recorded_by`: its code -> the rule's) is also known under the rule's code,
    which a baseline written before the kind had a code of its own records it by."""
    left = dict(read_baseline(file))
    new = []
    known = 0
    for finding, key in zip(findings, keys_of(findings, line_text, file.resolve().parent)):
        path, code, text = key
        if left.get(key, 0) <= 0 and (recorded_by or {}).get(code):
            key = (path, recorded_by[code], text)
        if left.get(key, 0) > 0:
            left[key] -= 1
            known += 1
        else:
            new.append(finding)
    return Matched(new, known, sum(left.values()))


class LineTexts:
    """The text of a finding's first line (of its cell, in a notebook), stripped: what a baseline
    knows it by.  Each file is read once."""

    def __init__(self) -> None:
        self._files: Dict[str, Dict[Tuple[int, int], str]] = {}

    def __call__(self, finding) -> str:
        lines = self._files.get(finding.path)
        if lines is None:
            lines = self._files[finding.path] = _lines_of(Path(finding.path))
        return lines.get((finding.cell, finding.start_line), "").strip()


def _lines_of(path: Path) -> Dict[Tuple[int, int], str]:
    """(cell, line) -> text; cell 0 for a file that is not a notebook."""
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return {}
    lines = {(0, line): value for line, value in enumerate(text.splitlines(), 1)}
    if path.suffix.lower() == ".ipynb":  # (a notebook that is no JSON keeps the lines of its text)
        lines.update(((number, line), value) for number, source in code_cells(text)
                     for line, value in enumerate(source.splitlines(), 1))
    return lines
