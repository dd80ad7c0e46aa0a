"""Fixtures of the harness's tests."""

import os

import pytest

from autograder.harness import codemap


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A folder on ``sys.path`` whose modules the scheduler counts as installed library code.

    The scheduler decides by where code lives (``codemap.library_prefixes()``: the standard
    library, the virtual environment's packages, the harness), never by a folder's name, so a
    test's stand-in for an installed package is registered as one for the test's duration.
    """
    folder = tmp_path / "installed"
    folder.mkdir()
    monkeypatch.setattr(codemap, "_LIBRARY_PREFIXES",
                        (*codemap._LIBRARY_PREFIXES, os.path.join(str(folder), "")))
    monkeypatch.syspath_prepend(str(folder))
    return folder
