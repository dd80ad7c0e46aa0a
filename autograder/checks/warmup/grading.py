"""The four graders hidden tests call: each exercise's run, its verdict and the threads' errors.

Each reports, once its verdict passed, what every trial's threads did (weights, traces, errors,
outputs against the one-thread reference; the lazy model's factory calls and the models the
threads got) for the host's judge (:mod:`autograder.judges.warmup`, which decides).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.kit import call_text, explored_report, report, require
from autograder.checks.plain import NotPlainData, plain_array
from autograder.checks.warmup.lazy import run_lazy_model, run_lazy_model_explore
from autograder.checks.warmup.predictor import run_shared_predictor, run_shared_predictor_explore
from autograder.checks.warmup.serving import run_both_entry_points, run_entry_point
from autograder.checks.warmup.traces import first_call_traces
from autograder.checks.warmup.trial import Trial
from autograder.harness import Result


def _raised(result: Result, seen: list[Trial]) -> list[str]:
    """The errors the last trial's threads raised, each as the kit's one informative line
    (none when no trial ran)."""
    return seen[-1].errors if seen and result.schedules_run else []


def _rows(value: Any) -> list | None:
    """An output (or reference) as nested lists of floats, or None when it is not an array."""
    if value is None:
        return None
    try:
        return np.asarray(plain_array(value, "an output"), dtype="float64").tolist()
    except (NotPlainData, TypeError, ValueError):
        return None


def _trial_seen(trial: Trial) -> dict:
    """What one trial's threads did, as plain data for the judge."""
    model = trial.model if trial.model is not None else next(
        (m for m in trial.models if m is not None), None)
    traces = trial.traces
    return {
        "weights": len(model.weights) if model is not None else None,
        "calls": len(trial.calls),
        "errors": len(trial.errors),
        "outputs": [_rows(output) for output in trial.outputs],
        "expected": [_rows(expected) for expected in trial.expected],
        "traces": traces.count if traces is not None else None,
        "function_traces": traces.function_traces() if traces is not None else None,
        "tracing_threads": traces.tracing_threads if traces is not None else None,
        "intact": traces.intact if traces is not None else None,
        "warm_threads": trial.warm_threads,
        "factory_calls": trial.factory_calls,
        "factory_calls_in_init": trial.factory_calls_in_init,
        "models": len({id(m) for m in trial.models if m is not None}),
        "foreign_models": sum(1 for m in trial.models if m is not None
                              and not any(m is made for made in trial.made)),
    }


def _report_trials(result: Result, seen: list[Trial], **more: Any) -> None:
    report({"trials": [_trial_seen(trial) for trial in seen if trial.checked],
            "schedules_run": result.schedules_run, **more})


def check_entry_point(warm_up: Callable[[Any, np.ndarray], Any], **kwargs: Any) -> None:
    """Grade ``warm_up`` (see :func:`run_entry_point`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    result = run_entry_point(warm_up, record=seen, **kwargs)
    require(result, exercise="warm_up", raised=_raised(result, seen),
            again=call_text("warmup.run_entry_point", "warm_up", **kwargs))
    _report_trials(result, seen)


def check_both_entry_points(warm_up_both: Callable[[Any, np.ndarray], Any],
                            **kwargs: Any) -> None:
    """Grade ``warm_up_both`` (see :func:`run_both_entry_points`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    result = run_both_entry_points(warm_up_both, record=seen, **kwargs)
    require(result, exercise="warm_up_both", raised=_raised(result, seen),
            again=call_text("warmup.run_both_entry_points", "warm_up_both", **kwargs))
    _report_trials(result, seen)


def check_shared_predictor(predictor_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a shared predictor class: :func:`run_shared_predictor` (real threads on cold Keras
    models), then :func:`run_shared_predictor_explore` (a cold model in plain Python, under
    ``explore``: the answer's first-call gate, whatever the seed).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    result = run_shared_predictor(predictor_class, record=seen, **kwargs)
    require(result, exercise="SharedPredictor", raised=_raised(result, seen),
            again=call_text("warmup.run_shared_predictor", "SharedPredictor", **kwargs))
    schedules: list = []
    explored = run_shared_predictor_explore(predictor_class, observed=schedules)
    require(explored, exercise="SharedPredictor",
            again=call_text("warmup.run_shared_predictor_explore", "SharedPredictor"))
    _report_trials(result, seen, first_call_traces=first_call_traces(),
                   explore=explored_report(explored, schedules))


def check_lazy_model(lazy_class: Callable[..., Any], **kwargs: Any) -> None:
    """Grade a lazily built model class (see :func:`run_lazy_model`).

    Engines: ``stress`` first (:data:`TRIALS_LAZY_MODEL` trials of :data:`THREADS` real
    threads on cold, slow-building models: races inside Keras), then ``explore``
    (:func:`run_lazy_model_explore`: races in the answer's Python around the Keras calls).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    result = run_lazy_model(lazy_class, record=seen, **kwargs)
    require(result, exercise="LazyModel", raised=_raised(result, seen),
            again=call_text("warmup.run_lazy_model", "LazyModel", **kwargs))
    schedules: list = []
    explored = run_lazy_model_explore(lazy_class, observed=schedules)
    require(explored, exercise="LazyModel",
            again=call_text("warmup.run_lazy_model_explore", "LazyModel"))
    _report_trials(result, seen, explore=explored_report(explored, schedules))
