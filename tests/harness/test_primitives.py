"""Every threading primitive, wherever it was made, blocks and wakes without false verdicts."""

import collections
import functools
import os
import queue
import threading
import time
from types import SimpleNamespace

import pytest

from autograder.harness import explore

SCHEDULES = 60


def _lock_user(role, p, state):
    for _ in range(2):
        with p:
            state.n += 1


def _rlock_user(role, p, state):
    with p:
        with p:
            state.n += 1


def _condition_user(role, p, state):
    with p:
        if role == 0:
            state.items.append(1)
            p.notify()
        else:
            while not state.items:
                p.wait()
            state.got = state.items.pop()


def _semaphore_user(role, p, state):
    with p:
        state.inside += 1
        state.most = max(state.most, state.inside)
        state.inside -= 1


def _event_user(role, p, state):
    if role == 0:
        state.data = 1
        p.set()
    else:
        p.wait()
        state.got = state.data


def _barrier_user(role, p, state):
    state.log.append("before")
    p.wait()
    state.log.append("after")


def _queue_user(role, p, state):
    if role == 0:
        p.put(1)
        p.put(2)
    else:
        state.got = [p.get(), p.get()]


def _reset_event(p):
    p.clear()


def _drain(p):
    while not p.empty():
        p.get_nowait()


# name: (factory, use, check, reset for an object reused across schedules)
PRIMITIVES = {
    "Lock": (threading.Lock, _lock_user, lambda s: s.n == 4, None),
    "RLock": (threading.RLock, _rlock_user, lambda s: s.n == 2, None),
    "Condition": (threading.Condition, _condition_user, lambda s: s.got == 1, None),
    "Semaphore": (lambda: threading.Semaphore(1), _semaphore_user, lambda s: s.most == 1,
                  None),
    "BoundedSemaphore": (lambda: threading.BoundedSemaphore(1), _semaphore_user,
                         lambda s: s.most == 1, None),
    "Event": (threading.Event, _event_user, lambda s: s.got == 1, _reset_event),
    "Barrier": (lambda: threading.Barrier(2), _barrier_user,
                lambda s: s.log[:2] == ["before", "before"], None),
    "Queue": (queue.Queue, _queue_user, lambda s: s.got == [1, 2], _drain),
}
# Made now, long before explore runs: like a module-level lock or one from an earlier cell.
MADE_EARLIER = {name: factory() for name, (factory, *_) in PRIMITIVES.items()}


def _fresh_state():
    return SimpleNamespace(n=0, items=[], got=None, inside=0, most=0, data=None, log=[])


