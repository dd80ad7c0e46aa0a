"""The four graders hidden tests call: a smoke run on one thread, then the part's property."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.capstone.accounting import accounting_problems
from autograder.checks.capstone.bookkeeping import explore_service
from autograder.checks.capstone.clients import _close_quietly, _grader_thread
from autograder.checks.capstone.cold_start import ColdTrial, run_cold_start
from autograder.checks.capstone.midcall import run_update_mid_call, run_update_mid_set
from autograder.checks.capstone.models import (
    _answer,
    _row,
    reference_outputs,
    requests_for,
    same_answer,
    serving_model,
)
from autograder.checks.capstone.settings import (
    CLIENTS,
    MAX_EXTRA_COPIES,
    MIN_REQUESTS_PER_CALL,
    MIN_SPEEDUP,
    SEED,
    SMOKE_S,
)
from autograder.checks.capstone.throughput import measure_speedup
from autograder.checks.capstone.updates import run_update_first, run_weight_updates
from autograder.checks.kit import (
    call_text,
    describe_error,
    describe_threads,
    report,
    require,
    within,
)


def _smoke(service_class: Callable[..., Any], exercise: str) -> dict[str, Any]:
    """One service, one request, on one thread, bounded; a wrong answer gets a plain message.

    Returns:
        The judge's observation: the answer and the model's output for its row.
    """
    model = serving_model(SEED + 1)
    rows = requests_for(SEED + 1, 1, 2)[0]
    expected = reference_outputs(SEED + 1, rows)
    holder: dict[str, Any] = {}

    def once() -> None:
        holder["service"] = service = service_class(model, rows[0].copy())
        holder["output"] = _answer(service.predict(rows[1]))

    outcome = within(once, SMOKE_S, name="grader-smoke", track=_grader_thread)
    finished, error, thread = outcome.finished, outcome.error, outcome.thread
    if not finished:
        _close_quietly(holder.get("service"), 0.5)
        raise AssertionError(
            f"{exercise}: used on one thread, creating the service and making one request "
            f"did not return within {SMOKE_S:g} s. Where it is stuck:\n"
            f"{describe_threads([thread])}")
    if error is not None:
        _close_quietly(holder.get("service"))
        raise AssertionError(
            f"{exercise}: used on one thread, InferenceService(model, example) and one "
            f"predict(x) raised {describe_error(error)} (before any client threads were "
            "started). Make it work on one thread first.")
    _close_quietly(holder.get("service"))
    if not same_answer(holder["output"], expected[1]):
        raise AssertionError(
            f"{exercise}: used on one thread, predict(x) returned {holder['output']!r}, "
            f"expected the model's output row for x, {np.round(expected[1], 4).tolist()}")
    return {"output": _row(holder["output"]), "expected": _row(expected[1])}


def check_cold_start(service_class: Callable[..., Any], **kwargs: Any) -> None:
    """Grade part 1: a cold model served to 16 clients at once (see :func:`run_cold_start`).

    Reports (for the judge) the one-thread answer, and per trial the model's weights and
    every answer with the model's output for its row.
    """
    smoke = _smoke(service_class, "InferenceService")
    seen: list[ColdTrial] = []
    trials: list = []
    result = run_cold_start(service_class, record=seen, observed=trials, **kwargs)
    require(result, exercise="InferenceService, cold start",
            again=call_text("capstone.run_cold_start", "InferenceService", **kwargs),
            raised=seen[-1].errors if seen else (), by="the clients")
    report({"smoke": smoke, "trials": trials, "trials_run": result.schedules_run})


def check_weight_updates(service_class: Callable[..., Any], **kwargs: Any) -> None:
    """Grade part 2: weights updated while serving (see :func:`run_weight_updates`).

    Then a trainer's update before any request (see :func:`run_update_first`), one while a
    request's model call is held halfway (see :func:`run_update_mid_call`), and one while
    another is being written into the model (see :func:`run_update_mid_set`).

    Reports (for the judge) the one-thread answer; per trial when each update returned and
    the versions of every answer each client got, with when it was sent; and the answers
    after the update that came first, with the new weights' and the first weights' outputs;
    the answers of the request held mid-call and of the one after it; and the answer after
    an update that came while another was written.
    """
    smoke = _smoke(service_class, "InferenceService")
    trials: list = []
    result = run_weight_updates(service_class, observed=trials, **kwargs)
    require(result, exercise="InferenceService, weight updates",
            again=call_text("capstone.run_weight_updates", "InferenceService", **kwargs))
    try:
        first = run_update_first(service_class)
        mid_call = run_update_mid_call(service_class)
        mid_set = run_update_mid_set(service_class)
    except AssertionError as failure:
        raise AssertionError(f"InferenceService, weight updates: {failure}") from None
    report({"smoke": smoke, "trials": trials, "trials_run": result.schedules_run,
            "update_first": first, "mid_call": mid_call, "mid_set": mid_set})


def check_accounting(service_class: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade part 3: no request lost or answered twice, exact stats, a clean close().

    Real threads first (see :func:`accounting_problems`), then the bookkeeping explored on a
    stub model (see :func:`~.bookkeeping.explore_service`).

    Reports (for the judge) the one-thread answer; per phase, how every request ended, its
    answer and its row's model output, and ``stats()``; and each explored scenario's
    schedules and counts (None when the service was not explored).
    """
    exercise = "InferenceService, accounting and close"
    smoke = _smoke(service_class, "InferenceService")
    phases: dict = {}
    try:
        problems = accounting_problems(service_class, seed=seed, observed=phases)
    except AssertionError as failure:  # stats() did not return plain counts
        problems = [str(failure)]
    if problems:
        raise AssertionError(f"{exercise}: " + "; ".join(problems))
    explored: dict = {}
    result = explore_service(service_class, observed=explored)
    if result is not None:
        scenario = list(explored)[-1]  # the last one run: the failing one, if one failed
        require(result, exercise=exercise,
                hint=f"{_EXPLORED_WHO[scenario]} {_EXPLORED_HINTS.get(result.verdict, '')}",
                again=call_text("capstone.explore_service", "InferenceService"))
    report({"smoke": smoke, **phases, "explored": explored if result is not None else None})


