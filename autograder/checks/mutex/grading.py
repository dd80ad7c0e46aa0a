"""The four graders hidden tests call: a smoke run on one thread, then the exercise's run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from autograder.checks.mutex.metrics import (
    ERROR_LATENCY_S,
    OK_LATENCY_S,
    _describe,
    _read,
    run_metrics,
)
from autograder.checks.mutex.model_slot import OLD_VERSION, FakeModel, run_model_slot
from autograder.checks.mutex.prediction_cache import FAST_KEY, run_cache
from autograder.checks.mutex.replicas import Replica, run_move_slots
from autograder.checks.plain import plain
from autograder.checks.report import call_text, require_ok
from autograder.harness import Result


def _require(result: Result, *, exercise: str, run: str, hints: Mapping[str, str],
             options: Mapping[str, Any]) -> None:
    """:func:`require_ok`, with a hint in the exercise's terms and how to see the run again
    (``mutex.<run>(<exercise>, **options)``)."""
    require_ok(result, exercise=exercise, hint=hints.get(result.verdict),
               again=call_text(f"mutex.{run}", exercise, **options))


_SMOKE_TIMEOUT_S = 5.0


def _smoke(exercise: str, attempt: Callable[[], Any]) -> None:
    """Run the answer once on one thread first; report an error or a hang in plain words.

    It runs on a daemon thread with a time limit, so an answer that waits for itself (a plain
    ``Lock`` taken twice) fails here instead of hanging the grader.
    """
    outcome: list[BaseException | None] = []

    def body() -> None:
        try:
            attempt()
        except BaseException as error:  # noqa: BLE001 - reported to the student below
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=body, name=f"{exercise} on one thread", daemon=True)
    thread.start()
    thread.join(_SMOKE_TIMEOUT_S)
    if not outcome:
        raise AssertionError(
            f"{exercise}: used on one thread it did not return within {_SMOKE_TIMEOUT_S:g} s "
            "(before any threads were started): it waits for something that never happens, "
            "such as a Lock its own thread already holds.")
    error = outcome[0]
    if error is not None:
        lines = str(error).strip().splitlines()
        first = f": {lines[0]}" if lines else ""
        raise AssertionError(
            f"{exercise}: used on one thread it raised {type(error).__name__}{first} (before "
            "any threads were started). Make it work on one thread first.")


def check_metrics(metrics_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a metrics class (see :func:`run_metrics`); raise AssertionError when it fails."""

    seen: list[Any] = []

    def once() -> None:
        metrics = metrics_class()
        metrics.record(OK_LATENCY_S, True)
        metrics.record(ERROR_LATENCY_S, False)
        seen.append(metrics.snapshot())

    _smoke("ServerMetrics", once)
    snap = _read(plain(seen[0], "ServerMetrics: on one thread, snapshot()", dict))
    want = {"requests": 2, "ok": 1, "errors": 1, "latency_total": OK_LATENCY_S + ERROR_LATENCY_S}
    if snap != want:
        raise AssertionError(
            f"ServerMetrics: on one thread, record({OK_LATENCY_S:g}, True) then "
            f"record({ERROR_LATENCY_S:g}, False) then snapshot() said {_describe(snap)}; "
            f"expected {_describe(want)}")
    deadlock = "record() or snapshot() waits for a lock that is never released."
    _require(run_metrics(metrics_class, **kwargs), exercise="ServerMetrics", run="run_metrics",
             hints={"deadlock": deadlock}, options=kwargs)


def check_cache(cache_class: Callable[[Callable[[str], Any]], Any], **kwargs: Any) -> None:
    """Grade a prediction cache class (see :func:`run_cache`)."""
    _smoke("PredictionCache", lambda: cache_class(lambda key: (key, 0)).get(FAST_KEY))
    deadlock = ("get() waits for a lock that is never released, or for a lock its own "
                "thread already holds.")
    _require(run_cache(cache_class, **kwargs), exercise="PredictionCache", run="run_cache",
             hints={"deadlock": deadlock}, options=kwargs)


def check_move_slots(move_slots: Callable[[Any, Any, int], Any], **kwargs: Any) -> None:
    """Grade a ``move_slots`` function (see :func:`run_move_slots`)."""
    outcomes: list[tuple[Any, int, int]] = []

    def once() -> None:
        for free, n in ((2, 1), (1, 2)):
            src, dst = Replica("a", free), Replica("b", 2)
            outcomes.append((move_slots(src, dst, n), src.slots, dst.slots))

    _smoke("move_slots", once)
    for (free, n), (moved, left, got), want in zip(((2, 1), (1, 2)), outcomes,
                                                   ((True, 1, 3), (False, 1, 2)), strict=True):
        moved = plain(moved, "move_slots: on one thread, move_slots()")
        if (bool(moved), left, got) != want:
            raise AssertionError(
                f"move_slots: on one thread, moving {n} slot(s) from a replica with {free} "
                f"free to one with 2 returned {moved!r} and left {left} and {got}; expected "
                f"{want[0]} and {want[1]} and {want[2]} (move only when the source has the "
                "slots, and return whether it moved)")
    deadlock = ("two moves in opposite directions each hold one replica's lock and wait "
                "for the other's. Take the two locks in one fixed order whatever the "
                "direction (or never hold both at once).")
    _require(run_move_slots(move_slots, **kwargs), exercise="move_slots", run="run_move_slots",
             hints={"deadlock": deadlock}, options=kwargs)


def check_model_slot(slot_class: Callable[[Any, int], Any], **kwargs: Any) -> None:
    """Grade a model slot class (see :func:`run_model_slot`)."""
    _smoke("ModelSlot", lambda: slot_class(FakeModel(OLD_VERSION), OLD_VERSION).predict(
        ("request 0", 3)))
    deadlock = ("a thread waits for a lock nobody will release: either a predict that "
                "raised left the lock held (use `with`, which releases it on an "
                "exception), or a thread that holds a Lock tried to take it again (swap() "
                "calling predict() under the lock needs an RLock, or a call that does "
                "not lock).")
    _require(run_model_slot(slot_class, **kwargs), exercise="ModelSlot", run="run_model_slot",
             hints={"deadlock": deadlock}, options=kwargs)
