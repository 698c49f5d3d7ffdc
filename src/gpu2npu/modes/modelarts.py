"""`-m`: file paths go through ModelArtsPathManager (the generated package
ModelArts_torch_npu_path_manager/, outputs/modelarts_package.py), for training on Huawei ModelArts."""
from __future__ import annotations

from pathlib import Path

from ..outputs import modelarts_package
from ..records.usage import UsageError

# Any file may open paths: each is migrated whole.
CUTS = False


def active(options) -> bool:
    return options.modelarts


def settings(request, source: Path) -> bool:
    if not request.modelarts:
        return False
    package = source / modelarts_package.PACKAGE_NAME
    if source.is_dir() and package.exists() and not package.is_dir():
        raise UsageError(f"-m writes the folder {modelarts_package.PACKAGE_NAME}/, but the input holds a file {package}")
    return True


def place(rules, options):
    from ..rules import ModelArtsPaths

    # after every other rewrite of a call (it wraps the arguments they leave), before
    # ImportTorchNpu, which places itself relative to the final imports
    return (*rules[:-1], ModelArtsPaths, rules[-1])


def write(staging, target, options, result, logger):
    if not modelarts_package.write_package(staging):
        logger.info(f"{modelarts_package.PACKAGE_NAME}/ is in the input already: kept as it is")
        return []
    logger.info(
        f"wrote {modelarts_package.PACKAGE_NAME}/: before training on ModelArts, list in its path_mapping_config.py "
        "the local paths to download from and upload to object storage; run the scripts from this folder"
    )
    return []


def new_files(folder, options):
    return []
