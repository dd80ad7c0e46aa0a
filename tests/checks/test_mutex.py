"""Lesson 02 (mutex) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.mutex``)
in this process as often as that many grading runs would (``grading_runs.RUNS``, 20, for a
wrong answer; ``CORRECT_RUNS`` for a right one). Every check uses the controlled scheduler
(``explore``) with a fixed seed and a fixed number of schedules, so it is deterministic: the
same answer gets the same verdict, found in the same schedule, on every run. The 20 runs
still run, to prove exactly that (a flaky verdict would show up here).

The correct answers are two per exercise written differently from the lesson's solution
(another primitive, another structure), 20 runs each; the solution itself (read from
``solutions/02_mutex.py``) runs once. ``answers_mutex.py`` says what each wrong answer gets
wrong.

Search bound (issue #18, class 2): every check first runs every schedule with at most one
preemption or other departure from round-robin order, in a depth-first order no seed changes
(``explore``'s bounded phase), then ``mutex.SAMPLES`` seeded samples; ``mutex.SCHEDULES``
only caps an unusually long answer. So a race that one preemption exposes fails whatever the
seed: ``move_checked_then_moved_in_two_regions`` (a check under one locked region, the move
under another), which 200 seeded schedules used to miss for 12 seeds in a row, fails on
every seed below. Timed acquires that may give up are schedule choices, and a replica's
slots count as guarded only while the accessing thread holds its lock (class 3).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from autograder.checks import mutex
from tests.checks import answers_mutex as answers
from tests.checks.grading_runs import (
    Exercise,
    solution_namespace,
    unfilled_answer_test,
    validity_tests,
)

_SOLVED = solution_namespace("02_mutex", {"threading": threading})

EXERCISES = {
    "metrics": Exercise(mutex.check_metrics, "ServerMetrics", _SOLVED["ServerMetrics"],
                        answers.WRONG_METRICS, answers.CORRECT_METRICS),
    "cache": Exercise(mutex.check_cache, "PredictionCache", _SOLVED["PredictionCache"],
                      answers.WRONG_CACHES, answers.CORRECT_CACHES),
    "move_slots": Exercise(mutex.check_move_slots, "move_slots", _SOLVED["move_slots"],
                           answers.WRONG_MOVES, answers.CORRECT_MOVES),
    "model_slot": Exercise(mutex.check_model_slot, "ModelSlot", _SOLVED["ModelSlot"],
                           answers.WRONG_SLOTS, answers.CORRECT_SLOTS),
}


(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(
     EXERCISES, terms=("expected", "Deadlock"), same_message=True)


def test_deadlocking_move_is_a_deadlock_verdict_naming_both_blocked_movers() -> None:
    result = mutex.run_move_slots(answers.move_in_argument_order)
    assert result.verdict == "deadlock"
    assert "worker 0 waits to enter `with` on Lock" in result.message
    assert "worker 1 waits to enter `with` on Lock" in result.message
    assert "in move_a_to_b" in result.message and "in move_b_to_a" in result.message
    assert result.message.count("with dst.lock:") >= 2


@pytest.mark.parametrize("seed", range(12))
def test_shallow_race_is_found_whatever_the_seed(seed: int) -> None:
    result = mutex.run_move_slots(answers.move_checked_then_moved_in_two_regions, seed=seed)
    assert result.verdict == "race", result.message


def test_a_pass_states_the_search_bound_it_reached() -> None:
    result = mutex.run_move_slots(_SOLVED["move_slots"])
    assert result.ok, result.message
    assert result.bound.startswith("every schedule with at most 1 preemption"), result.bound
    assert result.bound in result.message


def test_timed_acquire_that_gives_up_is_unguarded_even_while_another_thread_holds_the_lock(
        ) -> None:
    result = mutex.run_move_slots(answers.move_timed_acquire_unchecked)
    assert result.verdict == "race", result.message
    assert "without holding" in result.message


def test_acquire_without_finally_is_a_deadlock_verdict_not_a_hang() -> None:
    result = mutex.run_model_slot(answers.ManualReleaseSlot)
    assert result.verdict == "deadlock"
    assert "self.lock.acquire()" in result.message


test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error = unfilled_answer_test(
    EXERCISES, terms=("before any threads were started",))


class _SnapshotWaitsForItself:
    """``snapshot`` holds a plain Lock and calls a helper that takes it again."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0

    def record(self, latency_s: float, ok: bool) -> None:
        with self.lock:
            self.requests += 1

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return self._counts()

    def _counts(self) -> dict[str, Any]:
        with self.lock:
            return {"requests": self.requests, "ok": self.requests, "errors": 0,
                    "latency_total": float(self.requests)}


def test_answer_that_waits_for_itself_on_one_thread_fails_within_seconds() -> None:
    with pytest.raises(AssertionError) as failure:
        mutex.check_metrics(_SnapshotWaitsForItself)
    assert str(failure.value).startswith("ServerMetrics: used on one thread it did not return")


@pytest.mark.parametrize(("run", "answer"), [("run_metrics", answers.LazyLockMetrics),
                                             ("run_model_slot", answers.LazyLockSlot)],
                         ids=lambda v: getattr(v, "__name__", v))
def test_a_lock_made_on_first_use_passes_the_graded_search_and_fails_the_first_use_one(
        run, answer):
    assert getattr(mutex, run)(answer).verdict == "pass"  # it needs two departures
    result = getattr(mutex, run)(answer, first_use=True)
    assert result.verdict == "race", result.message
    assert result.schedules_run <= mutex.FIRST_USE_SCHEDULES
