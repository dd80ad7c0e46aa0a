"""Exercise 3, StepBudget: the global step counter T, its stop condition and episode returns.

The race here lives in Python (a check of ``T`` and a separate update, a read of ``T`` and a
write-back after other work), where real threads under the GIL rarely show it. So the check
runs under the controlled scheduler (``explore``): :data:`BUDGET_ACTORS` actors share one
``StepBudget(BUDGET_T_MAX)``; each takes steps until ``take()`` returns ``None``, finishes an
episode after every step (an episode of one step, whose return is the step's number), and
then asks once more. An observer thread reads ``T`` once the first actor has had its last
``None`` (the other may be inside ``take()`` then). Up to :data:`BUDGET_SCHEDULES` schedules
run: every schedule with at most :data:`BUDGET_DEVIATIONS` departures from round-robin order
first, then :data:`BUDGET_SAMPLES` seeded samples if the bound was covered: a check-then-act
in ``take()``, a step counted by a read and a later write-back, a step counted and given back,
or a list rebuilt by two threads at once fails in a schedule the search always reaches,
whatever the seed.

After the schedule: the step numbers handed out are exactly ``1 .. T_MAX``, once each (no
overshoot, no duplicate, none missing), every ``take()`` after the budget was spent returned
``None``, no actor got its first ``None`` before ``T_MAX`` steps could have been taken (those
handed out, plus one per other actor inside ``take()`` then), ``T`` read by each actor right
after its first ``None`` (the other may be inside ``take()``) and at the end is ``T_MAX`` (a
``take()`` that counts a step and gives it back shows ``T_MAX + 1`` between), and
``returns`` holds every finished episode's return.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from autograder.checks.a3c.settings import (
    BUDGET_ACTORS,
    BUDGET_DEVIATIONS,
    BUDGET_SAMPLES,
    BUDGET_SCHEDULES,
    BUDGET_T_MAX,
    SEED,
    TIMEOUT_S,
)
from autograder.checks.plain import plain
from autograder.harness import Result, explore


class BudgetRun:
    """One schedule's shared state: the answer and what each actor was handed."""

    def __init__(self, budget_class: Callable[[int], Any], t_max: int, actors: int) -> None:
        self.t_max = t_max
        self.budget = budget_class(t_max)
        self.steps: list[list[Any]] = [[] for _ in range(actors)]
        self.inside = [False] * actors
        self.stopped_at: list[int] = []
        self.t_at_stop: list[Any] = []
        self.first_none = threading.Event()
        self.after: list[Any] = []


def _step(value: Any, what: str = "take()") -> int | None:
    if value is None:
        return None
    number = plain(value, what, (int,))
    return int(number)


