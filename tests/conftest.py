"""Shared fixtures: paths of the repository's parts."""

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["tests.watchdog"]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO


def one_lesson_course(source: Path, root: Path):
    """The course built from one lesson source: the source is copied into ``root/solutions``
    and the course built in ``root/course``."""
    from autograder.course.course import make_course

    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(source, solutions)
    return make_course(solutions, root / "course")
