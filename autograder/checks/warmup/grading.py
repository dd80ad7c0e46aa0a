"""The four graders hidden tests call: each exercise's run, its verdict and the threads' errors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.report import call_text, require_ok
from autograder.checks.warmup.lazy import run_lazy_model, run_lazy_model_explore
from autograder.checks.warmup.predictor import run_shared_predictor
from autograder.checks.warmup.serving import run_both_entry_points, run_entry_point
from autograder.checks.warmup.trial import Trial
from autograder.harness import Result


def _require(result: Result, exercise: str, seen: list[Trial], again: str) -> None:
    """Pass, or fail with the harness's explanation plus the errors the last trial's threads
    raised, each on one informative line (Keras and TF put theirs deep in long messages);
    ``again`` is the call that gives the verdict again (see :func:`require_ok`)."""
    errors = Counter(seen[-1].errors) if seen and result.schedules_run else Counter()
    listed = "\n".join(f"  {n} x {error}" for error, n in errors.most_common(5))
    require_ok(result, exercise=exercise, show_figure=result.schedules_run > 0,
               again=again if result.schedules_run else None,
               details=f"What the threads raised in that trial:\n{listed}" if listed else None)


def check_entry_point(warm_up: Callable[[Any, np.ndarray], Any], **kwargs: Any) -> None:
    """Grade ``warm_up`` (see :func:`run_entry_point`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_entry_point(warm_up, record=seen, **kwargs), "warm_up", seen,
             call_text("warmup.run_entry_point", "warm_up", **kwargs))


def check_both_entry_points(warm_up_both: Callable[[Any, np.ndarray], Any],
                            **kwargs: Any) -> None:
    """Grade ``warm_up_both`` (see :func:`run_both_entry_points`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_both_entry_points(warm_up_both, record=seen, **kwargs), "warm_up_both", seen,
             call_text("warmup.run_both_entry_points", "warm_up_both", **kwargs))


def check_shared_predictor(predictor_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a shared predictor class (see :func:`run_shared_predictor`).

    Raises:
        AssertionError: With the student-facing explanation, when a trial fails.
    """
    seen: list[Trial] = []
    _require(run_shared_predictor(predictor_class, record=seen, **kwargs), "SharedPredictor",
             seen, call_text("warmup.run_shared_predictor", "SharedPredictor", **kwargs))


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
