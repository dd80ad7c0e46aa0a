"""The notebook's live trials, pictures ("See it break") and memory sampler ("Measure it")."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.kit import keras_variable_bytes, run_together
from autograder.checks.variables.model import probe, read_versions, version_weights
from autograder.checks.variables.settings import LAYERS


@dataclass
class CounterRun:
    """What a counter trial series did.

    Attributes:
        expected: Increments made per trial.
        counts: The variable's final value in each trial.
        seconds: Wall time of each trial.
    """

    expected: int
    counts: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def losing_trials(self) -> int:
        """Trials that ended with fewer than ``expected``."""
        return sum(count != self.expected for count in self.counts)

    @property
    def lost_share(self) -> float:
        """Share of all increments lost, over all trials."""
        return 1.0 - sum(self.counts) / (self.expected * len(self.counts))

    def __str__(self) -> str:
        return (f"lost updates in {self.losing_trials} of {len(self.counts)} trials, "
                f"{self.lost_share:.1%} of {self.expected * len(self.counts)} increments")


#: How long :func:`blocks_the_other` keeps the first critical section busy (seconds).
HOLD_S = 1.0


def blocks_the_other(first: Any, second: Any, *, hold_s: float = HOLD_S) -> bool:
    """Whether ``second.execute`` has to wait while another thread is inside ``first``.

    A real thread runs ``first.execute`` around a ``tf.py_function`` that signals it is inside,
    then sleeps ``hold_s``. Once it is inside, this thread runs a one-op function in
    ``second``. Decided by order, not by a timing threshold: True when ``second`` returned
    only after ``first`` was released.
    """
    import tensorflow as tf

    inside, released = threading.Event(), threading.Event()

    def hold() -> int:
        inside.set()
        time.sleep(hold_s)
        released.set()
        return 0

    holder = threading.Thread(
        target=lambda: first.execute(lambda: tf.py_function(hold, [], tf.int32)), daemon=True)
    holder.start()
    if not inside.wait(30):
        raise RuntimeError("the first critical section never ran its function")
    second.execute(lambda: tf.constant(0))
    waited = released.is_set()
    holder.join(30)
    return waited


def count_increments(increment: Callable[[Any], Any], *, threads: int = 4,
                     calls: int = 200, per_call: int = 1, trials: int = 5) -> CounterRun:
    """Call ``increment(v)`` ``calls`` times from each of ``threads`` real threads at once.

    Each trial starts from a fresh ``tf.Variable(0, dtype=tf.int64)``; the threads are
    released together and the interpreter's switch interval is left as it is.

    Args:
        increment: Adds ``per_call`` to the variable it is given.
        threads: Threads per trial.
        calls: Calls per thread.
        per_call: How much one call adds.
        trials: Number of trials.
    """
    import tensorflow as tf

    run = CounterRun(expected=threads * calls * per_call)
    warm = tf.Variable(0, dtype=tf.int64)
    increment(warm)
    for _ in range(trials):
        variable = tf.Variable(0, dtype=tf.int64)

        def body(variable: Any = variable) -> None:
            for _ in range(calls):
                increment(variable)

        run.seconds.append(run_together([body] * threads))
        run.counts.append(int(variable.numpy()))
    return run


@dataclass
class TicketRun:
    """Step numbers handed out in a series of trials.

    Attributes:
        handed_out: Numbers returned per trial.
        duplicates: How many numbers were handed out more than once, per trial.
    """

    handed_out: int
    duplicates: list[int] = field(default_factory=list)

    def __str__(self) -> str:
        bad = sum(d > 0 for d in self.duplicates)
        return (f"duplicate step numbers in {bad} of {len(self.duplicates)} trials "
                f"({sum(self.duplicates)} duplicates among {self.handed_out * len(self.duplicates)}"
                " numbers)")


def duplicate_tickets(next_number: Callable[[Any], Any], *, threads: int = 4, calls: int = 200,
                      trials: int = 5) -> TicketRun:
    """Have ``threads`` real threads each take ``calls`` numbers from ``next_number(v)`` at once.

    ``next_number(v)`` should add one to the ``tf.Variable`` ``v`` and return the new count;
    every number should come out exactly once.
    """
    import tensorflow as tf

    run = TicketRun(handed_out=threads * calls)
    next_number(tf.Variable(0, dtype=tf.int64))
    for _ in range(trials):
        variable = tf.Variable(0, dtype=tf.int64)
        numbers: list[int] = []

        def body(variable: Any = variable, numbers: list[int] = numbers) -> None:
            mine = [int(next_number(variable)) for _ in range(calls)]
            numbers.extend(mine)

        run_together([body] * threads)
        run.duplicates.append(sum(n - 1 for n in Counter(numbers).values() if n > 1))
    return run


@dataclass
class Read:
    """One forward pass a reader made: when, on which thread, and the versions it saw."""

    reader: int
    start: float
    end: float
    versions: np.ndarray

    @property
    def torn(self) -> bool:
        return bool(self.versions.min() != self.versions.max())


@dataclass
class ServeRun:
    """One trial of serving while training.

    Attributes:
        reads: Every forward pass, in the order the readers finished them.
        updates: Writer steps made.
        writer_span: ``(start, end)`` of the writer, seconds since the release.
    """

    reads: list[Read] = field(default_factory=list)
    updates: int = 0
    writer_span: tuple[float, float] = (0.0, 0.0)

    @property
    def torn(self) -> int:
        return sum(read.torn for read in self.reads)

    @property
    def torn_share(self) -> float:
        return self.torn / max(1, len(self.reads))


def serve_while_training(model: Any, train_step: Callable[[Any, int], Any],
                         serve: Callable[[Any, np.ndarray], Any], *, updates: int = 20,
                         readers: int = 1, batch: np.ndarray | None = None,
                         layers: int = LAYERS) -> ServeRun:
    """Train ``model`` on one real thread while ``readers`` real threads serve it.

    The writer calls ``train_step(model, k)`` for ``k = 1 .. updates``. Each reader calls
    ``serve(model, batch)`` again and again until the writer is done (a fixed number of reads
    could finish before the writer starts, and prove nothing), and every output is decoded
    with :func:`read_versions`.

    Args:
        model: What both sides share: a :func:`versioned_model`, or anything ``train_step``
            and ``serve`` know how to use (a publisher wrapping one).
        batch: What readers send; default :func:`probe` of the default model size.
        layers: The model's number of layers, to decode the outputs.
    """
    batch = probe(model if hasattr(model, "weights") else None) if batch is None else batch
    serve(model, batch)
    run = ServeRun(updates=updates)
    done = threading.Event()
    origin: list[float] = []

    def writer() -> None:
        start = time.perf_counter()
        try:
            for k in range(1, updates + 1):
                train_step(model, k)
        finally:
            done.set()
            run.writer_span = (start - origin[0], time.perf_counter() - origin[0])

    def reader(index: int) -> Callable[[], None]:
        def body() -> None:
            mine = []
            while not done.is_set():
                start = time.perf_counter()
                outputs = serve(model, batch)
                mine.append(Read(index, start - origin[0], time.perf_counter() - origin[0],
                                 read_versions(outputs, layers)))
            run.reads.extend(mine)
        return body

    origin.append(time.perf_counter())
    run_together([writer, *[reader(i) for i in range(readers)]])
    run.reads.sort(key=lambda read: read.end)
    return run


def plot_reads(run: ServeRun, title: str = "", limit: int = 60) -> Any:
    """Draw the versions each forward pass saw: one column per pass, one row per layer.

    A whole pass is one colour from top to bottom; a torn pass changes colour partway down,
    and is marked with a red triangle. The writer's busy time is shaded on the time axis below.
    """
    from matplotlib.figure import Figure

    reads = run.reads[:limit]
    figure = Figure(figsize=(9, 4.2), layout="constrained")
    top, bottom = figure.subplots(2, 1, height_ratios=[3, 1])
    if not reads:
        top.set_title("no reads")
        return figure
    grid = np.stack([read.versions for read in reads], axis=1)
    image = top.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
    top.set_ylabel("layer")
    top.set_xlabel("forward pass (in the order they finished)")
    for column, read in enumerate(reads):
        if read.torn:
            top.plot(column, -0.9, marker="v", color="#C44E52", markersize=7, clip_on=False)
    figure.colorbar(image, ax=top, label="version the layer had")
    torn = sum(read.torn for read in reads)
    shown = f"the first {len(reads)} of {len(run.reads)} passes" if len(run.reads) > limit else \
        f"{len(reads)} passes"
    top.set_title(title or f"{torn} torn (red triangles) in {shown}", fontsize=10)
    start, end = run.writer_span
    bottom.axvspan(start * 1e3, end * 1e3, color="#CCB974", alpha=0.4, label="writer busy")
    for read in reads:
        colour = "#C44E52" if read.torn else "#4C72B0"
        bottom.plot([read.start * 1e3, read.end * 1e3], [read.reader, read.reader],
                    color=colour, linewidth=4, solid_capstyle="butt")
    bottom.set_yticks(sorted({read.reader for read in reads}),
                      [f"reader {i}" for i in sorted({read.reader for read in reads})])
    bottom.set_xlabel("milliseconds since the threads were released")
    bottom.legend(loc="upper right", fontsize=8)
    return figure


def extra_weight_bytes(publisher_class: Callable[[Any], Any], model: Any, *, readers: int = 2
                       ) -> int:
    """Bytes of Keras weights a publisher adds to ``model``'s own, counted at its peak.

    Wraps the warm ``model`` in ``publisher_class``; ``readers`` real threads each serve one
    request and stay alive (a per-thread copy lives as long as its thread) while one new
    version is published. Counts the bytes of the Keras variables alive (every weight of
    every model, found through ``gc``) after the readers served and again after the publish,
    and returns the larger count minus the count before the publisher was made. Weights kept
    as numpy arrays (``get_weights()``) are not counted.
    """
    weights = version_weights(1, model)
    batch = probe(model)
    served = threading.Barrier(readers + 1)
    release = threading.Event()
    before = keras_variable_bytes()
    counts: list[int] = []

    def extra() -> int:
        now = keras_variable_bytes()
        return sum(size for key, size in now.items() if key not in before)

    publisher = publisher_class(model)

    def reader() -> None:
        publisher.predict(batch)
        served.wait()
        release.wait()

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(readers)]
    for thread in threads:
        thread.start()
    try:
        served.wait()
        counts.append(extra())
        publisher.publish(weights)
        counts.append(extra())
    finally:
        release.set()
        for thread in threads:
            thread.join()
    return max(counts)
