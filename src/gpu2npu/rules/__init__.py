"""The rules, in the order they run.

Order matters where one rule's output is another's input:
- NcclToHccl, CudaDeviceStrings and VisibleDevicesEnv rewrite string literals and are
  independent of each other.
- TorchCudaApiToNpu runs before TensorCudaToNpu so that `torch.cuda` module references are
  resolved as modules before any `.cuda` attribute is renamed.
- IntegerDevices runs after the string rules: the strings it writes ("npu:0") are already in
  the target form and must not be seen as device strings to migrate.
- ApexAmp (-a) takes the GradScaler and autocast constructs it converts whole
  (`FileContext.claimed`), so TorchCudaApiToNpu and CudaDeviceStrings leave them alone; it runs
  after them so that everything else on those lines is already migrated.
- AscendFunctionEquivalents (-sim) rewrites calls of torch APIs that no other rule touches.
- DataParallelToSingleNpu inserts a class after the imports; ImportTorchNpu runs last because
  it acts on what every other rule did (`FileContext.needs_torch_npu`) and places itself
  relative to the final import block.
"""
from __future__ import annotations

from typing import Dict, Tuple, Type

from .apex_amp import ApexAmp
from .apex_modules import ApexModulesToTorch
from .apex_parts import ApexPartsToGenerated
from .bf16_capability import Bf16CapabilityGateToNpu
from .capability_warnings import CapabilityMessageRemoved
from .bf16_readiness import Bf16ReadinessWithoutCudaVersion
from .bitsandbytes import BitsandbytesOptimizers
from .base import DistributedSettings, Example, FileContext, Options, Rule, SpecifyDeviceSettings
from .cuda_api import KINDS as CUDA_API_KINDS, TorchCudaApiToNpu
from .device_tests import DeviceTypeTests
from .custom import CUSTOM_RULES
from .data_parallel import DataParallelToSingleNpu
from .dataloader import DataLoaderForNpu
from .environment_variables import CudaEnvironmentVariables
from .flash_attn import FlashAttnToNpu
from .fork_rng import ForkRngOnNpu
from .autocast_state import AutocastStateOnNpu
from .ddp_checkpoint import SaveOnRankZero
from .ddp_data_parallel import DataParallelRemoved
from .ddp_init import InitHcclProcessGroup
from .ddp_model import WrapModelInDdp
from .ddp_sampler import DistributedSamplerForLoaders
from .device_strings import CudaDeviceStrings
from .import_torch_npu import ImportTorchNpu
from .integer_devices import IntegerDevices
from .modelarts_paths import ModelArtsPaths
from .nccl_backend import NcclToHccl
from .ray_resources import RayGpusToNpus
from .similar_api import AscendFunctionEquivalents
from .specify_device import DeviceFromEnvironment
from .tensor_cuda import TensorCudaToNpu
from .tf32_switches import Tf32ToHf32
from .transformers_attention import TransformersFlashAttention
from .visible_devices import VisibleDevicesEnv
from .xformers import XformersToSdpa

# What every mode starts with: the rewrites of CUDA names, strings and devices, then the loaders.
COMMON_RULES: Tuple[Type[Rule], ...] = (
    NcclToHccl,
    CudaDeviceStrings,
    VisibleDevicesEnv,
    CudaEnvironmentVariables,
    Tf32ToHf32,
    Bf16ReadinessWithoutCudaVersion,
    Bf16CapabilityGateToNpu,
    CapabilityMessageRemoved,
    RayGpusToNpus,
    TorchCudaApiToNpu,
    TensorCudaToNpu,
    IntegerDevices,
    ForkRngOnNpu,
    AutocastStateOnNpu,
    DataLoaderForNpu,
    FlashAttnToNpu,
    XformersToSdpa,
    BitsandbytesOptimizers,
    ApexModulesToTorch,
    ApexPartsToGenerated,
    TransformersFlashAttention,
)

# The rules that point a CUDA-only package's imports at a package generated into the output: the
# pipeline plans them once per file (device tests around the names they reroute are valid after
# migration) and the migration writes each package that one of them used.
REROUTING_RULES = (FlashAttnToNpu, XformersToSdpa, BitsandbytesOptimizers, ApexPartsToGenerated)

SINGLE_CARD_RULES: Tuple[Type[Rule], ...] = (*COMMON_RULES, DataParallelToSingleNpu, ImportTorchNpu)

# `distributed`: one process per NPU.  DataParallel is removed instead of replaced, loaders get
# a DistributedSampler after DataLoaderForNpu has made them drop their last batch, the model
# wrap and the process-group initialisation insert statements, and ImportTorchNpu still runs
# last because the inserted code uses torch_npu.
DISTRIBUTED_RULES: Tuple[Type[Rule], ...] = (
    *COMMON_RULES,
    DistributedSamplerForLoaders,
    DataParallelRemoved,
    WrapModelInDdp,
    SaveOnRankZero,
    InitHcclProcessGroup,
    ImportTorchNpu,
)

# `-s`: single-card rules, with the device set once from DEVICE_ID (before ImportTorchNpu, whose
# import the inserted set_device call needs).
SPECIFY_DEVICE_RULES: Tuple[Type[Rule], ...] = (*SINGLE_CARD_RULES[:-1], DeviceFromEnvironment, ImportTorchNpu)


# Rules of options that combine with every mode; they run after the common rules, before the
# mode's own insertions and ImportTorchNpu.
OPTIONAL_RULES: Tuple[Type[Rule], ...] = (ApexAmp, AscendFunctionEquivalents)


def after_common_rules(rules: Tuple[Type[Rule], ...], rule: Type[Rule]) -> Tuple[Type[Rule], ...]:
    """`rules` with an option's `rule` after the common rules and the options' rules already there
    (in OPTIONAL_RULES order), before the mode's own insertions and ImportTorchNpu."""
    at = len(COMMON_RULES)
    while at < len(rules) and rules[at] in OPTIONAL_RULES and OPTIONAL_RULES.index(rules[at]) < OPTIONAL_RULES.index(rule):
        at += 1
    return (*rules[:at], rule, *rules[at:])


# Kinds of edit that a rule records under codes of their own (`Rule.recorded_by`): never run.
EDIT_KINDS: Tuple[Type[Rule], ...] = (*CUDA_API_KINDS, DeviceTypeTests)

# -r: the user's rules run before all of these, in a pass of their own (see custom.py).  Each
# kind of edit is listed after the rule that records it.
RULES_BY_CODE: Dict[str, Type[Rule]] = {
    listed.code: listed
    for rule in CUSTOM_RULES + SINGLE_CARD_RULES + DISTRIBUTED_RULES + SPECIFY_DEVICE_RULES + OPTIONAL_RULES
    + (ModelArtsPaths,)
    for listed in (rule, *(kind for kind in EDIT_KINDS if kind.recorded_by == rule.code))
}

__all__ = [
    "DistributedSettings",
    "Example",
    "FileContext",
    "Options",
    "Rule",
    "SINGLE_CARD_RULES",
    "DISTRIBUTED_RULES",
    "SPECIFY_DEVICE_RULES",
    "SpecifyDeviceSettings",
    "RULES_BY_CODE",
    "REROUTING_RULES",
    "Tf32ToHf32",
    "Bf16CapabilityGateToNpu",
    "CapabilityMessageRemoved",
    "Bf16ReadinessWithoutCudaVersion",
]
