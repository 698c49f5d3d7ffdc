"""The torch data types an NPU tensor cannot hold, by torch_npu release.

torch_npu hands every operator to CANN with an ACL data type, chosen from a table of torch's
scalar types (`CalcuOpUtil.cpp`, `AT_ALL_SCALAR_TYPE_AND_ACL_DATATYPE_PAIR`).  A type mapped to
ACL_DT_UNDEFINED has no NPU form: a cast to it or an operator on it raises.  Read from that
table on every release branch and tag of Ascend/pytorch: the float8 types have no ACL type in
any release for torch 2.1.0 to 2.6.0 (the CANN 7 branches: 2.6.0.post6 and older), and have one
from the CANN 26 branches on, whose first releases are 2.7.1.post6, 2.8.0.post5 and 2.9.0.post4
(every release gpu2npu knows for torch 2.7.1 and newer is one of these or later).  AMD's
`fnuz` float8 variants have none in any release.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

# torch.<dtype> -> the first torch version whose torch_npu releases give it an NPU data type
# (None: none does)
NPU_DTYPE_FROM: Dict[str, Optional[Tuple[int, ...]]] = {
    "torch.float8_e4m3fn": (2, 7, 1),
    "torch.float8_e5m2": (2, 7, 1),
    "torch.float8_e8m0fnu": (2, 7, 1),
    "torch.float8_e4m3fnuz": None,
    "torch.float8_e5m2fnuz": None,
}


def npu_lacks_dtype(qualified: str, torch_version: Tuple[int, ...]) -> bool:
    """Whether the release for `torch_version` has no NPU data type for the dtype `qualified`."""
    if qualified not in NPU_DTYPE_FROM:
        return False
    first = NPU_DTYPE_FROM[qualified]
    return first is None or torch_version < first
