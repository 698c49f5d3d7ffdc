"""Which accelerate releases place a model on NPUs for `device_map="auto"` (read by the rows of
findings.hazards.auto_device_map).

Read off the released wheels: accelerate's `get_max_memory`, which `device_map="auto"`,
"balanced", "balanced_low_0" and "sequential" (transformers' from_pretrained, accelerate's
dispatch) split the layers by, counts NPUs from 0.26.0 on.  Before, it counts CUDA and XPU devices
only: on an Ascend machine it offers the CPU alone, and every layer is loaded there, silently.
"""
from __future__ import annotations

import functools
from typing import Optional

from .versions import allowed_releases, release_numbers

# The first accelerate whose device maps count NPUs.
NPU_DEVICE_MAPS_FROM = (0, 26)
# The values of device_map that accelerate splits over the devices it counts.
COUNTED_MAPS = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})

# The releases a requirement is tried on, with any it names itself.
_TRIED = ("0.18.0", "0.20.3", "0.21.0", "0.22.0", "0.23.0", "0.24.1", "0.25.0", "0.26.0", "0.26.1", "0.27.2",
          "0.30.1", "0.34.2", "1.0.0", "1.10.0")


@functools.lru_cache(maxsize=8)
def places_on_the_cpu(accelerate: Optional[str]) -> bool:
    """Whether every accelerate release the project's requirement `accelerate` allows loads a model
    given a counted device_map onto the CPU on an NPU machine (None: no pin, which decides nothing:
    pip installs a release that counts NPUs)."""
    if not accelerate:
        return False
    allowed = allowed_releases(accelerate, _TRIED)
    return bool(allowed) and all(release_numbers(version) < NPU_DEVICE_MAPS_FROM for version in allowed)


def tip(accelerate: str, value: str) -> str:
    return (f"accelerate{accelerate}, which the project pins, counts no NPU for device_map=\"{value}\" (0.26 and "
            "later do): on an Ascend machine every layer is loaded onto the CPU, silently; pin accelerate>=0.26, or "
            "give the device itself (device_map={\"\": \"npu:0\"})")
