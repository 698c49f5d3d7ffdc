"""``torch_npu.npu`` stand-in (also registered as ``torch.npu``).

Implementation lives in ``torch_npu._impl``; this module only re-exports the
public names, then hides those the real torch_npu lacks (see ``_names``).
"""

import types as _types

from .. import _impl as _impl
from .. import _names as _names
from . import amp

_PUBLIC = sorted(
    n for n, v in vars(_impl).items()
    if not n.startswith("_") and not isinstance(v, _types.ModuleType) and n != "npu_index"
)
globals().update({n: getattr(_impl, n) for n in _PUBLIC})


# The release's submodules of torch_npu.npu (memory, utils, graphs, streams, random, ...), each with
# the names it lists that the imitation has (mstx, which the package binds itself, is left as it is).
_names.build_submodules(__name__, globals(), _impl)


def _is_in_bad_fork():  # consulted by torch.manual_seed for registered device modules
    return False


def _lazy_init():
    return None


_names.apply_filter(__name__, globals())
