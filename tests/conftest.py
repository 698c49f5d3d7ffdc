import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite fixtures/expected/ from the current output (then read the diff before committing)",
    )


@pytest.fixture
def update_goldens(request):
    return request.config.getoption("--update-goldens")


@pytest.fixture(autouse=True, scope="session")
def _private_result_cache(tmp_path_factory):
    """Command-line runs keep their per-file results in a cache; the tests' runs use their own
    folder, never the user's."""
    import os

    os.environ["GPU2NPU_CACHE_DIR"] = str(tmp_path_factory.mktemp("gpu2npu-cache"))
    # the CPU imitation of torch_npu that runs the migrated fixtures loads only where this is set
    os.environ["GPU2NPU_DRYRUN"] = "1"


@pytest.fixture
def newer_syntax():
    """A statement of a newer Python than the one running the tests, which libcst reads: a file
    holding it is one `ast` cannot read whole (skipped where this Python reads it)."""
    import ast

    statement = "type Samples[T] = list[T]\n"  # (Python 3.12's syntax)
    try:
        ast.parse(statement)
    except SyntaxError:
        return statement
    pytest.skip("this Python reads the statement: every file is read whole")
