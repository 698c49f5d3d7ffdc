"""Libraries that take a torch device but run on the CPU and NVIDIA's GPUs only.

torchcodec and torchvision's `decode_jpeg` are no CUDA-only packages (both import and decode on an
Ascend machine), but their GPU path is NVIDIA's hardware: torchcodec decodes with NVDEC and knows
the devices "cpu" and "cuda" only, so it refuses an NPU device; `decode_jpeg` decodes with nvJPEG
where the device is CUDA and on the CPU for any other, returning the image on the CPU (no copy to
the device it was given).  A "cuda" handed to either stays "cuda" in the migration (renamed, the
call refuses the NPU or silently decodes on the CPU), a device test around such a call stays with
it, and each call given a device other than the CPU is a row (NPU934) saying what to do.
"""
from __future__ import annotations

from typing import Optional, Tuple

# The API (or, ending with ".", every API under the package), the position of its device
# parameter among the positional arguments (None: keyword only), and the NPU way.
_DECODE_JPEG = ("torchvision's decode_jpeg decodes with NVIDIA's nvJPEG where the device is CUDA, and on the CPU for "
                "any other device, returning the image on the CPU: decode on the CPU (leave device= out) and move "
                "the image to the NPU with .to(\"npu\")")
LIBRARY_DEVICES: Tuple[Tuple[str, Optional[int], str], ...] = (
    ("torchcodec.", None, "torchcodec decodes on the CPU or with NVIDIA's NVDEC (device \"cuda\") and refuses any "
     "other device: decode on the CPU (device=\"cpu\", its default) and move the frames to the NPU with "
     ".to(\"npu\")"),
    ("torchvision.io.decode_jpeg", 2, _DECODE_JPEG),
    ("torchvision.io.image.decode_jpeg", 2, _DECODE_JPEG),
)

# The words a file holds where it may call one (a package's name, a function's own name).
WORDS = tuple(dict.fromkeys(api[:-1] if api.endswith(".") else api.rsplit(".", 1)[-1] for api, _, _ in LIBRARY_DEVICES))


def library_device_api(name: str) -> Optional[Tuple[Optional[int], str]]:
    """(the device parameter's position, the NPU way) where `name` is such an API, else None."""
    for api, position, tip in LIBRARY_DEVICES:
        if name == api or (api.endswith(".") and name.startswith(api)):
            return position, tip
    return None
