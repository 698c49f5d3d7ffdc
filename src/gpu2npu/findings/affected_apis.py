"""`-api CSV`: a library's affected public APIs (full_unsupported_results.csv of
`analyse -m third_party`, or any CSV with a `3rd-party API` column) fed into a migration,
`check` or `analyse -m torch_apis`, so that the project's own calls of them are reported with
the reason and the chain of calls that leads there."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from ..records.change import Finding, Report
from ..records.finding_kinds import THIRD_PARTY

API_COLUMN = "3rd-party API"
MAX_FILES = 100  # as many as the incumbent takes

AffectedApis = Tuple[Tuple[str, str], ...]  # (public API, why), sorted: part of the run's options


class ApiFileError(ValueError):
    """A -api file that cannot be used (the message names the file and what is wrong)."""


def read_api_files(paths: Sequence[Path]) -> AffectedApis:
    if len(paths) > MAX_FILES:
        raise ApiFileError(f"-api takes at most {MAX_FILES} files ({len(paths)} given)")
    apis: Dict[str, str] = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8-sig", newline="") as handle:
                reader = csv.DictReader(handle)
                if reader.fieldnames is None or API_COLUMN not in reader.fieldnames:
                    raise ApiFileError(f"-api {path}: no '{API_COLUMN}' column (found: "
                                       f"{', '.join(reader.fieldnames or []) or 'an empty file'})")
                for row in reader:
                    name = (row.get(API_COLUMN) or "").strip()
                    if not name:
                        continue
                    why = (row.get("Message") or "").strip() or "reaches code that cannot run on the NPU"
                    chain = (row.get("Call Chain") or "").strip()
                    apis.setdefault(name, f"{why} (call chain: {chain})" if chain else why)
        except OSError as error:
            raise ApiFileError(f"-api {path}: cannot be read ({error.strerror or error})") from None
        except (UnicodeDecodeError, csv.Error) as error:
            raise ApiFileError(f"-api {path}: not a UTF-8 CSV file ({error})") from None
    return tuple(sorted(apis.items()))


def affected_calls(file_scan, path: str, apis: AffectedApis) -> List[Finding]:
    """unsupported_api.csv rows for the calls of one file that name an affected library API
    through its imports (`from timm.layers import Mlp; Mlp(...)`, `timm.layers.Mlp(...)`)."""
    table = dict(apis)
    rows: List[Finding] = []
    for call in file_scan.calls:
        for name in sorted(file_scan.qualified(call.func)):
            why = table.get(name)
            if why is not None:
                func = call.func
                rows.append(Finding(path, func.lineno, func.end_lineno or func.lineno, Report.UNSUPPORTED, name,
                                    f"third-party API affected: {why}", THIRD_PARTY.code))
                break
    return rows
