"""The migration's modes and options that change what a run does beyond the single-card rules:
`distributed`, `-s`, `-m`, `-sim`, `-a` and `-r`, one module each.

A mode module owns what the mode needs end to end, so that a new mode is one module here and one
flag in the CLI:
- `settings(request, source)`: checks what the mode needs of the project before anything is
  written (raising `UsageError` with the reason) and returns what goes into `Options` (None
  or False: the mode is off); `active(options)` tells whether it is on;
- `place(rules, options)`: where its rules stand among the ordered rules of the run;
- `write(staging, target, options, result, logger)`: the files it adds to the output beside
  the migrated ones (a launcher, a generated package), with its log lines and console notes;
- `new_files(folder, options)`: the (name, text) of files it adds, for `--diff`;
- `CUTS`: whether a large file may still be migrated through its relevant statements only
  (`partial`); a mode that reasons across a whole file must see it whole.

A file's way through a run: `discover` lists it, `engine` migrates it (cache, processes), where
`pipeline` reads it once with `ast` (`scan`), decides whether any rule could touch it, and only
then parses it with libcst and runs `rules_for(options)`; the project then writes it and the
modes write their own files (`write_all`), then the dependency files and the reports.
"""
from __future__ import annotations

from typing import List, Tuple, Type

from . import apex_amp, custom, distributed, modelarts, similar, specify_device

# In the order their files are written and their rules placed.
MODES = (custom, distributed, specify_device, apex_amp, modelarts, similar)


def may_cut(options) -> bool:
    """Whether every mode of the run lets a large file be migrated through its relevant
    statements only (see `partial`)."""
    return all(mode.CUTS or not mode.active(options) for mode in MODES)


def rules_for(options) -> Tuple[Type, ...]:
    """The ordered rules of a run: the single-card rules, or those of the run's mode, with each
    option's rules in their place."""
    from ..rules import SINGLE_CARD_RULES

    rules = SINGLE_CARD_RULES
    for mode in MODES:
        if mode.active(options):
            rules = mode.place(rules, options)
    return rules


def write_all(staging, target, options, result, logger) -> List[str]:
    """The files the run's modes add to the output; returns their notes for the console."""
    notes: List[str] = []
    for mode in MODES:
        if mode.active(options):
            notes += mode.write(staging, target, options, result, logger)
    return notes


def new_files(folder, options) -> List[Tuple[str, str]]:
    """(name, text) of the files the run's modes add beside the project's (shown by --diff)."""
    return [file for mode in MODES if mode.active(options) for file in mode.new_files(folder, options)]
