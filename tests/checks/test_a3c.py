"""Lesson 09 (a3c) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.a3c``)
``RUNS`` times in this process, as that many grading runs would; the wrong networks run in child
processes (``isolation.py``), since 4 actors tracing a cold network at once can crash TensorFlow.

How each check decides, and why its counts are enough (measured on the shared, loaded 2-core
machine):

- ``make_shared_network``: a model that is not built is refused before any thread starts
  (racing actors on one can crash TensorFlow); otherwise ``stress``, 3 trials of 4 actor
  threads calling ``predict_on_batch`` 3 times each on a fresh network. A network that is
  built but not warm for that call (never called, warmed with ``model(x)``, ``predict``, a
  32-row batch or ``make_predict_function()`` alone) must trace at least once while the
  actors run, whatever the interleaving: the trace count fails it in the first trial, every
  time.
- ``SharedLearner``: first ``explore`` (two actors push one gradient each, one closes; the
  grader's ``apply_gradients`` and ``apply`` note when they start and end): a lock made on
  first use (``LazyLockLearner``, two applies at once, schedule 189 whatever the seed) and a
  learner thread started on the first push (``LazyThreadLearner``, a deadlock in schedule 9)
  fail there; then ``stress``, 4 trials of 4 actors pushing 25 grid gradients each, all
  running before the first push. The weights are exact in every order of the same updates,
  so only lost or repeated ones show; ``optimizer.iterations`` must equal the pushes, and no
  two ``apply`` calls of the optimizer may run at the same time (the grader's optimizer notes
  when each ran). Counting lost iterations alone missed unlocked ``apply_gradients`` in 1 of
  30 single trials, and one full grading run of 20 passed it; with the overlap, unlocked
  ``apply_gradients`` and a lock made per call failed 60 of 60 single trials (51 by lost
  counts, 9 by overlap alone). ``assign_sub`` answers fail on one thread already
  (``iterations`` stays 0); an answer that sums the gradients fails there too.
- ``StepBudget``: one thread takes all of ``StepBudget(250)`` with many equal returns (a
  ``deque(maxlen=100)`` or a ``set`` of returns loses some); then ``explore``, 2 actors
  sharing ``StepBudget(3)``: every schedule with at most
  two departures from round-robin order, then 40 samples. Each wrong answer fails within 11
  schedules whatever the seed (each needs one preemption), so the verdict is the same on
  every run.
- ``VersionedNetwork``: ``stress`` (4 trials: a learner makes 30 updates while 2 actors act)
  then ``explore`` (one update, an actor acting during and after it; every schedule with up to
  two departures, then 20 samples). An unlocked act tears in the first trial every time; a
  version read after the lock is released (``ReadAfterUnlockVersioned``) never showed in 10
  single ``stress`` trials and is found by ``explore`` in 7 schedules whatever the seed.
"""

from __future__ import annotations

import re
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import a3c
from autograder.checks.a3c.settings import LEARNER_BACKLOG_YIELD_S, LEARNER_BACKLOG_YIELDS
from tests.checks import answers_a3c as answers
from tests.checks.grading_runs import (
    Exercise,
    fails_every_run,
    runs_for,
    solution_namespace,
    threads_left_behind,
    unfilled_answer_test,
    validity_tests,
)
from tests.checks.isolation import IsolatedRuns

SLOW_RUNS = 2


@pytest.fixture(autouse=True)
def _quiet_keras() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


_SOLVED = solution_namespace("09_a3c", {"threading": threading, "time": time, "tf": tf,
                                        "keras": keras, "np": np, "a3c": a3c})

