#!/usr/bin/env python3
"""Run gpu2npu over a corpus of real projects and check what a reviewer would check.

    python scripts/corpus_check.py CORPUS_DIR WORK_DIR [-v 2.1.0]

CORPUS_DIR holds one folder per project (e.g. the `shown/` folder made by
shared/corpus/fetch_shown.sh).  For each project it records: the exit status (crash or not),
whether every output .py parses where its input parsed, whether migrating the output again
changes anything (idempotence), and every remaining mention of CUDA in code (names,
attributes and strings; comments and docstrings excluded), sorted into: in a report
(unsupported/unknown/advice CSV or a NOTE in the log), a device-neutral user identifier
(`use_cuda`, `args.cuda`), prose in a string ("running on cuda"), or unexplained.  It prints the
counts and lists the unexplained ones; the exit status is 1 if any check failed.
"""
from __future__ import annotations

import argparse
import ast
import csv
import difflib
import io
import re
import shutil
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

REPORTS = ("unsupported_api.csv", "unknown_api.csv", "api_performance_advice.csv")
REPORT_FILES = REPORTS + ("change_list.csv", "cuda_op_list.csv", "affinity_api_call.csv", "msFmkTranspltlog.txt")
LOG_LINE = re.compile(r"\] (.+?) line: (\d+) ~ (\d+) Operation Type: (UNSUPPORTED|UNKNOWN|SUGGESTION|NOTE)")
CUDA = re.compile(r"cuda|nccl", re.I)
# What torch accepts as a device or backend name (it is case-sensitive; "NCCL" is a Backend value).
DEVICE_LIKE = re.compile(r"^\s*(cuda(:\S*)?|nccl|NCCL)\s*$")


def migrate(source: Path, out: Path, version: str) -> int:
    command = [sys.executable, "-m", "gpu2npu", "-i", str(source), "-o", str(out), "-v", version, "--force", "--no-cache"]
    return subprocess.run(command, capture_output=True, text=True).returncode


def reported_lines(target: Path):
    lines = set()
    for name in REPORTS:
        with open(target / name, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                for line in range(int(row["Start Line"]), int(row["End Line"]) + 1):
                    lines.add((row["File"], line))
    for text in (target / "msFmkTranspltlog.txt").read_text(encoding="utf-8").splitlines():
        match = LOG_LINE.search(text)
        if match:
            for line in range(int(match.group(2)), int(match.group(3)) + 1):
                lines.add((match.group(1), line))
    return lines


def original_lines(before: bytes, after: bytes):
    """Map each line of the output to the input line it came from (inserted lines: the line
    above), since reports speak of the input's lines."""
    old, new = before.splitlines(), after.splitlines()
    mapping = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for k in range(j2 - j1):
            mapping[j1 + k + 1] = i1 + k + 1 if tag == "equal" else min(i1 + k + 1, max(i2, i1 + 1) if tag == "replace" else i1)
    return mapping


def documentation_lines(tree: ast.AST):
    """Lines of strings that stand alone as statements (docstrings)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def cuda_mentions(data: bytes):
    """(line, kind, text) for every mention of CUDA in code, with kind name/attribute/string."""
    tree = ast.parse(data)
    docs = documentation_lines(tree)
    mentions = []
    previous = None
    for token in tokenize.tokenize(io.BytesIO(data).readline):
        if token.type == tokenize.NAME and CUDA.search(token.string):
            kind = "attribute" if previous is not None and previous.string == "." else "name"
            mentions.append((token.start[0], kind, token.string))
        elif token.type == tokenize.STRING and CUDA.search(token.string) and token.start[0] not in docs:
            mentions.append((token.start[0], "string", token.string))
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token
    return mentions


def classify(kind: str, text: str) -> str:
    if kind == "string":
        body = text.strip("rRbBuUfF").strip("'\"")
        return "unexplained" if DEVICE_LIKE.match(body) else "prose in a string"
    if kind == "attribute" and text in ("cuda", "is_cuda"):
        return "unexplained"
    return "user identifier"


def check_project(source: Path, work: Path, version: str, totals: Counter, unexplained: list) -> None:
    out = work / "first"
    status = migrate(source, out, version)
    totals["projects"] += 1
    if status not in (0, 3):
        totals["crashed projects"] += 1
        unexplained.append(f"{source.name}: exit status {status}")
        return
    target = out / f"{source.name}_msft"
    reported = reported_lines(target)
    copy = work / source.name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(target, copy, symlinks=True)
    for name in REPORT_FILES:
        (copy / name).unlink(missing_ok=True)
    again_status = migrate(copy, work / "second", version)
    again = work / "second" / f"{source.name}_msft"
    with open(again / "change_list.csv", newline="", encoding="utf-8") as handle:
        second_changes = list(csv.DictReader(handle))
    if again_status not in (0, 3) or second_changes:
        totals["projects not idempotent"] += 1
        unexplained.extend(f"{source.name}: second run changed {r['File']}:{r['Start Line']} {r['Message']}" for r in second_changes)
    for path in sorted(source.rglob("*.py")):
        relative = path.relative_to(source).as_posix()
        before = path.read_bytes()
        after = (target / relative).read_bytes()
        totals["python files"] += 1
        try:
            ast.parse(before)
        except (SyntaxError, ValueError):
            totals["inputs that do not parse"] += 1
            continue
        try:
            ast.parse(after)
        except (SyntaxError, ValueError) as error:
            totals["outputs that do not parse"] += 1
            unexplained.append(f"{source.name}/{relative}: output does not parse: {error}")
            continue
        if after != before:
            totals["files changed"] += 1
        to_original = original_lines(before, after)
        for line, kind, text in cuda_mentions(after):
            totals["CUDA mentions left in code"] += 1
            line = to_original.get(line, line)
            if (relative, line) in reported:
                totals["  in a report or log note"] += 1
                continue
            category = classify(kind, text)
            totals[f"  {category}"] += 1
            if category == "unexplained":
                unexplained.append(f"{source.name}/{relative}:{line}: {text}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("-v", "--version", default="2.1.0")
    args = parser.parse_args()
    totals: Counter = Counter()
    unexplained: list = []
    for project in sorted(p for p in args.corpus.iterdir() if p.is_dir()):
        check_project(project, args.work / project.name, args.version, totals, unexplained)
    for key in sorted(totals, key=lambda k: (k.startswith("  "), k)):
        pass
    order = ["projects", "crashed projects", "projects not idempotent", "python files", "inputs that do not parse",
             "outputs that do not parse", "files changed", "CUDA mentions left in code", "  in a report or log note",
             "  user identifier", "  prose in a string", "  unexplained"]
    for key in order:
        print(f"{key}: {totals.get(key, 0)}")
    for item in unexplained:
        print("UNEXPLAINED", item)
    bad = totals["crashed projects"] + totals["projects not idempotent"] + totals["outputs that do not parse"]
    return 1 if bad or totals["  unexplained"] else 0


if __name__ == "__main__":
    sys.exit(main())
