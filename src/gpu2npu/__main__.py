import os
import sys

# `python -m gpu2npu` puts the current folder first on sys.path, so a project file named like a
# module the tool imports (json.py, inspect.py, ...) would be imported -- executed -- in its
# place when gpu2npu runs inside the project it migrates.  The tool never runs user code: drop
# that entry, as `python -P` would.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .cli import main  # noqa: E402

main(prog_name="gpu2npu")
