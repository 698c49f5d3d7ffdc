#!/usr/bin/env python3
"""Generate ``src/gpu2npu/data/torch_npu_<torch_version>.json`` from torch_npu wheels.

What it does, per entry of ``PINNED`` below:

1. ``pip download --no-deps torch-npu==<release> --only-binary=:all:`` for the
   pinned wheel (CPython 3.11, x86_64; platform tags are taken from the pinned
   file name) into a cache dir, unless the file is already there.
2. Verifies the wheel's sha256 against the pinned value and checks that the
   wheel's METADATA pins the expected torch version.
3. WITHOUT importing torch_npu (that needs Ascend drivers), reads
   * its Python sources with ``ast`` (see "Public names" below), and
   * every ``npu_native_functions*.yaml`` in the wheel (they live in
     ``torch_npu/csrc/aten/``: ``npu_native_functions.yaml`` and
     ``npu_native_functions_by_codegen.yaml``).
4. Writes one JSON file per torch version with ``json.dump(indent=1,
   sort_keys=True)`` plus a trailing newline: no timestamps, so reruns are
   byte-identical.

The wheel is only read as data; nothing from it is copied besides API names.

Public names of a module ``M`` (no leading underscore), computed statically:
  * the strings of ``M.__all__`` (list/tuple literals, ``+=``, ``.extend``,
    ``.append`` with literals, and ``X.__all__`` of an imported torch_npu module);
  * names defined at module level (def, class, assignment targets), including
    inside module-level ``if``/``try``/``with`` blocks;
  * names imported at module level from torch_npu itself (relative imports or
    ``torch_npu.*``), except those from ``HELPER_MODULES`` (``pta_error``,
    ``ErrCode``, ``PathManager``, imported all over the code base).  ``from .x import *`` is resolved to ``x.__all__`` when
    statically known, else to x's public names (Python's own rule).  Names
    imported from outside torch_npu (``typing``, ``os``, ``torch``...) are
    implementation details and are left out unless ``__all__`` lists them;
  * for a package, its public submodules/subpackages (e.g. ``amp``).

Modules reported: ``torch_npu.npu`` and every public submodule below it
(recursively), ``torch_npu.profiler``, ``torch_npu.distributed``, ``torch_npu.contrib``
with its ``function`` and ``module`` packages (fused replacements that the affinity advice
names) and ``torch_npu.optim`` (the fused optimizers).  ``optimizer_signatures`` holds the
``__init__`` parameter names of each torch_npu.optim class (``**name`` for a ``**kwargs``).
``compile_backends`` names what ``torch.compile`` can use on the NPU (see ``compile_backends``).

YAML: ``native_functions`` are the aten base names (overload suffix stripped)
of every list section except ``custom`` and ``symint`` (i.e. ``supported``,
``autograd``, ``quant``); ``custom_functions`` are the base names of the
``custom`` section (torch_npu-specific ops such as ``npu_fusion_attention``).
``symint`` only re-lists names of the other sections (SymInt signatures), so
it adds no names.  ``yaml_sections`` records, per yaml path inside the wheel,
which list sections exist.

Usage:
  python scripts/gen_api_data.py                  # all pinned and source-built versions
  python scripts/gen_api_data.py -v 1.11.0 -v 2.2.0 --ascend-pytorch-git DIR --op-plugin-git DIR
  python scripts/gen_api_data.py -v 2.1.0 -v 2.8.0
  python scripts/gen_api_data.py --cache-dir ~/.cache/torch_npu_wheels
  python scripts/gen_api_data.py --check          # regenerate to a temp dir,
                                                  # compare, exit 1 on diff
Requires pip and PyYAML (and git for the source-built versions).  Without --cache-dir each wheel is deleted after
it has been read.

Source mode (``SOURCE_RELEASES``): torch 1.11.0 and 2.2.0 have no torch_npu wheel on
PyPI, so their files are built from a git tag of the Ascend/pytorch sources instead, read
with ``git ls-tree`` / ``git cat-file`` from a local clone or mirror (``--ascend-pytorch-git``,
default ``$ASCEND_PYTORCH_GIT``); nothing is checked
out or built.  The same ``ast`` analysis runs over the tag's ``torch_npu/**.py``.  A wheel's
``npu_native_functions_by_codegen.yaml`` is made at build time by merging the tree's
``torch_npu/csrc/aten/npu_native_functions.yaml`` with the op-plugin submodule's
``op_plugin/config/v<major>r<minor>/op_plugin_functions.yaml``; source mode reads both
yamls, the second from the op-plugin commit that the tag's ``third_party/op-plugin``
gitlink names, in a clone of Ascend/op-plugin (``--op-plugin-git``, default
``$ASCEND_OP_PLUGIN_GIT``).  Op-plugin's
``official`` section is the build's ``supported``; ``custom_autograd`` ops are custom ones;
``tocpu`` (run on the CPU) and ``unsupported`` ops have no NPU kernel and are left out.
``torch_npu_version`` is the release the tag builds (``version.txt``, else ``VERSION`` in
``setup.py``); the record carries ``git_ref``, ``git_commit`` (pinned below and verified)
and ``op_plugin_commit`` instead of ``wheel`` and ``sha256``.  The tag chosen per line is
the newest release (not alpha) tag of that line: ``v6.0.rc2.1-pytorch1.11.0`` and
``v6.0.rc2.1-pytorch2.2.0`` (both 2024-09-23; later tags of these lines are alphas).
``--check`` skips these versions, saying so, when a clone is absent.

Updating the table: ``pip index versions torch-npu`` lists releases; pick the
newest release per torch version, ``pip download`` it as above and put its file
name and ``sha256sum`` here.  Notes on the current table: torch_npu has no
2.2.0 release on PyPI (so there is no torch 2.2.0 file); releases from 2.7.1 on
ship ``manylinux_2_28`` wheels only, older ones ``manylinux_2_17``.
"""

