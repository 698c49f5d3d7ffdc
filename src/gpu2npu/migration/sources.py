"""Which migration a file gets, by its kind: Python files go through the libcst rules,
notebooks through their code cells, launch files through the line rules."""
from __future__ import annotations

from ..reading.discover import Kind
from .launch_scripts import migrate_script
from .notebooks import migrate_notebook
from .pipeline import FileResult, migrate_source
from ..records.results import with_not_migrated_row
from ..records.options import Options
from ..modes import rules_for
from ..rules import RULES_BY_CODE
from ..dependencies.rules import DEPENDENCY_RULES_BY_CODE
from ..script_rules import SCRIPT_RULES_BY_CODE

# Every rule of every kind of file, by code: what `gpu2npu rules` lists and the reports name.
ALL_RULES_BY_CODE = {**RULES_BY_CODE, **SCRIPT_RULES_BY_CODE, **DEPENDENCY_RULES_BY_CODE}


def migrate_file(kind: Kind, data: bytes, path: str, options: Options) -> FileResult:
    return with_not_migrated_row(_migrate_by_kind(kind, data, path, options))


def _migrate_by_kind(kind: Kind, data: bytes, path: str, options: Options) -> FileResult:
    if kind == Kind.NOTEBOOK:
        # A notebook runs in one kernel on one card, never under the multi-NPU launcher or with
        # DEVICE_ID set: it gets the single-card migration whatever the mode.
        single_card = Options(api=options.api, transformers=options.transformers)
        return migrate_notebook(data, path, single_card, rules_for(single_card))
    if kind == Kind.LAUNCH_SCRIPT:
        return migrate_script(data, path, options=options)
    return migrate_source(data, path, options, rules_for(options))
