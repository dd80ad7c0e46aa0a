"""Exercise 4 (``ServedStats``): one thread, explored counts and reads, a parallel map."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.checks.kit import bounded
from autograder.checks.plain import plain
from autograder.checks.tfdata.records import _identify, _values, make_read, record
from autograder.checks.tfdata.settings import (
    OVERLAP_SCHEDULES,
    SEED,
    SERVED_DEVIATIONS,
    SERVED_RECORDS,
    SERVED_SAMPLES,
    SERVED_SCHEDULES,
    TIMEOUT_S,
    WIDTH,
)
from autograder.harness import Result, explore


class MissingRecord(OSError):
    """What the explored runs' ``read`` raises for an odd index (a file that is not there)."""


def read_or_missing(index: Any) -> np.ndarray:
    """An instant ``read``: ``record(index)`` for an even index, :class:`MissingRecord` for odd."""
    index = int(index)
    if index % 2:
        raise MissingRecord(f"record {index} is missing")
    return record(index)


class _ServedRun:
    """One explored schedule: the student's object over :func:`read_or_missing`, and what each call
    really did (appended by the grader's workers: a list append is one atomic step)."""

    def __init__(self, stats_class: Callable[[Callable[[Any], np.ndarray]], Any]) -> None:
        self.stats = stats_class(read_or_missing)
        self.outcomes: list[str] = []

    def call(self, index: int) -> None:
        try:
            self.stats(index)
        except MissingRecord:
            self.outcomes.append("failed")
            return
        self.outcomes.append("served")


def _served_worker(indices: Sequence[int]) -> Callable[[_ServedRun], None]:
    def work(run: _ServedRun) -> None:
        for index in indices:
            run.call(index)
    return work


def _counts(stats: Any, exercise: str = "ServedStats") -> tuple[int, int]:
    return (plain(stats.served(), f"{exercise}.served()", int),
            plain(stats.failed(), f"{exercise}.failed()", int))


def served_on_one_thread(stats_class: Callable[..., Any]) -> dict[str, Any]:
    """The contract on one thread, within :data:`TIMEOUT_S`: records come back unchanged, a
    failing read's error is raised again, and the counts match; AssertionError if not.

    Returns:
        What it saw (the judge's observation): the records ``stats(0)`` and ``stats(2)``
        returned, whether ``stats(1)`` ``"raised"`` or ``"returned"``, and ``[served(),
        failed()]`` afterwards.
    """
    calls = "stats(0), stats(1) (its read raises), stats(2)"

    def body() -> tuple[list[Any], tuple[int, int]]:
        stats = stats_class(read_or_missing)
        got: list[Any] = [stats(0)]
        try:
            stats(1)
        except MissingRecord:
            got.append("raised")
        else:
            got.append("returned")
        got.append(stats(2))
        return got, _counts(stats)

    got, counts = bounded("ServedStats", f"on one thread, {calls}", body, TIMEOUT_S)
    what = "ServedStats: on one thread"
    records = [_identify(_values(got[0], f"{what}, stats(0)")),
               _identify(_values(got[2], f"{what}, stats(2)"))]
    if records != [0, 2]:
        raise AssertionError(f"{what}, stats(0) and stats(2) should return read(0) and read(2) "
                             "unchanged")
    if got[1] != "raised":
        raise AssertionError(f"{what}, stats(1) returned although read(1) raised; expected the "
                             "read's error to be raised again (after counting it)")
    if counts != (2, 1):
        raise AssertionError(f"{what}, after {calls}: served() == {counts[0]} and failed() == "
                             f"{counts[1]}; expected 2 and 1")
    return {"records": records, "second": got[1], "counts": [int(c) for c in counts]}


