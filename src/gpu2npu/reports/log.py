"""msFmkTranspltlog.txt: the incumbent's run log format, rotated at 1 MiB, at most 10 backups."""
from __future__ import annotations

import logging
import re
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..records.change import Change, Finding, Report

LOG_NAME = "msFmkTranspltlog.txt"
LOG_FORMAT = "%(asctime)s [%(levelname)s] %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
MAX_BYTES = 1024 * 1024
BACKUPS = 10


def open_log(folder: Path, name: str = LOG_NAME) -> logging.Logger:
    logger = logging.getLogger(f"gpu2npu.run.{folder}.{name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = RotatingFileHandler(folder / name, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, DATE_FORMAT))
    logger.addHandler(handler)
    return logger


def close_log(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)


def change_line(change: Change) -> str:
    return (
        f"{change.file} line: {change.start_line} ~ {change.end_line} "
        f"Operation Type: {change.operation.value} Message: {change.message}"
    )


def finding_line(finding: Finding) -> str:
    kind = {Report.UNSUPPORTED: "UNSUPPORTED", Report.UNKNOWN: "UNKNOWN", Report.PERFORMANCE: "SUGGESTION",
            Report.AFFINITY: "SUGGESTION", Report.NOTE: "NOTE"}[finding.report]
    return (
        f"{finding.file} line: {finding.start_line} ~ {finding.end_line} "
        f"Operation Type: {kind} Message: {finding.api}: {finding.tip}"
    )


def header(version: str, source: Path, torch_version: str, torch_npu_version: str, target: Path) -> str:
    """The log's first line: what was migrated into what (a dry run reads it back: migration_of)."""
    return (f"gpu2npu {version}: migrating {source} for PyTorch {torch_version} (torch_npu {torch_npu_version}) "
            f"into {target}")


_HEADER = re.compile(r"\] gpu2npu \S+: migrating (?P<source>.+) for PyTorch \S+ \(torch_npu [^)]*\) into "
                     r"(?P<target>.+)$", re.MULTILINE)


def migration_of(folder: Path) -> Optional[Tuple[Path, Path]]:
    """(source, target) of the migration whose run log is in `folder`, or None.  The header is the
    first line of the log's oldest file: the log itself, or its last backup where it rotated."""
    for path in sorted(_log_files(folder), key=lambda path: -int(path.suffix[1:]) if path.suffix[1:].isdigit() else 0):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                found = _HEADER.search(handle.readline())
        except OSError:
            continue
        if found:
            return Path(found["source"]), Path(found["target"])
    return None


def _log_files(folder: Path) -> List[Path]:
    """The run log in `folder` and its rotated backups (msFmkTranspltlog.txt.1, ...)."""
    return [path for path in folder.glob(LOG_NAME + "*")
            if path.name == LOG_NAME or path.name[len(LOG_NAME) + 1:].isdigit()]


_NOTE_LINE = re.compile(r"\] (?P<file>.+) line: (?P<start>\d+) ~ (?P<end>\d+) Operation Type: NOTE Message: ")


def noted_spans(folder: Path) -> Dict[str, List[Tuple[int, int]]]:
    """file -> the line spans its NOTE rows name (code left as written on purpose; lines of the
    original file, as every row's), read from the run log in `folder` and its rotated backups;
    empty where there is none."""
    spans: Dict[str, List[Tuple[int, int]]] = {}
    for path in sorted(_log_files(folder)):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in _NOTE_LINE.finditer(text):
            spans.setdefault(match["file"], []).append((int(match["start"]), int(match["end"])))
    return spans
