"""Exercise 1, StepCounter: steps recorded from many threads, under ``explore`` and ``stress``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.checks.kit import functions_run_eagerly
from autograder.checks.plain import NotPlainData, plain, plain_array
from autograder.checks.variables.settings import (
    COUNTER_EXPLORE_STEPS,
    COUNTER_EXPLORE_THREADS,
    COUNTER_FIRST_USE_DEVIATIONS,
    COUNTER_FIRST_USE_SCHEDULES,
    COUNTER_SCHEDULES,
    COUNTER_STRESS_STEPS,
    COUNTER_STRESS_THREADS,
    COUNTER_TRIALS,
    EXPLORE_TIMEOUT_S,
    SEED,
    TIMEOUT_S,
)
from autograder.harness import Result, explore, stress


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


def _counter_check(expected: int, observed: list | None = None
                   ) -> Callable[[CounterTrial], None]:
    """The step counter's check; when ``observed`` is given, each run that passed appends (for
    the judge) the variable's final count and the step numbers each thread's calls returned."""
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
        if observed is not None:
            observed.append({"recorded": recorded, "numbers": by_thread})
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
                             schedules: int | None = None, observed: list | None = None,
                             first_use: bool = False) -> Result:
    """Two threads call ``step()`` twice each under ``explore``, ``tf.function``s run eagerly.

    With ``first_use``: two threads call ``step()`` once each on a new counter, every schedule
    within :data:`COUNTER_FIRST_USE_DEVIATIONS` departures (no samples), TF calls and
    ``tf.function`` calls whole: a lock made on first use by both threads at once.
    ``schedules`` defaults to :data:`COUNTER_SCHEDULES`, or :data:`COUNTER_FIRST_USE_SCHEDULES`
    with ``first_use``.

    TF ops run atomically; the scheduler switches between them, wherever the answer's Python
    lets another thread in (between a read and a write, between an update and a read-back).
    A ``tf.function`` is run eagerly (``tf.config.run_functions_eagerly``) with its body
    interleaved (``explore(..., callbacks=True)``), so each of its ops is one step: an
    ``assign_add`` and a separate read-back inside one ``tf.function`` hand out a duplicate
    number in a schedule the bounded search always reaches (issue #18, class 4; real threads
    found it in 5 of 7 grading runs). Sound for failing: graph mode runs a function's stateful
    ops in program order and never as one atomic step, so every interleaving of the eager ops
    is one graph mode allows (Python inside a function, such as a lock taken while tracing,
    runs on every eager call, so eager mode can only hide a race, never add one). The one such
    hiding that matters, a Python lock entered with ``with`` inside the function, is undone:
    the scheduler leaves that lock out, as the traced graph does
    (:func:`autograder.harness.primitives.elide_traced_lock`).

    Search bound: every schedule with at most one preemption (26-50 schedules for the answers
    in the tests), then seeded samples up to ``schedules``. When ``observed`` is given, each
    schedule that passed appends what it saw (see :func:`_counter_check`).
    """
    threads, steps = COUNTER_EXPLORE_THREADS, 1 if first_use else COUNTER_EXPLORE_STEPS
    bound = ({"max_schedules": schedules or COUNTER_FIRST_USE_SCHEDULES, "samples": 0,
              "deviations": COUNTER_FIRST_USE_DEVIATIONS} if first_use
             else {"max_schedules": schedules or COUNTER_SCHEDULES})

    def setup() -> CounterTrial:
        return CounterTrial(counter_class(), [[] for _ in range(threads)])

    with functions_run_eagerly():
        return explore(setup, _counter_workers(steps, threads),
                       _counter_check(threads * steps, observed),
                       seed=seed, timeout_s=EXPLORE_TIMEOUT_S, callbacks=not first_use,
                       **bound)


def run_step_counter_stress(counter_class: Callable[[], Any], *, seed: int = SEED,
                            trials: int = COUNTER_TRIALS, observed: list | None = None
                            ) -> Result:
    """Four real threads call ``step()`` 201 times each (an odd number: an answer that hands
    each thread its numbers in blocks of two leaves one unused), released together, per
    trial. When ``observed`` is given, each trial that passed appends what it saw (see
    :func:`_counter_check`)."""
    threads, steps = COUNTER_STRESS_THREADS, COUNTER_STRESS_STEPS

    def setup() -> CounterTrial:
        return CounterTrial(counter_class(), [[] for _ in range(threads)])

    return stress(setup, _counter_workers(steps, threads),
                  _counter_check(threads * steps, observed),
                  trials=trials, seed=seed, timeout_s=TIMEOUT_S)
