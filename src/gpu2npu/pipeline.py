"""One file through the migration: parse -> ordered rules -> analysis -> new text and records.

`migrate_source` is pure (bytes in, `FileResult` out) and never raises for a bad file: a file
that cannot be decoded or parsed comes back as a failure with its reason, and the run goes on.
"""
from __future__ import annotations

import ast
import enum
import functools
import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Type

import libcst as cst
from libcst.metadata import MetadataWrapper

from . import apidata, guards
from .analysis import find_leftovers
from .change import Change, Finding, Operation
from .linemap import LineMap
from .rules import SINGLE_CARD_RULES, FileContext, Options, Rule, npu_aware
from .rules.batch import run_batch

# A file containing none of these cannot be touched by any rule or reported by the analysis,
# so it is not parsed at all.
RELEVANT_WORDS = ("cuda", "CUDA", "nccl", "NCCL", "DataParallel", "DataLoader", "torch_npu", ".to(", "device=",
                  "apex", "amp_C", "cupy", "pycuda", "pynvml", "nvidia", "GPUtil", "triton", "flash_attn",
                  "xformers", "bitsandbytes", "tensorrt", "torch2trt")


@functools.lru_cache(maxsize=None)
def _pattern_for(names: frozenset) -> "re.Pattern":
    return re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\s*\(")


def _missing_ops_pattern(api) -> "re.Pattern":
    return _pattern_for(apidata.ops_without_npu_kernel(api))


def _relevant(data: bytes, api) -> bool:
    """Whether anything in the file could be changed or reported: CUDA words, or a call of an
    operator this torch_npu release has no kernel for."""
    return any(word.encode() in data for word in RELEVANT_WORDS) or _missing_ops_pattern(api).search(data) is not None


class Status(str, enum.Enum):
    MIGRATED = "migrated"  # changed
    UNCHANGED = "unchanged"  # parsed, nothing to change
    SKIPPED = "skipped"  # nothing relevant in it, not parsed
    FAILED = "failed"  # could not be decoded or parsed: copied as it is


@dataclass
class FileResult:
    path: str
    status: Status
    output: Optional[bytes] = None  # None: the output is the input, byte for byte
    changes: List[Change] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    error: str = ""


def migrate_source(
    data: bytes,
    path: str,
    options: Options,
    rules: Sequence[Type[Rule]] = SINGLE_CARD_RULES,
) -> FileResult:
    # Files that receive start-up code are migrated whatever they contain.
    starts_program = (options.distributed is not None and path == options.distributed.main_file) or (
        options.specify_device is not None and path in options.specify_device.entry_files
    )
    refusal = guards.not_source(data)
    if refusal is None and not starts_program and not _relevant(data, options.api):
        return FileResult(path, Status.SKIPPED)
    refusal = refusal or guards.too_large(data)
    if refusal is not None:
        return FileResult(path, Status.FAILED, error=refusal)
    if guards.risky(data) and not _IN_CHILD:
        return guards.in_child(lambda: _migrate_in_child(data, path, options, rules),
                               lambda reason: FileResult(path, Status.FAILED, error=reason))
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        return FileResult(path, Status.FAILED, error=_syntax_error(data, error))
    except (UnicodeDecodeError, LookupError, SyntaxError) as error:
        return FileResult(path, Status.FAILED, error=f"cannot be decoded: {error}")
    except RecursionError:
        return FileResult(path, Status.FAILED, error="nested too deeply to parse")
    except Exception as error:  # the parser's own failures must not end the run
        return FileResult(path, Status.FAILED, error=f"cannot be parsed: {type(error).__name__}: {error}")
    try:
        return _apply_rules(module, data, path, options, rules)
    except RecursionError:
        return FileResult(path, Status.FAILED, error="nested too deeply to migrate")
    except Exception as error:  # a defect of ours must cost one file, not the run
        return FileResult(path, Status.FAILED,
                          error=f"internal error while migrating ({type(error).__name__}: {error}); please report it")


def _syntax_error(data: bytes, error: cst.ParserSyntaxError) -> str:
    where = f"line {error.raw_line}, column {error.raw_column + 1}"
    try:
        ast.parse(data)  # CPython's parser reads the text and runs nothing
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return f"syntax error at {where}: not valid Python 3"
    # LibCST gives up on some valid code (thousands of adjacent strings, say) with a syntax error.
    return f"nested too deeply or too complex to parse at {where} (though valid Python)"


# True in the forked child that migrates a file whose nesting could crash the parser.
_IN_CHILD = False


def _migrate_in_child(data: bytes, path: str, options: Options, rules) -> FileResult:
    global _IN_CHILD
    _IN_CHILD = True
    return migrate_source(data, path, options, rules)


def _apply_rules(module: cst.Module, data: bytes, path: str, options: Options, rules) -> FileResult:
    code = module.code
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    guarded = npu_aware.guarded_spans(wrapper)
    context = FileContext(path=path, options=options, guarded=guarded)
    outcome = run_batch([rule for rule in rules if rule.wants(code)], wrapper, context)
    changes = [
        Change(path, edit.start_line, edit.end_line, edit.operation, code_, edit.message)
        for code_, edit in outcome.edits
    ]
    findings: List[Finding] = list(outcome.findings)
    new_code = outcome.module.code
    lines = LineMap(len(code.splitlines()))
    if new_code != code:
        lines.update(code, new_code)
        wrapper = MetadataWrapper(outcome.module, unsafe_skip_copy=True)

    context.original_line = lines.original
    findings.extend(_relocate(f, lines) for f in find_leftovers(wrapper, path, options.api, context))
    if not changes:
        return FileResult(path, Status.UNCHANGED, findings=sorted(set(findings)))
    return FileResult(path, Status.MIGRATED, outcome.module.bytes, sorted(changes, key=_change_order), sorted(set(findings)))


def _relocate(finding: Finding, lines: LineMap) -> Finding:
    return Finding(
        finding.file,
        lines.original(finding.start_line),
        lines.original(finding.end_line),
        finding.report,
        finding.api,
        finding.tip,
        finding.rule,
    )


def _change_order(change: Change):
    return (change.start_line, change.end_line, change.operation != Operation.INSERT)