from __future__ import annotations

import argparse
import ast
import filecmp
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

# torch version -> (torch_npu release, wheel file name, sha256 of that wheel)
PINNED: dict[str, tuple[str, str, str]] = {
    "2.1.0": ("2.1.0.post17",
              "torch_npu-2.1.0.post17-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
              "f0e57c46321fe47e18a0b05115a1e3e38d0741ab67c800ed73de3850abe01083"),
    "2.3.1": ("2.3.1.post6",
              "torch_npu-2.3.1.post6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
              "a9828c330d10aae54cba68c18f42ab5d949df0f44a67adf14e586f913589e641"),
    "2.4.0": ("2.4.0.post4",
              "torch_npu-2.4.0.post4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
              "2981f78e47841d5612b2a94c23f8e7c76ef10d1ace9d36acc6a5a899d833896d"),
    "2.5.1": ("2.5.1.post1",
              "torch_npu-2.5.1.post1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
              "c0ee549621d905f4006b37d9e815fffa15b10cbda3bcdf364daeeb88cd9d21d2"),
    "2.6.0": ("2.6.0.post5",
              "torch_npu-2.6.0.post5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
              "dc35b413cb90fabba9042945793ffebd2d65e530712a3fbf148833b83fa1da48"),
    "2.7.1": ("2.7.1.post11",
              "torch_npu-2.7.1.post11-cp311-cp311-manylinux_2_28_x86_64.whl",
              "a5885ce98844ea2b92df7084ba1a2b411abf31bdfeac0ec12a88415499c181ad"),
    "2.8.0": ("2.8.0.post5",
              "torch_npu-2.8.0.post5-cp311-cp311-manylinux_2_28_x86_64.whl",
              "ae866d77780152cfbff83f9ebd7fe2aceba985949ceceedafca12c075231f3ea"),
    "2.9.0": ("2.9.0.post9",
              "torch_npu-2.9.0.post9-cp311-cp311-manylinux_2_28_x86_64.whl",
              "aac3e1b6a22755731fceceed502c3234cdf0b994c44a3bb1b165c6be7c52efd4"),
    "2.9.1": ("2.9.1",
              "torch_npu-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl",
              "e9161b177c3fae71c32ab76fc6ed441fb1ed80035da2e623840133f1540db7cd"),
    "2.10.0": ("2.10.0.post7",
               "torch_npu-2.10.0.post7-cp311-cp311-manylinux_2_28_x86_64.whl",
               "e30908176906d894199ab8eb6bb61b26c69768837125c69d028a1deb8b1f22f1"),
    "2.11.0": ("2.11.0.post3",
               "torch_npu-2.11.0.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
               "7489f67010989c56ed39deb6e25cb809c4d2cc99e7cc3426386e044c4ee8b55d"),
    "2.12.0": ("2.12.0.post3",
               "torch_npu-2.12.0.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
               "70776a5afc58c3291efb38bcce8a83284fb3285758bd4472b9d47841788a2be1"),
    "2.13.0": ("2.13.0",
               "torch_npu-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl",
               "0deb809cf447d3fce636ccfdc9c9f874950f1fe76f18f4aaab31e2d345f7dac0"),
    "2.14.0": ("2.14.0",
               "torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl",
               "7736f7d82cf9f16c7dfc4537f7e7c638153da760273a193455e70857f912189e"),
}

