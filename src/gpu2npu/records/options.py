"""What a run was asked to do, as the rules read it: the torch_npu release's API data and the
modes and options of the command line.

Kept apart from the rules (which are libcst transformers) so that the commands can build and
pass options without importing libcst: a re-run served by the cache never needs it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, NamedTuple, Optional, Tuple, Union

if TYPE_CHECKING:
    from ..knowledge.apidata import ApiData
    from .rule_file import CustomRules


@dataclass(frozen=True)
class DistributedSettings:
    """What `gpu2npu ... distributed` was asked to do."""

    main_file: str  # path of the entry file below the input root (POSIX style)
    target: str = "model"  # variable holding the model, dotted names allowed
    split_batch: bool = False  # divide training batch sizes by the number of processes
    project_initialises: bool = False  # some file already calls init_process_group
    main_spawns: bool = False  # the main file starts its own processes (torch.multiprocessing.spawn)
    # Checkpoints need a rank-0 guard: where gpu2npu adds the process group (the script had none).
    guard_saves: bool = False


@dataclass(frozen=True)
class SpecifyDeviceSettings:
    """What `-s/--specify-device` was asked to do: the NPU comes from DEVICE_ID at run time."""

    # Files that start a program (`if __name__ == "__main__":`): the device is set there, once.
    entry_files: FrozenSet[str] = frozenset()


class ProjectPins(NamedTuple):
    """The requirements the project pins on the libraries whose releases decide what runs on the
    NPU (the version clauses as written, ">=4.51,<4.54"; None: none found)."""

    transformers: Optional[str] = None
    bitsandbytes: Optional[str] = None
    accelerate: Optional[str] = None


@dataclass
class Options:
    """Run-wide choices that rules read."""

    api: ApiData
    distributed: Optional[DistributedSettings] = None
    specify_device: Optional[SpecifyDeviceSettings] = None
    custom_rules: Optional["CustomRules"] = None  # -r: the user's rules, run before the built-in ones
    modelarts: bool = False  # -m: file paths go through ModelArtsPathManager
    # `-a MODEL_VAR`: native AMP of this model becomes Ascend apex AMP (dotted names allowed).
    amp_model: Optional[str] = None
    # `-sim`: calls of unsupported APIs go to the generated ascend_function package.
    similar: bool = False
    # Whether to look for faster NPU APIs (affinity_api_call.csv, api_performance_advice.csv);
    # `check`, which never prints that advice, does not.
    advice: bool = True
    # `-api CSV`: a library's public APIs that reach unsupported code, (name, why), sorted; the
    # project's calls of them are reported (findings/affected_apis.py).
    third_party_apis: Tuple[Tuple[str, str], ...] = ()
    # The transformers requirement the project pins ("==4.45.0", ">=4.51,<4.54"; None: none found),
    # which decides whether its attn_implementation="flash_attention_2" runs on the NPU (NPU266).
    transformers: Optional[str] = None
    # The bitsandbytes requirement the project pins (None: none found), which decides whether
    # bitsandbytes' layers and transformers' quantized loading run on the NPU (0.47 and later:
    # knowledge.bitsandbytes_devices).
    bitsandbytes: Optional[str] = None
    # The accelerate requirement the project pins (None: none found): before 0.26 its
    # device_map="auto" counts no NPU (knowledge.accelerate_devices).
    accelerate: Optional[str] = None
    # The CUDA-only packages (top-level names) that are the project's own modules: run from the
    # project, its imports of them load its own code, which is migrated here, not the CUDA
    # package (migrating liger_kernel or flash-attn itself).  No row calls them CUDA-only and no
    # rule points them at a generated package (reading.own_packages).
    own_packages: FrozenSet[str] = frozenset()
    # Deeper in the tree, the folders whose files load a CUDA-only package's copy held there (a
    # vendored project, a package's own files): (folder as Entry.relative writes it, names),
    # found by the engine from the files it is given (reading.packages_held).
    packages_held: Tuple[Tuple[str, FrozenSet[str]], ...] = ()
    # The destinations of the project's command-line options whose "nccl" goes to a collective
    # library other than torch's (sync_backend), found by the engine from the Python files
    # (reading.project_options): launch scripts pass them as they did.
    backend_options_kept: FrozenSet[str] = frozenset()
    # The project's Python files that declare a `--tf32` option themselves (argparse): a launch
    # script's --tf32 given to one is no transformers option (reading.project_options).
    scripts_with_own_tf32: FrozenSet[str] = frozenset()
    # The top-level modules and packages the project's files make importable from its root (and
    # from src/), found by the engine from the files it is given (reading.project_modules): a
    # call of one of their functions is a call of code another of the project's files defines.
    project_modules: FrozenSet[str] = frozenset()
    # The folders of scripts below the root (no __init__.py) and the modules beside them, which a
    # script run from there imports as its own (reading.modules_beside): (folder, names).
    modules_beside: Tuple[Tuple[str, FrozenSet[str]], ...] = ()
    # The files of the project's own NPU backend (reading.npu_backend_files), as Entry.relative
    # writes them: their Triton kernels are written for Triton-Ascend.
    npu_backend_files: FrozenSet[str] = frozenset()
    # The project's GPU kernels and the module-level functions and classes that launch one, by
    # the qualified name its root imports them as, with the kernel each runs (`("pkg.ops.add",
    # "the Triton kernel _add_kernel")`), found by the engine (reading.kernel_launchers): a device
    # test around a call of one, in another of its files, guards CUDA-only code.
    kernel_launchers: Tuple[Tuple[str, str], ...] = ()
    # The operators the project's Python code registers (`torch.library.impl("proj::add", ...)`,
    # `op_name="add"`): `torch.ops.<ns>.<name>` of any other name is a compiled extension's, which
    # has no NPU kernel (reading.kernel_launchers).
    python_operators: FrozenSet[str] = frozenset()
    # The project's own device constants that it compares with "npu" (`DEVICE_TYPE == "npu"`): it
    # sets them to the NPU itself, so their tests against "cuda" ask for NVIDIA and stay
    # (reading.kernel_launchers.npu_constants, rules.npu_aware).
    npu_constants: FrozenSet[str] = frozenset()
    # The project's functions that a test asks before calling a launcher, in any of its files (`if
    # can_use_gemv(x, w): return gemv(x, w)`), with what that call launches: their own device tests
    # answer whether the kernel runs, and stay (reading.kernel_launchers, rules.device_guards).
    kernel_questions: Tuple[Tuple[str, str], ...] = ()
    # The names (their last part) that a file of the project hands to a collective library other
    # than torch's and none hands to torch's process groups, with that library (an RL trainer's
    # `weight_sync_backend`, declared in its config module, handed to Ray in its trainer): their
    # "nccl" stays in every file (reading.collective_backends, rules.nccl_backend).
    foreign_backends: Tuple[Tuple[str, str], ...] = ()
    # The parameters of the project's functions and classes that take one of its Enums' values
    # spelling a device, in any of its files: (callable's name, positional index or keyword, the
    # values) (`TimerType("cuda")`, a `timer_type: TimerType` parameter): the "cuda" handed there
    # is a member's value and stays (reading.enum_parameters, rules.names.not_a_device).
    enum_parameters: Tuple[Tuple[str, Union[int, str], Tuple[str, ...]], ...] = ()
    # The project's own pytest marks that a test gives "npu" (`@pytest.mark.runs_on(["cuda", "npu"])`):
    # its conftest selects tests by device with them, so a "cuda" given to one (`runs_on(["cuda"])`)
    # says the test is CUDA's only, and stays (reading.kernel_launchers.npu_marks_in).
    npu_marks: FrozenSet[str] = frozenset()
    # The environment variables that a file of the project reads and sets nowhere, with the first
    # such file: a CUDA or NCCL setting that has no effect on Ascend has one on that code, and stays
    # noted where it is set (reading.environment_reads).
    environment_reads: Tuple[Tuple[str, str], ...] = ()
    # The packages gpu2npu points at generated ones (knowledge.tips.REROUTED_PACKAGES) of which some
    # file of the project imports a part the generated package has not, with the names those files
    # ask of other modules: a probe whether the package is installed, in a function of one of those
    # names, answers for their code too, and stays (rules.reroute.ReroutePlan).
    reroute_kept: Tuple[Tuple[str, FrozenSet[str]], ...] = ()

    def project_modules_of(self, path: str) -> FrozenSet[str]:
        """The modules that the file at `path` (as Entry.relative writes it) imports as the
        project's: those of the root (and src/), and those beside it in a folder of scripts."""
        folder = path.rsplit("/", 1)[0] if "/" in path else None
        return self.project_modules | next((names for where, names in self.modules_beside if where == folder), frozenset())

    @property
    def pins(self) -> ProjectPins:
        return ProjectPins(self.transformers, self.bitsandbytes, self.accelerate)

    def own_packages_of(self, path: str) -> FrozenSet[str]:
        """The CUDA-only packages that the file at `path` (as Entry.relative writes it) loads
        from the project's own code."""
        own = self.own_packages
        for folder, names in self.packages_held:
            if path.startswith(folder + "/"):
                own = own | names
        if path in self.npu_backend_files:  # (its `triton` is Triton-Ascend, which runs on the NPU)
            own = own | {"triton"}
        return own

    @property
    def device_per_process(self) -> bool:
        """Each process uses one NPU, set at start-up: device expressions name no index."""
        return self.distributed is not None or self.specify_device is not None
