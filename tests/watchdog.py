"""A test that runs far past any test's length is stuck: show where, and end its process.

pytest-timeout's limit is a Python signal handler, which never runs while a thread holds the
GIL in C (a finalizer blocked on a lock once hung ``make test`` that way for 33 minutes). This
plugin arms :func:`faulthandler.dump_traceback_later` around each test's setup, call and
teardown: its watchdog is a C thread, so after :data:`HANG_S` seconds it prints every thread's
stack and exits the process even then. Under xdist the worker dies, the test is reported as
crashed (failed, never re-run) and the rest of the suite goes on.
"""

from __future__ import annotations

import faulthandler
import os
import sys

import pytest

#: Longer than any test's setup, call and teardown on two loaded cores (the longest, a class's
#: grading fixture, takes a few minutes), shorter than CI's 90 minutes.
HANG_S = float(os.environ.get("RACELAB_HANG_S", 1800))


_stderr: list[int] = []


def pytest_configure(config: pytest.Config) -> None:
    """Keep a descriptor of the real stderr: during a test pytest points fd 2 at its capture."""
    _stderr.append(os.dup(sys.__stderr__.fileno()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Arm the watchdog for ``item``'s setup, call and teardown."""
    faulthandler.dump_traceback_later(HANG_S, exit=True, file=_stderr[-1])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
