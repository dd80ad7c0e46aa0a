"""The four graders hidden tests call: each exercise's run, its verdict and the threads' errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.kit import call_text, require
from autograder.checks.warmup.lazy import run_lazy_model, run_lazy_model_explore
from autograder.checks.warmup.predictor import run_shared_predictor
from autograder.checks.warmup.serving import run_both_entry_points, run_entry_point
from autograder.checks.warmup.trial import Trial
from autograder.harness import Result


def _raised(result: Result, seen: list[Trial]) -> list[str]:
    """The errors the last trial's threads raised, each as the kit's one informative line
    (none when no trial ran)."""
    return seen[-1].errors if seen and result.schedules_run else []


def check_entry_point(warm_up: Callable[[Any, np.ndarray], Any], **kwargs: Any) -> None:
    """Grade ``warm_up`` (see :func:`run_entry_point`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    result = run_entry_point(warm_up, record=seen, **kwargs)
    require(result, exercise="warm_up", raised=_raised(result, seen),
            again=call_text("warmup.run_entry_point", "warm_up", **kwargs))


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


def check_shared_predictor(predictor_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a shared predictor class (see :func:`run_shared_predictor`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    result = run_shared_predictor(predictor_class, record=seen, **kwargs)
    require(result, exercise="SharedPredictor", raised=_raised(result, seen),
            again=call_text("warmup.run_shared_predictor", "SharedPredictor", **kwargs))


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
    require(run_lazy_model_explore(lazy_class), exercise="LazyModel",
            again=call_text("warmup.run_lazy_model_explore", "LazyModel"))
