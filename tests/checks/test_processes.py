"""Lesson 08 (processes) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.processes``)
in this process as often as twenty grading runs would (``grading_runs.RUNS``), for wrong and
right answers alike: unlike the other lessons' correct answers (``CORRECT_RUNS``), these
checks are cheap enough for the full twenty (the whole file: about 90 s on 2 cores). The pool
and ledger checks start real ``spawn`` processes (pure-Python workers, a few hundredths of a
second each), so each run of them takes well under a second; ``choose``'s check is a fixed set
of made-up measurements.

Why a wrong pool or ledger fails every run, not just often:

- the pool workers (``process_workers.serve``, the grader's target) answer every group of waiting
  requests last first, so a pool that takes answers in arrival order swaps outputs whenever
  two threads wait at once (18 to 22 of 24 calls in every run measured);
- copies and leaks are counted, not raced: a worker's private memory, the bytes in new
  ``/dev/shm`` segments, the processes still running after ``close()``; no interleaving can
  change a count;
- the ledger's workers raise a start flag each and wait (bounded) for all the others before
  their 400 read-check-write updates, so they run at the same time on real cores, and an
  unguarded update loses hundreds of updates every run.

``answers_processes.py`` says what each wrong answer gets wrong.
"""

from __future__ import annotations

import itertools
import multiprocessing
import threading
from collections.abc import Callable
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import pytest

from autograder.checks import process_workers, processes
from autograder.checks.processes import pool as pool_run
from tests.checks import answers_processes as answers
from tests.checks.grading_runs import (
    RUNS,
    Exercise,
    solution_namespace,
    validity_tests,
)

_SOLVED = solution_namespace("08_processes", {
    "itertools": itertools, "multiprocessing": multiprocessing, "threading": threading,
    "shared_memory": shared_memory, "np": np, "process_workers": process_workers,
    "processes": processes})

EXERCISES = {
    "pool": Exercise(processes.check_pool, "SharedWeightsPool", _SOLVED["SharedWeightsPool"],
                     answers.WRONG_POOLS + answers.COUNTED_WRONG_POOLS, answers.CORRECT_POOLS),
    "ledger": Exercise(processes.check_ledger, "run_ledger", _SOLVED["run_ledger"],
                       answers.WRONG_LEDGERS, answers.CORRECT_LEDGERS),
    "choose": Exercise(processes.check_choose, "choose", _SOLVED["choose"],
                       answers.WRONG_CHOICES + answers.LYING_CHOICES, answers.CORRECT_CHOICES),
}


def _leftovers() -> Callable[[], str]:
    """What the checks left since now (processes, segments), in words; empty when nothing."""
    before = processes.snapshot()
    return lambda: before.since().describe() if before.since() else ""


(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(
     EXERCISES, leaves_nothing=_leftovers, correct_runs=RUNS)


def test_checks_leave_no_process_and_no_segment_behind() -> None:
    """A leaking answer, a hanging answer and a passing one: afterwards nothing is left."""
    before = processes.snapshot()
    for check, answer in ((processes.check_pool, answers.NoJoinPool),
                          (processes.check_pool, answers.CloseWithoutUnlinkPool),
                          (processes.check_ledger, answers.ledger_without_lock),
                          (processes.check_pool, _SOLVED["SharedWeightsPool"])):
        try:
            check(answer)
        except AssertionError:
            pass
    left = before.since()
    assert not left, left.describe()


def test_leaks_are_named_in_the_failure_message() -> None:
    with pytest.raises(AssertionError) as failure:
        processes.check_pool(answers.CloseWithoutUnlinkPool)
    assert "shared-memory segment still in /dev/shm" in str(failure.value)
    with pytest.raises(AssertionError) as failure:
        processes.check_pool(answers.NoJoinPool)
    assert "still running" in str(failure.value)


class _PredictHangs:
    """A pool whose ``predict`` waits for an answer nobody sends."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = None) -> None:
        self.block = shared_memory.SharedMemory(create=True, size=1024)

    def predict(self, tokens: Any) -> Any:
        threading.Event().wait(30)

    def close(self) -> None:
        self.block.close()
        self.block.unlink()


def test_a_pool_that_hangs_fails_within_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_run, "LOAD_S", 0.5)
    before = processes.snapshot()
    with pytest.raises(AssertionError) as failure:
        processes.check_pool(_PredictHangs)
    assert str(failure.value).startswith("SharedWeightsPool: predict() from 4 threads")
    assert "did not finish within 0.5 s" in str(failure.value)
    assert not before.since(), "the check unlinks a block the pool left"


class _NotImplementedClass:
    def __init__(self, *args: Any) -> None:
        raise NotImplementedError()


def _not_implemented(*args: Any) -> Any:
    raise NotImplementedError()


@pytest.mark.parametrize(
    ("check", "answer", "exercise"),
    [(processes.check_pool, _NotImplementedClass, "SharedWeightsPool"),
     (processes.check_ledger, _not_implemented, "run_ledger"),
     (processes.check_choose, _not_implemented, "choose")])
def test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error(
        check: Callable[[Any], None], answer: Any, exercise: str) -> None:
    with pytest.raises(AssertionError) as failure:
        check(answer)
    message = str(failure.value)
    assert message.startswith(f"{exercise}: ")
    assert "NotImplementedError" in message


def test_every_wrong_choice_is_caught_by_a_named_case() -> None:
    for answer in answers.WRONG_CHOICES:
        wrong = [what for what, threads, procs, budget in processes.choice_cases()
                 if answer(threads, procs, budget)
                 != processes.reference_choice(threads, procs, budget)]
        assert wrong, answer.__name__
