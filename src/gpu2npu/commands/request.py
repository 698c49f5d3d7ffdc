"""What a run is asked to do, and everything checked before anything is written: the version,
the rule file, the output folder and report folder, and what each mode needs of the project
(the main file of `distributed`, the entry files of `-s`, the folders -m and -sim write)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from ..knowledge import apidata
from .. import modes
from ..reading.discover import inside, own_packages
from ..reports import csv_reports, html_report, log as run_log
from ..records.options import Options, ProjectPins
from ..records.project_config import NO_TABLE, ProjectConfig
from ..records.usage import UsageError

OUTPUT_SUFFIX = "_msft"
MULTI_SUFFIX = "_msft_multi"


@dataclass
class DistributedRequest:
    main: Path  # the training entry file, inside the input
    target: str = "model"
    split_batch: bool = False


@dataclass
class RunRequest:
    input: Path
    output: Path
    version: str
    force: bool = False
    report_dir: Optional[Path] = None
    distributed: Optional[DistributedRequest] = None
    specify_device: bool = False
    jobs: int = 0  # worker processes; 0: one per core
    cache_dir: Optional[Path] = None  # per-file results kept here between runs; None: no cache
    rule_file: Optional[Path] = None  # -r: the user's rules (JSON)
    modelarts: bool = False  # -m: route file paths through ModelArtsPathManager
    amp_model: Optional[str] = None  # -a: convert native AMP of this model to Ascend apex amp
    similar: bool = False  # -sim: unsupported APIs go to the generated ascend_function package
    html: bool = True  # write report.html beside the CSVs (--no-html: not)
    api_files: Tuple[Path, ...] = ()  # -api: a library's affected APIs (analyse -m third_party)
    config: ProjectConfig = NO_TABLE  # [tool.gpu2npu]: its exclude globs name files copied unchanged, not migrated

    @property
    def suffix(self) -> str:
        return OUTPUT_SUFFIX if self.distributed is None else MULTI_SUFFIX


def checked_inputs(path: Path, version: str, api_files: Tuple[Path, ...]):
    """What every run that reads a project checks first (the migration, `analyse`): the input
    (a folder or a .py file; resolved), the API data of `version`, and the -api files read."""
    from ..findings.affected_apis import ApiFileError, read_api_files

    if not path.exists():
        raise UsageError(f"input {path} does not exist")
    if not (path.is_dir() or path.suffix == ".py"):
        raise UsageError(f"input {path} must be a folder or a .py file")
    try:
        api = apidata.load(version)
    except apidata.UnknownVersionError as error:
        raise UsageError(str(error)) from None
    try:
        third_party_apis = read_api_files(api_files)
    except ApiFileError as error:
        raise UsageError(str(error)) from None
    return path.resolve(), api, third_party_apis


def check_request(request: RunRequest, writes: bool = True) -> Tuple[Path, Path, Options]:
    """Validate everything up front; returns (input root, target folder, options).  With
    `writes` False (a preview) the output folder is not looked at."""
    source, api, third_party_apis = checked_inputs(request.input, request.version, request.api_files)
    # each mode checks what it needs of the project (gpu2npu.modes); the output in between, as
    # the incumbent reports a bad rule file or -m clash before an existing output
    custom_rules = modes.custom.settings(request, source)
    modelarts = modes.modelarts.settings(request, source)
    target = _check_output(request, source) if writes else source
    return source, target, Options(api=api, distributed=modes.distributed.settings(request, source),
                                   specify_device=modes.specify_device.settings(request, source),
                                   custom_rules=custom_rules, modelarts=modelarts,
                                   amp_model=modes.apex_amp.settings(request, source),
                                   similar=modes.similar.settings(request, source),
                                   third_party_apis=third_party_apis, **pinned_libraries(source)._asdict(),
                                   own_packages=own_packages(source))


def pinned_libraries(source: Path) -> ProjectPins:
    """What the project at `source` (a folder, or a file's folder) pins of the libraries whose
    releases decide what runs on the NPU (transformers, bitsandbytes, accelerate)."""
    from ..dependencies.pins import project_pins

    return project_pins(source if source.is_dir() else source.parent)


def _check_output(request: RunRequest, source: Path) -> Path:
    """The folder the run will write (OUTPUT/<name>_msft), once nothing stands in its way."""
    folder = source if source.is_dir() else source.parent
    output = request.output.resolve()
    if source.is_dir() and inside(output, folder):
        raise UsageError(f"output {request.output} lies inside the input {request.input}: choose a folder outside it")
    if output.exists() and not output.is_dir():
        raise UsageError(f"output {request.output} is not a folder")
    name = source.name if source.is_dir() else source.stem
    target = output / f"{name}{request.suffix}"
    if target.exists() and not request.force:
        raise UsageError(f"{target} already exists: remove it, choose another output folder, or pass --force to replace it")
    if request.report_dir is None and source.is_dir():
        reserved = set(csv_reports.REPORT_NAMES) | {run_log.LOG_NAME}
        clashes = sorted(entry.name for entry in source.iterdir() if entry.name in reserved)
        if clashes:
            raise UsageError(
                f"the input's top folder holds {', '.join(clashes)}, which a report would overwrite: "
                "pass --report-dir to write the reports elsewhere"
            )
    if request.report_dir is not None and inside(request.report_dir.resolve(), folder) and source.is_dir():
        raise UsageError(f"report folder {request.report_dir} lies inside the input: choose a folder outside it")
    earlier = earlier_reports(request.report_dir) if request.report_dir is not None else []
    if earlier and not request.force:
        raise UsageError(f"report folder {request.report_dir} holds the reports of an earlier run "
                         f"({', '.join(path.name for path in earlier[:4])}{', ...' if len(earlier) > 4 else ''}): "
                         "choose another folder, or pass --force to replace them all")
    if request.cache_dir is not None:
        cache_dir = request.cache_dir.resolve()
        if (source.is_dir() and inside(cache_dir, folder)) or inside(cache_dir, target):
            raise UsageError(f"cache folder {request.cache_dir} lies inside the input or the output: "
                             "choose a folder outside both (or --no-cache)")
    return target


def earlier_reports(folder: Path) -> list:
    """The files of a run's reports already in `folder`: the CSVs, the review page and the log
    with its rotated parts (a re-run with --force replaces them all, not some)."""
    names = set(csv_reports.REPORT_NAMES) | {html_report.FILE_NAME, run_log.LOG_NAME}
    names |= {f"{run_log.LOG_NAME}.{number}" for number in range(1, run_log.BACKUPS + 1)}
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.name in names)
