"""Part 4, throughput and memory: requests/s against one global lock, extra weight bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.checks.cache import memo
from autograder.checks.capstone.clients import (
    ClientRun,
    _close_quietly,
    _stuck_message,
    run_clients,
)
from autograder.checks.capstone.models import (
    _row,
    reference_outputs,
    requests_for,
    same_answer,
    serving_model,
    slow_model,
    weight_bytes,
)
from autograder.checks.capstone.services import GlobalLockService
from autograder.checks.capstone.settings import (
    CLIENTS,
    FEATURES,
    SEED,
    THROUGHPUT_CALL_S,
    THROUGHPUT_REQUESTS,
    THROUGHPUT_ROUNDS,
    TIMEOUT_S,
)
from autograder.checks.kit import describe_error, keras_variable_bytes


@dataclass
class Measurement:
    """One design serving ``clients`` clients: rate, latency percentiles, extra memory."""

    design: str
    clients: int
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    extra_bytes: int | None = None

    @property
    def rate(self) -> float:
        return self.requests / max(self.seconds, 1e-9)


def busy_model(seed: int = SEED) -> Any:
    """The throughput check's model: :func:`slow_model` spinning :data:`THROUGHPUT_CALL_S`.

    Built and warmed on every call from a notebook; the check keeps its own (see
    :func:`measure_speedup`).
    """
    return _BUSY((seed, "notebook"), lambda: _warm_busy_model(seed)[0])


def _warm_busy_model(seed: int) -> tuple[Any, list[np.ndarray]]:
    """A warm :func:`busy_model` and the list its slow layer records every call's rows in."""
    seen: list[np.ndarray] = []
    model = slow_model(seed, THROUGHPUT_CALL_S, busy=True, record=seen.append)
    model.predict_on_batch(np.zeros((1, FEATURES), dtype="float32"))
    return model, seen


#: The busy model only :class:`GlobalLockService` serves in the throughput check, built once per
#: process and seed; no answer is ever handed it (each answer gets a new one, 0.1 s to build).
_BUSY = memo("the throughput check's model")


def _served_by_the_model(run: ClientRun, seed: int, seen: list[np.ndarray],
                         observed: dict | None = None) -> None:
    """Fail unless every answered request got the model's answer for its row, computed by the
    model the service was given (its slow layer saw the row's output).

    Args:
        run: The answer's clients.
        seed: Seeds the model and the rows.
        seen: The rows the model's slow layer computed.
        observed: Receives, when the run passes, every answered request's answer, its row's
            model output, and whether the model computed that output (for the judge).

    Raises:
        AssertionError: Naming the first wrong answer, or how many requests bypassed the model.
    """
    calls = [c for c in run.done if c.error is None]
    if not calls:
        if observed is not None:
            observed.update(outputs=[], expected=[], computed=[], calls=len(seen))
        return
    expected = reference_outputs(seed, [c.x for c in calls])
    for call, want in zip(calls, expected, strict=True):
        if not same_answer(call.output, want):
            raise AssertionError(
                f"client {call.client}'s request {call.index} was answered "
                f"{np.round(np.asarray(call.output, dtype='float64'), 4).tolist()}, but the "
                f"model answers {np.round(want.astype('float64'), 4).tolist()} for its row")
    width = expected.shape[-1]
    computed = [np.reshape(rows, (-1, width)) for rows in list(seen)
                if np.size(rows) and np.shape(rows)[-1] == width]
    done = np.concatenate(computed) if computed else np.zeros((0, width), dtype="float32")
    computed = [bool(np.any(np.all(np.isclose(done, want, rtol=1e-4, atol=1e-5), axis=1)))
                for want in expected]
    bypassed = sum(not found for found in computed)
    if bypassed:
        raise AssertionError(
            f"{bypassed} of the {len(calls)} requests were answered without the model the "
            "service was given computing them (its last layer never saw their rows): serve "
            "every request with that model, several requests per call")
    if observed is not None:
        observed.update(outputs=[_row(call.output) for call in calls],
                        expected=[_row(want) for want in expected], computed=computed,
                        calls=len(seen))


