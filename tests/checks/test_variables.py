"""Lesson 03 (variables) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.variables``)
``RUNS`` times in this process, as that many grading runs would.

How each check decides, and why its counts are enough (rates measured on the shared, loaded
2-core machine, load average 8-14):

- ``StepCounter``: ``stress`` (3 trials of 4 real threads x 200 steps), then ``explore``
  (two threads taking two steps each, ``tf.function`` bodies run eagerly and interleaved op
  by op): every schedule with at most one preemption, then seeded samples up to 80. In single
  ``stress`` trials the wrong answers failed 32-40 of 40 (50 steps per thread); ``explore``
  finds every one of them inside its bound, whatever the seed, so every grading run fails
  them even when ``stress`` misses, as it did for an ``assign_add`` and a separate read-back
  in one ``tf.function`` (issue #18, class 4: 5 of 7 grading runs).
- ``WeightPublisher``: ``stress`` (6 trials: one writer publishes up to 10 versions, stopping
  early after 3 once it has been busy 0.3 s, while 2 readers read until it is done), then
  ``explore`` (fixed seed, every schedule within ``PUBLISHER_DEVIATIONS`` switches, then
  ``PUBLISHER_SAMPLES`` samples; one publish, and a reader that reads during it and after
  it, on a 2-layer model). Single ``stress`` trials failed ``UnlockedPublisher``,
  ``WriterLockOnlyPublisher`` and ``LockPerCallPublisher`` 40 of 40 times;
  ``LockedReferencePublisher`` (the reader locks only to fetch the model; its forward pass
  must start in the short gap before the writer's next ``set_weights``) 32-37 of 40, so a
  run of 6 trials misses it with probability about 0.2^6 = 6e-5.
- ``choose_publisher``: one call on the grader's four candidates, whose costs are simulated
  with sleeps and whose races are real. The reported reads and torn reads must equal what the
  candidates recorded, the rates must be within 0.05x-5x of what they really did (thread
  start-up under load is the slack), the readers must overlap the writer until it is done,
  and the choice must follow the rule from the student's own table. The candidates make each
  wrong choice differ from the rule's every time: the slow publisher can only be slower than
  its nominal 10.3 versions per second (minimum 12; the others publish about 50 per second),
  and the torn one tears dozens of reads.

Answers that build a Keras model per publish or per thread take 5-20 s per grading run; they
run ``SLOW_RUNS`` time(s), beyond the required sets (3+ wrong and 2+ correct answers per
exercise, each run ``RUNS`` times). ``SwapBeforeSetPublisher`` (a new model served before
its weights are set; a reader tracing the new model hides the race from real threads) and
``VersionFirstCopiesPublisher`` (a version number stored before the weights: two adjacent
attribute stores that real threads on CPython 3.11 never split) are found by ``explore``
inside its bound (every schedule with at most ``PUBLISHER_DEVIATIONS`` = 2 departures from
round-robin order; the model's ``set_weights`` is one step per layer), whatever the seed.
``HandshakePublisher`` (a readers-writer handshake without a lock, issue #18 class 1) needs
two: the reader goes first and the grader's own loops are glue with no decision points, so
``explore`` finds it within 100 schedules with each seed tested.
"""

from __future__ import annotations

import re
import threading
import time
import warnings
from typing import Any

import keras
import pytest
import tensorflow as tf

from autograder.checks import variables
from tests.checks import answers_variables as answers
from tests.checks.grading_runs import (
    Exercise,
    fails_every_run,
    passes_every_run,
    solution_namespace,
    unfilled_answer_test,
    validity_tests,
)

SLOW_RUNS = 1
SOLUTION_RUNS = 3


@pytest.fixture(autouse=True)
def _quiet_keras() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


_SOLVED = solution_namespace("03_variables", {"threading": threading, "time": time, "tf": tf,
                                              "keras": keras, "variables": variables})

EXERCISES = {
    "step_counter": Exercise(variables.check_step_counter, "StepCounter", _SOLVED["StepCounter"],
                             answers.WRONG_COUNTERS, answers.CORRECT_COUNTERS),
    "publisher": Exercise(variables.check_publisher, "WeightPublisher",
                          _SOLVED["WeightPublisher"], answers.WRONG_PUBLISHERS,
                          answers.CORRECT_PUBLISHERS),
    "choose": Exercise(variables.check_choice, "choose_publisher", _SOLVED["choose_publisher"],
                       answers.WRONG_CHOICES, answers.CORRECT_CHOICES),
}