def check_throughput(service_class: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade part 4: at least :data:`MIN_SPEEDUP` x the global lock's rate, at least
    :data:`MIN_REQUESTS_PER_CALL` requests per model call, little memory.

    Reports (for the judge) the one-thread answer, the extra and the model's own weight
    bytes, and every timed run of the lock and of the answer (requests and seconds; for the
    answer also every answer, its row's model output, whether the model computed it, and
    how many calls the model made).
    """
    smoke = _smoke(service_class, "InferenceService")
    runs: dict = {}
    try:
        speedup = measure_speedup(service_class, seed=seed, stop_if_copies=MAX_EXTRA_COPIES,
                                  observed=runs)
    except AssertionError as failure:
        raise AssertionError(f"InferenceService, throughput and memory: {failure}") from None
    problems = []
    if speedup.lock_rates and not speedup.ratio >= MIN_SPEEDUP:
        problems.append(
            f"with {CLIENTS} clients your service served {np.median(speedup.answer_rates):.0f} "
            f"requests/s and one global lock {np.median(speedup.lock_rates):.0f} requests/s in "
            f"the same run: {speedup.ratio:.2f}x, expected at least {MIN_SPEEDUP:g}x. Serve "
            "the requests that wait together, in one model call (micro-batching)")
    timed = runs.get("answer_runs", [])[1:]  # the first is the unmeasured warm-up run
    requests, calls = sum(r["requests"] for r in timed), sum(r["calls"] for r in timed)
    if speedup.lock_rates and not requests >= MIN_REQUESTS_PER_CALL * calls:
        problems.append(
            f"in the timed runs your service made {calls} model calls for {requests} requests "
            f"({requests / max(calls, 1):.2f} requests per call), expected at least "
            f"{MIN_REQUESTS_PER_CALL:g}: one call per request serves no more than one lock "
            "around every call does. Serve the requests that wait together, in one model call "
            "(micro-batching)")
    limit = MAX_EXTRA_COPIES * speedup.copy_bytes
    if speedup.extra_bytes > limit:  # measured first: the rates were then not measured
        problems.append(
            f"your service created {speedup.extra_bytes} bytes of Keras weights on top of the "
            f"model's own {speedup.copy_bytes}; expected at most {MAX_EXTRA_COPIES} extra "
            f"copies ({limit} bytes). One copy per client would be {CLIENTS} copies: share "
            "the one model")
    if problems:
        raise AssertionError("InferenceService, throughput and memory: " + "; ".join(problems))
    report({"smoke": smoke, "extra_bytes": int(speedup.extra_bytes),
            "copy_bytes": int(speedup.copy_bytes), **runs})


#: Who the explored threads are in each scenario (see :mod:`.bookkeeping`).
_EXPLORED_WHO = {
    "clients": (
        "on a stub model, worker 0 made your service and sent requests 0 and 2, one after the "
        "other; worker 1 sent request 1 while the model computed request 0; then worker 0 "
        "called close(). The other threads are your service's."),
    "closing": (
        "on a stub model, worker 0 made your service and sent request 0 while worker 1 "
        "called close(). The other threads are your service's."),
}
#: What a failing explored schedule means, by verdict.
_EXPLORED_HINTS = {
    "deadlock": (
        "In this schedule every thread ended up waiting: a request your service accepted was "
        "never answered, so its caller waits forever. A request is lost when it is appended "
        "between the batcher's read of the queue and its write-back (take the batch and "
        "replace the queue under the same lock), or when predict() checks that the service "
        "is open and appends in two separate lock regions, so that close() and the batcher's "
        "exit fit in between (check and append under one lock)"),
    "race": (
        "In this schedule a request did not get its own answer, or was refused while the "
        "service was open: expected every request to get its own answer whatever the order "
        "of the threads, and RuntimeError only once close() was called"),
    "error": (
        "In this schedule a thread raised: expected predict() to return each request's "
        "answer (or raise RuntimeError once close() was called) and close() to return, "
        "whatever the order of the threads"),
    "timeout": (
        "The schedules did not finish in time: a thread that waits with a long timeout, or "
        "polls, keeps each schedule from ending"),
}