EXERCISES = {
    "network": Exercise(a3c.check_shared_network, "make_shared_network",
                        _SOLVED["make_shared_network"], (), answers.CORRECT_NETWORKS),
    "learner": Exercise(a3c.check_learner, "SharedLearner", _SOLVED["SharedLearner"],
                        answers.WRONG_LEARNERS, answers.CORRECT_LEARNERS),
    "budget": Exercise(a3c.check_budget, "StepBudget", _SOLVED["StepBudget"],
                       answers.WRONG_BUDGETS, answers.CORRECT_BUDGETS),
    "versioned": Exercise(a3c.check_versioned, "VersionedNetwork", _SOLVED["VersionedNetwork"],
                          answers.WRONG_VERSIONED, answers.CORRECT_VERSIONED),
}

(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(EXERCISES, solution_runs=3)
test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error = unfilled_answer_test(
    EXERCISES)


#: The wrong networks' grading runs, in child processes (``isolation.py``): a network built
#: but not warm is traced by 4 actor threads at once, which can crash TensorFlow (a
#: segfault took a test worker down, and xdist's loadfile scheduler then hung the suite). A
#: run whose child crashed counts as a failed run, as a kernel that died scores 0.
_WRONG_NETWORK_RUNS: list[IsolatedRuns] = []


def _wrong_network_verdicts() -> dict[str, list[str]]:
    if not _WRONG_NETWORK_RUNS:
        _WRONG_NETWORK_RUNS.append(IsolatedRuns(
            "autograder.checks.a3c", "tests.checks.answers_a3c",
            [("check_shared_network", a.__name__) for a in answers.WRONG_NETWORKS],
            [runs_for(a) for a in answers.WRONG_NETWORKS]))
    verdicts = _WRONG_NETWORK_RUNS[0].verdicts()
    return {a.__name__: runs for a, runs in zip(answers.WRONG_NETWORKS, verdicts, strict=True)}


@pytest.mark.parametrize("answer", answers.WRONG_NETWORKS, ids=lambda a: a.__name__)
def test_wrong_network_fails_every_grading_run_in_the_exercises_terms(answer: Any) -> None:
    runs = _wrong_network_verdicts()[answer.__name__]
    assert len(runs) == runs_for(answer)
    passed = [number + 1 for number, verdict in enumerate(runs) if verdict == "pass"]
    assert not passed, f"grading runs {passed} of {len(runs)} passed {answer.__name__}"
    for verdict in runs:
        if verdict.startswith("fail"):
            assert verdict.startswith("fail: make_shared_network: "), verdict
            assert "expected" in verdict, verdict
            assert "BEGIN HIDDEN TESTS" not in verdict


@pytest.mark.parametrize("answer", answers.SLOW_WRONG_VERSIONED, ids=lambda a: a.__name__)
def test_act_on_a_copy_synced_while_the_learner_writes_fails(answer: Any) -> None:
    fails_every_run(a3c.check_versioned, "VersionedNetwork", answer, SLOW_RUNS)


@pytest.mark.parametrize("seed", range(3))
def test_a_version_read_after_the_lock_is_found_by_explore_whatever_the_seed(seed: int) -> None:
    result = a3c.run_versioned_explore(answers.ReadAfterUnlockVersioned, seed=seed)
    assert result.verdict == "race", result.message
    assert "labelled version" in result.message
    assert result.schedules_run <= 20


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("answer", answers.WRONG_BUDGETS[:5], ids=lambda a: a.__name__)
def test_budget_races_are_found_within_the_bound_whatever_the_seed(answer: Any,
                                                                   seed: int) -> None:
    result = a3c.run_budget(answer, seed=seed)
    assert result.verdict == "race", result.message
    assert result.schedules_run <= 30


def test_a_timed_join_in_close_fails_however_many_threads_earlier_code_left_behind() -> None:
    # CI of 5bf6ff8: TimedJoinLearner passed a grading run in a test worker that earlier files
    # had left about 100 threads in: the grader's snapshot of the live threads ran past
    # FAIR_STEPS, the closer was set aside in it, and the learner thread ended meanwhile.
    with threads_left_behind():
        result = a3c.run_learner_explore(answers.TimedJoinLearner)
    assert result.verdict == "race" and result.schedules_run == 1, result.message
    assert "still running when it returned" in result.message


class _LeftRunning(answers.QueueLearner):
    """Waits in close() until every gradient is applied, but never stops the learner thread."""

    def _learn(self) -> None:
        while (grads := self.queue.get()) is not None:
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables,
                                               strict=True))
            self.queue.task_done()

    def close(self) -> None:
        self.queue.join()