(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(EXERCISES, solution_runs=SOLUTION_RUNS)


@pytest.mark.parametrize("answer", answers.SLOW_WRONG_PUBLISHERS, ids=lambda a: a.__name__)
def test_publisher_racing_in_its_python_fails_every_run_through_explore(answer: Any) -> None:
    for message in fails_every_run(variables.check_publisher, "WeightPublisher", answer,
                                   SLOW_RUNS):
        assert "result = variables.run_publisher_explore(WeightPublisher)" in message, \
            "expected explore to find it"


@pytest.mark.parametrize("seed", range(3))
def test_reader_slipping_into_a_lockless_handshake_is_found_within_two_preemptions(
        seed: int) -> None:
    result = variables.run_publisher_explore(answers.HandshakePublisher, seed=seed)
    assert result.verdict == "race", result.message
    assert "torn read" in result.message
    assert result.schedules_run <= 100, "found only after the bounded search"


@pytest.mark.parametrize("answer", answers.SLOW_CORRECT_PUBLISHERS, ids=lambda a: a.__name__)
def test_publisher_that_builds_models_passes_every_run(answer: Any) -> None:
    passes_every_run(variables.check_publisher, "WeightPublisher", answer, SLOW_RUNS)


def test_readers_writer_lock_released_by_the_last_reader_on_another_thread_passes() -> None:
    """The textbook readers-writer lock releases the writer's lock on whichever reader thread
    leaves last; both explore runs (one reader, then two) allow it, as ``threading.Lock``
    does."""
    passes_every_run(variables.check_publisher, "WeightPublisher",
                     answers.FirstReaderLocksPublisher, 3)


@pytest.mark.parametrize("answer", answers.SLOW_CORRECT_COUNTERS, ids=lambda a: a.__name__)
def test_slower_correct_counter_passes_every_run(answer: Any) -> None:
    passes_every_run(variables.check_step_counter, "StepCounter", answer, SLOW_RUNS)


@pytest.mark.parametrize("seed", range(6))
def test_add_then_read_in_one_tf_function_is_found_by_explore_whatever_the_seed(seed: int
                                                                               ) -> None:
    result = variables.run_step_counter_explore(answers.FunctionAddThenReadCounter, seed=seed)
    assert result.verdict == "race", result.message
    assert "same number" in result.message


def test_assign_without_add_loses_steps_under_real_threads() -> None:
    result = variables.run_step_counter_stress(answers.AssignReadBackCounter)
    assert result.verdict == "race", result.message
    assert "lost" in result.message or "same number" in result.message


def test_trusting_the_value_of_assign_add_hands_out_a_number_twice() -> None:
    result = variables.run_step_counter_stress(answers.AssignAddValueCounter)
    assert result.verdict == "race"
    assert "same number" in result.message


def test_torn_read_message_names_the_versions_each_layer_had() -> None:
    result = variables.run_publisher_stress(answers.UnlockedPublisher)
    assert result.verdict == "race"
    assert re.search(r"layers of versions \[\d+(, \d+){7}\]", result.message), result.message


test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error = unfilled_answer_test(
    EXERCISES)


def test_versioned_model_reports_every_layers_version_after_each_way_of_training() -> None:
    model = variables.compile_for_versions(variables.versioned_model())
    batch = variables.probe(model)
    assert variables.read_versions(model(batch)).tolist() == [0] * variables.LAYERS
    model.set_weights(variables.version_weights(4, model))
    assert variables.read_versions(model(batch)).tolist() == [4] * variables.LAYERS
    model.optimizer.apply(variables.version_step_gradients(model), model.trainable_variables)
    assert variables.read_versions(model(batch)).tolist() == [5] * variables.LAYERS
    model.fit(batch, batch, epochs=2, verbose=0)
    assert variables.read_versions(model.predict_on_batch(batch)).tolist() == [7] * variables.LAYERS
    mixed = model.get_weights()
    mixed[1] = variables.version_weights(9, model)[1]
    model.set_weights(mixed)
    assert variables.read_versions(model(batch)).tolist() == [9] + [7] * (variables.LAYERS - 1)
    assert variables.is_torn(model(batch))


def test_a_lock_made_on_first_use_passes_the_graded_search_and_fails_the_first_use_one():
    assert variables.run_step_counter_explore(answers.LazyLockCounter).verdict == "pass"
    result = variables.run_step_counter_explore(answers.LazyLockCounter, first_use=True)
    assert result.verdict == "race", result.message
    assert result.schedules_run <= variables.COUNTER_FIRST_USE_SCHEDULES
