#!/usr/bin/env python3
"""Write src/gpu2npu/data/torch_ops.json: the ATen operators that need a device kernel, which of
them are also Tensor methods (and the most arguments each of those takes), and the names of
PyTorch's public Python API.

An operator that PyTorch implements once for every device (CompositeImplicitAutograd: no
dispatch entry; or CompositeExplicitAutograd) runs on an NPU through the operators it is made
of.  One with its own CUDA kernel (a `CUDA` dispatch key, or a structured kernel) needs an NPU
kernel too; whether torch_npu has one is in the per-version torch_npu_<v>.json files.  This list
is read from the `native_functions.yaml` that the torch wheel ships in `torchgen/packaged`
(the installed torch by default), never typed by hand.  The API names are those of the installed
torch's public modules (`dir()` of each module in API_MODULES, and every module path of the
package), so a `torch.*` call that is in none of them can be reported as unknown.

    python scripts/gen_torch_ops.py [--yaml PATH] [--check]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent.parent / "src" / "gpu2npu" / "data" / "torch_ops.json"
COMPOSITE = {"CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"}


def _installed_yaml() -> Path:
    import torchgen  # ships with the torch wheel

    return Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"


def _torch_version(path: Path) -> str:
    try:
        import torch

        return torch.__version__.split("+")[0]
    except ImportError:
        return "unknown"


def kernel_ops(entries) -> list:
    """Base names of operators with a dense CUDA (or structured) kernel and no composite form."""
    needs, composite = set(), set()
    for entry in entries:
        name = entry["func"].split("(")[0].split(".")[0]
        keys = set()
        for key in (entry.get("dispatch") or {}):
            keys.update(part.strip() for part in key.split(","))
        if "structured_delegate" in entry or entry.get("structured"):
            keys.add("CUDA")
        if not keys:
            keys.add("CompositeImplicitAutograd")
        if keys & COMPOSITE:
            composite.add(name)
        if "CUDA" in keys:
            needs.add(name)
    return sorted(needs - composite)


def method_ops(entries) -> list:
    """Base names of operators that are also Tensor methods (`variants: function, method`)."""
    names = set()
    for entry in entries:
        variants = {part.strip() for part in str(entry.get("variants", "function")).split(",")}
        if "method" in variants:
            names.add(entry["func"].split("(")[0].split(".")[0])
    return sorted(names)


def method_arguments(entries) -> dict:
    """For each Tensor method (method_ops) whose every method overload takes a fixed number of
    arguments, the most arguments besides `self` that one of them takes: a call with more is
    another class's method of that name (`.dequantize(dtype)` of a quantized weight's class, where
    torch's takes none).  A method with a list of ints (`view(*size)`) takes them one by one too:
    it has no such bound, and is left out."""
    most: dict = {}
    unbounded = set()
    for entry in entries:
        variants = {part.strip() for part in str(entry.get("variants", "function")).split(",")}
        if "method" in variants:
            name = entry["func"].split("(")[0].split(".")[0]
            parameters = [part for part in _schema_parameters(entry["func"]) if part != "*"]
            if any(_INT_LIST.match(part) for part in parameters):
                unbounded.add(name)
            count = len([part for part in parameters if part.split()[-1] != "self"])
            most[name] = max(most.get(name, 0), count)
    return {name: count for name, count in sorted(most.items()) if name not in unbounded}


_INT_LIST = re.compile(r"(Sym)?[Ii]nt\[")


def _schema_parameters(func: str) -> list:
    """The parameters of an operator's schema (`name.overload(Tensor self, int[2] k=[1, 1]) -> T`),
    as written, split at the commas outside brackets (a type's alias set `Tensor(a!)` included)."""
    start = func.index("(")
    depth, parts, current = 0, [], ""
    for char in func[start + 1:]:
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


# Public modules whose names are listed one by one; deeper modules are known by path only.
API_MODULES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils", "torch.nn.parallel",
    "torch.linalg", "torch.fft", "torch.special", "torch.distributed", "torch.optim",
    "torch.optim.lr_scheduler", "torch.utils", "torch.utils.data", "torch.utils.checkpoint", "torch.amp",
    "torch.autograd", "torch.distributions", "torch.backends", "torch.testing", "torch.hub", "torch.jit",
    "torch.onnx", "torch.profiler", "torch.multiprocessing", "torch.random", "torch.overrides",
)


def public_api() -> dict:
    import importlib
    import pkgutil
    import warnings

    import torch

    warnings.simplefilter("ignore")  # deprecation notices of torch's own modules while walking them
    modules = sorted(
        info.name for info in pkgutil.walk_packages(torch.__path__, "torch.", onerror=lambda name: None)
        if ".test" not in info.name and "._" not in info.name
    )
    names = {}
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        names[module_name] = sorted(n for n in dir(module) if not n.startswith("_"))
    return {"modules": ["torch", *modules], "names": names}


def build(yaml_path: Path) -> str:
    raw = yaml_path.read_bytes()
    entries = yaml.safe_load(raw)
    data = {
        "torch_version": _torch_version(yaml_path),
        "source": "torchgen/packaged/ATen/native/native_functions.yaml",
        "sha256": hashlib.sha256(raw).hexdigest(),
        "kernel_ops": kernel_ops(entries),
        "method_ops": method_ops(entries),
        "method_arguments": method_arguments(entries),
        "api": public_api(),
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--yaml", type=Path, default=None, help="native_functions.yaml (default: installed torch's)")
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    text = build(args.yaml or _installed_yaml())
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print("OK: torch_ops.json is up to date" if same else "DIFFERENT: rerun without --check")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