def run_served(stats_class: Callable[..., Any], *, seed: int = SEED,
               max_schedules: int = SERVED_SCHEDULES, observed: list | None = None) -> Result:
    """Explore two threads calling one object as tf.data's workers would, two calls each
    (one read served, one read failing); ``served()`` and ``failed()`` must then count
    exactly the calls that returned and that raised. When ``observed`` is given, each
    schedule appends what it saw (for the judge): the calls' outcomes in the order they
    finished, and ``served()`` and ``failed()`` afterwards."""

    def check(run: _ServedRun) -> None:
        served, failed = _counts(run.stats)
        if observed is not None:
            observed.append({"outcomes": list(run.outcomes), "served": int(served),
                             "failed": int(failed)})
        want = (run.outcomes.count("served"), run.outcomes.count("failed"))
        assert (served, failed) == want, (
            f"{want[0]} calls returned a record and {want[1]} raised, so expected served() "
            f"== {want[0]} and failed() == {want[1]}, but they were {served} and {failed}: "
            + ("counts were lost (two threads read the same count, and each wrote back its "
               "own count plus one)" if served + failed < sum(want) else
               "calls were counted more than once" if served + failed > sum(want) else
               "calls were counted as the wrong kind"))

    return explore(lambda: _ServedRun(stats_class),
                   [_served_worker([0, 1]), _served_worker([2, 3])], check,
                   seed=seed, max_schedules=max_schedules, deviations=SERVED_DEVIATIONS,
                   samples=SERVED_SAMPLES, timeout_s=TIMEOUT_S)


class _OverlapRun:
    """One explored schedule of :func:`run_overlap`: the student's object, and what each of
    the two calls returned (stored by the grader's workers)."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.got: list[Any] = [None, None]

    def call(self, index: int) -> None:
        self.got[index] = self.stats(index)


def run_overlap(stats_class: Callable[..., Any], *, seed: int = SEED,
                max_schedules: int = OVERLAP_SCHEDULES, observed: list | None = None) -> Result:
    """Explore two threads calling one object, ``stats(0)`` and ``stats(1)``, whose reads each
    wait until the other read has started. Reads that overlap finish in every schedule; an
    object that makes one read wait for another (a lock held through ``read``) deadlocks.
    When ``observed`` is given, each schedule in which both calls finished appends the records
    they returned (None for anything but a record), for the judge."""

    def check(run: _OverlapRun) -> bool:
        if observed is not None:
            observed.append([_identify_any(value) for value in run.got])
        return True

    def setup() -> Any:
        started = [threading.Event(), threading.Event()]

        def read(index: Any) -> np.ndarray:
            index = int(index)
            started[index].set()
            started[1 - index].wait()
            return record(index)

        return _OverlapRun(stats_class(read))

    return explore(setup, [lambda run: run.call(0), lambda run: run.call(1)], check,
                   seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)


def _identify_any(value: Any) -> int | None:
    """The record ``value`` is, or None when it is not one (or no array of numbers at all)."""
    try:
        return _identify(_values(value))
    except Exception:  # noqa: BLE001 - the student's value: anything but a record is None
        return None


def served_by_a_parallel_map(stats_class: Callable[..., Any],
                             observed: list | None = None) -> tuple[int, int]:
    """Map :data:`SERVED_RECORDS` records in parallel through ``tf.numpy_function(stats, ...)``
    on tf.data's own threads (bounded); ``(served(), failed())`` afterwards. When ``observed``
    is given, the records that came back (sorted) are appended to it, for the judge.

    Raises:
        AssertionError: the map failed or hung, or a record came back changed.
    """
    import tensorflow as tf

    exercise = "ServedStats"
    stats = stats_class(make_read(0.0))

    def load(index: Any) -> Any:
        out = tf.numpy_function(stats, [index], tf.float32)
        out.set_shape((WIDTH,))
        return out

    dataset = tf.data.Dataset.range(SERVED_RECORDS).map(load, num_parallel_calls=SERVED_RECORDS)
    got = bounded(exercise, f"a parallel map over {SERVED_RECORDS} records",
                  lambda: [_values(x) for x in dataset], TIMEOUT_S)
    found = sorted(_identify(v) for v in got if _identify(v) is not None)
    if found != list(range(SERVED_RECORDS)):
        raise AssertionError(f"{exercise}: a parallel map over records 0-{SERVED_RECORDS - 1} "
                             f"gave back records {found}; expected each one, unchanged")
    if observed is not None:
        observed.extend(found)
    return _counts(stats)
