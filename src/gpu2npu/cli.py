"""Command line, compatible with the incumbent's `pytorch_gpu2npu.sh`:

    gpu2npu -i INPUT -o OUTPUT -v TORCH_VERSION

The shell only parses options, calls `project.run` and prints the summary.
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import List, Optional

import click

from . import __version__
from .knowledge import apidata
from .migration import cache
from .records import results
from .commands.check import MANUAL, NOT_LOOKED_AT, check_paths
from .commands.project import preview, run
from .commands.request import DistributedRequest, RunRequest, UsageError
from .reports import check_formats, console
from .reports.progress import ProgressLine
from .records.options import Options

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_CHECK_FAILED = 3  # check: the check itself failed (a defect), not "findings"
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): 128 + 2
EXIT_TERMINATED = 143  # SIGTERM: 128 + 15

EPILOG = f"""\b
Exit status:
  0    every file was migrated (or needed nothing)
  1    the run failed
  2    usage error (bad option, missing input, output inside input, output exists); nothing written
  3    finished, but some files could not be processed (copied unchanged, listed in the log)
  130  interrupted (Ctrl-C); nothing half-written is left behind
  143  terminated (SIGTERM); nothing half-written is left behind
\b
PyTorch versions with API data: {", ".join(apidata.available_versions())}
"""


# what click hands over for an -v given no value (it cannot be typed)
_NO_VALUE = "\0"


def _fail(message: str, status: int = EXIT_USAGE) -> None:
    click.echo(f"gpu2npu: error: {message}", err=True)
    sys.exit(status)


def _version(text: Optional[str]) -> str:
    """The known PyTorch version -v names (said on stderr when it is not written out); without
    -v, the newest (check and dryrun)."""
    if not text:
        return apidata.available_versions()[-1]
    try:
        version = apidata.resolve_version(text)
    except apidata.UnknownVersionError as error:
        _fail(str(error))
    if version != text:
        api = apidata.load(version)
        click.echo(f"gpu2npu: -v {text}: PyTorch {version} (torch_npu {api.torch_npu_version})", err=True)
    return version


@click.group(
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EPILOG,
)
@click.option("-i", "--input", "input_path", type=click.Path(path_type=Path), metavar="INPUT",
              help="Folder of the project to migrate (a single .py file is accepted too).")
@click.option("-o", "--output", "output_path", type=click.Path(path_type=Path), metavar="OUTPUT",
              help="Folder that receives INPUT_NAME_msft/ (the migrated copy and its reports); must not lie inside INPUT.")
@click.option("-v", "--version", "torch_version", metavar="VERSION", is_flag=False, flag_value=_NO_VALUE,
              help="PyTorch version of the original code; selects what torch_npu provides (2.1, 2.1.0 and "
                   "2.1.0+cu121 all mean 2.1.0; default: [tool.gpu2npu] version of INPUT's pyproject.toml). "
                   "`gpu2npu --version` alone prints gpu2npu's own version.")
@click.option("-s", "--specify-device", is_flag=True,
              help="The NPU comes from the DEVICE_ID environment variable at run time (default 0), set once per program.")
@click.option("-r", "--rule", "rule_file", type=click.Path(path_type=Path), metavar="FILE",
              help="Custom rules (JSON, the incumbent's schema: ArgsModifyRule, FuncNameModifyRule, "
                   "ModuleNameModifyRule), applied before the built-in rules; see `gpu2npu explain NPU701`.")
@click.option("-a", "--amp-model", "amp_model", metavar="MODEL_VAR",
              help="Convert the native AMP (autocast, GradScaler) that trains MODEL_VAR (self.model allowed) to "
                   "Ascend apex amp (amp.initialize O2, amp.scale_loss).")
@click.option("-sim", "--similar", is_flag=True,
              help="Replace calls of APIs this torch_npu release cannot run with NPU-friendly equivalents from a "
                   "generated ascend_function/ package.")
@click.option("-m", "--modelarts", is_flag=True,
              help="(Before `distributed`.) The migrated script can run on ModelArts: writes "
                   "ascend_modelarts_function/ and routes file paths through its ModelArtsPathManager.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes (0: one per core); output and reports are the same for any number.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where per-file results are kept so that a re-run redoes only what changed "
                   "(default: $GPU2NPU_CACHE_DIR, else ~/.cache/gpu2npu). Never inside the output.")
@click.option("--no-cache", is_flag=True, help="Migrate every file afresh and keep no results.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the unified diff of what would change and write nothing (-o is not needed).")
@click.option("--force", is_flag=True, help="Replace an existing INPUT_NAME_msft/ (it is kept until the new one is complete).")
@click.option("--no-html", is_flag=True, help="Do not write report.html (the review page beside the CSVs).")
@click.option("--report-dir", type=click.Path(path_type=Path),
              help="Write the reports and the log here instead of into INPUT_NAME_msft/.")
@click.option("-api", "--third-party-apis", "api_files", multiple=True, type=click.Path(path_type=Path), metavar="CSV",
              help="A library's affected APIs (full_unsupported_results.csv of `gpu2npu analyse -m third_party`); "
                   "the project's calls of them go to unsupported_api.csv with the chain. Repeat for several files.")
@click.version_option(__version__, "-V", "--tool-version", prog_name="gpu2npu", message="%(prog)s %(version)s")
@click.pass_context
def main(ctx, input_path, output_path, torch_version, specify_device, rule_file, amp_model, similar, modelarts,
         jobs, cache_dir, no_cache, show_diff, force, no_html, report_dir, api_files):
    """Migrate PyTorch training code written for NVIDIA GPUs (CUDA) to Huawei Ascend NPUs
    (torch_npu), source to source.

    Writes OUTPUT/INPUT_NAME_msft/: the whole input tree with every .py file, notebook and launch
    script migrated, the dependency files too (requirements*.txt, environment.yml, pyproject.toml,
    setup.py/setup.cfg: torch pinned for torch_npu, torch_npu added, CUDA-only packages removed
    where no migrated file imports them; Dockerfiles reported), every other file copied byte for
    byte, plus change_list.csv (every edit), unsupported_api.csv
    (what has no NPU equivalent, with tips), unknown_api.csv, cuda_op_list.csv (custom CUDA
    operators), api_performance_advice.csv and the log msFmkTranspltlog.txt.

    Example: gpu2npu -i ./my_project -o ./out -v 2.1.0
    """
    if torch_version == _NO_VALUE:
        alone = ctx.invoked_subcommand is None and not any(
            value not in (None, False, (), 0) for name, value in ctx.params.items() if name != "torch_version")
        if not alone:  # (a forgotten value, `-v $UNSET` before another option, must not pass for a run)
            _fail("-v/--version needs a torch version, such as -v 2.1.0 (`gpu2npu --version` alone prints gpu2npu's)")
        click.echo(f"gpu2npu {__version__}")
        sys.exit(EXIT_OK)
    if torch_version is not None and not torch_version.strip():
        _fail("-v/--version needs a torch version, such as -v 2.1.0 (an empty value was given)")
    if ctx.invoked_subcommand is not None:
        return
    _migrate(ctx.params)


def _migrate(params, distributed: DistributedRequest = None) -> None:
    config = _input_config(params["input_path"])
    params = dict(params, torch_version=_table_version(params["torch_version"], config))
    required = [("-i/--input", "input_path"), ("-v/--version", "torch_version")]
    if not params["show_diff"]:
        required.insert(1, ("-o/--output", "output_path"))
    missing = [flag for flag, key in required if params[key] is None]
    if missing:
        _fail(f"missing option {', '.join(missing)} (see gpu2npu --help)")
    params = dict(params, torch_version=_version(params["torch_version"]))
    request = RunRequest(input=params["input_path"], output=params["output_path"], version=params["torch_version"],
                         force=params["force"], report_dir=params["report_dir"], distributed=distributed,
                         specify_device=params["specify_device"], jobs=params["jobs"],
                         rule_file=params["rule_file"], modelarts=params["modelarts"],
                         amp_model=params["amp_model"], similar=params["similar"], html=not params["no_html"],
                         api_files=tuple(params["api_files"]), config=config,
                         cache_dir=None if params["no_cache"] else (params["cache_dir"] or cache.default_folder()))
    if params["show_diff"]:
        _print_preview(request)
    result = _carry_out(run, request)

    titles = {code: rule.summary for code, rule in result.rules.items()}
    click.echo(console.report_table(result.report_rows))
    if result.changes:
        click.echo(console.rule_table(result.changes, titles))
        click.echo(console.file_table(result.changes))
    click.echo(
        f"{result.python_files} Python files, {result.script_files} notebooks and launch scripts"
        + (f", {result.dependency_files} dependency files" if result.dependency_files else "") + ": "
        f"{len(result.migrated)} migrated, {len(result.failed)} could not be processed"
        + (f", {result.excluded} excluded by [tool.gpu2npu] (copied unchanged)" if result.excluded else "")
        + f". Output: {result.target}  Reports: {result.report_folder}"
    )
    for note in result.notes:
        click.echo(note)
    if result.page is not None:
        click.echo(f"Review page: {result.page}")
    for warning in result.warnings:
        click.echo(f"gpu2npu: warning: {warning}", err=True)
    for path, reason in result.failed:
        click.echo(f"gpu2npu: warning: {path}: copied unchanged, {reason}", err=True)
    for path, instead in result.not_copied:
        click.echo(f"gpu2npu: warning: {path}: {instead}", err=True)
    sys.exit(EXIT_PARTIAL if result.failed or result.not_copied else EXIT_OK)


def _input_config(input_path: Optional[Path]):
    """The [tool.gpu2npu] table that applies to INPUT (its version and exclude), if any."""
    from .records.project_config import NO_TABLE

    if input_path is None or not input_path.exists():
        return NO_TABLE  # (the missing input is told below)
    return _config([input_path])


def _config(paths, explicit: Optional[Path] = None):
    """The [tool.gpu2npu] table that applies to `paths` (or the --config file); a usage error where
    it cannot be used."""
    from .records.project_config import ConfigError, config_for

    try:
        return config_for(paths, explicit)
    except ConfigError as error:
        _fail(str(error))


def _table_version(given: Optional[str], config) -> Optional[str]:
    """-v, else the table's version (said on stderr): what the migration and analyse run for."""
    if given is None and config.version:
        click.echo(f"gpu2npu: -v {config.version} from [tool.gpu2npu] version of {config.source}", err=True)
        return config.version
    return given


