"""The checks' shared primitives (``autograder.checks.kit``)."""

import threading

import pytest

from autograder.checks.kit import bounded, released_together, run_threads, run_together


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


def test_threads_released_together_all_run_and_each_ones_exception_comes_back():
    started = []

    def ok():
        started.append(threading.get_ident())

    def broken():
        raise ValueError("bad batch")

    seconds, errors = released_together([ok, broken, ok])
    assert len(set(started)) == 2 and seconds >= 0
    assert errors[0] is None and errors[2] is None and isinstance(errors[1], ValueError)
    with pytest.raises(ValueError, match="bad batch"):
        run_together([ok, broken])


def test_threads_released_together_start_at_the_same_barrier():
    arrived = threading.Barrier(3, timeout=5)
    assert run_threads(lambda _index: arrived.wait(), 3) >= 0  # would break if one ran alone


def test_threads_still_running_after_the_timeout_fail_in_words_instead_of_hanging():
    release = threading.Event()
    with pytest.raises(AssertionError, match="1 of 2 threads were still running after 0.2 s"):
        run_threads(lambda index: index and release.wait(), 2, timeout_s=0.2)
    release.set()
