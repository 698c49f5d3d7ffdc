"""After the rules: find every CUDA construct still in the migrated code and say why.

This is the safety net behind SPEC invariant 8: whatever the rules did not (or could not) change
is either reported here with a tip or is provably device-neutral (`torch.backends.cudnn` flags,
code inside constructs that already branch on NPU), which goes to the log as a note.  It reads
the final tree, so it reports exactly what the user gets.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from . import extension_builds, package_presence
from ..dependencies.table import load as dependency_table
from ..knowledge.apidata import ApiData, first_release_with_npu_inductor
from ..knowledge.bitsandbytes_devices import package_note
from ..knowledge.library_devices import library_device_api
from ..reading.kernel_launchers import COMPILED_OPERATOR
from ..reading.package_tests import PackageTests
from ..records.change import Finding, Report
from ..records.finding_kinds import (CUDA_API, CUDA_LEFTOVER, CUDA_ONLY_PACKAGE, DEAD_GUARD, EXTENSION_BUILD, FLASH_ATTN_ARGUMENTS,
                            FRAMEWORK_CUDA, GPU_KERNELS, KERNEL_LANGUAGE, LEFT_ON_PURPOSE, NVIDIA_TOOLS,
                            RAY_GPUS, FindingKind)
from ..rules import device_guards, flash_attn, npu_aware
from ..rules.device_guards import LIBRARY_DEVICE_CALL
from ..rules.cuda_api import PROPERTIES_TIP, lacking_arguments_tip
from ..rules.names import (DEVICE_STRING, FRAMEWORK_OPTIONS, ImportAliases, DocstringTracker, cuda_switch_of, dotted_name, enum_label,
                          arguments_the_npu_lacks, foreign_collective, framework_option, not_a_device,
                          of_a_properties_query_left, properties_query_stays, qualified_names, string_text,
                          top_level_statements)
from ..rules.ray_resources import gpu_requests, imports_ray, is_ray_call
from ..rules.base import code_of
from ..rules.tensor_cuda import torchs_cuda_takes
from ..rules.walk import ClassHooks, ParentNodeProvider, walk, walk_wrapped
from ..knowledge.tips import (CUDA_BUILD_STRING, CUDA_PROPERTY_FIELDS, KERNEL_DECORATORS, KERNEL_LANGUAGE_PACKAGES, KERNEL_PACKAGES, NVIDIA_MANAGEMENT_PACKAGES,
                              REDUCE_TENSOR, TIPS, ascend_backend_note, cuda_only_package, kernel_language, kernel_tip,
                              migratable_cuda_path, private_path, raised_by_torch_npu, tip_for)

DEVICE_NEUTRAL = ("torch.backends.cudnn", "torch.backends.cuda")
# The kernel languages, whose host-side calls only serve their kernels (grid sizes, autotuning
# configurations, compiling and launching one): the import and each kernel have the rows.  The rest
# of CUDA Python (`cuda.bindings`) is the CUDA runtime itself, each call of it a row.
KERNEL_LANGUAGES = tuple(dict.fromkeys(decorator.rsplit(".", 1)[0] if decorator.startswith("cuda.")
                                       else decorator.split(".")[0] for decorator in KERNEL_DECORATORS))
# The kind of a CUDA-only package's rows, where it is not CUDA_ONLY_PACKAGE's.
_PACKAGE_KINDS: Dict[str, FindingKind] = {
    **dict.fromkeys(KERNEL_LANGUAGE_PACKAGES, KERNEL_LANGUAGE),
    **dict.fromkeys(NVIDIA_MANAGEMENT_PACKAGES, NVIDIA_TOOLS),
}
# The kinds of a CUDA-only package's rows (package_presence turns them into notes where the package's
# presence was asked first).
_PACKAGE_ROWS = frozenset({CUDA_ONLY_PACKAGE, *_PACKAGE_KINDS.values()})
# A module's or a class's metadata, the dunders that describe it (reading them uses none of the
# package's kernels; `__init__`, `__call__` are its code).
_METADATA = frozenset({"__version__", "__file__", "__path__", "__name__", "__qualname__", "__module__", "__spec__",
                       "__doc__", "__package__", "__all__", "__author__", "__license__"})
_CALLS_SHOWN = 6  # the names an import row lists of the calls it stands for
REPORTED_TORCH_NAMES = tuple(key for key in TIPS if key.startswith("torch.") and not key.startswith("torch.cuda"))


class _PackageImport(NamedTuple):
    """The row of a CUDA-only package's import (its index in the findings) and the calls it lists."""

    row: int
    tip: str
    names: Tuple[str, ...]  # the qualified names the statement imports
    calls: List[str]  # the qualified names called, in the order of the file

    def imported(self, name: str) -> bool:
        return any(name == imported or name.startswith(imported + ".") for imported in self.names)