def _project_folder(config, paths) -> Path:
    """Where the project's dependency files are looked for (its pins): the table's folder, else
    the project root above `paths`."""
    from .records.project_config import project_root

    return config.root if config.source is not None else project_root(paths)


def _carry_out(command, request):
    """`command(request, progress)` with a progress line, its usage errors, interrupts and I/O
    errors told as the exit statuses of --help say (a run that writes a result folder)."""
    progress = ProgressLine()

    def progress_or_interrupt(*done_and_total):
        # (after each file) an interrupt that landed where Python ignores what is raised (a
        # weakref callback of the import system, a finalizer) was recorded by the handler: it
        # ends the run here, before the next file, instead of being lost
        if results.pending_interrupt is not None:
            raise results.pending_interrupt
        progress(*done_and_total)

    results.pending_interrupt = None
    try:
        try:
            with _sigterm_as_exception():
                return command(request, progress_or_interrupt)
        except Exception as error:
            # an interrupt that landed where Python wraps what is raised (a class built while a
            # module is imported: RuntimeError from __set_name__) is still the interrupt
            if results.pending_interrupt is not None and error.__cause__ is results.pending_interrupt:
                raise results.pending_interrupt from None
            raise
        finally:
            progress.close()  # before any message, so that none lands on the progress line
    except UsageError as error:
        _fail(str(error))
    except KeyboardInterrupt:
        _exit_after_interrupt("gpu2npu: interrupted; nothing was left half-written", EXIT_INTERRUPTED)
    except Terminated:
        _exit_after_interrupt("gpu2npu: terminated; nothing was left half-written", EXIT_TERMINATED)
    except OSError as error:
        _fail(f"{error}", EXIT_FAILED)


