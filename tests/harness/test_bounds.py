"""Issue #18's harness classes: a stated, seed-independent search bound (class 2), timed waits
as schedule choices and locks that know their holder (class 3), and user code a library call
runs back interleaved on request (class 1, class 4)."""

import concurrent.futures
import functools
import queue
import threading
import time
from types import SimpleNamespace

import pytest

from autograder.harness import explore, replay
from autograder.harness.primitives import OwnedLock
from autograder.harness.search import DeviationBounded


def _check_then_act_in_two_regions():
    """A check under the lock, the act under the lock again: one preemption breaks it."""
    def setup():
        return SimpleNamespace(lock=threading.Lock(), stock=1, sold=0)

    def buy(state):
        with state.lock:
            enough = state.stock >= 1
        if enough:
            with state.lock:
                state.stock -= 1
                state.sold += 1

    def check(state):
        assert state.stock >= 0, f"stock went to {state.stock}"

    return setup, [buy, buy], check


@pytest.mark.parametrize("seed", range(8))
def test_a_one_preemption_race_is_found_in_the_bounded_phase_whatever_the_seed(seed):
    result = explore(*_check_then_act_in_two_regions(), seed=seed, max_schedules=200)
    assert result.verdict == "race", result.message
    bounded = explore(*_check_then_act_in_two_regions(), seed=seed, strategy="bounded")
    assert bounded.verdict == "race" and bounded.schedules_run == result.schedules_run


def test_a_pass_states_the_bound_and_a_bounded_search_stops_there():
    setup, workers, _ = _check_then_act_in_two_regions()
    result = explore(setup, workers, lambda state: True, strategy="bounded")
    assert result.ok, result.message
    assert result.bound.startswith("every schedule with at most 1 preemption")
    assert result.bound in result.message
    first = explore(setup, workers, lambda state: True, seed=1, max_schedules=10_000,
                    samples=5)
    assert first.schedules_run == result.schedules_run + 5


def test_one_deviation_enumerates_each_other_choice_at_each_point_once():
    strategy = DeviationBounded(1)
    runs = []
    while True:
        runs.append([strategy.choose(step, None if step == 1 else 0, [0, 1])
                     for step in (1, 2, 3)])
        if not strategy.advance():
            break
    assert runs == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert strategy.pruned and not strategy.deviated


def test_two_deviations_add_every_second_departure_after_the_first():
    strategy = DeviationBounded(2)
    runs = []
    while True:
        runs.append([strategy.choose(step, None if step == 1 else 0, [0, 1])
                     for step in (1, 2, 3)])
        if not strategy.advance():
            break
    assert runs == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                    [1, 1, 0], [1, 0, 1], [0, 1, 1]]
    assert strategy.runs_by_depth == {0: 1, 1: 3, 2: 3}


def _timed_box(worker):
    def setup():
        return SimpleNamespace(lock=threading.Lock(), count=0)

    def check(state):
        assert state.count == 2, f"count {state.count}"

    return setup, [worker, worker], check


def test_a_timed_acquire_whose_failure_is_ignored_is_broken_by_a_give_up():
    def add(state):
        got = state.lock.acquire(timeout=30)
        seen = state.count
        state.count = seen + 1
        if got:
            state.lock.release()

    result = explore(*_timed_box(add), max_schedules=200)
    assert result.verdict == "race", result.message
    again = replay(*_timed_box(add), result.schedule)
    assert again.verdict == "race", again.message


def test_a_timed_acquire_that_retries_passes_and_gives_up_at_once():
    def add(state):
        while not state.lock.acquire(True, 30):
            pass
        try:
            state.count += 1
        finally:
            state.lock.release()

    result = explore(*_timed_box(add), max_schedules=100, timeout_s=20)
    assert result.ok, result.message
    assert result.bound, result.message


