"""Shared by the tests: migrate a fixture, and check the SPEC section 6 invariants on a result."""
from __future__ import annotations

import ast
import csv
import difflib
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

from click.testing import CliRunner

from gpu2npu.cli import main
from gpu2npu.rules import REROUTING_RULES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "cuda_scripts"
EXPECTED = ROOT / "fixtures" / "expected"
REPORT_FILES = {
    "report.html",
    "change_list.csv",
    "unsupported_api.csv",
    "unknown_api.csv",
    "cuda_op_list.csv",
    "api_performance_advice.csv",
    "affinity_api_call.csv",
    "msFmkTranspltlog.txt",
    "run_distributed_npu.sh",
    "ascend_function/__init__.py",  # -sim
}


def fixture_names() -> List[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def console_script(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """`gpu2npu ARGS` run as a user runs it, in a process of its own (text output, two minutes)."""
    return subprocess.run([sys.executable, "-m", "gpu2npu", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


# Fixtures converted by `distributed` in the tests: fixture -> (main file, model variable).
DISTRIBUTED_CASES = {
    "single_card_for_multi": ("train.py", "model"),
    "single_gpu_loop": ("train.py", "model"),
    "data_parallel": ("train_dp.py", "model"),
    "ddp_spawn_imagenet": ("main.py", "model"),
}


# Fixtures migrated with -s in the tests.
SPECIFY_DEVICE_CASES = ["single_gpu_loop"]  # (the others run one process per card: -s refuses them)

# Fixtures migrated with -a model, and with -sim.
AMP_CASES = ["native_amp", "apex_amp"]
SIMILAR_CASES = ["similar_ops", "nanogpt_style"]


# Fixtures migrated with -m (ModelArts) in the tests, and the files that mode adds.
MODELARTS_CASES = ["modelarts_job", "multi_module_package"]
MODELARTS_FILES = {
    f"ascend_modelarts_function/{name}" for name in ("__init__.py", "modelarts_path_manager.py", "path_mapping_config.py")
}


# The packages written when a file is pointed at a generated package: rule -> its files.
GENERATED_FILES = {rule.code: {f"{rule.PACKAGE}/{file}" for file in rule.FILES} for rule in REROUTING_RULES}


def mode_args(name: str, mode: str) -> List[str]:
    """CLI arguments for a fixture in a mode: "single", "distributed", "specify", "modelarts" (-m),
    "amp" (-a model) or "similar" (-sim)."""
    return {"single": [], "distributed": distributed_args(name) if mode == "distributed" else [],
            "specify": ["-s"], "modelarts": ["-m"], "amp": ["-a", "model"], "similar": ["-sim"]}[mode]


def distributed_args(name: str) -> List[str]:
    main_file, target = DISTRIBUTED_CASES[name]
    return ["distributed", "-m", main_file, "-t", target]


def migrate(source: Path, out: Path, version: str = "2.1.0", *extra: str) -> Path:
    """Run the CLI; `extra` may end with a `distributed ...` subcommand."""
    options = list(extra) if "distributed" not in extra else list(extra[: extra.index("distributed")])
    subcommand = list(extra[extra.index("distributed"):]) if "distributed" in extra else []
    result = run_cli("-i", str(source), "-o", str(out), "-v", version, *options, *subcommand)
    assert result.exit_code in (0, 3), result.output
    name = source.name if source.is_dir() else source.stem
    return out / f"{name}{'_msft_multi' if subcommand else '_msft'}"


def tree_files(root: Path) -> Dict[str, Path]:
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            files[path.relative_to(root).as_posix()] = path
    return files


def read_csv(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def parses(data: bytes) -> bool:
    try:
        ast.parse(data)
        return True
    except (SyntaxError, ValueError):
        return False


def _blank(lines: List[bytes], first: int, last: int) -> bool:
    """Whether original lines first..last (1-based, inclusive) are all blank."""
    return all(not lines[i - 1].strip() for i in range(first, last + 1))


def _near(lines: List[bytes], anchor: int, first: int, last: int) -> bool:
    """Whether an INSERT anchored after line `anchor` can explain lines added between original
    lines `first` and `last` (difflib may shift an insertion across blank lines)."""
    if first <= anchor <= last:
        return True
    low, high = (anchor, first) if anchor < first else (last, anchor)
    return _blank(lines, low + 1, high)


def unexplained_differences(before: bytes, after: bytes, rows: List[Dict[str, str]]) -> List[str]:
    """Differences between two versions of a file that no change_list row accounts for, and
    rows that account for no difference.  Empty when the report is the exact story of the diff.

    The diff is difflib's, aligned from the start.  Blank lines make that alignment ambiguous:
    it may pair a blank line of the input with one the migration inserted.  So the alignment
    from the end is tried too, and both again with the blank lines that rows say were modified
    or deleted kept from pairing with anything: the report is exact if one of them explains it."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    covered = [(int(r["Start Line"]), int(r["End Line"])) for r in rows if r["Operation Type"] in ("MODIFY", "DELETE")]
    unpaired = [b"\0row %d" % number if not line.strip() and any(s <= number <= e for s, e in covered) else line
                for number, line in enumerate(old, 1)]
    first = None
    for left in (old, unpaired):
        for opcodes in (_forward(left, new), _backward(left, new), *_skeleton_alignments(old, new)):
            problems = _unexplained(opcodes, old, rows)
            if not problems:
                return []
            first = first if first is not None else problems
    return first


def _forward(old, new):
    return difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()


def _backward(old, new):
    opcodes = difflib.SequenceMatcher(None, old[::-1], new[::-1], autojunk=False).get_opcodes()
    return sorted((tag, len(old) - i2, len(old) - i1, len(new) - j2, len(new) - j1) for tag, i1, i2, j1, j2 in opcodes)


def _unexplained(opcodes, old: List[bytes], rows: List[Dict[str, str]]) -> List[str]:
    modified = [(int(r["Start Line"]), int(r["End Line"])) for r in rows if r["Operation Type"] in ("MODIFY", "DELETE")]
    inserts = [int(r["Start Line"]) for r in rows if r["Operation Type"] == "INSERT"]
    problems = []
    changed_lines = set()
    insert_points = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        for line in range(i1 + 1, i2 + 1):
            changed_lines.add(line)
            if not any(start <= line <= end for start, end in modified):
                problems.append(f"line {line} changed without a MODIFY/DELETE row: {old[line - 1]!r}")
        if j2 > j1:  # new lines are written here: an INSERT may stand anywhere in the run
            insert_points.append((i1, i2))  # (a deletion in the same run can hide its count)
        if j2 - j1 > i2 - i1:  # lines were added here (within a replaced run: anywhere in it)
            near = [a for a in inserts if _near(old, a, i1, i2)]
            if not near:
                problems.append(f"lines added after line {i1} without an INSERT row")
    for start, end in modified:
        if not any(start <= line <= end for line in changed_lines):
            problems.append(f"MODIFY row {start}-{end} but those lines did not change")
    for anchor in inserts:
        if not any(_near(old, anchor, i1, i2) for i1, i2 in insert_points):
            problems.append(f"INSERT row after line {anchor} but nothing was added there")
    return problems


def migrated_kind(relative: str) -> str:
    """"python", "notebook", "launch_script", "dependencies" (requirements, environment and
    project files, Dockerfiles) or "" (copied byte for byte) for a file of a fixture."""
    from gpu2npu.reading.dependency_files import dependency_format
    from gpu2npu.reading.discover import Kind, kind_of

    kind = kind_of(Path(relative))
    if kind == Kind.OTHER and dependency_format(relative) is not None:
        return "dependencies"
    return {Kind.PYTHON: "python", Kind.NOTEBOOK: "notebook", Kind.LAUNCH_SCRIPT: "launch_script"}.get(kind, "")


def cell_rows(rows: List[Dict[str, str]], number: int) -> List[Dict[str, str]]:
    """The change_list rows of a notebook's cell `number` (their messages start `cell N: `)."""
    return [row for row in rows if row["Message"].startswith(f"cell {number}: ")]


def _cell_text(cell: dict) -> bytes:
    """A cell's source as file text: its last line ended like the others (Jupyter stores it
    without a newline, so a line inserted after it gives it one, which is not an edit of it)."""
    source = cell["source"]
    text = source if isinstance(source, str) else "".join(source)
    return (text if not text or text.endswith("\n") else text + "\n").encode("utf-8")


def notebook_differences(before: bytes, after: bytes, rows: List[Dict[str, str]]) -> List[str]:
    """`unexplained_differences` for a notebook, cell by cell: outside the sources of code
    cells nothing may differ, and each code cell's change is exactly its rows."""
    import json

    old, new = json.loads(before), json.loads(after)
    problems = []
    if {k: v for k, v in old.items() if k != "cells"} != {k: v for k, v in new.items() if k != "cells"}:
        problems.append("notebook metadata changed")
    if len(old["cells"]) != len(new["cells"]):
        return problems + ["number of cells changed"]
    for number, (a, b) in enumerate(zip(old["cells"], new["cells"]), 1):
        if {k: v for k, v in a.items() if k != "source"} != {k: v for k, v in b.items() if k != "source"}:
            problems.append(f"cell {number}: something besides the source changed")
        if a["cell_type"] != "code" and a["source"] != b["source"]:
            problems.append(f"cell {number}: a {a['cell_type']} cell changed")
        if a["cell_type"] == "code":
            problems += [f"cell {number}: {p}" for p in unexplained_differences(_cell_text(a), _cell_text(b), cell_rows(rows, number))]
    numbers = {int(row["Message"].split(":")[0].split()[1]) for row in rows}
    problems += [f"rows for cell {n}, which is not a code cell" for n in numbers
                 if n > len(old["cells"]) or old["cells"][n - 1]["cell_type"] != "code"]
    return problems


def notebook_cells_parse(data: bytes) -> bool:
    """Whether every Python code cell parses once IPython lines (`!cmd`, `%magic`, `%%magic`
    cells) are blanked out; shell and other cell-magic cells are not Python."""
    import json
    import re

    for cell in json.loads(data)["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = _cell_text(cell).decode("utf-8")
        if text.startswith("%%") and not re.match(r"%%(time|timeit|capture|prun)\b", text):
            continue
        lines = [re.sub(r"^(\s*)(%|!).*$", r"\1pass", line) for line in text.splitlines()]
        if not parses("\n".join(lines).encode()):
            return False
    return True


_MIGRATED_WORDS = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"torch_npu\.npu", "torch.cuda"), (r"\bis_npu\b", "is_cuda"), (r"\bnpu\b", "cuda"), (r"\bhccl\b", "nccl"),
    (r"\bHCCL\b", "NCCL"), (r"ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"))]


def _skeleton(line: str) -> str:
    """A line with what the migration renames put back, its strings and whitespace dropped."""
    for pattern, replacement in _MIGRATED_WORDS:
        line = pattern.sub(replacement, line)
    return "".join(re.sub(r"[\"'].*?[\"']", "", line).split())


def _skeleton_alignments(old, new):
    """Alignments of the lines' skeletons (`_skeleton`), forward and backward, with each pair of
    skeleton-equal lines that differ as text turned into a one-line replacement."""
    def text(lines):
        return [line.decode("utf-8", "replace") if isinstance(line, bytes) else line for line in lines]

    skeleton_old, skeleton_new = [_skeleton(line) for line in text(old)], [_skeleton(line) for line in text(new)]
    for opcodes in (_forward(skeleton_old, skeleton_new), _backward(skeleton_old, skeleton_new)):
        refined = []
        for tag, i1, i2, j1, j2 in opcodes:
            if tag != "equal":
                refined.append((tag, i1, i2, j1, j2))
                continue
            for offset in range(i2 - i1):
                same = old[i1 + offset] == new[j1 + offset]
                refined.append(("equal" if same else "replace", i1 + offset, i1 + offset + 1, j1 + offset, j1 + offset + 1))
        yield refined


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _output_lines_of(opcodes, first: int, last: int) -> List[int]:
    """0-based output lines that stand where original lines first..last (1-based) stood."""
    lines: List[int] = []
    for tag, i1, i2, j1, j2 in opcodes:
        # the block holds original lines i1+1..i2; a pure insertion touching the span counts
        if not (i1 + 1 <= last and i2 >= first) and not (i1 == i2 and first - 1 <= i1 <= last):
            continue
        if tag == "equal":
            lines += [j1 + (line - 1 - i1) for line in range(max(first, i1 + 1), min(last, i2) + 1)]
        else:
            lines += range(j1, j2)
    return lines


def lost_edits(before: bytes, after: bytes, changes) -> List[str]:
    """Change records whose written text (`Change.wrote`) is not in the output where the record
    says the edit was made: an edit claimed by the change list but undone or dropped by another
    one.  MODIFY records are looked for at the output lines that replace their original lines,
    INSERT records in the whole output (where an insertion lands is `unexplained_differences`'
    business); deletions write nothing."""
    old = before.decode("utf-8", "replace").splitlines(keepends=True)
    new = after.decode("utf-8", "replace").splitlines(keepends=True)
    # Aligned on the lines' skeletons, so that a line and its migrated form pair up even among
    # many identical lines (where a plain diff may pair a line with its neighbour's migration).
    alignments = list(_skeleton_alignments(old, new))
    problems = []
    for change in changes:
        wrote = _squeeze(getattr(change, "wrote", ""))
        if not wrote:
            continue
        if change.operation.value == "INSERT":
            found = wrote in _squeeze("".join(new))
        else:
            found = any(wrote in _squeeze("".join(new[j] for j in _output_lines_of(opcodes, change.start_line,
                                                                                     change.end_line)))
                        for opcodes in alignments)
        if not found:
            problems.append(f"{change.rule} row at lines {change.start_line}-{change.end_line} ({change.message}) "
                            f"wrote {change.wrote!r}, which is not in the output there")
    return problems


def write_project(root: Path, files: Dict[str, str]) -> Path:
    """A project at `root` of these files (relative path -> text)."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def free_port() -> int:
    """A TCP port nobody listens on now, for a test's process group."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_of_any_run(data: bytes) -> bytes:
    """report.html without what differs from run to run of the same migration: the output
    folder and the time."""
    return re.sub(rb"<dt>(output|time)</dt><dd>[^<]*</dd>", rb"<dt>\1</dt><dd></dd>", data)
