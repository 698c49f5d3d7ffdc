"""One file through the migration: parse -> ordered rules -> analysis -> new text and records.

`migrate_source` is pure (bytes in, `FileResult` out) and never raises for a bad file: a file
that cannot be decoded or parsed comes back as a failure with its reason, and the run goes on.
"""
from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import re
from typing import Dict, List, Optional, Sequence, Set, Type

import libcst as cst
from ..rules.walk import MetadataWrapper

from ..knowledge import apidata
from .. import modes
from . import partial
from ..records import results
from ..reading import scan, source_limits
from ..findings.affinity import TF32_ADVICE, advice_for_source
from ..findings.leftovers import find_leftovers
from ..findings.hazards import hazards_for_source
from ..records.change import Change, Finding, Operation
from ..reading.file_facts import FactsOfScan
from ..reading.kernel_launchers import launcher_names, module_name
from ..reading.linemap import LineMap, source_lines
from ..reading.scan.reading import last_name
from ..records.results import FileResult, Status
from ..rules import positions
from ..rules import (REROUTING_RULES, COMMON_RULES, SINGLE_CARD_RULES, Bf16CapabilityGateToNpu, Bf16ReadinessWithoutCudaVersion, FileContext, Options, Rule,
                    Tf32ToHf32, device_guards, npu_aware)
from ..rules.bf16_readiness import CUDA_VERSION
from ..rules.reroute import answers_probe
from ..rules.batch import run_batch
from ..rules.cuda_implementations import cuda_implementations
from ..rules.custom import apply_custom_rules
from ..rules.names import ImportAliases, top_level_statements
from ..knowledge.tips import CUDA_ONLY_PACKAGES, TRANSFORMERS_ATTENTION_VALUES

# When Python's `ast` cannot read a file (newer syntax, broken code), a file containing none of
# these, and nothing else the scan would send to the rules (`scan.could_need_rewrite`), cannot be
# touched by any rule or reported by the analysis, so it is not parsed at all.
# (the CUDA-only packages are tips.CUDA_ONLY_PACKAGES, as the scan and the analysis know them)
RELEVANT_WORDS = tuple(dict.fromkeys(("cuda", "CUDA", "nccl", "NCCL", "DataParallel", "DataLoader", "torch_npu", ".to(",
                                      "device=", "nvidia", *TRANSFORMERS_ATTENTION_VALUES, *CUDA_ONLY_PACKAGES)))


