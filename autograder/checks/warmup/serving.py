"""Exercises 1 and 4: warm a model, then serve one or both predict entry points from threads."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.checks.warmup.models import (
    _reference,
    batches,
    predict,
    predict_on_batch,
    tiny_sequential,
)
from autograder.checks.warmup.settings import (
    _TIMEOUT_S,
    SEED,
    THREADS,
    TRIALS_BOTH_ENTRY_POINTS,
    TRIALS_ENTRY_POINT,
)
from autograder.checks.warmup.traces import TraceLog
from autograder.checks.warmup.trial import (
    _REPLACED,
    Trial,
    _answer_failed,
    _fail,
    _trial_plan,
    _weights_and_outputs,
)
from autograder.harness import Result, stress


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
        trial.warm_threads = len(set(trial.traces.threads) - {threading.get_ident()})
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
        trial.checked = True
        problems = _weights_and_outputs(trial, trial.model, served)
        if trial.warm_threads:
            problems.append(
                f"{exercise} traced the model on {trial.warm_threads} other thread(s), "
                f"expected every warm-up call on the thread that calls {exercise}: threads "
                "that warm a cold model together race as in \"See it break\", and a warm-up "
                "that returns before its threads end races with serving")
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
