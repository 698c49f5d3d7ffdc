"""Copy a package kept as source in gpu2npu/generated/ into a migrated tree (byte for byte; the
tool never imports it).  A tree that holds the package already keeps its own."""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Sequence

SOURCE = "gpu2npu.generated"  # importing it runs nothing (a docstring)


def copy_package(root: Path, name: str, files: Sequence[str]) -> bool:
    """Write package `name` into `root`; False when `root` holds one already (it is kept)."""
    folder = root / name
    if folder.exists():
        return False
    folder.mkdir()
    for file in files:
        (folder / file).write_bytes((resources.files(SOURCE) / name / file).read_bytes())
    return True


# The packages that rerouting rules point imports at: rule code -> (package, its files, what it is).
# Each is written at the top of the output when a change of its rule is made.
BY_RULE = {
    "NPU261": ("ascend_flash_attn", ("__init__.py", "flash_attn_interface.py", "bert_padding.py"),
               "flash-attn's attention functions on torch_npu.npu_fusion_attention"),
    "NPU263": ("ascend_xformers", ("__init__.py", "ops.py"),
               "xformers' memory_efficient_attention on scaled_dot_product_attention"),
    "NPU264": ("ascend_bitsandbytes", ("__init__.py", "optim.py"),
               "bitsandbytes' optimizers as torch optimizers (32-bit states: more optimizer memory)"),
}
