"""The notebook's live demonstrations: threads racing on fresh models, counted trial by trial."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np

from autograder.checks.child import Crashed, run_in_children
from autograder.checks.warmup.models import batches
from autograder.checks.warmup.settings import _TIMEOUT_S, EXPECTED_WEIGHTS
from autograder.checks.warmup.traces import TraceLog
from autograder.checks.warmup.trial import Trial
from autograder.harness import Result, stress


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
    trial = holder[-1]  # the trial the result is about (earlier ones ran their threads apart)
    outcome = TrialOutcome(list(trial.errors), len(trial.model.weights),
                           trial.traces.count if trial.traces is not None else 0,
                           trial.span_ms, trial.warm_ms, result)
    if compare and not trial.errors:
        outcome.compared = True
        outcome.mismatched = any(
            not np.array_equal(np.asarray(got), np.asarray(call(trial.model, batch)))
            for got, batch in zip(trial.outputs, trial.inputs, strict=True))
    return outcome