@functools.lru_cache(maxsize=None)
def _pattern_for(names: frozenset) -> "re.Pattern":
    return re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\s*\(")


def _missing_ops_pattern(api) -> "re.Pattern":
    return _pattern_for(apidata.ops_without_npu_kernel(api))


def _relevant(data: bytes, api) -> bool:
    """Whether anything in the file could be changed or reported: CUDA words, anything that makes
    the scan send a file to the rules (a CUDA-only package, an env var of CUDA's, a TF32 switch,
    a device argument), or a call of an operator this torch_npu release has no kernel for."""
    return (any(word.encode() in data for word in RELEVANT_WORDS) or _missing_ops_pattern(api).search(data) is not None
            or scan.could_need_rewrite(data.decode("utf-8", "replace")))


def migrate_source(
    data: bytes,
    path: str,
    options: Options,
    rules: Sequence[Type[Rule]] = SINGLE_CARD_RULES,
) -> FileResult:
    try:
        return _migrate_and_advise(data, path, options, rules)
    except RecursionError:
        return FileResult(path, Status.FAILED, error="nested too deeply to read")
    except Exception as error:  # a defect of ours in what reads the file must cost one file, not the run
        if results.pending_interrupt is not None:
            raise results.pending_interrupt from error
        return FileResult(path, Status.FAILED,
                          error=f"internal error while reading ({type(error).__name__}: {error}); please report it")


def _migrate_and_advise(data: bytes, path: str, options: Options, rules: Sequence[Type[Rule]]) -> FileResult:
    tree = scan.parse(data)
    file_scan = scan.FileScan(tree, data) if tree is not None else None
    result = _migrate_source(data, file_scan, path, options, rules)
    # Advice (fused torch_npu APIs) concerns files with nothing to migrate too: model code
    # rarely mentions CUDA.  It reads the input, so its line numbers are the original ones.
    if result.status != Status.FAILED and tree is not None:
        # and so do the CUDA questions the rules leave (torch.version.cuda, torch.compile, ...)
        advice = _unanswered((advice_for_source(data, path, options.api, file_scan) if options.advice else [])
                             + hazards_for_source(data, file_scan, path, options.api, options.similar,
                                                  path in options.npu_backend_files, options.pins),
                             result.changes)
        if options.third_party_apis and file_scan is not None:
            from ..findings.affected_apis import affected_calls

            advice += affected_calls(file_scan, path, options.third_party_apis)
        if advice:
            result.findings = sorted(set(result.findings) | set(advice))
    elif result.status != Status.FAILED:
        # what the ast would have told (API rows, hazards) is missing: the reports say so
        unanalysed = scan.not_parsed_row(data, path)
        if unanalysed is not None:
            result.findings = sorted(set(result.findings) | {unanalysed})
    return result


# Rows read from the input about a construct that a rule rewrites: the rule's code -> the rows
# that its change answers where it stands (the TF32 advice once the switch is the HF32 one, the
# torch.version.cuda row once NPU109 took the test out of a bf16 check).
ANSWERED_BY = {
    Tf32ToHf32.code: lambda row, change: row.rule == TF32_ADVICE or row.api.endswith(".fp32_precision"),
    Bf16ReadinessWithoutCudaVersion.code: lambda row, change: row.api == CUDA_VERSION,
    # the capability or `.major` that a bf16 gate no longer reads
    Bf16CapabilityGateToNpu.code: lambda row, change: row.api in ("device properties .major",
                                                                   "device properties .major, .minor",
                                                                   "device properties .minor, .major"),
    # a rerouting rule's change of that find_spec probe (not its sys.path line, inserted there)
    **{rule.code: (lambda row, change: answers_probe(row.api, change.message)) for rule in REROUTING_RULES},
}


def _unanswered(rows: List[Finding], changes: List[Change]) -> List[Finding]:
    answers = [change for change in changes if change.rule in ANSWERED_BY]
    return [row for row in rows
            if not any(change.start_line <= row.start_line <= change.end_line and ANSWERED_BY[change.rule](row, change)
                       for change in answers)]


def _migrate_source(data: bytes, file_scan: Optional["scan.FileScan"], path: str, options: Options,
                    rules: Sequence[Type[Rule]]) -> FileResult:
    # Files that receive start-up code are migrated whatever they contain.
    starts_program = (options.distributed is not None and path == options.distributed.main_file) or (
        options.specify_device is not None and path in options.specify_device.entry_files
    )
    # -m wraps file paths, which any file may use; -r rules name their own functions.
    for_options = options.modelarts or (
        options.custom_rules is not None and any(word.encode() in data for word in options.custom_rules.words())
    )
    refusal = source_limits.not_source(data)
    api_rows: List[Finding] = []
    if refusal is None and file_scan is not None:
        api_rows = scan.api_findings(file_scan, path, options.api, options.similar)
        if not starts_program and not for_options and not _needs_rewrite(file_scan, data, rules):
            return FileResult(path, Status.UNCHANGED, findings=sorted(set(api_rows)))
    elif (refusal is None and not starts_program and not for_options and not _relevant(data, options.api)
          and not _triggers_a_mode_rule(data, rules)):
        return FileResult(path, Status.SKIPPED)
    if refusal is not None:
        return FileResult(path, Status.FAILED, error=refusal)
    may_cut = file_scan is not None and not starts_program and modes.may_cut(options)
    too_large = source_limits.too_large(data)
    if too_large is not None and not may_cut:
        return FileResult(path, Status.FAILED, error=too_large)
    if source_limits.risky(data) and not _IN_CHILD:
        return source_limits.in_child(lambda: _migrate_in_child(data, file_scan, path, options, rules),
                               lambda reason: FileResult(path, Status.FAILED, error=reason))
    result = None
    # (one for the file, whichever way it is migrated: what it reads is read once)
    facts = FactsOfScan(file_scan, data=data) if file_scan is not None else None
    if too_large is not None:
        result = _migrate_chunks(data, file_scan, path, options, rules, facts)
        if result is None:
            return FileResult(path, Status.FAILED, error=too_large)
    elif may_cut:
        result = _migrate_cut(data, file_scan, path, options, rules, facts)
    if result is None:
        # (a text Python's ast could not read has no scopes to find: it is not parsed for them again)
        result = _migrate_whole(data, path, options, rules, file_scan.imports.scopes if file_scan is not None else None,
                                facts)
    if api_rows and result.status != Status.FAILED:
        result.findings = sorted(set(result.findings) | set(_still_called(api_rows, result.changes)))
    return result


# Rules that replace the callee of a call: an API row of the original on a line they edited no
# longer describes the output (-sim's equivalents, -r FuncNameModifyRule).
CALL_REPLACING_RULES = ("NPU252", "NPU702")


def _still_called(api_rows: List[Finding], changes: List[Change]) -> List[Finding]:
    replaced = [(c.start_line, c.end_line) for c in changes if c.rule in CALL_REPLACING_RULES]
    if not replaced:
        return api_rows
    return [row for row in api_rows if not any(first <= row.start_line <= last for first, last in replaced)]


def _migrate_whole(data: bytes, path: str, options: Options, rules: Sequence[Type[Rule]], scopes=None,
                   facts: Optional[FactsOfScan] = None) -> FileResult:
    """`scopes`: the scopes of `data` where the scan read them (None: no name of it depends on the
    place), or _UNKNOWN: found from the text; `facts`: what the whole file says, where the scan read
    it (None: `ast` cannot read `data` whole, read from its statements where a rule asks)."""
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
    if facts is None:  # (a text `ast` cannot read whole: its facts come from its statements that it can)
        facts = FactsOfScan(None, lambda: top_level_statements(module))
    try:
        # libcst prints back exactly what it read: the text is the decoded input, not a printing
        return _apply_rules(module, data.decode(module.encoding), path, options, rules, scopes, facts)
    except RecursionError:
        return FileResult(path, Status.FAILED, error="nested too deeply to migrate")
    except Exception as error:  # a defect of ours must cost one file, not the run
        if results.pending_interrupt is not None:
            raise results.pending_interrupt from error
        return FileResult(path, Status.FAILED,
                          error=f"internal error while migrating ({type(error).__name__}: {error}); please report it")


def _migrate_cut(data: bytes, file_scan: "scan.FileScan", path: str, options: Options,
                 rules: Sequence[Type[Rule]], facts: FactsOfScan) -> Optional[FileResult]:
    """A large file migrated through its relevant top-level statements only (see `partial`);
    None when the file is not cut, or the cut run did not come back clean.  `facts`: the whole
    file's."""
    reduction = partial.reduce(data, file_scan.tree, _relevant_lines(file_scan, facts, options))
    if reduction is None:
        return None
    result = _migrate_whole(reduction.source.encode("utf-8"), path, options, rules, _scopes_of_parts(file_scan), facts)
    if result.status == Status.FAILED:
        return None
    output = None
    if result.output is not None:
        output = partial.expand(data, reduction, result.output.decode("utf-8"))
        if output is None:
            return None
    result.output = output
    result.changes, result.findings = _in_original_lines(result, reduction)
    return result


def _relevant_lines(file_scan: "scan.FileScan", facts: FactsOfScan, options: Options) -> List[int]:
    """The lines a cut file keeps (FileScan.relevant_lines), and those that name a GPU kernel or a
    launcher of one, the file's or the project's: a test around such a call may ask a question
    of the file (`if _fused_ok(p): scale(p)`) whose own device test answers for CUDA only where
    the question is seen asked (device_guards), though no word of CUDA is on the test's line."""
    lines = set(file_scan.relevant_lines()) | _searchers_of_the_device_name(file_scan)
    launchers = (facts.kernel_launchers or {}).keys() | launcher_names(options.kernel_launchers)
    if not launchers:
        return sorted(lines)
    named = {node.lineno for node in file_scan.groups.get(ast.Name, ()) if node.id in launchers}
    named.update(node.lineno for node in file_scan.groups.get(ast.Attribute, ()) if node.attr in launchers)
    return sorted(lines | named)


def _searchers_of_the_device_name(file_scan: "scan.FileScan") -> Set[int]:
    """The first lines of the file's functions that a call hands the device's name
    (`normalized(torch.cuda.get_device_name(0))`): the device test around the call answers for what
    the function does with it (a search of a table of NVIDIA GPUs: device_guards), so a cut file
    keeps the function."""
    if not any(last_name(call.func) == "get_device_name" for call in file_scan.calls):
        return set()  # (most files never ask for the name: their calls' arguments are not walked)
    handed = {call.func.id for call in file_scan.calls if call.func.__class__ is ast.Name and any(
        inner.__class__ is ast.Call and last_name(inner.func) == "get_device_name"
        for argument in (*call.args, *(keyword.value for keyword in call.keywords)) for inner in ast.walk(argument))}
    if not handed:
        return set()
    return {node.lineno for node in file_scan.nodes_of_class(ast.FunctionDef, ast.AsyncFunctionDef) if node.name in handed}


def _in_original_lines(result: FileResult, reduction: "partial.Reduction"):
    """The changes and findings of a piece's migration, at the lines of the original file."""
    def line(number: int) -> int:
        return partial.original_line(reduction, number)

    return ([dataclasses.replace(c, start_line=line(c.start_line), end_line=line(c.end_line)) for c in result.changes],
            [dataclasses.replace(f, start_line=line(f.start_line), end_line=line(f.end_line)) for f in result.findings])


# A file above source_limits.MAX_SOURCE_BYTES is migrated in pieces of at most this many bytes, each
# parsed on its own: libcst holds about 650 MB per MiB of source while it works.
CHUNK_BYTES = 512 * 1024


def _migrate_chunks(data: bytes, file_scan: "scan.FileScan", path: str, options: Options,
                    rules: Sequence[Type[Rule]], facts: FactsOfScan) -> Optional[FileResult]:
    """A file too large to parse whole, migrated in pieces (`partial.chunks`): the definitions
    to migrate are spread over smaller modules that each hold the module-level context; None
    when it cannot be cut so or the pieces disagree on the context (see `partial.merge`).  `facts`:
    the whole file's."""
    reductions = partial.chunks(data, file_scan.tree, _relevant_lines(file_scan, facts, options), CHUNK_BYTES)
    if reductions is None:
        return None
    outputs: List[str] = []
    # A context statement's changes come from every piece, a definition's from one: each change
    # as many times as one piece made it (two identical edits on one line are two rows), in the
    # order the pieces made them.
    changes: Dict[Change, int] = {}
    findings: Set[Finding] = set()
    for reduction in reductions:
        source = reduction.source.encode("utf-8")
        result = _migrate_whole(source, path, options, rules, _scopes_of_parts(file_scan), facts)
        if result.status == Status.FAILED:
            return None
        outputs.append((result.output or source).decode("utf-8"))
        made, found = _in_original_lines(result, reduction)
        for change, count in collections.Counter(made).items():
            changes[change] = max(count, changes.get(change, 0))
        findings.update(found)
    output = partial.merge(data, reductions, outputs)
    if output is None:
        return None
    if not changes:
        return FileResult(path, Status.UNCHANGED, findings=sorted(findings))
    rows = [change for change, count in changes.items() for _ in range(count)]
    return FileResult(path, Status.MIGRATED, output, sorted(rows, key=_change_order), sorted(findings))


def _needs_rewrite(file_scan: "scan.FileScan", data: bytes, rules: Sequence[Type[Rule]]) -> bool:
    """Whether the file must go through libcst: the ast scan's generous test for the rules every
    mode runs, and the text triggers of the mode-specific rules (distributed, -s)."""
    return file_scan.needs_rewrite() or _triggers_a_mode_rule(data, rules)


# The rules every mode runs: the scan's test covers them (the others have text triggers).
_EVERY_MODES_RULES = frozenset(COMMON_RULES) | frozenset(SINGLE_CARD_RULES)


def _triggers_a_mode_rule(data: bytes, rules: Sequence[Type[Rule]]) -> bool:
    return any(trigger.encode() in data for rule in rules if rule not in _EVERY_MODES_RULES for trigger in rule.triggers)


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


def _migrate_in_child(data: bytes, file_scan, path: str, options: Options, rules) -> FileResult:
    """The migration proper, in the forked child: the parent has parsed the tree already (the
    child shares it) and adds the advice to whatever comes back."""
    global _IN_CHILD
    _IN_CHILD = True
    return _migrate_source(data, file_scan, path, options, rules)


# (the scopes of a text not read with `ast` before: found from the text the rules are given)
_UNKNOWN = object()


def _scopes_of_parts(file_scan: "scan.FileScan"):
    """What the pieces of a large file know of their scopes: where no name of the whole file
    depends on the place, none of a piece's does (its statements are the file's); else they are
    found from each piece's text, whose lines are not the file's."""
    return None if file_scan.imports.scopes is None else _UNKNOWN


def _apply_rules(module: cst.Module, code: str, path: str, options: Options, rules, scopes=_UNKNOWN,
                 facts: Optional[FactsOfScan] = None) -> FileResult:
    lines = LineMap(len(source_lines(code)))  # the built-in rules' input -> the original file
    changes: List[Change] = []
    if options.custom_rules is not None:
        # -r: the user's rules first, in a pass of their own; the built-in rules then resolve
        # names in its output, and their lines are mapped back through `lines`.
        module, custom_edits = apply_custom_rules(module, path, options)
        changes = [Change(path, e.start_line, e.end_line, e.operation, code_, e.message) for code_, e in custom_edits]
        if module.code != code and scopes is not None:
            scopes = _UNKNOWN  # (the built-in rules read the custom rules' output)
        lines.update(code, module.code)
        code = module.code
    if scopes is _UNKNOWN:
        scopes = scan.scopes_of_code(code)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    aliases = ImportAliases.of(module)
    own = options.own_packages_of(path)
    plans = {rule.code: rule.plan_for(module, code, own, options.reroute_kept) for rule in REROUTING_RULES}
    rerouted = set().union(*(plan.names for plan in plans.values()))
    aware, dead = device_guards.guarded_spans(wrapper, options.api, code, aliases, rerouted, scopes, facts, own=own,
                                              npu_backend=path in options.npu_backend_files,
                                              launchers=options.kernel_launchers, operators=options.python_operators,
                                              npu_constants=options.npu_constants,
                                              kernel_questions=options.kernel_questions,
                                              enum_parameters=options.enum_parameters,
                                              module=module_name(path),
                                              package=path.endswith("__init__.py"))
    implementations = cuda_implementations(wrapper, code)
    context = FileContext(path=path, options=options, guarded=aware | frozenset(dead) | frozenset(implementations),
                          dead_guards=dead, cuda_implementations=implementations,
                          import_aliases=aliases, scopes=scopes, reroute_plans=plans, file_facts=facts)
    outcome = run_batch([rule for rule in rules if rule.wants(code)], wrapper, context)
    changes += [
        Change(path, lines.original(edit.start_line), lines.original(edit.end_line), edit.operation, code_, edit.message,
               edit.wrote)
        for code_, edit in outcome.edits
    ]
    findings: List[Finding] = [_relocate(finding, lines) for finding in outcome.findings]
    new_code = code
    output_scopes = scopes
    stage = LineMap(len(source_lines(code)))  # the output -> the built-in rules' input
    if outcome.module is not module:  # (the rules' walk rebuilds only what changed)
        # the leftover analysis reads the output's positions and parents: found with its code
        printed = positions.printing(outcome.module)
        new_code = printed.code
        if new_code != code:
            stage.update(code, new_code)
            wrapper = MetadataWrapper(outcome.module, unsafe_skip_copy=True)
            wrapper.know_printing(printed)
            # (its positions moved; where no name of the input depends on the place, the file-wide
            # table serves the output too)
            output_scopes = scan.scopes_of_code(new_code) if scopes is not None else None

    context.original_line = stage.original
    leftovers = find_leftovers(wrapper, path, options.api, context, output_scopes, new_code)
    findings.extend(_relocate(_relocate(f, stage), lines) for f in leftovers)
    findings = _one_verdict_per_line(findings, changes)
    if not changes:
        return FileResult(path, Status.UNCHANGED, findings=sorted(set(findings)))
    return FileResult(path, Status.MIGRATED, new_code.encode(module.encoding), sorted(changes, key=_change_order), sorted(set(findings)))


def _one_verdict_per_line(findings: List[Finding], changes: List[Change]) -> List[Finding]:
    """A line that was migrated is not also "left as written": the NPU-aware note of a construct
    goes where a rule edited another part of its lines."""
    edited = {line for c in changes if c.operation == Operation.MODIFY for line in range(c.start_line, c.end_line + 1)}
    return [f for f in findings if not (f.api == npu_aware.NOTE_API and
                                        any(line in edited for line in range(f.start_line, f.end_line + 1)))]


def _relocate(finding: Finding, lines: LineMap) -> Finding:
    return dataclasses.replace(finding, start_line=lines.original(finding.start_line),
                               end_line=lines.original(finding.end_line))


def _change_order(change: Change):
    return (change.start_line, change.end_line, change.operation != Operation.INSERT)
