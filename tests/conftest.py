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
