"""The four graders hidden tests call: a smoke run on one thread, then the exercise's run.

Each one that passes reports (:func:`~autograder.checks.kit.report`) what it saw for the
host's judge (:mod:`autograder.judges.mutex`): what the one-thread run returned where the
exercise has a contract on one thread, one entry per explored schedule, and how many
schedules ran and whether the search covered every schedule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.kit import call_text, explored_report, report, require, smoke
from autograder.checks.mutex.metrics import (
    ERROR_LATENCY_S,
    OK_LATENCY_S,
    _describe,
    _numbers,
    _read,
    run_metrics,
)
from autograder.checks.mutex.model_slot import OLD_VERSION, FakeModel, run_model_slot
from autograder.checks.mutex.prediction_cache import fast_key, run_cache, run_cache_failing
from autograder.checks.mutex.replicas import Replica, run_move_slots
from autograder.checks.mutex.settings import observed_number
from autograder.checks.plain import plain
from autograder.harness import Result

#: The hint of a race found on first use (two threads, one call each, on a new object).
_FIRST_USE = ("on a new object, two threads' first calls ran at once: make the lock in "
              "__init__, before any thread can call; a lock made on first use (if the lock is "
              "None, make it) can be made twice, by two threads that each saw None, and each "
              "then holds a lock of its own.")


def _explored(result: Result, runs: list) -> dict:
    """What every check reports of its exploration: one entry per schedule, and the count."""
    return {"runs": runs, "schedules": result.schedules_run, "covered": result.covered}


def check_metrics(metrics_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a metrics class (see :func:`run_metrics`); raise AssertionError when it fails."""

    seen: list[Any] = []
    want = {"requests": 2, "ok": 1, "errors": 1, "latency_total": OK_LATENCY_S + ERROR_LATENCY_S}

    def once() -> None:
        metrics = metrics_class()
        metrics.record(OK_LATENCY_S, True)
        metrics.record(ERROR_LATENCY_S, False)
        seen.append(metrics.snapshot())
        seen.append(metrics.snapshot())
        first = plain(seen[0], "ServerMetrics: on one thread, snapshot()", dict)
        if isinstance(first, dict):
            first["requests"] = -1
        seen.append(metrics.snapshot())

    smoke("ServerMetrics", once)
    snap = _read(plain(seen[1], "ServerMetrics: on one thread, snapshot()", dict))
    if snap != want:
        raise AssertionError(
            f"ServerMetrics: on one thread, record({OK_LATENCY_S:g}, True) then "
            f"record({ERROR_LATENCY_S:g}, False) then snapshot() said {_describe(snap)}; "
            f"expected {_describe(want)}")
    after = _read(plain(seen[2], "ServerMetrics: on one thread, snapshot()", dict))
    if seen[0] is seen[1] or after != want:
        raise AssertionError(
            "ServerMetrics: on one thread, two snapshot() calls in a row returned "
            + ("the same dict object" if seen[0] is seen[1] else "two dicts")
            + f", and once the caller set \"requests\" to -1 in the first, the next "
            f"snapshot() said {_describe(after)}; expected a new dict from every call, "
            f"{_describe(want)} (a caller that changes its snapshot must not change anyone "
            "else's)")
    deadlock = "record() or snapshot() waits for a lock that is never released."
    runs: list = []
    result = run_metrics(metrics_class, observed=runs, **kwargs)
    require(result, exercise="ServerMetrics", hints={"deadlock": deadlock},
            again=call_text("mutex.run_metrics", "ServerMetrics", **kwargs))
    first_runs: list = []
    first = run_metrics(metrics_class, observed=first_runs, first_use=True, **kwargs)
    require(first, exercise="ServerMetrics", hints={"deadlock": deadlock, "race": _FIRST_USE},
            again=call_text("mutex.run_metrics", "ServerMetrics", first_use=True, **kwargs))
    report({"one_thread": _numbers(snap), "after_a_change": _numbers(after),
            **_explored(result, runs), "first_use": explored_report(first, first_runs)})


#: Keys the one-thread run gets twice each: a cache that evicts (an LRU of 128 or 256
#: entries) computes some of them again.
KEPT_KEYS = 300


def _kept(cache_class: Callable[[Callable[[str], Any]], Any]) -> dict[str, int]:
    """On one thread, get :data:`KEPT_KEYS` keys, then each again: how many ``compute`` calls
    ran, and how many second gets returned the very object the first one did."""
    calls = [0]

    def compute(key: str) -> list:
        calls[0] += 1
        return [key]

    cache = cache_class(compute)
    keys = [f"key-{n}" for n in range(KEPT_KEYS)]
    first = [cache.get(key) for key in keys]
    same = sum(cache.get(key) is value for key, value in zip(keys, first, strict=True))
    return {"keys": KEPT_KEYS, "computed": calls[0], "same": same}


