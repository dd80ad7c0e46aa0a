"""The four graders hidden tests call: each exercise's runs, judged in its own terms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.kit import call_text, explored_report, report, require
from autograder.checks.plain import exception_line
from autograder.checks.tfdata.augment import run_augment
from autograder.checks.tfdata.fast import measure, order_run
from autograder.checks.tfdata.loader import run_loader
from autograder.checks.tfdata.records import record
from autograder.checks.tfdata.served import (
    run_overlap,
    run_served,
    served_by_a_parallel_map,
    served_on_one_thread,
)
from autograder.checks.tfdata.settings import (
    FAST_RECORDS,
    MIN_SHARE_OF_IDEAL,
    ORDER_RECORDS,
    OVERLAP_CALLS,
    SERVED_RECORDS,
    WIDTH,
)


def check_loader(make_dataset: Callable[[Callable[[int], np.ndarray], int], Any]) -> None:
    """Grade exercise 1 (``make_dataset``); AssertionError with the student's message.

    Reports (for the judge) the record indices each one-thread iteration and each thread of
    each trial saw, the answer's threads left running after early-stopped iterations, and
    how many trials ran.
    """
    one_thread: list = []
    early: list = []
    trials: list = []
    result = run_loader(make_dataset, observed=trials, one_thread=one_thread, early=early)
    require(result, exercise="make_dataset",
            again=call_text("tfdata.run_loader", "make_dataset"))
    report({"one_thread": one_thread, "left_running": early[0], "trials": trials,
            "trials_run": result.schedules_run})


def check_augment(augment: Callable[[Any, int], Any]) -> None:
    """Grade exercise 2 (``augment``); AssertionError with the student's message.

    Reports (for the judge) each seed's shifts and flips, the largest difference between the
    two seeds' images, the flips of the :data:`FLIP_DRAWS` images, and per trial and thread
    each image's largest difference from the first run.
    """
    one_thread: dict = {}
    trials: list = []
    result = run_augment(augment, observed=trials, one_thread=one_thread)
    require(result, exercise="augment", again=call_text("tfdata.run_augment", "augment"))
    report({**one_thread, "trials": trials, "trials_run": result.schedules_run})


def check_fast(fast_pipeline: Callable[..., Any]) -> None:
    """Grade exercise 3 (``fast_pipeline``); AssertionError with the student's message.

    Engines: real tf.data threads, no harness engine. First the order run
    (:func:`order_run`: records that finish in reverse pairs must still come out 0, 1, 2,
    ...), then the timing run (:func:`measure`): values and order again, at least 2 reads in
    flight, and the speed-up share of the ideal measured in the same run. Reports (for the
    judge) both runs' record orders, the reads' spans and the three measured times.
    """
    name = "fast_pipeline"
    try:
        order = order_run(fast_pipeline, ORDER_RECORDS)
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"{name}: building and iterating the pipeline raised "
            f"{exception_line(error)} (expected transform(read(i)) for i in "
            f"range({ORDER_RECORDS}))") from None
    if len(order) != ORDER_RECORDS:
        raise AssertionError(
            f"{name}: expected transform(read(i)) for every i in range(n), but with "
            f"n = {ORDER_RECORDS} the training loop got {len(order)} records ({order}): every "
            f"record must come out, whatever n is (an odd n too).")
    if order != list(range(ORDER_RECORDS)):
        raise AssertionError(
            f"{name}: expected transform(read(i)) for i = 0, 1, ..., {ORDER_RECORDS - 1}, in "
            f"that order, but when every odd record was read and transformed faster than the "
            f"even one before it, the training loop got records {order}. Training order must "
            f"not depend on which read or transform finishes first: keep every map "
            f"deterministic.")
    uneven_order = order
    try:
        run = measure(fast_pipeline)
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"{name}: building and iterating the pipeline raised "
            f"{exception_line(error)} (expected transform(read(i)) for i in "
            f"range({FAST_RECORDS}))") from None
    expected = [2 * record(i) for i in range(FAST_RECORDS)]
    got = [v.reshape(-1) for v in run.values]
    order = [int(round(float(v[0]) / 20)) if v.shape == (WIDTH,) else None for v in got]
    in_order = len(got) == len(expected) and all(
        np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    if not in_order:
        raise AssertionError(
            f"{name}: expected transform(read(i)) for i = 0, 1, ..., {FAST_RECORDS - 1}, in "
            f"that order, but the training loop got records {order}. Training order must not "
            f"depend on which read finishes first: keep the map deterministic.")
    parallel = run.max_parallel("read")
    if parallel < 2:
        raise AssertionError(
            f"{name}: expected reads to run in parallel (I/O waits overlap), but at most "
            f"{parallel} read ran at a time (speed-up {run.speedup:.2f}x over the naive loop, "
            f"ideal {run.ideal_speedup:.2f}x)")
    if run.share_of_ideal < MIN_SHARE_OF_IDEAL:
        raise AssertionError(
            f"{name}: expected a speed-up over the naive loop of at least "
            f"{MIN_SHARE_OF_IDEAL:.0%} of the ideal {run.ideal_speedup:.2f}x measured in the same "
            f"run, but measured {run.speedup:.2f}x ({run.share_of_ideal:.0%} of ideal)")
    report({"order": uneven_order, "values": [_record_twice(v) for v in got],
            "reads": [[start, end] for what, _thread, start, end in run.log
                      if what == "read"][:_MAX_SPANS],
            "naive_s": run.naive_s, "ideal_s": run.ideal_s, "pipeline_s": run.pipeline_s})


#: The most read spans a report holds (a correct pipeline reads each record once).
_MAX_SPANS = 1000


def _record_twice(values: np.ndarray) -> int | None:
    """The index ``i`` of the element ``values`` when it is exactly ``2 * record(i)``."""
    if values.shape != (WIDTH,):
        return None
    index = int(round(float(values[0]) / 20))
    return index if np.array_equal(values, 2 * record(index)) else None


def check_served(stats_class: Callable[..., Any]) -> None:
    """Grade exercise 4 (``ServedStats``); AssertionError with the student's message.

    Engines: ``explore`` for the counts (:func:`run_served`: every interleaving with at most
    one preemption, then seeded samples up to :data:`SERVED_SCHEDULES`) and for the overlap of
    reads (:func:`run_overlap`: a read that waits for the other deadlocks when the answer
    serializes them, in the first schedule, with no timing involved); then real tf.data
    threads (:func:`served_by_a_parallel_map`). Reports (for the judge) what the one-thread
    run saw, each explored schedule's outcomes and counts, the records each overlap schedule's
    calls returned, and the parallel map's records and counts.
    """
    exercise = "ServedStats"
    one_thread = served_on_one_thread(stats_class)
    schedules: list = []
    served = run_served(stats_class, observed=schedules)
    require(served, exercise=exercise, again=call_text("tfdata.run_served", "ServedStats"))
    overlaps: list = []
    overlap = run_overlap(stats_class, observed=overlaps)
    if overlap.verdict == "deadlock":
        raise AssertionError(
            f"{exercise}: {OVERLAP_CALLS} threads called stats(0) to stats({OVERLAP_CALLS - 1}), "
            "whose reads each wait until every other read has started, and they never "
            "finished: while some reads ran, your object kept another thread from starting its "
            "read (a lock held through read(), or a semaphore that lets fewer reads in); "
            "expected all the reads to run at the same time, as tf.data's threads need: hold "
            "the lock only around the counts")
    require(overlap, exercise=exercise, again=call_text("tfdata.run_overlap", "ServedStats"))
    mapped: list = []
    counts = served_by_a_parallel_map(stats_class, observed=mapped)
    if counts != (SERVED_RECORDS, 0):
        raise AssertionError(f"{exercise}: after a parallel map over {SERVED_RECORDS} "
                             f"records, served() == {counts[0]} and failed() == {counts[1]}; "
                             f"expected {SERVED_RECORDS} and 0")
    report({"one_thread": one_thread, **explored_report(served, schedules),
            "overlaps": overlaps, "overlaps_run": overlap.schedules_run,
            "overlaps_covered": overlap.covered,
            "mapped": mapped, "mapped_counts": [int(c) for c in counts]})
