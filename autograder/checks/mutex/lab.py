"""The notebook's plumbing: the served model, live trials on real threads, the throughput chart."""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.kit import run_threads
from autograder.checks.mutex.settings import FEATURES


def serving_model(features: int = FEATURES, *, seed: int = 0, width: int = 16) -> Any:
    """A small built Keras classifier with seeded weights (built, so never cold-built).

    Args:
        features: Input width.
        seed: Picks the weights.
        width: Units of the hidden layer.
    """
    import keras

    def init(k: int) -> Any:
        return keras.initializers.RandomNormal(stddev=0.5, seed=4 * seed + k)

    return keras.Sequential([
        keras.Input((features,)),
        keras.layers.Dense(width, activation="relu", kernel_initializer=init(0),
                           bias_initializer=init(1)),
        keras.layers.Dense(4, kernel_initializer=init(2), bias_initializer=init(3)),
    ])


def request_batch(seed: int, rows: int = 4, features: int = FEATURES) -> np.ndarray:
    """One float32 batch of requests, drawn from ``seed``."""
    return np.random.default_rng(seed).normal(size=(rows, features)).astype("float32")


def extra_builds(cache_class: Callable[[Callable[[Any], Any]], Any], model: Any, *,
                 trials: int, threads: int = 4, keys: int = 8) -> list[int]:
    """Fill a fresh cache from ``threads`` real threads per trial; extra computes per trial.

    Every thread asks for the same ``keys`` keys, in the same order; ``compute(key)`` runs
    ``model.predict_on_batch`` on that key's batch. A correct cache computes each key once, so
    every trial returns 0.
    """
    inputs = {key: request_batch(1000 + key, rows=1, features=model.input_shape[-1])
              for key in range(keys)}
    return [_extra_builds_once(cache_class, model, inputs, threads) for _ in range(trials)]


def _extra_builds_once(cache_class: Callable[[Callable[[Any], Any]], Any], model: Any,
                       inputs: dict[int, np.ndarray], threads: int) -> int:
    computed: Counter[int] = Counter()

    def compute(key: int) -> Any:
        computed[key] += 1
        return model.predict_on_batch(inputs[key])

    cache = cache_class(compute)
    run_threads(lambda _index: [cache.get(key) for key in inputs], threads)
    return sum(computed.values()) - len(inputs)


@dataclass
class SnapshotTrials:
    """What :func:`torn_snapshots` saw, one entry per trial.

    Attributes:
        torn: Snapshots with ``ok + errors != requests``.
        taken: Snapshots the dashboard took.
        lost: Requests missing from the final snapshot (lost updates).
    """

    torn: list[int] = field(default_factory=list)
    taken: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)

    @property
    def broken_trials(self) -> int:
        """Trials with at least one torn snapshot or lost update."""
        return sum(1 for t, lost in zip(self.torn, self.lost, strict=True) if t or lost)


def torn_snapshots(metrics_class: Callable[[], Any], handle: Callable[[Any, Any, Any], Any],
                   model: Any, *, trials: int, threads: int = 3,
                   requests: int = 40) -> SnapshotTrials:
    """Serve real requests from ``threads`` real threads while a dashboard takes snapshots.

    Each serving thread calls ``handle(model, batch, metrics)`` ``requests`` times; every
    fifth batch has one feature too many, so Keras raises and ``handle`` counts an error. A
    dashboard thread takes snapshots the whole time and counts those with
    ``ok + errors != requests``.
    """
    features = model.input_shape[-1]
    batches = [request_batch(8, features=features + 1) if k % 5 == 4
               else request_batch(7, features=features) for k in range(requests)]
    seen = SnapshotTrials()
    for _ in range(trials):
        torn, taken, lost = _torn_once(metrics_class(), handle, model, batches, threads)
        seen.torn.append(torn)
        seen.taken.append(taken)
        seen.lost.append(lost)
    return seen


def _torn_once(metrics: Any, handle: Callable[[Any, Any, Any], Any], model: Any,
               batches: list[np.ndarray], threads: int) -> tuple[int, int, int]:
    done = threading.Event()
    torn = taken = 0

    def serve(_index: int) -> None:
        for batch in batches:
            try:
                handle(model, batch, metrics)
            except Exception:  # noqa: BLE001 - a failed request is counted, not fatal
                pass

    def dashboard() -> None:
        nonlocal torn, taken
        while not done.is_set():
            snap = metrics.snapshot()
            taken += 1
            torn += snap["ok"] + snap["errors"] != snap["requests"]
            time.sleep(0)  # let the serving threads have the GIL between snapshots

    watcher = threading.Thread(target=dashboard)
    watcher.start()
    try:
        run_threads(serve, threads)
    finally:
        done.set()
        watcher.join()
    return torn, taken, threads * len(batches) - metrics.snapshot()["requests"]


