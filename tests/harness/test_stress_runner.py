"""The stress engine: real threads, overlap proven, every verdict reachable, fails closed."""

import json
import sys
import threading
import time

import pytest

from autograder.harness import Result, stress
from autograder.harness.stress_runner import RERUNS_PER_TRIAL

SPIN = 100_000


def _counter_state():
    return {"n": 0, "lock": threading.Lock()}


def _unlocked_slow_increments(state):
    for _ in range(200):
        seen = state["n"]
        time.sleep(0)  # releases the GIL between the read and the write
        state["n"] = seen + 1


def _locked_slow_increments(state):
    for _ in range(200):
        with state["lock"]:
            seen = state["n"]
            time.sleep(0)
            state["n"] = seen + 1


def _expect_400(state):
    assert state["n"] == 400, f"expected 400 increments, saw {state['n']}"


def _busy(state):
    total = 0
    for i in range(SPIN):
        total += i
    state["n"] += 1


def test_lost_updates_are_a_race_with_the_checks_words_in_the_message():
    result = stress(_counter_state, [_unlocked_slow_increments] * 2, _expect_400, trials=20)
    assert result.verdict == "race"
    assert not result.ok
    assert "expected 400 increments, saw" in result.message
    assert "stress(setup, workers, check, trials=20, seed=0)" in result.message
    assert json.loads(json.dumps(result.schedule))["engine"] == "stress"


def test_locked_counter_passes_and_reports_overlap():
    result = stress(_counter_state, [_locked_slow_increments] * 2, _expect_400, trials=5)
    assert result.verdict == "pass", result.message
    assert result.ok
    assert result.schedule is None
    assert result.schedules_run == 5
    assert "overlapped in" in result.message


def test_worker_exception_is_an_error_naming_thread_and_exception():
    def boom(state):
        _busy(state)
        raise KeyError("model not built")

    result = stress(_counter_state, [_busy, boom], lambda s: True, trials=3)
    assert result.verdict == "error"
    assert "worker 1 raised KeyError: 'model not built'" in result.message
    assert "at the same time" in result.message


def test_check_returning_false_is_a_race():
    result = stress(_counter_state, [_busy, _busy], lambda s: False, trials=3)
    assert result.verdict == "race"
    assert "the check returned False" in result.message


def test_a_trial_whose_threads_ran_one_after_another_runs_again_and_is_not_checked():
    attempts, checked = [], []

    def setup():
        attempts.append(len(attempts) + 1)
        return {"n": 0, "attempt": attempts[-1]}

    def tiny_then_busy(state):
        if state["attempt"] > 2:  # next to nothing to overlap in the first two attempts
            _busy(state)

    def check(state):
        checked.append(state["attempt"])

    result = stress(setup, [tiny_then_busy] * 2, check, trials=2)
    assert result.verdict == "pass", result.message
    assert result.schedules_run == len(checked) == 2
    reruns = len(attempts) - len(checked)  # the attempts whose threads ran one after another
    assert ("ran again" in result.message) == (reruns > 0)
    if reruns:
        assert f"{reruns} more trial" in result.message


def test_threads_that_never_overlap_run_again_a_bounded_number_of_times_then_are_inconclusive():
    attempts, checked = [], []
    result = stress(lambda: attempts.append(1), [lambda s: None] * 2, checked.append, trials=10)
    assert result.verdict == "timeout"
    assert len(checked) < 10 and len(attempts) - len(checked) == RERUNS_PER_TRIAL * 11 + 1
    assert "Inconclusive: the worker threads ran one after another" in result.message


def test_lock_order_deadlock_is_reported_with_stacks():
    def setup():
        return {"a": threading.Lock(), "b": threading.Lock(), "ready": threading.Barrier(2)}

    def ab(state):
        with state["a"]:
            state["ready"].wait()
            with state["b"]:
                pass

    def ba(state):
        with state["b"]:
            state["ready"].wait()
            with state["a"]:
                pass

    result = stress(setup, [ab, ba], lambda s: True, trials=3, timeout_s=1.0)
    assert result.verdict == "deadlock"
    assert "worker 0" in result.message and "worker 1" in result.message
    assert "in ab" in result.message and "in ba" in result.message


def test_a_worker_still_running_at_the_deadline_is_a_timeout():
    def slow(state):
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            pass

    result = stress(_counter_state, [slow, slow], lambda s: True, trials=3, timeout_s=0.5)
    assert result.verdict == "timeout"
    assert "still running" in result.message


def test_running_out_of_budget_between_trials_is_a_timeout():
    def slowish(state):
        time.sleep(0.05)

    # 50 trials of 0.05 s each outlast the 1 s budget; one trial would have to take a whole
    # second to be cut inside (then "deadlock": sleeping threads make no progress). At 0.2 s
    # that happened once beside a loaded test run (load 7 on 2 cores).
    result = stress(_counter_state, [slowish, slowish], lambda s: True, trials=50,
                    timeout_s=1.0)
    assert result.verdict == "timeout"
    assert result.schedules_run < 50


def test_setup_failure_is_an_error():
    def setup():
        raise RuntimeError("no model file")

    result = stress(setup, [_busy, _busy], lambda s: True, trials=3)
    assert result.verdict == "error"
    assert "setup() raised RuntimeError: no model file" in result.message


def test_switch_interval_is_restored_even_when_the_check_interrupts():
    before = sys.getswitchinterval()

    def interrupt(state):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stress(_counter_state, [_busy, _busy], interrupt, trials=2)
    assert sys.getswitchinterval() == before
    stress(_counter_state, [_busy, _busy], lambda s: True, trials=2)
    assert sys.getswitchinterval() == before


def test_switch_interval_is_tiny_while_workers_run():
    seen = []

    def record(state):
        seen.append(sys.getswitchinterval())
        _busy(state)

    stress(_counter_state, [record, record], lambda s: True, trials=1)
    assert seen and set(seen) == {1e-6}  # one trial, or more if its threads ran one by one


def test_the_start_order_follows_the_seed():
    def run(seed):
        result = stress(_counter_state, [_busy] * 4, lambda s: False, trials=1, seed=seed)
        return result.schedule["start_order"]

    assert run(3) == run(3)
    assert len({tuple(run(seed)) for seed in range(6)}) > 1


def test_figure_has_one_lane_per_worker_and_marks_the_raising_thread():
    def boom(state):
        _busy(state)
        raise ValueError("torn")

    result = stress(_counter_state, [_busy, boom, _busy], lambda s: True, trials=1)
    figure = result.figure()
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["worker 0", "worker 1",
                                                             "worker 2"]
    assert any(t.get_text() == "ValueError" for t in axes.texts)


def test_stress_needs_two_workers():
    with pytest.raises(ValueError):
        stress(_counter_state, [_busy], lambda s: True)


def test_result_of_stress_is_a_result():
    result = stress(_counter_state, [_busy, _busy], lambda s: True, trials=1)
    assert isinstance(result, Result)
