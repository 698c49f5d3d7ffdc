"""A probe for a CUDA-only package by name (NPU913): `find_spec("flash_attn")` is None and
`importlib.metadata.version("flash-attn")` raises where the package is not installed, as on an
NPU machine; the code it guards then does not run, or the program stops."""
from __future__ import annotations

import ast
import re

from ...records.change import Report
from ...records.finding_kinds import PACKAGE_PROBE
from ...rules import REROUTING_RULES
from ...rules.reroute import probe_label
from .view import FileView

TRIGGERS = (b"find_spec", b"version(", b"get_distribution", b"RequirementCache")

# CUDA-only packages that gpu2npu can point at a generated package (the rerouting rules'), by the
# names a probe uses: module name -> generated package; distribution name -> module name
_GENERATED_FOR = {rule.ROOT: rule.PACKAGE for rule in REROUTING_RULES}
_MODULE_OF_DISTRIBUTION = {"flash-attn": "flash_attn", "flash_attn": "flash_attn", "xformers": "xformers",
                           "apex": "apex", "bitsandbytes": "bitsandbytes"}
# the generated packages that have a __version__ (the CUDA package's release they follow)
_VERSIONED = frozenset(rule.PACKAGE for rule in REROUTING_RULES if "__version__" in rule.PROVIDED.get(rule.ROOT, ()))
_VERSION_CALLS = ("importlib.metadata.version", "importlib_metadata.version", "pkg_resources.get_distribution")
# What catches the error of a version() of a package that is not installed (PackageNotFoundError is
# a ModuleNotFoundError; pkg_resources raises DistributionNotFound)
_CATCHING = ("PackageNotFoundError", "ModuleNotFoundError", "ImportError", "DistributionNotFound", "ResolutionError",
             "Exception", "BaseException")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def _asked_safely(self, call: ast.Call, module: str) -> bool:
        """Whether `call` cannot raise where `module` is absent: it runs only where a test that
        asks whether the package is there decided it (`version("bitsandbytes") if
        is_bitsandbytes_available() else ...`, or a variable set from one), or in a `try` that
        catches the error it raises."""
        tests = self.view.package_tests
        end = call.end_lineno or call.lineno
        return isinstance(tests.question(call.lineno, end, module), str) or tests.caught(call.lineno, end, _CATCHING)

    def on_call(self, call: ast.Call) -> None:
        names = self.view.qualified(call.func)
        if any(name.rsplit(".", 1)[-1] == "find_spec" for name in names):
            self._probe(call, spec=True)
        elif any(name in _VERSION_CALLS for name in names):
            self._probe(call, spec=False)
        elif any(name.rsplit(".", 1)[-1] == "RequirementCache" for name in names):
            self._probe(call, spec=False, truth=True)  # (Lightning's: true where the distribution is installed)

    def _probe(self, call: ast.Call, spec: bool, truth: bool = False) -> None:
        argument = call.args[0] if call.args else None
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            return
        name = argument.value
        module = name.split(".")[0] if spec else _MODULE_OF_DISTRIBUTION.get(re.split(r"[<>=!~ ;\[]", name)[0])
        package = _GENERATED_FOR.get(module or "")
        if package is None:
            return
        if spec:
            self.view.add(call, PACKAGE_PROBE.code, Report.UNSUPPORTED, probe_label(name),
                          f"{module} is not installed on an NPU machine: this is None there and the code it guards "
                          f"does not run; gpu2npu points the imports it can map at the generated {package} (and this "
                          f"probe too, in a file whose imports it points there): probe {package!r}, or test for the NPU")
        elif truth:
            self.view.add(call, PACKAGE_PROBE.code, Report.UNSUPPORTED, f"RequirementCache({name!r})",
                          f"{module} is not installed on an NPU machine: this is false there and the code it guards "
                          f"does not run (gpu2npu points the imports it can map at the generated {package}): test for "
                          f"{package!r} (importlib.util.find_spec), or for the NPU")
        elif self._asked_safely(call, module):
            return  # (`version("bitsandbytes") if is_bitsandbytes_available() else ...`: not asked where absent)
        else:
            instead = (f"the generated {package} has __version__, the {module} release whose signatures it follows: "
                       "read that, or guard the check" if package in _VERSIONED else "guard the check")
            self.view.add(call, PACKAGE_PROBE.code, Report.UNSUPPORTED, f"version({name!r})",
                          f"{module} is not installed on an NPU machine: this raises there (PackageNotFoundError / "
                          f"DistributionNotFound); {instead}")
