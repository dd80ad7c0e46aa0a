"""Shared fixtures: paths of the repository's parts."""

from pathlib import Path

import pytest

pytest_plugins = ["tests.watchdog"]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO
