"""Lesson 08 (processes) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.processes``)
in this process: a wrong answer as often as twenty grading runs would (``grading_runs.RUNS``),
a correct one ``CORRECT_RUNS`` times (the pool's check explores schedules and the ledger's
runs 3 x 3,000 updates: a few seconds a run, where both took under one before). The pool and
ledger checks start real ``spawn`` processes (pure-Python workers, a few hundredths of a second
each); ``choose``'s check is a fixed set of made-up measurements.

Why a wrong pool, ledger or choice fails every run, not just often:

- the pool workers (``process_workers.serve``, the grader's target) answer every group of waiting
  requests last first, so a pool that takes answers in arrival order swaps outputs whenever
  two threads wait at once (18 to 22 of 24 calls in every run measured);
- a pool whose request-id bookkeeping is a check-then-act between threads passes on real
  processes in nearly every run (the window between its check and its act is a few bytecodes,
  real threads switch every 5 ms); the check then runs its parent side under the controlled
  scheduler with the processes stubbed (``processes.explore_pool``): every schedule with one
  preemption, with answers given the moment a request is put and then gathered and answered
  last first. Each such pool here fails inside that bound, the same schedule every run;
- a pool is left idle for the longest time limit its own threads wait with (up to 15 s), plus
  1 s, then asked again: a collector that gives up once idle leaves that request unanswered,
  every run; a ``predict()`` that waits with a timeout fails in the first explored schedule,
  which lets any timed wait run out;
- copies, leaks and start methods are counted, not raced: a worker's private memory, the bytes
  in new ``/dev/shm`` segments, the processes still running after ``close()``, how each ledger
  worker's process was started (it reads its own stack); no interleaving can change a count;
- the ledger's workers raise a start flag each and wait (bounded) for all the others before
  their 3,000 read-check-write updates, so they run at the same time on real cores, and an
  unguarded update loses thousands of updates every run;
- the ledger's workers wait before their last update; once the answer is seen in a wait, all
  but one go on, and that one waits until the answer is seen waiting for it with no time
  limit (one of 45 s or more counts as none), or waiting again on what it already waited on
  (a loop of short joins): an answer that gives each worker one timeout and terminates them
  stops the held worker, in whichever order it joins them, whatever the machine's speed; 9,000
  updates on a queue are three times what its pipe holds, so an answer that joins before it
  reads hangs, and is stopped 3 s after every worker made its last update;
- ``choose`` is graded on tables at the rule's edges (a median of exactly 1.2, even numbers of
  rounds, a best round far from the median) besides seeded made-up ones.

``answers_processes.py`` says what each wrong answer gets wrong.
"""

from __future__ import annotations

import itertools
import multiprocessing
import threading
import time
import types
from collections.abc import Callable
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import pytest

from autograder.checks import process_workers, processes
from autograder.checks.processes import ledger as ledger_run
from autograder.checks.processes import pool as pool_run
from tests.checks import answers_processes as answers
from tests.checks.grading_runs import (
    LIAR_RUNS,
    REPO,
    Exercise,
    fails_every_run,
    solution_namespace,
    unfilled_answer_test,
    validity_tests,
)

#: Every check here counts /dev/shm: one such test at a time across the workers.
pytestmark = pytest.mark.usefixtures("shm_to_itself")

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
 test_lessons_own_solution_passes) = validity_tests(EXERCISES, leaves_nothing=_leftovers)


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


test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error = unfilled_answer_test(
    {"pool": Exercise(processes.check_pool, "SharedWeightsPool"),
     "ledger": Exercise(processes.check_ledger, "run_ledger"),
     "choose": Exercise(processes.check_choose, "choose")})


def test_every_wrong_choice_is_caught_by_a_named_case() -> None:
    for answer in answers.WRONG_CHOICES:
        wrong = [what for what, threads, procs, budget in processes.choice_cases()
                 if answer(threads, procs, budget)
                 != processes.reference_choice(threads, procs, budget)]
        assert wrong, answer.__name__


# --------------------------------------------------------------------------- the pool's bookkeeping


@pytest.mark.parametrize("answer", answers.RACY_BOOKKEEPING_POOLS, ids=lambda a: a.__name__)
def test_racy_bookkeeping_fails_every_grading_run(answer: Any) -> None:
    """The whole check, as the hidden test runs it: the explored schedules catch what the run
    on real processes almost never shows. The search is seeded and its schedules are replayed
    step by step, so a few runs say what twenty would (each costs a few seconds)."""
    left_behind = _leftovers()
    fails_every_run(processes.check_pool, "SharedWeightsPool", answer, runs=LIAR_RUNS)
    assert not left_behind(), f"the check left {left_behind()}"


