"""Exercise 1, make_shared_network: a network N actor threads can call at once, from its start.

Each trial asks the answer for a fresh network, then releases :data:`NETWORK_THREADS` actor
threads together (``stress``), each calling ``model.predict_on_batch`` on one state of its
own :data:`NETWORK_CALLS` times: what an A3C actor does when it picks an action. A network
that is ready for that serves them without raising, without building or tracing anything
while they run, and gives each actor the output one thread gets for its state.

A model that is not even built (a ``Sequential`` without ``keras.Input``, never called) is
refused before any thread starts: racing N threads on one is lesson 01's demonstration, and
it can crash the whole process (a segmentation fault), which would cost the notebook every
other exercise's points.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.a3c.model import flat_outputs, states
from autograder.checks.a3c.settings import (
    ACTIONS,
    NETWORK_CALLS,
    NETWORK_THREADS,
    NETWORK_TRIALS,
    SEED,
    STATE_SIZE,
    TIMEOUT_S,
)
from autograder.checks.kit import describe_error
from autograder.checks.plain import NotPlainData, plain_array
from autograder.harness import Result, stress


class TraceCount:
    """Counts the traces of ``model``'s predict function from now on, and which threads ran them.

    Keras calls ``predict_step`` only while tracing the predict function (the traced graph then
    runs without Python), so each call is one trace. TensorFlow's own count of the function's
    traces, and whether the function object was replaced, are read too (:meth:`traces`).
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.threads: list[int] = []
        original = model.predict_step

        @functools.wraps(original)
        def predict_step(data: Any) -> Any:
            self.threads.append(threading.get_ident())
            return original(data)

        model.predict_step = predict_step
        self.wrapper = predict_step
        self.function = model.__dict__.get("predict_function")
        self.function_count = _tracing_count(self.function)

    def traces(self) -> int:
        """Traces since this count started, by the largest of the three counts."""
        function = self.model.__dict__.get("predict_function")
        if function is not self.function:
            by_function = max(1, _tracing_count(function)) if function is not None else 0
        else:
            by_function = _tracing_count(function) - self.function_count
        return max(len(self.threads), by_function)

    @property
    def intact(self) -> bool:
        """Whether the model still calls this count's ``predict_step``."""
        return self.model.__dict__.get("predict_step") is self.wrapper


def _tracing_count(function: Any) -> int:
    counter = getattr(function, "experimental_get_tracing_count", None)
    return int(counter()) if callable(counter) else 0


@dataclass
class NetworkTrial:
    """One trial: the answer's network, each actor's state and what its calls returned."""

    model: Any
    inputs: list[np.ndarray]
    weights: int
    count: TraceCount
    outputs: list[list[Any]] = field(default_factory=list)


def not_ready(model: Any) -> str | None:
    """Why ``model`` cannot be handed to actor threads as it is (None when it can be tried).

    Only what would make the threaded run itself dangerous or meaningless: not a Keras model,
    or not built (its weights would be created by the actors' first calls, all at once).
    """
    import keras

    if not isinstance(model, keras.Model):
        return (f"make_shared_network() returned {type(model).__name__}; expected the "
                "keras.Model the actors share")
    if not model.built:
        return ("expected a built network, but make_shared_network() returned a model that "
                "has no weights yet: the actors' first calls would create them, several "
                "threads at once (see 'See it break'). Build it with keras.Input (a functional "
                "model) and warm it before any actor starts")
    shape = getattr(model, "input_shape", None)
    if isinstance(shape, tuple) and tuple(shape[1:]) != (STATE_SIZE,):
        return (f"the model's input shape is {shape}; expected (None, {STATE_SIZE}): one state "
                f"of {STATE_SIZE} numbers per row")
    return None


