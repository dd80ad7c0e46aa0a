"""Exercise 2, SharedLearner: gradients pushed by many actor threads, every one applied once.

The grader supplies everything but the answer: its own network with weights on the exact grid
(:func:`~autograder.checks.a3c.model.grid_weights`), a plain SGD optimizer (learning rate
:data:`LEARNING_RATE`), and seeded gradients on the grid. Every order of the same SGD
updates then gives the same weights bit for bit, so after ``close()`` the weights must equal
``w0 - lr * (sum of every pushed gradient)`` exactly, and ``optimizer.iterations`` must equal
the number of pushes: an update lost, or applied twice, is a difference the check counts.

Real threads (``stress``): :data:`LEARNER_THREADS` actors released together push
:data:`LEARNER_PUSHES` gradients each, then ``close()`` is called once, with a deadline, and
no thread the answer started may outlive it. Controlled scheduler (``explore``,
:func:`run_learner_explore`, run first): two actors push one gradient each and one closes,
for races in the answer's own Python (a lock or a learner thread made on the first push).
Then a backlog (:func:`run_learner_backlog`): two actors push while the learner is busy, so
that a bounded queue fills (or the lock stays held) and a push that gives up waiting for room
(or for the lock) shows the gradient it dropped.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.a3c.model import actor_critic, expected_after, grid_gradients, grid_weights
from autograder.checks.a3c.settings import (
    CLOSE_TIMEOUT_S,
    LEARNER_BACKLOG_GIVE_UPS,
    LEARNER_BACKLOG_PUSHES,
    LEARNER_BACKLOG_YIELD_S,
    LEARNER_BACKLOG_YIELDS,
    LEARNER_DEVIATIONS,
    LEARNER_PUSHES,
    LEARNER_SAMPLES,
    LEARNER_SCHEDULES,
    LEARNER_THREADS,
    LEARNER_TRIALS,
    LEARNING_RATE,
    SEED,
    THREAD_EXIT_S,
    TIMEOUT_S,
)
from autograder.checks.cache import memo
from autograder.checks.kit import alive_since, describe_error, within
from autograder.checks.timeouts import CUT_CALLS, CUT_GLUE, cut_timeouts, pass_time
from autograder.harness import Result, explore, stress

#: The network's variables, as messages name them (``trainable_variables`` order).
VARIABLE_NAMES = ("trunk kernel", "trunk bias", "policy kernel", "policy bias", "value kernel",
                  "value bias")


class LearnerPool:
    """The grader's network and SGD optimizer, built and warm, reset for every trial.

    The optimizer's ``apply`` (which ``apply_gradients`` calls) notes which thread ran each
    call and when (:attr:`calls`), without serialising anything: two calls that overlap in
    time are two updates of ``iterations`` that can lose one another's count, whether or not
    this run happened to lose one.

    Built once per process (:func:`learner_pool`): the tests' repeated runs do not pay for
    building it again.
    """

    def __init__(self) -> None:
        import keras

        self.model = actor_critic()
        self.optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
        self.optimizer.build(self.model.trainable_variables)
        zeros = [np.zeros(tuple(v.shape), dtype="float32")
                 for v in self.model.trainable_variables]
        self.optimizer.apply_gradients(zip(zeros, self.model.trainable_variables, strict=True))
        self.model.predict_on_batch(np.zeros((1, self.model.input_shape[1]), "float32"))
        self.calls: list[tuple[int, float, float]] = []
        #: What ``apply`` reads the time with: ``perf_counter``, or a counter under ``explore``.
        self.clock: list[Callable[[], float]] = [time.perf_counter]
        self.depth = threading.local()
        self.optimizer.apply = self.noted(self.optimizer.apply)

    def noted(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """``original`` noting each outermost call in :attr:`calls` (a call it makes to another
        noted method, ``apply_gradients`` calling ``apply``, is part of it)."""
        calls, clock, ident, depth = self.calls, self.clock, threading.get_ident, self.depth

        def noted(*args: Any, **kwargs: Any) -> Any:
            level = getattr(depth, "level", 0)
            depth.level = level + 1
            start = clock[0]()
            try:
                return original(*args, **kwargs)
            finally:
                depth.level = level
                if not level:
                    calls.append((ident(), start, clock[0]()))

        return noted

    def fresh(self, weights: list[np.ndarray]) -> tuple[Any, Any]:
        """The network at ``weights``, the optimizer at 0 iterations, no call noted."""
        self.model.set_weights(weights)
        self.optimizer.iterations.assign(0)
        self.calls.clear()
        return self.model, self.optimizer


def _overlapping(calls: list[tuple[int, float, float]]) -> tuple[float, int] | None:
    """(milliseconds, how many pairs) of ``apply`` calls on different threads that ran at the
    same time, the longest overlap first; None when none did."""
    ordered = sorted(calls, key=lambda call: call[1])
    longest, pairs = 0.0, 0
    for index, (thread, _, end) in enumerate(ordered):
        for other, other_start, other_end in ordered[index + 1:]:
            if other_start >= end:
                break
            if other != thread:
                pairs += 1
                longest = max(longest, min(end, other_end) - other_start)
    return (1e3 * longest, pairs) if pairs else None


_POOLS = memo("the SharedLearner check's network")


def learner_pool() -> LearnerPool:
    return _POOLS("learner", LearnerPool)


@dataclass
class LearnerTrial:
    """One trial: the answer, what it was given and what the actors pushed."""

    learner: Any
    model: Any
    optimizer: Any
    start: list[np.ndarray]
    gradients: list[list[list[np.ndarray]]]
    before: set[threading.Thread] = field(default_factory=set)
    ready: Any = None
    left_at_close: list[str] | None = None
    calls: list[tuple[int, float, float]] = field(default_factory=list)
    #: The backlog run's pushes that have returned.
    pushed: int = 0


def _lost_iterations_message(iterations: int, pushes: int, *, backlog: bool = False) -> str:
    seen = f"expected optimizer.iterations == {pushes} (one per pushed gradient), saw {iterations}"
    if not iterations:
        return seen + ": apply each gradient with optimizer.apply_gradients, which counts it"
    if iterations < pushes and backlog:
        return (f"{seen}: {pushes - iterations} gradients were never applied, with the learner "
                "busy while the actors pushed them (a push that gave up waiting for room on a "
                "full queue, or for the lock, and dropped its gradient?)")
    if iterations < pushes:
        return (f"{seen}: {pushes - iterations} increments were lost (Keras counts with "
                "iterations.assign_add(1), a read and a separate write on a keras.Variable: "
                "two apply_gradients running at once both read the same count)")
    return f"{seen}: {iterations - pushes} more applies than gradients (a gradient applied twice?)"


def _applies_seen(calls: list[tuple[int, float, float]]) -> list[list]:
    """The optimizer's ``apply`` calls as the judge reads them: ``[thread, start, end]``, the
    threads numbered 0, 1, ... in the order they first applied."""
    numbers: dict[int, int] = {}
    return [[numbers.setdefault(thread, len(numbers)), float(start), float(end)]
            for thread, start, end in calls]


def _check(trial: LearnerTrial, observed: list | None = None, *, closed: bool = False,
           backlog: bool = False) -> None:
    """Close the learner (unless a worker did: ``closed``) and judge what it applied
    (``backlog``: in :func:`run_learner_backlog`, which words a lost update as a lost push)."""
    calls = list(trial.calls)
    overlap = _overlapping(calls)
    if closed:
        if trial.left_at_close is None:  # fail closed: what close() left was never seen
            raise AssertionError("expected the explored close() to return, but its caller never "
                                 "got past it")
        finished, left = True, trial.left_at_close
    else:
        close = getattr(trial.learner, "close", None)
        if not callable(close):
            raise AssertionError("the SharedLearner has no close() method")
        outcome = within(close, CLOSE_TIMEOUT_S, name="SharedLearner: close()")
        if not outcome.finished:
            raise AssertionError(f"close() did not return within {CLOSE_TIMEOUT_S:g} s after "
                                 "every push had returned: it waits for something that never "
                                 "comes (a learner thread that never gets its stop signal, a "
                                 "lock held by nobody)")
        if outcome.error is not None:
            raise AssertionError(f"close() raised {describe_error(outcome.error)}")
        finished, left = bool(outcome.finished), _left_running(trial.before)
    pushed = [g for mine in trial.gradients for g in mine]
    iterations = int(trial.optimizer.iterations.numpy())
    expected = expected_after(trial.start, pushed)
    got = [np.asarray(v.numpy(), dtype="float64") for v in trial.model.trainable_variables]
    wrong = [(VARIABLE_NAMES[i] if i < len(VARIABLE_NAMES) else f"variable {i}",
              float(np.abs(g - e).max()))
             for i, (g, e) in enumerate(zip(got, expected, strict=True))
             if not np.array_equal(g, e)]
    problems = []
    if wrong:
        name, worst = wrong[0]
        problems.append(
            f"expected the weights after close() to be w0 - lr * (sum of the pushed gradients), "
            f"but they differ from it in {len(wrong)} of {len(got)} variables ({name} off by up to "
            f"{worst:.6g}; one update moves a weight by at most {LEARNING_RATE:g}): updates were "
            "lost or applied twice. With these gradients every order of the same updates "
            "gives exactly the same weights, so only a lost or repeated update shows")
    if iterations != len(pushed):
        problems.append(_lost_iterations_message(iterations, len(pushed), backlog=backlog))
    elif overlap is not None:
        problems.append(
            f"expected one apply_gradients at a time, but {overlap[1]} pair(s) of "
            f"apply_gradients calls from different threads ran at the same time"
            f"{'' if closed else f' (the longest for {overlap[0]:.2f} ms)'}. "
            "optimizer.iterations came out right in this run by "
            "luck: each apply counts with iterations.assign_add(1), a read and a separate "
            "write on a keras.Variable, and two at once can lose a count")
    if left:
        when = "when it returned" if closed else f"{THREAD_EXIT_S:g} s later"
        problems.append(f"close() returned, but {len(left)} thread(s) started by the "
                        f"SharedLearner ({', '.join(left[:3])}) were still running {when}; "
                        "expected close() to stop and join them")
    if problems:
        raise AssertionError("; ".join(problems))
    if observed is not None:
        observed.append({
            "pushes": len(pushed), "iterations": iterations,
            "differences": [float(np.abs(g - e).max()) if g.size else 0.0
                            for g, e in zip(got, expected, strict=True)],
            "applies": _applies_seen(calls), "closed": finished,
            "left": len(left)})


def _running_now(before: set[threading.Thread]) -> list[str]:
    """Names of the threads started since ``before`` that are alive now (the grader's
    excepted: :func:`~autograder.checks.kit.alive_since`)."""
    return alive_since(before, ("SharedLearner: close()",))


def _left_running(before: set[threading.Thread]) -> list[str]:
    """Names of threads started since ``before`` (the threads then) still alive after a short
    join."""
    new = [t for t in threading.enumerate() if t not in before
           and not t.name.startswith(("racelab-", "SharedLearner: close()"))]
    for thread in new:
        thread.join(THREAD_EXIT_S / max(1, len(new)))
    return [repr(t.name) for t in new if t.is_alive()]


def run_learner(learner_class: Callable[[Any, Any], Any], *, trials: int = LEARNER_TRIALS,
                threads: int = LEARNER_THREADS, pushes: int = LEARNER_PUSHES,
                seed: int = SEED, observed: list | None = None) -> Result:
    """Actors push gradients into ``learner_class(model, optimizer)`` from real threads at once.

    Per trial: the grader's network at fresh grid weights, its SGD optimizer at 0 iterations,
    a new ``SharedLearner``; ``threads`` actors released together each ``push`` ``pushes``
    seeded grid gradients; then ``close()`` (at most :data:`CLOSE_TIMEOUT_S`). The weights must
    equal the exact SGD sum, ``optimizer.iterations`` the number of pushes, and no thread
    the answer started may still run :data:`THREAD_EXIT_S` after ``close()`` returned. When
    ``observed`` is given, each trial that passes appends what it saw (for the judge): the
    pushes, ``optimizer.iterations``, each variable's largest difference from the exact SGD
    sum, the optimizer's ``apply`` calls made while the actors pushed, whether ``close()``
    returned and how many of the answer's threads outlived it.
    """
    pool = learner_pool()
    plans = itertools.count()

    def setup() -> LearnerTrial:
        plan = seed * 1000 + next(plans)
        start = grid_weights(pool.model, plan)
        gradients = grid_gradients(pool.model, plan + 1, threads * pushes)
        model, optimizer = pool.fresh(start)
        before = set(threading.enumerate())
        learner = learner_class(model, optimizer)
        return LearnerTrial(learner, model, optimizer, start,
                            [gradients[k * pushes:(k + 1) * pushes] for k in range(threads)],
                            before, threading.Barrier(threads), pool.calls)

    def actor(index: int) -> Callable[[LearnerTrial], None]:
        def run(trial: LearnerTrial) -> None:
            push = trial.learner.push
            # Every actor is running before any pushes (a push onto a queue takes
            # microseconds: without this the actors could finish one by one).
            trial.ready.wait(TIMEOUT_S)
            for grads in trial.gradients[index]:
                push(grads)
        run.__name__ = f"actor_{index}"
        return run

    return stress(setup, [actor(k) for k in range(threads)],
                  functools.partial(_check, observed=observed), trials=trials, seed=seed,
                  timeout_s=TIMEOUT_S)


def _two_actors(learner_class: Callable[[Any, Any], Any]
                ) -> tuple[Callable[[LearnerTrial], None], Callable[[LearnerTrial], None]]:
    """The explored actors: the first makes the ``SharedLearner`` (so a thread it starts is
    scheduled too) and pushes ``trial.gradients[0]``; the second pushes its one gradient once
    the learner is made; the first calls ``close()`` once both are done. ``trial.pushed``
    counts the pushes that returned."""

    def first(trial: LearnerTrial) -> None:
        made, pushed = trial.ready
        try:
            trial.learner = learner_class(trial.model, trial.optimizer)
        finally:
            made.set()
        push = trial.learner.push
        for grads in trial.gradients[0]:
            push(grads)
            trial.pushed += 1
        pushed.wait()
        trial.learner.close()
        trial.left_at_close = _running_now(trial.before)

    def second(trial: LearnerTrial) -> None:
        made, pushed = trial.ready
        made.wait()
        try:
            if trial.learner is not None:
                trial.learner.push(trial.gradients[1][0])
                trial.pushed += 1
        finally:
            pushed.set()

    return first, second


def run_learner_explore(learner_class: Callable[[Any, Any], Any], *, seed: int = SEED,
                        schedules: int = LEARNER_SCHEDULES,
                        observed: list | None = None) -> Result:
    """Two actors push one gradient each at once, under ``explore``; then one closes.

    The first actor makes the ``SharedLearner`` (so a thread it starts is scheduled too) and
    pushes; the second pushes once it is made; the first calls ``close()`` once both pushes
    returned, and no thread the answer started may be running when it returns. Keras calls run
    whole here, but the grader's ``apply_gradients`` and ``apply`` note when they start and end,
    so two applies at once show whatever Keras did: this finds races in the answer's own Python
    (a lock made on first use by two threads at once, a learner thread started on the first push
    by two pushes). Every schedule with at most :data:`LEARNER_DEVIATIONS` departures from
    round-robin order runs, then :data:`LEARNER_SAMPLES` samples. The answer's own timeouts are
    cut to a millisecond meanwhile (:func:`~autograder.checks.timeouts.cut_timeouts`: a learner
    that polls its queue would otherwise sleep out every poll). When ``observed`` is given, each
    schedule that passes appends what :func:`run_learner` appends for a trial.
    """
    pool = learner_pool()
    plans = itertools.count()

    def setup() -> LearnerTrial:
        plan = seed * 1000 + 500 + next(plans) % 7
        start = grid_weights(pool.model, plan)
        gradients = grid_gradients(pool.model, plan + 1, 2)
        model, optimizer = pool.fresh(start)
        trial = LearnerTrial(None, model, optimizer, start, [[gradients[0]], [gradients[1]]],
                             calls=pool.calls)
        trial.ready = (threading.Event(), threading.Event())
        trial.before = set(threading.enumerate())
        return trial

    first, second = _two_actors(learner_class)
    optimizer = pool.optimizer
    pool.clock[0] = itertools.count().__next__
    optimizer.apply_gradients = pool.noted(type(optimizer).apply_gradients.__get__(optimizer))
    try:
        with cut_timeouts(learner_class):
            return explore(setup, [first, second],
                           functools.partial(_check, observed=observed, closed=True),
                           seed=seed, max_schedules=schedules, timeout_s=TIMEOUT_S,
                           samples=LEARNER_SAMPLES, deviations=LEARNER_DEVIATIONS,
                           glue=(first, second, _running_now, alive_since, *CUT_GLUE),
                           stand_ins=CUT_CALLS)
    finally:
        del optimizer.apply_gradients
        pool.clock[0] = time.perf_counter


def _held_first(original: Callable[..., Any], trial: LearnerTrial) -> Callable[..., Any]:
    """``original`` (``apply_gradients``), its first call held until every push of ``trial``
    returned, or until it has yielded the core :data:`LEARNER_BACKLOG_YIELDS` times (pushes
    that block while it waits, on a full queue, cannot return until it applies), each yield
    :data:`LEARNER_BACKLOG_YIELD_S` on the answer's clocks (a deadline loop runs out)."""
    total = sum(len(mine) for mine in trial.gradients)
    held = [False]

    def apply_gradients(*args: Any, **kwargs: Any) -> Any:
        if not held[0]:
            held[0] = True
            for _ in range(LEARNER_BACKLOG_YIELDS):
                if trial.pushed >= total:
                    break
                pass_time(LEARNER_BACKLOG_YIELD_S)
                time.sleep(0)
        return original(*args, **kwargs)

    return apply_gradients