@pytest.mark.parametrize("answer", answers.RACY_BOOKKEEPING_POOLS, ids=lambda a: a.__name__)
def test_explored_bookkeeping_fails_in_the_same_schedule_every_time(answer: Any) -> None:
    first, again = processes.explore_pool(answer), processes.explore_pool(answer)
    assert first is not None and not first.ok, first
    assert (first.verdict, first.schedule) == (again.verdict, again.schedule)


@pytest.mark.parametrize("answer", answers.UNJOINED_POOLS, ids=lambda a: a.__name__)
def test_a_close_that_does_not_join_its_collector_fails_every_grading_run(answer: Any) -> None:
    """The whole check: right on real processes, but close() of the stubbed pool returns
    while its collector is held (or has not yet taken the end marker), every run."""
    left_behind = _leftovers()
    messages = fails_every_run(processes.check_pool, "SharedWeightsPool", answer,
                               runs=LIAR_RUNS)
    assert all("returned while a thread the pool started was still running" in m
               for m in messages), messages[0]
    assert not left_behind(), f"the check left {left_behind()}"


@pytest.mark.parametrize("answer", answers.UNJOINED_WORKER_POOLS, ids=lambda a: a.__name__)
def test_a_close_that_does_not_join_its_workers_fails_every_grading_run(answer: Any) -> None:
    left_behind = _leftovers()
    messages = fails_every_run(processes.check_pool, "SharedWeightsPool", answer,
                               runs=LIAR_RUNS)
    assert all("returned while a worker process was still running" in m
               for m in messages), messages[0]
    assert not left_behind(), f"the check left {left_behind()}"


@pytest.mark.parametrize("answer", [answers.ConditionPool, answers.PollingPool,
                                    answers.QueuePerWorkerPool], ids=lambda a: a.__name__)
def test_a_close_that_joins_or_starts_no_thread_lets_the_held_collector_go(answer: Any) -> None:
    seen = processes.closing_run(answer)
    assert seen is not None and seen["returned"] and not seen["raised"], seen
    assert not (seen["returned_while_held"] or seen["running_at_return"]
                or seen["left_running"]), seen
    if seen["threads"]:
        assert seen["held"] and seen["released_by"] == "join", seen
    else:
        assert not seen["held"], seen
    assert seen["worker_held"] and seen["worker_released_by"] == "join", seen
    assert not seen["worker_running_at_return"], seen


def test_a_pool_the_stubs_do_not_model_is_graded_on_real_processes_only() -> None:
    assert processes.explore_pool(answers.WithPipePool) is None


def test_a_pool_on_a_managers_queues_is_explored_and_passes() -> None:
    result = processes.explore_pool(answers.ManagerQueuePool)
    assert result is not None and result.ok, result


def test_the_pools_names_are_its_own_again_after_exploring() -> None:
    """While it explores, the pool's ``multiprocessing`` names stand for stubs; after, not."""
    namespace = vars(answers)
    before = {name: namespace[name] for name in ("multiprocessing", "shared_memory")}
    result = processes.explore_pool(answers.RegisterAfterPutPool)
    assert result is not None and result.verdict == "error"
    assert {name: namespace[name] for name in before} == before
    assert multiprocessing.get_context("spawn").Process.__module__ == "multiprocessing.context"


# --------------------------------------------------------------------------- the ledger's waits


def test_a_ledger_waiting_without_a_limit_has_its_workers_let_go_at_once() -> None:
    """The hold costs a correct answer nothing: its workers go on as soon as it waits."""
    seen = processes.run_ledger_once(_SOLVED["run_ledger"])
    assert 0 < seen.held_for < processes.LEDGER_HOLD_S / 2, seen.held_for
    assert not seen.stopped and not seen.running


def test_a_ledger_that_hangs_fails_soon_after_its_workers_are_done() -> None:
    start = time.monotonic()
    with pytest.raises(AssertionError) as failure:
        processes.check_ledger(answers.ledger_join_before_draining)
    assert "still had not returned" in str(failure.value)
    assert "read every update off the queue" in str(failure.value).lower()
    assert time.monotonic() - start < processes.LEDGER_STALL_S + 15


