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
    OVERLAP_CALLS,
    OVERLAP_SCHEDULES,
    SEED,
    SERVED_DEVIATIONS,
    SERVED_RECORDS,
    SERVED_SAMPLES,
    SERVED_SCHEDULES,
    SERVED_TIMEOUT_S,
    TIMEOUT_S,
    WIDTH,
)
from autograder.harness import Result, explore


class MissingRecord(OSError):
    """What the explored runs' ``read`` raises for an odd index (a file that is not there)."""


class CorruptRecord(ValueError):
    """What :func:`read_or_corrupt` raises for an odd index: a file that is there but cannot
    be decoded (not an OSError, so a wrapper that counts only OSErrors misses it)."""


def read_or_missing(index: Any) -> np.ndarray:
    """An instant ``read``: ``record(index)`` for an even index, :class:`MissingRecord` for odd."""
    index = int(index)
    if index % 2:
        raise MissingRecord(f"record {index} is missing")
    return record(index)


def read_or_corrupt(index: Any) -> np.ndarray:
    """An instant ``read``: ``record(index)`` for an even index, :class:`CorruptRecord` for odd."""
    index = int(index)
    if index % 2:
        raise CorruptRecord(f"record {index} cannot be decoded")
    return record(index)


class _ServedRun:
    """One explored schedule: the student's object over :func:`read_or_missing`, what each read
    and each call really did, and what ``served()`` and ``failed()`` said between calls (all
    appended by the grader's own code: a list append is one atomic step)."""

    def __init__(self, stats_class: Callable[[Callable[[Any], np.ndarray]], Any]) -> None:
        self.reads: list[str] = []
        self.outcomes: list[str] = []
        self.peeks: list[list[int]] = []
        self.stats = stats_class(self.read)

    def read(self, index: Any) -> np.ndarray:
        try:
            got = read_or_missing(index)
        except MissingRecord:
            self.reads.append("failed")
            raise
        self.reads.append("served")
        return got

    def call(self, index: int) -> None:
        try:
            self.stats(index)
        except MissingRecord:
            self.outcomes.append("failed")
            return
        self.outcomes.append("served")

    def peek(self) -> None:
        """``served()`` and ``failed()`` now, then the reads that had returned and raised by
        then: a count may never run ahead of the reads it counts."""
        served, failed = _counts(self.stats)
        self.peeks.append([int(served), int(failed), self.reads.count("served"),
                           self.reads.count("failed")])


def _served_worker(indices: Sequence[int], *, peek: bool) -> Callable[[_ServedRun], None]:
    def work(run: _ServedRun) -> None:
        run.call(indices[0])
        if peek:
            run.peek()
        for index in indices[1:]:
            run.call(index)
    return work


def _counts(stats: Any, exercise: str = "ServedStats") -> tuple[int, int]:
    return (plain(stats.served(), f"{exercise}.served()", int),
            plain(stats.failed(), f"{exercise}.failed()", int))


def _raised(call: Callable[[], Any], error: type[Exception]) -> str:
    try:
        call()
    except error:
        return "raised"
    return "returned"


def served_on_one_thread(stats_class: Callable[..., Any]) -> dict[str, Any]:
    """The contract on one thread, within :data:`TIMEOUT_S`: records come back unchanged, a
    failing read's error (an OSError, or any other error) is raised again, and each object's
    counts match, also after a second object was made and used; AssertionError if not.

    Returns:
        What it saw (the judge's observation): the records ``stats(0)`` and ``stats(2)``
        returned, whether ``stats(1)`` ``"raised"`` or ``"returned"``, and ``[served(),
        failed()]`` afterwards; then, for a second object over a read whose odd records
        raise a ValueError, the record ``other(4)`` returned, what ``other(5)`` did, its
        counts, and the first object's counts again.
    """
    calls = "stats(0), stats(1) (its read raises), stats(2)"

    def body() -> tuple[list[Any], tuple[int, int], list[Any], tuple[int, int], tuple[int, int]]:
        stats = stats_class(read_or_missing)
        got: list[Any] = [stats(0), _raised(lambda: stats(1), MissingRecord), stats(2)]
        counts = _counts(stats)
        other = stats_class(read_or_corrupt)
        other_got: list[Any] = [other(4), _raised(lambda: other(5), CorruptRecord)]
        return got, counts, other_got, _counts(other), _counts(stats)

    got, counts, other_got, other_counts, counts_after = bounded(
        "ServedStats", f"on one thread, {calls}", body, TIMEOUT_S)
    what = "ServedStats: on one thread"
    records = [_identify(_values(got[0], f"{what}, stats(0)")),
               _identify(_values(got[2], f"{what}, stats(2)"))]
    other_record = _identify(_values(other_got[0], f"{what}, other(4)"))
    if records != [0, 2] or other_record != 4:
        raise AssertionError(f"{what}, stats(0), stats(2) and other(4) should return read(0), "
                             "read(2) and read(4) unchanged")
    if got[1] != "raised" or other_got[1] != "raised":
        raise AssertionError(f"{what}, a call returned although its read raised; expected the "
                             "read's error to be raised again (after counting it)")
    if counts != (2, 1):
        raise AssertionError(f"{what}, after {calls}: served() == {counts[0]} and failed() == "
                             f"{counts[1]}; expected 2 and 1")
    if other_counts != (1, 1):
        raise AssertionError(
            f"{what}, a second object other = ServedStats(read) whose read(5) raises a "
            f"ValueError (a record that cannot be decoded): after other(4) and other(5), "
            f"served() == {other_counts[0]} and failed() == {other_counts[1]}; expected 1 and "
            "1: a read that raises any error is a failed read, not only an OSError")
    if counts_after != counts:
        raise AssertionError(
            f"{what}, making and using a second ServedStats changed the first one's counts "
            f"from served() == {counts[0]}, failed() == {counts[1]} to {counts_after[0]} and "
            f"{counts_after[1]}; expected each object to keep its own counts (in the object, "
            "not in the class)")
    return {"records": records, "second": got[1], "counts": [int(c) for c in counts],
            "other_record": other_record, "other_second": other_got[1],
            "other_counts": [int(c) for c in other_counts],
            "counts_after_other": [int(c) for c in counts_after]}