def _callee(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`triton.autotune` of `@triton.autotune(configs=...)`; the expression itself otherwise."""
    return expression.func if isinstance(expression, cst.Call) else expression


def _kernel_language(name: str) -> Optional[str]:
    """The kernel language (of KERNEL_LANGUAGES) that the qualified `name` belongs to, if any."""
    return next((language for language in KERNEL_LANGUAGES if name == language or name.startswith(language + ".")),
                None)


def _package_kind(name: str) -> FindingKind:
    """The kind of the row of a name of a CUDA-only package."""
    return _PACKAGE_KINDS.get(cuda_only_package(name), CUDA_ONLY_PACKAGE)


def _is_apex_amp(name: str) -> bool:
    return name == "apex.amp" or name.startswith("apex.amp.")


class CudaLeftovers(DocstringTracker, ClassHooks, cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, path: str, api: ApiData, context) -> None:
        cst.CSTVisitor.__init__(self)
        DocstringTracker.__init__(self)
        self.path = path
        self.api = api
        self.context = context
        self.findings: List[Finding] = []
        # -a: apex amp is what the user asked for (Ascend apex provides it), not a leftover.
        self.wants_apex_amp = context.options.amp_model is not None
        self.own = context.options.own_packages_of(path)  # the project's own modules named as CUDA-only packages
        self.npu_backend = path in context.options.npu_backend_files  # (its Triton is Triton-Ascend)
        self._languages_imported: Set[str] = set()  # the kernel languages whose import has its row
        self.reads_flash_attn = False  # the output imports the generated flash-attn package
        self._dead: List[cst.CSTNode] = []  # the dead-guarded nodes being visited (device_guards)
        self._dead_guards: List[Optional[device_guards.DeadGuard]] = []  # their guards (None: guarded code)
        # the functions being visited: [node, decorated as a Triton kernel, calls triton.language]
        self._functions: List[list] = []
        self.code: Optional[str] = None  # the output's text, where the caller has it
        self._tests: Optional[PackageTests] = None
        # package -> the rows of its imports, where its calls with the same advice are listed
        self._package_imports: Dict[str, List[_PackageImport]] = {}

    def _add(self, node: cst.CSTNode, kind, report: Report, api_name: str, tip: str,
             imported: Tuple[str, ...] = ()) -> None:
        """A row of `kind` (finding_kinds) about `node`; of an import, `imported` names what it
        imports (`api_name` alone where not given)."""
        span = self.get_metadata(PositionProvider, node)
        is_import = isinstance(node, (cst.Import, cst.ImportFrom))
        package = None
        if report == Report.UNSUPPORTED and kind in _PACKAGE_ROWS:
            package = cuda_only_package(api_name.split(" ")[0])
            note = ascend_backend_note(package, self.api) or (
                package_note(api_name.split(" ")[0], self.context.options.bitsandbytes, self.api.torch_version)
                if package == "bitsandbytes"
                else None)
            if note is not None:
                kind, report, tip = LEFT_ON_PURPOSE, Report.NOTE, note
            elif package:
                question = self._package_tests().question(span.start.line, span.end.line, package, is_import=is_import)
                if question is not False:
                    kind, report, tip = LEFT_ON_PURPOSE, Report.NOTE, package_presence.optional_tip(package, question, tip)
        if package and report == Report.UNSUPPORTED and kind == CUDA_ONLY_PACKAGE:
            imports = self._package_imports.setdefault(package, [])
            if is_import:
                imports.append(_PackageImport(len(self.findings), tip, imported or (api_name,), []))
            elif imports and "." not in package and tip == tip_for(package, self.api):
                # A call with no advice of its own, of a package that does not install on an NPU
                # machine (a part of one that does, DeepSpeed's or vLLM's, imports there: its calls
                # fail), where an import of it has its row: the package is replaced in the whole
                # file, and that row lists the call (the row of the statement that imports the name).
                same = [row for row in imports if row.tip == tip]
                if same:
                    next((row for row in same if row.imported(api_name)), same[0]).calls.append(api_name)
                    return
        self.findings.append(Finding(self.path, span.start.line, span.end.line, report, api_name, tip, kind.code))

    def _list_calls_in_import_rows(self) -> None:
        """Each import row of a CUDA-only package names the calls it stands for (by name: a line
        of the output is not always one of the input, in a notebook or a file migrated in pieces)."""
        for imported in (row for rows in self._package_imports.values() for row in rows):
            if imported.calls:
                names = list(dict.fromkeys(imported.calls))
                shown = ", ".join(names[:_CALLS_SHOWN]) + (f" and {len(names) - _CALLS_SHOWN} more"
                                                           if len(names) > _CALLS_SHOWN else "")
                row = self.findings[imported.row]
                self.findings[imported.row] = dataclasses.replace(row, tip=f"{row.tip} (called in this file: {shown})")

    # -- code that runs only where a CUDA-only package is installed (package_presence) ---------
    def _package_tests(self) -> PackageTests:
        """Where the output runs only after a package test (read from its text when first asked:
        most files have no CUDA-only package's row)."""
        if self._tests is None:
            self._tests = PackageTests.of_text(self.code if self.code is not None else self._module.code,
                                               lambda: top_level_statements(self._module))
        return self._tests

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.context.might_be_guarded(node):
            position = self.get_metadata(PositionProvider, node)
            key = self.context.lines_key(node, position.start.line, position.end.line)
            if key not in self.context.guarded_lines:
                return self.class_visit(node)
            if key in self.context.dead_guards_by_lines:
                # CUDA-only code behind a CUDA test: its CUDA-only names are still reported
                # (they are what the user must port), its device strings and .cuda() are not
                # (they never run on the NPU).
                guard = self.context.dead_guards_by_lines[key]
                if key in self.context.shared_guard_lines and not self._is_a_test(node):
                    guard = None  # the code the test beside it on its line guards
                if guard is not None:
                    self._add(node, DEAD_GUARD, Report.UNSUPPORTED, f"device test {guard.test}", dead_guard_tip(guard, self.api))
                self._dead.append(node)
                self._dead_guards.append(guard)
                return self.class_visit(node)
            part = self.context.cuda_implementations_by_lines.get(key)
            if part is not None:
                what = (f"{part.name} is" if not part.helper_of
                        else f"{part.name}, which {part.helper_of} calls, is part of" if part.called
                        else f"{part.name}, named for CUDA beside {part.helper_of}, is part of")
                self._add(node, LEFT_ON_PURPOSE, Report.NOTE, f"{'function' if part.helper_of else 'class'} {part.name}", (
                    f"left as written: {what} the framework's CUDA implementation of {part.interface}, "
                    "which it chooses where it finds CUDA and names \"cuda\" elsewhere; migrated alone, it would "
                    "answer for the NPU under CUDA's name. On an Ascend machine the framework needs its NPU "
                    "implementation (DeepSpeed's NPU_Accelerator, an Ascend plugin such as vllm-ascend)"))
            elif npu_aware.mentions_cuda(node):
                self._add(node, LEFT_ON_PURPOSE, Report.NOTE, npu_aware.NOTE_API, "left as written: it already selects between NPU and CUDA")
            return False
        return self.class_visit(node)

    def _is_a_test(self, node: cst.CSTNode) -> bool:
        """Whether `node` is the test of an `if` or a conditional expression."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        return isinstance(parent, (cst.If, cst.IfExp)) and parent.test is node

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._dead and self._dead[-1] is original_node:
            self._dead.pop()
            self._dead_guards.pop()
        self.class_leave(original_node)

    # -- imports ---------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._uses: Optional[Dict[str, Set[str]]] = None  # walked for when an import asks
        self._ray_requests: Set[cst.Dict] = set()

    def _name_uses(self) -> Dict[str, Set[str]]:
        if self._uses is None:
            uses = _NameUses()
            walk(uses, self._module)
            self._uses = uses.uses
        return self._uses

    def _metadata_only(self, local: str) -> bool:
        """Whether the module reads nothing of `local` but dunder metadata (`x.__version__` in an
        environment dump): importing a package to print its version uses none of its kernels."""
        return self._name_uses().get(local) == {"metadata"}

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                else full.split(".")[0]
            self._check_imported(node, full, local)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        module = dotted_name(node.module) or ""
        if isinstance(node.names, cst.ImportStar):
            self._check_imported(node, module, None)
            return False
        # One row for the names a statement imports from one CUDA-only package; it lists the
        # calls of them that have the same advice (_add), the others have rows of their own.
        grouped: List[str] = []
        for alias in node.names:
            imported = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                else imported
            name = f"{module}.{imported}"
            if cuda_only_package(name, self.own) is not None and not (self.wants_apex_amp and _is_apex_amp(name)):
                if self._metadata_only(local):
                    self._metadata_import(node, name, local)
                else:
                    grouped.append(imported)
                continue
            self._check_imported(node, name, local)
        if grouped:
            what = f"{module}.{grouped[0]}" if len(grouped) == 1 else f"{module} ({', '.join(grouped)})"
            # each name's own tip where it has one (FusedRMSNorm and FusedLayerNorm differ), once each
            tips = list(dict.fromkeys(tip_for(f"{module}.{name}", self.api) for name in grouped))
            self._add_import(node, _package_kind(f"{module}.{grouped[0]}"), f"{module}.{grouped[0]}", what,
                             tips[0] if len(tips) == 1
                             else "; ".join(f"{name}: {tip_for(f'{module}.{name}', self.api)}" for name in grouped),
                             tuple(f"{module}.{name}" for name in grouped))
        return False

    def _metadata_import(self, node: cst.CSTNode, name: str, local: str) -> None:
        """An import of a CUDA-only package whose metadata alone is read (`flash_attn.__version__` in
        an environment report): none of its kernels is used, but a package the migration takes out
        of the dependencies (data/dependencies.json: flash-attn, xformers, bitsandbytes...; not a
        part of one that installs, DeepSpeed's ops) is not installed there, so the import itself
        raises, unless a try expects that (then the row is a note, as for any optional import)."""
        package = cuda_only_package(name, self.own)
        rule = dependency_table().rule_for_import(package)
        if rule is None or rule.action != "remove":
            self._add(node, LEFT_ON_PURPOSE, Report.NOTE, name, "imported only to read its metadata: no CUDA kernel is used")
            return
        self._add(node, _package_kind(name), Report.UNSUPPORTED, name,
                  f"imported only to read its metadata (its version, its file...), but {package} is built for CUDA and "
                  "the migration takes it out of the project's dependencies, so on an Ascend machine the import raises "
                  "ModuleNotFoundError: import it in a try that expects ImportError, or leave it out")

    def _add_import(self, node: cst.CSTNode, kind: FindingKind, name: str, what: str, tip: str,
                    imported: Tuple[str, ...] = ()) -> None:
        """The row of an import of a CUDA-only package (`imported`: the names it imports, where
        more than `what`); a kernel language's once per file (`import triton` and `import
        triton.language as tl` say the same: each kernel has its own row)."""
        language = _kernel_language(name)
        if language is not None:  # (not the rest of CUDA Python: cuda.bindings is the runtime)
            if language in self._languages_imported or (language == "triton" and self.npu_backend):
                return  # (once per file; Triton in the project's NPU backend is Triton-Ascend)
            self._languages_imported.add(language)
        self._add(node, kind, Report.UNSUPPORTED, what, tip, imported)

    def _check_imported(self, node: cst.CSTNode, name: str, local: Optional[str]) -> None:
        package = cuda_only_package(name, self.own)
        if self.wants_apex_amp and _is_apex_amp(name):
            self._add(node, LEFT_ON_PURPOSE, Report.NOTE, name, "-a: needs Ascend apex installed (its amp API is NVIDIA apex's)")
        elif package is not None and local is not None and self._metadata_only(local):
            self._metadata_import(node, name, local)
        elif package is not None:
            self._add_import(node, _package_kind(name), name, name, tip_for(name, self.api))
        elif name.startswith("torch.cuda.") and not migratable_cuda_path(self.api, name.split(".")[2:]):
            self._add(node, CUDA_API, Report.UNSUPPORTED, name, tip_for(name, self.api))
        elif name.startswith(REPORTED_TORCH_NAMES):
            self._add(node, CUDA_API, Report.UNSUPPORTED, name, tip_for(name))

    # -- names and attributes ----------------------------------------------------------------
    def _is_chain_top(self, node: cst.CSTNode) -> bool:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        return not (isinstance(parent, cst.Attribute) and parent.value is node)

    def _call_of(self, node: cst.CSTNode) -> Optional[cst.Call]:
        """The call whose callee `node` is, if any."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        return parent if isinstance(parent, cst.Call) and parent.func is node else None

    def _is_called(self, node: cst.CSTNode) -> bool:
        return self._call_of(node) is not None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check_reference(node)
        # `torch.cuda`, `torch.backends.cuda`: modules, judged by name above; a tensor's or a
        # model's `.cuda` has no resolvable qualified name.
        # (torch's is_cuda is a property and cuda a method: `x.is_cuda()` is another class's method)
        attribute = node.attr.value
        as_torchs = ((attribute == "is_cuda" and not self._is_called(node))
                     or (attribute == "cuda" and self._is_called(node)))
        if not self._dead and as_torchs and not any(n.startswith("torch.") for n in qualified_names(self, node)):
            call = self._call_of(node)
            if call is not None and not torchs_cuda_takes(call):
                self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, f"{code_of(node.value)}.cuda", OTHER_CUDA_METHOD_TIP)
                return
            self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, f"Tensor.{node.attr.value}", "rewrite as .npu() / .is_npu")

    def visit_Name(self, node: cst.Name) -> None:
        self._check_reference(node)

    def _field_read_at_once(self, query: cst.CSTNode) -> bool:
        """Whether the properties that `query` (torch.cuda.get_device_properties) answers are read
        for a CUDA-only field in the same expression (`get_device_properties(0).major`): that
        field's row (NPU906) stands at the place and says what to do instead."""
        call = self.get_metadata(ParentNodeProvider, query, None)
        field = self.get_metadata(ParentNodeProvider, call, None) if isinstance(call, cst.Call) else None
        return (isinstance(field, cst.Attribute) and field.value is call
                and field.attr.value in CUDA_PROPERTY_FIELDS)

    def _arguments_the_npu_lacks(self, node: cst.CSTNode, name: str) -> List[str]:
        """What the call of `name` (a torch.cuda name torch_npu has) at `node` gives that torch_npu's
        counterpart lacks, where the migration left the call for that (arguments_the_npu_lacks)."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if not (isinstance(parent, cst.Call) and parent.func is node):
            return []
        return arguments_the_npu_lacks(parent, name.rsplit(".", 1)[-1], self.api.version_tuple)

    def _check_reference(self, node: cst.CSTNode) -> None:
        if not self._is_chain_top(node):
            return
        for name in sorted(qualified_names(self, node)):
            if name.startswith(DEVICE_NEUTRAL):
                self._add(node, LEFT_ON_PURPOSE, Report.NOTE, name, "left as is: CUDA backend setting, no effect on NPU")
                return
            if properties_query_stays(self, node, name):
                if not self._field_read_at_once(node):  # (else the field's row says it all, at this place)
                    self._add(node, CUDA_API, Report.UNSUPPORTED, name, PROPERTIES_TIP)
                return
            if name.startswith("torch.cuda."):
                migratable = migratable_cuda_path(self.api, name.split(".")[2:])
                lacking = self._arguments_the_npu_lacks(node, name) if migratable else []
                if lacking:
                    self._add(node, CUDA_API, Report.UNSUPPORTED, name, lacking_arguments_tip(name.rsplit(".", 1)[-1], lacking))
                elif not migratable and (note := raised_by_torch_npu(name, self.api)) is not None:
                    self._add(node, LEFT_ON_PURPOSE, Report.NOTE, name, note)
                elif not migratable and not self._in_test_guarding(name):
                    tip = TF32_TIP if name.endswith(".get_device_capability") and _gates_tf32(self, node) else None
                    self._add(node, CUDA_API, Report.UNSUPPORTED, name, tip or tip_for(name, self.api))
                return
            if name in extension_builds.BUILDERS:
                self._judge_extension_build(node, name)
                return
            if name.startswith(REPORTED_TORCH_NAMES) and (self._is_called(node) or "DataParallel" not in name):
                self._add(node, CUDA_API, Report.UNSUPPORTED, name, tip_for(name))
                return
            if name.startswith(device_guards.CUDA_ONLY_CLASSES):
                self._add(node, FRAMEWORK_CUDA, Report.UNSUPPORTED, name, "Lightning's CUDA accelerator: no NPU counterpart in Lightning; "
                          "count NPUs with torch_npu.npu.device_count()")
                return
            package = cuda_only_package(name, self.own)
            if package in KERNEL_PACKAGES and self._in_kernel(name, self._is_called(node)):
                return  # the kernel has its row: not one per tl.load of it
            if _kernel_language(name) is not None:
                return  # a launch helper (triton.cdiv, cute.compile): the import and each kernel have the rows
            if package is not None and not _METADATA.isdisjoint(name.split(".")):
                return  # (its kernels are CUDA, not its metadata: `trt.__version__.split(".")`)
            if package is not None and self._is_called(node) and not (self.wants_apex_amp and _is_apex_amp(name)):
                self._add(node, _package_kind(name), Report.UNSUPPORTED, name, tip_for(name, self.api))
                return

    def _in_test_guarding(self, name: str) -> bool:
        """Whether the reference is in a device test left as written for guarding `name`: the
        test's row names it, with its tip, at this place (in the code the test guards, it has a
        row of its own)."""
        return any(guard is not None and guard.guarded == name for guard in self._dead_guards)

    def _judge_extension_build(self, node: cst.CSTNode, name: str) -> None:
        """A run-time C++ extension build: a row where it builds CUDA code or may (see
        extension_builds); C++ sources alone build for the host and run on an Ascend machine."""
        build = extension_builds.build_of(name, self._call_of(node))
        if build == extension_builds.Build.CUDA:
            self._add(node, EXTENSION_BUILD, Report.UNSUPPORTED, name, extension_builds.CUDA_TIP[name])
        elif build == extension_builds.Build.UNDECIDED:
            self._add(node, EXTENSION_BUILD, Report.UNSUPPORTED, name, extension_builds.UNDECIDED_TIP[name])

    # -- kernels -----------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A kernel is one row, at its name: what must be rewritten, or ported to Triton-Ascend or
        Ascend C, is the kernel, not each of its hundred `tl.*` or `cute.*` calls.  hazards/gpu_kernels.py names
        the kernels of a kernel language's decorators (`@triton.jit`, `@cute.kernel`, `@ct.kernel`:
        tips.KERNEL_DECORATORS); a function that calls `triton.language` under a decorator of the
        project's own (`@_jit`, which calls triton.jit) is one too, named here once its body is read."""
        decorated = any(kernel_language(qualified_names(self, _callee(decorator.decorator))) is not None
                        for decorator in node.decorators)
        self._functions.append([node, decorated, False])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        node, decorated, calls_triton_language = self._functions.pop()
        if calls_triton_language and not decorated and not self._dead and not self.npu_backend:
            self._add(node.name, GPU_KERNELS, Report.UNSUPPORTED, f"Triton kernel {node.name.value}",
                      kernel_tip(node.name.value))

    def _in_kernel(self, name: str, called: bool) -> bool:
        """Whether `name` (of a kernel language's package) is used inside a kernel, which has its row.
        A function that calls triton.language (`tl.load(...)`) is a kernel; one that only reads its
        data types (`compute_type = tl.bfloat16`, handed to a launch) launches one, and has none."""
        if not self._functions:
            return False
        frame = self._functions[-1]
        if name.startswith("triton.language."):
            frame[2] = frame[2] or called
            return True
        return any(decorated for _, decorated, _ in self._functions)

    # -- other frameworks' GPU resources ------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        # Ray schedules by resource: `num_gpus` reserves CUDA GPUs, which an Ascend node has none of.
        if self.imports_ray and is_ray_call(self, node.func):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "num_gpus":
                    self._add(arg, RAY_GPUS, Report.UNSUPPORTED, "ray num_gpus", RAY_TIP)
            for request in gpu_requests(node):
                if request not in self._ray_requests:  # once, where Ray calls nest
                    self._ray_requests.add(request)
                    self._add(request, RAY_GPUS, Report.UNSUPPORTED, 'ray resource "GPU"', RAY_RESOURCE_TIP)
        if self.reads_flash_attn:
            refused = flash_attn.refused_arguments(node)
            names = [n for n in qualified_names(self, node.func) if n.startswith(flash_attn.PACKAGE + ".")] if refused else ()
            if names:
                function = "flash_attn." + sorted(names)[0].rsplit(".", 1)[-1]
                self._add(node, FLASH_ATTN_ARGUMENTS, Report.UNSUPPORTED, f"{function}({', '.join(refused)})",
                          f"{flash_attn.PACKAGE} raises NotImplementedError here: torch_npu.npu_fusion_attention "
                          "has no counterpart; " + "; ".join(flash_attn.REFUSED[r.split("=")[0]][1] for r in refused))

    # -- strings (documentation excluded: DocstringTracker) ------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.is_documentation(node) or self._dead:
            return
        text = string_text(node)
        if text is None:
            return
        if DEVICE_STRING.match(text) and (framework_option(self, node) or cuda_switch_of(self, node, self.api)
                                          or of_a_properties_query_left(self, node)):
            return  # reported by the rule that left it (NPU103), with the framework's reason
        if DEVICE_STRING.match(text) and not_a_device(self, node):
            return  # a key, a message or a label: nothing to do
        if DEVICE_STRING.match(text):
            self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, f"device string {text!r}", 'use "npu" devices on Ascend')
        elif text.startswith("torch.cuda.") and text.endswith("Tensor"):
            self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, f"tensor type {text!r}", "use the torch.npu tensor types on Ascend")
        elif (text.lower() == "nccl" or "cuda:nccl" in text) and not foreign_collective(self, node) and not enum_label(self, node):
            self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, f"backend {text!r}", 'use the "hccl" backend on Ascend')

    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        if self.is_documentation(node) or self._dead:
            return False
        first = node.parts[0] if node.parts else None
        if isinstance(first, cst.FormattedStringText) and first.value == "cuda:":
            self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, "device f-string 'cuda:{...}'", 'use "npu" devices on Ascend')
        elif (len(node.parts) == 1 and isinstance(first, cst.FormattedStringText) and DEVICE_STRING.match(first.value)
              and not framework_option(self, node)):
            self._add(node, CUDA_LEFTOVER, Report.UNSUPPORTED, f"device string f{first.value!r}", 'use "npu" devices on Ascend')
        return True


class _NameUses(cst.CSTVisitor):
    """How each name of a module is read: "metadata" (`x.__version__`) or "use" (anything else,
    `Optimizer2State.__init__(self, ...)` included)."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: Dict[str, Set[str]] = {}

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name):
            kind = "metadata" if node.attr.value in _METADATA else "use"
            self.uses.setdefault(node.value.value, set()).add(kind)
        else:
            node.value.visit(self)
        return False  # the attribute's own name is no variable

    def visit_Name(self, node: cst.Name) -> None:
        self.uses.setdefault(node.value, set()).add("use")


def dead_guard_tip(guard, api: ApiData) -> str:
    option = next((tip for name, _, tip in FRAMEWORK_OPTIONS if guard.guarded.startswith(f"{name}=")), None)
    if option is not None and guard.beside:
        return (f"left as written, as the same test beside it, which guards {guard.guarded}: {option}. As written, "
                "the framework runs on the CPU on the NPU machine (as on any machine without CUDA), and so does this "
                "setting; migrated alone, it would give the CPU run an NPU setting: "
                "choose the NPU in that framework, then test for the NPU in both")
    if option is not None:  # another framework's device option, left as written by the rules
        return (f"left as written: it guards {guard.guarded}: {option}. Migrated alone, the test would hand "
                "that framework a CUDA choice on the NPU; as written, this branch is not taken there (as on any "
                "machine without CUDA): choose the NPU in that framework, then test for the NPU")
    if guard.guarded.startswith(device_guards.CUDA_ONLY_DECLARED):
        message = guard.guarded[len(device_guards.CUDA_ONLY_DECLARED) + 2:]
        return (f"left as written: its message says that what it stops runs on CUDA only ({message}), so migrated, "
                "the NPU would pass the test into that code; as written, it stops there on the NPU with that message "
                "(as on any machine without CUDA): port what follows to the NPU, then test for the NPU")
    if guard.guarded == device_guards.GPU_NAME_SEARCH:
        return (f"left as written: it guards {guard.guarded}: the NPU's name (Ascend910B...) matches no entry, so "
                "migrated alone the search would raise on the NPU; as written, this branch is not taken there (as on "
                "any machine without CUDA): add the NPU's entries (torch_npu.npu.get_device_name() names them) or "
                "return a default where none matches, then test for the NPU")
    if guard.guarded == device_guards.GPU_NAME_LOOKUP:
        return (f"left as written: it guards {guard.guarded}: the NPU's name (Ascend910B...) is no key of it, so "
                "migrated alone the lookup would raise KeyError on the NPU; as written, this branch is not taken "
                "there (as on any machine without CUDA): add the NPU's entries (torch_npu.npu.get_device_name() "
                "names them) or look up with .get and a default, then test for the NPU")
    if guard.guarded.startswith(device_guards.CUDA_ONLY_FALLBACK):
        message = guard.guarded[len(device_guards.CUDA_ONLY_FALLBACK) + 2:]
        return (f"left as written: the message of its other branch says that what it guards needs CUDA ({message}), "
                "so migrated, the NPU would take that branch; as written, the NPU takes the other one and goes on, "
                "as on any machine without CUDA: port what it guards to the NPU, then test for the NPU")
    if guard.guarded.endswith(COMPILED_OPERATOR):
        return (f"left as written: it guards {guard.guarded}, built for CUDA, with no NPU kernel unless its library "
                "registers one, so on the NPU this branch is not taken and the code beside it runs there (as on any "
                "machine without CUDA): to run the operator on the NPU, register an NPU (PrivateUse1) kernel for it or "
                "write it with torch operators, then test for the NPU")
    if device_guards.guards_a_kernel(guard.guarded):
        return (f"left as written: it guards {guard.guarded}, compiled for CUDA, so on the NPU this branch is not "
                "taken and the code beside it runs there (as on any machine without CUDA): to run the kernel's work on "
                "the NPU, write it with torch operators or torch_npu's fused operators, or port the kernel to "
                "Triton-Ascend, then test for the NPU")
    if guard.guarded.endswith("()") and npu_aware.question_of_cuda(guard.guarded[:-2]):
        return (f"left as written: it guards {guard.guarded}, the project's own question about CUDA, which asks "
                "the CUDA device whatever the test around it asks; as written, this branch is not taken on the NPU "
                "(as on any machine without CUDA): to run it there, give the question an NPU counterpart, then test "
                "for the NPU")
    if guard.guarded == device_guards.SHARED_AS_CUDA:
        return (f"left as written: it guards {guard.guarded}: the handle of an NPU tensor is rebuilt by torch_npu's "
                "rebuild_npu_tensor (the function reduce_tensor returns with it), so migrated, an NPU tensor's handle "
                "would reach rebuild_cuda_tensor, which makes CUDA storage; as written, the NPU takes the other branch "
                "(as on any machine without CUDA): to share NPU tensors, rebuild with the function reduce_tensor "
                "returns, then test for the NPU")
    if guard.guarded == REDUCE_TENSOR:
        return (f"left as written: it guards {guard.guarded}, and torch_npu {api.torch_npu_version} cannot share NPU "
                "tensors between processes (it has no torch_npu.multiprocessing.reductions): as written, the NPU takes "
                "the other branch (as on any machine without CUDA): send the tensors through a collective or as CPU "
                "tensors, or choose a release that shares them, then test for the NPU")
    if guard.guarded == device_guards.NVIDIA_ONLY:
        return ("left as written: beside the device test it asks for NVIDIA's CUDA, not ROCm's (torch.version.hip is "
                "None), so what it enables was written for NVIDIA GPUs only (a CUDA graph step, a kernel's tuning): "
                "migrated, the NPU would take it; as written, the NPU takes the path other accelerators take: to use "
                "it on the NPU, check that it runs there, then test for the NPU")
    if f"({device_guards.INDUCTOR_COMPILED} " in guard.guarded:
        return (f"left as written: it chooses {guard.guarded}, so migrated the NPU would call the compiled function, "
                "whose first call fails there; as written, this branch is not taken on the NPU and the code beside it "
                "runs there (as on any machine without CUDA): for compiled code on the NPU pass backend='npu' "
                f"(torchair) or migrate with a -v whose torch_npu has inductor for the NPU "
                f"({first_release_with_npu_inductor()} and later, its kernels through triton-ascend), then test "
                "for the NPU")
    if guard.guarded.startswith("fused=True"):
        return (f"left as written: it chooses {guard.guarded} in torch_npu {api.torch_npu_version}, so migrated the "
                "NPU would take a fused update it has no kernel for; as written, this branch is not taken there and the "
                "optimizer runs unfused: for a fused update on the NPU use torch_npu.optim.NpuFusedAdamW (NpuFusedAdam, "
                "NpuFusedSGD), or a -v whose torch_npu has the kernel")
    if guard.guarded.startswith(device_guards.NVIDIA_MEDIA):
        named = guard.guarded[len(device_guards.NVIDIA_MEDIA) + 2:]
        return (f"left as written: what it guards names NVIDIA's video or image engines ({named}), which an Ascend "
                "machine has not, so migrated, the NPU would take that path; as written, the NPU does not reach it "
                "(as on any machine without CUDA): decode and encode on the CPU there (FFmpeg's software codecs, "
                "torchcodec with device=\"cpu\"), then test for the NPU")
    library = library_device_api(guard.guarded[:-len(LIBRARY_DEVICE_CALL)]) if guard.guarded.endswith(
        LIBRARY_DEVICE_CALL) else None
    if library is not None:
        return (f"left as written: it guards {guard.guarded}, which runs on the CPU and NVIDIA's GPUs only, so migrated "
                "the NPU would hand it the NPU's device, which it refuses or decodes on the CPU; as written, the NPU "
                "does not reach that call (as on any machine without CUDA): " + library[1])
    if CUDA_BUILD_STRING.match(guard.guarded):
        return (f"left as written: it chooses {guard.guarded!r}, another framework's CUDA build or provider, which "
                "does not run on an Ascend machine; as written, this branch is not taken there (as on any machine "
                "without CUDA) and the framework's CPU build is used: for the NPU use that framework's Ascend build "
                "(ONNX Runtime's CANNExecutionProvider, PaddlePaddle's NPU plugin), then test for the NPU")
    tip = TF32_TIP if guard.gates_tf32 else tip_for(guard.guarded, api)
    if guard.guarded.startswith("torch.cuda.") and private_path(guard.guarded[len("torch.cuda."):]):
        short = guard.guarded[len("torch.cuda."):]
        absent = (f"a private name, which gpu2npu's record of torch_npu {api.torch_npu_version} (public names only) "
                  "cannot confirm there")
        tip = (f"where the release's torch_npu/npu sources define torch_npu.npu.{short} (torch_npu mirrors many of "
               "torch.cuda's private helpers), call it under that name")
    elif guard.guarded.startswith("torch.cuda.") and api.npu_has(guard.guarded.split(".")[2:]):
        absent = f"whose torch_npu.npu form in torch_npu {api.torch_npu_version} does not answer as CUDA's does"
    else:
        absent = f"which has no NPU form in torch_npu {api.torch_npu_version}"
    return (f"left as written: it guards {guard.guarded}, {absent}, so on the NPU this branch is not taken (as on any "
            f"machine without CUDA); to use it there: {tip}, then test for the NPU")


OTHER_CUDA_METHOD_TIP = ("another class's method cuda, called with arguments torch's Tensor.cuda and Module.cuda do "
                        "not take (HQQ's Quantizer.cuda(qtensor, meta=...)): left as written, as it has no npu of the "
                        "same name; move what it holds with that class's own way to the NPU, or .to(the NPU device)")

RAY_TIP = ("Ray counts Ascend NPUs as the resource \"NPU\", not as GPUs: ask for resources={\"NPU\": N} "
           "instead of num_gpus=N (Ray then sets ASCEND_RT_VISIBLE_DEVICES for the task); gpu2npu does so (NPU110) "
           "where the call passes neither resources= nor **kwargs: add \"NPU\" to this one's resources")

RAY_RESOURCE_TIP = ("Ray counts Ascend NPUs as the resource \"NPU\": a request for \"GPU\" waits for devices an "
                    "Ascend node has none of; ask for \"NPU\" (gpu2npu does so in placement_group bundles written "
                    "out as dicts); Ray Train's ScalingConfig: use_gpu=False with resources_per_worker={\"NPU\": 1}")

# A capability check that only decides TF32 is no question of bf16 support.
TF32_TIP = ("TF32 does not exist on the NPU and needs no capability check: its counterpart is HF32, "
            "torch_npu.npu.matmul.allow_hf32 / torch_npu.npu.conv.allow_hf32")


def _gates_tf32(visitor: "CudaLeftovers", node: cst.CSTNode) -> bool:
    """Whether `node` stands in the test of an `if` (or the statement) that sets allow_tf32 (or,
    once NPU108 has rewritten it, allow_hf32)."""
    current = node
    while current is not None:
        parent = visitor.get_metadata(ParentNodeProvider, current, None)
        if isinstance(parent, cst.If) and parent.test is current:
            return _sets_tf32(cst.Module(body=()).code_for_node(parent.body))
        if isinstance(parent, cst.BaseStatement):
            return _sets_tf32(cst.Module(body=()).code_for_node(parent))
        current = parent
    return False


def _sets_tf32(code: str) -> bool:
    return "allow_tf32" in code or "allow_hf32" in code


def find_leftovers(wrapper: MetadataWrapper, path: str, api: ApiData, context, scopes=None,
                   code: Optional[str] = None) -> List[Finding]:
    """`context` (a FileContext) tells which nodes are left as written on purpose (NPU-aware);
    `scopes` what the names of the output stand for where they are read (scopes.Scopes); `code`
    the output's text."""
    visitor = CudaLeftovers(path, api, context)
    visitor.code = code
    visitor.import_aliases = ImportAliases.of(wrapper.module)  # of the output: its imports changed
    visitor.scopes = scopes
    visitor.reads_likely_modules = True  # (a report, never an edit)
    visitor.reads_flash_attn = any(flash_attn.PACKAGE in name for names in visitor.import_aliases.values()
                                   for name in names)
    visitor.imports_ray = imports_ray(visitor)
    walk_wrapped(visitor, wrapper)
    visitor._list_calls_in_import_rows()
    return visitor.findings
