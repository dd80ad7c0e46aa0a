"""Shared fixtures: paths of the repository's parts; the order test files are handed out in;
the lock of the tests that count ``/dev/shm``."""

import contextlib
import fcntl
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.watchdog"]

REPO = Path(__file__).resolve().parent.parent


#: The longest test files, longest first, as measured on 2 cores (``pytest --durations=0``,
#: worker-seconds per file: 713, 469, 401, 241, 210, 182, 181, 163, 131, 129, 123, 119, 89,
#: 70, 65, 56, 50, 34, 31, 31, 30). xdist hands files out in this order (``--dist loadfile
#: --no-loadscope-reorder``), the rest after them in collection order: a long file that
#: started last would leave the other worker idle at the end.
LONGEST_FILES = (
    "tests/security/test_lesson_attacks.py",
    "tests/checks/test_processes.py",
    "tests/benchmarks/test_mutation_subset.py",
    "tests/checks/test_capstone.py",
    "tests/checks/test_stress_tests.py",
    "tests/course/test_demo_class.py",
    "tests/checks/test_variables.py",
    "tests/course/test_lessons.py",
    "tests/security/test_attacks.py",
    "tests/checks/test_warmup.py",
    "tests/checks/test_tfdata.py",
    "tests/e2e/test_lab.py",
    "tests/grading/test_report.py",
    "tests/checks/test_a3c.py",
    "tests/grading/test_cluster.py",
    "tests/e2e/test_hub.py",
    "tests/checks/test_mutex.py",
    "tests/grading/test_grade.py",
    "tests/grading/test_postgres_gradebook.py",
    "tests/harness/test_subjects.py",
    "tests/checks/test_anatomy.py",
    "tests/e2e/test_lab_a3c.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of :data:`LONGEST_FILES` first, in that order (a stable sort)."""
    rank = {path: index for index, path in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


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


@contextlib.contextmanager
def dev_shm_alone() -> Iterator[None]:
    """Hold, across the test workers, the lock of the tests whose checks count ``/dev/shm``.

    Lesson 08's checks run in the test process, outside any sandbox: each counts every segment
    that appears in ``/dev/shm`` while it runs as its answer's leftover, and unlinks it. Two
    such tests on two workers at once would count (and unlink) each other's segments. A
    graded job has a ``/dev/shm`` of its own (the sandbox's tmpfs) and needs no lock.
    """
    with open(Path(tempfile.gettempdir()) / "racelab-tests-dev-shm.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def shm_to_itself() -> Iterator[None]:
    """The test runs with ``/dev/shm`` to itself among the tests (see :func:`dev_shm_alone`)."""
    with dev_shm_alone():
        yield