def test_a_learner_thread_left_running_after_close_fails() -> None:
    made: list[_LeftRunning] = []

    class Tracked(_LeftRunning):
        def __init__(self, model: Any, optimizer: Any) -> None:
            super().__init__(model, optimizer)
            made.append(self)

    try:
        with pytest.raises(AssertionError) as failure:
            a3c.check_learner(Tracked)
        assert "still running" in str(failure.value)
    finally:
        for learner in made:
            learner.queue.put(None)
            learner.thread.join(5)


def test_hogwild_is_told_the_counts_it_lost_or_the_applies_that_overlapped() -> None:
    result = a3c.run_learner(answers.HogwildLearner)
    assert result.verdict == "race", result.message
    assert re.search(r"\d+ increments were lost|\d+ pair\(s\) of apply_gradients calls",
                     result.message), result.message


def test_an_unbuilt_network_is_refused_before_any_thread_starts() -> None:
    result = a3c.run_shared_network(answers.cold_sequential_network)
    assert result.verdict == "error" and result.schedules_run == 0
    assert "expected a built network" in result.message


@pytest.mark.parametrize("version", [0, 1, 2, 17, 300])
def test_a_network_at_one_version_reads_as_that_version(version: int) -> None:
    model = a3c.set_version(a3c.actor_critic(), float(version))
    assert a3c.version_of(model.predict_on_batch(a3c.probe())) == version
    assert a3c.version_of(model(a3c.probe())) == version


def test_a_network_with_layers_of_two_versions_reads_as_torn() -> None:
    model = a3c.set_version(a3c.actor_critic(), 3.0)
    for index in range(len(model.weights)):
        mixed = a3c.version_weights(3.0, model)
        mixed[index] = np.full(mixed[index].shape, 4.0, "float32")
        model.set_weights(mixed)
        assert a3c.version_of(model.predict_on_batch(a3c.probe())) is None, index


def test_sgd_on_the_grid_gives_the_same_weights_in_every_order() -> None:
    model = a3c.actor_critic()
    optimizer = keras.optimizers.SGD(learning_rate=a3c.LEARNING_RATE)
    start = a3c.grid_weights(model, 0)
    grads = a3c.grid_gradients(model, 1, 60)
    expected = a3c.expected_after(start, grads)
    for order in (range(60), reversed(range(60)), np.random.default_rng(2).permutation(60)):
        model.set_weights(start)
        for index in order:
            optimizer.apply_gradients(zip(grads[index], model.trainable_variables, strict=True))
        assert all(np.array_equal(np.asarray(w, "float64"), e)
                   for w, e in zip(model.get_weights(), expected, strict=True))


def test_a_push_that_drops_its_gradient_on_a_full_queue_fails_in_the_backlogs_one_schedule(
) -> None:
    result = a3c.run_learner_backlog(answers.DropWhenFullLearner)
    assert result.verdict == "race" and result.schedules_run == 1, result.message
    assert "gradients were never applied" in result.message


def test_the_lesson_states_the_backlogs_push_count() -> None:
    text = " ".join(Path("solutions/09_a3c.py").read_text().replace("#", " ").split())
    assert f"two actors push {a3c.LEARNER_BACKLOG_PUSHES} gradients" in text
    held_s = LEARNER_BACKLOG_YIELDS * LEARNER_BACKLOG_YIELD_S
    assert f"the clock runs {held_s:g} seconds meanwhile" in text
