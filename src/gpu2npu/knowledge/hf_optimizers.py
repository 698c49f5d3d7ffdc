"""transformers' optimizer names (TrainingArguments(optim=...), --optim, a config's `optim:`) that
build a bitsandbytes optimizer: bitsandbytes' kernels are CUDA kernels, so on the NPU the name
fails where the trainer builds its optimizer.  What each name becomes there: the torch optimizer
name of the same algorithm where transformers has one."""
from __future__ import annotations

from typing import Dict, Optional

HF_BITSANDBYTES_OPTIMIZERS: Dict[str, Optional[str]] = {
    "adamw_bnb_8bit": "adamw_torch", "adamw_8bit": "adamw_torch", "paged_adamw_32bit": "adamw_torch",
    "paged_adamw_8bit": "adamw_torch", "rmsprop_bnb": "rmsprop", "rmsprop_bnb_8bit": "rmsprop",
    "rmsprop_bnb_32bit": "rmsprop", "lion_8bit": None, "lion_32bit": None, "paged_lion_32bit": None,
    "paged_lion_8bit": None, "ademamix": None, "ademamix_8bit": None, "paged_ademamix_32bit": None,
    "paged_ademamix_8bit": None, "galore_adamw_8bit": "galore_adamw", "galore_adamw_8bit_layerwise": "galore_adamw_layerwise",
}

# Words one of which every name above holds (the text a file must hold to name one).
NAME_WORDS = ("8bit", "32bit", "bnb", "ademamix")


def bitsandbytes_optimizer_tip(name: str) -> str:
    """What to choose on the NPU instead of the optimizer `name` (one of HF_BITSANDBYTES_OPTIMIZERS),
    and what that costs."""
    torch_name = HF_BITSANDBYTES_OPTIMIZERS[name]
    instead = (f"use optim={torch_name!r}" + (" or 'adamw_torch_npu_fused' (torch_npu's fused AdamW)"
                                               if torch_name == "adamw_torch" else "")
               if torch_name else "choose a torch optimizer (e.g. 'adamw_torch'): this algorithm has none in torch")
    costs = []
    if "8bit" in name:
        costs.append("its states are 32-bit: about four times the optimizer memory of the 8-bit ones")
    if name.startswith("paged_"):
        costs.append("its states are not paged out to host memory")
    return (f"transformers builds this optimizer with bitsandbytes (CUDA kernels): {instead}"
            + ("; " + "; ".join(costs) if costs else ""))
