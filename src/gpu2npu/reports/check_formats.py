"""Renderings of `gpu2npu check` findings: text (one per line), JSON, SARIF 2.1.0.  The files it
could not check, or checked only in part, are in the JSON and SARIF too (`warnings`, the
invocation's notifications), as they are on stderr: a machine reading them learns what a person
reading the console does."""
from __future__ import annotations

import json
from typing import Dict, Sequence

from .. import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def as_text(findings: Sequence) -> str:
    return "".join(f"{f.path}:{f.start_line}: {f.rule} {f.message}\n" for f in findings)


def as_json(findings: Sequence, warnings: Sequence[str] = ()) -> str:
    rows = [
        {"path": f.path, "start_line": f.start_line, "end_line": f.end_line, "rule": f.rule,
         "level": f.level, "message": f.message}
        for f in findings
    ]
    return json.dumps({"findings": rows, "count": len(rows), "warnings": list(warnings)}, indent=2) + "\n"


def as_sarif(findings: Sequence, rules: Dict[str, object], warnings: Sequence[str] = (), succeeded: bool = True) -> str:
    """`rules`: code -> check.Description (its summary and help), for every code a result can carry;
    `succeeded`: whether every file could be looked at (SARIF's executionSuccessful)."""
    used = sorted({f.rule for f in findings} | set(rules))
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpu2npu",
                        "version": __version__,
                        "rules": [_rule(code, rules.get(code)) for code in used],
                    }
                },
                "results": [
                    {
                        "ruleId": f.rule,
                        "level": f.level,
                        "message": {"text": f.message},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": f.path},
                                    "region": {"startLine": max(f.start_line, 1), "endLine": max(f.end_line, f.start_line, 1)},
                                }
                            }
                        ],
                    }
                    for f in findings
                ],
                "invocations": [
                    {
                        "executionSuccessful": succeeded,
                        "toolExecutionNotifications": [
                            {"level": "warning", "message": {"text": text}} for text in warnings
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _rule(code: str, description) -> dict:
    if description is None:
        return {"id": code, "shortDescription": {"text": code}}
    return {"id": code, "shortDescription": {"text": description.summary},
            "fullDescription": {"text": description.help.split("\n\n")[0]},
            "help": {"text": description.help}}
