"""`-sim`: calls of operators without an NPU kernel go to exact equivalents in the generated
package ascend_function/ (similar.py holds the equivalents)."""
from __future__ import annotations

from pathlib import Path

from ..knowledge import ascend_functions as equivalents
from ..outputs.tree_copy import write_new
from ..records.usage import UsageError

# The equivalents' rule reads only the calls it rewrites, but the option is rare: whole files.
CUTS = False


def active(options) -> bool:
    return options.similar


def settings(request, source: Path) -> bool:
    """-sim writes ascend_function/ at the top of the output: an input folder of that name must be
    one gpu2npu wrote (a migrated tree migrated again), never the project's own."""
    if not request.similar:
        return False
    existing = source / equivalents.PACKAGE
    if not source.is_dir() or not (existing.exists() or existing.is_symlink()):
        return True
    files = sorted(p.relative_to(existing).as_posix() for p in existing.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts) if existing.is_dir() else []
    ours = existing.is_dir() and (files == [] or files == ["__init__.py"] and (existing / "__init__.py").read_text(
        encoding="utf-8", errors="replace") == equivalents.package_text())
    if not ours:
        raise UsageError(f"-sim writes {equivalents.PACKAGE}/ into the output, but the input already has its own "
                         f"{existing}: rename it, or migrate without -sim")
    return True


def place(rules, options):
    from ..rules import AscendFunctionEquivalents, after_common_rules

    return after_common_rules(rules, AscendFunctionEquivalents)


def write(staging, target, options, result, logger):
    folder = staging / equivalents.PACKAGE
    folder.mkdir(exist_ok=True)
    write_new(folder / "__init__.py", equivalents.package_text().encode("utf-8"))  # (not through a link of the input's)
    used = sorted({c.file for c in result.changes if c.rule == "NPU252"})
    logger.info(f"wrote {equivalents.PACKAGE}/ (-sim): equivalents of {', '.join(sorted(equivalents.equivalents()))}; "
                f"used by {len(used)} files")
    return []


def new_files(folder, options):
    return []
