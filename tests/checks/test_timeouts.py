"""The answer's timeouts cut: its waits while explored, its locks' too on held real threads."""

import threading
import time

import pytest

from autograder.checks.timeouts import cut_timeouts, pass_time


class _Answer:
    """Makes its locks, conditions and semaphores through this module's ``threading``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rlock = threading.RLock()
        self.condition = threading.Condition(threading.RLock())
        self.semaphore = threading.Semaphore(0)


def _held_elsewhere(lock) -> tuple[threading.Thread, threading.Event]:
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            done.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()
    return holder, done


def test_with_locks_a_timed_acquire_of_a_held_lock_gives_up_at_once_and_the_names_come_back():
    real_lock = threading.Lock
    with cut_timeouts(_Answer, locks=True):
        answer = _Answer()
    assert threading.Lock is real_lock
    for lock in (answer.lock, answer.rlock):
        holder, done = _held_elsewhere(lock)
        try:
            assert lock.acquire(timeout=600) is False  # cut to a millisecond: no wait
            assert lock.acquire(False) is False
        finally:
            done.set()
            holder.join()
        with lock:
            assert lock.acquire(timeout=600) is (lock is answer.rlock)
        if lock is answer.rlock:
            lock.release()
    assert answer.semaphore.acquire(timeout=600) is False


def test_with_locks_a_condition_on_a_cut_rlock_still_waits_and_is_notified():
    with cut_timeouts(_Answer, locks=True):
        answer = _Answer()
    condition, woken = answer.condition, []

    def waiter() -> None:
        with condition:
            woken.append(condition.wait_for(lambda: woken == ["go"] or None))

    with condition:
        assert condition.wait(timeout=600) is False
        with condition:  # re-entrant
            pass
    thread = threading.Thread(target=waiter)
    thread.start()
    with condition:
        woken.append("go")
        condition.notify_all()
    thread.join()
    assert woken == ["go", True]


def test_without_locks_the_answers_locks_are_real_ones():
    with cut_timeouts(_Answer):
        answer = _Answer()
    assert type(answer.lock) is type(threading.Lock())
    assert type(answer.rlock) is type(threading.RLock())



class _Clocked:
    """Reads the clock, sleeps and waits through this module's ``time`` and ``threading``."""

    @staticmethod
    def now() -> float:
        return time.monotonic()

    @staticmethod
    def nap(seconds: float) -> None:
        time.sleep(seconds)

    @staticmethod
    def event() -> threading.Event:
        return threading.Event()


def test_the_answers_clock_moves_by_the_sleeps_it_skipped_and_the_time_the_grader_passed():
    real = time.monotonic
    with cut_timeouts(_Clocked):
        start, real_start = _Clocked.now(), real()
        _Clocked.nap(30)
        assert _Clocked.now() - start >= 30 > real() - real_start + 1
        moved = _Clocked.now()
        pass_time(5)
        assert _Clocked.now() - moved >= 5
    assert time.monotonic is real


def test_the_answers_clock_cannot_be_wound_back_from_the_answers_process():
    """Lesson 09's backlog fails a push that gives up after a deadline because its clock runs
    ahead: graded code that winds it back (a thread calling ``pass_time(-x)``) is refused and
    recorded, and no module global holds the offset to set in place."""
    from autograder.checks import timeouts
    from autograder.harness import tamper

    def containers() -> str:
        return repr({name: value for name, value in vars(timeouts).items()
                     if isinstance(value, (list, dict, set))})

    before = containers()
    try:
        with cut_timeouts(_Clocked):
            pass_time(60)
            ahead = _Clocked.now()
            with pytest.raises(ValueError):
                pass_time(-1e6)
            assert _Clocked.now() >= ahead
        assert tamper._attempts == ["moving the answer's clock by -1000000.0"]
    finally:
        tamper._attempts.clear()
    assert containers() == before, "the offset is kept in none of the module's containers"


def test_a_timed_wait_that_ran_out_moves_the_answers_clock_by_its_timeout_not_otherwise():
    with cut_timeouts(_Clocked):
        event = _Clocked.event()
        start = _Clocked.now()
        assert event.wait(20) is False
        assert _Clocked.now() - start >= 20
        event.set()
        start = _Clocked.now()
        assert event.wait(20) is True
        assert _Clocked.now() - start < 1
