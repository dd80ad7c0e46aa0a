"""Graded properties for lesson 03, "variables": tf.Variable updates and torn model weights.

Two races live inside TensorFlow ops, where the GIL is released and nothing in Python orders
them:

- ``v.assign(v + 1)`` from several threads: each thread reads ``v``, adds one and writes the
  sum back, so two threads that read the same value write the same sum and one update is lost.
  ``v.assign_add(1)`` is one op that reads and writes under the variable's lock; but the value
  it returns is read again later, so it is not the value that this call made.
- a model trained (``set_weights``, an optimizer step, ``fit``) on one thread while another
  serves it: the writer assigns the layers one after the other, the reader's forward pass
  reads them one after the other, and a pass that runs in between mixes two versions.

The torn-read detector is :func:`versioned_model`: a stack of ``Dense`` layers whose biases
hold a version number, built so that one forward pass returns every layer's version
(:func:`read_versions`). A pass that saw one version in every layer is whole; a pass that saw
several is torn. Training it with SGD (learning rate 1, gradients of minus one) raises every
layer's version by exactly one per step, so the same detector works for ``set_weights``,
optimizer steps and ``fit``.

Graded checks (each a property under load, fixed seeds and counts, no retries):

- :func:`check_step_counter`: steps recorded from many threads are never lost and every call
  gets its own step number (1, 2, 3, ... with no duplicate and no gap). ``explore`` runs the
  Python between the TF ops in every order it can find; ``stress`` runs real threads for
  races inside the ops.
- :func:`check_publisher`: while one thread publishes new weights, readers keep serving until
  it is done; no reader ever sees a mix of versions, a version never goes backwards, and a
  read that starts after ``publish`` returned sees that version or a newer one. ``stress``
  with the real model for races inside Keras, then ``explore`` for the Python around it (a
  version counter, a reference swapped too early).
- :func:`check_choice`: ``choose_publisher`` measures candidate publishers the grader built
  (their costs are simulated with sleeps, their races are real) and must report what really
  happened (reads and torn reads exactly, rates roughly, readers running until the writer was
  done and no longer), and its choice must follow the rule from its own measurements.

Plumbing for the notebook lives here too: the live trials of "See it break", the pictures,
and the memory sampler of "Measure it".
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.cache import memo
from autograder.checks.kit import keras_variable_bytes, run_together
from autograder.checks.plain import NotPlainData, plain, plain_array
from autograder.checks.report import call_text, require_ok
from autograder.harness import Result, explore, stress

#: Layers of the versioned model; one version number per layer.
LAYERS = 8
SEED = 3
TIMEOUT_S = 60.0

# Exercise 1 (StepCounter).
COUNTER_EXPLORE_THREADS = 2
COUNTER_EXPLORE_STEPS = 2
COUNTER_SCHEDULES = 80
COUNTER_STRESS_THREADS = 4
COUNTER_STRESS_STEPS = 200
COUNTER_TRIALS = 3

# Exercise 2 (WeightPublisher).
PUBLISHER_READERS = 2
PUBLISHER_UPDATES = 10
#: A stress writer stops early (after at least PUBLISHER_MIN_UPDATES) once it has been busy
#: this long, so that a publisher that builds a model per publish is graded in seconds.
PUBLISHER_BUDGET_S = 0.3
PUBLISHER_MIN_UPDATES = 3
PUBLISHER_TRIALS = 6
#: Pause between two reads of one stress reader.
READ_GAP_S = 0.0005
PUBLISHER_EXPLORE_UPDATES = 1
#: The explore runs use a 2-layer model: Keras calls are atomic there, so depth adds nothing
#: but the time a per-thread copy or a new model takes to build.
EXPLORE_LAYERS = 2
#: Search bound of the publisher's explore run: every schedule with at most
#: PUBLISHER_DEVIATIONS preemptions or other departures from round-robin order, the reader
#: going first (15-200 schedules for the answers in the tests), then PUBLISHER_SAMPLES seeded
#: PCT/random schedules; PUBLISHER_SCHEDULES caps the whole. Two, because a reader slipping
#: into a readers-writer handshake without a lock needs two switches (issue #18, class 1:
#: found at schedule 26). The grader's own loops are glue (no decision points), so the bound
#: is spent on the answer's code and the layer boundary.
EXPLORE_STRATEGY = "auto"
PUBLISHER_DEVIATIONS = 2
PUBLISHER_SAMPLES = 20
PUBLISHER_SCHEDULES = 600
#: The version a graded model starts at; publishes count up from the next one. Not 0: a model
#: built from scratch (a clone before its weights are set) reads as version 0.
FIRST_VERSION = 1

# Exercise 3 (choose_publisher): what the grader asks for.
CHOICE_READERS = 2
CHOICE_UPDATES = 2
CHOICE_INTERVAL_S = 0.015
CHOICE_MIN_UPDATES_PER_S = 12.0


# --------------------------------------------------------------------------- the model


def _kernel(index: int, width: int) -> np.ndarray:
    """Layer ``index``'s frozen kernel: the identity, except that it drops coordinate ``index``."""
    kernel = np.eye(width, dtype="float32")
    kernel[index, index] = 0.0
    return kernel


def _bias(index: int, version: float, width: int) -> np.ndarray:
    """Layer ``index``'s bias at ``version``: the version in coordinates ``0 .. index``."""
    return np.where(np.arange(width) <= index, np.float32(version), np.float32(0.0)).astype(
        "float32")