def _check(trial: NetworkTrial, observed: list | None = None) -> None:
    model, count = trial.model, trial.count
    problems = []
    outputs: list[list[float]] = []
    expected: list[list[float]] = []
    if not count.intact:
        problems.append("the model's predict_step was replaced while the actors ran, so the "
                        "grader could not count its traces; leave the model's methods as "
                        "Keras made them")
    traces = count.traces()
    if traces:
        tracers = len(set(count.threads))
        problems.append(
            f"the predict function was traced {traces} time(s) while {len(trial.inputs)} "
            f"actors called predict_on_batch at once"
            + (f" ({tracers} different threads traced)" if tracers > 1 else "")
            + "; expected 0: a ready network is warm for exactly the call the actors make "
            f"(predict_on_batch on one float32 state, shape (1, {STATE_SIZE})), made once on "
            "one thread before they start; a batch of another shape or dtype is another trace")
    if len(model.weights) != trial.weights:
        problems.append(f"the model held {trial.weights} weights before the actors ran and "
                        f"{len(model.weights)} after: the actors' calls built part of it again")
    for index, (state, got) in enumerate(zip(trial.inputs, trial.outputs, strict=True)):
        want = flat_outputs(model.predict_on_batch(state))
        expected.append([float(v) for v in want])
        for call in got:
            try:
                values = flat_outputs(call) if isinstance(call, (list, tuple, dict)) else \
                    plain_array(call, "predict_on_batch").reshape(-1)
            except NotPlainData as lie:
                problems.append(f"actor {index}: {lie}")
                break
            if values.size != ACTIONS + 1:
                problems.append(
                    f"actor {index}: predict_on_batch on one state returned {values.size} "
                    f"numbers; expected {ACTIONS + 1} ({ACTIONS} policy logits and a value)")
                break
            if values.shape != want.shape or not np.allclose(values, want, rtol=1e-5,
                                                            atol=1e-6):
                problems.append(f"actor {index}: predict_on_batch returned another output for "
                                "its state than the same call on one thread afterwards")
                break
            outputs.append([float(v) for v in values])
        if problems:
            break
    if problems:
        raise AssertionError("; ".join(problems))
    if observed is not None:
        observed.append({"traces": int(traces), "intact": bool(count.intact),
                         "weights_before": int(trial.weights),
                         "weights_after": len(model.weights),
                         "outputs": outputs, "expected": expected})


def run_shared_network(make_network: Callable[[], Any], *, trials: int = NETWORK_TRIALS,
                       threads: int = NETWORK_THREADS, seed: int = SEED,
                       observed: list | None = None) -> Result:
    """Serve a fresh network from ``make_network()`` to actor threads released together.

    Per trial: ``make_network()`` on this thread, then ``threads`` real threads each call
    ``model.predict_on_batch(state)`` :data:`NETWORK_CALLS` times on a one-row state of its
    own. A trial passes when no actor raised, nothing was traced or built while they ran, and
    every output equals the same call made on one thread afterwards. When ``observed`` is
    given, each trial that passes appends what it saw (for the judge): the traces counted,
    whether the count was intact, the weights before and after, every call's outputs (actor
    by actor) and each actor's one-thread output.

    A network that is not built (:func:`not_ready`) fails before any thread starts.
    """
    try:
        first = make_network()
    except Exception as exc:  # noqa: BLE001 - the student's error, reported to the student
        return Result("error", message=f"make_shared_network() raised {describe_error(exc)} "
                                       "on one thread, before any actor started.")
    problem = not_ready(first)
    if problem:
        return Result("error", message=problem + ". No actor thread was started.")
    del first
    plans = itertools.count()

    def setup() -> NetworkTrial:
        model = make_network()
        problem = not_ready(model)
        if problem:
            raise AssertionError(problem)
        inputs = states(seed * 1000 + next(plans), threads)
        trial = NetworkTrial(model, inputs, len(model.weights), TraceCount(model))
        trial.outputs = [[] for _ in range(threads)]
        return trial

    def actor(index: int) -> Callable[[NetworkTrial], None]:
        def run(trial: NetworkTrial) -> None:
            state, mine, call = trial.inputs[index], trial.outputs[index], \
                trial.model.predict_on_batch
            for _ in range(NETWORK_CALLS):
                mine.append(call(state))
        run.__name__ = f"actor_{index}"
        return run

    return stress(setup, [actor(k) for k in range(threads)],
                  functools.partial(_check, observed=observed), trials=trials, seed=seed,
                  timeout_s=TIMEOUT_S)
