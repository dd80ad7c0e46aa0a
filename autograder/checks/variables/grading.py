"""The three graders hidden tests call: a smoke run on one thread, then the exercise's runs.

Each one that passes reports (:func:`~autograder.checks.kit.report`) what it saw for the
host's judge (:mod:`autograder.judges.variables`): what the one-thread run returned, one entry
per ``stress`` trial and per explored schedule and how many ran, or what ``choose_publisher``
measured, reported and chose next to what the grader's candidates recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.kit import call_text, explored_report, report, require, smoke
from autograder.checks.plain import plain_array
from autograder.checks.variables.choice import (
    AtEveryRate,
    _choice_observation,
    _choice_problems,
    run_choice,
)
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
    ONE_THREAD_IN_A_ROW,
    PUBLISHER_EXPLORE_READERS,
    SEED,
    TIMEOUT_S,
)

_COUNTER_HINTS = {
    "race": "make the update one atomic operation on the variable, and make sure the number "
            "a call returns is the one its own update produced, not a later read. A Python "
            "lock inside a tf.function is taken only while it is traced: the graph every call "
            "runs has no lock (explore leaves it out, as the graph does).",
    "deadlock": "a thread waits for a lock nobody will release (a Lock taken twice by the "
                "same thread, or a lock not released).",
}


_FIRST_USE = ("on a new counter, two threads' first step() calls ran at once: make the lock "
              "in __init__, before any thread can call; a lock made on first use (if the lock "
              "is None, make it) can be made twice, by two threads that each saw None, and "
              "each then holds a lock of its own.")


def check_step_counter(counter_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a step counter class: ``stress`` (real threads) first, then ``explore``.

    Engines and bounds: ``stress``, 3 trials of 4 real threads x 200 steps (races inside TF
    ops, such as ``assign(v + 1)``); then ``explore`` of 2 threads x 2 steps with
    ``tf.function`` bodies run eagerly, op by op (:func:`run_step_counter_explore`): every
    schedule with at most one preemption, then seeded samples up to 80 schedules. A race in
    the Python around or inside the TF calls fails every run, whatever the seed. Last, two
    threads' first steps on a new counter, within two departures (a lock made on first use).
    """
    one_thread: list[int] = []

    def once() -> None:
        counter = counter_class()
        _steps_variable(counter)
        first, second = _step_number(counter.step()), _step_number(counter.step())
        assert (first, second) == (1, 2), f"two calls to step() returned {first}, {second}, " \
            "expected 1, 2"
        one_thread.extend((first, second))
    smoke("StepCounter", once, timeout_s=TIMEOUT_S)
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k != "trials"}
    trials: list = []
    stressed = run_step_counter_stress(counter_class, observed=trials, **stress_kwargs)
    require(stressed, exercise="StepCounter", hints=_COUNTER_HINTS,
            again=call_text("variables.run_step_counter_stress", "StepCounter", **stress_kwargs))
    runs: list = []
    explored = run_step_counter_explore(counter_class, observed=runs, **explore_kwargs)
    require(explored, exercise="StepCounter", hints=_COUNTER_HINTS,
            again=call_text("variables.run_step_counter_explore", "StepCounter",
                            **explore_kwargs))
    first_runs: list = []
    first = run_step_counter_explore(counter_class, observed=first_runs, first_use=True,
                                     **explore_kwargs)
    require(first, exercise="StepCounter", hints={**_COUNTER_HINTS, "race": _FIRST_USE},
            again=call_text("variables.run_step_counter_explore", "StepCounter",
                            first_use=True, **explore_kwargs))
    report({"one_thread": one_thread, "trials": trials, "trials_run": stressed.schedules_run,
            "runs": runs, "schedules": explored.schedules_run, "covered": explored.covered,
            "first_use": explored_report(first, first_runs)})


def _new_list(weights: list[Any]) -> list[Any]:
    """A new list of the same weights, made as a list display is (CPython's free list): the
    memory, and so the ``id``, of the list dropped last."""
    return [weight for weight in weights]  # noqa: C416 - list() would not reuse the memory


_PUBLISHER_HINTS = {
    "race": "a reader must never run the model while publish() is changing the weights it "
            "uses, and once publish() returns every new read must use the new weights.",
    "deadlock": "expected every thread to finish, but one waits for a lock nobody will "
                "release, or for a state that never comes (a count of readers that two "
                "readers changed at once outside the lock never gets back to zero).",
    "error": "a publish() or predict() raised while the other threads were running.",
}