def versioned_model(layers: int = LAYERS, *, width: int | None = None) -> Any:
    """A built Keras model whose forward pass reports the version of each of its layers.

    ``layers`` ``Dense`` layers of ``width`` units (at least ``layers``; default ``layers``).
    Layer ``i`` has a frozen kernel (not trainable) that copies its input but drops coordinate
    ``i``, and a bias that holds the layer's version ``v_i`` in coordinates ``0 .. i``. After
    the last layer, output coordinate ``j < layers`` is ``v_j + v_{j+1} + ... + v_last``
    whatever the input, so :func:`read_versions` recovers every ``v_i`` from one output row.
    All layers start at version 0. Only the biases are trainable: SGD with learning rate 1 on
    the loss ``-sum(output)`` raises every layer's version by exactly 1 per step.

    Args:
        layers: Number of layers, hence of version numbers per pass.
        width: Units per layer; extra units only add parameters (and memory).
    """
    import keras

    width = layers if width is None else width
    if width < layers:
        raise ValueError(f"width must be at least layers ({layers}), got {width}")
    inputs = keras.Input((width,), name="requests")
    hidden = inputs
    for index in range(layers):
        dense = keras.layers.Dense(width, name=f"layer_{index}")
        hidden = dense(hidden)
        dense.kernel.assign(_kernel(index, width))
        dense.kernel.trainable = False
        dense.bias.assign(_bias(index, 0.0, width))
    return keras.Model(inputs, hidden, name=f"versioned_{layers}x{width}")


def _shape(model: Any | None) -> tuple[int, int]:
    if model is None:
        return LAYERS, LAYERS
    weights = model.weights
    return len(weights) // 2, int(weights[0].shape[-1])


def version_weights(version: int, model: Any | None = None) -> list[np.ndarray]:
    """The full weight list (``set_weights`` order) that puts every layer at ``version``.

    Args:
        version: The version number every layer gets.
        model: A :func:`versioned_model`, to match its size; default the default size.
    """
    layers, width = _shape(model)
    weights: list[np.ndarray] = []
    for index in range(layers):
        weights += [_kernel(index, width), _bias(index, version, width)]
    return weights


def probe(model: Any | None = None, rows: int = 1) -> np.ndarray:
    """A batch to send a :func:`versioned_model` (its content does not matter: zeros)."""
    _, width = _shape(model)
    return np.zeros((rows, width), dtype="float32")


def read_versions(outputs: Any, layers: int = LAYERS) -> np.ndarray:
    """The version each layer had during the forward pass that produced ``outputs``.

    Args:
        outputs: What the model returned for one batch (a tensor or an array; row 0 is read).
        layers: The model's number of layers.

    Returns:
        An int array, one version per layer, first layer first.
    """
    row = np.asarray(outputs, dtype="float64").reshape(-1, np.shape(outputs)[-1])[0][:layers]
    versions = np.append(row[:-1] - row[1:], row[-1])
    return np.rint(versions).astype(int)


def is_torn(outputs: Any, layers: int = LAYERS) -> bool:
    """True when the forward pass behind ``outputs`` mixed layers of different versions."""
    versions = read_versions(outputs, layers)
    return bool(versions.min() != versions.max())


def parameter_bytes(model: Any) -> int:
    """Bytes of one copy of ``model``'s weights, counted from their shapes and dtypes."""
    return int(sum(np.prod(w.shape) * np.dtype(w.dtype).itemsize for w in model.weights))


def compile_for_versions(model: Any) -> Any:
    """Compile a :func:`versioned_model` so that each ``fit`` step raises every version by 1."""
    import keras
    from keras import ops

    def minus_sum(y_true: Any, y_pred: Any) -> Any:
        return -ops.sum(y_pred, axis=-1)

    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), loss=minus_sum)
    return model


def version_step_gradients(model: Any) -> list[np.ndarray]:
    """Gradients for ``model.trainable_variables`` that one SGD step (rate 1) turns into +1."""
    layers, width = _shape(model)
    return [-_bias(index, 1.0, width) for index in range(layers)]


# --------------------------------------------------------------------------- live trials


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


# --------------------------------------------------------------------------- shared grading


def _require(result: Result, *, exercise: str, hints: Mapping[str, str], run: str,
             options: Mapping[str, Any]) -> None:
    """:func:`require_ok`, with a hint in the exercise's terms for some verdicts and how to
    see the run again (``variables.<run>(<exercise>, **options)``)."""
    require_ok(result, exercise=exercise, hint=hints.get(result.verdict),
               again=call_text(f"variables.{run}", exercise, **options))


def _smoke(exercise: str, attempt: Callable[[], Any]) -> None:
    """Run the answer once on this thread; an error here is reported before any thread runs."""
    try:
        attempt()
    except AssertionError as failure:
        raise AssertionError(f"{exercise}: used on one thread: {failure}") from None
    except Exception as error:  # noqa: BLE001 - reported to the student, in their terms
        lines = str(error).strip().splitlines()
        first = f": {lines[0]}" if lines else ""
        raise AssertionError(
            f"{exercise}: used on one thread it raised {type(error).__name__}{first} (before "
            "any threads were started). Make it work on one thread first.") from None


# --------------------------------------------------------------------------- exercise 1


@dataclass
class CounterTrial:
    """Shared state of one step-counter run: the counter and what its ``step()`` calls returned
    (per thread; turned into step numbers by the check)."""

    counter: Any
    numbers: list[list[Any]]


