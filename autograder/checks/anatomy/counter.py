"""Exercise 2: a shared counter explored, every increment handed out by exactly one take()."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.anatomy.one_thread import _on_one_thread
from autograder.checks.anatomy.settings import SCHEDULES_COUNTER, SEED, TIMEOUT_S
from autograder.checks.plain import plain
from autograder.harness import Result, explore


class _CounterRun:
    """One schedule's shared state: the student's counter and what ``take()`` handed out."""

    def __init__(self, counter_class: Callable[[], Any]):
        self.counter = counter_class()
        self.taken: list[Any] = []


def _add_one_then_two(run):
    run.counter.increment()
    run.counter.increment(2)


def _add_four(run):
    run.counter.increment(4)


def _take(run):
    run.taken.append(run.counter.take())


#: Increments the workers make: 1 + 2 + 4, so any lost one shows in the total.
COUNTER_TOTAL = 7


def counter_on_one_thread(counter_class: Callable[[], Any]) -> tuple:
    """Check the counter's contract on one thread (with a timeout); AssertionError if not met.

    Returns:
        What the three ``take()`` calls returned (the judge's observation).
    """
    calls = "increment(), increment(3), take(), take(), increment(2), take()"

    def body() -> tuple[Any, Any, Any]:
        counter = counter_class()
        counter.increment()
        counter.increment(3)
        first, second = counter.take(), counter.take()
        counter.increment(2)
        return first, second, counter.take()

    taken = plain(_on_one_thread("SafeCounter", calls, body),
                  f"SafeCounter: on one thread, {calls}: take()")
    if taken != (4, 0, 2):
        raise AssertionError(
            f"SafeCounter: on one thread, {calls} returned {', '.join(map(repr, taken))}; "
            "expected 4, 0, 2 (take() returns the count so far and resets it to 0)")
    return taken


def run_counter(counter_class: Callable[[], Any], *, seed: int = SEED,
                max_schedules: int = SCHEDULES_COUNTER,
                observed: list | None = None) -> Result:
    """Explore a shared counter: two threads increment (by 1 and 2, and by 4), one takes.

    The check: what ``take()`` handed out during the run plus one final ``take()`` adds up to
    exactly :data:`COUNTER_TOTAL`, so every increment was counted once. When ``observed`` is
    given, each schedule's total is appended to it (for the judge).
    """

    def check(run: _CounterRun) -> None:
        taken = plain(run.taken, "take()")
        final = plain(run.counter.take(), "take()")
        counted = sum(taken) + final
        if observed is not None:
            observed.append(counted if type(counted) is int else None)
        assert counted == COUNTER_TOTAL, (
            f"expected the increments (1 + 2 + 4 = {COUNTER_TOTAL}) to be handed out exactly "
            f"once, but take() returned {taken[0]!r} during the run and {final!r} at the "
            f"end: {counted} in all, so "
            + (f"{COUNTER_TOTAL - counted} of the increments were lost"
               if counted < COUNTER_TOTAL else
               f"{counted - COUNTER_TOTAL} more than the increments were handed out "
               "(counted twice)"))

    return explore(lambda: _CounterRun(counter_class), [_add_one_then_two, _add_four, _take],
                   check, seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)
