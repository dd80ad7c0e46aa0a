"""explore and replay: verdicts, messages, replay, determinism, strategies, coverage."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.harness import Result, explore, replay, stress
from autograder.harness.exploration import parse_token
from autograder.harness.turns import FAIR_STEPS

from .subjects import SUBJECTS

ROOT = Path(__file__).resolve().parents[2]


def subject(name, racy=True):
    return next(s for s in SUBJECTS if s.name == name and s.racy == racy)


def args(s):
    return s.setup, list(s.workers), s.check


REPLAYED = ["counter", "torn_read", "lock_order_deadlock", "condition_buffer",
            "queue_check_then_get", "threads_started_by_worker", "tf_variable_increment"]


@pytest.mark.parametrize("name", [*REPLAYED, "thread_pool"])
def test_replay_reaches_the_same_verdict_every_time(name):
    s = subject(name)
    if s.prepare:
        s.prepare()
    found = s.run(0)
    assert found.verdict in s.accepted
    for _ in range(3):
        assert replay(*args(s), found.schedule).verdict == found.verdict


@pytest.mark.parametrize("name", REPLAYED)
def test_replay_follows_the_schedule_exactly(name):
    # Not thread_pool: ThreadPoolExecutor.shutdown joins its threads in the order of a set of
    # objects (memory addresses), so the end of its schedule can differ from run to run.
    s = subject(name)
    if s.prepare:
        s.prepare()
    found = s.run(0)
    again = replay(*args(s), found.schedule)
    assert again.schedule == found.schedule
    assert "did not repeat itself" not in again.message


def test_replay_accepts_the_failing_result_itself():
    s = subject("counter")
    found = s.run(0)
    assert replay(*args(s), found).verdict == "race"


def test_replay_of_a_stress_schedule_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="stress"):
        replay(*args(subject("counter")), {"engine": "stress", "seed": 0, "trial": 1})


def test_same_seed_gives_same_schedules_verdict_and_token_in_this_process():
    for name in ("counter", "condition_buffer", "threads_started_by_worker", "semaphore"):
        s = subject(name)
        first = [(r.verdict, r.schedules_run, r.schedule) for r in map(s.run, range(3))]
        second = [(r.verdict, r.schedules_run, r.schedule) for r in map(s.run, range(3))]
        assert first == second


def test_thread_pool_runs_repeat_their_verdict_though_shutdown_joins_in_set_order():
    # ThreadPoolExecutor.shutdown joins its threads in the order of a set of objects, which
    # depends on memory addresses: the tail of the token (after the race) may differ.
    s = subject("thread_pool")
    first = [(r.verdict, r.schedules_run) for r in map(s.run, range(3))]
    second = [(r.verdict, r.schedules_run) for r in map(s.run, range(3))]
    assert first == second


def test_same_seed_gives_same_schedules_verdict_and_token_in_a_new_process():
    names = ["counter", "condition_buffer", "threads_started_by_worker", "rlock"]
    program = (
        "import json, sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from harness.subjects import SUBJECTS\n"
        f"names = {names!r}\n"
        "out = [[r.verdict, r.schedules_run, r.schedule] for s in SUBJECTS "
        "if s.racy and s.name in names for r in map(s.run, range(3))]\n"
        "print(json.dumps(out))\n"
    )
    child = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                           text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert child.returncode == 0, child.stderr
    here = [[r.verdict, r.schedules_run, r.schedule] for s in SUBJECTS
            if s.racy and s.name in names for r in map(s.run, range(3))]
    assert json.loads(child.stdout.strip().splitlines()[-1]) == here


def test_different_seeds_sample_different_schedules():
    s = subject("condition_buffer")
    assert len({s.run(seed).schedule for seed in range(4)}) > 1


def test_race_message_says_what_broke_expected_vs_seen_which_threads_and_how_to_replay():
    result = subject("counter").run(0)
    assert result.verdict == "race" and not result.ok
    assert "expected 6 increments, saw" in result.message
    assert "worker 0" in result.message and "worker 1" in result.message
    assert "state.count += 1" in result.message
    assert f"replay(setup, workers, check, schedule={result.schedule!r})" in result.message
    assert json.loads(json.dumps(result.schedule)) == result.schedule


def test_deadlock_message_gives_each_threads_stack():
    result = subject("lock_order_deadlock").run(0)
    assert result.verdict == "deadlock"
    assert "Where each thread is stuck" in result.message
    assert "in move_a_to_b" in result.message and "in move_b_to_a" in result.message
    assert "waits to enter `with` on Lock" in result.message


def test_worker_exception_is_an_error_naming_the_exception_and_thread():
    result = subject("queue_check_then_get").run(0)
    assert result.verdict == "error"
    assert "raised Empty" in result.message
    assert "in get_if_not_empty" in result.message


def test_check_returning_false_is_a_race():
    s = subject("counter")
    result = explore(s.setup, list(s.workers), lambda state: state.count == 6)
    assert result.verdict == "race"
    assert "the check returned False" in result.message


def test_a_check_that_crashes_is_an_error_not_a_pass():
    s = subject("counter", racy=False)
    result = explore(s.setup, list(s.workers), lambda state: state.missing, max_schedules=3)
    assert result.verdict == "error"
    assert "The check raised AttributeError" in result.message


def test_setup_failure_is_an_error():
    def setup():
        raise OSError("no data")

    result = explore(setup, [lambda s: None], lambda s: True)
    assert result.verdict == "error"
    assert "setup() raised OSError: no data" in result.message


def test_a_thread_that_never_finishes_is_a_timeout_never_a_pass():
    def spin(state):
        while True:
            pass

    result = explore(SimpleNamespace, [spin, lambda s: None], lambda s: True, timeout_s=0.5)
    assert result.verdict == "timeout"
    assert "in spin" in result.message


def test_running_out_of_budget_before_the_search_ends_is_a_timeout():
    s = subject("counter", racy=False)
    result = explore(*args(s), max_schedules=10**6, timeout_s=0.3)
    assert result.verdict == "timeout"
    assert not result.ok


@pytest.mark.parametrize("strategy", ["random", "pct", "exhaustive", "auto"])
def test_every_strategy_finds_the_lost_update(strategy):
    result = explore(*args(subject("counter")), strategy=strategy)
    assert result.verdict == "race"


def test_exhaustive_search_of_a_small_space_tries_every_order_and_says_so():
    orders = set()

    def setup():
        return SimpleNamespace(log=[])

    def write(tag):
        def worker(state, tag=tag):
            state.log.append(tag)
            state.log.append(tag)
        return worker

    def check(state):
        orders.add("".join(state.log))

    result = explore(setup, [write("a"), write("b")], check, strategy="exhaustive")
    assert result.ok and result.covered
    assert "every one of the" in result.message
    assert orders == {"aabb", "abab", "abba", "baab", "baba", "bbaa"}


def test_a_sampled_search_does_not_claim_coverage():
    result = explore(*args(subject("counter", racy=False)), max_schedules=20)
    assert result.ok and not result.covered
    assert "sampled" in result.message


def test_library_code_runs_atomically(installed):
    (installed / "racelab_fake_lib.py").write_text(
        "def bump(state):\n    seen = state.count\n    state.count = seen + 1\n")
    from racelab_fake_lib import bump

    def user_bump(state):
        seen = state.count
        state.count = seen + 1

    def setup():
        return SimpleNamespace(count=0)

    def two(state):
        assert state.count == 2, state.count

    assert explore(setup, [bump, bump], two).ok
    assert explore(setup, [user_bump, user_bump], two).verdict == "race"


def test_glue_has_no_decision_points_but_the_user_code_it_calls_keeps_its_own():
    def setup():
        return SimpleNamespace(count=0, log=[])

    def bump(state):
        seen = state.count
        state.count = seen + 1

    def glue_bump(state):
        seen = state.count
        state.count = seen + 1

    def glue_around_bump(state):
        state.log.append("start")
        bump(state)
        state.log.append("end")

    def two(state):
        assert state.count == 2, state.count

    racy_in_glue = explore(setup, [glue_bump, glue_bump], two, strategy="exhaustive",
                           glue=(glue_bump,))
    assert racy_in_glue.ok and racy_in_glue.covered
    assert racy_in_glue.schedules_run == 2  # one order per thread first: no other choice
    plain = explore(setup, [glue_around_bump, glue_around_bump], two, strategy="exhaustive")
    glued = explore(setup, [glue_around_bump, glue_around_bump], two, strategy="exhaustive",
                    glue=(glue_around_bump,))
    assert plain.verdict == glued.verdict == "race"
    assert replay(setup, [glue_around_bump, glue_around_bump], two, glued,
                  glue=(glue_around_bump,)).schedule == glued.schedule


def test_a_comprehension_in_glue_outside_the_graders_files_keeps_its_decision_points():
    # Session 20: the grader's snapshot of the live threads (kit.alive_since, glue) is one
    # step however many threads the process holds (tests/checks: test_a3c and test_capstone,
    # "threads earlier code left behind"). Only the grader's own files get that: an answer's
    # function made glue (lesson 08's __init__) could name a closure's code "<listcomp>".
    def setup():
        return SimpleNamespace(x=0, seen=[])

    def write(state):
        state.x = 1

    def snapshot(state):
        state.seen = [state.x for _ in range(3 * FAIR_STEPS)]

    def whole(state):
        assert len(set(state.seen)) == 1, sorted(set(state.seen))

    for glue in ((), (snapshot,)):
        torn = explore(setup, [snapshot, write], whole, strategy="exhaustive",
                       max_schedules=200, glue=glue)
        assert torn.verdict == "race", glue


def test_a_function_written_inside_glue_keeps_its_decision_points():
    # A closure may run later, on a thread the answer starts: lesson 08 makes an answer's
    # __init__ glue, and a collector written inside it must still be searched.
    def setup():
        return SimpleNamespace(count=0)

    def outer(state):
        def bump():
            seen = state.count
            state.count = seen + 1

        bump()

    def two(state):
        assert state.count == 2, state.count

    result = explore(setup, [outer, outer], two, strategy="exhaustive", glue=(outer,))
    assert result.verdict == "race"


def test_only_one_controlled_thread_runs_at_a_time(installed):
    (installed / "racelab_fake_sleep.py").write_text(
        "import time\n"
        "def timed_sleep():\n"
        "    start = time.perf_counter()\n"
        "    time.sleep(0.002)\n"
        "    return start, time.perf_counter()\n")
    from racelab_fake_sleep import timed_sleep

    def setup():
        return SimpleNamespace(spans=[])

    def work(state):
        for _ in range(2):
            state.spans.append(timed_sleep())  # sleeping releases the GIL: threads could overlap

    def check(state):
        spans = sorted(state.spans)
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start, "two controlled threads ran at the same time"

    result = explore(setup, [work, work, work], check, max_schedules=20)
    assert result.ok, result.message


def test_figure_shows_one_lane_per_thread_and_marks_the_failure():
    result = subject("counter").run(0)
    axes = result.figure().axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["worker 0", "worker 1"]
    assert any(t.get_text() == "check failed" for t in axes.texts)
    assert len(axes.lines) >= 2  # the switch line(s) and the failure cross


class _Tally:
    def __init__(self):
        self.count = 0
        self.by_name = {"a": 0}

    def add(self):
        self.count += 1

    def add_item(self):
        self.by_name["a"] += 1


def test_the_figure_of_a_lost_update_names_each_read_and_write_with_its_value():
    result = explore(_Tally, [_Tally.add, _Tally.add], lambda t: t.count == 2)
    assert result.verdict == "race"
    labels = [t.get_text() for t in result.figure().axes[0].texts if "count" in t.get_text()]
    assert labels == ["read count=0", "read count=0\nwrite count=1", "write count=1"]
    assert "about to write count=1" in result.message


def test_the_figure_names_item_reads_and_writes_with_the_key():
    result = explore(_Tally, [_Tally.add_item, _Tally.add_item], lambda t: t.by_name["a"] == 2)
    labels = " ".join(t.get_text() for t in result.figure().axes[0].texts)
    assert "read ['a']=0" in labels and "write ['a']=1" in labels


def test_figure_of_a_deadlock_marks_every_blocked_thread():
    axes = subject("lock_order_deadlock").run(0).figure().axes[0]
    assert sum(t.get_text() == "blocked" for t in axes.texts) == 2


def test_results_are_results():
    assert isinstance(explore(*args(subject("counter"))), Result)


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError):
        explore(*args(subject("counter")), strategy="guess")


def test_explore_and_stress_leave_no_trace_hook_behind():
    before = (sys.gettrace(), threading.gettrace(), threading.excepthook,
              sys.getswitchinterval())
    explore(*args(subject("thread_pool")), max_schedules=5)
    stress(*args(subject("counter")), trials=1)
    assert (sys.gettrace(), threading.gettrace(), threading.excepthook,
            sys.getswitchinterval()) == before


def test_code_from_a_notebook_cell_is_scheduled_as_user_code():
    cell = compile("def bump(state):\n    seen = state.count\n    state.count = seen + 1\n",
                   "/tmp/ipykernel_4242/2718281828.py", "exec")
    namespace = {}
    exec(cell, namespace)

    def setup():
        return SimpleNamespace(count=0)

    def two(state):
        assert state.count == 2, f"expected 2, saw {state.count}"

    result = explore(setup, [namespace["bump"]] * 2, two)
    assert result.verdict == "race"
    assert "2718281828.py line 3 in bump" in result.message


def _long_blocking_call():
    """A call that blocks in C for longer than the scheduler's native-stall limit, using no CPU."""
    import select

    from autograder.harness.scheduler import NATIVE_STALL_S

    select.select([], [], [], NATIVE_STALL_S + 0.3)