def _exit_after_interrupt(message: str, status: int) -> None:
    """The run is cleaned up (its staging folder removed, its workers ended): say so and end with
    `status`, at once.  A further Ctrl-C or SIGTERM (a second press) is ignored from here on, and
    the interpreter's shutdown is skipped: finalizing what the interrupted run left half-done
    (its frames and generators) could raise the interrupt again and end the process by SIGINT
    instead of the status --help documents (the interrupt tests saw it in about one run in four)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    click.echo(message, err=True)
    logging.shutdown()  # (the log files of a --report-dir run: flushed and closed)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that the run removes its staging folder."""


def _raise_terminated(signum, frame):
    results.pending_interrupt = Terminated()
    raise results.pending_interrupt


def _raise_interrupted(signum, frame):
    results.pending_interrupt = KeyboardInterrupt()
    raise results.pending_interrupt


@contextlib.contextmanager
def _sigterm_as_exception():
    """SIGTERM ends the run the way Ctrl-C does (by default it would kill the process and leave
    the staging folder behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # Ctrl-C as Python raises it, remembered too
        signal.signal(signal.SIGINT, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def _print_preview(request: RunRequest) -> None:
    changed = failed = 0
    warnings: List[str] = []  # (what the migration would warn of: a torch pin other than -v's)
    try:
        for path, diff, error in preview(request, warnings):
            if diff is None:
                failed += 1
                click.echo(f"gpu2npu: warning: {path}: would be copied unchanged, {error}", err=True)
            else:
                changed += 1
                click.echo(diff, nl=False)
    except UsageError as error:
        _fail(str(error))
    click.echo(f"{changed} files would change; nothing was written", err=True)
    for warning in warnings:
        click.echo(f"gpu2npu: warning: {warning}", err=True)
    sys.exit(EXIT_PARTIAL if failed else EXIT_OK)


@main.command("distributed", short_help="Convert a single-card script into one process per NPU (DDP over HCCL).")
@click.option("-m", "--main", "main_file", required=True, type=click.Path(path_type=Path),
              help="The training entry file (inside INPUT); it initialises the process group.")
@click.option("-t", "--target_model", "--target-model", "target", default="model", show_default=True,
              help="Variable holding the model in the main file (dotted names such as self.model allowed).")
@click.option("--split-batch", is_flag=True,
              help="Divide training batch sizes by the number of processes, keeping the global batch (as the Ascend imagenet multi-card guide does).")
@click.pass_context
def distributed(ctx, main_file, target, split_batch):
    """Convert a single-card script into a multi-card one: one process per NPU, DDP over HCCL.

    Options of the migration (-i, -o, -v, ...) come before `distributed`:

        gpu2npu -i PROJECT -o OUT -v 2.1.0 distributed -m train.py -t model

    Writes OUT/PROJECT_msft_multi/ with run_distributed_npu.sh, which starts one process per NPU
    (NPUS=0,1,... bash run_distributed_npu.sh [script arguments]).  The main file initialises the
    HCCL process group (unless the project already does), the model is wrapped in
    DistributedDataParallel, training DataLoaders get a DistributedSampler that keeps their
    shuffle setting and set_epoch is called every epoch.  Only for scripts that load data with
    torch.utils.data.DataLoader.
    """
    _migrate(ctx.parent.params, DistributedRequest(main=main_file, target=target, split_batch=split_batch))


@main.command("check", short_help="Report CUDA-only code without changing anything (CI, pre-commit).")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-v", "--version", "torch_version", default=None, metavar="VERSION",
              help="PyTorch version whose torch_npu release decides what is unsupported (default: [tool.gpu2npu] "
                   "version, else the torch the project pins, else the newest; said on stderr).")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif"]), default="text",
              show_default=True, help="How findings are printed.")
@click.option("--config", "config_file", type=click.Path(path_type=Path), default=None, metavar="PYPROJECT",
              help="Read [tool.gpu2npu] from this file (default: the nearest pyproject.toml above PATHS that has it).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Files and folders not to check (instead of [tool.gpu2npu] exclude); repeat for several.")
@click.option("--ignore", "ignore_codes", multiple=True, metavar="CODES",
              help="Codes not to report, comma-separated (instead of [tool.gpu2npu] ignore); NPU9xx: x is any digit.")
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Fail only on findings that FILE (written by --write-baseline) does not record.")
@click.option("--write-baseline", "write_baseline_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Record today's findings in FILE (sorted JSON, to commit) and exit 0.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes (0: one per core); the findings are the same for any number.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where per-file results are kept so that a re-run looks again only at what changed "
                   "(default: $GPU2NPU_CACHE_DIR, else ~/.cache/gpu2npu; shared with the migration).")
@click.option("--no-cache", is_flag=True, help="Check every file afresh and keep no results.")
@click.option("-api", "--third-party-apis", "api_files", multiple=True, type=click.Path(path_type=Path), metavar="CSV",
              help="A library's affected APIs (full_unsupported_results.csv of `gpu2npu analyse -m third_party`): "
                   "calls of them are findings too. Repeat for several files.")
def check(paths, torch_version, output_format, config_file, exclude, ignore_codes, baseline_file, write_baseline_file,
          jobs, cache_dir, no_cache, api_files):
    """Report CUDA-only code in PATHS (files or folders) without changing anything.

    Exit status 0 when no CUDA-only construct is found, 1 when findings remain (or a file could
    not be read or parsed: NPU925), 2 on a usage error, 3 when the check itself failed.  For CI and pre-commit:
    `gpu2npu check src/ --format sarif > gpu2npu.sarif`.

    \b
    Keeping the gate on:
      # gpu2npu: ignore              at the end of a line: skip its findings
      # gpu2npu: ignore[NPU905]      skip those codes only (a comment that skips nothing is NPU926)
      --write-baseline FILE          accept today's findings; then --baseline FILE fails on new ones only
      [tool.gpu2npu] in pyproject.toml: version, exclude, ignore, per-file-ignores
    """
    from .commands.baseline import BaselineError, LineTexts, match_baseline, write_baseline
    from .records.project_config import ConfigError

    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        _fail(f"no such file or folder: {', '.join(missing)}")
    if baseline_file is not None and write_baseline_file is not None:
        _fail("--baseline and --write-baseline exclude each other")
    config = _config(paths, config_file)
    if exclude:
        config = dataclasses.replace(config, exclude=tuple(exclude))
    if ignore_codes:
        config = dataclasses.replace(config, ignore=tuple(code.strip().upper() for codes in ignore_codes
                                                          for code in codes.split(",") if code.strip()))
    from .dependencies.pins import project_pins
    from .reading.discover import own_packages

    root = _project_folder(config, paths)
    version = _check_version(torch_version, config, root)
    from .findings.affected_apis import ApiFileError, read_api_files

    try:
        options = Options(api=apidata.load(version), third_party_apis=read_api_files(api_files),
                          **project_pins(root)._asdict(), own_packages=own_packages(root))
    except ApiFileError as error:  # (the version is resolved above)
        _fail(str(error))
    try:
        result = check_paths(paths, options, jobs, None if no_cache else (cache_dir or cache.default_folder()),
                             describe=output_format == "sarif", config=config)
    except ConfigError as error:
        _fail(str(error))
    except Exception as error:  # a defect of ours is not a finding: its own status, for CI to tell apart
        import traceback

        traceback.print_exc()
        _fail(f"check failed ({type(error).__name__}: {error}); please report it", EXIT_CHECK_FAILED)
    line_text = LineTexts()
    if write_baseline_file is not None:
        try:
            entries = write_baseline(write_baseline_file, result.findings, line_text)
        except OSError as error:
            _fail(f"--write-baseline {write_baseline_file}: {error.strerror or error}", EXIT_FAILED)
        click.echo(f"gpu2npu: wrote {console.counted(len(result.findings), 'finding')} "
                   f"({entries} {'entry' if entries == 1 else 'entries'}) to "
                   f"{write_baseline_file}; `gpu2npu check --baseline {write_baseline_file}` now fails on new ones only",
                   err=True)
        sys.exit(EXIT_OK)
    findings, known_note = result.findings, ""
    if baseline_file is not None:
        try:
            matched = match_baseline(baseline_file, result.findings, line_text, result.recorded_by)
        except BaselineError as error:
            _fail(str(error))
        findings = matched.new
        known_note = f"; {matched.known} in the baseline" + (
            f", {matched.gone} recorded there no longer found (write it again to drop them)" if matched.gone else "")
    # the files not (or partly) looked at: JSON's warnings and SARIF's notifications (text shows the findings)
    not_checked = [f"{finding.path}:{finding.start_line}: {finding.message}" for finding in findings
                   if finding.rule in NOT_LOOKED_AT]
    if output_format == "json":
        click.echo(check_formats.as_json(findings, not_checked), nl=False)
    elif output_format == "sarif":
        click.echo(check_formats.as_sarif(findings, result.descriptions, not_checked, succeeded=not not_checked), nl=False)
    else:
        click.echo(check_formats.as_text(findings), nl=False)
    silenced = "".join(
        f"; {console.counted(count, 'finding')} {what}" for count, what in (
            (result.suppressed, "silenced by # gpu2npu: ignore"), (result.ignored, "of ignored codes")) if count)
    excluded = f", {result.excluded} excluded" if result.excluded else ""
    if not findings:
        click.echo(f"no {'new ' if baseline_file is not None else ''}CUDA-only code found "
                   f"({console.counted(result.files, 'file')} checked{excluded}{silenced}{known_note})", err=True)
    else:
        manual = sum(1 for finding in findings if finding.level == MANUAL)
        click.echo(f"{console.counted(len(findings), 'finding')} in {console.counted(len({f.path for f in findings}), 'file')} "
                   f"({console.counted(result.files, 'file')} checked{excluded}): {manual} to do by hand (error), "
                   f"{len(findings) - manual} that gpu2npu migrates (warning){silenced}{known_note}", err=True)
    from .reading.scan.api_rows import newer_torch_note
    from .records.finding_kinds import NEWER_TORCH

    newer = newer_torch_note([f.subject for f in findings if f.rule == NEWER_TORCH.code], options.api)
    if newer is not None:
        click.echo(f"gpu2npu: note: {newer}", err=True)
    for path in result.skipped:
        click.echo(f"gpu2npu: note: {path}: not checked, not a kind of file gpu2npu reads (Python, notebook, launch "
                   "script, dependency file)", err=True)
    if result.cache_problem:
        click.echo(f"gpu2npu: warning: {result.cache_problem}", err=True)
    sys.exit(1 if findings else 0)


def _check_version(given: Optional[str], config, root: Path) -> str:
    """-v, else [tool.gpu2npu] version, else the torch the project pins, else the newest; where
    not given by -v, said on stderr."""
    if given is not None:
        if not given.strip():
            _fail("-v/--version needs a torch version (an empty value was given)")
        return _version(given)
    if config.version:
        version = _version(config.version)
        _say_version(version, f"[tool.gpu2npu] version of {config.source}")
        return version
    from .dependencies.pins import pinned_torch

    pin = pinned_torch(root)
    if pin is not None:
        _say_version(pin.version, f"{pin.where} (torch{pin.spec}); -v or [tool.gpu2npu] version chooses another")
        return pin.version
    newest = apidata.available_versions()[-1]
    _say_version(newest, "the newest release: no -v, no [tool.gpu2npu] version and no torch pin found")
    return newest


def _say_version(version: str, why: str) -> None:
    api = apidata.load(version)
    click.echo(f"gpu2npu: PyTorch {version} (torch_npu {api.torch_npu_version}), from {why}", err=True)


@main.command("analyse", context_settings={"max_content_width": 100},
              short_help="Analyse without migrating: torch_apis, affinity_apis, third_party, dynamic_shape.")
@click.option("-i", "--input", "input_path", required=True, type=click.Path(path_type=Path), metavar="INPUT",
              help="The project (torch_apis, affinity_apis, dynamic_shape) or the library (third_party: an "
                   "installed package folder or a vendored folder) to analyse.")
@click.option("-o", "--output", "output_path", required=True, type=click.Path(path_type=Path), metavar="OUTPUT",
              help="Folder that receives INPUT_NAME_analysis/ (reports, log pytorch_analysis.txt).")
@click.option("-v", "--version", "torch_version", metavar="VERSION",
              help="PyTorch version of the code; selects the torch_npu release whose APIs count as supported "
                   "(default: [tool.gpu2npu] version of INPUT's pyproject.toml).")
@click.option("-m", "--mode", type=click.Choice(["torch_apis", "third_party", "affinity_apis", "dynamic_shape"]),
              default="torch_apis", show_default=True, help="What to analyse (see above).")
@click.option("-env", "--env", "env", multiple=True, type=click.Path(path_type=Path), metavar="PATH",
              help="third_party: a folder jedi may import from besides the library (a subfolder of INPUT or any "
                   "path). Repeat for several.")
@click.option("--jedi-seconds", type=click.FloatRange(min=0), default=120, show_default=True, metavar="SECONDS",
              help="third_party: the time jedi may take for the call sites the library's own source does not "
                   "answer (0: jedi is not asked). What it answered is kept in the cache: a re-run asks only the "
                   "files it did not reach.")
@click.option("-api", "--third-party-apis", "api_files", multiple=True, type=click.Path(path_type=Path), metavar="CSV",
              help="torch_apis: a library's affected APIs (full_unsupported_results.csv of -m third_party); calls "
                   "of them count as unsupported. Repeat for several (at most 100).")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Worker processes (0: one per core); the reports are the same for any number.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where per-file results and third_party's call graph are kept between runs "
                   "(default: $GPU2NPU_CACHE_DIR, else ~/.cache/gpu2npu).")
@click.option("--no-cache", is_flag=True, help="Analyse every file afresh and keep no results.")
@click.option("--force", is_flag=True, help="Replace an existing INPUT_NAME_analysis/.")
def analyse(input_path, output_path, torch_version, mode, env, jedi_seconds, api_files, jobs, cache_dir, no_cache,
            force):
    """Analyse without migrating (the incumbent's pytorch_analyse.sh), into OUTPUT/INPUT_NAME_analysis/.

    \b
    -m torch_apis     what the migration would change and what has no NPU support, as its CSVs
                      (change_list, unsupported_api, unknown_api, cuda_op_list,
                      api_performance_advice), without writing a migrated tree
    -m affinity_apis  affinity_api_call.csv: code a fused torch_npu API can replace
    -m third_party    INPUT is a library: every public API whose calls reach an unsupported,
                      unknown or CUDA-only call, with the chain of calls (read from its source;
                      jedi answers what the source leaves open, within --jedi-seconds):
                      framework_unsupported_op.csv, unknown_op.csv, migration_needed_op.csv,
                      cuda_op.csv, full_unsupported_results.csv (feed it back with -api)
    -m dynamic_shape  writes an instrumented copy of the project; running it records the tensor
                      shapes each call site sees (msft_dynamic_shape_analysis_report.csv and a
                      ranked summary of the call sites whose shapes vary)

    Example: gpu2npu analyse -i ./site-packages/timm -o ./out -v 2.1.0 -m third_party
    """
    from .analyse.run import AnalyseRequest, run_analysis

    config = _input_config(input_path)
    torch_version = _table_version(torch_version, config)
    if torch_version is None or not torch_version.strip():
        _fail("missing option -v/--version: the torch version of the code, such as -v 2.1.0 (or [tool.gpu2npu] "
              "version in the project's pyproject.toml)")
    request = AnalyseRequest(input=input_path, output=output_path, version=_version(torch_version), mode=mode,
                             env=tuple(env), jedi_seconds=jedi_seconds, config=config,
                             api_files=tuple(api_files), force=force, jobs=jobs,
                             cache_dir=None if no_cache else (cache_dir or cache.default_folder()))
    result = _carry_out(run_analysis, request)
    if result.rows:
        click.echo(console.report_table(result.rows))
    for line in result.summary:
        click.echo(line)
    click.echo(f"analyse -m {mode}: {result.files} Python files, {len(result.failed)} could not be analysed. "
               f"Output: {result.folder}")
    for path, reason in result.failed:
        click.echo(f"gpu2npu: warning: {path}: not analysed, {reason}", err=True)
    sys.exit(EXIT_PARTIAL if result.failed else EXIT_OK)


@main.command("dryrun", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                          "max_content_width": 100},
              short_help="Run a (migrated) command on the CPU with an imitation of torch_npu.")
@click.option("-v", "--version", "torch_version", default=None, metavar="VERSION",
              help="PyTorch version whose torch_npu release the imitation has the names of (default, as check: "
                   "[tool.gpu2npu] version, else the torch the project in this folder pins, else the newest).")
@click.option("--nproc", type=click.IntRange(min=1), default=None, metavar="N",
              help="Start N ranks as run_distributed_npu.sh does (RANK_ID/DEVICE_ID/RANK_SIZE, RANK/WORLD_SIZE/"
                   "LOCAL_RANK), HCCL over Gloo; a shell launcher is started once with NPUS=0,...,N-1.")
@click.option("--npus", type=click.IntRange(min=1), default=None, metavar="N",
              help="How many NPUs the imitation reports (default: one per rank, and enough for DEVICE_ID).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, metavar="K",
              help="End each process after K optimizer steps (exit status 0).")
@click.option("--report", "report_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Also write the report as JSON to FILE.")
@click.option("--python", "python", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              metavar="PATH", help="The interpreter that `python` and `python3` mean in COMMAND and in what it starts "
                                   "(the project's environment's, which has its torch).")
@click.option("--venv", "venv", type=click.Path(path_type=Path, file_okay=False), default=None, metavar="DIR",
              help="Run in the virtual environment DIR, made if missing: the CPU build of the torch the release is "
                   "built for, and the requirement files of this folder installed (torch_npu left to the imitation); "
                   "a requirement that does not install is a hit.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def dryrun(torch_version, nproc, npus, max_steps, report_file, python, venv, command):
    """Run COMMAND with a CPU imitation of torch_npu, as if on an NPU, before booking NPU time.

    \b
        gpu2npu dryrun -v 2.1.0 --max-steps 5 -- python train.py --epochs 1
        gpu2npu dryrun --nproc 2 --max-steps 5 -- bash run_distributed_npu.sh

    In the processes COMMAND starts (and only there): the "npu" device is the CPU; torch_npu and
    torch_npu.npu have exactly the names of the chosen release, so one the release lacks fails as
    it would on the NPU; the fused operators the migration writes (npu_fusion_attention,
    npu_rms_norm, npu_swiglu, the NpuFused optimizers) compute their documented results; CUDA left in
    the code (torch.cuda.*, .cuda(), a "cuda" device, the NCCL backend) fails naming its file and
    line; HCCL runs over Gloo.  At the end a report: whether the command finished, the optimizer
    steps, each CUDA use and missing torch_npu API hit (file:line, count), the torch_npu APIs
    called.  Exit status 0 only if the command finished and nothing was hit; 1 otherwise; 2 on a
    usage error.

    A dry run cannot tell speed, memory, numerical differences of NPU kernels, or anything the
    CANN stack itself does (HCCL timeouts, operator compilation).
    """
    from .dryrun.run import DryRunResult, dry_run, summary

    config = _config([Path.cwd()])  # (the release as check chooses it: -v, the table, the torch pin, the newest)
    version = _check_version(torch_version, config, _project_folder(config, [Path.cwd()]))
    if venv is not None and python is not None:
        _fail("--venv and --python name two environments: give one")
    environment = None
    if venv is not None:
        from .dryrun import venv as virtual_environments
        from .knowledge import apidata

        release = apidata.load(version)
        click.echo(f"gpu2npu: the dry run's environment {venv}: torch {release.torch_version} (CPU) and the "
                   "requirement files of this folder", err=True)
        try:
            environment = virtual_environments.prepare(venv.absolute(), release.torch_version, Path.cwd(),
                                                       say=lambda text: click.echo(f"gpu2npu: {text}", err=True))
        except OSError as error:
            _fail(str(error), EXIT_FAILED)
        python = environment.python
    try:
        if environment is not None and not environment.torch:  # (nothing to run it with: the release's data says)
            result = DryRunResult(release.torch_version, release.torch_npu_version, list(command))
        else:
            result = dry_run(command, version, nproc or 0, max_steps or 0, npus=npus or 0,
                             python=python.absolute() if python is not None else None)
    except FileNotFoundError as error:
        _fail(f"cannot start {command[0]}: {error.strerror}")
    except KeyboardInterrupt:
        click.echo("gpu2npu: dry run interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if environment is not None:
        result.hits[:0] = virtual_environments.hits_of(environment)
        result.environment = virtual_environments.description(environment, venv.absolute())
    click.echo(summary(result), err=True)
    if report_file is not None:
        report_file.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    sys.exit(EXIT_OK if result.ok else EXIT_FAILED)


@main.command("rules", short_help="List every code a report can carry.")
def list_rules():
    """List every code a report can carry: the rules (code, name, fix safety, what it does), then
    the rows no rule makes (NPU901-NPU928: what a human must do or should know; NPU951-NPU962: advice)."""
    from .findings.report_codes import REPORT_CODES
    from .migration.sources import ALL_RULES_BY_CODE

    for code, rule in ALL_RULES_BY_CODE.items():
        click.echo(f"{code}  {rule.__name__:<29} {rule.fix_safety:<7} {rule.summary}")
    for code, report in REPORT_CODES.items():
        click.echo(f"{code}  {report.name:<29} {report.kind:<7} {report.summary}")


@main.command("explain", short_help="Print a code's description and examples.")
@click.argument("code")
def explain(code):
    """Print a rule's description and its before/after examples."""
    from .findings.report_codes import REPORT_CODES
    from .migration.sources import ALL_RULES_BY_CODE

    rule = ALL_RULES_BY_CODE.get(code.upper())
    report = REPORT_CODES.get(code.upper())
    if rule is None and report is not None:
        click.echo(f"{report.code} ({report.kind}, never an edit): {report.summary}\n")
        click.echo(inspect.cleandoc(report.description) + "\n")
        if report.level:
            click.echo(f"gpu2npu check: {'an error (it fails the check)' if report.level == 'error' else 'not reported'}\n")
        for number, (source, name, where) in enumerate(report.examples, 1):
            given = "".join(f" (with -api listing {api}: {why})" for api, why in report.example_apis) + "".join(
                f" (in a project that pins {library}{requirement})" for library, requirement in report.example_pins)
            click.echo(f"Example {number}{given}:\n{_indent(source)}\nreported in {where}: {name}\n")
        for source in report.unchanged:
            click.echo(f"Not reported:\n{_indent(source)}")
        return
    if rule is None:
        _fail(f"no rule {code}; `gpu2npu rules` lists them")
    click.echo(f"{rule.code} {rule.__name__} ({rule.fix_safety})\n")
    click.echo(inspect.cleandoc(rule.__doc__ or "") + "\n")
    for number, example in enumerate(rule.examples, 1):
        mode = (" (gpu2npu ... distributed -m example.py)" if example.distributed else
                f" (gpu2npu ... -a {example.amp_model})" if getattr(example, "amp_model", None) else
                " (gpu2npu ... -sim)" if getattr(example, "similar", False) else "")
        mode += " (gpu2npu -m ...)" if getattr(example, "modelarts", False) else ""
        pinned = getattr(example, "transformers", None)
        mode += f" (the project pins transformers{pinned})" if pinned else ""
        mode += " (gpu2npu -r rules.json ...)" if getattr(example, "custom_rules", None) is not None else ""
        where = _example_file(example)
        click.echo(f"Example {number}{mode}{where}, before:\n{_indent(example.before)}\nafter:\n{_indent(example.after)}")
        if getattr(example, "custom_rules", None) is not None:
            click.echo(f"rules.json:\n{_indent(json.dumps(example.custom_rules.to_data()))}\n")
        for name in getattr(example, "reported", ()):
            click.echo(f"reported: {name}")
    for source in rule.unchanged:
        click.echo(f"Left unchanged:\n{_indent(source)}")


def _example_file(example) -> str:
    """Where a launch-script or notebook example stands (Python examples are a .py file)."""
    path = getattr(example, "path", None)
    if path is None:
        return ""
    return " (a code cell of a notebook)" if path.endswith(".ipynb") else f" ({path})"


def _indent(text: str) -> str:
    return "".join(f"    {line}" for line in text.splitlines(keepends=True))
