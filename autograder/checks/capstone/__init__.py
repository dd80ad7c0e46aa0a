"""Graded properties for lesson 07, the capstone: one shared Keras model behind a service.

Students write ``InferenceService(model, example)`` with ``predict(x)`` (one request: one row
shaped like ``example``; returns the model's output row), ``update_weights(weights)`` (a full
list in ``set_weights`` order; once it returns, every later request uses it), ``stats()`` (a
dict with ``requests``, ``batches`` and ``errors``) and ``close()``. Four graded parts, each a
property under load with fixed seeds and counts and no retries:

- :func:`check_cold_start` (``stress``): a model that has never been called; 16 clients
  released together send two requests each. No client may raise, every answer must equal the
  model's output for that client's own row (a twin model built on one thread, ``np.allclose``)
  and the model must hold exactly its four weights (a racy build adds duplicates silently).
- :func:`check_weight_updates` (``stress``): a :func:`autograder.checks.variables.versioned_model`
  (every output row encodes the version of each layer) is served to 6 clients while a writer
  calls ``update_weights`` with versions 2, 3, ...; no answer may mix versions, a client never
  sees the version go backwards, a request that starts after ``update_weights`` returned sees
  that version or a newer one, and the last requests see the last version. Then a trainer's
  update before any request (:func:`run_update_first`): a new service on a never-called
  model gets ``update_weights`` first, and the requests after it must get the new weights
  (a service that leaves building the model to its first request has no weights to set:
  Keras raises, every time). Then an update while a request's model call is held halfway
  (:func:`run_update_mid_call`: the versioned model's layers read their weights in order and
  a gate holds the call after the first half): a service that writes the weights that call
  reads answers a torn row every time, not only when real threads happen to line up. Last,
  a second update while the first is held inside the model's ``set_weights``
  (:func:`run_update_mid_set`): the next request must get the second, so an update read aside
  and cleared in two steps is lost every time.
- :func:`check_accounting` (real threads, bounded waits): one client in sequence, then 16 at
  once with a few malformed requests among them, then ``close()`` while 12 clients are sending
  to a slow model, called while requests wait in the service's queue by construction (the
  batch that could take them is held inside the model until ``close()`` is under way), so
  the verdict does not depend on the machine's load. Every accepted request is answered
  exactly with its own row, malformed ones raise ``ValueError`` in their own caller only, the
  statistics are exact, ``close()`` answers what was queued, joins the service's threads and
  makes later calls raise ``RuntimeError``. A client or ``close()`` that does not return in
  time, or a thread left running, fails with the names and stacks of the stuck threads. Then
  the bookkeeping explored (:func:`explore_service`, ``explore`` on a :class:`StubModel`, no
  TensorFlow): two clients and the batcher, then a ``predict`` racing ``close()``, every
  schedule with one preemption: a request lost in a window of a few bytecodes (a batch sliced
  outside the lock, a closed-check and an append in two lock regions) is a deadlock there,
  every time. Not graded: a count kept with a plain ``+=`` on the client threads (real
  threads under the GIL practically never lose one, and ``explore`` needed 3 to over 200
  schedules to find it, too many for the budget).
- :func:`check_throughput` (real threads): memory first: the bytes of Keras variables the
  answer creates on top of the model's own (found through ``gc``) while 16 clients are
  connected must stay within :data:`MAX_EXTRA_COPIES` copies of the model (one copy per
  client, :class:`PerThreadService`, holds 16). Then requests per second of the answer
  against :class:`GlobalLockService` (one lock around every call), measured alternately in
  the same run, 16 clients, on :func:`busy_model` (a fixed per-call cost that holds the GIL,
  so that the ratio measures batching, not the machine's load); the answer's median must
  reach :data:`MIN_SPEEDUP` times the lock's, and its timed runs must serve at least
  :data:`MIN_REQUESTS_PER_CALL` requests per model call (the slow layer counts the calls: one
  call per request fails every run, whatever the machine's load). The two serve separate
  models, and every request the answer serves must get its row's output, computed by the
  model it was given (its slow layer records the rows it computes): no answer can slow the
  baseline, skip the slow layer or answer without the model.

The notebook's three designs (:class:`GlobalLockService`, :class:`PerThreadService`, the
student's batching service) and their measurements (:func:`benchmark`, :func:`plot_designs`)
live here too.

This package is the lesson's face: notebooks and hidden tests use ``capstone.NAME`` and get
the names below, whichever module holds them: ``settings`` (seeds, counts, budgets),
``models`` (the served model, requests, reference answers), ``services`` (the reference
designs), ``clients`` (client threads and their stacks), ``cold_start``, ``updates`` (with
``midcall``),
``accounting`` (with ``bookkeeping``, its explored part) and ``throughput`` (parts 1 to 4),
``grading`` (the four graders) and ``lab`` (the notebook's demonstrations and pictures).
"""