def check_cache(cache_class: Callable[[Callable[[str], Any]], Any], **kwargs: Any) -> None:
    """Grade a prediction cache class: on one thread it keeps every value it computed; then
    :func:`run_cache`."""
    smoke("PredictionCache", lambda: cache_class(lambda key: (key, 0)).get(fast_key()))
    kept: dict[str, int] = {}
    smoke("PredictionCache", lambda: kept.update(_kept(cache_class)))
    if (kept["computed"], kept["same"]) != (KEPT_KEYS, KEPT_KEYS):
        raise AssertionError(
            f"PredictionCache: on one thread, get() of {KEPT_KEYS} keys and then of each "
            f"again ran compute {kept['computed']} times, and {kept['same']} of the second "
            f"gets returned the object the first one did; expected {KEPT_KEYS} computes and "
            "the very same object every time: each key is computed once and then kept (a "
            "cache that evicts, such as an LRU, computes an evicted key again)")
    deadlock = ("get() waits for a lock that is never released, or for a lock its own "
                "thread already holds.")
    runs: list = []
    result = run_cache(cache_class, observed=runs, **kwargs)
    require(result, exercise="PredictionCache", hints={"deadlock": deadlock},
            again=call_text("mutex.run_cache", "PredictionCache", **kwargs))
    failing_runs: list = []
    failing = run_cache_failing(cache_class, observed=failing_runs, **kwargs)
    stuck = ("the first compute() of the key raised, and a get() of that key then waited for "
             "ever for a value nobody was computing: when compute() raises, wake the threads "
             "waiting for that key (they raise too, or compute it again) and forget the failed "
             "build, e.g. with try/finally or a Future's set_exception.")
    polled = ("the first compute() of the key raised, and a get() of that key then kept "
              "waiting (or polling) for a value nobody was computing any more: when compute() "
              "raises, forget the failed build so that a waiting or later get() raises too or "
              "computes the key again.")
    require(failing, exercise="PredictionCache", hints={"deadlock": stuck, "timeout": polled},
            again=call_text("mutex.run_cache_failing", "PredictionCache", **kwargs))
    report({"fast_key": fast_key(), "kept": kept, **_explored(result, runs),
            "failing": _explored(failing, failing_runs)})


def check_move_slots(move_slots: Callable[[Any, Any, int], Any], **kwargs: Any) -> None:
    """Grade a ``move_slots`` function (see :func:`run_move_slots`)."""
    outcomes: list[tuple[Any, int, int]] = []

    def once() -> None:
        for free, n in ((2, 1), (1, 2)):
            src, dst = Replica("a", free), Replica("b", 2)
            outcomes.append((move_slots(src, dst, n), src.slots, dst.slots))

    smoke("move_slots", once)
    one_thread = []
    for (free, n), (moved, left, got), want in zip(((2, 1), (1, 2)), outcomes,
                                                   ((True, 1, 3), (False, 1, 2)), strict=True):
        moved = plain(moved, "move_slots: on one thread, move_slots()")
        if (bool(moved), left, got) != want:
            raise AssertionError(
                f"move_slots: on one thread, moving {n} slot(s) from a replica with {free} "
                f"free to one with 2 returned {moved!r} and left {left} and {got}; expected "
                f"{want[0]} and {want[1]} and {want[2]} (move only when the source has the "
                "slots, and return whether it moved)")
        one_thread.append([bool(moved), observed_number(left), observed_number(got)])
    deadlock = ("two moves in opposite directions each hold one replica's lock and wait "
                "for the other's. Take the two locks in one fixed order whatever the "
                "direction (or never hold both at once).")
    runs: list = []
    result = run_move_slots(move_slots, observed=runs, **kwargs)
    require(result, exercise="move_slots", hints={"deadlock": deadlock},
            again=call_text("mutex.run_move_slots", "move_slots", **kwargs))
    report({"one_thread": one_thread, **_explored(result, runs)})


def check_model_slot(slot_class: Callable[[Any, int], Any], **kwargs: Any) -> None:
    """Grade a model slot class (see :func:`run_model_slot`)."""
    smoke("ModelSlot", lambda: slot_class(FakeModel(OLD_VERSION), OLD_VERSION).predict(
        ("request 0", 3)))
    deadlock = ("a thread waits for a lock nobody will release: either a predict that "
                "raised left the lock held (use `with`, which releases it on an "
                "exception), or a thread that holds a Lock tried to take it again (swap() "
                "calling predict() under the lock needs an RLock, or a call that does "
                "not lock).")
    runs: list = []
    result = run_model_slot(slot_class, observed=runs, **kwargs)
    require(result, exercise="ModelSlot", hints={"deadlock": deadlock},
            again=call_text("mutex.run_model_slot", "ModelSlot", **kwargs))
    first_runs: list = []
    first = run_model_slot(slot_class, observed=first_runs, first_use=True, **kwargs)
    require(first, exercise="ModelSlot", hints={"deadlock": deadlock, "race": _FIRST_USE},
            again=call_text("mutex.run_model_slot", "ModelSlot", first_use=True, **kwargs))
    report({**_explored(result, runs), "first_use": explored_report(first, first_runs)})