def _lock_and_count():
    return SimpleNamespace(lock=threading.Lock(), n=0)


def _count_holding_the_lock_across_a_long_call(state):
    with state.lock:
        _long_blocking_call()
        state.n += 1


def _count_under_the_lock(state):
    with state.lock:
        state.n += 1


def _counted_twice(state):
    assert state.n == 2, f"expected 2, saw {state.n}"


@pytest.mark.parametrize("seed", range(3))
def test_a_lock_held_across_a_long_native_call_is_waited_for_not_a_crash_or_deadlock(seed):
    # While the holder blocks in C, the waiter's turn and the stall watcher both choose who runs
    # next; they once handed the same turn over twice (RuntimeError: release unlocked lock).
    result = explore(_lock_and_count, [_count_holding_the_lock_across_a_long_call,
                                       _count_under_the_lock], _counted_twice,
                     seed=seed, max_schedules=2, timeout_s=30)
    assert result.verdict == "pass", result.message


def _read_then_write_across_a_long_call(state):
    seen = state.n
    _long_blocking_call()
    state.n = seen + 1


def test_a_lost_update_across_a_long_native_call_is_still_found():
    result = explore(_lock_and_count, [_read_then_write_across_a_long_call,
                                       _count_under_the_lock], _counted_twice,
                     seed=0, max_schedules=4, timeout_s=30)
    assert result.verdict == "race", result.message


