"""Exercise 1, ServerMetrics: requests recorded from two threads while a third takes snapshots."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autograder.checks.mutex.settings import SCHEDULES, SEED, _explore, observed_number
from autograder.checks.plain import plain
from autograder.harness import Result

OK_LATENCY_S = 1.0
ERROR_LATENCY_S = 4.0
_COUNTERS = ("requests", "ok", "errors", "latency_total")


@dataclass
class MetricsRun:
    """Shared state of one metrics schedule."""

    metrics: Any
    ok_calls: int
    error_calls: int
    snapshots: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)


def _read(snap: Any) -> dict[str, Any]:
    return {name: snap[name] for name in _COUNTERS}


def _numbers(snap: Mapping[str, Any]) -> list:
    """A snapshot's four counters, in :data:`_COUNTERS` order, as the judge receives them."""
    return [observed_number(snap[name]) for name in _COUNTERS]


def _describe(snap: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={snap[name]:g}" for name in _COUNTERS)


def run_metrics(metrics_class: Callable[[], Any], *, seed: int = SEED,
                schedules: int = SCHEDULES, observed: list | None = None,
                first_use: bool = False) -> Result:
    """Record requests from two threads while a third takes snapshots, under ``explore``.

    Thread 0 records two successful requests (latency 1.0 s each), thread 1 two failed ones
    (4.0 s each), thread 2 takes two snapshots. With ``first_use``, thread 0 records one
    successful request and thread 1 one failed one on the new object, and nobody takes a
    snapshot, searched within two departures (a lock made on first use, by both threads at
    once; see :data:`~.settings.FIRST_USE_DEVIATIONS`). The check: every snapshot has
    ``ok + errors == requests`` and ``latency_total == 1.0 * ok + 4.0 * errors``, no snapshot
    changed after it was returned, and the final snapshot counts all four requests. When
    ``observed`` is given, each schedule that passed appends (for the judge) its snapshots as
    they were returned and as they read afterwards, and the final snapshot, each as its four
    counters ``[requests, ok, errors, latency_total]``.
    """
    calls = 1 if first_use else 2

    def setup() -> MetricsRun:
        return MetricsRun(metrics_class(), calls, calls)

    def successful_requests(run: MetricsRun) -> None:
        for _ in range(run.ok_calls):
            run.metrics.record(OK_LATENCY_S, True)

    def failed_requests(run: MetricsRun) -> None:
        for _ in range(run.error_calls):
            run.metrics.record(ERROR_LATENCY_S, False)

    def dashboard(run: MetricsRun) -> None:
        for _ in range(2):
            snap = run.metrics.snapshot()
            run.snapshots.append((snap, _read(snap)))

    def check(run: MetricsRun) -> None:
        returned, later = [], []
        for snap, seen in run.snapshots:
            seen = plain(seen, "snapshot()")  # what it said when it returned, item by item
            if seen["ok"] + seen["errors"] != seen["requests"]:
                raise AssertionError(
                    f"a snapshot said {_describe(seen)}: ok + errors = "
                    f"{seen['ok'] + seen['errors']:g}, expected requests = {seen['requests']:g}."
                    " It was taken while record() had counted the request in some counters "
                    "and not yet in others")
            expected = OK_LATENCY_S * seen["ok"] + ERROR_LATENCY_S * seen["errors"]
            if seen["latency_total"] != expected:
                raise AssertionError(
                    f"a snapshot said {_describe(seen)}: expected latency_total = "
                    f"{expected:g} for those requests. It was taken while record() was "
                    "half done")
            now = _read(plain(snap, "snapshot()", dict))
            returned.append(_numbers(seen))
            later.append(_numbers(now))
            if now != seen:
                raise AssertionError(
                    f"a snapshot changed after snapshot() returned it: it said "
                    f"{_describe(seen)}, later {_describe(now)}; expected it to stay "
                    "as it was. Return a new dict, not the one record() keeps updating")
        final = _read(plain(run.metrics.snapshot(), "snapshot()", dict))
        want = {"requests": run.ok_calls + run.error_calls, "ok": run.ok_calls,
                "errors": run.error_calls,
                "latency_total": OK_LATENCY_S * run.ok_calls + ERROR_LATENCY_S * run.error_calls}
        if final != want:
            raise AssertionError(
                f"after {want['requests']} record() calls the final snapshot said "
                f"{_describe(final)}, expected {_describe(want)}: an update was lost")
        if observed is not None:
            observed.append({"snapshots": returned, "later": later, "final": _numbers(final)})

    workers = [successful_requests, failed_requests, *(() if first_use else (dashboard,))]
    return _explore(setup, workers, check, seed, schedules, first_use=first_use)
