"""Exercise 2: a shared predictor's first calls from many threads, one thread tracing."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np

from autograder.checks.warmup.models import _reference, batches, tiny_sequential
from autograder.checks.warmup.settings import (
    _EXPLORE_TIMEOUT_S,
    _PREDICT_FUNCTION_WINDOW_S,
    _TIMEOUT_S,
    SEED,
    SHARED_DEVIATIONS,
    SHARED_EXPLORE_THREADS,
    SHARED_SAMPLES,
    SHARED_SCHEDULES,
    THREADS,
    TRIALS_SHARED_PREDICTOR,
)
from autograder.checks.warmup.traces import TraceLog, first_call_traces
from autograder.checks.warmup.trial import (
    _REPLACED,
    Trial,
    _answer_failed,
    _fail,
    _trial_plan,
    _weights_and_outputs,
)
from autograder.harness import Result, explore, stress
from autograder.harness.tamper import opaque


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
        trial.checked = True
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


class ColdModel:
    """A stand-in for an unbuilt Keras model, in plain Python, so that ``explore`` can stop a
    thread in the middle of its first call. As in Keras, the first call sets ``built`` early
    and goes on (tracing) after that; a call that comes meanwhile, or a second first call, is
    recorded through ``first_call`` and ``during_first`` (opaque hooks that only append to
    the check's own lists). ``predict_on_batch``, ``predict`` and calling the model answer
    ``2 * batch``."""

    def __init__(self, first_call: Callable[[int], None],
                 during_first: Callable[[int], None]) -> None:
        self.tracing = False
        self.built = False
        self.traces = 0
        self._first_call, self._during_first = first_call, during_first

    def predict_on_batch(self, batch: Any) -> Any:
        """``2 * batch``; the first call builds, then traces."""
        if not self.built:
            self._first_call(1)
            self.tracing = True
            self.built = True
            self._trace()
            self.tracing = False
        elif self.tracing:
            self._during_first(1)
        return np.asarray(batch, dtype="float32") * 2.0

    def _trace(self) -> None:
        """The tracing after the build: steps another thread may run beside."""
        self.traces += 1

    def predict(self, batch: Any, **_: Any) -> Any:
        return self.predict_on_batch(batch)

    def __call__(self, batch: Any, **_: Any) -> Any:
        return self.predict_on_batch(batch)


@dataclass
class ColdRun:
    """One explored schedule of a shared predictor: the first calls of its cold model, the
    calls made during the first one, and what each thread got."""

    first_calls: list[int] = field(default_factory=list)
    during_first: list[int] = field(default_factory=list)
    predictor: Any = None
    got: list[Any] = field(default_factory=list)


def run_shared_predictor_explore(predictor_class: Callable[[Any], Any], *, seed: int = SEED,
                                 schedules: int = SHARED_SCHEDULES,
                                 observed: list | None = None) -> Result:
    """Two threads make the first calls of a shared predictor under ``explore``.

    The model is a :class:`ColdModel`: plain Python, so the scheduler can switch threads in
    the middle of its first call, after ``built`` turned True and before tracing ended (where
    a real first call spends most of its time). The check: exactly one first call, no call
    while it ran, and each thread got ``2 * batch``. This finds what real threads under the
    GIL almost never show: a first-call flag claimed without a lock (two first calls), and a
    fast path that trusts ``model.built`` (a call in the middle of the first one).

    Engine and bound: ``explore``; every schedule with at most :data:`SHARED_DEVIATIONS`
    preemptions, then :data:`SHARED_SAMPLES` seeded samples (cap :data:`SHARED_SCHEDULES`).
    When ``observed`` is given, each schedule appends its first calls, the calls made during
    the first one and, per thread, whether it got its answer (for the judge).
    """
    batch = np.arange(6, dtype="float32").reshape(2, 3)

    def setup() -> ColdRun:
        run = ColdRun(got=[None] * SHARED_EXPLORE_THREADS)
        model = ColdModel(opaque(run.first_calls.append), opaque(run.during_first.append))
        run.predictor = predictor_class(model)
        return run

    def worker(k: int) -> Callable[[ColdRun], None]:
        def call(run: ColdRun) -> None:
            run.got[k] = run.predictor(batch)
        return call

    def check(run: ColdRun) -> None:
        right = [got is not None and np.shape(got) == batch.shape
                 and bool(np.allclose(np.asarray(got, dtype="float64"), 2.0 * batch))
                 for got in run.got]
        first, during = len(run.first_calls), len(run.during_first)
        if observed is not None:
            observed.append({"first_calls": first, "during_first": during,
                             "answered": right})
        problems = []
        if first != 1:
            problems.append(f"{first} threads made the model's first call, expected exactly "
                            "one (the one that builds and traces)")
        if during:
            problems.append("a thread called the model while its first call was still "
                            "running (model.built turns True before the first call is done: "
                            "wait until that call has returned)")
        if not all(right):
            problems.append(f"thread(s) {[k for k, ok in enumerate(right) if not ok]} did not "
                            "get model.predict_on_batch(batch)")
        _fail(problems)

    return explore(setup, [worker(k) for k in range(SHARED_EXPLORE_THREADS)], check,
                   seed=seed, max_schedules=schedules, timeout_s=_EXPLORE_TIMEOUT_S,
                   samples=SHARED_SAMPLES, deviations=SHARED_DEVIATIONS)
