"""``torch_npu.contrib`` stand-in: its `function` and `module` parts (see there)."""

from .. import _names
from . import function, module
from .function import matmul_transpose, npu_fast_condition_index_put, roll
from .module import Mish, NpuDropPath, SiLU, Swish

_names.apply_filter(__name__, globals())
