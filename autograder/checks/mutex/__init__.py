"""Graded properties for lesson 02, "mutex": locks around an inference server's shared state.

Every exercise is a piece of pure-Python shared state (a metrics object, a prediction cache, a
slot rebalancer, a swappable model slot), so every check runs the student's answer under the
controlled scheduler (:func:`autograder.harness.explore`): one thread at a time, switching at
each instruction other threads can see, with a fixed seed and a fixed number of schedules.
The same answer gets the same verdict on every run, a race is found the same way every time,
and a deadlock is reported as a ``"deadlock"`` verdict naming the blocked threads, never a hang.

The checks are properties that must hold in every interleaving:

- :func:`check_metrics`: no update is lost and every snapshot is consistent (each request is
  counted in all counters or in none), and a snapshot is a copy that never changes afterwards;
- :func:`check_cache`: each key is computed exactly once under concurrent misses, every caller
  of a key gets the same object, and a build of one key does not hold up a ``get`` of another;
- :func:`check_move_slots`: moves in opposite directions never deadlock, a replica's slots
  are never read or changed while nobody holds its lock, no slot is lost or made up, and no
  replica ever has a negative number of free slots;
- :func:`check_model_slot`: a failed predict leaves the slot usable, every answer carries the
  version of the model that computed it, a new model is warmed before any request reaches it,
  and a predict made after ``swap`` returns uses the new model.

The notebook's demonstrations call the same ``run_*`` functions on the broken versions, so
what the student watches break is what the grader looks for. Plumbing the notebook uses (the
served model, live trials with real threads, the throughput measurement) lives here too.

This package is the lesson's face: the notebook and hidden tests use ``mutex.NAME`` and get the
names below, whichever module holds them: ``settings`` (seed, search bound, budget and the one
``explore`` call), ``lab`` (the served model, the notebook's live trials on real threads and
the throughput chart), ``metrics``, ``prediction_cache``, ``replicas`` and ``model_slot``
(exercises 1 to 4: their scenarios under ``explore``) and ``grading`` (the four graders).
"""

from __future__ import annotations

from autograder.checks.kit import run_threads
from autograder.checks.mutex.grading import (
    KEPT_KEYS,
    check_cache,
    check_metrics,
    check_model_slot,
    check_move_slots,
)
from autograder.checks.mutex.lab import (
    SnapshotTrials,
    Throughput,
    concurrent_mismatches,
    extra_builds,
    paired_ratio,
    plot_throughput,
    request_batch,
    serving_model,
    serving_throughput,
    torn_snapshots,
)
from autograder.checks.mutex.metrics import ERROR_LATENCY_S, OK_LATENCY_S, MetricsRun, run_metrics
from autograder.checks.mutex.model_slot import (
    BAD,
    EXAMPLE,
    NEW_VERSION,
    OLD_VERSION,
    FakeModel,
    SlotRun,
    run_model_slot,
)
from autograder.checks.mutex.prediction_cache import (
    FAILING_KEY,
    FAST_PREFIX,
    SLOW_KEY,
    STRIPES_COVERED,
    CacheRun,
    ComputeFailed,
    FailingRun,
    fast_key,
    run_cache,
    run_cache_failing,
)
from autograder.checks.mutex.replicas import MOVE, SLOTS_EACH, Replica, SlotsRun, run_move_slots
from autograder.checks.mutex.settings import (
    FEATURES,
    FIRST_USE_DEVIATIONS,
    FIRST_USE_SCHEDULES,
    SAMPLES,
    SCHEDULES,
    SEED,
    TIMEOUT_S,
)

__all__ = [
    # settings
    "FEATURES", "FIRST_USE_DEVIATIONS", "FIRST_USE_SCHEDULES", "SAMPLES", "SCHEDULES", "SEED",
    "TIMEOUT_S",
    # the notebook's served model, live trials and throughput chart
    "SnapshotTrials", "Throughput", "concurrent_mismatches", "extra_builds", "paired_ratio",
    "plot_throughput", "request_batch", "run_threads", "serving_model", "serving_throughput",
    "torn_snapshots",
    # the four exercises
    "ERROR_LATENCY_S", "OK_LATENCY_S", "MetricsRun", "run_metrics",
    "FAILING_KEY", "FAST_PREFIX", "KEPT_KEYS", "SLOW_KEY", "STRIPES_COVERED", "CacheRun",
    "ComputeFailed", "FailingRun", "fast_key", "run_cache", "run_cache_failing",
    "MOVE", "SLOTS_EACH", "Replica", "SlotsRun", "run_move_slots",
    "BAD", "EXAMPLE", "NEW_VERSION", "OLD_VERSION", "FakeModel", "SlotRun", "run_model_slot",
    # graders
    "check_cache", "check_metrics", "check_model_slot", "check_move_slots",
]
