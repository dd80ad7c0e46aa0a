"""Graded properties for lesson 01, "warmup": concurrent first calls into a Keras model.

Every check first runs the student's answer once on one thread (a wrong answer that is wrong
even without threads gets a plain message), then builds fresh, small models per trial and runs
the answer from several threads released together by :func:`autograder.harness.stress`
(switch interval 1e-6). After each trial it asserts that no thread raised (the harness
reports that), that every output equals a sequential reference (``np.allclose``; the models
use seeded initializers, so a twin built on one thread has the same weights), that the model
holds exactly its expected number of weights (a racy build adds duplicates silently), and the
exercise's own property: nothing is traced while serving (:func:`check_entry_point`, and
:func:`check_both_entry_points` with half the threads on ``predict``), one
thread traces (:func:`check_shared_predictor`), the factory runs once and every thread gets the
same built model (:func:`check_lazy_model`).

Seeds and trial counts are fixed and nothing is retried. The notebook's demonstrations use the
same models and the same runner (:func:`race_trials`), so what the student watches break is
what the grader looks for.

This package is the lesson's face: the notebook, lesson 07 and hidden tests use
``warmup.NAME`` and get the names below, whichever module holds them: ``settings`` (model
sizes, seeds, trial counts, budgets), ``models`` (the seeded models, their batches, reference
outputs and the serving calls), ``traces`` (the predict function's trace log), ``trial`` (one
threaded trial's state and the problems every exercise checks), ``lab`` (the notebook's
demonstrations), ``serving`` (exercises 1 and 4), ``predictor`` (exercise 2), ``lazy``
(exercise 3) and ``grading`` (the four graders).
"""

from __future__ import annotations

from autograder.checks.child import Crashed
from autograder.checks.warmup.grading import (
    check_both_entry_points,
    check_entry_point,
    check_lazy_model,
    check_shared_predictor,
)
from autograder.checks.warmup.lab import RaceStats, TrialOutcome, race_trials
from autograder.checks.warmup.lazy import (
    LazyRun,
    run_lazy_model,
    run_lazy_model_explore,
)
from autograder.checks.warmup.models import (
    BuildDelayDense,
    TinyNet,
    batches,
    built_sequential,
    call_model,
    make_predict_function_only,
    predict,
    predict_on_batch,
    tiny_sequential,
)
from autograder.checks.warmup.predictor import (
    ColdModel,
    run_shared_predictor,
    run_shared_predictor_explore,
)
from autograder.checks.warmup.serving import (
    BOTH_ENTRY_POINTS,
    run_both_entry_points,
    run_entry_point,
)
from autograder.checks.warmup.settings import (
    EXPECTED_WEIGHTS,
    HIDDEN_UNITS,
    LAZY_DEVIATIONS,
    LAZY_EXPLORE_THREADS,
    LAZY_SAMPLES,
    LAZY_SCHEDULES,
    OUTPUT_UNITS,
    SEED,
    SHARED_DEVIATIONS,
    SHARED_EXPLORE_THREADS,
    SHARED_SAMPLES,
    SHARED_SCHEDULES,
    THREADS,
    TRIALS_BOTH_ENTRY_POINTS,
    TRIALS_ENTRY_POINT,
    TRIALS_LAZY_MODEL,
    TRIALS_SHARED_PREDICTOR,
)
from autograder.checks.warmup.traces import TraceLog, first_call_traces
from autograder.checks.warmup.trial import Call, Trial

__all__ = [
    # settings
    "EXPECTED_WEIGHTS", "HIDDEN_UNITS", "LAZY_DEVIATIONS", "LAZY_EXPLORE_THREADS",
    "LAZY_SAMPLES", "LAZY_SCHEDULES", "OUTPUT_UNITS", "SEED", "SHARED_DEVIATIONS",
    "SHARED_EXPLORE_THREADS", "SHARED_SAMPLES", "SHARED_SCHEDULES", "THREADS",
    "TRIALS_BOTH_ENTRY_POINTS", "TRIALS_ENTRY_POINT", "TRIALS_LAZY_MODEL",
    "TRIALS_SHARED_PREDICTOR",
    # the seeded models, their batches and the calls that serve them
    "BuildDelayDense", "TinyNet", "batches", "built_sequential", "call_model",
    "make_predict_function_only", "predict", "predict_on_batch", "tiny_sequential",
    # traces and one trial
    "TraceLog", "first_call_traces", "Call", "Trial",
    # the notebook's demonstrations
    "Crashed", "RaceStats", "TrialOutcome", "race_trials",
    # the four exercises
    "run_entry_point", "BOTH_ENTRY_POINTS", "run_both_entry_points", "run_shared_predictor",
    "run_shared_predictor_explore", "ColdModel",
    "LazyRun", "run_lazy_model", "run_lazy_model_explore",
    # graders
    "check_both_entry_points", "check_entry_point", "check_lazy_model", "check_shared_predictor",
]
