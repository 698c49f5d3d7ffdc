"""-m/--modelarts: file paths the script reads or writes go through ModelArtsPathManager."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..outputs.modelarts_package import PACKAGE_NAME
from .base import Example, Rule, code_of
from .names import qualified_names
from .placement import after_imports, line_before, module_names, pair_with_originals

MANAGER = "ModelArtsPathManager"
IMPORT_LINE = f"from {PACKAGE_NAME} import {MANAGER}"
WRAPPER = f"{MANAGER}().get_path"

# The path arguments of the functions that open, list, copy or delete files, as (position,
# keyword) pairs (position None: keyword only).  Functions that only compose paths
# (os.path.join, dirname) are not here: their result is wrapped where it is used.  json and
# pickle read file objects, which the wrapped open() yields.
_FIRST = ((0, "path"),)
PATH_ARGUMENTS: Dict[str, Tuple[Tuple[Optional[int], str], ...]] = {
    "builtins.open": ((0, "file"),),
    "io.open": ((0, "file"),),
    **{f"os.{name}": _FIRST for name in ("listdir", "mkdir", "remove", "unlink", "rmdir", "scandir", "stat",
                                         "chmod", "removedirs")},
    "os.makedirs": ((0, "name"),),
    "os.walk": ((0, "top"),),
    "os.rename": ((0, "src"), (1, "dst")),
    "os.replace": ((0, "src"), (1, "dst")),
    **{f"os.path.{name}": _FIRST for name in ("exists", "lexists", "isfile", "isdir", "islink", "getsize",
                                              "getmtime", "getctime", "getatime")},
    **{f"shutil.{name}": ((0, "src"), (1, "dst")) for name in ("copy", "copy2", "copyfile", "copytree", "move")},
    "shutil.rmtree": ((0, "path"),),
    "glob.glob": ((0, "pathname"),),
    "glob.iglob": ((0, "pathname"),),
    "pathlib.Path": ((0, None),),
    **{f"numpy.{name}": ((0, "file"),) for name in ("load", "save", "savez", "savez_compressed", "fromfile")},
    **{f"numpy.{name}": ((0, "fname"),) for name in ("loadtxt", "savetxt", "genfromtxt")},
    "numpy.memmap": ((0, "filename"),),
    **{f"pandas.{name}": ((0, "filepath_or_buffer"),) for name in ("read_csv", "read_table", "read_json",
                                                                   "read_pickle")},
    **{f"pandas.{name}": _FIRST for name in ("read_parquet", "read_feather", "read_orc")},
    "pandas.read_excel": ((0, "io"),),
    "pandas.read_hdf": ((0, "path_or_buf"),),
    "PIL.Image.open": ((0, "fp"),),
    "cv2.imread": ((0, "filename"),),
    "cv2.imwrite": ((0, "filename"),),
    "torch.load": ((0, "f"),),
    "torch.save": ((1, "f"),),
    "torch.jit.load": ((0, "f"),),
    "torch.jit.save": ((1, "f"),),
    "torch.utils.tensorboard.SummaryWriter": ((0, "log_dir"),),
    "matplotlib.pyplot.savefig": ((0, "fname"),),
    "h5py.File": ((0, "name"),),
    "scipy.io.loadmat": ((0, "file_name"),),
    "scipy.io.savemat": ((0, "file_name"),),
}
# Every dataset class of torchvision takes its folder as `root`.
PATH_PREFIXES = {"torchvision.datasets.": ((0, "root"),)}
# Methods whose receiver cannot be resolved (a DataFrame, a Figure), named distinctly enough
# that another object's method of that name is unlikely; wrapping a non-path is harmless anyway
# (get_path returns anything that is not a mapped path unchanged).
PATH_METHODS = {
    **{name: ((0, "path_or_buf"),) for name in ("to_csv", "to_json", "to_hdf")},
    **{name: _FIRST for name in ("to_parquet", "to_pickle", "to_feather")},
    "to_excel": ((0, "excel_writer"),),
    "savefig": ((0, "fname"),),
}
# Arguments that are file objects, not paths: left alone.
FILE_OBJECTS = {"builtins.open", "io.open", "io.BytesIO", "io.StringIO", "tempfile.NamedTemporaryFile",
                "tempfile.TemporaryFile"}


class ModelArtsPaths(Rule):
    """With `-m`, a migrated script can run on Huawei ModelArts, where its data and results live
    in object storage (as the Ascend ModelArts migration guide describes): each path argument of a function that reads or writes files
    (open, os and os.path, shutil, glob, pathlib.Path, numpy/pandas/PIL/cv2 I/O, torch.load/save,
    torchvision datasets' `root`, ...) is wrapped in `ModelArtsPathManager().get_path(...)`,
    and `from ascend_modelarts_function import ModelArtsPathManager` is added after the imports.
    The manager (written to ascend_modelarts_function/ at the top of the output) maps the paths
    listed in its path_mapping_config.py to a local copy, downloads inputs before the script
    first touches a file and uploads outputs when it ends; without the ModelArts SDK it returns
    every path unchanged.  The package must be importable: run scripts from the output's top
    folder (or put it on PYTHONPATH).  Arguments that are file objects (`open(...)`,
    `io.BytesIO()`), `*args` and arguments already wrapped are left alone.
    """

    code = "NPU801"
    summary = "-m: file paths go through ModelArtsPathManager().get_path(...)"
    METADATA_DEPENDENCIES = (PositionProvider,)
    examples = (
        Example(
            "import os\nimport torch\n\ndef save(state, folder):\n    os.makedirs(folder, exist_ok=True)\n"
            "    torch.save(state, os.path.join(folder, 'last.pt'))\n",
            "import os\nimport torch\nfrom ascend_modelarts_function import ModelArtsPathManager\n\n"
            "def save(state, folder):\n    os.makedirs(ModelArtsPathManager().get_path(folder), exist_ok=True)\n"
            "    torch.save(state, ModelArtsPathManager().get_path(os.path.join(folder, 'last.pt')))\n",
            modelarts=True,
        ),
        Example(
            "import json\nimport numpy as np\nfrom torchvision import datasets\n"
            "with open(args.config) as handle:\n    config = json.load(handle)\n"
            "x = np.load(file=args.features)\ntrain = datasets.CIFAR10(root='./data', train=True)\n",
            "import json\nimport numpy as np\nfrom torchvision import datasets\n"
            "from ascend_modelarts_function import ModelArtsPathManager\n"
            "with open(ModelArtsPathManager().get_path(args.config)) as handle:\n    config = json.load(handle)\n"
            "x = np.load(file=ModelArtsPathManager().get_path(args.features))\n"
            "train = datasets.CIFAR10(root=ModelArtsPathManager().get_path('./data'), train=True)\n",
            modelarts=True,
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # The manager's own file accesses must not go through itself.
        self.active = context.options.modelarts and not context.path.startswith(PACKAGE_NAME + "/")
        self._wrapped = False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not self.active:
            return updated_node
        slots, name = self._path_arguments(original_node.func)
        if not slots:
            return updated_node
        args = list(updated_node.args)
        wrapped = []
        for position, word in slots:
            index = _argument_index(args, position, word)
            if index is None:
                continue
            # Names resolve in the original call (an earlier rule may have rebuilt the arguments).
            same = len(original_node.args) == len(args)
            if not self._is_path(original_node.args[index].value if same else args[index].value):
                continue
            value = args[index].value
            call = cst.parse_expression(f"{WRAPPER}()").with_changes(args=[cst.Arg(value)])
            args[index] = args[index].with_changes(value=call)
            wrapped.append(word or f"argument {position + 1}")
        if not wrapped:
            return updated_node
        self._wrapped = True
        self.record(original_node, f"[ModelArts] route argument {', '.join(wrapped)} of {name} through {WRAPPER}")
        return updated_node.with_changes(args=args)

    def _path_arguments(self, func: cst.BaseExpression):
        for resolved in sorted(qualified_names(self, func)):
            if resolved in PATH_ARGUMENTS:
                return PATH_ARGUMENTS[resolved], resolved
            for prefix, slots in PATH_PREFIXES.items():
                if resolved.startswith(prefix):
                    return slots, resolved
        if isinstance(func, cst.Attribute) and func.attr.value in PATH_METHODS:
            return PATH_METHODS[func.attr.value], func.attr.value
        return (), ""

    def _is_path(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.Integer, cst.Float)):
            return False  # a file descriptor
        if isinstance(value, cst.Name) and value.value in ("None", "__file__"):
            return False  # the script's own location is never in object storage
        if isinstance(value, cst.Call):
            if code_of(value.func) == WRAPPER:
                return False  # already wrapped
            if qualified_names(self, value.func) & FILE_OBJECTS:
                return False
        return True

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if not self._wrapped or MANAGER in module_names(updated_node.body):
            return updated_node
        body = list(updated_node.body)
        pairs = pair_with_originals(body, original_node.body, self.context.inserted, self.context.removed)
        index = after_imports(body)
        anchor = line_before(pairs, index, self.lines_of, len(original_node.header))
        statement = cst.parse_statement(IMPORT_LINE + updated_node.default_newline)
        self.context.inserted.add(statement)
        body.insert(index, statement)
        self.record_insert(anchor, f"insert {IMPORT_LINE}")
        return updated_node.with_changes(body=body)


def _argument_index(args: Sequence[cst.Arg], position: Optional[int], word: Optional[str]) -> Optional[int]:
    """Index in `args` of the argument at `position` (among plain positional arguments) or
    passed as `word`."""
    for index, arg in enumerate(args):
        if word is not None and arg.keyword is not None and arg.keyword.value == word:
            return index
    if position is None:
        return None
    for index, arg in enumerate(args):
        if arg.keyword is not None or arg.star:
            return None
        if index == position:
            return index
    return None