def run_served(stats_class: Callable[..., Any], *, seed: int = SEED,
               max_schedules: int = SERVED_SCHEDULES, observed: list | None = None) -> Result:
    """Explore two threads calling one object as tf.data's workers would, two calls each
    (one read served, one read failing); ``served()`` and ``failed()`` must then count
    exactly the calls that returned and that raised. After its first call the second thread
    also reads ``served()`` and ``failed()``, which may never count more than the reads that had
    returned and raised by then (a count made before its read, and corrected on failure,
    fails). When ``observed`` is given, each schedule appends what it saw (for the judge): the
    calls' outcomes in the order they finished, ``served()`` and ``failed()`` afterwards, and
    each peek ``[served(), failed(), reads returned, reads raised]``."""

    def check(run: _ServedRun) -> None:
        served, failed = _counts(run.stats)
        if observed is not None:
            observed.append({"outcomes": list(run.outcomes), "served": int(served),
                             "failed": int(failed), "peeks": [list(p) for p in run.peeks]})
        for peek in run.peeks:
            assert peek[0] <= peek[2] and peek[1] <= peek[3], (
                f"between calls, served() == {peek[0]} and failed() == {peek[1]}, but only "
                f"{peek[2]} reads had returned a record and {peek[3]} had raised by then: a "
                "call was counted before its read finished; expected a record counted after "
                "its read returns (and a failure after it raises), never before")
        want = (run.outcomes.count("served"), run.outcomes.count("failed"))
        assert (served, failed) == want, (
            f"{want[0]} calls returned a record and {want[1]} raised, so expected served() "
            f"== {want[0]} and failed() == {want[1]}, but they were {served} and {failed}: "
            + ("counts were lost (two threads read the same count, and each wrote back its "
               "own count plus one)" if served + failed < sum(want) else
               "calls were counted more than once" if served + failed > sum(want) else
               "calls were counted as the wrong kind"))

    return explore(lambda: _ServedRun(stats_class),
                   [_served_worker([0, 1], peek=False), _served_worker([2, 3], peek=True)],
                   check,
                   seed=seed, max_schedules=max_schedules, deviations=SERVED_DEVIATIONS,
                   samples=SERVED_SAMPLES, timeout_s=SERVED_TIMEOUT_S)


class _OverlapRun:
    """One explored schedule of :func:`run_overlap`: the student's object, and what each of
    the two calls returned (stored by the grader's workers)."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.got: list[Any] = [None] * OVERLAP_CALLS

    def call(self, index: int) -> None:
        self.got[index] = self.stats(index)


def run_overlap(stats_class: Callable[..., Any], *, seed: int = SEED,
                max_schedules: int = OVERLAP_SCHEDULES, observed: list | None = None) -> Result:
    """Explore :data:`OVERLAP_CALLS` threads calling one object, ``stats(0)``, ``stats(1)``,
    ..., whose reads each wait until every other read has started. Reads that overlap finish in
    every schedule; an object that makes one read wait for another (a lock held through
    ``read``, or a semaphore that lets fewer reads in at once) deadlocks. When ``observed`` is
    given, each schedule in which every call finished appends the records they returned (None
    for anything but a record), for the judge."""

    def check(run: _OverlapRun) -> bool:
        if observed is not None:
            observed.append([_identify_any(value) for value in run.got])
        return True

    def setup() -> Any:
        started = [threading.Event() for _ in range(OVERLAP_CALLS)]

        def read(index: Any) -> np.ndarray:
            index = int(index)
            started[index].set()
            for other, event in enumerate(started):
                if other != index:
                    event.wait()
            return record(index)

        return _OverlapRun(stats_class(read))

    def caller(index: int) -> Callable[[_OverlapRun], None]:
        return lambda run: run.call(index)

    return explore(setup, [caller(index) for index in range(OVERLAP_CALLS)], check,
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
