"""torch.compile (NPU905) and inductor settings (NPU928): what the default backend, a mode or a
setting does depends on the compiler backends the chosen torch_npu release registers; a setting
of torch's configuration modules that the release's torch does not declare raises (NPU903)."""
from __future__ import annotations

import ast
import re
from typing import Optional

from ...knowledge.apidata import ApiData, torch_setting_added_in
from ...records.change import Report
from ...records.finding_kinds import COMPILE, INDUCTOR_SETTING, NEWER_TORCH
from .view import FileView

TRIGGERS = (b"import compile", b"_inductor", b"_dynamo")

INDUCTOR_SETTING_TIPS = {
    "triton.cudagraphs": "captures CUDA graphs around compiled code; the NPU's graph capture is a separate "
    "backend",
    "coordinate_descent_tuning": "tunes Triton kernel launch parameters",
    "max_autotune": "benchmarks Triton/cuBLAS kernel choices",
}
_INDUCTOR_CONFIG = "torch._inductor.config."
# torch's configuration modules: each refuses a setting it does not declare
_CONFIG_MODULES = (_INDUCTOR_CONFIG, "torch._dynamo.config.")
# ... and what sets theirs by name: `config.patch(fx_graph_cache=True)`, `torch.compile(options={...})`
_CONFIG_PATCHES = frozenset(module + "patch" for module in _CONFIG_MODULES)
_REFUSED_BY = {"setting": "its configuration module raises AttributeError (\"... does not exist\") where the line runs",
               "patch": "the configuration module's patch raises KeyError where it takes effect",
               "option": "torch.compile raises RuntimeError (\"Unexpected optimization option\")"}
_MODEL_WORDS = re.compile(r"model|net|module|encoder|decoder|transformer|unet|vae|policy|backbone|layer", re.I)
_COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options", "disable"})


def might_be_in(data: bytes) -> bool:
    """`(?<!re)\\.compile\\b`: a `.compile` that is not `re.compile` and ends a word (a byte
    search and a look at its neighbours cost a fifth of the regular expression's search)."""
    at = data.find(b".compile")
    while at >= 0:
        end = at + len(b".compile")
        following = data[end:end + 1]
        if data[max(at - 2, 0):at] != b"re" and not (following.isalnum() or following == b"_"):
            return True
        at = data.find(b".compile", end)
    return False


def compile_tip(api: ApiData, call: Optional[ast.Call]) -> str:
    """What torch.compile(...) does on the NPU in `api`'s release, for this call's options."""
    keywords = {k.arg: k.value for k in (call.keywords if call is not None else ()) if k.arg}
    backend = keywords.get("backend")
    backend_name = backend.value if isinstance(backend, ast.Constant) and isinstance(backend.value, str) else None
    mode = keywords.get("mode")
    mode_name = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None
    backends = api.compile_backends
    release = f"torch_npu {api.torch_npu_version}"
    if backends is None:
        what = (f"the data of {release} does not record its torch.compile backends: check whether it has "
                "the 'npu' (torchair) backend")
    elif not backends:
        what = f"{release} has no torch.compile backend for the NPU: leave the model uncompiled"
    elif "inductor" in backends:
        what = (f"{release} ships an inductor code generator for the NPU (its kernels are Triton-Ascend's: "
                "install triton-ascend) and the dynamo backends " + ", ".join(repr(b) for b in backends if b != "inductor")
                + " ('npu' is torchair graph mode)")
    else:
        what = (f"{release} has no inductor code generator for the NPU: the default backend cannot compile for "
                "it; pass backend=" + " or ".join(repr(b) for b in backends) + " (torchair graph mode) or leave the "
                "model uncompiled")
    notes = []
    if backend_name is not None and backend_name not in (backends or ()) and backend_name != "inductor":
        notes.append(f"backend={backend_name!r} is not an NPU backend")
    does = []
    if mode_name in ("max-autotune", "max-autotune-no-cudagraphs"):
        does.append("autotunes Triton/cuBLAS kernels (inductor only)")
    if mode_name in ("reduce-overhead", "max-autotune"):
        does.append("captures CUDA graphs"
                    + (" (the NPU's graph capture is the backend 'npugraph_ex')" if "npugraph_ex" in (backends or ()) else ""))
    if does:
        notes.append(f"mode={mode_name!r} " + " and ".join(does))
    if "fullgraph" in keywords:
        notes.append("fullgraph is dynamo's and holds for every backend")
    return what + ("; " + "; ".join(notes) if notes else "")


# dynamo's backends that run the captured graph with torch's own operators, as the program ran
# without compiling: on any device, the NPU's included (torch._dynamo's debugging backends).
DEVICE_NEUTRAL_BACKENDS = frozenset({"eager", "aot_eager", "aot_eager_decomp_partition",
                                     "aot_eager_default_partitioner"})


