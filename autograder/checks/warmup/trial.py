"""One threaded trial: its shared state, timed calls and the problems every exercise checks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.kit import describe_error
from autograder.checks.plain import NotPlainData, plain_array
from autograder.checks.warmup.settings import EXPECTED_WEIGHTS
from autograder.checks.warmup.traces import TraceLog
from autograder.harness import Result


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
        warm_threads: How many threads other than the one that called the warm-up traced the
            model during it (a warm-up must make every call on its caller's thread).
        factory_calls: How many times the model factory ran (lazy exercise).
        factory_calls_in_init: How many of those ran inside the answer's ``__init__``.
        build_started: Set once a layer of a factory-made model starts building (lazy
            exercise).
        subject: The student's object under test (predictor, lazy model).
        t0: Time origin of :attr:`calls`.
        checked: Set when the trial was checked: ``stress`` counted it (its threads ran at
            the same time); one whose threads ran one after another was run again instead.
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
    warm_threads: int = 0
    factory_calls: int = 0
    factory_calls_in_init: int = 0
    build_started: threading.Event = field(default_factory=threading.Event)
    subject: Any = None
    t0: float = field(default_factory=time.perf_counter)
    checked: bool = False

    def __post_init__(self) -> None:
        self.outputs = [None] * len(self.inputs)
        self.models = [None] * len(self.inputs)

    def timed(self, index: int, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` for worker ``index``, recording when it ran and whether it raised."""
        start = time.perf_counter() - self.t0
        try:
            value = fn()
        except Exception as exc:
            self.calls.append(Call(index, start, time.perf_counter() - self.t0,
                                   describe_error(exc)))
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
    return Result("error", message=f"{what} raised {describe_error(exc)} when run on one thread, "
                                   "before any threads were started.")
