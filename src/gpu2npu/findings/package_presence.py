"""Code that runs only where a CUDA-only package is installed.

    if is_bnb_available():
        import bitsandbytes as bnb
        weight = bnb.nn.Int8Params(data)
    try:
        import triton
    except ImportError:
        triton = None

A library that supports bitsandbytes, Transformer Engine or Triton as an option tests whether
the package is there before it uses it, or imports it where a failed import is expected.  None of
these packages installs on an Ascend machine, so such code is not reached there: it fails nothing,
and there is nothing to port unless the NPU must do what the package did.  Its rows go to the log
as notes (with the package's tip) instead of the reports that `check` fails on.

A test asks about a package's presence when one of the conditions it requires holds words of
availability (`is_bnb_available()`, `is_package_available("bitsandbytes")`, `find_spec("triton")`,
`RequirementCache("flash-attn")`) beside the package's name or a short name the package goes by
(`bnb`, `te`), or compares the module itself with None (`bnb is not None`).  Only what runs where
the test holds counts: the body of `if TEST`, the `else` of `if not TEST`.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst

from ..knowledge.tips import PACKAGE_SHORT_NAMES

# Words of a test that asks whether something is there.
_PRESENCE_WORDS = frozenset({"available", "installed", "spec", "requirementcache", "exists", "importable"})
_WORD = re.compile(r"[a-z0-9]+")
# Exceptions a failed import raises (or that catch it).
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})

Words = Tuple[str, ...]
# The first of the words of `module is not None`, before the module's name (no word of code has a space).
_MODULE_ITSELF = "the module "


def _words(node: cst.CSTNode) -> Words:
    return tuple(_WORD.findall(cst.Module(body=()).code_for_node(node).lower()))


def _asks_presence(words: Words) -> bool:
    return any(word in _PRESENCE_WORDS for word in words)


def presence_conditions(test: cst.BaseExpression) -> Tuple[List[Words], List[Words]]:
    """(the words of each presence question that holds whenever `test` is true, those of each that
    holds whenever it is false)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        when_true, when_false = presence_conditions(test.expression)
        return when_false, when_true
    if isinstance(test, cst.BooleanOperation):
        left_true, left_false = presence_conditions(test.left)
        right_true, right_false = presence_conditions(test.right)
        if isinstance(test.operator, cst.And):
            return left_true + right_true, []
        return [], left_false + right_false
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        # `bnb is not None`, after `try: import bitsandbytes as bnb` / `except ImportError: bnb = None`:
        # the module's own name, not an option that merely names it (`args.use_bnb_linear is not None`)
        comparison = test.comparisons[0]
        if isinstance(comparison.comparator, cst.Name) and comparison.comparator.value == "None":
            if isinstance(test.left, cst.Name):
                words = (_MODULE_ITSELF, test.left.value)
            else:  # `find_spec("bitsandbytes") is not None`
                words = _words(test.left)
                if not _asks_presence(words):
                    return [], []
            if isinstance(comparison.operator, cst.IsNot):
                return [words], []
            if isinstance(comparison.operator, cst.Is):
                return [], [words]
        return [], []
    if isinstance(test, (cst.Call, cst.Name, cst.Attribute)):
        words = _words(test)
        return ([words], []) if _asks_presence(words) else ([], [])
    return [], []


def names_package(words: Words, package: str) -> bool:
    """Whether a presence question's words name `package` (of tips.CUDA_ONLY_PACKAGES).  Only a
    package that is CUDA-only as a whole counts: where only a part of a package is (vLLM's NCCL
    communicator, DeepSpeed's CUDA ops), the package itself is there on an Ascend machine."""
    if "." in package:
        return False
    if words and words[0] == _MODULE_ITSELF:
        return words[1] in (package, *PACKAGE_SHORT_NAMES.get(package, ()))
    parts = tuple(_WORD.findall(package.lower()))
    if any(word in PACKAGE_SHORT_NAMES.get(package, ()) for word in words):
        return True
    return any(words[index:index + len(parts)] == parts for index in range(len(words) - len(parts) + 1))


def catches_failed_import(node: cst.Try) -> bool:
    """Whether a `try` expects its imports to fail (`except ImportError`, or any exception)."""
    for handler in node.handlers:
        if handler.type is None:
            return True
        caught = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for element in caught:
            value = element.value if isinstance(element, cst.Element) else element
            name = value.attr.value if isinstance(value, cst.Attribute) else getattr(value, "value", None)
            if name in _IMPORT_ERRORS:
                return True
    return False


def optional_tip(package: str, where: Optional[str], tip: str) -> str:
    """The note of a row that runs only `where` ("where is_bnb_available() holds"; None: an import
    in a `try` that expects it to fail)."""
    if where is None:
        return (f"imported in a try that expects the import to fail: {package} does not install on an Ascend "
                f"machine, so the import fails there as expected; to have the NPU do what it does: {tip}")
    return (f"runs only {where}: {package} does not install on an Ascend machine, so this is not reached there "
            f"and fails nothing; to have the NPU do it: {tip}")
