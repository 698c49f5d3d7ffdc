"""SPEC section 6 invariants, checked on every fixture project."""
import shutil

import pytest

from helpers import (
    AMP_CASES,
    DISTRIBUTED_CASES,
    SIMILAR_CASES,
    FIXTURES,
    GENERATED_FILES,
    MODELARTS_CASES,
    MODELARTS_FILES,
    SPECIFY_DEVICE_CASES,
    mode_args,
    REPORT_FILES,
    fixture_names,
    migrate,
    migrated_kind,
    notebook_cells_parse,
    notebook_differences,
    parses,
    read_csv,
    tree_files,
    unexplained_differences,
)


# Every fixture migrated for one card, the distributed cases converted for several, and the
# -s cases.  The second item is the mode: "single", "distributed" or "specify".
CASES = (
    [(name, "single") for name in fixture_names()]
    + [(name, "distributed") for name in sorted(DISTRIBUTED_CASES)]
    + [(name, "specify") for name in SPECIFY_DEVICE_CASES]
    + [(name, "modelarts") for name in MODELARTS_CASES]
    + [(name, "amp") for name in AMP_CASES]
    + [(name, "similar") for name in SIMILAR_CASES]
)
CASE_IDS = [name if mode == "single" else f"{name}-{mode}" for name, mode in CASES]


def _kind_in_run(relative, rows):
    """The file's kind, and "dependencies" for a requirements file found through another's `-r`
    (known by its dependency rows: its name says nothing)."""
    kind = migrated_kind(relative)
    if not kind and any(row["File"] == relative and row["Rule"].startswith("NPU85") for row in rows):
        return "dependencies"
    return kind


def _mode(name, mode):
    return mode_args(name, mode)


@pytest.fixture(scope="module")
def migrated_fixtures(tmp_path_factory):
    outs = {mode: tmp_path_factory.mktemp(mode)
            for mode in ("single", "distributed", "specify", "modelarts", "amp", "similar")}
    return {(name, mode): migrate(FIXTURES / name, outs[mode], "2.1.0", *_mode(name, mode)) for name, mode in CASES}


@pytest.mark.parametrize("name, mode", CASES, ids=CASE_IDS)
def test_every_file_kept_and_files_not_migrated_byte_identical(name, mode, migrated_fixtures):
    """Files other than Python, notebooks and launch scripts are copied; those three are held to
    "the diff is the change list" in the next test."""
    source = tree_files(FIXTURES / name)
    output = tree_files(migrated_fixtures[name, mode])
    assert set(source) <= set(output)
    # a generated package exists exactly when a file was pointed at it
    used = {row["Rule"] for row in read_csv(migrated_fixtures[name, mode] / "change_list.csv")} & set(GENERATED_FILES)
    generated = set().union(*(GENERATED_FILES[rule] for rule in used))
    for rule, files in GENERATED_FILES.items():
        assert (rule in used) == bool(files & set(output)), rule
    assert set(output) - set(source) <= (REPORT_FILES | (MODELARTS_FILES if mode == "modelarts" else set()) | generated)
    rows = read_csv(migrated_fixtures[name, mode] / "change_list.csv")
    for relative, path in source.items():
        if not _kind_in_run(relative, rows):
            assert output[relative].read_bytes() == path.read_bytes(), relative


@pytest.mark.parametrize("name, mode", CASES, ids=CASE_IDS)
def test_output_parses_and_diff_is_the_change_list(name, mode, migrated_fixtures):
    target = migrated_fixtures[name, mode]
    rows = read_csv(target / "change_list.csv")
    failed = {line.split(": copied unchanged")[0].split("] ")[-1]
              for line in (target / "msFmkTranspltlog.txt").read_text().splitlines() if "copied unchanged" in line}
    for relative, path in tree_files(FIXTURES / name).items():
        kind = _kind_in_run(relative, rows)
        if not kind:
            continue
        before = path.read_bytes()
        after = (target / relative).read_bytes()
        file_rows = [row for row in rows if row["File"] == relative]
        if kind in ("launch_script", "dependencies"):
            assert unexplained_differences(before, after, file_rows) == [], relative
            continue
        if kind == "notebook":
            if relative in failed:
                assert after == before
                continue
            assert notebook_cells_parse(after) or not notebook_cells_parse(before), relative
            assert notebook_differences(before, after, file_rows) == [], relative
            continue
        if not parses(before):
            assert relative in failed, f"{relative} does not parse but is not reported"
            assert after == before
            continue
        assert parses(after), relative
        assert unexplained_differences(before, after, file_rows) == [], relative


@pytest.mark.parametrize("name, mode", CASES, ids=CASE_IDS)
def test_migrating_the_output_again_changes_nothing(name, mode, migrated_fixtures, tmp_path):
    first = migrated_fixtures[name, mode]
    copy = tmp_path / name
    shutil.copytree(first, copy, symlinks=True)
    for report in REPORT_FILES:
        (copy / report).unlink(missing_ok=True)
    second = migrate(copy, tmp_path / "again", "2.1.0", *_mode(name, mode))
    assert read_csv(second / "change_list.csv") == []
    for relative, path in tree_files(copy).items():
        assert (second / relative).read_bytes() == path.read_bytes(), relative


def test_unparseable_file_is_copied_and_reported(migrated_fixtures):
    target = migrated_fixtures["multi_module_package", "single"]
    legacy = "mypkg/legacy_py2.py"
    assert (target / legacy).read_bytes() == (FIXTURES / "multi_module_package" / legacy).read_bytes()
    log = (target / "msFmkTranspltlog.txt").read_text()
    assert f"{legacy}: copied unchanged, syntax error at line" in log


def test_encodings_and_line_endings_are_kept(migrated_fixtures):
    source = FIXTURES / "multi_module_package" / "mypkg" / "utils"
    target = migrated_fixtures["multi_module_package", "single"] / "mypkg" / "utils"
    bom = (target / "bom.py").read_bytes()
    assert bom.startswith(b"\xef\xbb\xbf") and b".npu()" in bom
    crlf = (target / "crlf_helpers.py").read_bytes()
    assert crlf.count(b"\r\n") == crlf.count(b"\n") and b"import torch_npu\r\n" in crlf
    latin = (target / "latin.py").read_bytes()
    original = (source / "latin.py").read_bytes()
    assert b".npu()" in latin
    # every non-ASCII byte of the original survives in its latin-1 form
    assert [b for b in latin if b > 127] == [b for b in original if b > 127]
