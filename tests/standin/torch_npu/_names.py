"""Hide stand-in names that the real torch_npu does not have.

If ``STANDIN_TORCH_NPU_DATA`` names a JSON file of the form
``{"modules": {"torch_npu.npu": [names...], ...}}`` (the project's
``src/gpu2npu/data/torch_npu_<torch>.json``), every public name that a stand-in
module implements but the file does not list for that module is removed, so
accessing it raises AttributeError just like the real package.  Modules the
file does not mention, and names starting with "_", are left alone.  Without
the variable, everything implemented is exposed.
"""

import json
import os

_cache = {}
hidden = {}  # module name -> sorted list of names removed (for debugging/tests)


def _allowed(module_name):
    path = os.environ.get("STANDIN_TORCH_NPU_DATA")
    if not path:
        return None
    if path not in _cache:
        with open(path, encoding="utf-8") as f:
            _cache[path] = json.load(f).get("modules", {})
    names = _cache[path].get(module_name)
    return None if names is None else set(names)


def apply_filter(module_name, namespace):
    allowed = _allowed(module_name)
    if allowed is None:
        return
    drop = [n for n in list(namespace) if not n.startswith("_") and n not in allowed]
    for n in drop:
        del namespace[n]
    if "__all__" in namespace:
        namespace["__all__"] = [n for n in namespace["__all__"] if n in allowed]
    hidden[module_name] = sorted(drop)
