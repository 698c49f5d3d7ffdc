"""`-s`: the device chosen once per program from DEVICE_ID, in the files that start a program
(for jobs started by a scheduler that sets DEVICE_ID per process)."""
from __future__ import annotations

import re
from pathlib import Path

from typing import Optional

from ..reading.discover import Kind, walk
from ..records.options import SpecifyDeviceSettings
from ..records.usage import UsageError
from .distributed import MAIN_GUARD, SPAWN_CALL, _read

# The device is set where the program starts: the entry files are migrated whole.
CUTS = False


def active(options) -> bool:
    return options.specify_device is not None


def settings(request, source: Path) -> Optional[SpecifyDeviceSettings]:
    """The entry files of -s (None without it; `distributed` sets the device of each process itself)."""
    if not request.specify_device or request.distributed is not None:
        return None
    return _specify_device(source)


def place(rules, options):
    from ..rules import SPECIFY_DEVICE_RULES

    return SPECIFY_DEVICE_RULES


def write(staging, target, options, result, logger):
    return []


def _specify_device(source: Path) -> SpecifyDeviceSettings:
    """-s sets the device once per program: in the files that start one and use a device (a
    data-preparation script with a `__main__` block of its own is no place to choose the NPU)."""
    python = [entry for entry in walk(source) if entry.kind == Kind.PYTHON]
    texts = {entry.relative: _read(entry) for entry in python}
    for relative, text in texts.items():
        spawn = SPAWN_CALL.search(text.decode("utf-8", "replace"))
        if spawn is not None:
            line = text[:spawn.start()].count(b"\n") + 1
            raise UsageError(
                f"-s: {relative} starts its worker processes itself (line {line}: {spawn.group(0)}...) and each "
                "worker selects its card from its index; with -s every worker would run on the one DEVICE_ID "
                "NPU. Migrate without -s: each worker then selects its own NPU from its index, as it did its GPU.")
    for relative, text in texts.items():
        per_process = PER_PROCESS_DEVICE.search(text)
        if per_process is not None:
            line = text[:per_process.start()].count(b"\n") + 1
            raise UsageError(
                f"-s: {relative} runs one process per card (line {line}: {_line_text(text, line)}; its rank "
                "is set by torchrun or a launcher) and each process selects its card from its rank; with -s every "
                "process would run on the one DEVICE_ID NPU. Migrate without -s (each process then selects its NPU "
                "from its rank, as it did its GPU).")
    imported = _imported_modules(texts)
    starts = [relative for relative, text in texts.items() if MAIN_GUARD.search(text)]
    entries = frozenset(relative for relative in starts if DEVICE_USE.search(texts[relative]))
    if not entries:  # scripts without a __main__ block: the top-level ones that use a device, and
        # that no other file imports (a model module beside the training script starts nothing)
        entries = frozenset(relative for relative, text in texts.items()
                            if "/" not in relative and DEVICE_USE.search(text) and relative[:-3] not in imported)
    return SpecifyDeviceSettings(entry_files=entries)


# What a program that picks a device mentions.
DEVICE_USE = re.compile(rb"cuda|\.to\(|device|set_device")
# What a program started once per card (torchrun, torch.distributed.launch, a launcher of its own)
# reads or hands on to choose its card: its local rank, or its rank where a device is chosen from
# it (`rank % torch.cuda.device_count()`, `set_device(rank)`, `device_ids=[rank]`, `f"cuda:{rank}"`).
PER_PROCESS_DEVICE = re.compile(rb"LOCAL_RANK|--local[_-]rank\b|(?i:rank)\w*(?:\(\))?\s*%\s*[\w.]*device_count\("
                                rb"|(?:set_device\(|device_ids\s*=\s*\[|cuda:\{)[^\n)\]}]*(?i:rank)")
_IMPORTS = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w., \t]+))", re.MULTILINE)


def _line_text(text: bytes, line: int) -> str:
    return text.splitlines()[line - 1].decode("utf-8", "replace").strip()


def _imported_modules(texts) -> set:
    """The top-level modules the files import by name (`from model import GPT`, `import utils`)."""
    names = set()
    for text in texts.values():
        for source, listed in _IMPORTS.findall(text):
            for name in ([source] if source else listed.split(b",")):
                name = name.strip().split()[0].lstrip(b".") if name.strip() else b""
                if name:  # (`from .model import GPT`: model, in a folder of the project)
                    names.add(name.split(b".")[0].decode())
    return names


def new_files(folder, options):
    return []
