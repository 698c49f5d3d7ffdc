"""What the project's Python code decides about the command-line options that its launch scripts
pass: read before the files are migrated, so that a script's `--sync-backend nccl` is migrated
the way the option's declaration is (reading.file_facts.backend_options_kept)."""
from __future__ import annotations

import ast
from typing import FrozenSet, Iterable

from .discover import Entry, Kind
from .file_facts import backend_options_kept
from .scan import FileScan
from .scan.reading import parse


def backend_options_kept_in(entries: Iterable[Entry]) -> FrozenSet[str]:
    """The destinations (sync_backend) of the project's options whose "nccl" the migration leaves
    as written; read only where a launch script of the tree passes "nccl" at all."""
    entries = list(entries)
    if not any(entry.kind == Kind.LAUNCH_SCRIPT and b"nccl" in _bytes_of(entry).lower() for entry in entries):
        return frozenset()
    kept = set()
    for entry in entries:
        if entry.kind != Kind.PYTHON:
            continue
        data = _bytes_of(entry)
        if (b"nccl" not in data and b"NCCL" not in data) or (b"default" not in data and b"choices" not in data):
            continue  # (backend_options_kept reads options offering "nccl" as default or among choices)
        tree = parse(data)
        if tree is not None:
            kept |= backend_options_kept(FileScan(tree, data))
    return frozenset(kept)


def _bytes_of(entry: Entry) -> bytes:
    try:
        return entry.absolute.read_bytes()
    except OSError:
        return b""  # (the migration reports the file it cannot read)


def scripts_with_own_option(entries: Iterable[Entry], flag: str) -> FrozenSet[str]:
    """The Python files (as Entry.relative writes them) that declare the command-line option `flag`
    themselves (`parser.add_argument("--tf32", ...)`): a launch script's `--tf32 True` given to one
    is that script's own option, not transformers' (HfArgumentParser's, which raises without CUDA).
    Read only where a launch script of the tree passes `flag` at all."""
    entries = list(entries)
    word = flag.encode()
    if not any(entry.kind == Kind.LAUNCH_SCRIPT and word in _bytes_of(entry) for entry in entries):
        return frozenset()
    found = set()
    for entry in entries:
        if entry.kind != Kind.PYTHON:
            continue
        data = _bytes_of(entry)
        if word not in data or b"add_argument" not in data:
            continue
        tree = parse(data)
        if tree is not None and any(
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and any(isinstance(arg, ast.Constant) and arg.value == flag for arg in node.args)
                for node in ast.walk(tree)):
            found.add(entry.relative)
    return frozenset(found)
