"""The rules, in the order they run.

Order matters where one rule's output is another's input:
- NcclToHccl, CudaDeviceStrings and VisibleDevicesEnv rewrite string literals and are
  independent of each other.
- TorchCudaApiToNpu runs before TensorCudaToNpu so that `torch.cuda` module references are
  resolved as modules before any `.cuda` attribute is renamed.
- IntegerDevices runs after the string rules: the strings it writes ("npu:0") are already in
  the target form and must not be seen as device strings to migrate.
- DataParallelToSingleNpu inserts a class after the imports; ImportTorchNpu runs last because
  it acts on what every other rule did (`FileContext.needs_torch_npu`) and places itself
  relative to the final import block.
"""
from __future__ import annotations

from typing import Dict, Tuple, Type

from .base import Example, FileContext, Options, Rule
from .cuda_api import TorchCudaApiToNpu
from .data_parallel import DataParallelToSingleNpu
from .dataloader import DataLoaderForNpu
from .device_strings import CudaDeviceStrings
from .import_torch_npu import ImportTorchNpu
from .integer_devices import IntegerDevices
from .nccl_backend import NcclToHccl
from .tensor_cuda import TensorCudaToNpu
from .visible_devices import VisibleDevicesEnv

SINGLE_CARD_RULES: Tuple[Type[Rule], ...] = (
    NcclToHccl,
    CudaDeviceStrings,
    VisibleDevicesEnv,
    TorchCudaApiToNpu,
    TensorCudaToNpu,
    IntegerDevices,
    DataLoaderForNpu,
    DataParallelToSingleNpu,
    ImportTorchNpu,
)

RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in SINGLE_CARD_RULES}

__all__ = ["Example", "FileContext", "Options", "Rule", "SINGLE_CARD_RULES", "RULES_BY_CODE"]