def benchmark(service_class: Callable[..., Any], clients: int, *, requests: int,
              design: str = "", seed: int = SEED, memory: bool = False,
              model_factory: Callable[[int], Any] = serving_model,
              check_run: Callable[[ClientRun], Any] | None = None) -> Measurement:
    """Serve a fresh ``model_factory(seed)`` to ``clients`` clients, ``requests`` rows each.

    Times from the release of the clients until the last answer. With ``memory``, counts the
    bytes of Keras variables alive once every client has finished but before any client
    thread has ended, minus those alive before the service was made (the model's own weights
    do not count; copies the service made do). ``check_run`` then judges the clients' run
    (it raises AssertionError to fail it).
    """
    model = model_factory(seed)
    rows = requests_for(seed, clients, requests)
    if memory:
        model(rows[0][0][None])  # create the model's own weights before counting
    before = keras_variable_bytes() if memory else {}
    extra: list[int] = []

    def count() -> None:
        now = keras_variable_bytes()
        extra.append(sum(size for key, size in now.items() if key not in before))

    service = service_class(model, rows[0][0].copy())
    try:
        run = run_clients(service, rows, deadline_s=TIMEOUT_S,
                          on_finished=count if memory else None)
    finally:
        _close_quietly(service)
    if run.stuck:
        raise AssertionError(_stuck_message(run, f"{clients} clients sent requests"))
    failed = [c for c in run.done if c.error is not None]
    if failed:
        raise AssertionError(f"a request raised {describe_error(failed[0].error)} while "
                             f"{clients} clients were sending")
    if check_run is not None:
        check_run(run)
    latencies = np.array(run.latencies) * 1e3
    return Measurement(design or getattr(service_class, "__name__", "service"), clients,
                       len(run.done), run.seconds, float(np.percentile(latencies, 50)),
                       float(np.percentile(latencies, 99)), extra[0] if extra else None)


@dataclass
class Speedup:
    """The answer against :class:`GlobalLockService`, measured alternately in one run."""

    lock_rates: list[float]
    answer_rates: list[float]
    extra_bytes: int
    copy_bytes: int

    @property
    def ratio(self) -> float:
        """The median of the rounds' paired ratios (each answer run against the lock run just
        before it): load on a shared machine that slows one round slows both of its runs."""
        if not self.lock_rates:
            return float("nan")
        return float(np.median([answer / lock for answer, lock
                                in zip(self.answer_rates, self.lock_rates, strict=True)]))


def measure_speedup(service_class: Callable[..., Any], *, rounds: int = THROUGHPUT_ROUNDS,
                    requests: int = THROUGHPUT_REQUESTS, clients: int = CLIENTS,
                    seed: int = SEED, stop_if_copies: float | None = None,
                    observed: dict | None = None) -> Speedup:
    """Requests/s of the answer and of the global lock, ``rounds`` times each, alternately.

    First one answer run on :func:`serving_model` counts the extra Keras weight bytes (and
    when they exceed ``stop_if_copies`` copies of the model, nothing more is measured). Then
    both serve a :func:`busy_model`: one unmeasured run of each (the first run of a code path
    pays for tracing), then the rounds; the ratio is the median of the rounds' paired ratios.
    The answer serves a busy model built for it, the global lock one no answer is handed
    (an answer cannot slow the one it is compared with, nor inherit another's changes), and
    every answer run must answer each request with its row's output, computed by the model
    the answer was given.

    When ``observed`` is given, it receives (for the judge) every timed run after the memory
    run, the unmeasured ones first: ``"lock_runs"``, ``[requests, seconds]`` each, and
    ``"answer_runs"``, each also with every answer, its row's model output and whether the
    model computed it (:func:`_served_by_the_model`).
    """
    answer_model, seen = _warm_busy_model(seed)  # new for every answer: none inherits a change
    lock_model, _ = _BUSY((seed, "lock"), lambda: _warm_busy_model(seed))

    served: dict = {}

    def check_run(run: ClientRun) -> None:
        _served_by_the_model(run, seed, seen, served)

    def rate(service: Callable[..., Any], rows: int) -> float:
        if service is GlobalLockService:
            measured = benchmark(service, clients, requests=rows, seed=seed,
                                 model_factory=lambda _seed: lock_model)
            if observed is not None:
                observed.setdefault("lock_runs", []).append(
                    [measured.requests, float(measured.seconds)])
            return measured.rate
        seen.clear()
        served.clear()
        measured = benchmark(service, clients, requests=rows, seed=seed,
                             model_factory=lambda _seed: answer_model, check_run=check_run)
        if observed is not None:
            observed.setdefault("answer_runs", []).append(
                {"requests": measured.requests, "seconds": float(measured.seconds), **served})
        return measured.rate

    memory = benchmark(service_class, clients, requests=2, seed=seed, memory=True)
    copy = serving_model(seed)
    copy(np.zeros((1, FEATURES), dtype="float32"))
    speedup = Speedup([], [], int(memory.extra_bytes or 0), weight_bytes(copy))
    if stop_if_copies is not None and speedup.extra_bytes > stop_if_copies * speedup.copy_bytes:
        return speedup
    rate(GlobalLockService, 2)
    rate(service_class, 2)
    for _ in range(rounds):
        speedup.lock_rates.append(rate(GlobalLockService, requests))
        speedup.answer_rates.append(rate(service_class, requests))
    return speedup