def check_publisher(publisher_class: Callable[[Any], Any], **kwargs: Any) -> None:
    """Grade a weight publisher class: ``stress`` (real threads), then ``explore``.

    Engines and bounds: ``stress``, :data:`PUBLISHER_TRIALS` trials of one writer and
    :data:`PUBLISHER_READERS` readers (a torn read inside Keras); then ``explore``
    (:func:`run_publisher_explore`): every schedule with at most
    :data:`PUBLISHER_DEVIATIONS` switches at the answer's shared accesses and the layer
    boundary, then :data:`PUBLISHER_SAMPLES` seeded samples. A race in the Python around the
    Keras calls fails every run, whatever the seed. Last, ``explore`` of
    :data:`PUBLISHER_EXPLORE_READERS` readers reading once each, then one publish: the
    readers' shared bookkeeping must let the writer in.
    """
    pool = _pool(LAYERS)
    one_thread: list[list[int]] = []

    def read(publisher: Any, version: int, when: str) -> None:
        served = read_versions(plain_array(publisher.predict(pool.batch), "predict()"))
        assert served.tolist() == [version] * LAYERS, \
            f"{when}, predict() served versions {served.tolist()}, expected version {version} " \
            "in every layer"
        one_thread.append([int(v) for v in served])

    def once() -> None:
        publisher = publisher_class(pool.fresh())
        read(publisher, FIRST_VERSION, "before any publish (the model's own version)")
        publisher.publish(pool.weights[FIRST_VERSION + 1])
        read(publisher, FIRST_VERSION + 1, f"after publish(version {FIRST_VERSION + 1})")
        for versions in ([FIRST_VERSION + 2], ONE_THREAD_IN_A_ROW):
            for version in versions:
                publisher.publish(_new_list(pool.weights[version]))
            read(publisher, versions[-1], f"after publish() of version "
                 f"{' then '.join(map(str, versions))}, each weight list a new one that the "
                 "caller then dropped (CPython gives a dropped list's id to the next list made)")

    smoke("WeightPublisher", once, timeout_s=TIMEOUT_S)
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k not in ("trials", "updates",
                                                                    "readers")}
    trials: list = []
    stressed = run_publisher_stress(publisher_class, pool=pool, observed=trials,
                                    **stress_kwargs)
    require(stressed, exercise="WeightPublisher", hints=_PUBLISHER_HINTS,
            again=call_text("variables.run_publisher_stress", "WeightPublisher",
                            **stress_kwargs))
    runs: list = []
    explored = run_publisher_explore(publisher_class, observed=runs, **explore_kwargs)
    require(explored, exercise="WeightPublisher", hints=_PUBLISHER_HINTS,
            again=call_text("variables.run_publisher_explore", "WeightPublisher",
                            **explore_kwargs))
    shared: list = []
    readers = run_publisher_explore(publisher_class, observed=shared,
                                    readers=PUBLISHER_EXPLORE_READERS, **explore_kwargs)
    require(readers, exercise="WeightPublisher", hints=_PUBLISHER_HINTS,
            again=call_text("variables.run_publisher_explore", "WeightPublisher",
                            readers=PUBLISHER_EXPLORE_READERS, **explore_kwargs))
    report({"one_thread": one_thread, "trials": trials, "trials_run": stressed.schedules_run,
            "runs": runs, "schedules": explored.schedules_run, "covered": explored.covered,
            "readers_runs": shared, "readers_schedules": readers.schedules_run,
            "readers_covered": readers.covered})


def check_choice(choose: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade ``choose_publisher`` on the grader's candidates (see :func:`run_choice`), then
    once more with a ``min_updates_per_s`` that every measured rate ties with
    (:class:`AtEveryRate`): "at least" lets every candidate through on its rate.

    Reports (for the judge) what both calls did (``boundary``: the second).
    """
    run = run_choice(choose, seed=seed)
    problems = _choice_problems(run, CHOICE_READERS, CHOICE_UPDATES)
    if problems:
        raise AssertionError("choose_publisher: " + "; ".join(problems[:3]))
    tie = AtEveryRate()
    boundary = run_choice(choose, seed=seed, min_updates_per_s=tie)
    problems = _choice_problems(boundary, CHOICE_READERS, CHOICE_UPDATES, tie)
    if problems:
        raise AssertionError(
            "choose_publisher: called once more with min_updates_per_s equal to every "
            "candidate's measured rate (an exact tie, which 'at least' lets through): "
            + "; ".join(problems[:3]))
    report({**_choice_observation(run), "boundary": _choice_observation(boundary)})
