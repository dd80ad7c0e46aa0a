"""The notebook's live demonstrations ("See it break") and the timeline picture."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.kit import describe_error, released_together
from autograder.checks.tfdata.fast import FastRun
from autograder.checks.tfdata.records import _describe, _identify, _values, record
from autograder.checks.tfdata.settings import WIDTH


@dataclass
class Trials:
    """Counts from a live demonstration: ``broken`` of ``runs`` trials, plus what was seen."""

    broken: int = 0
    runs: int = 0
    seen: list[str] = field(default_factory=list)


def shared_generator_trials(make_generator: Callable[[], Any], *, trials: int,
                            threads: int = 2) -> Trials:
    """Share one generator between ``threads`` real threads; count trials that raised."""
    out = Trials()
    for _ in range(trials):
        errors, _seen = _drain_together(make_generator(), threads)
        out.runs += 1
        if errors:
            out.broken += 1
            out.seen.append(describe_error(errors[0]))
    return out


def _drain_together(iterable: Any, threads: int) -> tuple[list[BaseException],
                                                          list[list[int | None]]]:
    """Iterate ``iterable`` from ``threads`` threads at once: their errors, what each saw."""
    seen: list[list[int | None]] = [[] for _ in range(threads)]

    def drain(k: int) -> Callable[[], None]:
        return lambda: seen[k].extend(_identify(_values(x)) for x in iterable)

    errors = [e for e in released_together([drain(k) for k in range(threads)])[1] if e is not None]
    return errors, seen


def concurrent_iterations(dataset_factory: Callable[[], Any], *, trials: int,
                          records: int, threads: int = 2) -> Trials:
    """Iterate one dataset from ``threads`` threads at once; count trials where one of them
    raised, lost a record, saw one twice, or saw a corrupt one."""
    out = Trials()
    for _ in range(trials):
        errors, seen = _drain_together(dataset_factory(), threads)
        out.runs += 1
        problems = [p for p in (_describe(got, records) for got in seen) if p]
        if errors:
            out.broken += 1
            out.seen.append(describe_error(errors[0]))
        elif problems:
            out.broken += 1
            out.seen.append(problems[0])
    return out


def reused_buffer_trials(*, trials: int, batches: int = 20, batch_size: int = 4,
                         read_s: float = 0.001, step_s: float = 0.002) -> Trials:
    """A hand-rolled loader: a producer thread fills ONE numpy buffer per batch and puts it on
    a queue; the training loop takes batches off it and works ``step_s`` on each. Count
    corrupt batches (rows that are not the batch's own records)."""
    out = Trials()
    for _ in range(trials):
        out.broken += _reused_buffer_once(batches, batch_size, read_s, step_s)
        out.runs += batches
    return out


def _reused_buffer_once(batches: int, batch_size: int, read_s: float, step_s: float) -> int:
    q: queue.Queue = queue.Queue(maxsize=4)
    buffer = np.empty((batch_size, WIDTH), dtype="float32")

    def produce() -> None:
        for b in range(batches):
            for row in range(batch_size):
                time.sleep(read_s)
                buffer[row] = record(b * batch_size + row)
            q.put((b, buffer))
        q.put(None)

    threading.Thread(target=produce, daemon=True).start()
    corrupt = 0
    while (item := q.get()) is not None:
        b, batch = item
        time.sleep(step_s)
        expected = np.stack([record(b * batch_size + r) for r in range(batch_size)])
        corrupt += not np.array_equal(batch, expected)
    return corrupt


def plot_timeline(runs: Sequence[tuple[str, FastRun]]) -> Any:
    """One panel per run: a lane per stage (read, transform, train), bars where it ran."""
    from matplotlib.figure import Figure

    colors = {"read": "tab:blue", "transform": "tab:orange", "train": "tab:green"}
    figure = Figure(figsize=(9, 1.3 * len(runs) + 0.4), layout="constrained")
    axes_list = figure.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    for axes, (title, run) in zip(axes_list, runs, strict=True):
        origin = min((s for _w, _t, s, _e in run.log), default=0.0)
        for lane, stage in enumerate(("read", "transform", "train")):
            spans = [(s - origin, e - s) for what, _t, s, e in run.log if what == stage]
            # Parallel calls of one stage stack inside its lane.
            ends: list[float] = []
            for start, width in sorted(spans):
                slot = next((k for k, end in enumerate(ends) if end <= start), len(ends))
                if slot == len(ends):
                    ends.append(0.0)
                ends[slot] = start + width
                axes.broken_barh([(start * 1000, width * 1000)],
                                 (2 - lane - 0.4 + 0.8 * slot / 3, 0.8 / 3 - 0.02),
                                 color=colors[stage], edgecolor="white", linewidth=0.5)
        axes.set_yticks([2, 1, 0], ["read", "transform", "train"])
        axes.set_title(f"{title}: {run.pipeline_s * 1000:.0f} ms, {run.speedup:.2f}x the "
                       f"naive loop", fontsize=10, loc="left")
    axes_list[-1].set_xlabel("time since the first call (ms)")
    return figure
