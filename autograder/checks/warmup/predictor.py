"""Exercise 2: a shared predictor's first calls from many threads, one thread tracing."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from autograder.checks.warmup.models import _reference, batches, tiny_sequential
from autograder.checks.warmup.settings import (
    _PREDICT_FUNCTION_WINDOW_S,
    _TIMEOUT_S,
    SEED,
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
from autograder.harness import Result, stress


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
