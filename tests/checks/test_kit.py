"""The checks' shared primitives (``autograder.checks.kit``)."""

import threading

import pytest

from autograder.checks.kit import bounded


def test_a_bounded_call_returns_what_the_call_returned():
    assert bounded("ex", "answer()", lambda: 42, 5) == 42


def test_a_bounded_call_that_raises_fails_in_the_exercises_words():
    def broken():
        raise OSError("no such record\nsecond line")

    with pytest.raises(AssertionError) as failure:
        bounded("run_ledger", "run_ledger(4, 50)", broken, 5)
    assert str(failure.value) == ("run_ledger: run_ledger(4, 50) raised OSError: no such "
                                  "record; expected it to work")
    assert failure.value.__suppress_context__


def test_a_bounded_call_that_hangs_fails_after_its_deadline_and_leaves_the_thread_behind():
    release = threading.Event()
    with pytest.raises(AssertionError, match=r"close\(\) did not finish within 0.2 s"):
        bounded("SharedWeightsPool", "close()", release.wait, 0.2)
    release.set()