# torch version -> (git tag of Ascend/pytorch, the commit that tag names); see "Source mode".
SOURCE_RELEASES: dict[str, tuple[str, str]] = {
    "1.11.0": ("v6.0.rc2.1-pytorch1.11.0", "6a563e51082671ea66f6e4f9a0e1a4e9b9882ef7"),
    "2.2.0": ("v6.0.rc2.1-pytorch2.2.0", "fd9c67484b0e4841607dcb702ca501e691523d5c"),
}
# (no default location: where the clones are is the user's; without them the source-built files are
# not regenerated, and --check says so)
DEFAULT_PYTORCH_GIT = os.environ.get("ASCEND_PYTORCH_GIT", "")
DEFAULT_OP_PLUGIN_GIT = os.environ.get("ASCEND_OP_PLUGIN_GIT", "")
OP_PLUGIN_PATH = "third_party/op-plugin"

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "src" / "gpu2npu" / "data"
ROOT_PKG = "torch_npu"
# Packages reported on their own (only the package itself, no submodules); torch_npu.multiprocessing.reductions
# tells whether the release shares NPU tensors between processes (torch.multiprocessing on the NPU).
EXTRA_MODULES = ("torch_npu.profiler", "torch_npu.distributed", "torch_npu.contrib",
                 "torch_npu.contrib.function", "torch_npu.contrib.module", "torch_npu.optim",
                 "torch_npu.multiprocessing.reductions")
# Internal helper modules whose names, when imported elsewhere, are not API.
HELPER_MODULES = {"torch_npu.utils._error_code", "torch_npu.utils._path_manager"}
YAML_RE = re.compile(r"(^|/)npu_native_functions[^/]*\.ya?ml$")


# --------------------------------------------------------------------------
# Download and verify
# --------------------------------------------------------------------------

def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_wheel(release: str, filename: str, sha256: str, cache_dir: Path) -> Path:
    """Return the verified wheel in cache_dir, downloading it with pip if needed."""
    path = cache_dir / filename
    if not path.exists():
        # Wheel file name: name-version-pytag-abitag-platform(.platform)*.whl
        _name, _ver, pytag, _abi, plat = filename[:-len(".whl")].split("-")
        pyver = f"{pytag[2]}.{pytag[3:]}"  # cp311 -> 3.11
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
               f"torch-npu=={release}", "--only-binary=:all:",
               "--python-version", pyver, "--implementation", "cp", "-d", str(cache_dir)]
        for p in plat.split("."):
            cmd += ["--platform", p]
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
        if not path.exists():
            got = sorted(p.name for p in cache_dir.glob(f"torch_npu-{release}-*.whl"))
            raise SystemExit(f"pip did not produce {filename} (got {got})")
    digest = sha256_of(path)
    if digest != sha256:
        raise SystemExit(f"sha256 mismatch for {filename}: {digest} != pinned {sha256}")
    return path


def required_torch(zf: zipfile.ZipFile) -> str:
    """The torch version pinned by the wheel's METADATA (e.g. '2.1.0')."""
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    for line in zf.read(meta).decode("utf-8").splitlines():
        m = re.match(r"Requires-Dist:\s*torch\s*\(?\s*==\s*([0-9.]+?)(\.\*|\+\w+)?\s*\)?\s*$", line)
        if m:
            return m.group(1)
    return ""


# --------------------------------------------------------------------------
# Static analysis of the Python sources
# --------------------------------------------------------------------------

def is_public(name: str) -> bool:
    return not name.startswith("_")