def _program(name, where):
    factory, use, check, reset = PRIMITIVES[name]
    if where == "setup":
        def setup():
            state = _fresh_state()
            state.p = factory()
            return state

        workers = [lambda s: use(0, s.p, s), lambda s: use(1, s.p, s)]
    elif where == "before":
        def setup():
            if reset:
                reset(MADE_EARLIER[name])
            return _fresh_state()

        workers = [lambda s: use(0, MADE_EARLIER[name], s),
                   lambda s: use(1, MADE_EARLIER[name], s)]
    else:
        setup = _fresh_state

        def make_and_share(state):
            shared = factory()
            threads = [threading.Thread(target=use, args=(role, shared, state))
                       for role in (0, 1)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        workers = [make_and_share]

    def checked(state):
        assert check(state), vars(state)

    return setup, workers, checked


@pytest.mark.parametrize("where", ["setup", "worker", "before"])
@pytest.mark.parametrize("name", list(PRIMITIVES))
def test_correct_use_passes_wherever_the_primitive_was_made(name, where):
    setup, workers, check = _program(name, where)
    result = explore(setup, workers, check, max_schedules=SCHEDULES, timeout_s=30)
    assert result.ok, result.message


def test_a_timed_wait_that_times_out_is_not_a_deadlock():
    def setup():
        return SimpleNamespace(event=threading.Event(), got=None)

    def wait_briefly(state):
        state.got = state.event.wait(timeout=0.01)

    def check(state):
        assert state.got is False

    result = explore(setup, [wait_briefly, lambda s: None], check, max_schedules=10)
    assert result.ok, result.message


def test_a_lock_acquire_with_a_timeout_gives_up_instead_of_deadlocking():
    def setup():
        return SimpleNamespace(lock=threading.Lock(), got=[])

    def hold(state):
        state.lock.acquire()

    def try_for_a_moment(state):
        got = state.lock.acquire(timeout=0.01)
        state.got.append(got)
        if got:
            state.lock.release()

    result = explore(setup, [hold, try_for_a_moment], lambda s: True, max_schedules=20,
                     strategy="exhaustive")
    assert result.ok and result.covered, result.message


def test_every_thread_blocked_is_a_deadlock_with_each_stack():
    def setup():
        return SimpleNamespace(lock=threading.Lock())

    def twice(state):
        with state.lock:
            with state.lock:
                pass

    result = explore(setup, [twice], lambda s: True)
    assert result.verdict == "deadlock"
    assert "in twice" in result.message
    assert "worker 0 waits to enter `with` on Lock" in result.message


def test_a_thread_waiting_on_a_never_set_event_is_a_deadlock_not_a_hang():
    def setup():
        return SimpleNamespace(event=threading.Event())

    result = explore(setup, [lambda s: s.event.wait()], lambda s: True, timeout_s=10)
    assert result.verdict == "deadlock"
    assert "Event.wait" in result.message


def test_a_daemon_thread_left_waiting_for_work_is_not_a_deadlock():
    def setup():
        return SimpleNamespace(jobs=queue.Queue(), done=[])

    def start_consumer(state):
        def consume():
            while True:
                state.done.append(state.jobs.get())

        threading.Thread(target=consume, daemon=True).start()
        state.jobs.put("job")

    result = explore(setup, [start_consumer], lambda s: True, max_schedules=10)
    assert result.ok, result.message


def test_an_idle_thread_pool_left_open_is_not_a_deadlock():
    from concurrent.futures import ThreadPoolExecutor

    def setup():
        return SimpleNamespace(pool=None)

    def use_pool(state):
        state.pool = ThreadPoolExecutor(max_workers=1)
        state.result = state.pool.submit(lambda: 7).result()

    def check(state):
        assert state.result == 7

    result = explore(setup, [use_pool], check, max_schedules=10)
    assert result.ok, result.message


def test_a_thread_blocked_in_native_code_does_not_stall_the_scheduler():
    def setup():
        reader, writer = os.pipe()
        return SimpleNamespace(reader=reader, writer=writer, got=None)

    def read(state):
        state.got = os.read(state.reader, 1)

    def write(state):
        os.write(state.writer, b"x")

    def check(state):
        assert state.got == b"x"

    result = explore(setup, [read, write], check, max_schedules=4, strategy="exhaustive",
                     timeout_s=20)
    assert result.ok, result.message  # a read stuck in C would end in "timeout"


def test_an_exception_in_a_thread_the_worker_started_is_an_error():
    def spawn(state):
        def fail():
            raise ValueError("bad row")

        thread = threading.Thread(target=fail)
        thread.start()
        thread.join()

    result = explore(SimpleNamespace, [spawn], lambda s: True, max_schedules=3)
    assert result.verdict == "error"
    assert "ValueError: bad row" in result.message
    assert "started by worker 0" in result.message


def test_an_rlock_held_by_another_thread_is_waited_for_like_a_lock():
    def program(factory):
        def setup():
            return SimpleNamespace(lock=factory(), n=0)

        def work(state):
            with state.lock:
                state.n += 1
                state.n += 1

        return explore(setup, [work, work], lambda s: s.n == 4, strategy="exhaustive")

    with_lock, with_rlock = program(threading.Lock), program(threading.RLock)
    assert with_lock.ok and with_lock.covered
    assert with_rlock.ok and with_rlock.covered
    assert with_rlock.schedules_run == with_lock.schedules_run


EARLIER_POOL = __import__("concurrent.futures").futures.ThreadPoolExecutor(max_workers=1)


def test_waiting_on_a_task_of_a_pool_made_earlier_is_not_a_deadlock():
    def slow():
        time.sleep(0.2)
        return 5

    def setup():
        return SimpleNamespace(got=None)

    def wait_for_task(state):
        state.got = EARLIER_POOL.submit(slow).result()

    def check(state):
        assert state.got == 5

    result = explore(setup, [wait_for_task], check, max_schedules=2, timeout_s=20)
    assert result.ok, result.message


def test_threads_left_stuck_earlier_do_not_delay_deadlock_detection():
    held = threading.Lock()
    held.acquire()

    def stuck_forever():
        with held:  # never released: this thread stays in user code for good
            pass

    threading.Thread(target=stuck_forever, daemon=True).start()

    def setup():
        return SimpleNamespace(lock=threading.Lock())

    def twice(state):
        with state.lock:
            with state.lock:
                pass

    result = explore(setup, [twice], lambda s: True, timeout_s=30)
    assert result.verdict == "deadlock", result.verdict  # waiting on the stuck thread: "timeout"


@pytest.mark.parametrize("primitive", [threading.Lock, threading.RLock, threading.Condition,
                                       threading.Semaphore])
def test_a_lock_inside_a_tf_function_run_eagerly_guards_nothing_as_in_its_graph(primitive):
    """Under ``run_functions_eagerly`` the Python of a ``tf.function`` runs on every call; in
    graph mode it ran only while tracing. A lock entered inside the body is left out, so the
    add and the read-back interleave as the graph's ops do; the same lock around the call
    keeps guarding them."""
    import tensorflow as tf

    def program(lock_inside):
        def setup():
            state = SimpleNamespace(v=tf.Variable(0, dtype=tf.int64), lock=primitive(), got=[])

            @tf.function
            def add_and_read():
                if lock_inside:
                    with state.lock:
                        state.v.assign_add(1)
                        return state.v.read_value()
                state.v.assign_add(1)
                return state.v.read_value()

            state.step = add_and_read
            return state

        def work(state):
            if lock_inside:
                state.got.append(int(state.step()))
            else:
                with state.lock:
                    state.got.append(int(state.step()))

        return explore(setup, [work, work], lambda s: sorted(s.got) == [1, 2], seed=0,
                       max_schedules=SCHEDULES, callbacks=True)

    eager = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        inside, around = program(lock_inside=True), program(lock_inside=False)
    finally:
        tf.config.run_functions_eagerly(eager)
    assert inside.verdict == "race", inside.message
    assert around.ok, around.message


def _held_while_retried(give_ups: int) -> list[int]:
    """One schedule (the default order): a thread holds a lock for 20 yields while another
    retries a 5-second timed acquire; the retrier's failed acquires."""
    failures: list[int] = []

    def setup():
        return SimpleNamespace(lock=threading.Lock(), failed=0)

    def hold(state):
        with state.lock:
            for _ in range(20):
                time.sleep(0)

    def retry(state):
        while not state.lock.acquire(timeout=5):
            state.failed += 1
        state.lock.release()

    result = explore(setup, [hold, retry], lambda s: failures.append(s.failed),
                     max_schedules=1, give_ups=give_ups)
    assert result.ok, result.message
    return failures


def test_a_timed_wait_gives_up_once_per_run_unless_the_run_allows_more():
    assert _held_while_retried(1)[0] <= 1
    assert _held_while_retried(100)[0] >= 5


def _add_one_with_update(counts: collections.Counter) -> None:
    counts.update({"seen": 1})


def _add_one_in_place(counts: collections.Counter) -> None:
    counts += collections.Counter(seen=1)


def _counted_with(add_one, locked: bool):
    """Two threads count with a shared ``Counter`` (with a lock or without)."""
    def setup():
        return SimpleNamespace(counts=collections.Counter({"seen": 0}), lock=threading.Lock())

    def count(state):
        if locked:
            with state.lock:
                add_one(state.counts)
        else:
            add_one(state.counts)

    def check(state):
        assert state.counts["seen"] == 2, f"expected 2 counts, saw {state.counts['seen']}"

    return explore(setup, [count, count], check, max_schedules=SCHEDULES)


@pytest.mark.parametrize("add_one", [_add_one_with_update, _add_one_in_place])
def test_a_counters_update_is_a_read_then_a_write_that_threads_interleave(add_one):
    racy = _counted_with(add_one, locked=False)
    assert racy.verdict == "race" and "expected 2 counts, saw 1" in racy.message
    assert _counted_with(add_one, locked=True).ok


@pytest.mark.parametrize("where", ["partial", "call"])
def test_a_timed_put_through_a_partial_can_give_up_like_a_direct_one(where):
    def setup():
        full = queue.Queue(maxsize=1)
        full.put(1)
        return SimpleNamespace(queue=full, dropped=False)

    def put(state):
        timed = (functools.partial(state.queue.put, timeout=5) if where == "partial"
                 else functools.partial(state.queue.put))
        try:
            timed(2) if where == "partial" else timed(2, timeout=5)
        except queue.Full:
            state.dropped = True

    def take(state):
        time.sleep(0)
        state.queue.get()

    def check(state):
        assert not state.dropped, "the put gave up and dropped its item"

    result = explore(setup, [put, take], check, max_schedules=SCHEDULES)
    assert result.verdict == "race", result.message
    assert "dropped its item" in result.message
