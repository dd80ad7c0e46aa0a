"""The three graders hidden tests call: a smoke run on one thread, then the exercise's runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.kit import call_text, require, smoke
from autograder.checks.plain import plain_array
from autograder.checks.variables.choice import _choice_problems, run_choice
from autograder.checks.variables.counter import (
    _step_number,
    _steps_variable,
    run_step_counter_explore,
    run_step_counter_stress,
)
from autograder.checks.variables.model import read_versions
from autograder.checks.variables.publisher import _pool, run_publisher_explore, run_publisher_stress
from autograder.checks.variables.settings import (
    CHOICE_READERS,
    CHOICE_UPDATES,
    FIRST_VERSION,
    LAYERS,
    SEED,
    TIMEOUT_S,
)

_COUNTER_HINTS = {
    "race": "make the update one atomic operation on the variable, and make sure the number "
            "a call returns is the one its own update produced, not a later read.",
    "deadlock": "a thread waits for a lock nobody will release (a Lock taken twice by the "
                "same thread, or a lock not released).",
}


def check_step_counter(counter_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a step counter class: ``stress`` (real threads) first, then ``explore``.

    Engines and bounds: ``stress``, 3 trials of 4 real threads x 200 steps (races inside TF
    ops, such as ``assign(v + 1)``); then ``explore`` of 2 threads x 2 steps with
    ``tf.function`` bodies run eagerly, op by op (:func:`run_step_counter_explore`): every
    schedule with at most one preemption, then seeded samples up to 80 schedules. A race in
    the Python around or inside the TF calls fails every run, whatever the seed.
    """
    def once() -> None:
        counter = counter_class()
        _steps_variable(counter)
        first, second = _step_number(counter.step()), _step_number(counter.step())
        assert (first, second) == (1, 2), f"two calls to step() returned {first}, {second}, " \
            "expected 1, 2"
    smoke("StepCounter", once, timeout_s=TIMEOUT_S)
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k != "trials"}
    require(run_step_counter_stress(counter_class, **stress_kwargs), exercise="StepCounter",
            hints=_COUNTER_HINTS,
            again=call_text("variables.run_step_counter_stress", "StepCounter", **stress_kwargs))
    require(run_step_counter_explore(counter_class, **explore_kwargs), exercise="StepCounter",
            hints=_COUNTER_HINTS,
            again=call_text("variables.run_step_counter_explore", "StepCounter",
                            **explore_kwargs))


_PUBLISHER_HINTS = {
    "race": "a reader must never run the model while publish() is changing the weights it "
            "uses, and once publish() returns every new read must use the new weights.",
    "deadlock": "a thread waits for a lock nobody will release.",
    "error": "a publish() or predict() raised while the other threads were running.",
}


def check_publisher(publisher_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a weight publisher class: ``stress`` (real threads), then ``explore``.

    Engines and bounds: ``stress``, :data:`PUBLISHER_TRIALS` trials of one writer and
    :data:`PUBLISHER_READERS` readers (a torn read inside Keras); then ``explore``
    (:func:`run_publisher_explore`): every schedule with at most
    :data:`PUBLISHER_DEVIATIONS` switches at the answer's shared accesses and the layer
    boundary, then :data:`PUBLISHER_SAMPLES` seeded samples. A race in the Python around the
    Keras calls fails every run, whatever the seed.
    """
    pool = _pool(LAYERS)

    def once() -> None:
        publisher = publisher_class(pool.fresh())
        before = read_versions(plain_array(publisher.predict(pool.batch), "predict()"))
        assert before.tolist() == [FIRST_VERSION] * LAYERS, \
            f"before any publish, predict() served versions {before.tolist()}, expected the " \
            f"model's own version {FIRST_VERSION} in every layer"
        publisher.publish(pool.weights[FIRST_VERSION + 1])
        after = read_versions(plain_array(publisher.predict(pool.batch), "predict()"))
        assert after.tolist() == [FIRST_VERSION + 1] * LAYERS, \
            f"after publish(version {FIRST_VERSION + 1}), predict() served versions " \
            f"{after.tolist()}"

    smoke("WeightPublisher", once, timeout_s=TIMEOUT_S)
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k not in ("trials", "updates",
                                                                    "readers")}
    require(run_publisher_stress(publisher_class, pool=pool, **stress_kwargs),
            exercise="WeightPublisher", hints=_PUBLISHER_HINTS,
            again=call_text("variables.run_publisher_stress", "WeightPublisher",
                            **stress_kwargs))
    require(run_publisher_explore(publisher_class, **explore_kwargs),
            exercise="WeightPublisher", hints=_PUBLISHER_HINTS,
            again=call_text("variables.run_publisher_explore", "WeightPublisher",
                            **explore_kwargs))


def check_choice(choose: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade ``choose_publisher`` on the grader's candidates (see :func:`run_choice`)."""
    run = run_choice(choose, seed=seed)
    problems = _choice_problems(run, CHOICE_READERS, CHOICE_UPDATES)
    if problems:
        raise AssertionError("choose_publisher: " + "; ".join(problems[:3]))
