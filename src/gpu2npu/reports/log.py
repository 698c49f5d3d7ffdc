"""msFmkTranspltlog.txt: the incumbent's run log format, rotated at 1 MiB, at most 10 backups."""
from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

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
