"""The checks' shared primitives (``autograder.checks.kit``)."""

import queue
import threading
import time

import pytest

from autograder.checks.kit import (
    Overlap,
    bounded,
    describe_error,
    describe_threads,
    released_together,
    require,
    run_threads,
    run_together,
    smoke,
    waiting_for_another,
    waiting_for_room,
    within,
)


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


def test_a_call_within_its_deadline_reports_its_value_its_error_and_a_hang():
    assert within(lambda: 7, 5).value == 7
    failed = within(lambda: 1 / 0, 5)
    assert failed.finished and isinstance(failed.error, ZeroDivisionError)
    release = threading.Event()
    hung = within(release.wait, 0.1, name="stuck-call")
    assert not hung.finished and hung.thread.name == "stuck-call" and hung.thread.is_alive()
    release.set()


def test_a_smoke_run_names_a_broken_answer_a_failed_check_and_a_lock_taken_twice():
    assert smoke("Counter", lambda: "fine") == "fine"
    with pytest.raises(AssertionError, match=r"^Counter: used on one thread it raised "
                                             r"KeyError: 'x' \(before any threads"):
        smoke("Counter", lambda: {}["x"])
    with pytest.raises(AssertionError, match=r"^Counter: used on one thread: expected 1, got 2$"):
        smoke("Counter", lambda: (_ for _ in ()).throw(AssertionError("expected 1, got 2")))
    lock = threading.Lock()

    def takes_it_twice():
        with lock, lock:
            pass

    with pytest.raises(AssertionError, match="did not return within 0.2 s"):
        smoke("Counter", takes_it_twice, timeout_s=0.2)


def test_an_error_is_described_by_its_informative_line_without_keras_or_op_noise():
    keras_like = ValueError("Exception encountered when calling Dense.call().\n\n"
                            "\x1b[1mInput 0 of layer is incompatible\x1b[0m\n\n"
                            "Arguments received by Dense.call():\n  • inputs=tf.Tensor")
    assert describe_error(keras_like) == "ValueError: Input 0 of layer is incompatible"
    graph = RuntimeError("Graph execution error:\n\nDetected at node add\nFile \"x.py\"\n"
                         "Incompatible shapes: [2] vs. [3]")
    assert describe_error(graph) == "RuntimeError: Incompatible shapes: [2] vs. [3]"
    op_error = RuntimeError("{{function_node __wrapped__IteratorGetNext_device_/job:localhost}}"
                            " ValueError: generator already executing\nTraceback (most recent"
                            " call last):\n  File \"x.py\"\n [Op:IteratorGetNext]")
    assert describe_error(op_error) == "RuntimeError: ValueError: generator already executing"

    class Unreadable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    assert describe_error(Unreadable()) == "Unreadable: (its text could not be read)"


def test_a_stuck_thread_is_described_by_its_name_and_where_it_waits():
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="client-3", daemon=True)
    thread.start()
    try:
        text = describe_threads([thread])
    finally:
        release.set()
    assert text.startswith("  thread 'client-3':\n") and "wait" in text


class _Result:
    def __init__(self, ok, verdict="race", schedules_run=3):
        self.ok, self.verdict, self.schedules_run = ok, verdict, schedules_run
        self.message = "Race found in schedule 3.\nReplay exactly this interleaving: ..."

    def figure(self):
        raise AssertionError("no figure outside a notebook")


def test_require_words_a_failing_verdict_once_with_its_hint_errors_and_replay_line():
    require(_Result(ok=True), exercise="Counter")
    with pytest.raises(AssertionError) as failure:
        require(_Result(ok=False), exercise="Counter", again="anatomy.run_counter(Counter)",
                hints={"race": "make the update atomic", "deadlock": "release the lock"},
                raised=["KeyError: 'a'", "KeyError: 'a'", "OSError: full"], by="the clients")
    message = str(failure.value)
    assert message.startswith("Counter: Race found in schedule 3.\n")
    assert "Replay exactly" not in message and "release the lock" not in message
    assert "What this means for Counter: make the update atomic" in message
    assert "What the clients raised:\n  2 x KeyError: 'a'\n  1 x OSError: full" in message
    assert message.endswith("    result = anatomy.run_counter(Counter)\n    print(result)\n"
                            "    result.figure()")


def test_require_gives_no_replay_line_when_no_schedule_ran():
    with pytest.raises(AssertionError) as failure:
        require(_Result(ok=False, verdict="error", schedules_run=0), exercise="Counter",
                again="anatomy.run_counter(Counter)")
    assert "Run it again" not in str(failure.value)


def test_overlap_counts_the_most_calls_running_at_once():
    overlap = Overlap()
    for _ in range(3):  # one after another: never more than one
        with overlap.counting():
            pass
    assert overlap.most == 1
    inside = threading.Barrier(3)

    def call() -> None:
        with overlap.counting():
            inside.wait(5)  # all three are inside before any leaves

    run_together([call, call, call], timeout_s=10)
    assert overlap.most == 3


def test_a_thread_blocked_putting_into_a_full_queue_waits_for_room_not_for_its_answer():
    full, empty = queue.Queue(maxsize=1), queue.Queue()
    full.put("taken")
    putting = threading.Thread(target=full.put, args=("waits",), daemon=True)
    getting = threading.Thread(target=empty.get, daemon=True)
    putting.start()
    getting.start()
    deadline = time.monotonic() + 5
    while not (waiting_for_another(putting) and waiting_for_another(getting)):
        assert time.monotonic() < deadline, "the threads never blocked"
        time.sleep(0.01)
    assert waiting_for_room(putting)
    assert not waiting_for_room(getting)
    full.get()
    empty.put("done")
    putting.join(5)
    getting.join(5)
    assert not waiting_for_room(putting)
