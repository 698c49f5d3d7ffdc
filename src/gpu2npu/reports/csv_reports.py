"""The incumbent's CSV reports, with its exact headers (extra columns only after them)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Tuple

from ..records.change import Change, Finding, Report

CHANGE_LIST = "change_list.csv"
UNSUPPORTED = "unsupported_api.csv"
UNKNOWN = "unknown_api.csv"
CUDA_OPS = "cuda_op_list.csv"
PERFORMANCE = "api_performance_advice.csv"
AFFINITY = "affinity_api_call.csv"

CHANGE_COLUMNS = ["File", "Start Line", "End Line", "Operation Type", "Message", "Rule"]
# (the incumbent's five, then the row's code, as change_list.csv has: `gpu2npu explain CODE`)
FINDING_COLUMNS = ["File", "Start Line", "End Line", "OP", "Tips", "Rule"]
CUDA_OP_COLUMNS = ["File", "Api"]
# The incumbent's six columns, then what to check before replacing.
AFFINITY_COLUMNS = ["File", "Start Line", "End Line", "Api Type", "Api Call Name", "Affinity Api Name", "Tips"]

FINDING_FILES = {Report.UNSUPPORTED: UNSUPPORTED, Report.UNKNOWN: UNKNOWN, Report.PERFORMANCE: PERFORMANCE}
REPORT_NAMES = (CHANGE_LIST, UNSUPPORTED, UNKNOWN, CUDA_OPS, PERFORMANCE, AFFINITY)


def write_rows(path: Path, columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    # The csv module's minimal quoting, "\n" line ends, UTF-8: the incumbent's files (written by
    # pandas' to_csv, which uses the same writer), without a quarter of a second of pandas import.
    rows = list(rows)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    return len(rows)


def write_all(
    folder: Path,
    changes: Sequence[Change],
    findings: Sequence[Finding],
    cuda_ops: Sequence[Tuple[str, str]],
) -> Dict[str, int]:
    """Write every CSV report into `folder`; returns {file name: row count}."""
    counts = write_analysis(folder, changes, findings, cuda_ops)
    counts[AFFINITY] = write_affinity(folder, [f for f in findings if f.report == Report.AFFINITY])
    return counts


def write_analysis(
    folder: Path,
    changes: Sequence[Change],
    findings: Sequence[Finding],
    cuda_ops: Sequence[Tuple[str, str]],
) -> Dict[str, int]:
    """change_list.csv and the API reports (what `analyse -m torch_apis` writes)."""
    counts = {
        CHANGE_LIST: write_rows(
            folder / CHANGE_LIST,
            CHANGE_COLUMNS,
            ((c.file, c.start_line, c.end_line, c.operation.value, c.message, c.rule) for c in changes),
        )
    }
    for report, name in FINDING_FILES.items():
        rows: List[Tuple] = [(f.file, f.start_line, f.end_line, f.api, f.tip, f.rule) for f in findings
                             if f.report == report]
        counts[name] = write_rows(folder / name, FINDING_COLUMNS, rows)
    counts[CUDA_OPS] = write_rows(folder / CUDA_OPS, CUDA_OP_COLUMNS, cuda_ops)
    return counts


def write_affinity(folder: Path, findings: Sequence[Finding]) -> int:
    return write_rows(
        folder / AFFINITY,
        AFFINITY_COLUMNS,
        ((f.file, f.start_line, f.end_line, f.api_type, f.api, f.replacement, f.tip) for f in findings),
    )