def _check(run: BudgetRun, observed: list | None = None) -> None:
    t_max = run.t_max
    taken = [_step(s) for mine in run.steps for s in mine]
    counts = Counter(taken)
    repeated = sorted(n for n, c in counts.items() if c > 1 and n is not None)
    if repeated:
        raise AssertionError(
            f"expected each step number once, but step {repeated[0]} was handed to "
            f"{counts[repeated[0]]} actors (both read T before either one wrote T + 1 back)")
    if len(taken) > t_max:
        raise AssertionError(
            f"expected the actors to take exactly T_MAX = {t_max} steps, but take() handed "
            f"out {len(taken)}: {sorted(taken)} (the budget overshot: two actors passed the "
            "T < T_MAX test before either one counted its step)")
    if sorted(taken) != list(range(1, t_max + 1)):
        raise AssertionError(
            f"expected take() to hand out steps 1 .. {t_max} once each before returning None, "
            f"but it handed out {sorted(taken)}")
    early = [n for n in run.stopped_at if n < t_max]
    if early:
        raise AssertionError(
            f"expected take() to return None only once all {t_max} steps were taken, but an "
            f"actor got None when at most {early[0]} had been (handed out, or being handed out "
            "to the other actor), and stopped: take() must wait for its lock, not give up (a "
            "timed acquire gives up on a busy machine, and that actor's work ends early)")
    read = [plain(t, "StepBudget.T", (int,)) for t in run.t_at_stop]
    wrong = [t for t in read if t != t_max]
    if wrong:
        raise AssertionError(
            f"expected T == T_MAX == {t_max} once an actor's take() had returned None, but "
            f"T read {wrong[0]}"
            + (" while the other actor was inside take(): T is the number of steps taken and "
               "never passes T_MAX, not even for a moment (a step counted, then given back)"
               if wrong[0] > t_max else ""))
    late = [_step(s, "take() after the budget was spent") for s in run.after]
    if any(s is not None for s in late):
        raise AssertionError(
            f"expected take() to return None once all {t_max} steps were taken, but a later "
            f"take() returned {next(s for s in late if s is not None)}")
    t_value = plain(getattr(run.budget, "T", None), "StepBudget.T", (int,))
    if t_value != t_max:
        raise AssertionError(
            f"expected T == T_MAX == {t_max} once the actors stopped, saw T == {t_value}"
            + (f" after {t_max} steps were taken: a step was lost (two actors read T and "
               "each wrote its own value back, the later write undoing the other)"
               if t_value < t_max else ": T overshot T_MAX"))
    returns = plain(getattr(run.budget, "returns", None), "StepBudget.returns", (list, tuple))
    if sorted(float(plain(r, "a recorded return", (float,))) for r in returns) != \
            [float(n) for n in range(1, t_max + 1)]:
        raise AssertionError(
            f"expected returns to hold the {t_max} finished episodes' returns "
            f"{[float(n) for n in range(1, t_max + 1)]} (in any order), saw {list(returns)}"
            + (": an episode's return was lost (two actors rebuilt the list at once)"
               if len(returns) < t_max else ""))
    if observed is not None:
        observed.append({"taken": sorted(taken), "stopped_at": run.stopped_at,
                         "t_at_stop": read, "after": late, "T": t_value,
                         "returns": sorted(float(r) for r in returns)})


def _actor(index: int, t_max: int) -> Callable[[BudgetRun], None]:
    def run(state: BudgetRun) -> None:
        budget, mine = state.budget, state.steps[index]
        for _ in range(t_max + 1):  # bounded: a budget that never says None cannot loop
            state.inside[index] = True
            step = budget.take()
            state.inside[index] = False
            if step is None:
                # At most this many steps can have been taken: those handed out, and one per
                # other actor still inside take(). The actors are glue: no switch in between.
                state.stopped_at.append(sum(map(len, state.steps)) + sum(state.inside))
                break
            mine.append(step)
            budget.finish_episode(float(step))
        state.first_none.set()
        state.after.append(budget.take())
    run.__name__ = f"actor_{index}"
    return run


def _observer(state: BudgetRun) -> None:
    """Reads ``T`` once the first actor has its last ``None``, while the other may be inside
    ``take()``: not glue, so the read is a decision point of its own."""
    state.first_none.wait()
    state.t_at_stop.append(state.budget.T)


def run_budget(budget_class: Callable[[int], Any], *, seed: int = SEED,
               schedules: int = BUDGET_SCHEDULES, t_max: int = BUDGET_T_MAX,
               actors: int = BUDGET_ACTORS, observed: list | None = None) -> Result:
    """Explore ``actors`` actors sharing one ``budget_class(t_max)`` (see the module).

    When ``observed`` is given, each schedule that passes appends what it saw (for the
    judge): the step numbers handed out, what each actor's last ``take()`` returned, ``T``
    and the returns recorded.
    """
    actors_ = [_actor(k, t_max) for k in range(actors)]
    return explore(lambda: BudgetRun(budget_class, t_max, actors), [*actors_, _observer],
                   functools.partial(_check, observed=observed), seed=seed,
                   max_schedules=schedules, timeout_s=TIMEOUT_S, samples=BUDGET_SAMPLES,
                   deviations=BUDGET_DEVIATIONS, glue=actors_)
