"""``torch_npu.contrib`` stand-in: its `function` and `module` parts (see there), whose names the
package also binds itself, as torch_npu's does."""

import types as _types

from .. import _names
from . import function, module

# (what the parts have of the release's names; a name they lack fails here as there)
globals().update({name: value for part in (function, module) for name, value in vars(part).items()
                  if not name.startswith("_") and not isinstance(value, _types.ModuleType)})

# (the names the module part makes when first asked for are asked of it then)
_names.apply_filter(__name__, globals(), made_when_asked={
    name: (lambda name=name: getattr(module, name)) for name in module._MADE_FROM_TORCHVISION})
