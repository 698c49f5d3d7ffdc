"""What the project's Python code decides about the command-line options that its launch scripts
pass: read before the files are migrated, so that a script's `--sync-backend nccl` is migrated
the way the option's declaration is (reading.file_facts.backend_options_kept)."""
from __future__ import annotations

import ast
from typing import Callable, FrozenSet, Iterable, Iterator, Tuple

from .discover import Entry, Kind
from .file_facts import backend_options_kept
from .scan import FileScan
from .scan.reading import parse


def backend_options_kept_in(entries: Iterable[Entry], foreign_backends=()) -> FrozenSet[str]:
    """The destinations (sync_backend) of the project's options whose "nccl" the migration leaves
    as written (`foreign_backends`: what other files hand to another collective library, as
    Options.foreign_backends); read only where a launch script of the tree passes "nccl" at all."""
    # (backend_options_kept reads options offering "nccl" as default or among choices)
    def may_offer(data: bytes) -> bool:
        return (b"nccl" in data or b"NCCL" in data) and (b"default" in data or b"choices" in data)

    kept = set()
    for _, data, tree in _python_read_for(entries, lambda text: b"nccl" in text.lower(), may_offer):
        kept |= backend_options_kept(FileScan(tree, data), frozenset(name for name, _ in foreign_backends))
    return frozenset(kept)


def scripts_with_own_option(entries: Iterable[Entry], flag: str) -> FrozenSet[str]:
    """The Python files (as Entry.relative writes them) that declare the command-line option `flag`
    themselves (`parser.add_argument("--tf32", ...)`): a launch script's `--tf32 True` given to one
    is that script's own option, not transformers' (HfArgumentParser's, which raises without CUDA).
    Read only where a launch script of the tree passes `flag` at all."""
    word = flag.encode()
    return frozenset(
        entry.relative for entry, _, tree in _python_read_for(
            entries, lambda text: word in text, lambda data: word in data and b"add_argument" in data)
        if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
               and any(isinstance(arg, ast.Constant) and arg.value == flag for arg in node.args)
               for node in ast.walk(tree)))


def _python_read_for(entries: Iterable[Entry], in_a_script: Callable[[bytes], bool],
                     may_hold: Callable[[bytes], bool]) -> Iterator[Tuple[Entry, bytes, ast.AST]]:
    """(entry, bytes, tree) of the project's Python files whose text `may_hold` what is looked for,
    where a launch script of the tree passes it (`in_a_script` of the script's text): else none."""
    entries = list(entries)
    if not any(entry.kind == Kind.LAUNCH_SCRIPT and in_a_script(_bytes_of(entry)) for entry in entries):
        return
    for entry in entries:
        if entry.kind != Kind.PYTHON:
            continue
        data = _bytes_of(entry)
        if not may_hold(data):
            continue
        tree = parse(data)
        if tree is not None:
            yield entry, data, tree


def _bytes_of(entry: Entry) -> bytes:
    try:
        return entry.absolute.read_bytes()
    except OSError:
        return b""  # (the migration reports the file it cannot read)