def _two_locks():
    return SimpleNamespace(a=threading.Lock(), b=threading.Lock(), n=0)


def _polite(first, second, *, count_under_both_locks=True):
    """Take ``first``, try ``second`` without blocking; on failure let go, back off, retry."""
    import time

    def worker(state):
        while True:
            with getattr(state, first):
                if getattr(state, second).acquire(blocking=False):
                    try:
                        if count_under_both_locks:
                            state.n += 1
                        return
                    finally:
                        getattr(state, second).release()
            time.sleep(0.0005)
    worker.__name__ = f"take_{first}_then_try_{second}"
    return worker


def _count_outside_the_locks(worker):
    def counted(state):
        worker(state)
        seen = state.n
        state.n = seen + 1
    return counted


def _both_counted(state):
    assert state.n == 2, f"expected 2, saw {state.n}"


@pytest.mark.parametrize("strategy", ["exhaustive", "random", "pct"])
def test_try_lock_with_back_off_is_searched_to_a_pass_not_a_livelock(strategy):
    # Without fair turns, one thread's back-off loop could starve the lock holder for ever.
    result = explore(_two_locks, [_polite("a", "b"), _polite("b", "a")], _both_counted,
                     seed=0, max_schedules=60, strategy=strategy, timeout_s=60)
    assert result.verdict == "pass", result.message


