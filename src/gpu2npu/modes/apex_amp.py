"""`-a MODEL`: native AMP of the model held by MODEL converted to Ascend apex amp."""
from __future__ import annotations

import re

from ..reading.discover import Kind, walk
from ..records.usage import UsageError
from .distributed import TARGET_PATTERN

# amp.initialize wraps the model and optimizer built anywhere in the file: it is migrated whole.
CUTS = False


def active(options) -> bool:
    return options.amp_model is not None


def settings(request, source):
    """-a names the model whose optimizer the GradScaler steps: a name no file builds an
    optimizer from is a mistake, caught before anything is written."""
    model = request.amp_model
    if model is None:
        return None
    if not TARGET_PATTERN.match(model):
        raise UsageError(f"-a {model}: not a variable name (e.g. model or self.model)")
    if request.distributed is not None:
        raise UsageError("-a cannot be combined with distributed yet: amp.initialize must run before the "
                         "DistributedDataParallel wrap, which gpu2npu does not order yet; migrate with -a alone, "
                         "or convert AMP by hand")
    parameters = re.compile(rb"\b" + re.escape(model.encode()) + rb"\s*\.\s*parameters\s*\(\s*\)")
    python = [entry for entry in walk(source) if entry.kind == Kind.PYTHON]
    if not any(parameters.search(entry.absolute.read_bytes()) for entry in python):
        raise UsageError(
            f"-a {model}: no Python file builds an optimizer from {model}.parameters(); "
            "name the variable that holds the model (e.g. -a net or -a self.model)"
        )
    return model


def place(rules, options):
    from ..rules import ApexAmp, after_common_rules

    return after_common_rules(rules, ApexAmp)


def write(staging, target, options, result, logger):
    return []


def new_files(folder, options):
    return []