def _built_once(wait):
    """A builder builds a value once; a waiter waits for it with ``wait(state)`` (a timed
    call that returns False when it timed out) and, having timed out, builds it again."""
    def setup():
        return SimpleNamespace(event=threading.Event(), future=concurrent.futures.Future(),
                               condition=threading.Condition(), ready=False, built=0)

    def build(state):
        state.built += 1
        state.future.set_result(True)
        with state.condition:
            state.ready = True
            state.condition.notify_all()
        state.event.set()

    def wait_or_build(state):
        if not wait(state):
            state.built += 1

    def check(state):
        assert state.built == 1, f"built {state.built} times"

    return setup, [build, wait_or_build], check


def _future_done(state):
    try:
        return state.future.result(timeout=30)
    except concurrent.futures.TimeoutError:
        return False


def _notified(state):
    with state.condition:
        if not state.ready:
            state.condition.wait(timeout=30)
        return state.ready


def _joined(state, join=lambda thread: thread.join(timeout=30)):
    builder = threading.Thread(target=lambda: None)
    builder.start()
    join(builder)
    return not builder.is_alive()


TIMED_WAITS = {
    "Event.wait": lambda state: state.event.wait(timeout=30),
    # A partial hides the call from the call-site test; the wait gives up inside instead.
    "partial(Event.wait)": lambda state: functools.partial(state.event.wait, 30)(),
    "Future.result": _future_done,
    "Condition.wait": _notified,
}


@pytest.mark.parametrize("name", sorted(TIMED_WAITS))
def test_a_timed_wait_whose_timeout_is_taken_for_failure_is_broken_by_a_give_up(name):
    result = explore(*_built_once(TIMED_WAITS[name]), max_schedules=300, timeout_s=20)
    assert result.verdict == "race", result.message
    again = replay(*_built_once(TIMED_WAITS[name]), result.schedule)
    assert again.verdict == "race", again.message


@pytest.mark.parametrize("name", sorted(TIMED_WAITS))
def test_a_timed_wait_retried_until_it_succeeds_passes(name):
    wait = TIMED_WAITS[name]

    def until_done(state):
        while not wait(state):
            pass
        return True

    result = explore(*_built_once(until_done), max_schedules=300, timeout_s=20)
    assert result.ok, result.message


@pytest.mark.parametrize("join", [lambda thread: thread.join(timeout=30),
                                  lambda thread: functools.partial(thread.join, 30)()],
                         ids=["join", "partial(join)"])
def test_a_timed_join_may_return_while_the_thread_still_runs(join):
    def setup():
        return SimpleNamespace(seen=None)

    def start_and_join(state):
        state.seen = _joined(state, join)

    def check(state):
        assert state.seen, "joined a thread that was still running"

    result = explore(setup, [start_and_join], check, max_schedules=50, timeout_s=20)
    assert result.verdict == "race", result.message


def _bounded_queue(put):
    """A producer puts 0, 1, 2 and None on a queue of one slot with ``put(state, item)``; a
    consumer takes them until None."""
    def setup():
        return SimpleNamespace(queue=queue.Queue(maxsize=1), got=[])

    def produce(state):
        for item in (0, 1, 2, None):
            put(state, item)

    def consume(state):
        while (item := state.queue.get()) is not None:
            state.got.append(item)

    def check(state):
        assert state.got == [0, 1, 2], f"got {state.got}"

    return setup, [produce, consume], check


def _put_or_drop(state, item):
    try:
        state.queue.put(item, timeout=30)
    except queue.Full:
        if item is None:
            state.queue.put(item)


def _put_until_taken(state, item):
    while True:
        try:
            state.queue.put(item, True, 30)
            return
        except queue.Full:
            continue


def test_a_put_that_drops_its_item_when_the_queue_stays_full_loses_items():
    result = explore(*_bounded_queue(_put_or_drop), max_schedules=300, timeout_s=20)
    assert result.verdict == "race", result.message


def test_a_put_retried_until_taken_loses_nothing():
    result = explore(*_bounded_queue(_put_until_taken), max_schedules=300, timeout_s=20)
    assert result.ok, result.message


