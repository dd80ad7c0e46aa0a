"""The scheduler's watchdog tells a thread blocked in native code from one starved of a core."""

from __future__ import annotations

import threading

from autograder.harness import scheduler


def test_a_running_thread_counts_as_waiting_for_cpu_not_as_blocked():
    assert scheduler._waiting_for_cpu(threading.get_native_id())


def test_a_thread_blocked_on_a_lock_is_not_waiting_for_cpu():
    lock, started = threading.Lock(), threading.Event()
    lock.acquire()
    blocked = threading.Thread(target=lambda: (started.set(), lock.acquire()))
    blocked.start()
    try:
        assert started.wait(10)
        for _ in range(1000):  # until it sleeps in acquire; each read is one syscall
            if not scheduler._waiting_for_cpu(blocked.native_id):
                break
        assert not scheduler._waiting_for_cpu(blocked.native_id)
    finally:
        lock.release()
        blocked.join(10)


def test_an_unknown_thread_is_not_waiting_for_cpu():
    assert not scheduler._waiting_for_cpu(None)
    assert not scheduler._waiting_for_cpu(2**31 - 1)
