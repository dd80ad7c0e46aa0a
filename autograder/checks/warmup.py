"""Graded properties for lesson 01, "warmup": concurrent first calls into a Keras model.

Every check first runs the student's answer once on one thread (a wrong answer that is wrong
even without threads gets a plain message), then builds fresh, small models per trial and runs
the answer from several threads released together by :func:`autograder.harness.stress`
(switch interval 1e-6). After each trial it asserts that no thread raised (the harness
reports that), that every output equals a sequential reference (``np.allclose``; the models
use seeded initializers, so a twin built on one thread has the same weights), that the model
holds exactly its expected number of weights (a racy build adds duplicates silently), and the
exercise's own property: nothing is traced while serving (:func:`check_entry_point`, and
:func:`check_both_entry_points` with half the threads on ``predict``), one
thread traces (:func:`check_shared_predictor`), the factory runs once and every thread gets the
same built model (:func:`check_lazy_model`).

Seeds and trial counts are fixed and nothing is retried. The notebook's demonstrations use the
same models and the same runner (:func:`race_trials`), so what the student watches break is
what the grader looks for.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from autograder.checks.cache import frozen, memo
from autograder.checks.child import Crashed, run_in_children
from autograder.checks.plain import NotPlainData, plain_array
from autograder.checks.report import call_text, require_ok
from autograder.harness import Result, explore, stress

#: Dense(16, relu) -> Dense(4): two kernels and two biases.
EXPECTED_WEIGHTS = 4
HIDDEN_UNITS = 16
OUTPUT_UNITS = 4
#: Worker threads per trial in the graded checks.
THREADS = 6
SEED = 1701
#: Trials per graded check. ``tests/checks/test_warmup.py`` gives the per-trial detection rate
#: of every known wrong answer and the arithmetic for why these counts are enough.
TRIALS_ENTRY_POINT = 3
TRIALS_SHARED_PREDICTOR = 5
TRIALS_LAZY_MODEL = 4
TRIALS_BOTH_ENTRY_POINTS = 3
#: Time the graded factory spends "loading" the model, as reading it from disk would.
_FACTORY_LOAD_S = 0.01
#: Extra time each layer of the graded subclassed model takes to create its weights, so a
#: thread arriving while another builds is inside the window (a bigger model's real cost).
_BUILD_DELAY_S = 0.01
_LATE_WAIT_S = 5.0
#: Seconds between Keras's check that a model has no predict function and its storing the one
#: it made (``make_predict_function`` is a check-then-set without a lock), in the graded
#: SharedPredictor trials: every thread that arrives meanwhile finds none and makes its own,
#: as Keras lets it. Real Keras's window is a few microseconds; a predictor that lets two
#: threads reach it failed 121 of 140 single trials with that window, and 20 of 20 runs
#: need it every time.
_PREDICT_FUNCTION_WINDOW_S = 0.1
#: Wall-clock budget of one graded check: below nbgrader's 30 s per-cell timeout, so a hang is
#: reported as a deadlock with stacks rather than cut off.
_TIMEOUT_S = 20.0
#: Backstop of the ``explore`` search (a bound on its schedule count, not on time): far above
#: its few seconds on an idle machine, so a correct answer on a loaded machine still finishes.
_EXPLORE_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------- models


class _SeededNormal(keras.initializers.Initializer):
    """Normal(0, 0.5) weights drawn by a stateless TensorFlow op from ``seed``.

    Keras's own ``RandomNormal(seed=...)`` keeps its state in a seed-generator variable that
    is created lazily on the first draw; when several threads build cold models at once, they
    create it together, and that can crash TensorFlow itself (a segfault, measured on TF 2.21),
    which would end the lesson's demonstrations with a dead kernel instead of the race they
    show. A stateless draw builds the same kind of ops, so a racy build keeps its window, but
    shares no state between threads.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return tf.random.stateless_normal(tuple(shape), seed=[self.seed, 0], stddev=0.5,
                                          dtype=dtype or "float32")

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed}


def _initializer(seed: int) -> keras.initializers.Initializer:
    return _SeededNormal(seed)


def tiny_sequential(seed: int = 0, *, input_width: int | None = None) -> keras.Sequential:
    """A small Sequential model, unbuilt unless ``input_width`` is given.

    Its initializers are seeded, so two models made with the same seed get the same weights,
    whichever thread builds them.

    Args:
        seed: Picks the weights.
        input_width: When given, the model starts with ``keras.Input((input_width,))`` and is
            built at once.
    """
    layers: list[Any] = [] if input_width is None else [keras.Input((input_width,))]
    layers += [
        keras.layers.Dense(HIDDEN_UNITS, activation="relu",
                           kernel_initializer=_initializer(4 * seed),
                           bias_initializer=_initializer(4 * seed + 1)),
        keras.layers.Dense(OUTPUT_UNITS,
                           kernel_initializer=_initializer(4 * seed + 2),
                           bias_initializer=_initializer(4 * seed + 3)),
    ]
    return keras.Sequential(layers)