def test_a_semaphore_acquire_that_goes_on_without_it_lets_two_in():
    def setup():
        return SimpleNamespace(semaphore=threading.Semaphore(1), inside=0, most=0)

    def enter(state):
        got = state.semaphore.acquire(timeout=30)
        state.inside += 1
        state.most = max(state.most, state.inside)
        state.inside -= 1
        if got:
            state.semaphore.release()

    def check(state):
        assert state.most == 1, f"{state.most} threads inside at once"

    result = explore(setup, [enter, enter], check, max_schedules=300, timeout_s=20)
    assert result.verdict == "race", result.message


def test_a_timed_wait_nothing_can_end_gives_up_at_once_instead_of_sleeping_it_out():
    def setup():
        return SimpleNamespace(event=threading.Event(), queue=queue.Queue(), seen=[])

    def wait_in_vain(state):
        state.seen.append(state.event.wait(timeout=60))
        try:
            state.queue.get(timeout=60)
        except queue.Empty:
            state.seen.append("empty")

    def check(state):
        assert state.seen == [False, "empty"], f"saw {state.seen}"

    result = explore(setup, [wait_in_vain], check, max_schedules=5, timeout_s=20)
    assert result.ok, result.message  # sleeping out 60 s would end in "timeout"


def _crossed_moves(pause_s):
    """Two threads that each take their own lock, then try the other's with a timeout; when
    it gives up, each lets go of its own and tries again (after ``time.sleep(pause_s)``, or at
    once when ``pause_s`` is None)."""
    def setup():
        return SimpleNamespace(locks=(threading.Lock(), threading.Lock()), moved=[])

    def move(state, mine):
        first, second = state.locks[mine], state.locks[1 - mine]
        while True:
            with first:
                if second.acquire(timeout=0.5):
                    state.moved.append(mine)
                    second.release()
                    return
            if pause_s is not None:
                time.sleep(pause_s)

    def check(state):
        assert sorted(state.moved) == [0, 1], f"moved {state.moved}"

    return setup, [lambda state: move(state, 0), lambda state: move(state, 1)], check


def test_a_retry_that_lets_go_and_sleeps_lets_the_other_thread_take_the_lock():
    result = explore(*_crossed_moves(0.001), max_schedules=300, timeout_s=20)
    assert result.ok, result.message
    assert result.bound, result.message


def test_a_retry_that_takes_its_lock_back_at_once_livelocks_under_the_scheduler():
    result = explore(*_crossed_moves(None), max_schedules=300, timeout_s=3)
    assert result.verdict == "timeout", result.message


def test_an_owned_lock_is_held_here_only_by_the_thread_that_took_it():
    lock = OwnedLock()
    seen = []
    with lock:
        seen.append(lock.held_here())
        other = threading.Thread(target=lambda: seen.append(lock.held_here()))
        other.start()
        other.join()
    seen.append(lock.held_here())
    assert seen == [True, False, False]
    assert not lock.locked()


def test_an_owned_lock_blocks_under_the_scheduler_like_a_lock():
    def setup():
        return SimpleNamespace(lock=OwnedLock(), count=0, unguarded=0)

    def add(state):
        with state.lock:
            seen = state.count
            state.unguarded += not state.lock.held_here()
            state.count = seen + 1

    def check(state):
        assert state.count == 2 and not state.unguarded

    result = explore(setup, [add, add], check, max_schedules=100)
    assert result.ok, result.message


def test_callbacks_interleave_user_code_that_library_code_calls(installed):
    (installed / "racelab_fake_runner.py").write_text("def run(function, state):\n"
                                                      "    return function(state)\n")
    import racelab_fake_runner

    def bump(state):
        seen = state.count
        state.count = seen + 1

    def setup():
        return SimpleNamespace(count=0)

    def worker(state):
        racelab_fake_runner.run(bump, state)

    def check(state):
        assert state.count == 2

    atomic = explore(setup, [worker, worker], check, max_schedules=50)
    traced = explore(setup, [worker, worker], check, max_schedules=50, callbacks=True)
    assert atomic.ok, atomic.message
    assert traced.verdict == "race", traced.message
