"""Test stand-in for the ModelArts SDK: only what ModelArtsPathManager uses (moxing.file)."""
from . import file  # noqa: F401
