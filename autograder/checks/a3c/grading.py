"""The four graders hidden tests call: a smoke run on one thread, then the exercise's runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.a3c.budget import run_budget
from autograder.checks.a3c.learner import (
    learner_pool,
    run_learner,
    run_learner_backlog,
    run_learner_explore,
)
from autograder.checks.a3c.model import flat_outputs, grid_gradients, grid_weights, version_of
from autograder.checks.a3c.network import run_shared_network
from autograder.checks.a3c.settings import (
    BUDGET_LONG_RETURNS,
    BUDGET_LONG_T_MAX,
    TIMEOUT_S,
    VERSIONED_EXPLORE_ACTORS,
)
from autograder.checks.a3c.versioned import (
    _ITERATIONS_HINT,
    FIRST_WEIGHT,
    WARM_UP_APPLIES,
    run_versioned_explore,
    run_versioned_stress,
    version_pool,
)
from autograder.checks.kit import call_text, explored_report, report, require, smoke
from autograder.checks.plain import plain

_NETWORK_HINTS = {
    "race": "build the network with keras.Input and make the actors' very call once (here "
            "predict_on_batch on one state), on one thread, before any actor starts.",
    "error": "an actor's first call raised while the others were running: the network was "
             "not ready before the actors started.",
}



def check_shared_network(make_network: Callable[[], Any], **kwargs: Any) -> None:
    """Grade ``make_shared_network`` (exercise 1; see :func:`run_shared_network`).

    Reports (for the judge) per trial the traces counted while the actors ran, the weights
    before and after, and every output with the one-thread output for its actor's state.
    """
    trials: list = []
    result = run_shared_network(make_network, observed=trials, **kwargs)
    require(result, exercise="make_shared_network", hints=_NETWORK_HINTS,
            hint=None if result.schedules_run else "",
            again=call_text("a3c.run_shared_network", "make_shared_network", **kwargs))
    report({"trials": trials, "trials_run": result.schedules_run})


_LEARNER_HINTS = {
    "race": "only one apply_gradients may run at a time: hold one lock around it, or let one "
            "learner thread apply what the actors put on a queue (and make close() wait "
            "until the queue is empty).",
    "deadlock": "expected close() to return with every thread the SharedLearner started "
                "stopped, but a thread waits for a lock nobody will release, or for a stop "
                "signal that never comes (a second learner thread, started by two first "
                "pushes at once, that close() never stops?).",
    "error": "a push() raised while other actors were pushing.",
}

_BACKLOG_HINTS = {
    **_LEARNER_HINTS,
    "race": "a push must never lose its gradient, however busy the learner is: on a loaded "
            "machine a learner falls behind, a bounded queue fills and a put with a timeout "
            "gives up. Block until there is room (put() without a timeout, or retry until it "
            "succeeds), or keep the queue unbounded.",
}


def check_learner(learner_class: Callable[[Any, Any], Any], **kwargs: Any) -> None:
    """Grade a ``SharedLearner`` class (exercise 2): one thread first, then real threads.

    Reports (for the judge) the one-thread ``optimizer.iterations`` and the weights' largest
    difference from ``w0 - lr * (g1 + g2)``, and per trial what :func:`run_learner` saw.
    """
    pool = learner_pool()

    def once() -> tuple[int, bool, float]:
        start = grid_weights(pool.model, 1)
        grads = grid_gradients(pool.model, 2, 2)
        model, optimizer = pool.fresh(start)
        learner = learner_class(model, optimizer)
        for g in grads:
            learner.push(g)
        learner.close()
        from autograder.checks.a3c.model import expected_after

        expected = expected_after(start, grads)
        got = [np.asarray(v.numpy(), "float64") for v in model.trainable_variables]
        exact = all(np.array_equal(g, e) for g, e in zip(got, expected, strict=True))
        largest = max((float(np.abs(g - e).max()) for g, e in zip(got, expected, strict=True)
                       if g.shape == e.shape and g.size), default=0.0)
        return int(optimizer.iterations.numpy()), exact, largest

    iterations, exact, largest = smoke("SharedLearner", once, timeout_s=TIMEOUT_S)
    if (iterations, exact) != (2, True):
        raise AssertionError(
            "SharedLearner: on one thread, two push() calls and close() left "
            f"optimizer.iterations at {iterations} and the weights "
            f"{'as expected' if exact else 'not at w0 - lr * (g1 + g2)'}; expected 2 applies "
            "through optimizer.apply_gradients, each gradient once")
    # The controlled scheduler first: it finds the races in the answer's own Python (a lock or
    # a learner thread made on the first push) every time, and in a few seconds.
    explore_kwargs = {k: v for k, v in kwargs.items() if k == "seed"}
    schedules: list = []
    explored = run_learner_explore(learner_class, observed=schedules, **explore_kwargs)
    require(explored, exercise="SharedLearner", hints=_LEARNER_HINTS,
            again=call_text("a3c.run_learner_explore", "SharedLearner", **explore_kwargs))
    backlog: list = []
    behind = run_learner_backlog(learner_class, observed=backlog, **explore_kwargs)
    require(behind, exercise="SharedLearner", hints=_BACKLOG_HINTS,
            again=call_text("a3c.run_learner_backlog", "SharedLearner", **explore_kwargs))
    trials: list = []
    result = run_learner(learner_class, observed=trials, **kwargs)
    require(result, exercise="SharedLearner", hints=_LEARNER_HINTS,
            again=call_text("a3c.run_learner", "SharedLearner", **kwargs))
    report({"one_thread": {"iterations": iterations, "largest_difference": largest},
            "trials": trials, "trials_run": result.schedules_run,
            "backlog": backlog[0] if backlog else None,
            **explored_report(explored, schedules)})


_BUDGET_HINTS = {
    "race": "the test of T against T_MAX and the update of T must be one step no other actor "
            "can come between (one lock around both), and so must every read-then-write of "
            "shared bookkeeping.",
    "deadlock": "a thread waits for a lock nobody will release (a Lock taken twice by the "
                "same thread?).",
}


#: What :func:`_long_budget` must see: every step, and every return, equal ones included.
_LONG_EXPECTED = (list(range(1, BUDGET_LONG_T_MAX + 1)),
                  sorted(float(n % BUDGET_LONG_RETURNS) for n in range(1, BUDGET_LONG_T_MAX + 1)))


def _long_budget(budget_class: Callable[[int], Any]) -> tuple[list, list]:
    """One thread takes every step of ``StepBudget(BUDGET_LONG_T_MAX)``, finishing an episode
    after each with return ``step % BUDGET_LONG_RETURNS`` (many equal returns): the steps
    taken and the returns kept, sorted."""
    budget = budget_class(BUDGET_LONG_T_MAX)
    taken = []
    for _ in range(BUDGET_LONG_T_MAX + 1):  # bounded: a budget that never says None
        step = budget.take()
        if step is None:
            break
        taken.append(step)
        budget.finish_episode(float(plain(step, "take()", (int,)) % BUDGET_LONG_RETURNS))
    return taken, sorted(budget.returns)


def check_budget(budget_class: Callable[[int], Any], **kwargs: Any) -> None:
    """Grade a ``StepBudget`` class (exercise 3): one thread first, then ``explore``.

    Reports (for the judge) what the one-thread calls returned, and per schedule what
    :func:`run_budget` saw.
    """

    def once() -> tuple[Any, ...]:
        budget = budget_class(2)
        first, second, third = budget.take(), budget.take(), budget.take()
        budget.finish_episode(1.5)
        return first, second, third, budget.T, list(budget.returns)

    calls = "take(), take(), take(), finish_episode(1.5) on StepBudget(2)"
    got = plain(smoke("StepBudget", once, timeout_s=TIMEOUT_S),
                f"StepBudget: on one thread, {calls}")
    if got != (1, 2, None, 2, [1.5]):
        raise AssertionError(
            f"StepBudget: on one thread, {calls} gave take() = {got[0]!r}, {got[1]!r}, "
            f"{got[2]!r}, T = {got[3]!r} and returns = {got[4]!r}; expected 1, 2, None, T = 2 "
            "and returns = [1.5]")
    long_run = plain(smoke("StepBudget", functools.partial(_long_budget, budget_class),
                           timeout_s=TIMEOUT_S),
                     f"StepBudget: on one thread, StepBudget({BUDGET_LONG_T_MAX})")
    if long_run != _LONG_EXPECTED:
        taken, returns = long_run
        raise AssertionError(
            f"StepBudget: on one thread, StepBudget({BUDGET_LONG_T_MAX}) handed out "
            f"{len(taken)} steps and, after an episode finished with each step's number modulo "
            f"{BUDGET_LONG_RETURNS} as its return, kept {len(returns)} returns; expected steps "
            f"1 .. {BUDGET_LONG_T_MAX} and all {BUDGET_LONG_T_MAX} returns, equal ones "
            "included: returns must hold every episode's return however many there are "
            "(a set keeps one of equal returns, a deque with a maxlen drops the oldest)")
    schedules: list = []
    result = run_budget(budget_class, observed=schedules, **kwargs)
    require(result, exercise="StepBudget", hints=_BUDGET_HINTS,
            again=call_text("a3c.run_budget", "StepBudget", **kwargs))
    report({"one_thread": [*got[:4], list(got[4])], "long_taken": long_run[0],
            "long_returns": long_run[1], **explored_report(result, schedules)})


_VERSIONED_HINTS = {
    "race": "an act must never run the network while learn() is changing its weights, and "
            "the version it reports must be read together with the weights it used (under "
            "the same lock, or from one snapshot).",
    "deadlock": "expected every thread to finish, but one waits for a lock nobody will "
                "release, or for a state that never comes (a count of actors reading that two "
                "actors changed at once outside the lock never gets back to zero).",
    "error": "a learn() or act() raised while the other threads were running.",
}


def check_versioned(network_class: Callable[[Any, Any], Any], **kwargs: Any) -> None:
    """Grade a ``VersionedNetwork`` class (exercise 4): one thread, ``stress``, ``explore``.

    Reports (for the judge) the one-thread acts' outputs and versions and the first learn's
    version, each ``stress`` trial's learns and acts, and each ``explore`` schedule's.
    """
    pool = version_pool()

    def once() -> tuple[Any, ...]:
        network = network_class(*pool.fresh())
        before = network.act(pool.probe)
        learned = network.learn(pool.step)
        after = network.act(pool.probe)
        return before, learned, after

    before, learned, after = smoke("VersionedNetwork", once, timeout_s=TIMEOUT_S)
    one_thread: dict[str, Any] = {"acts": []}
    for when, result, want in (("before any learn", before, 0), ("after one learn", after, 1)):
        if not isinstance(result, tuple) or len(result) != 2:
            raise AssertionError(f"VersionedNetwork: act() {when} returned "
                                 f"{type(result).__name__}; expected (outputs, version)")
        seen = version_of(result[0])
        version = plain(result[1], "the version act() returned", (int,))
        if seen is None or (int(seen - FIRST_WEIGHT), version) != (want, want):
            raise AssertionError(
                f"VersionedNetwork: on one thread, act() {when} reported version {version!r} "
                f"with outputs of version "
                f"{'(none)' if seen is None else int(seen - FIRST_WEIGHT)}; expected version "
                f"{want} and its outputs"
                + (_ITERATIONS_HINT if version == want + WARM_UP_APPLIES else ""))
        one_thread["acts"].append([int(version), *(float(v) for v in flat_outputs(result[0]))])
    one_thread["learned"] = int(plain(learned, "learn()", (int,)))
    if one_thread["learned"] != 1:
        raise AssertionError(f"VersionedNetwork: the first learn() returned {learned!r}; "
                             "expected the new version, 1"
                             + (_ITERATIONS_HINT if one_thread["learned"] == 1 + WARM_UP_APPLIES
                                else ""))
    stress_kwargs = {k: v for k, v in kwargs.items() if k != "schedules"}
    explore_kwargs = {k: v for k, v in kwargs.items() if k in ("seed", "schedules")}
    trials: list = []
    stressed = run_versioned_stress(network_class, observed=trials, **stress_kwargs)
    require(stressed, exercise="VersionedNetwork", hints=_VERSIONED_HINTS,
            again=call_text("a3c.run_versioned_stress", "VersionedNetwork", **stress_kwargs))
    schedules: list = []
    explored = run_versioned_explore(network_class, observed=schedules, **explore_kwargs)
    require(explored, exercise="VersionedNetwork", hints=_VERSIONED_HINTS,
            again=call_text("a3c.run_versioned_explore", "VersionedNetwork",
                            **explore_kwargs))
    shared: list = []
    actors = run_versioned_explore(network_class, observed=shared,
                                   actors=VERSIONED_EXPLORE_ACTORS, **explore_kwargs)
    require(actors, exercise="VersionedNetwork", hints=_VERSIONED_HINTS,
            again=call_text("a3c.run_versioned_explore", "VersionedNetwork",
                            actors=VERSIONED_EXPLORE_ACTORS, **explore_kwargs))
    report({"one_thread": one_thread, "trials": trials, "trials_run": stressed.schedules_run,
            **explored_report(explored, schedules),
            "actors": explored_report(actors, shared)})
