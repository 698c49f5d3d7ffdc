"""``torch_npu.contrib`` stand-in: its `function` and `module` parts (see there), whose names the
package also binds itself, as torch_npu's does."""

import types as _types

from .. import _names
from . import function, module

# (what the parts have of the release's names; a name they lack fails here as there)
globals().update({name: value for part in (function, module) for name, value in vars(part).items()
                  if not name.startswith("_") and not isinstance(value, _types.ModuleType)})

_names.apply_filter(__name__, globals())
_missing_name = globals()["__getattr__"]


def __getattr__(name):
    """The names the parts make when asked (ROIAlign, FusedColorJitter where torchvision is
    installed) are asked of them; the rest fail as missing."""
    if name in ("ROIAlign", "FusedColorJitter"):
        try:
            return getattr(module, name)
        except AttributeError:
            pass
    return _missing_name(name)