class SourceTree:
    """The torch_npu Python sources of one wheel (or GitTree), analysed with ast only."""

    def __init__(self, zf: "zipfile.ZipFile | GitTree"):
        self.files: dict[str, str] = {}  # module name -> zip member
        self.packages: set[str] = set()
        for n in zf.namelist():
            if not (n.startswith(ROOT_PKG + "/") and n.endswith(".py")):
                continue
            parts = n[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
                self.packages.add(".".join(parts))
            self.files[".".join(parts)] = n
        self.zf = zf
        self._trees: dict[str, ast.Module] = {}
        self._public: dict[str, set[str]] = {}
        self._all: dict[str, set[str] | None] = {}
        self._busy: set[str] = set()  # recursion guard for import cycles

    # -- helpers -----------------------------------------------------------
    def tree(self, mod: str) -> ast.Module:
        if mod not in self._trees:
            src = self.zf.read(self.files[mod]).decode("utf-8", errors="replace")
            with warnings.catch_warnings():  # e.g. invalid escapes in torch_npu's docstrings
                warnings.simplefilter("ignore")
                self._trees[mod] = ast.parse(src, filename=self.files[mod])
        return self._trees[mod]

    def submodules(self, pkg: str) -> set[str]:
        """Direct submodule/subpackage names of a package."""
        prefix = pkg + "."
        return {m[len(prefix):] for m in self.files
                if m.startswith(prefix) and "." not in m[len(prefix):]}

    def resolve(self, mod: str, node: ast.ImportFrom) -> str | None:
        """Absolute module name of an ImportFrom, if it is inside torch_npu."""
        if node.level:
            base = mod if mod in self.packages else mod.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = base + ("." + node.module if node.module else "")
        else:
            target = node.module or ""
        if target == ROOT_PKG or target.startswith(ROOT_PKG + "."):
            return target
        return None

    @staticmethod
    def module_level(body):
        """Module-level statements, descending into if/try/with blocks only."""
        for stmt in body:
            yield stmt
            if isinstance(stmt, ast.If):
                yield from SourceTree.module_level(stmt.body + stmt.orelse)
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                handlers = [s for h in stmt.handlers for s in h.body]
                yield from SourceTree.module_level(stmt.body + handlers + stmt.orelse + stmt.finalbody)
            elif isinstance(stmt, ast.With):
                yield from SourceTree.module_level(stmt.body)

    def _strings(self, mod: str, node: ast.AST, aliases: dict[str, str]) -> set[str] | None:
        """Strings of a list/tuple literal, X.__all__, or a '+' of those."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return {e.value for e in node.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self._strings(mod, node.left, aliases)
            right = self._strings(mod, node.right, aliases)
            if left is not None and right is not None:
                return left | right
            return None
        if (isinstance(node, ast.Attribute) and node.attr == "__all__"
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            return self.exported(aliases[node.value.id])
        return None

    # -- analysis ----------------------------------------------------------
    def analyse(self, mod: str) -> None:
        if mod in self._public or mod in self._busy:
            return
        self._busy.add(mod)
        names: set[str] = set()
        all_: set[str] | None = None
        aliases: dict[str, str] = {}  # local name -> internal module it refers to
        for stmt in self.module_level(self.tree(mod).body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id != "__all__":
                            names.add(n.id)
                    if isinstance(t, ast.Name) and t.id == "__all__" and stmt.value is not None:
                        vals = self._strings(mod, stmt.value, aliases)
                        if isinstance(stmt, ast.AugAssign):
                            all_ = (all_ or set()) | (vals or set())
                        else:
                            all_ = vals if vals is not None else all_
            elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                  and isinstance(stmt.value.func, ast.Attribute)
                  and isinstance(stmt.value.func.value, ast.Name)
                  and stmt.value.func.value.id == "__all__"
                  and stmt.value.func.attr in ("append", "extend") and stmt.value.args):
                arg = stmt.value.args[0]
                if stmt.value.func.attr == "append":
                    arg = ast.List(elts=[arg])
                all_ = (all_ or set()) | (self._strings(mod, arg, aliases) or set())
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    internal = a.name == ROOT_PKG or a.name.startswith(ROOT_PKG + ".")
                    if a.asname and internal:
                        names.add(a.asname)
                        aliases[a.asname] = a.name
            elif isinstance(stmt, ast.ImportFrom):
                target = self.resolve(mod, stmt)
                if target is None:
                    continue
                # Error/path helpers (ErrCode, pta_error, PathManager...) imported
                # everywhere are not API: kept only if __all__ lists them.
                helper_src = target in HELPER_MODULES
                for a in stmt.names:
                    if a.name == "*":
                        if target in self.files:
                            names |= self.exported(target)
                        continue
                    local = a.asname or a.name
                    sub = f"{target}.{a.name}"
                    if sub in self.files:
                        aliases[local] = sub
                    if not helper_src:
                        names.add(local)
        if mod in self.packages:
            names |= self.submodules(mod)
        self._busy.discard(mod)
        self._all[mod] = all_
        self._public[mod] = {n for n in names | (all_ or set()) if is_public(n)}

    def exported(self, mod: str) -> set[str]:
        """What ``from mod import *`` binds: __all__ if static, else public names."""
        self.analyse(mod)
        if mod not in self._public:  # import cycle: nothing known yet
            return set()
        return set(self._all[mod]) if self._all[mod] is not None else set(self._public[mod])

    def public_names(self, mod: str) -> list[str]:
        self.analyse(mod)
        return sorted(self._public.get(mod, set()))


def modules_to_report(src: SourceTree) -> list[str]:
    mods = [m for m in src.files
            if (m == "torch_npu.npu" or m.startswith("torch_npu.npu."))
            and all(is_public(p) for p in m.split("."))]
    mods += [m for m in EXTRA_MODULES if m in src.files]
    return sorted(set(mods))


OPTIM_PACKAGE = "torch_npu.optim"


def optimizer_signatures(src: SourceTree) -> dict[str, list[str]]:
    """Parameter names of each public optimizer class's ``__init__`` in torch_npu.optim, so that
    advice can tell which keywords of a torch optimizer the fused one does not take."""
    public = set(src.public_names(OPTIM_PACKAGE)) if OPTIM_PACKAGE in src.files else set()
    signatures: dict[str, list[str]] = {}
    for mod in sorted(m for m in src.files if m.startswith(OPTIM_PACKAGE + ".")):
        for stmt in src.tree(mod).body:
            if not (isinstance(stmt, ast.ClassDef) and stmt.name in public):
                continue
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs][1:]
                    if args.kwarg is not None:
                        names.append("**" + args.kwarg.arg)
                    signatures[f"{OPTIM_PACKAGE}.{stmt.name}"] = names
    return signatures


def compile_backends(src: SourceTree) -> list[str]:
    """What ``torch.compile`` can use on the NPU in this release: the dynamo backends that
    torch_npu registers (``npu``: torchair graph mode, eager when torchair is absent;
    ``npugraph_ex``: NPU graphs) and ``inductor`` when the release ships an inductor code
    generator for the npu device (``torch_npu._inductor``, Triton-Ascend kernels)."""
    backends = set()
    if "torch_npu.dynamo" in src.files:
        for node in ast.walk(src.tree("torch_npu.dynamo")):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_register_npu_backend":
                backends.add("npu")
            if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "NPUGRAPH_EX_BACKEND" for t in node.targets)
                    and isinstance(node.value, ast.Constant)):
                backends.add(node.value.value)
    if "torch_npu._inductor" in src.files:
        backends.add("inductor")
    return sorted(backends)


# --------------------------------------------------------------------------
# npu_native_functions*.yaml
# --------------------------------------------------------------------------

def op_base_name(entry) -> str | None:
    """'add.Tensor' / {'func': 'npu_foo.out(Tensor x) -> Tensor'} -> 'add' / 'npu_foo'."""
    if isinstance(entry, dict):
        entry = entry.get("func")
    if not isinstance(entry, str):
        return None
    return entry.split("(", 1)[0].split(".", 1)[0].strip() or None


# Sections whose ops are torch_npu's own (``custom_autograd``: custom ops with a backward).
CUSTOM_SECTIONS = {"custom", "custom_autograd"}
# Sections that add no supported name: ``symint`` re-lists names of the other sections;
# op-plugin's ``tocpu`` ops run on the CPU and ``unsupported`` ones not at all.
NAMELESS_SECTIONS = {"symint", "tocpu", "unsupported"}


def read_yaml(zf: zipfile.ZipFile):
    members = sorted(n for n in zf.namelist() if YAML_RE.search(n))
    return yaml_names([(member, zf.read(member)) for member in members])


def yaml_names(documents: list[tuple[str, bytes]]):
    """(sections per document, native names, custom names) of (path, yaml text) pairs."""
    import yaml  # PyYAML; only the generator needs it
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    sections: dict[str, list[str]] = {}
    native: set[str] = set()
    custom: set[str] = set()
    for member, text in documents:
        doc = yaml.load(text, Loader=loader) or {}
        sections[member] = sorted(k for k, v in doc.items() if isinstance(v, list))
        for key in sections[member]:
            if key in NAMELESS_SECTIONS:
                continue
            dest = custom if key in CUSTOM_SECTIONS else native
            dest.update(n for n in map(op_base_name, doc[key]) if n)
    return sections, sorted(native), sorted(custom)


# --------------------------------------------------------------------------
# Source mode: a git commit of Ascend/pytorch read as data
# --------------------------------------------------------------------------

class GitTree:
    """The files of one commit of a git repository, read like a wheel (``namelist``/``read``)
    with ``git ls-tree``/``git cat-file``: no checkout, nothing built or run."""

    def __init__(self, git_dir: Path, commit: str):
        self.git_dir = git_dir
        self.commit = commit
        self._names: list[str] | None = None

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "-C", str(self.git_dir), *args],
                              check=True, capture_output=True).stdout

    def namelist(self) -> list[str]:
        if self._names is None:
            self._names = self._git("ls-tree", "-r", "--name-only", "-z", self.commit).decode().split("\0")[:-1]
        return self._names

    def read(self, name: str) -> bytes:
        return self._git("cat-file", "blob", f"{self.commit}:{name}")

    def gitlink(self, path: str) -> str:
        """The commit a submodule path points to."""
        mode, kind, sha = self._git("ls-tree", self.commit, path).decode().split("\t")[0].split()
        if kind != "commit":
            raise SystemExit(f"{path} is no submodule in {self.commit}")
        return sha


def resolve_commit(git_dir: Path, ref: str) -> str:
    done = subprocess.run(["git", "-C", str(git_dir), "rev-parse", "--verify", "--quiet", ref + "^{commit}"],
                          capture_output=True, text=True)
    return done.stdout.strip()


def source_release(tree: GitTree) -> str:
    """The torch_npu release a source tree builds: version.txt, else VERSION = '...' in setup.py."""
    if "version.txt" in tree.namelist():
        return tree.read("version.txt").decode().strip()
    for stmt in ast.parse(tree.read("setup.py")).body:
        if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "VERSION" for t in stmt.targets)
                and isinstance(stmt.value, ast.Constant)):
            return stmt.value.value
    raise SystemExit(f"no torch_npu version found in {tree.commit}")


def build_source_record(torch_version: str, pytorch_git: Path, op_plugin_git: Path) -> dict:
    ref, commit = SOURCE_RELEASES[torch_version]
    found = resolve_commit(pytorch_git, ref)
    if found != commit:
        raise SystemExit(f"{ref} in {pytorch_git} is {found or 'missing'}, table says {commit}")
    tree = GitTree(pytorch_git, commit)
    release = source_release(tree)
    if not release.startswith(torch_version):
        raise SystemExit(f"{ref} builds torch_npu {release!r}, not one for torch {torch_version}")
    src = SourceTree(tree)
    modules = {m: src.public_names(m) for m in modules_to_report(src)}
    signatures = optimizer_signatures(src)
    backends = compile_backends(src)
    plugin_commit = tree.gitlink(OP_PLUGIN_PATH)
    if not resolve_commit(op_plugin_git, plugin_commit):
        raise SystemExit(f"op-plugin commit {plugin_commit} (of {ref}) is not in {op_plugin_git}")
    plugin = GitTree(op_plugin_git, plugin_commit)
    major, minor = torch_version.split(".")[:2]
    plugin_yaml = f"op_plugin/config/v{major}r{minor}/op_plugin_functions.yaml"
    documents = [(member, tree.read(member)) for member in sorted(tree.namelist()) if YAML_RE.search(member)]
    documents.append((f"{OP_PLUGIN_PATH}/{plugin_yaml}", plugin.read(plugin_yaml)))
    sections, native, custom = yaml_names(documents)
    return {
        "torch_version": torch_version,
        "torch_npu_version": release,
        "git_ref": ref,
        "git_commit": commit,
        "op_plugin_commit": plugin_commit,
        "compile_backends": backends,
        "modules": modules,
        "native_functions": native,
        "custom_functions": custom,
        "optimizer_signatures": signatures,
        "yaml_sections": sections,
    }


def missing_clones(pytorch_git: Path, op_plugin_git: Path) -> list[str]:
    return [f"{what} clone at {path}" if str(path) not in ("", ".") else f"{what} clone given"
            for what, path in (("Ascend/pytorch", pytorch_git), ("Ascend/op-plugin", op_plugin_git))
            if str(path) in ("", ".") or subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"],
                                                        capture_output=True).returncode != 0]


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def build_record(torch_version: str, wheel: Path, sha256: str) -> dict:
    release = PINNED[torch_version][0]
    with zipfile.ZipFile(wheel) as zf:
        pinned_torch = required_torch(zf)
        if pinned_torch != torch_version:
            raise SystemExit(f"{wheel.name} requires torch {pinned_torch!r}, table says {torch_version}")
        src = SourceTree(zf)
        modules = {m: src.public_names(m) for m in modules_to_report(src)}
        signatures = optimizer_signatures(src)
        backends = compile_backends(src)
        sections, native, custom = read_yaml(zf)
    return {
        "torch_version": torch_version,
        "torch_npu_version": release,
        "wheel": wheel.name,
        "sha256": sha256,
        "compile_backends": backends,
        "modules": modules,
        "native_functions": native,
        "custom_functions": custom,
        "optimizer_signatures": signatures,
        "yaml_sections": sections,
    }


def write_json(record: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"torch_npu_{record['torch_version']}.json"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    return path


def generate(versions: list[str], out_dir: Path, cache_dir: Path | None,
             pytorch_git: Path = Path(DEFAULT_PYTORCH_GIT),
             op_plugin_git: Path = Path(DEFAULT_OP_PLUGIN_GIT)) -> list[Path]:
    written = []
    with tempfile.TemporaryDirectory(prefix="torch_npu_wheels_") as tmp:
        wheel_dir = cache_dir or Path(tmp)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        for tv in versions:
            if tv in SOURCE_RELEASES:
                written.append(write_json(build_source_record(tv, pytorch_git, op_plugin_git), out_dir))
                print(f"wrote {written[-1]}", file=sys.stderr)
                continue
            release, filename, sha = PINNED[tv]
            wheel = fetch_wheel(release, filename, sha, wheel_dir)
            try:
                written.append(write_json(build_record(tv, wheel, sha), out_dir))
                print(f"wrote {written[-1]}", file=sys.stderr)
            finally:
                if cache_dir is None:
                    wheel.unlink(missing_ok=True)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", "--torch-version", action="append", dest="versions",
                    help="torch version(s) to generate (default: all pinned and source-built)")
    ap.add_argument("--out-dir", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="keep downloaded wheels here (default: temp dir, deleted)")
    ap.add_argument("--ascend-pytorch-git", type=Path, default=Path(DEFAULT_PYTORCH_GIT),
                    help="git clone/mirror of Ascend/pytorch for the source-built versions "
                         "(default: $ASCEND_PYTORCH_GIT)")
    ap.add_argument("--op-plugin-git", type=Path, default=Path(DEFAULT_OP_PLUGIN_GIT),
                    help="git clone/mirror of Ascend/op-plugin (default: $ASCEND_OP_PLUGIN_GIT)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temp dir and compare with --out-dir; exit 1 on difference")
    args = ap.parse_args(argv)
    known = list(PINNED) + list(SOURCE_RELEASES)
    versions = args.versions or known
    unknown = [v for v in versions if v not in known]
    if unknown:
        ap.error(f"no pinned wheel or source tag for torch {unknown}; known: {', '.join(known)}")
    source_versions = [v for v in versions if v in SOURCE_RELEASES]
    missing = missing_clones(args.ascend_pytorch_git, args.op_plugin_git) if source_versions else []
    if missing and not args.check:
        ap.error(f"torch {', '.join(source_versions)} are built from sources and need a "
                 f"{' and a '.join(missing)} (--ascend-pytorch-git, --op-plugin-git)")
    if missing:
        print(f"SKIPPED torch {', '.join(source_versions)} (built from sources): no "
              f"{' and no '.join(missing)}; not checked", file=sys.stderr)
        versions = [v for v in versions if v not in SOURCE_RELEASES]
    if not args.check:
        generate(versions, args.out_dir, args.cache_dir, args.ascend_pytorch_git, args.op_plugin_git)
        return 0
    with tempfile.TemporaryDirectory(prefix="gen_api_data_check_") as tmp:
        fresh = generate(versions, Path(tmp), args.cache_dir, args.ascend_pytorch_git, args.op_plugin_git)
        bad = [p.name for p in fresh
               if not (args.out_dir / p.name).exists()
               or not filecmp.cmp(p, args.out_dir / p.name, shallow=False)]
    if bad:
        print("differs from committed data: " + ", ".join(bad), file=sys.stderr)
        return 1
    print(f"OK: {len(fresh)} file(s) identical", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