def _step_number(value: Any, what: str = "step()") -> int:
    """What one ``step()`` call returned, as an int read as plain data.

    Python and NumPy numbers are read through the built-in types (never the value's own
    methods); a tensor or ``tf.Variable`` as an array of one number, as ``int()`` reads it.

    Raises:
        NotPlainData: (an AssertionError) when it is not one number.
    """
    import tensorflow as tf

    if issubclass(type(value), (np.ndarray, tf.Tensor, tf.Variable)):
        array = plain_array(value, what)
        if array.size != 1:
            raise NotPlainData(f"{what} returned {array.size} numbers; expected one step number")
        value = array.item()
    return int(plain(value, what, (int, float)))


def _steps_variable(counter: Any) -> Any:
    """``counter.steps``, which must be TensorFlow's own variable (by its real type: a subclass
    could report any count from ``numpy()``, any object can claim a ``__class__``)."""
    from tensorflow.python.ops.resource_variable_ops import ResourceVariable

    steps = getattr(counter, "steps", None)
    if type(steps) is not ResourceVariable:
        raise AssertionError(f"counter.steps is {type(steps).__name__}, expected the "
                             "tf.Variable that counts the steps (made by tf.Variable(...))")
    return steps


def _counter_check(expected: int) -> Callable[[CounterTrial], None]:
    def check(trial: CounterTrial) -> None:
        recorded = int(_steps_variable(trial.counter).numpy())
        if recorded != expected:
            raise AssertionError(
                f"expected steps == {expected} after {expected} calls to step(), saw "
                f"{recorded}: {expected - recorded} steps were lost (two threads read the same "
                "count and both wrote count + 1)" if recorded < expected else
                f"expected steps == {expected} after {expected} calls to step(), saw "
                f"{recorded}")
        by_thread = [[_step_number(n) for n in mine] for mine in trial.numbers]
        numbers = [n for mine in by_thread for n in mine]
        counts = Counter(numbers)
        repeated = sorted(n for n, c in counts.items() if c > 1)
        if repeated:
            raise AssertionError(
                f"expected every call to step() to get its own step number, but "
                f"{counts[repeated[0]]} calls got the same number {repeated[0]} "
                f"({len(repeated)} numbers handed out more than once): a call read the count "
                "after another thread had already added to it")
        if sorted(numbers) != list(range(1, expected + 1)):
            missing = sorted(set(range(1, expected + 1)) - set(numbers))[:5]
            raise AssertionError(
                f"expected step() to return each of 1 .. {expected} once, but "
                + (f"{missing} never came out" if missing else
                   f"it returned {sorted(set(numbers) - set(range(1, expected + 1)))[:5]}"))
        for mine in by_thread:
            if mine != sorted(mine):
                raise AssertionError(
                    f"expected later calls on one thread to get later step numbers, but one "
                    f"thread got {mine[:6]}")
    return check


def _counter_workers(steps: int, threads: int) -> list[Callable[[CounterTrial], None]]:
    def worker(index: int) -> Callable[[CounterTrial], None]:
        def run(trial: CounterTrial) -> None:
            mine = trial.numbers[index]
            for _ in range(steps):
                mine.append(trial.counter.step())
        return run
    return [worker(i) for i in range(threads)]


def run_step_counter_explore(counter_class: Callable[[], Any], *, seed: int = SEED,
                             schedules: int = COUNTER_SCHEDULES) -> Result:
    """Two threads call ``step()`` twice each under ``explore``, ``tf.function``s run eagerly.

    TF ops run atomically; the scheduler switches between them, wherever the answer's Python
    lets another thread in (between a read and a write, between an update and a read-back).
    A ``tf.function`` is run eagerly (``tf.config.run_functions_eagerly``) with its body
    interleaved (``explore(..., callbacks=True)``), so each of its ops is one step: an
    ``assign_add`` and a separate read-back inside one ``tf.function`` hand out a duplicate
    number in a schedule the bounded search always reaches (issue #18, class 4; real threads
    found it in 5 of 7 grading runs). Sound for failing: graph mode runs a function's stateful
    ops in program order and never as one atomic step, so every interleaving of the eager ops
    is one graph mode allows (Python inside a function, such as a lock taken while tracing,
    runs on every eager call, so eager mode can only hide a race, never add one).

    Search bound: every schedule with at most one preemption (26-50 schedules for the answers
    in the tests), then seeded samples up to ``schedules``.
    """
    import tensorflow as tf

    threads, steps = COUNTER_EXPLORE_THREADS, COUNTER_EXPLORE_STEPS

    def setup() -> CounterTrial:
        return CounterTrial(counter_class(), [[] for _ in range(threads)])

    eager = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        return explore(setup, _counter_workers(steps, threads), _counter_check(threads * steps),
                       seed=seed, max_schedules=schedules, timeout_s=TIMEOUT_S, callbacks=True)
    finally:
        tf.config.run_functions_eagerly(eager)


def run_step_counter_stress(counter_class: Callable[[], Any], *, seed: int = SEED,
                            trials: int = COUNTER_TRIALS) -> Result:
    """Four real threads call ``step()`` 50 times each, released together, per trial."""
    threads, steps = COUNTER_STRESS_THREADS, COUNTER_STRESS_STEPS

    def setup() -> CounterTrial:
        return CounterTrial(counter_class(), [[] for _ in range(threads)])

    return stress(setup, _counter_workers(steps, threads), _counter_check(threads * steps),
                  trials=trials, seed=seed, timeout_s=TIMEOUT_S)


