"""bitsandbytes reached through other libraries' front doors (NPU912): transformers'
BitsAndBytesConfig, Lightning's bitsandbytes precision, `load_in_4bit=True`/`load_in_8bit=True`."""
from __future__ import annotations

import ast

from ...knowledge.bitsandbytes_devices import QUANTIZED_LOADING_TIP, loading_note
from ...records.change import Report
from ...records.finding_kinds import LEFT_ON_PURPOSE, QUANTIZATION
from ...reading.scan.reading import last_name
from .view import FileView

_LIGHTNING_TIP = ("Lightning's bitsandbytes precision quantizes the linear layers with CUDA kernels: use "
                  "precision=\"bf16-true\" or \"bf16-mixed\" on the NPU")

# Calls of other libraries' bitsandbytes front doors, by qualified name.
BITSANDBYTES_FRONT_DOORS = {
    "transformers.BitsAndBytesConfig": QUANTIZED_LOADING_TIP,
    "transformers.utils.quantization_config.BitsAndBytesConfig": QUANTIZED_LOADING_TIP,
    "lightning.pytorch.plugins.BitsandbytesPrecision": _LIGHTNING_TIP,
    "lightning.fabric.plugins.BitsandbytesPrecision": _LIGHTNING_TIP,
    "pytorch_lightning.plugins.BitsandbytesPrecision": _LIGHTNING_TIP,
}
LOADING_KEYWORDS = ("load_in_4bit", "load_in_8bit")
# What takes those keywords and loads a model with them: the libraries, and their loaders' names
# (reached through a class held in a variable: `model_class.from_pretrained(...)`).
LOADING_LIBRARIES = frozenset({"transformers", "peft", "trl", "accelerate", "optimum", "unsloth", "vllm", "lightning",
                               "pytorch_lightning", "litgpt", "axolotl", "torchtune"})
LOADERS = frozenset({"from_pretrained", "from_config", "FastLanguageModel", "get_model"})

# the classes' last names, and the keywords' common part
TRIGGERS = (*sorted({name.rsplit(".", 1)[-1].encode() for name in BITSANDBYTES_FRONT_DOORS}), b"load_in_")


class Detector:
    def __init__(self, view: FileView) -> None:
        self.view = view

    def on_call(self, call: ast.Call) -> None:
        for name in sorted(self.view.qualified(call.func)):
            tip = BITSANDBYTES_FRONT_DOORS.get(name)
            if tip is not None:
                self._add(call.func, name.rsplit(".", 1)[-1], tip, _eight_bit(call))
                return  # its load_in_4bit is part of the same row
        for keyword in call.keywords:
            if keyword.arg in LOADING_KEYWORDS and _may_be_true(keyword.value):
                if self._handed_on_to_the_project(call, keyword):
                    continue
                self._add(keyword.value, keyword.arg, QUANTIZED_LOADING_TIP, keyword.arg == "load_in_8bit")

    def _add(self, node: ast.AST, api_name: str, tip: str, eight_bit: bool) -> None:
        """The row of a front door: a note where the project's pins run transformers' loading on the
        NPU (Lightning's precision is not known to)."""
        pins = self.view.pins
        note = (loading_note(pins.bitsandbytes, pins.transformers, self.view.api.torch_version, eight_bit)
                if tip == QUANTIZED_LOADING_TIP else None)
        if note is not None:
            self.view.add(node, LEFT_ON_PURPOSE.code, Report.NOTE, api_name, note)
        else:
            self.view.add(node, QUANTIZATION.code, Report.UNSUPPORTED, api_name, tip)

    def _handed_on_to_the_project(self, call: ast.Call, keyword: ast.keyword) -> bool:
        """An option handed on under its own name (`Actor(path, load_in_4bit=args.load_in_4bit)`) to
        a callable of no library that loads models (the project's own, which passes it on): the row
        stands where it reaches one (a from_pretrained, a BitsAndBytesConfig), not at every hop."""
        if last_name(keyword.value) != keyword.arg or last_name(call.func) in LOADERS:
            return False
        return not any(name.split(".", 1)[0] in LOADING_LIBRARIES for name in self.view.qualified(call.func))


def _may_be_true(value: ast.AST) -> bool:
    return not (isinstance(value, ast.Constant) and not value.value)


def _eight_bit(call: ast.Call) -> bool:
    """Whether a BitsAndBytesConfig may ask for 8-bit weights (`load_in_8bit=True`, or a value not
    written out; `**settings`, which may hold it)."""
    return any((keyword.arg == "load_in_8bit" and _may_be_true(keyword.value)) or keyword.arg is None
               for keyword in call.keywords)