from __future__ import annotations

from autograder.checks.capstone.accounting import CloseRun, accounting_problems
from autograder.checks.capstone.bookkeeping import StubModel, explore_service
from autograder.checks.capstone.clients import (
    Call,
    ClientRun,
    describe_threads,
    run_clients,
    wait_for_progress,
)
from autograder.checks.capstone.cold_start import ColdTrial, run_cold_start
from autograder.checks.capstone.grading import (
    check_accounting,
    check_cold_start,
    check_throughput,
    check_weight_updates,
)
from autograder.checks.capstone.lab import (
    ColdStarts,
    cold_start_trials,
    compare_designs,
    plot_designs,
    table,
)
from autograder.checks.capstone.midcall import run_update_mid_call, run_update_mid_set
from autograder.checks.capstone.models import (
    reference_outputs,
    requests_for,
    same_answer,
    serving_model,
    slow_model,
    weight_bytes,
)
from autograder.checks.capstone.services import DirectService, GlobalLockService, PerThreadService
from autograder.checks.capstone.settings import (
    ACCOUNT_BAD_CLIENTS,
    ACCOUNT_CLIENTS,
    ACCOUNT_REQUESTS,
    ACCOUNT_SEQUENTIAL,
    CLIENTS,
    CLOSE_CLIENTS,
    CLOSE_REQUESTS,
    COLD_REQUESTS,
    COLD_TRIALS,
    EXPLORE_SAMPLES,
    EXPLORE_SCHEDULES,
    EXPLORE_SEED,
    EXPLORE_TIMEOUT_S,
    FEATURES,
    FIRST_VERSION,
    HANDOVER_S,
    JOIN_GRACE_S,
    MAX_EXTRA_COPIES,
    MIN_REQUESTS_PER_CALL,
    MIN_SPEEDUP,
    SEED,
    SLOW_CALL_S,
    SMOKE_S,
    STALL_S,
    STUCK_S,
    THROUGHPUT_CALL_S,
    THROUGHPUT_REQUESTS,
    THROUGHPUT_ROUNDS,
    TIMEOUT_S,
    UPDATE_CLIENTS,
    UPDATE_FIRST_REQUESTS,
    UPDATE_GAP_S,
    UPDATE_TRIALS,
    UPDATES,
)
from autograder.checks.capstone.throughput import (
    Measurement,
    Speedup,
    benchmark,
    busy_model,
    measure_speedup,
)
from autograder.checks.capstone.updates import UpdateTrial, run_update_first, run_weight_updates
from autograder.checks.kit import keras_variable_bytes

__all__ = [
    # settings
    "ACCOUNT_BAD_CLIENTS", "ACCOUNT_CLIENTS", "ACCOUNT_REQUESTS", "ACCOUNT_SEQUENTIAL",
    "CLIENTS", "CLOSE_CLIENTS", "CLOSE_REQUESTS", "COLD_REQUESTS", "COLD_TRIALS",
    "EXPLORE_SAMPLES", "EXPLORE_SCHEDULES", "EXPLORE_SEED", "EXPLORE_TIMEOUT_S", "FEATURES",
    "FIRST_VERSION", "HANDOVER_S", "JOIN_GRACE_S", "MAX_EXTRA_COPIES", "MIN_REQUESTS_PER_CALL",
    "MIN_SPEEDUP", "SEED",
    "SLOW_CALL_S", "SMOKE_S", "STALL_S", "STUCK_S",
    "THROUGHPUT_CALL_S", "THROUGHPUT_REQUESTS", "THROUGHPUT_ROUNDS", "TIMEOUT_S",
    "UPDATE_CLIENTS", "UPDATE_FIRST_REQUESTS", "UPDATE_GAP_S", "UPDATE_TRIALS", "UPDATES",
    # models and memory
    "keras_variable_bytes", "reference_outputs", "requests_for", "same_answer",
    "serving_model", "slow_model", "weight_bytes",
    # services
    "DirectService", "GlobalLockService", "PerThreadService",
    # clients
    "Call", "ClientRun", "describe_threads", "run_clients", "wait_for_progress",
    # the four parts
    "ColdTrial", "run_cold_start", "UpdateTrial", "run_weight_updates", "run_update_first",
    "run_update_mid_call", "run_update_mid_set",
    "CloseRun", "accounting_problems", "StubModel", "explore_service",
    "Measurement", "Speedup", "benchmark", "busy_model", "measure_speedup",
    # graders
    "check_accounting", "check_cold_start", "check_throughput", "check_weight_updates",
    # the notebook's demonstrations and pictures
    "ColdStarts", "cold_start_trials", "compare_designs", "plot_designs", "table",
]