_COUNTER_HINTS = {
    "race": "make the update one atomic operation on the variable, and make sure the number "
            "a call returns is the one its own update produced, not a later read.",
    "deadlock": "a thread waits for a lock nobody will release (a Lock taken twice by the "
                "same thread, or a lock not released).",
}


def check_step_counter(counter_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a step counter class: ``stress`` (real threads) first, then ``explore``.

    Engines and bounds: ``stress``, 3 trials of 4 real threads x 200 steps (races inside TF
    ops, such as ``assign(v + 1)``); then ``explore`` of 2 threads x 2 steps with
    ``tf.function`` bodies run eagerly, op by op (:func:`run_step_counter_explore`): every
    schedule with at most one preemption, then seeded samples up to 80 schedules. A race in
    the Python around or inside the TF calls fails every run, whatever the seed.
    """
    def once() -> None:
        counter = counter_class()
        _steps_variable(counter)
        first, second = _step_number(counter.step()), _step_number(counter.step())
        assert (first, second) == (1, 2), f"two calls to step() returned {first}, {second}, " \
            "expected 1, 2"
    _smoke("StepCounter", once)
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k != "trials"}
    _require(run_step_counter_stress(counter_class, **stress_kwargs), exercise="StepCounter",
             hints=_COUNTER_HINTS, run="run_step_counter_stress", options=stress_kwargs)
    _require(run_step_counter_explore(counter_class, **explore_kwargs), exercise="StepCounter",
             hints=_COUNTER_HINTS, run="run_step_counter_explore", options=explore_kwargs)


# --------------------------------------------------------------------------- exercise 2


@dataclass
class PublishTrial:
    """Shared state of one publisher run.

    Attributes:
        publisher: The answer under test.
        published: ``(version, seconds)`` when each ``publish`` returned.
        layers: The model's number of layers.
        reads: Per reader, ``(start, outputs)`` of every read (decoded by the check, so that
            the workers run as little Python as possible between the answer's own steps).
        done: Set when the writer has published everything.
    """

    publisher: Any
    layers: int = LAYERS
    published: list[tuple[int, float]] = field(default_factory=list)
    reads: list[list[tuple[float, Any]]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    clock: Any = None
    errors: list[str] = field(default_factory=list)


def _publisher_check(min_updates: int) -> Callable[[PublishTrial], None]:
    def check(trial: PublishTrial) -> None:
        if trial.errors:
            raise AssertionError(trial.errors[0])
        published = dict(trial.published)
        last_version = FIRST_VERSION + len(published)
        if (sorted(published) != list(range(FIRST_VERSION + 1, last_version + 1))
                or len(published) < min_updates):
            raise AssertionError(f"expected the writer to publish versions from "
                                 f"{FIRST_VERSION + 1} on, it published {sorted(published)}")
        for index, reads in enumerate(trial.reads):
            if not reads:
                raise AssertionError(f"expected reader {index} to make reads, it made none")
            last = FIRST_VERSION
            for start, outputs in reads:
                versions = read_versions(plain_array(outputs, f"reader {index}'s predict()"),
                                         trial.layers)
                if versions.min() != versions.max():
                    raise AssertionError(
                        f"expected every prediction computed with one version in every "
                        f"layer, but reader {index} got one computed with layers of versions "
                        f"{versions.tolist()} (first layer first): a torn read, mixing weights "
                        "of different versions")
                seen = int(versions[0])
                if seen != FIRST_VERSION and seen not in published:
                    raise AssertionError(
                        f"expected predictions of published versions only, but reader {index} "
                        f"got version {seen}, which was never published (the model started "
                        f"at version {FIRST_VERSION}; version 0 is a freshly built model "
                        "whose weights were not set yet)")
                newest = max((v for v, at in published.items() if at < start),
                             default=FIRST_VERSION)
                if seen < newest:
                    raise AssertionError(
                        f"reader {index} started a read after publish() of version {newest} "
                        f"had returned, and got version {seen}: expected version {newest} or "
                        "newer (once publish returns, every later read must see it)")
                if seen < last:
                    raise AssertionError(
                        f"expected versions never to go backwards, but reader {index} got "
                        f"version {last} and then version {seen}")
                last = seen
            if last != last_version:
                raise AssertionError(
                    f"reader {index}'s last read, made after the writer was done, got version "
                    f"{last}: expected the last version published, {last_version}")
    return check


def _publisher_workers(updates: int, readers: int, weights: list[list[np.ndarray]],
                       batch: np.ndarray) -> list[Callable[[PublishTrial], None]]:
    """The writer, and readers that read until the writer is done and then once more."""
    def writer(trial: PublishTrial) -> None:
        try:
            start = trial.clock()
            for version in range(FIRST_VERSION + 1, FIRST_VERSION + updates + 1):
                trial.publisher.publish(weights[version])
                at = trial.clock()
                trial.published.append((version, at))
                if (version - FIRST_VERSION >= PUBLISHER_MIN_UPDATES
                        and at - start > PUBLISHER_BUDGET_S):
                    break
        finally:
            trial.done.set()

    def reader(index: int) -> Callable[[PublishTrial], None]:
        def run(trial: PublishTrial) -> None:
            mine = trial.reads[index]
            while True:
                finished = trial.done.is_set()
                start = trial.clock()
                outputs = trial.publisher.predict(batch)
                mine.append((start, outputs))
                if finished:
                    return
                # Requests arrive, they do not queue back to back: without a gap a plain lock
                # can keep the writer out for seconds (readers retake it before it wakes).
                time.sleep(READ_GAP_S)
        return run

    return [writer, *[reader(i) for i in range(readers)]]


class _ModelPool:
    """A built, warm versioned model; every trial resets it to its first version.

    Built once per process and size (:func:`_pool`): a grading kernel checks one answer, and
    the tests' repeated runs do not pay for building it again.
    """

    def __init__(self, layers: int = LAYERS) -> None:
        self.layers = layers
        self.model = versioned_model(layers)
        self.weights = [version_weights(v, self.model) for v in range(FIRST_VERSION + 17)]
        self.batch = probe(self.model)
        self.model.predict_on_batch(self.batch)
        self.model(self.batch)

    def fresh(self) -> Any:
        self.model.set_weights(self.weights[FIRST_VERSION])
        return self.model


_POOLS = memo("the publisher checks' model pools")


def _pool(layers: int) -> _ModelPool:
    return _POOLS(layers, lambda: _ModelPool(layers))


def run_publisher_stress(publisher_class: Callable[[Any], Any], *, seed: int = SEED,
                         trials: int = PUBLISHER_TRIALS, updates: int = PUBLISHER_UPDATES,
                         readers: int = PUBLISHER_READERS, pool: _ModelPool | None = None
                         ) -> Result:
    """One real writer thread publishes up to ``updates`` versions while ``readers`` serve.

    The writer stops early, after at least :data:`PUBLISHER_MIN_UPDATES` versions, once it has
    been busy :data:`PUBLISHER_BUDGET_S`. Readers keep calling ``predict`` until the writer is
    done (pausing :data:`READ_GAP_S` between two calls), then read once more.
    """
    pool = pool or _pool(LAYERS)

    def setup() -> PublishTrial:
        trial = PublishTrial(publisher_class(pool.fresh()), pool.layers)
        trial.reads = [[] for _ in range(readers)]
        trial.clock = time.perf_counter
        return trial

    workers = _publisher_workers(updates, readers, pool.weights, pool.batch)
    return stress(setup, workers, _publisher_check(min(updates, PUBLISHER_MIN_UPDATES)),
                  trials=trials, seed=seed,
                  timeout_s=TIMEOUT_S)


class _Waypoint:
    """What :func:`_waypoint` reads: shared, so the read is visible to ``explore``."""

    seen = 0


_WAYPOINT = _Waypoint()


def _waypoint(point: _Waypoint) -> None:
    """Exactly one decision point under ``explore`` (one read another thread could see)."""
    point.seen  # noqa: B018


def _stepped_set_weights(model: Any, weights: Sequence[Any]) -> None:
    """``model.set_weights``, one layer per step: what Keras really does, layer after layer.

    Under ``explore`` this is glue (no decision points of its own) with one decision point
    between two layers, so a read can land in the middle of a publish.
    """
    start = 0
    for layer in model.layers:
        count = len(layer.weights)
        if count:
            if start:
                _waypoint(_WAYPOINT)
            layer.set_weights(list(weights[start:start + count]))
            start += count


def _set_layer_by_layer(model: Any) -> None:
    """Make the explore model's ``set_weights`` one step per layer under ``explore``.

    A whole ``set_weights`` is one Keras call, so it would be one atomic step and no read
    could land between two layers: a publisher whose own Python lets a read start while it
    writes (a readers-writer handshake without a lock) would pass ``explore`` and, under the
    GIL, ``stress`` too (issue #18, class 1). Writing layer by layer puts a decision point
    between the layers, as real threads have.
    """
    if "set_weights" not in vars(model):
        object.__setattr__(model, "set_weights", functools.partial(_stepped_set_weights, model))


def run_publisher_explore(publisher_class: Callable[[Any], Any], *, seed: int = SEED,
                          schedules: int = PUBLISHER_SCHEDULES, pool: _ModelPool | None = None
                          ) -> Result:
    """A writer publishes a version while one reader serves twice, under ``explore``.

    Keras calls run atomically here, so this finds races in the Python around them: a version
    number stored apart from the weights it names, a model published before its weights were
    set, a reader let in by a handshake without a lock. The reader (going first) reads once
    while the writer may be publishing, waits until the writer is done, and reads again: that
    last read must see the last version. The workers and the layer-by-layer ``set_weights``
    are glue (no decision points of their own, one between two layers), so the search spends
    its bound (:data:`PUBLISHER_DEVIATIONS` switches) on the answer's code.
    """
    pool = pool or _pool(EXPLORE_LAYERS)
    _set_layer_by_layer(pool.model)
    updates = PUBLISHER_EXPLORE_UPDATES
    weights = pool.weights[FIRST_VERSION + 1:FIRST_VERSION + updates + 1]
    batch = pool.batch

    def setup() -> PublishTrial:
        trial = PublishTrial(publisher_class(pool.fresh()), pool.layers)
        trial.reads = [[]]
        trial.published = [(FIRST_VERSION + 1 + k, float("inf")) for k in range(updates)]
        return trial

    def writer(trial: PublishTrial) -> None:
        publish = trial.publisher.publish
        try:
            for new in weights:
                publish(new)
        finally:
            trial.done.set()

    def reader(trial: PublishTrial) -> None:
        predict, mine = trial.publisher.predict, trial.reads[0]
        mine.append((0.0, predict(batch)))
        trial.done.wait()
        mine.append((0.0, predict(batch)))

    return explore(setup, [reader, writer], _publisher_check(updates), seed=seed,
                   max_schedules=schedules, timeout_s=TIMEOUT_S, strategy=EXPLORE_STRATEGY,
                   deviations=PUBLISHER_DEVIATIONS, samples=PUBLISHER_SAMPLES,
                   glue=(writer, reader, _stepped_set_weights))


_PUBLISHER_HINTS = {
    "race": "a reader must never run the model while publish() is changing the weights it "
            "uses, and once publish() returns every new read must use the new weights.",
    "deadlock": "a thread waits for a lock nobody will release.",
    "error": "a publish() or predict() raised while the other threads were running.",
}


def check_publisher(publisher_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a weight publisher class: ``stress`` (real threads), then ``explore``.

    Engines and bounds: ``stress``, :data:`PUBLISHER_TRIALS` trials of one writer and
    :data:`PUBLISHER_READERS` readers (a torn read inside Keras); then ``explore``
    (:func:`run_publisher_explore`): every schedule with at most
    :data:`PUBLISHER_DEVIATIONS` switches at the answer's shared accesses and the layer
    boundary, then :data:`PUBLISHER_SAMPLES` seeded samples. A race in the Python around the
    Keras calls fails every run, whatever the seed.
    """
    pool = _pool(LAYERS)

    def once() -> None:
        publisher = publisher_class(pool.fresh())
        before = read_versions(plain_array(publisher.predict(pool.batch), "predict()"))
        assert before.tolist() == [FIRST_VERSION] * LAYERS, \
            f"before any publish, predict() served versions {before.tolist()}, expected the " \
            f"model's own version {FIRST_VERSION} in every layer"
        publisher.publish(pool.weights[FIRST_VERSION + 1])
        after = read_versions(plain_array(publisher.predict(pool.batch), "predict()"))
        assert after.tolist() == [FIRST_VERSION + 1] * LAYERS, \
            f"after publish(version {FIRST_VERSION + 1}), predict() served versions " \
            f"{after.tolist()}"

    _smoke("WeightPublisher", once)
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k not in ("trials", "updates",
                                                                    "readers")}
    _require(run_publisher_stress(publisher_class, pool=pool, **stress_kwargs),
             exercise="WeightPublisher", hints=_PUBLISHER_HINTS, run="run_publisher_stress",
             options=stress_kwargs)
    _require(run_publisher_explore(publisher_class, **explore_kwargs),
             exercise="WeightPublisher", hints=_PUBLISHER_HINTS, run="run_publisher_explore",
             options=explore_kwargs)


# --------------------------------------------------------------------------- exercise 3

#: Simulated costs of the grader's candidate publishers (sleeps stand in for compute, so the
#: ranking does not depend on how loaded the machine is). Their races are real.
_FAST_READ_S = 0.0002
_GOOD_READ_S = 0.003
_LAYER_WRITE_S = 0.0004
#: The longest a torn publish waits for a read between its first and second layer writes.
_TEAR_WAIT_S = 1.0
_GOOD_PUBLISH_S = 0.003
_SLOW_PUBLISH_S = 0.08
#: Every candidate's last publish takes this much longer, so that a reader that keeps reading
#: until the writer is done is seen reading during it, even on a loaded machine.
_LAST_PUBLISH_S = 0.02


class _Recorder:
    """What the grader's candidate publishers saw: who called them, when, and what they said.

    Attributes:
        reads: Per candidate name, ``(thread ident, start, end, torn)`` of every predict.
        publishes: Per candidate name, ``(thread ident, version, start, end)`` of every publish.
    """

    def __init__(self) -> None:
        self.reads: dict[str, list[tuple[int, float, float, bool]]] = {}
        self.publishes: dict[str, list[tuple[int, int, float, float]]] = {}
        self.lock = threading.Lock()
        self.instances: Counter[str] = Counter()


def _outputs(layer_versions: Sequence[int], width: int) -> np.ndarray:
    """The output a versioned model with these layer versions gives (row of suffix sums)."""
    row = np.zeros(width, dtype="float32")
    row[:len(layer_versions)] = np.cumsum(np.asarray(layer_versions, dtype="float32")[::-1])[::-1]
    return row[None, :]


def _candidate_classes(recorder: _Recorder, names: Mapping[str, str], last_version: int
                       ) -> dict[str, type]:
    """The grader's four candidate publishers, each reporting to ``recorder`` under its name.

    ``names`` maps each kind (``"torn"``, ``"slow_updates"``, ``"good"``, ``"slow_reads"``) to
    the name the student sees.
    """

    class Candidate:
        kind = ""

        def __init__(self, model: Any) -> None:
            self.name = names[self.kind]
            self.width = _shape(model)[1]
            self.layers = [0] * LAYERS
            with recorder.lock:
                recorder.instances[self.name] += 1
                recorder.reads.setdefault(self.name, [])
                recorder.publishes.setdefault(self.name, [])

        def _version_of(self, weights: Sequence[Any]) -> int:
            return int(round(float(np.asarray(weights[1])[0])))

        def _record_read(self, start: float, outputs: np.ndarray) -> np.ndarray:
            entry = (threading.get_ident(), start, time.perf_counter(), is_torn(outputs))
            with recorder.lock:
                recorder.reads[self.name].append(entry)
            return outputs

        def _record_publish(self, version: int, start: float) -> None:
            if version == last_version:
                time.sleep(_LAST_PUBLISH_S)
            entry = (threading.get_ident(), version, start, time.perf_counter())
            with recorder.lock:
                recorder.publishes[self.name].append(entry)

    class Torn(Candidate):
        """No lock: publish writes the layers one by one; a read in between mixes versions.

        After its first layer, a publish waits (at most :data:`_TEAR_WAIT_S`) until a read
        has looked at the layers: a writer that slow always has a read land mid-publish when
        readers run beside it, so its measured tearing never drops to 0 on a loaded machine
        (where readers could otherwise miss every gap of a short publish).
        """

        kind = "torn"

        def __init__(self, model: Any) -> None:
            super().__init__(model)
            self.read_seen = threading.Event()

        def publish(self, weights: Sequence[Any]) -> None:
            start, version = time.perf_counter(), self._version_of(weights)
            for index in range(LAYERS):
                self.layers[index] = version
                if index == 0:
                    self.read_seen.clear()
                    self.read_seen.wait(_TEAR_WAIT_S)
                time.sleep(_LAYER_WRITE_S)
            self._record_publish(version, start)

        def predict(self, x: Any) -> np.ndarray:
            start = time.perf_counter()
            seen = list(self.layers)
            self.read_seen.set()
            time.sleep(_FAST_READ_S)
            return self._record_read(start, _outputs(seen, self.width))

    class Swapping(Candidate):
        """Build-then-swap: a publish builds for ``publish_s``, a read computes for ``read_s``."""

        publish_s = read_s = 0.0

        def publish(self, weights: Sequence[Any]) -> None:
            start, version = time.perf_counter(), self._version_of(weights)
            time.sleep(self.publish_s)
            self.layers = [version] * LAYERS
            self._record_publish(version, start)

        def predict(self, x: Any) -> np.ndarray:
            start = time.perf_counter()
            seen = self.layers
            time.sleep(self.read_s)
            return self._record_read(start, _outputs(seen, self.width))

    class SlowUpdates(Swapping):
        """Build-then-swap with an expensive build: reads never wait, updates are slow."""

        kind = "slow_updates"
        publish_s, read_s = _SLOW_PUBLISH_S, _FAST_READ_S

    class Good(Swapping):
        """Build-then-swap with a cheap build and slower reads."""

        kind = "good"
        publish_s, read_s = _GOOD_PUBLISH_S, _GOOD_READ_S

    class SlowReads(Candidate):
        """Reads queue up one at a time behind a lock (the writer never waits for it)."""

        kind = "slow_reads"

        def __init__(self, model: Any) -> None:
            super().__init__(model)
            self.one_reader = threading.Lock()

        def publish(self, weights: Sequence[Any]) -> None:
            start, version = time.perf_counter(), self._version_of(weights)
            time.sleep(_GOOD_PUBLISH_S)
            self.layers = [version] * LAYERS
            self._record_publish(version, start)

        def predict(self, x: Any) -> np.ndarray:
            start = time.perf_counter()
            with self.one_reader:
                seen = self.layers
                time.sleep(5 * _GOOD_READ_S)
            return self._record_read(start, _outputs(seen, self.width))

    return {names[c.kind]: c for c in (Torn, SlowUpdates, Good, SlowReads)}


def practice_candidates() -> dict[str, type]:
    """Two small publishers to try ``choose_publisher`` on, whatever your own publisher does.

    ``"whole"`` never mixes versions; ``"tearing"`` writes its layers one by one with no lock,
    so reads made while it publishes mix versions. Both simulate their compute with short
    sleeps (their race is real) and accept any model.
    """
    names = {"torn": "tearing", "slow_updates": "slow", "good": "whole",
             "slow_reads": "queued"}
    classes = _candidate_classes(_Recorder(), names, last_version=-1)
    return {"whole": classes["whole"], "tearing": classes["tearing"]}


@dataclass
class ChoiceRun:
    """What one graded ``choose_publisher`` call returned, and what really happened."""

    chosen: Any = None
    table: Any = None
    expected: Any = None
    names: dict[str, str] = field(default_factory=dict)
    recorder: _Recorder = field(default_factory=_Recorder)
    error: BaseException | None = None


def run_choice(choose: Callable[..., Any], *, seed: int = SEED,
               readers: int = CHOICE_READERS, updates: int = CHOICE_UPDATES,
               interval_s: float = CHOICE_INTERVAL_S,
               min_updates_per_s: float = CHOICE_MIN_UPDATES_PER_S) -> ChoiceRun:
    """Call ``choose(candidates, make_model, readers=, updates=, interval_s=,
    min_updates_per_s=)`` once, on the grader's four candidates.

    The four candidates have names drawn from ``seed`` and come in a seeded order. What it
    returns is read as plain data (:func:`autograder.checks.plain.plain`) before anything
    judges it.

    Raises:
        NotPlainData: (an AssertionError naming ``choose_publisher``) when it returned
            anything but plain data.
    """
    rng = random.Random(f"choice/{seed}")
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    picked = rng.sample(words, 4)
    kinds = ["torn", "slow_updates", "good", "slow_reads"]
    run = ChoiceRun(names=dict(zip(kinds, picked, strict=True)))
    classes = _candidate_classes(run.recorder, run.names, updates)
    order = rng.sample(sorted(classes), len(classes))
    candidates = {name: classes[name] for name in order}
    model = _shared_small_model()
    try:
        answer = choose(candidates, lambda: model, readers=readers, updates=updates,
                        interval_s=interval_s, min_updates_per_s=min_updates_per_s)
    except Exception as error:  # noqa: BLE001 - reported to the student
        run.error = error
        return run
    answer = plain(answer, "choose_publisher: choose_publisher(...)")
    if isinstance(answer, tuple) and len(answer) == 2:
        run.chosen, run.table = answer
    else:
        run.chosen = answer
    return run


_SMALL_MODEL = memo("the choice check's model")


def _shared_small_model() -> Any:
    def build() -> Any:
        model = versioned_model()
        model.predict_on_batch(probe(model))
        return model

    return _SMALL_MODEL(None, build)


def _choice_problems(run: ChoiceRun, readers: int, updates: int,
                     min_updates_per_s: float = CHOICE_MIN_UPDATES_PER_S) -> list[str]:
    """Everything wrong with one ``choose_publisher`` call, in the exercise's terms."""
    if run.error is not None:
        lines = str(run.error).strip().splitlines()
        return [f"choose_publisher raised {type(run.error).__name__}"
                + (f": {lines[0]}" if lines else "")]
    names = set(run.names.values())
    table = run.table
    if not isinstance(table, Mapping) or set(table) != names:
        got = sorted(table) if isinstance(table, Mapping) else type(table).__name__
        return [f"expected the measurements as a dict with one entry per candidate "
                f"{sorted(names)}, got {got}"]
    problems = []
    for name in run.names.values():
        entry = table[name]
        reads = run.recorder.reads.get(name, [])
        publishes = run.recorder.publishes.get(name, [])
        keys = {"reads", "torn", "reads_per_s", "updates_per_s"}
        if not isinstance(entry, Mapping) or not keys <= set(entry):
            problems.append(f"{name}: expected a dict with keys {sorted(keys)}, got {entry!r}")
            continue
        if run.recorder.instances[name] != 1:
            problems.append(f"{name}: expected one publisher made for the measurement, "
                            f"saw {run.recorder.instances[name]}")
            continue
        versions = [version for _, version, _, _ in publishes]
        if versions != list(range(1, updates + 1)):
            problems.append(f"{name}: expected publishes of versions 1 .. {updates} in order, "
                            f"saw {versions}")
            continue
        writer_threads = {ident for ident, _, _, _ in publishes}
        reader_threads = {ident for ident, _, _, _ in reads}
        if len(reader_threads) != readers or writer_threads & reader_threads:
            problems.append(f"{name}: expected {readers} reader threads besides the writer, "
                            f"saw {len(reader_threads - writer_threads)}")
            continue
        writer_done = publishes[-1][3]
        writer_start = publishes[0][2]
        last_start = publishes[-1][2]
        for thread in sorted(reader_threads):
            mine = [r for r in reads if r[0] == thread]
            late = sum(start > writer_done for _, start, _, _ in mine)
            during = sum(start < writer_done and end > writer_start for _, start, end, _ in mine)
            if during == 0:
                problems.append(
                    f"{name}: expected every reader to read while the writer was publishing, "
                    f"but one made its {len(mine)} reads before or after: a measurement of "
                    "serving while publishing must run readers and writer at the same time")
                break
            if max(end for _, _, end, _ in mine) < last_start:
                problems.append(
                    f"{name}: expected every reader to keep reading until the writer was "
                    f"done, but one stopped before ({len(mine)} reads, none during the last "
                    "publish): the races of the last updates go unseen")
                break
            if late > max(3, len(mine) // 2):
                problems.append(
                    f"{name}: expected readers to stop once the writer was done, but one made "
                    f"{late} of its {len(mine)} reads after it: those reads measure serving "
                    "without publishing")
                break
        torn = sum(r[3] for r in reads)
        if entry["reads"] != len(reads) or entry["torn"] != torn:
            problems.append(f"{name}: reported {entry['reads']} reads with {entry['torn']} torn,"
                            f" expected {len(reads)} reads with {torn} torn (what the publisher "
                            "really returned)")
            continue
        span = max(r[2] for r in reads) - min(r[1] for r in reads)
        truth_reads = len(reads) / max(span, 1e-9)
        truth_updates = updates / max(writer_done - writer_start, 1e-9)
        for key, truth in (("reads_per_s", truth_reads), ("updates_per_s", truth_updates)):
            value = entry[key]
            if not isinstance(value, (int, float)) or not 0.05 * truth <= value <= 5.0 * truth:
                problems.append(f"{name}: reported {key} = {value!r}, expected about "
                                f"{truth:.0f} (what it really did)")
    if problems:
        return problems
    # The measurements are sound: the choice must follow from them. (On a quiet machine the
    # rule picks the "good" candidate; under heavy load the measurements decide.)
    qualified = [name for name, row in table.items()
                 if row["torn"] == 0 and row["updates_per_s"] >= min_updates_per_s]
    run.expected = max(qualified, key=lambda name: table[name]["reads_per_s"], default=None)
    if run.chosen != run.expected:
        row = table.get(run.chosen) if isinstance(run.chosen, str) else None
        if row is None:
            why = "it is not one of the candidates"
        elif row["torn"]:
            why = f"your own measurement found {row['torn']} torn reads"
        elif row["updates_per_s"] < min_updates_per_s:
            why = (f"your own measurement found {row['updates_per_s']:.1f} updates per second, "
                   f"fewer than the {min_updates_per_s:g} required")
        else:
            why = (f"{run.expected!r} qualifies and serves more reads per second "
                   "in your own measurement")
        problems.append(f"chose {run.chosen!r}, expected {run.expected!r}: {why}")
    return problems


def check_choice(choose: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade ``choose_publisher`` on the grader's candidates (see :func:`run_choice`)."""
    run = run_choice(choose, seed=seed)
    problems = _choice_problems(run, CHOICE_READERS, CHOICE_UPDATES)
    if problems:
        raise AssertionError("choose_publisher: " + "; ".join(problems[:3]))