class _Started:
    """What a started ``multiprocessing`` process holds of its pid."""

    def __init__(self, pid: int) -> None:
        self._popen = types.SimpleNamespace(pid=pid)


def test_held_workers_are_let_go_only_when_the_answer_waits_on() -> None:
    """The release policy, look by look: an answer that waits with no time limit gets its
    workers at once, and so does one that waits again on what it already waited on (a loop
    of short waits); one that waits on each worker once with a shorter limit gets every
    worker but the kept one, and never that one, not even after the hold (it gives up and
    terminates it while it is held); one that polls in its own code gets them all once the
    hold is over."""
    first, second, again = object(), object(), object()
    kept, other = _Started(100), _Started(101)
    workers = {100: processes.LEDGER_KEPT, 101: processes.LEDGER_KEPT + 1}

    def looks(*sequence: tuple[processes.Waiting, bool], all_held: bool = True) -> list:
        policy = ledger_run._Release()
        return [policy.let_go(seen, all_held, over, workers) for seen, over in sequence]

    no_limit = processes.Waiting(True, None, first, kept)
    assert looks((no_limit, False), (no_limit, False)) == ["others", "all"]
    assert looks((no_limit, False), (no_limit, False), all_held=False) == [None, None]
    long_limit = processes.Waiting(True, processes.LEDGER_UNLIMITED_S, first, kept)
    assert looks((long_limit, False), (long_limit, False)) == ["others", "all"]
    queue = processes.Waiting(True, None, first, object())
    assert looks((queue, False), (queue, False)) == ["others", "all"]
    short = processes.Waiting(True, processes.LEDGER_UNLIMITED_S - 1, first, kept)
    assert looks(*[(short, False)] * 5) == ["others"] + [None] * 4
    assert looks(*[(short, True)] * 5) == ["others"] + [None] * 4
    elsewhere = processes.Waiting(True, None, second, other)
    assert looks(*[(elsewhere, False)] * 5) == ["others"] + [None] * 4
    each_once = processes.Waiting(True, 10.0, second, other)
    assert looks((short, False), (each_once, True), (each_once, True)) == ["others", None, None]
    loop = processes.Waiting(True, 1.0, again, kept)
    assert looks((short, False), (loop, False)) == ["others", "all"]
    loop_elsewhere = processes.Waiting(True, 1.0, again, other)
    assert looks((each_once, False), (loop_elsewhere, False)) == ["others", None]
    polling = processes.Waiting(False)
    assert looks((polling, False), (polling, False), (polling, True)) == [None, None, "all"]


def test_a_ledger_polling_its_workers_with_short_joins_is_let_go_at_once() -> None:
    """``while p.is_alive(): p.join(1)`` waits again on the same worker: let go, no hold."""
    seen = processes.run_ledger_once(answers.ledger_polling_short_joins)
    assert 0 < seen.held_for < processes.LEDGER_HOLD_S / 2, seen.held_for
    assert not seen.stopped and not seen.running


def _blocked_in(wait: Callable[[], Any]) -> bool:
    """Whether a thread blocked in ``wait()`` counts as waiting without a time limit."""
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    time.sleep(0.2)
    return processes.waits_without_limit(thread)


def test_waiting_without_a_limit_is_told_from_a_timeout_and_from_sleeping() -> None:
    forever = threading.Event()
    stuck = multiprocessing.get_context("spawn").Queue()
    try:
        assert _blocked_in(forever.wait)
        assert _blocked_in(stuck.get)
        assert _blocked_in(lambda: forever.wait(processes.LEDGER_UNLIMITED_S * 3))
        assert not _blocked_in(lambda: forever.wait(1))
        assert not _blocked_in(lambda: forever.wait(10))
        assert not _blocked_in(lambda: stuck.get(timeout=1))
        assert not _blocked_in(lambda: time.sleep(1))
    finally:
        forever.set()
        stuck.put(None)


# --------------------------------------------------------------------------- choose's rule


def test_the_lesson_states_chooses_rule_at_its_edges() -> None:
    """The even-round median and the threshold the graded tables test are in the exercise."""
    lines = (REPO / "solutions" / "08_processes.py").read_text().splitlines()
    text = " ".join(line.removeprefix("#").strip() for line in lines)
    assert "for an even number of rounds it is the mean of the two middle ratios" in text
    assert "a median of exactly 1.2 chooses processes" in text
