"""Graded properties for lesson 03, "variables": tf.Variable updates and torn model weights.

Two races live inside TensorFlow ops, where the GIL is released and nothing in Python orders
them:

- ``v.assign(v + 1)`` from several threads: each thread reads ``v``, adds one and writes the
  sum back, so two threads that read the same value write the same sum and one update is lost.
  ``v.assign_add(1)`` is one op that reads and writes under the variable's lock; but the value
  it returns is read again later, so it is not the value that this call made.
- a model trained (``set_weights``, an optimizer step, ``fit``) on one thread while another
  serves it: the writer assigns the layers one after the other, the reader's forward pass
  reads them one after the other, and a pass that runs in between mixes two versions.

The torn-read detector is :func:`versioned_model`: a stack of ``Dense`` layers whose biases
hold a version number, built so that one forward pass returns every layer's version
(:func:`read_versions`). A pass that saw one version in every layer is whole; a pass that saw
several is torn. Training it with SGD (learning rate 1, gradients of minus one) raises every
layer's version by exactly one per step, so the same detector works for ``set_weights``,
optimizer steps and ``fit``.

Graded checks (each a property under load, fixed seeds and counts, no retries):

- :func:`check_step_counter`: steps recorded from many threads are never lost and every call
  gets its own step number (1, 2, 3, ... with no duplicate and no gap). ``explore`` runs the
  Python between the TF ops in every order it can find; ``stress`` runs real threads for
  races inside the ops.
- :func:`check_publisher`: while one thread publishes new weights, readers keep serving until
  it is done; no reader ever sees a mix of versions, a version never goes backwards, and a
  read that starts after ``publish`` returned sees that version or a newer one. ``stress``
  with the real model for races inside Keras, then ``explore`` for the Python around it (a
  version counter, a reference swapped too early).
- :func:`check_choice`: ``choose_publisher`` measures candidate publishers the grader built
  (their costs are simulated with sleeps, their races are real) and must report what really
  happened (reads and torn reads exactly, rates roughly, readers running until the writer was
  done and no longer), and its choice must follow the rule from its own measurements.

Plumbing for the notebook lives here too: the live trials of "See it break", the pictures,
and the memory sampler of "Measure it".

This package is the lesson's face: the notebook, lesson 07 and hidden tests use
``variables.NAME`` and get the names below, whichever module holds them: ``settings`` (seeds,
counts, budgets), ``model`` (the versioned model and its decoding), ``lab`` (the notebook's
live trials, pictures and memory sampler), ``counter``, ``publisher`` and ``choice`` (exercises
1 to 3: their trials and runs) and ``grading`` (the three graders).
"""

from __future__ import annotations

from autograder.checks.variables.choice import ChoiceRun, practice_candidates, run_choice
from autograder.checks.variables.counter import (
    CounterTrial,
    run_step_counter_explore,
    run_step_counter_stress,
)
from autograder.checks.variables.grading import check_choice, check_publisher, check_step_counter
from autograder.checks.variables.lab import (
    HOLD_S,
    CounterRun,
    Read,
    ServeRun,
    TicketRun,
    blocks_the_other,
    count_increments,
    duplicate_tickets,
    extra_weight_bytes,
    plot_reads,
    serve_while_training,
)
from autograder.checks.variables.model import (
    compile_for_versions,
    is_torn,
    parameter_bytes,
    probe,
    read_versions,
    version_step_gradients,
    version_weights,
    versioned_model,
)
from autograder.checks.variables.publisher import (
    PublishTrial,
    run_publisher_explore,
    run_publisher_stress,
)
from autograder.checks.variables.settings import (
    CHOICE_INTERVAL_S,
    CHOICE_MIN_UPDATES_PER_S,
    CHOICE_READERS,
    CHOICE_UPDATES,
    COUNTER_EXPLORE_STEPS,
    COUNTER_EXPLORE_THREADS,
    COUNTER_FIRST_USE_DEVIATIONS,
    COUNTER_FIRST_USE_SCHEDULES,
    COUNTER_SCHEDULES,
    COUNTER_STRESS_STEPS,
    COUNTER_STRESS_THREADS,
    COUNTER_TRIALS,
    EXPLORE_LAYERS,
    EXPLORE_STRATEGY,
    FIRST_VERSION,
    LAYERS,
    ONE_THREAD_IN_A_ROW,
    PUBLISHER_DEVIATIONS,
    PUBLISHER_EXPLORE_READERS,
    PUBLISHER_EXPLORE_UPDATES,
    PUBLISHER_READERS,
    PUBLISHER_READERS_DEVIATIONS,
    PUBLISHER_SAMPLES,
    PUBLISHER_SCHEDULES,
    PUBLISHER_TRIALS,
    PUBLISHER_UPDATES,
    READ_GAP_S,
    SEED,
    TIMEOUT_S,
)

__all__ = [
    # settings
    "CHOICE_INTERVAL_S", "CHOICE_MIN_UPDATES_PER_S", "CHOICE_READERS", "CHOICE_UPDATES",
    "COUNTER_EXPLORE_STEPS", "COUNTER_EXPLORE_THREADS", "COUNTER_FIRST_USE_DEVIATIONS",
    "COUNTER_FIRST_USE_SCHEDULES", "COUNTER_SCHEDULES",
    "COUNTER_STRESS_STEPS", "COUNTER_STRESS_THREADS", "COUNTER_TRIALS", "EXPLORE_LAYERS",
    "EXPLORE_STRATEGY", "FIRST_VERSION", "LAYERS", "ONE_THREAD_IN_A_ROW",
    "PUBLISHER_DEVIATIONS", "PUBLISHER_EXPLORE_READERS", "PUBLISHER_READERS_DEVIATIONS",
    "PUBLISHER_EXPLORE_UPDATES", "PUBLISHER_READERS",
    "PUBLISHER_SAMPLES", "PUBLISHER_SCHEDULES", "PUBLISHER_TRIALS", "PUBLISHER_UPDATES",
    "READ_GAP_S", "SEED", "TIMEOUT_S",
    # the versioned model
    "compile_for_versions", "is_torn", "parameter_bytes", "probe", "read_versions",
    "version_step_gradients", "version_weights", "versioned_model",
    # the notebook's live trials and pictures
    "HOLD_S", "CounterRun", "Read", "ServeRun", "TicketRun", "blocks_the_other",
    "count_increments", "duplicate_tickets", "extra_weight_bytes", "plot_reads",
    "serve_while_training",
    # the three exercises
    "CounterTrial", "run_step_counter_explore", "run_step_counter_stress",
    "PublishTrial", "run_publisher_explore", "run_publisher_stress",
    "ChoiceRun", "practice_candidates", "run_choice",
    # graders
    "check_choice", "check_publisher", "check_step_counter",
]
