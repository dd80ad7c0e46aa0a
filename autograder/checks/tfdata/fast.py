"""Exercise 3 (``fast_pipeline``): the order run, and the timing run against the naive loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.checks.kit import released_together
from autograder.checks.tfdata.records import (
    _values,
    make_read,
    make_transform,
    own_threads,
    read_seconds,
)
from autograder.checks.tfdata.settings import (
    FAST_RECORDS,
    ORDER_FAST_S,
    ORDER_SLOW_S,
    TRAIN_S,
    TRANSFORM_S,
    WIDTH,
)


@dataclass
class FastRun:
    """One measurement of a pipeline against the naive loop and the ideal bound, run at the
    same time. Times in seconds; ``log`` holds ``(stage, thread, start, end)`` events."""

    naive_s: float
    ideal_s: float
    pipeline_s: float
    values: list[np.ndarray]
    log: list[tuple[str, str, float, float]]

    @property
    def speedup(self) -> float:
        """Naive loop time over pipeline time."""
        return self.naive_s / self.pipeline_s

    @property
    def ideal_speedup(self) -> float:
        """Naive loop time over the ideal bound's time."""
        return self.naive_s / self.ideal_s

    @property
    def share_of_ideal(self) -> float:
        """The pipeline's speed-up as a share of the ideal one."""
        return self.ideal_s / self.pipeline_s

    def max_parallel(self, stage: str) -> int:
        """Most calls of ``stage`` in flight at one moment."""
        spans = [(s, e) for what, _t, s, e in self.log if what == stage]
        return max((sum(s2 < e and s < e2 for s2, e2 in spans) for s, e in spans), default=0)


def naive_loop(read: Callable[[int], np.ndarray], transform: Callable[[np.ndarray], Any],
               n: int, train_step: Callable[[Any], None]) -> None:
    """The hand-written baseline: read, transform, train, one record after another."""
    for i in range(n):
        train_step(transform(read(i)))


def measure(pipeline: Callable[..., Any] | None, n: int = FAST_RECORDS) -> FastRun:
    """Run the naive loop, the ideal bound and ``pipeline(read, transform, n)`` at once.

    The ideal bound is a training loop whose input costs nothing after the first record: one
    read and one transform, then ``n`` training steps. With ``pipeline=None`` only the first
    two run (the pipeline time is then the naive time).
    """
    log: list[tuple[str, str, float, float]] = []
    values: list[np.ndarray] = []
    times: dict[str, float] = {}

    def step(into: list | None) -> Callable[[Any], None]:
        def train(x: Any) -> None:
            start = time.perf_counter()
            time.sleep(TRAIN_S)
            if into is not None:
                values.append(_values(x, "iterating the pipeline"))
                log.append(("train", threading.current_thread().name, start,
                            time.perf_counter()))
        return train

    def timed(name: str, body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            start = time.perf_counter()
            body()
            times[name] = time.perf_counter() - start
        return run

    def ideal() -> None:
        time.sleep(read_seconds(0) + TRANSFORM_S)
        for _ in range(n):
            time.sleep(TRAIN_S)

    targets = [timed("naive", lambda: naive_loop(make_read(read_seconds), make_transform(), n,
                                                 step(None))),
               timed("ideal", ideal)]
    if pipeline is not None:
        # Built before the clock starts: tracing the map functions is a one-off cost.
        dataset = own_threads(pipeline(make_read(read_seconds, log), make_transform(log), n))
        train = step(values)
        targets.append(timed("pipeline", lambda: [train(x) for x in dataset]))
    errors = [e for e in released_together(targets)[1] if e is not None]
    if errors:
        raise errors[0]
    return FastRun(times["naive"], times["ideal"], times.get("pipeline", times["naive"]),
                   values, log)


def _uneven(index: int) -> float:
    return ORDER_SLOW_S if index % 2 == 0 else ORDER_FAST_S


def _uneven_transform() -> Callable[[np.ndarray], np.ndarray]:
    """``2 * x``, taking :func:`_uneven` seconds of record ``x``'s index (read off its values)."""
    def transform(x: Any) -> np.ndarray:
        values = np.asarray(x, dtype="float32")
        time.sleep(_uneven(int(round(float(values.reshape(-1)[0]) / 10))))
        return values * 2
    return transform


def order_run(fast_pipeline: Callable[..., Any], n: int = FAST_RECORDS) -> list[int | None]:
    """The record order ``fast_pipeline`` yields when later records are always ready first.

    Every even record takes 60 ms to read and to transform, every odd one 1 ms, so a stage
    that hands out results as they finish (``deterministic=False``, a thread pool's
    ``as_completed``) reorders every pair, on a quiet machine or a loaded one; the timing
    run's reads (slow, uneven, and the transform stage paced by them) hid such a transform
    map (issue #18, class 5: out of order in 127 of 399 runs with instant reads, never in
    grading).
    """
    dataset = own_threads(fast_pipeline(make_read(_uneven), _uneven_transform(), n))
    return [int(round(float(v[0]) / 20)) if v.shape == (WIDTH,) else None
            for v in (_values(x, "iterating the pipeline").reshape(-1) for x in dataset)]