class BuildDelayDense(keras.layers.Dense):
    """``Dense`` whose ``build`` can take longer, to widen the window a racy build has.

    Args:
        units: As for ``Dense``.
        build_delay_s: Seconds ``build`` sleeps before creating the weights.
        on_build: Called when ``build`` starts (the grader uses it to send threads in).
        **kwargs: As for ``Dense``.
    """

    def __init__(self, units: int, *, build_delay_s: float = 0.0,
                 on_build: Callable[[], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self._build_delay_s = build_delay_s
        self._on_build = on_build

    def build(self, input_shape: Any) -> None:
        if self._on_build is not None:
            self._on_build()
        if self._build_delay_s:
            time.sleep(self._build_delay_s)
        super().build(input_shape)


class TinyNet(keras.Model):
    """A subclassed model whose layers create their weights on the first call.

    It has no ``build()`` method, so ``model.build(shape)`` marks it built without creating a
    single weight (Keras warns); only calling it on data creates them.

    Args:
        seed: Picks the weights (seeded initializers, as in :func:`tiny_sequential`).
        build_delay_s: Extra time each layer takes to create its weights. The grader sets it
            so that a thread arriving during a build is inside the window; the lesson's
            demonstrations leave it at 0.
        on_build: Called whenever a layer starts creating its weights.
    """

    def __init__(self, seed: int = 0, *, build_delay_s: float = 0.0,
                 on_build: Callable[[], Any] | None = None) -> None:
        super().__init__()
        self.hidden = BuildDelayDense(HIDDEN_UNITS, activation="relu",
                                      build_delay_s=build_delay_s, on_build=on_build,
                                      kernel_initializer=_initializer(4 * seed),
                                      bias_initializer=_initializer(4 * seed + 1))
        self.out = BuildDelayDense(OUTPUT_UNITS, build_delay_s=build_delay_s, on_build=on_build,
                                   kernel_initializer=_initializer(4 * seed + 2),
                                   bias_initializer=_initializer(4 * seed + 3))

    def call(self, x: Any) -> Any:
        return self.out(self.hidden(x))


def batches(seed: int, count: int, rows: int, features: int) -> list[np.ndarray]:
    """``count`` float32 batches of shape ``(rows, features)`` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(rows, features)).astype("float32") for _ in range(count)]


def _reference(make_model: Callable[[int], Any], seed: int,
               inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of a twin model, ``make_model(seed)``, built and run on this thread alone."""
    def build() -> tuple[np.ndarray, ...]:
        twin = make_model(seed)
        return tuple(frozen(twin(x)) for x in inputs)

    return _REFERENCES((make_model, seed, tuple((x.shape, x.tobytes()) for x in inputs)), build)


#: Reference outputs by model kind, seed and inputs: the graded trials are the same each run.
_REFERENCES = memo("the warmup checks' reference outputs")


# --------------------------------------------------------------------------- tracing


class TraceLog:
    """Record every trace of ``model``'s predict function, and which thread ran it.

    Keras calls ``predict_step`` only while tracing the predict function (the traced graph then
    runs without Python), so each call is one trace. Attach it before the first call.

    Attributes:
        threads: The id of the thread that ran each trace, in order.
    """

    def __init__(self, model: keras.Model) -> None:
        self.threads: list[int] = []
        original = model.predict_step

        @functools.wraps(original)
        def predict_step(data: Any) -> Any:
            self.threads.append(threading.get_ident())
            return original(data)

        model.predict_step = predict_step
        self._model = model
        self._wrapper = predict_step
        self._function: Any = None
        self._function_count = 0

    @property
    def count(self) -> int:
        """Traces recorded since the last :meth:`reset`."""
        return len(self.threads)

    @property
    def intact(self) -> bool:
        """Whether the model still calls this log's ``predict_step`` and its predict function
        is still a ``tf.function`` (code that removes either would trace unseen)."""
        function = self._model.__dict__.get("predict_function")
        return self._model.__dict__.get("predict_step") is self._wrapper and (
            function is None or hasattr(function, "experimental_get_tracing_count"))

    def function_traces(self) -> int:
        """Traces of the model's predict function since the last :meth:`reset`, counted by
        TensorFlow itself (a second count, which no change to ``predict_step`` hides)."""
        function = self._model.__dict__.get("predict_function")
        count = _tracing_count(function)
        if function is not self._function:
            return max(1, count) if function is not None else 0
        return count - self._function_count

    @property
    def tracing_threads(self) -> int:
        """How many different threads traced since the last :meth:`reset`."""
        return len(set(self.threads))

    def reset(self) -> None:
        """Forget the traces recorded so far."""
        self.threads.clear()
        self._function = self._model.__dict__.get("predict_function")
        self._function_count = _tracing_count(self._function)


def _tracing_count(function: Any) -> int:
    counter = getattr(function, "experimental_get_tracing_count", None)
    return int(counter()) if callable(counter) else 0


@functools.cache
def first_call_traces() -> int:
    """Traces one first ``predict_on_batch`` on an unbuilt model costs, on one thread.

    Keras traces twice when the model is unbuilt: the first trace creates the weights.
    """
    model = tiny_sequential(0)
    log = TraceLog(model)
    model.predict_on_batch(np.zeros((2, 3), dtype="float32"))
    return log.count


# --------------------------------------------------------------------------- one trial


@dataclass
class Call:
    """One call a worker thread made: when it ran and how it ended.

    Attributes:
        thread: Worker index.
        start: Seconds since the trial's threads were set up.
        end: Seconds since the trial's threads were set up.
        error: ``"TypeName: informative line"`` when the call raised, else ``None``.
    """

    thread: int
    start: float
    end: float
    error: str | None = None


@dataclass
class Trial:
    """Shared state of one trial, and what its threads did.

    Attributes:
        model: The model under test (``None`` until a lazy answer creates it).
        inputs: One batch per worker.
        expected: Sequential reference output for each batch (empty when not checked).
        outputs: What each worker got (``None`` when it raised).
        models: The model object each worker used (lazy exercise).
        made: Every model the factory made (lazy exercise).
        calls: Timed record of every worker call.
        traces: Trace log of ``model``, when it has a predict function.
        warm_ms: How long the warmup before the threads took, in milliseconds.
        factory_calls: How many times the model factory ran (lazy exercise).
        factory_calls_in_init: How many of those ran inside the answer's ``__init__``.
        build_started: Set once a layer of a factory-made model starts building (lazy
            exercise).
        subject: The student's object under test (predictor, lazy model).
        t0: Time origin of :attr:`calls`.
    """

    model: Any
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    outputs: list[Any] = field(default_factory=list)
    models: list[Any] = field(default_factory=list)
    made: list[Any] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    traces: TraceLog | None = None
    warm_ms: float = 0.0
    factory_calls: int = 0
    factory_calls_in_init: int = 0
    build_started: threading.Event = field(default_factory=threading.Event)
    subject: Any = None
    t0: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.outputs = [None] * len(self.inputs)
        self.models = [None] * len(self.inputs)

    def timed(self, index: int, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` for worker ``index``, recording when it ran and whether it raised."""
        start = time.perf_counter() - self.t0
        try:
            value = fn()
        except Exception as exc:
            self.calls.append(Call(index, start, time.perf_counter() - self.t0, describe(exc)))
            raise
        self.calls.append(Call(index, start, time.perf_counter() - self.t0))
        return value

    @property
    def errors(self) -> list[str]:
        """The errors raised in this trial, one per failed call."""
        return [c.error for c in self.calls if c.error]

    @property
    def span_ms(self) -> float:
        """Milliseconds from the first call's start to the last call's end."""
        if not self.calls:
            return 0.0
        return 1e3 * (max(c.end for c in self.calls) - min(c.start for c in self.calls))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NOISE = ("Graph execution error", "Detected at node", "File ", "Exception encountered when",
          "Arguments received", "[[", "•")


def describe(exc: BaseException) -> str:
    """``"TypeName: the informative line"`` of an exception raised inside Keras or TF."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    informative = [line for line in lines if not line.startswith(_NOISE)]
    if lines and lines[0].startswith("Graph execution error") and informative:
        text = informative[-1]
    else:
        text = informative[0] if informative else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {text[:150]}"


def _trial_plan(seed: int, index: int) -> tuple[int, int, int]:
    """Seed, batch rows and input width of trial ``index``: shapes vary so none is assumed."""
    return seed + 7919 * index, 3 + index % 4, 5 + (index * 3) % 5


def _weights_and_outputs(trial: Trial, model: Any, what: str) -> list[str]:
    """Problems every exercise checks after its threads: duplicate weights, wrong outputs."""
    problems = []
    if model is not None and len(model.weights) != EXPECTED_WEIGHTS:
        problems.append(
            f"the model holds {len(model.weights)} weights, expected {EXPECTED_WEIGHTS}: "
            "several threads built it at the same time and each added its own copy"
        )
    for k, (got, want) in enumerate(zip(trial.outputs, trial.expected, strict=True)):
        try:
            got = None if got is None else plain_array(got, what)
        except NotPlainData as lie:
            problems.append(f"worker {k}: {lie}")
            break
        if got is None or got.shape != want.shape or not np.allclose(got, want, rtol=1e-4,
                                                                     atol=1e-5):
            problems.append(f"worker {k}: {what} returned a different output than the same "
                            "model run on one thread")
            break
    return problems


#: What a check says when the answer took the grader's trace log off the model.
_REPLACED = ("the model's predict_step or predict_function was replaced, so the grader could "
             "not count its traces; leave the model's methods as Keras made them")


def _fail(problems: list[str]) -> None:
    if problems:
        raise AssertionError("; ".join(problems))


def _answer_failed(what: str, exc: BaseException) -> Result:
    """A failing result for an answer that is wrong before any thread runs (never ok)."""
    return Result("error", message=f"{what} raised {describe(exc)} when run on one thread, "
                                   "before any threads were started.")


def _require(result: Result, exercise: str, seen: list[Trial], again: str) -> None:
    """Pass, or fail with the harness's explanation plus the errors the last trial's threads
    raised, each on one informative line (Keras and TF put theirs deep in long messages);
    ``again`` is the call that gives the verdict again (see :func:`require_ok`)."""
    errors = Counter(seen[-1].errors) if seen and result.schedules_run else Counter()
    listed = "\n".join(f"  {n} x {error}" for error, n in errors.most_common(5))
    require_ok(result, exercise=exercise, show_figure=result.schedules_run > 0,
               again=again if result.schedules_run else None,
               details=f"What the threads raised in that trial:\n{listed}" if listed else None)


# --------------------------------------------------------------------------- demonstrations


@dataclass
class RaceStats:
    """What :func:`race_trials` saw.

    Attributes:
        trials: Trials run.
        failed: Trials in which at least one thread raised.
        errors: Every error raised, counted by ``"TypeName: informative line"``.
        weights: Trials counted by how many weights the model held afterwards.
        traces: Traces of the predict function during each trial's threads.
        span_ms: Each trial's time from the first call's start to the last call's end.
        warm_ms: Each trial's warmup time (0 when not warmed).
        first_failure: The harness result of the first trial in which a thread raised (its
            ``figure()`` shows when each call ran and which raised), else ``None``.
        last: The harness result of the last trial.
        compared: Trials whose outputs were compared with the same calls made on one thread
            afterwards (only with ``compare=True``; trials in which a thread raised are not).
        mismatched: Of those, trials in which some thread's output differed from that
            one-thread reference.
        crashed: Trials that ended their whole process (TensorFlow crashed, or the process
            hung); each also counts as failed.
    """

    trials: int = 0
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    weights: Counter[int] = field(default_factory=Counter)
    traces: list[int] = field(default_factory=list)
    span_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    first_failure: Result | None = None
    last: Result | None = None
    compared: int = 0
    mismatched: int = 0
    crashed: int = 0

    def add(self, outcome: TrialOutcome | Crashed) -> None:
        """Count one trial's outcome."""
        self.trials += 1
        if isinstance(outcome, Crashed):
            self.crashed += 1
            self.failed += 1
            self.errors[str(outcome)] += 1
            return
        self.failed += bool(outcome.errors)
        self.errors.update(outcome.errors)
        self.weights[outcome.weights] += 1
        self.traces.append(outcome.traces)
        self.span_ms.append(outcome.span_ms)
        self.warm_ms.append(outcome.warm_ms)
        self.last = outcome.result
        if outcome.errors and self.first_failure is None:
            self.first_failure = outcome.result
        self.compared += outcome.compared
        self.mismatched += outcome.mismatched

    @property
    def duplicated(self) -> int:
        """Trials after which the model held more weights than it should."""
        return sum(n for w, n in self.weights.items() if w > EXPECTED_WEIGHTS)

    def report(self) -> str:
        """A few lines for the notebook: failure rate, errors, weights, traces."""
        lines = [f"a thread raised in {self.failed} of {self.trials} trials"]
        if self.crashed:
            lines[0] += (f" (in {self.crashed} of them TensorFlow ended its whole process; "
                         "the trials ran in child processes, so your kernel lives on)")
        lines += [f"  {n:3d} x {error}" for error, n in self.errors.most_common(4)]
        weights = ", ".join(f"{w} in {n}" for w, n in sorted(self.weights.items()))
        lines.append(f"more than {EXPECTED_WEIGHTS} weights afterwards in {self.duplicated} of "
                     f"{self.trials} trials (trials by weight count: {weights})")
        if any(self.traces):
            ordered = sorted(self.traces)
            lines.append(f"traces of the predict function per trial: fewest {ordered[0]}, "
                         f"median {ordered[len(ordered) // 2]}, most {ordered[-1]}")
        return "\n".join(lines)


def race_trials(
    make_model: Callable[[int], Any],
    call: Callable[[Any, np.ndarray], Any],
    *,
    trials: int = 20,
    threads: int = 4,
    warm: Callable[[Any, np.ndarray], Any] | None = None,
    rows: int = 4,
    features: int = 8,
    seed: int = 0,
    compare: bool = False,
    in_child: bool | None = None,
) -> RaceStats:
    """Run ``call(model, batch)`` from ``threads`` threads on a fresh model, ``trials`` times.

    Each trial is one :func:`autograder.harness.stress` trial: ``make_model(trial_seed)`` (then
    ``warm(model, batch)`` on this thread, when given), then the threads released together,
    each with its own batch. Nothing is asserted; the returned statistics say what happened.

    A cold model raced from threads can crash TensorFlow itself, so trials without a warmup run
    in child processes by default (:func:`autograder.checks.child.run_in_children`): a trial
    that crashes its process is counted as a failed trial, and your kernel keeps running.

    Args:
        make_model: Returns a fresh model from a seed.
        call: What each thread does with the model and its batch.
        trials: Number of fresh models to try.
        threads: Threads per trial.
        warm: Optional warmup run on this thread before the threads start.
        rows: Rows per batch.
        features: Input width.
        seed: First trial seed.
        compare: After each trial in which no thread raised, make every thread's call again
            on this thread, one after another, and count the trials in which an output
            differs (exactly) from what the thread got.
        in_child: Run the trials in child processes (default: when ``warm`` is None, that is
            when the threads race on a cold model). The functions passed must then be defined
            in a module (``warmup.predict_on_batch``, ``functools.partial`` of one), not in
            the notebook.

    Returns:
        The statistics, with harness results whose ``figure()`` shows the interleaving.
    """
    calls = [(make_model, call, warm, seed + index, threads, rows, features, compare)
             for index in range(trials)]
    if in_child is None:
        in_child = warm is None  # only threads racing on a cold model can crash TensorFlow
    if in_child:
        outcomes = run_in_children(_race_trial, calls, trial_timeout_s=_TIMEOUT_S + 30)
    else:
        outcomes = [_race_trial(*args) for args in calls]
    stats = RaceStats()
    for outcome in outcomes:
        stats.add(outcome)
    return stats


@dataclass
class TrialOutcome:
    """One trial of :func:`race_trials` (what crosses back from a child process)."""

    errors: list[str]
    weights: int
    traces: int
    span_ms: float
    warm_ms: float
    result: Result
    compared: bool = False
    mismatched: bool = False


def _race_trial(make_model: Callable[[int], Any], call: Callable[[Any, np.ndarray], Any],
                warm: Callable[[Any, np.ndarray], Any] | None, trial_seed: int, threads: int,
                rows: int, features: int, compare: bool) -> TrialOutcome:
    """One trial of :func:`race_trials` on a fresh model."""
    holder: list[Trial] = []

    def setup() -> Trial:
        inputs = batches(trial_seed, threads + 1, rows, features)
        model = make_model(trial_seed)
        trial = Trial(model, inputs[1:], [])
        if isinstance(model, keras.Model):
            trial.traces = TraceLog(model)
        if warm is not None:
            start = time.perf_counter()
            warm(model, inputs[0])
            trial.warm_ms = 1e3 * (time.perf_counter() - start)
        if trial.traces is not None:
            trial.traces.reset()
        holder.append(trial)
        trial.t0 = time.perf_counter()
        return trial

    def worker_for(k: int) -> Callable[[Trial], None]:
        def worker(state: Trial) -> None:
            state.outputs[k] = state.timed(k, lambda: call(state.model, state.inputs[k]))
        return worker

    result = stress(setup, [worker_for(k) for k in range(threads)], lambda trial: None,
                    trials=1, seed=trial_seed, timeout_s=_TIMEOUT_S)
    trial = holder[0]
    outcome = TrialOutcome(list(trial.errors), len(trial.model.weights),
                           trial.traces.count if trial.traces is not None else 0,
                           trial.span_ms, trial.warm_ms, result)
    if compare and not trial.errors:
        outcome.compared = True
        outcome.mismatched = any(
            not np.array_equal(np.asarray(got), np.asarray(call(trial.model, batch)))
            for got, batch in zip(trial.outputs, trial.inputs, strict=True))
    return outcome


def predict_on_batch(model: Any, batch: np.ndarray) -> Any:
    """``model.predict_on_batch(batch)``: one thread's request in the demonstrations."""
    return model.predict_on_batch(batch)


def predict(model: Any, batch: np.ndarray) -> Any:
    """``model.predict(batch, verbose=0)``: the call most tutorials show."""
    return model.predict(batch, verbose=0)


def call_model(model: Any, batch: np.ndarray) -> Any:
    """``model(batch)``: calling the model directly."""
    return model(batch)


def make_predict_function_only(model: Any, batch: np.ndarray) -> None:
    """``model.make_predict_function()``: the outdated "warmup" (builds and traces nothing)."""
    model.make_predict_function()


def built_sequential(seed: int) -> keras.Model:
    """:func:`tiny_sequential` with a ``keras.Input`` of width 8: built before any call."""
    return tiny_sequential(seed, input_width=8)


# --------------------------------------------------------------------------- exercise 1


def run_entry_point(
    warm_up: Callable[[Any, np.ndarray], Any],
    *,
    trials: int = TRIALS_ENTRY_POINT,
    threads: int = THREADS,
    seed: int = SEED,
    record: list[Trial] | None = None,
) -> Result:
    """Warm fresh unbuilt models with ``warm_up``, then serve ``predict_on_batch`` from threads.

    First, on one thread: ``warm_up(model, example)`` on an unbuilt :func:`tiny_sequential`
    must not raise. Then per trial: a fresh unbuilt model and ``warm_up(model, example)`` on
    this thread, then ``threads`` threads released together each call
    ``model.predict_on_batch`` on their own batch of the example's shape. A trial passes when
    no thread raised, outputs match the sequential reference, the model holds
    :data:`EXPECTED_WEIGHTS` weights and nothing was traced while serving.

    Args:
        record: When given, each trial's :class:`Trial` is appended to it.

    Returns:
        The result (``ok`` when every trial passed).
    """
    return _serve_after_warm_up(warm_up, "warm_up", (predict_on_batch,), trials=trials,
                                threads=threads, seed=seed, record=record)


def check_entry_point(warm_up: Callable[[Any, np.ndarray], Any], **kwargs: Any) -> None:
    """Grade ``warm_up`` (see :func:`run_entry_point`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_entry_point(warm_up, record=seen, **kwargs), "warm_up", seen,
             call_text("warmup.run_entry_point", "warm_up", **kwargs))


def _serve_after_warm_up(warm_up: Callable[[Any, np.ndarray], Any], exercise: str,
                         serve: Sequence[Callable[[Any, np.ndarray], Any]], *, trials: int,
                         threads: int, seed: int, record: list[Trial] | None) -> Result:
    """Warm fresh models with ``warm_up``; thread ``k`` then serves with ``serve[k % len]``."""
    try:
        warm_up(tiny_sequential(seed), batches(seed - 1, 1, 5, 7)[0])
    except Exception as exc:  # noqa: BLE001 - the student's error, reported to the student
        return _answer_failed(f"{exercise}(model, example_batch)", exc)

    counter = itertools.count()
    served = " and ".join(dict.fromkeys(entry.__name__ for entry in serve))

    def setup() -> Trial:
        trial_seed, rows, features = _trial_plan(seed, next(counter))
        inputs = batches(trial_seed, threads + 1, rows, features)
        model = tiny_sequential(trial_seed)
        trial = Trial(model, inputs[1:],
                      _reference(tiny_sequential, trial_seed, inputs[1:]))
        trial.traces = TraceLog(model)
        warm_up(model, inputs[0].copy())
        trial.traces.reset()
        if record is not None:
            record.append(trial)
        trial.t0 = time.perf_counter()
        return trial

    def worker_for(k: int) -> Callable[[Trial], None]:
        entry = serve[k % len(serve)]

        def worker(trial: Trial) -> None:
            batch = trial.inputs[k]
            trial.outputs[k] = trial.timed(k, lambda: entry(trial.model, batch))
        worker.__name__ = f"serve_{entry.__name__}_{k}"
        return worker

    def check(trial: Trial) -> None:
        problems = _weights_and_outputs(trial, trial.model, served)
        traces = trial.traces
        if traces is not None and not traces.intact:
            problems.append(_REPLACED)
        elif traces is not None and max(traces.count, traces.function_traces()):
            problems.append(
                f"the predict function was traced "
                f"{max(traces.count, traces.function_traces())} time(s) while "
                f"{len(trial.inputs)} threads served {served} after {exercise}; a warm "
                "model traces 0 times. Warm exactly "
                f"{'the entry point' if len(serve) == 1 else 'every entry point'} you serve "
                "with, with a batch of the serving shape"
            )
        _fail(problems)

    return stress(setup, [worker_for(k) for k in range(threads)], check, trials=trials,
                  seed=seed, timeout_s=_TIMEOUT_S)


# --------------------------------------------------------------------------- exercise 4

#: What exercise 4's serving threads call, thread ``k`` the entry ``k % 2``.
BOTH_ENTRY_POINTS = (predict, predict_on_batch)


def run_both_entry_points(
    warm_up_both: Callable[[Any, np.ndarray], Any],
    *,
    trials: int = TRIALS_BOTH_ENTRY_POINTS,
    threads: int = THREADS,
    seed: int = SEED,
    record: list[Trial] | None = None,
) -> Result:
    """Warm fresh unbuilt models with ``warm_up_both``, then serve both entry points at once.

    As :func:`run_entry_point`, except that half the threads call ``model.predict(batch,
    verbose=0)`` and the other half ``model.predict_on_batch(batch)``, released together.
    Keras traces its predict function separately for each (their inputs differ), so a trial
    passes only when the warm-up traced both: nothing is traced while serving.
    """
    return _serve_after_warm_up(warm_up_both, "warm_up_both", BOTH_ENTRY_POINTS,
                                trials=trials, threads=threads, seed=seed, record=record)


def check_both_entry_points(warm_up_both: Callable[[Any, np.ndarray], Any],
                            **kwargs: Any) -> None:
    """Grade ``warm_up_both`` (see :func:`run_both_entry_points`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_both_entry_points(warm_up_both, record=seen, **kwargs), "warm_up_both", seen,
             call_text("warmup.run_both_entry_points", "warm_up_both", **kwargs))


# --------------------------------------------------------------------------- exercise 2


def run_shared_predictor(
    predictor_class: Callable[[Any], Callable[[np.ndarray], Any]],
    *,
    trials: int = TRIALS_SHARED_PREDICTOR,
    threads: int = THREADS,
    seed: int = SEED,
    record: list[Trial] | None = None,
) -> Result:
    """Make the first calls of a shared predictor from many threads at once.

    First, on one thread: ``predictor_class(model)`` on an unbuilt :func:`tiny_sequential`
    must not raise. Then per trial: a fresh unbuilt model
    wrapped as ``predictor_class(model)``; ``threads`` threads released together each call
    ``predictor(batch)`` twice on their own batch. A trial passes when no thread raised, every
    output matches the sequential reference, the model holds :data:`EXPECTED_WEIGHTS`
    weights, one thread traced the predict function and it was traced no more often than one
    first ``predict_on_batch`` on one thread traces it (:func:`first_call_traces`). Keras's
    unlocked check-then-set in ``make_predict_function`` is held open
    :data:`_PREDICT_FUNCTION_WINDOW_S`, so a predictor that lets a second thread reach it
    while the first makes the function fails every trial, not most.

    Args:
        record: When given, each trial's :class:`Trial` is appended to it.

    Returns:
        The result (``ok`` when every trial passed).
    """
    try:
        predictor_class(tiny_sequential(seed))
    except Exception as exc:  # noqa: BLE001 - the student's error, reported to the student
        return _answer_failed("SharedPredictor(model)", exc)

    counter = itertools.count()
    widened: dict[int, Callable[..., Any]] = {}

    def setup() -> Trial:
        trial_seed, rows, features = _trial_plan(seed, next(counter))
        inputs = batches(trial_seed, threads, rows, features)
        model = tiny_sequential(trial_seed)
        trial = Trial(model, inputs,
                      _reference(tiny_sequential, trial_seed, inputs))
        trial.traces = TraceLog(model)
        widened[id(model)] = _widen_predict_function_window(model)
        trial.subject = predictor_class(model)
        if record is not None:
            record.append(trial)
        trial.t0 = time.perf_counter()
        return trial

    def worker_for(k: int) -> Callable[[Trial], None]:
        def worker(trial: Trial) -> None:
            batch = trial.inputs[k]
            for _ in range(2):
                trial.outputs[k] = trial.timed(k, lambda: trial.subject(batch))
        return worker

    def check(trial: Trial) -> None:
        problems = _weights_and_outputs(trial, trial.model, "the predictor")
        traces = trial.traces
        if traces is not None and (not traces.intact or trial.model.__dict__.get(
                "make_predict_function") is not widened.get(id(trial.model))):
            problems.append(_REPLACED)
        elif traces is not None and traces.tracing_threads > 1:
            problems.append(
                f"{traces.tracing_threads} threads traced the predict function "
                f"({traces.count} traces); only the first caller should, while the others wait"
            )
        elif traces is not None and traces.count > first_call_traces():
            problems.append(
                f"the predict function was traced {traces.count} times; one first "
                f"predict_on_batch call on one thread traces it {first_call_traces()} times. "
                "Warm the entry point you serve with"
            )
        _fail(problems)

    return stress(setup, [worker_for(k) for k in range(threads)], check, trials=trials,
                  seed=seed, timeout_s=_TIMEOUT_S)


def _widen_predict_function_window(model: keras.Model) -> Callable[..., Any]:
    """Give ``model`` Keras's own ``make_predict_function``, with its check-then-set window
    held open :data:`_PREDICT_FUNCTION_WINDOW_S` (a real, GIL-releasing sleep); return it."""
    make = type(model).make_predict_function

    def make_predict_function(force: bool = False) -> Any:
        if model.predict_function is not None and not force:
            return model.predict_function
        time.sleep(_PREDICT_FUNCTION_WINDOW_S)
        return make(model, force=True)

    model.make_predict_function = make_predict_function
    return make_predict_function


def check_shared_predictor(predictor_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a shared predictor class (see :func:`run_shared_predictor`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_shared_predictor(predictor_class, record=seen, **kwargs), "SharedPredictor",
             seen, call_text("warmup.run_shared_predictor", "SharedPredictor", **kwargs))


# --------------------------------------------------------------------------- exercise 3


def run_lazy_model(
    lazy_class: Callable[[Callable[[], keras.Model], tuple[int, ...]], Any],
    *,
    trials: int = TRIALS_LAZY_MODEL,
    threads: int = THREADS,
    seed: int = SEED,
    record: list[Trial] | None = None,
) -> Result:
    """Ask a lazily built model for its model from many threads, early and late.

    First, on one thread: ``lazy_class(factory, input_shape)`` must not call the factory, and
    ``get()`` must return a built model (its weights exist), the same object twice, with the
    factory run once. Then per trial: a factory returning a fresh unbuilt :class:`TinyNet`
    after a short load time (its layers are slow to build, which widens the window); half the
    threads are released together and call ``lazy.get()`` at once, the other half wait until
    a model starts building and call ``get()`` then, while it is being built. Each thread
    calls the model it got on its own batch. A trial passes when the factory ran once, every
    thread got the model it made, no thread raised, outputs match the sequential reference and
    the model holds :data:`EXPECTED_WEIGHTS` weights.

    Args:
        record: When given, each trial's :class:`Trial` is appended to it.

    Returns:
        The result (``ok`` when every trial passed).
    """
    made: list[keras.Model] = []

    def plain_factory() -> keras.Model:
        made.append(TinyNet(seed))
        return made[-1]

    try:
        lazy = lazy_class(plain_factory, (7,))
        if made:
            return Result("error", message=(
                "LazyModel(factory, input_shape) called the factory when it was created; "
                "create the model on the first get(), not before."))
        first, second = lazy.get(), lazy.get()
    except Exception as exc:  # noqa: BLE001 - the student's error, reported to the student
        return _answer_failed("LazyModel", exc)
    if len(made) != 1 or first is not second or first is not made[0]:
        return Result("error", message=(
            f"on one thread, two get() calls ran the factory {len(made)} time(s) and returned "
            f"{'the same model' if first is second else 'different objects'}; expected one "
            "factory call and the factory's model both times."))
    if len(first.weights) != EXPECTED_WEIGHTS:
        return Result("error", message=(
            f"get() returned a model with {len(first.weights)} weights, expected "
            f"{EXPECTED_WEIGHTS}: its weights do not exist yet, so the first threads to call "
            "it would all create them. Build it before you hand it out, by calling it on a "
            "batch of zeros of the input shape (model.build(shape) creates no weights for a "
            "subclassed model without a build() method)."))

    counter = itertools.count()
    first_callers = max(1, threads // 2)

    def setup() -> Trial:
        trial_seed, rows, features = _trial_plan(seed, next(counter))
        inputs = batches(trial_seed, threads, rows, features)
        trial = Trial(None, inputs, _reference(TinyNet, trial_seed, inputs))
        calls = itertools.count(1)

        def factory() -> keras.Model:
            trial.factory_calls = next(calls)
            time.sleep(_FACTORY_LOAD_S)
            trial.made.append(TinyNet(trial_seed, build_delay_s=_BUILD_DELAY_S,
                                      on_build=trial.build_started.set))
            return trial.made[-1]

        trial.subject = lazy_class(factory, (features,))
        trial.factory_calls_in_init = trial.factory_calls
        if record is not None:
            record.append(trial)
        trial.t0 = time.perf_counter()
        return trial

    def worker_for(k: int) -> Callable[[Trial], None]:
        def worker(trial: Trial) -> None:
            if k >= first_callers:
                trial.build_started.wait(_LATE_WAIT_S)
            batch = trial.inputs[k]

            def use() -> Any:
                model = trial.subject.get()
                trial.models[k] = model
                return model(batch)

            trial.outputs[k] = trial.timed(k, use)
        return worker

    def check(trial: Trial) -> None:
        problems = []
        if trial.factory_calls_in_init:
            problems.append("LazyModel called the factory when it was created")
        elif trial.factory_calls != 1:
            problems.append(f"the factory ran {trial.factory_calls} times, expected once")
        distinct = {id(m) for m in trial.models if m is not None}
        if len(distinct) > 1:
            problems.append(f"the threads got {len(distinct)} different models from get(), "
                            "expected one shared model")
        foreign = [k for k, m in enumerate(trial.models)
                   if m is not None and not any(m is made for made in trial.made)]
        if foreign:
            problems.append(f"worker {foreign[0]} got a {type(trial.models[foreign[0]]).__name__}"
                            " from get(), expected the model the factory made")
            _fail(problems)
        model = next((m for m in trial.models if m is not None), None)
        problems += _weights_and_outputs(trial, model, "the model from get()")
        _fail(problems)

    return stress(setup, [worker_for(k) for k in range(threads)], check, trials=trials,
                  seed=seed, timeout_s=_TIMEOUT_S)


#: The lazy model's explore run: threads, and its bound (every schedule with at most
#: LAZY_DEVIATIONS preemptions; then LAZY_SAMPLES seeded samples). Two, because a lock made
#: check-then-act needs two switches (after the first caller's check, and back before the
#: second caller stores its model).
LAZY_EXPLORE_THREADS = 2
LAZY_DEVIATIONS = 2
LAZY_SCHEDULES = 2000
LAZY_SAMPLES = 20
_WARM_MODELS = memo("the warmup checks' warm models")


def _warm_tiny_net(features: int) -> keras.Model:
    """One built, warm :class:`TinyNet` per input width, made once per process."""
    def build() -> keras.Model:
        model = TinyNet(SEED)
        model(np.zeros((1, features), "float32"))
        return model

    return _WARM_MODELS(features, build)


@dataclass
class LazyRun:
    """One explore schedule of a lazy model: factory calls and the model each thread got."""

    lazy: Any = None
    factory_calls: int = 0
    got: list[Any] = field(default_factory=list)


def run_lazy_model_explore(lazy_class: Callable[..., Any], *, seed: int = SEED,
                           schedules: int = LAZY_SCHEDULES) -> Result:
    """Two threads call ``get()`` once each under ``explore``; Keras calls are one step each.

    The factory hands out one warm, built model (so every Keras call is quick and atomic) and
    counts its calls. The check: the factory ran exactly once and every thread got that
    model. This finds races in the answer's own Python around the Keras calls that real
    threads never show under the GIL (a lock itself created check-then-act, a flag set
    before the model), whatever the seed (issue #18, class 1).

    Engine and bound: ``explore``; every schedule with at most two preemptions (60-330 for
    the answers in the tests), then :data:`LAZY_SAMPLES` seeded samples (cap
    :data:`LAZY_SCHEDULES`).
    """
    features = 7
    model = _warm_tiny_net(features)

    def setup() -> LazyRun:
        run = LazyRun(got=[None] * LAZY_EXPLORE_THREADS)

        def factory() -> keras.Model:
            run.factory_calls += 1
            return model

        run.lazy = lazy_class(factory, (features,))
        return run

    def worker(k: int) -> Callable[[LazyRun], None]:
        def call(run: LazyRun) -> None:
            run.got[k] = run.lazy.get()
        return call

    def check(run: LazyRun) -> None:
        problems = []
        if run.factory_calls != 1:
            problems.append(f"the factory ran {run.factory_calls} times, expected once")
        wrong = [k for k, got in enumerate(run.got) if got is not model]
        if wrong:
            problems.append(f"thread(s) {wrong} got {run.got[wrong[0]]!r} from get(), "
                            "expected the one model the factory made")
        _fail(problems)

    return explore(setup, [worker(k) for k in range(LAZY_EXPLORE_THREADS)], check, seed=seed,
                   max_schedules=schedules, timeout_s=_EXPLORE_TIMEOUT_S, samples=LAZY_SAMPLES,
                   deviations=LAZY_DEVIATIONS)


def check_lazy_model(lazy_class: Callable[..., Any], **kwargs: Any) -> None:
    """Grade a lazily built model class (see :func:`run_lazy_model`).

    Engines: ``stress`` first (:data:`TRIALS_LAZY_MODEL` trials of :data:`THREADS` real
    threads on cold, slow-building models: races inside Keras), then ``explore``
    (:func:`run_lazy_model_explore`: races in the answer's Python around the Keras calls).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_lazy_model(lazy_class, record=seen, **kwargs), "LazyModel", seen,
             call_text("warmup.run_lazy_model", "LazyModel", **kwargs))
    _require(run_lazy_model_explore(lazy_class), "LazyModel", [],
             call_text("warmup.run_lazy_model_explore", "LazyModel"))
