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

_cache = {}  # data file -> its contents
_operators = {}  # data file -> its release's public operators
hidden = {}  # module name -> sorted list of names removed (for debugging/tests)


def _data(path):
    """The release data file at `path`, read once."""
    if path not in _cache:
        with open(path, encoding="utf-8") as f:
            _cache[path] = json.load(f)
    return _cache[path]


def _allowed(module_name):
    path = os.environ.get("STANDIN_TORCH_NPU_DATA")
    if module_name == "torch_npu":  # (the data lists the package's operators, not its other names)
        path = path or _newest_data()
        return operators(path) if path else None
    if not path:
        return None
    names = _data(path).get("modules", {}).get(module_name)
    return None if names is None else set(names)


def operators(path):
    """The public operators of the release whose data file is `path`: torch_npu.npu_fusion_attention...
    (torch_npu binds every name of torch.ops.npu on itself)."""
    if path not in _operators:
        names = _data(path).get("custom_functions", ())
        _operators[path] = frozenset(name for name in names if not name.startswith("_"))
    return _operators[path]


def modules_of(package):
    """submodule name -> the names the release lists for it, for the submodules of `package` (without
    STANDIN_TORCH_NPU_DATA: those of the newest release gpu2npu has data for)."""
    path = os.environ.get("STANDIN_TORCH_NPU_DATA") or _newest_data()
    if not path:
        return {}
    prefix = package + "."
    return {name[len(prefix):]: list(names) for name, names in _data(path).get("modules", {}).items()
            if name.startswith(prefix) and "." not in name[len(prefix):]}


def _newest_data():
    found = _data_files()
    return found[-1] if found else None


def _data_files():
    """gpu2npu's data file of each release, oldest first."""
    import glob

    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "data")
    key = lambda path: tuple(int(part) for part in os.path.basename(path)[10:-5].split("."))  # noqa: E731
    return sorted(glob.glob(os.path.join(folder, "torch_npu_*.json")), key=key)


def _which_have(having):
    """`having` (releases, oldest first) in words."""
    if len(having) == 1:
        return f"torch_npu {having[0]} has it"
    every = [_data(path).get("torch_npu_version") for path in _data_files()]
    if having == every[len(every) - len(having):]:
        return f"torch_npu {having[0]} and later have it"
    return f"torch_npu {', '.join(having)} have it"


def _releases_with_operator(name):
    """The releases (oldest first) whose torch_npu has the operator `name`."""
    return [_data(path).get("torch_npu_version") for path in _data_files() if name in operators(path)]


def release():
    """The torch_npu release the names come from (as the data file says), or None."""
    path = os.environ.get("STANDIN_TORCH_NPU_DATA")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data.get("torch_npu_version")


def missing(module_name, name):
    """The AttributeError for `module.name`, told as the real package would fail, and recorded
    for gpu2npu dryrun's report when its probe is loaded."""
    import sys

    allowed = _allowed(module_name)
    if name in hidden.get(module_name, ()):
        kind, why = "missing", f"torch_npu {release() or ''} does not have it".replace("  ", " ")
    elif allowed is not None and name in allowed:
        from ._explained import why as explained

        kind = "not imitated"
        reason = explained(module_name, name)
        why = (f"torch_npu has it; the CPU imitation does not, as {reason}" if reason
               else "torch_npu has it, but gpu2npu dryrun's CPU imitation does not implement it")
    elif module_name == "torch_npu" and (having := _releases_with_operator(name)):
        kind = "missing"
        why = f"torch_npu {release() or ''} does not have it; {_which_have(having)}".replace("  ", " ")
    else:
        kind, why = "missing", "no torch_npu release has it"
    probe = sys.modules.get("gpu2npu_dryrun_probe")
    where = probe.record(kind, f"{module_name}.{name}") if probe is not None else None
    prefix = f"{where}: " if where else ""
    return AttributeError(f"{prefix}module '{module_name}' has no attribute '{name}' ({why}; CPU imitation of "
                          "torch_npu, gpu2npu dryrun)")


def apply_filter(module_name, namespace, made_when_asked=None, judged=None):
    """`judged`: the names the release's list decides (None: every public name).  `made_when_asked`:
    name -> a function that makes its value, for names too costly to make at import
    (ShardedGradScaler imports FSDP): made at the first use where the release has the name,
    missing as the release's other absent names are where it has not."""
    made_when_asked = made_when_asked or {}
    allowed = _allowed(module_name)

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in made_when_asked and (allowed is None or name in allowed):
            made = namespace[name] = made_when_asked[name]()
            return made
        raise missing(module_name, name)

    namespace["__getattr__"] = __getattr__
    if allowed is None:
        return
    drop = [n for n in list(namespace) if not n.startswith("_") and n not in allowed
            and (judged is None or n in judged)]
    for n in drop:
        del namespace[n]
    if "__all__" in namespace:
        namespace["__all__"] = [n for n in namespace["__all__"] if n in allowed]
    hidden[module_name] = sorted([*drop, *(n for n in made_when_asked if n not in allowed)])


def build_submodules(package_name, namespace, source):
    """The release's modules of `package_name` (torch_npu.npu.memory, torch_npu.npu.amp.grad_scaler,
    ...), each holding the names it lists that `source` (the module whose imitation they share)
    has; a listed name `source` makes when asked for is asked of it then, any other fails as a
    missing name does.  A submodule the package binds itself is left as it is."""
    for sub, names in modules_of(package_name).items():
        if sub in namespace:
            continue
        listed = frozenset(name for name in names if not name.startswith("_"))
        module_name = f"{package_name}.{sub}"

        def lookup(name, module_name=module_name):
            try:
                return getattr(source, name)
            except AttributeError:
                raise missing(module_name, name) from None

        module = namespace[sub] = _held_module(module_name, listed, lookup)
        module.__dict__.update({name: vars(source)[name] for name in listed if name in vars(source)})


def package_modules(package_name, namespace, submodules):
    """The release's modules of `package_name` that its data lists only as names of the package
    (torch_npu.contrib.function.iou, torch_npu.contrib.module.crossentropy): `submodules` maps
    each to the package's names it holds, which it gives as the package does (a name the package
    lacks fails there as here).  A module the release does not list is not made."""
    import sys

    allowed = _allowed(package_name)
    for sub, names in submodules.items():
        if allowed is None or sub in allowed:
            namespace[sub] = _held_module(f"{package_name}.{sub}", frozenset(names),
                                          lambda name: getattr(sys.modules[package_name], name))


def _held_module(module_name, held, lookup):
    """A module, registered in sys.modules, whose names `held` are `lookup(name)` when asked for;
    any other fails as a missing name does."""
    import sys
    import types

    module = types.ModuleType(module_name)

    def __getattr__(name):
        if name.startswith("__"):  # (import machinery and inspect asking for __path__, __wrapped__...)
            raise AttributeError(name)
        if name in held:
            return lookup(name)
        raise missing(module_name, name)

    module.__getattr__ = __getattr__
    sys.modules[module_name] = module
    return module
