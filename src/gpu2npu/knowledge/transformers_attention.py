"""Which transformers releases run attn_implementation="flash_attention_2" on an NPU (read by
rules.transformers_attention, for the Python code and the launch scripts alike)."""
from __future__ import annotations

from typing import Optional

from .versions import allowed_releases, release_numbers

# The transformers releases whose flash_attention_2 runs on an NPU: 4.51.0 brought
# integrations/npu_flash_attention.py (torch_npu.npu_fusion_attention); 4.54.0 to 4.55.2 read the
# flash-attn package's version again before it, and raise where that package is absent (always,
# on Ascend); 4.55.3 skips that check on an NPU again.  (Read off the released wheels.)
_RUNS_FROM, _BROKEN_FROM, _MENDED_FROM = (4, 51), (4, 54), (4, 55, 3)
# Releases a range is tried on, with any the requirement names itself: every minor release of
# the last two years and the patch releases around the window above.
_TRIED = tuple(f"4.{minor}.0" for minor in range(30, 58)) + (
    "4.50.3", "4.53.3", "4.54.1", "4.55.2", "4.55.3", "4.55.4", "4.57.6", "5.0.0", "5.23.0", "6.0.0")


# transformers runs attn_implementation="sdpa" with torch 2.1.1 or later; from 4.48.0 on, with torch
# 2.1.0 too on an NPU (before, it raises ImportError there: torch_npu 2.1.0 is built for 2.1.0).
_SDPA_TORCH, _SDPA_ON_NPU_WITH_2_1_0 = (2, 1, 1), (4, 48)


def runs_on_npu(version: str) -> bool:
    """Whether this transformers release runs flash_attention_2 on an NPU."""
    number = release_numbers(version)
    return _RUNS_FROM <= number < _BROKEN_FROM or number >= _MENDED_FROM


def verdict(spec: Optional[str]) -> Optional[bool]:
    """True: every release `spec` allows runs it on the NPU; False: none does; None: not known
    (no pin, or a range across both)."""
    if spec is None:
        return None
    allowed = allowed_releases(spec, _TRIED)
    if not allowed:
        return None
    answers = {runs_on_npu(version) for version in allowed}
    return answers.pop() if len(answers) == 1 else None


def sdpa_runs(spec: Optional[str], torch_version: str) -> bool:
    """Whether every transformers release `spec` allows runs attn_implementation="sdpa" on an NPU
    with torch `torch_version`."""
    if release_numbers(torch_version) >= _SDPA_TORCH:
        return True
    allowed = allowed_releases(spec, _TRIED) if spec is not None else list(_TRIED)
    return bool(allowed) and all(release_numbers(version) >= _SDPA_ON_NPU_WITH_2_1_0 for version in allowed)
