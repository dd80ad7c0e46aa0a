"""Lesson 02's fixed seed, search bound and time budget, the one ``explore`` call using them,
and how a number an answer gave is reported to the judge."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.harness import Result, explore

SEED = 2
#: Search bound of every graded check (engine: ``explore`` only; the models are fakes or
#: warm, so no race hides inside TensorFlow): every schedule with at most one preemption, in
#: an order no seed changes, then :data:`SAMPLES` seeded PCT/random schedules. The solutions'
#: bounded spaces are 400-920 schedules; :data:`SCHEDULES` caps an unusually long answer
#: (past it the search is a fixed, seed-free sample and the pass message says so). A race one
#: preemption exposes (a check under one locked region and the move under another) is found
#: whatever the seed (issue #18, class 2: 200 seeded schedules missed it for 12 seeds).
SCHEDULES = 3000
SAMPLES = 100
#: Wall-clock budget of one check. A correct answer needs 1-5 s; an answer that never
#: finishes a schedule (a busy-wait loop) fails with a "timeout" verdict after this long.
TIMEOUT_S = 60.0
#: Wall-clock budget of the failing-build run (:func:`~.prediction_cache.run_cache_failing`):
#: a correct cache needs well under a second; one that polls for a build that failed never
#: ends, and fails after this long.
FAILING_TIMEOUT_S = 20.0
FEATURES = 8
#: The first-use runs of ServerMetrics and ModelSlot: two threads, one call each, on a new
#: object; every schedule with at most this many departures from round-robin order, then no
#: samples. A lock made on first use (``if self._lock is None: self._lock = Lock()``) needs
#: two: one between the test and the store, where the other thread makes a lock of its own,
#: and one inside the critical section that each thread now enters with its own lock.
FIRST_USE_DEVIATIONS = 2
#: At most this many first-use schedules (the correct answers' spaces are 20-200).
FIRST_USE_SCHEDULES = 3000


def observed_number(value: Any) -> int | float | bool | None:
    """A number an answer gave, already read as plain data, as the judge receives it: an exact
    ``int``, ``float`` or ``bool`` as it is, an array of one number as that number, anything
    else None (which no judge accepts)."""
    if type(value) in (int, float, bool):
        return value
    if type(value) is np.ndarray and value.size == 1:
        return observed_number(value.item())
    return None


def _explore(setup: Callable[[], Any], workers: Sequence[Callable[[Any], Any]],
             check: Callable[[Any], Any], seed: int, schedules: int,
             timeout_s: float = TIMEOUT_S, *, first_use: bool = False) -> Result:
    """The graded search: every schedule within one departure, then :data:`SAMPLES` samples;
    with ``first_use``, every schedule within :data:`FIRST_USE_DEVIATIONS` and no sample (at
    most :data:`FIRST_USE_SCHEDULES`)."""
    if first_use:
        return explore(setup, workers, check, seed=seed,
                       max_schedules=min(schedules, FIRST_USE_SCHEDULES), timeout_s=timeout_s,
                       samples=0, deviations=FIRST_USE_DEVIATIONS)
    return explore(setup, workers, check, seed=seed, max_schedules=schedules,
                   timeout_s=timeout_s, samples=SAMPLES)