def concurrent_mismatches(model: Any, *, trials: int, threads: int = 4,
                          batches: int = 32) -> list[int]:
    """Serve a warm model from real threads with no lock; outputs unlike one thread's, per trial.

    ``threads`` threads share ``batches`` batches and call ``model.predict_on_batch`` on them
    at once, with the interpreter switching threads as often as it can
    (``sys.setswitchinterval(1e-6)``, restored afterwards). Each output is compared exactly
    with the output of the same batch computed beforehand on this thread alone.
    """
    features = model.input_shape[-1]
    inputs = [request_batch(2000 + k, features=features) for k in range(batches)]
    expected = [np.asarray(model.predict_on_batch(x)) for x in inputs]
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        return [_mismatches_once(model, inputs, expected, threads) for _ in range(trials)]
    finally:
        sys.setswitchinterval(previous)


def _mismatches_once(model: Any, inputs: list[np.ndarray], expected: list[np.ndarray],
                     threads: int) -> int:
    outputs: list[Any] = [None] * len(inputs)

    def serve(index: int) -> None:
        for k in range(index, len(inputs), threads):
            outputs[k] = model.predict_on_batch(inputs[k])

    run_threads(serve, threads)
    return sum(not np.array_equal(np.asarray(got), want)
               for got, want in zip(outputs, expected, strict=True))


@dataclass
class Throughput:
    """Requests per second for one way of serving, and the runs behind the median."""

    label: str
    threads: int
    per_second: float
    runs: list[float] = field(default_factory=list)


def serving_throughput(configs: Sequence[tuple[str, Callable[[], Any], int]], *, calls: int,
                       repeats: int) -> list[Throughput]:
    """Requests per second of several ways of serving, measured in turns.

    Each config is ``(label, serve, threads)``: ``threads`` real threads share ``calls`` calls
    of ``serve()`` (``calls // threads`` each), so every run does the same work. Every config
    runs once unmeasured (warm-up), then the configs take turns, ``repeats`` rounds, so that a
    busy moment on the machine hits all of them alike; each result is the median of its rounds.
    """
    def once(serve: Callable[[], Any], threads: int) -> float:
        each = max(1, calls // threads)

        def target(_index: int) -> None:
            for _ in range(each):
                serve()

        return threads * each / run_threads(target, threads)

    for _, serve, threads in configs:
        once(serve, threads)
    runs: list[list[float]] = [[] for _ in configs]
    for _ in range(repeats):
        for index, (_, serve, threads) in enumerate(configs):
            runs[index].append(once(serve, threads))
    return [Throughput(label, threads, statistics.median(r), r)
            for (label, _, threads), r in zip(configs, runs, strict=True)]


def paired_ratio(top: Throughput, bottom: Throughput) -> float:
    """Median over rounds of ``top``'s rate divided by ``bottom``'s rate in the same round.

    Both were measured in the same rounds of :func:`serving_throughput`, a moment apart, so a
    busy moment on the machine divides out instead of landing on one side of the ratio.
    """
    return statistics.median(t / b for t, b in zip(top.runs, bottom.runs, strict=True))


def plot_throughput(rows: Sequence[Throughput], title: str) -> Any:
    """A horizontal bar chart of :class:`Throughput` rows (a headless matplotlib Figure)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 0.5 + 0.45 * len(rows)), layout="constrained")
    axes = figure.add_subplot()
    labels = [f"{row.label}, {row.threads} thread{'s' if row.threads > 1 else ''}"
              for row in rows]
    values = [row.per_second for row in rows]
    colours = ["#4C72B0" if "no lock" in row.label else "#C44E52" for row in rows]
    axes.barh(range(len(rows)), values, color=colours)
    for index, value in enumerate(values):
        axes.text(value, index, f" {value:,.0f}/s", va="center", fontsize=8)
    axes.set_yticks(range(len(rows)), labels)
    axes.invert_yaxis()
    axes.set_xlabel("requests per second (median of runs)")
    axes.set_xlim(0, max(values) * 1.2)
    axes.set_title(title, fontsize=10)
    return figure