def test_lost_update_behind_a_try_lock_loop_is_found():
    workers = [_count_outside_the_locks(_polite("a", "b", count_under_both_locks=False)),
               _count_outside_the_locks(_polite("b", "a", count_under_both_locks=False))]
    result = explore(_two_locks, workers, _both_counted, seed=0, timeout_s=60)
    assert result.verdict == "race", result.message


@pytest.mark.parametrize("token", ["v1:3>1,4x0", "v2:3>1", "3>1", "v1:3>", "v1:a>1"])
def test_a_mistyped_schedule_token_gets_one_clear_error(token):
    with pytest.raises(ValueError, match="schedule token") as raised:
        parse_token(token)
    assert "STEP>THREAD" in str(raised.value)


def test_a_stand_in_replaces_the_answers_call_however_it_reached_the_object():
    """``stand_ins``: the answer's own call to a real object (here ``time.sleep``, reached by an
    import inside the worker) calls the stand-in; the search then spends no real time there."""
    import time as real_time

    called = []

    def quick_sleep(seconds):
        called.append(seconds)

    def worker(state):
        import time

        time.sleep(30)
        state.done.append(True)

    result = explore(lambda: SimpleNamespace(done=[]), [worker, worker],
                     lambda state: state.done == [True, True], max_schedules=4, timeout_s=20,
                     stand_ins={id(real_time.sleep): quick_sleep})
    assert result.verdict == "pass", result.message
    assert called and set(called) == {30}
