#!/usr/bin/env python3
"""Refresh the `torch_npu` part of ``src/gpu2npu/data/dependencies.json`` from torch_npu wheels.

    python scripts/gen_dependency_data.py WHEEL_FOLDER

For every ``torch_npu-*.whl`` in WHEEL_FOLDER (``pip download --no-deps torch-npu==RELEASE``),
read as data, never imported:
  * ``requires``: the Requires-Dist lines of its METADATA, as written there (pip installs them
    with torch_npu);
  * ``undeclared``: third-party modules its own Python files import (in ten files or more, so
    not an optional helper) that its METADATA does not declare, torch does not install and the
    wheel does not carry itself:
    they must be in the project's requirements, or `import torch_npu` fails.
Releases without a wheel in the folder keep what the file has.  The package table (what happens
to each CUDA-only package) is written by hand in the same file and is not touched.
Output is sorted JSON without timestamps: reruns are byte-identical.
"""
from __future__ import annotations

import collections
import json
import re
import sys
import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "src" / "gpu2npu" / "data" / "dependencies.json"
# Installed with torch itself (its own Requires-Dist), or part of Python.
WITH_TORCH = {"torch", "torch_npu", "sympy", "typing_extensions", "filelock", "networkx", "jinja2", "fsspec",
              "setuptools"}
IMPORT = re.compile(r"^(?:import|from)\s+([A-Za-z_]\w*)", re.MULTILINE)
MIN_FILES = 10


def read_wheel(path: Path) -> tuple:
    with zipfile.ZipFile(path) as wheel:
        metadata = next(name for name in wheel.namelist() if name.endswith(".dist-info/METADATA"))
        text = wheel.read(metadata).decode("utf-8")
        release = re.search(r"^Version: (\S+)", text, re.MULTILINE).group(1)
        requires = [line[len("Requires-Dist:"):].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
        declared = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("-", "_") for r in requires}
        files_importing = collections.Counter()
        for name in wheel.namelist():
            if name.startswith("torch_npu/") and name.endswith(".py"):
                found = set(IMPORT.findall(wheel.read(name).decode("utf-8", "replace")))
                files_importing.update(found)
        stdlib = set(sys.stdlib_module_names)
        # packages the wheel carries itself (torch_npu/dynamo/torchair, imported as `torchair`)
        vendored = {name.split("/")[-2] for name in wheel.namelist() if name.endswith("/__init__.py") and "/" in name}
        undeclared = sorted(module for module, count in files_importing.items()
                            if count >= MIN_FILES and module not in stdlib and module.lower() not in declared
                            and module not in WITH_TORCH and module not in vendored)
    return release, {"requires": requires, "undeclared": undeclared}


def main() -> int:
    folder = Path(sys.argv[1])
    data = json.loads(DATA.read_text(encoding="utf-8"))
    for wheel in sorted(folder.glob("torch_npu-*.whl")):
        release, facts = read_wheel(wheel)
        data["torch_npu"][release] = facts
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
