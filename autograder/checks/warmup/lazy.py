"""Exercise 3: a lazily built model asked for from many threads, early, late and explored."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np

from autograder.checks.cache import memo
from autograder.checks.warmup.models import TinyNet, _reference, batches
from autograder.checks.warmup.settings import (
    _BUILD_DELAY_S,
    _EXPLORE_TIMEOUT_S,
    _FACTORY_LOAD_S,
    _LATE_WAIT_S,
    _TIMEOUT_S,
    EXPECTED_WEIGHTS,
    LAZY_DEVIATIONS,
    LAZY_EXPLORE_THREADS,
    LAZY_SAMPLES,
    LAZY_SCHEDULES,
    SEED,
    THREADS,
    TRIALS_LAZY_MODEL,
)
from autograder.checks.warmup.trial import (
    Trial,
    _answer_failed,
    _fail,
    _trial_plan,
    _weights_and_outputs,
)
from autograder.harness import Result, explore, stress


def run_lazy_model(
    lazy_class: Callable[[Callable[[], keras.Model], tuple[int, ...]], Any],
    *,
    trials: int = TRIALS_LAZY_MODEL,
    threads: int = THREADS,
    seed: int = SEED,
    record: list[Trial] | None = None,
) -> Result:
    """Ask a lazily built model for its model from many threads, early and late.

    First, on one thread: ``lazy_class(factory, input_shape)`` must not call the factory, and
    ``get()`` must return a built model (its weights exist), the same object twice, with the
    factory run once. Then per trial: a factory returning a fresh unbuilt :class:`TinyNet`
    after a short load time (its layers are slow to build, which widens the window); half the
    threads are released together and call ``lazy.get()`` at once, the other half wait until
    a model starts building and call ``get()`` then, while it is being built. Each thread
    calls the model it got on its own batch. A trial passes when the factory ran once, every
    thread got the model it made, no thread raised, outputs match the sequential reference and
    the model holds :data:`EXPECTED_WEIGHTS` weights.

    Args:
        record: When given, each trial's :class:`Trial` is appended to it.

    Returns:
        The result (``ok`` when every trial passed).
    """
    made: list[keras.Model] = []

    def plain_factory() -> keras.Model:
        made.append(TinyNet(seed))
        return made[-1]

    try:
        lazy = lazy_class(plain_factory, (7,))
        if made:
            return Result("error", message=(
                "LazyModel(factory, input_shape) called the factory when it was created; "
                "create the model on the first get(), not before."))
        first, second = lazy.get(), lazy.get()
    except Exception as exc:  # noqa: BLE001 - the student's error, reported to the student
        return _answer_failed("LazyModel", exc)
    if len(made) != 1 or first is not second or first is not made[0]:
        return Result("error", message=(
            f"on one thread, two get() calls ran the factory {len(made)} time(s) and returned "
            f"{'the same model' if first is second else 'different objects'}; expected one "
            "factory call and the factory's model both times."))
    if len(first.weights) != EXPECTED_WEIGHTS:
        return Result("error", message=(
            f"get() returned a model with {len(first.weights)} weights, expected "
            f"{EXPECTED_WEIGHTS}: its weights do not exist yet, so the first threads to call "
            "it would all create them. Build it before you hand it out, by calling it on a "
            "batch of zeros of the input shape (model.build(shape) creates no weights for a "
            "subclassed model without a build() method)."))

    counter = itertools.count()
    first_callers = max(1, threads // 2)

    def setup() -> Trial:
        trial_seed, rows, features = _trial_plan(seed, next(counter))
        inputs = batches(trial_seed, threads, rows, features)
        trial = Trial(None, inputs, _reference(TinyNet, trial_seed, inputs))
        calls = itertools.count(1)

        def factory() -> keras.Model:
            trial.factory_calls = next(calls)
            time.sleep(_FACTORY_LOAD_S)
            trial.made.append(TinyNet(trial_seed, build_delay_s=_BUILD_DELAY_S,
                                      on_build=trial.build_started.set))
            return trial.made[-1]

        trial.subject = lazy_class(factory, (features,))
        trial.factory_calls_in_init = trial.factory_calls
        if record is not None:
            record.append(trial)
        trial.t0 = time.perf_counter()
        return trial

    def worker_for(k: int) -> Callable[[Trial], None]:
        def worker(trial: Trial) -> None:
            if k >= first_callers:
                trial.build_started.wait(_LATE_WAIT_S)
            batch = trial.inputs[k]

            def use() -> Any:
                model = trial.subject.get()
                trial.models[k] = model
                return model(batch)

            trial.outputs[k] = trial.timed(k, use)
        return worker

    def check(trial: Trial) -> None:
        trial.checked = True
        problems = []
        if trial.factory_calls_in_init:
            problems.append("LazyModel called the factory when it was created")
        elif trial.factory_calls != 1:
            problems.append(f"the factory ran {trial.factory_calls} times, expected once")
        distinct = {id(m) for m in trial.models if m is not None}
        if len(distinct) > 1:
            problems.append(f"the threads got {len(distinct)} different models from get(), "
                            "expected one shared model")
        foreign = [k for k, m in enumerate(trial.models)
                   if m is not None and not any(m is made for made in trial.made)]
        if foreign:
            problems.append(f"worker {foreign[0]} got a {type(trial.models[foreign[0]]).__name__}"
                            " from get(), expected the model the factory made")
            _fail(problems)
        model = next((m for m in trial.models if m is not None), None)
        problems += _weights_and_outputs(trial, model, "the model from get()")
        _fail(problems)

    return stress(setup, [worker_for(k) for k in range(threads)], check, trials=trials,
                  seed=seed, timeout_s=_TIMEOUT_S)


_WARM_MODELS = memo("the warmup checks' warm models")


def _warm_tiny_net(features: int) -> keras.Model:
    """One built, warm :class:`TinyNet` per input width, made once per process."""
    def build() -> keras.Model:
        model = TinyNet(SEED)
        model(np.zeros((1, features), "float32"))
        return model

    return _WARM_MODELS(features, build)


@dataclass
class LazyRun:
    """One explore schedule of a lazy model: factory calls and the model each thread got."""

    lazy: Any = None
    factory_calls: int = 0
    got: list[Any] = field(default_factory=list)


def run_lazy_model_explore(lazy_class: Callable[..., Any], *, seed: int = SEED,
                           schedules: int = LAZY_SCHEDULES,
                           observed: list | None = None) -> Result:
    """Two threads call ``get()`` once each under ``explore``; Keras calls are one step each.

    The factory hands out one warm, built model (so every Keras call is quick and atomic) and
    counts its calls. The check: the factory ran exactly once and every thread got that
    model. This finds races in the answer's own Python around the Keras calls that real
    threads never show under the GIL (a lock itself created check-then-act, a flag set
    before the model), whatever the seed (issue #18, class 1).

    Engine and bound: ``explore``; every schedule with at most two preemptions (60-330 for
    the answers in the tests), then :data:`LAZY_SAMPLES` seeded samples (cap
    :data:`LAZY_SCHEDULES`). When ``observed`` is given, each schedule appends its factory
    calls and, per thread, whether it got the factory's model (for the judge).
    """
    features = 7
    model = _warm_tiny_net(features)

    def setup() -> LazyRun:
        run = LazyRun(got=[None] * LAZY_EXPLORE_THREADS)

        def factory() -> keras.Model:
            run.factory_calls += 1
            return model

        run.lazy = lazy_class(factory, (features,))
        return run

    def worker(k: int) -> Callable[[LazyRun], None]:
        def call(run: LazyRun) -> None:
            run.got[k] = run.lazy.get()
        return call

    def check(run: LazyRun) -> None:
        if observed is not None:
            observed.append({"factory_calls": run.factory_calls,
                             "got_the_model": [got is model for got in run.got]})
        problems = []
        if run.factory_calls != 1:
            problems.append(f"the factory ran {run.factory_calls} times, expected once")
        wrong = [k for k, got in enumerate(run.got) if got is not model]
        if wrong:
            problems.append(f"thread(s) {wrong} got {run.got[wrong[0]]!r} from get(), "
                            "expected the one model the factory made")
        _fail(problems)

    return explore(setup, [worker(k) for k in range(LAZY_EXPLORE_THREADS)], check, seed=seed,
                   max_schedules=schedules, timeout_s=_EXPLORE_TIMEOUT_S, samples=LAZY_SAMPLES,
                   deviations=LAZY_DEVIATIONS)