def _runs_on_the_npu(api: ApiData, call: ast.Call) -> bool:
    """A compile call given one of the release's own NPU backends ('npu', 'npugraph_ex') or a
    backend that runs torch's operators as they are ('eager', 'aot_eager'), with no mode that asks
    for CUDA graphs or kernel autotuning."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    backend, mode = keywords.get("backend"), keywords.get("mode")
    named = backend.value if isinstance(backend, ast.Constant) and isinstance(backend.value, str) else None
    return (named is not None and named != "inductor"
            and (named in (api.compile_backends or ()) or named in DEVICE_NEUTRAL_BACKENDS)
            and (mode is None or isinstance(mode, ast.Constant) and mode.value in (None, "default")))


def inductor_tip(api: ApiData, setting: str) -> str:
    meaning = next((tip for key, tip in INDUCTOR_SETTING_TIPS.items() if setting == key or setting.startswith(key)),
                   "a setting of inductor's code generation")
    if "inductor" in (api.compile_backends or ()):
        where = (f"it applies on the NPU only where torch_npu {api.torch_npu_version}'s inductor for the "
                 "NPU (Triton-Ascend kernels) implements it")
    else:
        where = (f"torch_npu {api.torch_npu_version} has no inductor for the NPU, so it has no effect "
                 "there (the 'npu' backend is torchair's)")
    return f"inductor setting ({meaning}): {where}"


def _keys_set(mappings, keywords) -> list:
    """The settings' names written out in a dict literal of `mappings` (`{"fx_graph_cache": True}`,
    `patch("fx_graph_cache", True)`'s first string too) and in `keywords` (`patch(fx_graph_cache=True)`)."""
    keys = [keyword.arg for keyword in keywords if keyword.arg]
    for mapping in mappings:
        if isinstance(mapping, ast.Dict):
            keys += [key.value for key in mapping.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
        elif isinstance(mapping, ast.Constant) and isinstance(mapping.value, str):
            keys.append(mapping.value)
    return keys


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_reference(self, node: ast.AST) -> None:
        names = self.view.qualified(node)
        if "torch.compile" in names and not self.view.is_called(node):  # @torch.compile
            self.view.add(node, COMPILE.code, Report.UNSUPPORTED, "torch.compile", compile_tip(self.view.api, None))
            return
        setting = next((name for name in sorted(names) if name.startswith(_CONFIG_MODULES)), None)
        if setting is not None and self._newer_setting(node, setting):
            return
        if setting is not None and setting.startswith(_INDUCTOR_CONFIG) and setting not in _CONFIG_PATCHES:
            # (nothing to do either way: a note in the log, not a row of unsupported_api.csv; a
            # patch's settings are its call's)
            self.view.add(node, INDUCTOR_SETTING.code, Report.NOTE, setting,
                          inductor_tip(self.view.api, setting[len(_INDUCTOR_CONFIG):]))

    def _newer_setting(self, node: ast.AST, setting: str, how: str = "setting") -> bool:
        """A row for a setting that the torch of the release does not declare yet (NPU903): its
        configuration module refuses it where the line runs, at start for a module-level setting
        (gpt-fast's `torch._inductor.config.fx_graph_cache = True` under torch 2.1); `how` it is
        set: assigned or read ("setting"), by the module's patch, as torch.compile's option."""
        api = self.view.api
        added = torch_setting_added_in(setting, api.torch_version)
        if added is None or self.view.release_guarded(node.lineno):
            return False
        self.view.add(node, NEWER_TORCH.code, Report.UNSUPPORTED, setting,
                      f"torch {api.torch_version}, which torch_npu {api.torch_npu_version} is built for, does not "
                      f"have this setting (torch {added} has): {_REFUSED_BY[how]}; choose the -v of the project's "
                      "torch, or drop the setting")
        return True

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func)
        patched = next((name[:-len("patch")] for name in sorted(names) if name in _CONFIG_PATCHES), None)
        if patched is not None:
            for key in _keys_set(call.args[:1], call.keywords):
                self._newer_setting(call.func, patched + key, "patch")
        if _runs_on_the_npu(self.view.api, call):
            return  # (torch.compile(model, backend="npu"): the NPU way, nothing to do)
        if "torch.compile" in names:
            self.view.add(call.func, COMPILE.code, Report.UNSUPPORTED, "torch.compile", compile_tip(self.view.api, call))
        elif self._module_compile(call):
            self.view.add(call.func, COMPILE.code, Report.UNSUPPORTED, "Module.compile", compile_tip(self.view.api, call))
        else:
            return
        options = [keyword.value for keyword in call.keywords if keyword.arg == "options"]
        for key in _keys_set(options, ()):
            self._newer_setting(call.func, _INDUCTOR_CONFIG + key.replace("-", "_"), "option")

    def _imports_torch(self) -> bool:
        return any(target.split(".")[0] == "torch" for targets in self.view.imports.aliases.values() for target in targets)

    def _module_compile(self, call: ast.Call) -> bool:
        """`model.compile(...)`: torch.nn.Module.compile hands its arguments to torch.compile.  Told from
        `re.compile(pattern)` and Keras' `model.compile(optimizer=...)` by its arguments: none
        positional, keywords torch.compile's only; and by its receiver: an object, not a module."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "compile" and not call.args
                and all(k.arg in _COMPILE_KEYWORDS for k in call.keywords)
                and not self.view.qualified(func.value) and not self.view.qualified(func)
                and self._imports_torch()):
            return False
        # with no keyword, only a receiver named as a model is surely one (`template.compile()` is not)
        return bool(call.keywords) or _MODEL_WORDS.search(ast.unparse(func.value)) is not None