def run_learner_backlog(learner_class: Callable[[Any, Any], Any], *, seed: int = SEED,
                        observed: list | None = None) -> Result:
    """Two actors push :data:`LEARNER_BACKLOG_PUSHES` gradients between them (all but one,
    and one) while the learner is busy; the first closes once both are done: one schedule of
    ``explore`` (its default, round-robin order).

    The first ``apply_gradients`` waits until every push returned (or it yielded the core
    :data:`LEARNER_BACKLOG_YIELDS` times: a push blocked on a full queue returns only once it
    applies), as a learner slowed by a loaded machine does. A queue bound that one stress trial
    could fill is then full, and a lock around the apply is held for all that time; a push that
    waits for room or for the lock with a timeout gives up (its timeout
    runs out, as the scheduler lets a timed wait do while another thread could still make room:
    every one it makes while the learner is held; the answer's clocks run 10 s meanwhile, so a
    loop that retries "for at most two seconds" runs out too) and must not lose its gradient:
    the weights after ``close()`` must be the exact SGD sum. The answer's timeouts are cut
    meanwhile, as in :func:`run_learner_explore`. When ``observed`` is given and the schedule
    passes, it appends what :func:`run_learner` appends for a trial.
    """
    pool = learner_pool()

    def setup() -> LearnerTrial:
        plan = seed * 1000 + 900
        start = grid_weights(pool.model, plan)
        gradients = grid_gradients(pool.model, plan + 1, LEARNER_BACKLOG_PUSHES)
        model, optimizer = pool.fresh(start)
        trial = LearnerTrial(None, model, optimizer, start, [gradients[:-1], gradients[-1:]],
                             calls=pool.calls)
        trial.ready = (threading.Event(), threading.Event())
        trial.before = set(threading.enumerate())
        optimizer.apply_gradients = pool.noted(
            _held_first(type(optimizer).apply_gradients.__get__(optimizer), trial))
        return trial

    first, second = _two_actors(learner_class)
    optimizer = pool.optimizer
    pool.clock[0] = itertools.count().__next__
    try:
        with cut_timeouts(learner_class):
            return explore(setup, [first, second],
                           functools.partial(_check, observed=observed, closed=True,
                                             backlog=True),
                           seed=seed, max_schedules=1, timeout_s=TIMEOUT_S,
                           glue=(first, second, _running_now, alive_since, *CUT_GLUE),
                           give_ups=LEARNER_BACKLOG_GIVE_UPS, stand_ins=CUT_CALLS)
    finally:
        vars(optimizer).pop("apply_gradients", None)
        pool.clock[0] = time.perf_counter
