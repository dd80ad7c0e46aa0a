"""Search strategies: which thread runs at each step of a controlled run.

* :class:`RandomWalk`: seeded random, with a bound on the number of preemptions per run.
* :class:`PriorityChange`: PCT (Burckhardt et al., ASPLOS 2010): random thread priorities,
  always run the highest, and lower the running thread's priority at ``depth - 1`` random steps;
  it finds a bug of depth ``d`` with probability at least ``1 / (n * k^(d-1))`` per run.
* :class:`Exhaustive`: depth-first enumeration of every schedule, one run per leaf; when it runs
  out of leaves the whole space has been covered.
* :class:`DeviationBounded`: every schedule that departs at most ``k`` times from a fixed
  default order
  (delay bounding, Emmi, Qadeer and Rakamaric, POPL 2011): by default the running thread goes
  on until it blocks or finishes, then the next runnable thread in round-robin order runs; one
  deviation is any other choice at one decision point (a preemption, or another thread after
  a block). Most races need just one (a preemption between a check and its act, between two
  halves of an update, between taking two locks). With ``k = 1`` the space is the default
  run's decision points times the other threads that could run there (grows like steps x
  threads; ``k = 2`` like its square), tried fewest departures first, earliest first, in an
  order no seed changes.
* :class:`Replay`: follows a recorded schedule exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


class Replay:
    """Make exactly the recorded switches; continue the running thread everywhere else.

    A program that does not repeat itself (it iterates over a set of objects, reads the
    clock...) can ask for something else than the recorded run did. Then the replay goes on
    with the running thread (or the lowest-numbered one) and ``deviation`` says where.
    """

    def __init__(self, switches: dict[int, int]):
        self.switches = switches
        self.deviation: str | None = None

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """See :class:`scheduler.Strategy`."""
        wanted = self.switches.get(step, current)
        if wanted in runnable:
            return wanted
        if self.deviation is None:
            self.deviation = (f"at step {step} the schedule asks for thread {wanted}, "
                              f"but only {runnable} could run")
        return current if current in runnable else runnable[0]


class RandomWalk:
    """Seeded random preemptions, at most ``bound`` per run.

    Some preemptions fall on random steps; the others on steps right after a blocked thread
    became able to run again (a lock released, a condition notified), where races between
    waking threads live.
    """

    def __init__(self, rng: random.Random, bound: int, horizon: int):
        count = rng.randint(0, bound)
        steps = range(1, max(horizon, 1) + 1)
        self.points = set(rng.sample(steps, min(count, len(steps))))
        self.bound = bound
        self.used = 0
        self.enabled: set[int] = set()
        self.rng = rng

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """See :class:`scheduler.Strategy`."""
        woke = not set(runnable) <= self.enabled | {current}
        self.enabled = set(runnable)
        if current is None:
            return self.rng.choice(runnable)
        if self.used < self.bound and (step in self.points or (woke and self.rng.random() < 0.5)):
            others = [index for index in runnable if index != current]
            if others:
                self.used += 1
                return self.rng.choice(others)
        return current


class PriorityChange:
    """PCT: run the highest-priority thread; demote the running one at ``depth - 1`` steps."""

    def __init__(self, rng: random.Random, depth: int, horizon: int):
        steps = range(1, max(horizon, 1) + 1)
        points = rng.sample(steps, min(depth - 1, len(steps)))
        self.demotions = {step: depth - 1 - rank for rank, step in enumerate(sorted(points))}
        self.depth = depth
        self.priorities: dict[int, float] = {}
        self.rng = rng

    def _priority(self, index: int) -> float:
        if index not in self.priorities:
            self.priorities[index] = self.depth + self.rng.random()
        return self.priorities[index]

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """See :class:`scheduler.Strategy`."""
        for index in runnable:
            self._priority(index)
        if current is not None and step in self.demotions:
            self.priorities[current] = self.demotions[step]
        return max(runnable, key=self._priority)


@dataclass
class _Node:
    current: int | None
    runnable: list[int]
    alternatives: list[int]
    tried: int = 0


class Exhaustive:
    """Depth-first search over every choice at every step, one run per leaf.

    Call :meth:`advance` after each run; it returns False once every leaf has been run. If the
    program does not repeat itself under the same choices, the search goes on from where it
    differed, but :attr:`deviated` is set and the space can no longer be called covered.
    """

    def __init__(self) -> None:
        self.stack: list[_Node] = []
        self.position = 0
        self.deviated = False

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """See :class:`scheduler.Strategy`."""
        if self.position < len(self.stack):
            node = self.stack[self.position]
            if node.runnable != runnable or node.current != current:
                self.deviated = True
                del self.stack[self.position:]
        if self.position == len(self.stack):
            first = current if current is not None else runnable[0]
            node = _Node(current, runnable, [first] + [i for i in runnable if i != first])
            self.stack.append(node)
        self.position += 1
        return node.alternatives[node.tried]

    def advance(self) -> bool:
        """Move to the next unexplored schedule; False when there is none."""
        del self.stack[self.position:]
        self.position = 0
        while self.stack:
            node = self.stack[-1]
            node.tried += 1
            if node.tried < len(node.alternatives):
                return True
            self.stack.pop()
        return False


class DeviationBounded:
    """Every schedule with at most ``bound`` departures from the default order, fewest first.

    A plan lists the decision points that depart and which other thread each one takes; the
    empty plan is the default schedule. Each run records how many threads could run at each
    point after its plan's last departure; every plan with fewer than ``bound`` departures
    then adds the plans that depart once more, at one of those points, to the queue. Plans run
    breadth first: every schedule with one departure before any with two. Call
    :meth:`advance` after each run; it returns False once the queue is empty. ``deviated`` is
    set when the program did not repeat a plan's prefix (then the space is not known to be
    covered); ``pruned`` when a choice was left out because of the bound.
    """

    def __init__(self, bound: int = 1) -> None:
        self.bound = bound
        self.queue: list[tuple[tuple[int, int], ...]] = [()]
        self.plan: tuple[tuple[int, int], ...] = ()
        self.departs: dict[int, int] = {}
        self.widths: list[int] = []
        self.position = 0
        self.last: int | None = None
        self.deviated = False
        self.pruned = False
        #: Plans run so far with each number of departures.
        self.runs_by_depth: dict[int, int] = {}

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """See :class:`scheduler.Strategy`."""
        if self.position == 0:
            self.plan = self.queue.pop(0)
            self.departs = dict(self.plan)
            self.widths = []
            self.last = None
            depth = len(self.plan)
            self.runs_by_depth[depth] = self.runs_by_depth.get(depth, 0) + 1
        position = self.position
        self.position += 1
        default = current if current is not None else self._next_after(runnable)
        alternatives = [default] + [i for i in runnable if i != default]
        chosen = default
        if position in self.departs:
            wanted = self.departs[position]
            if wanted < len(alternatives):
                chosen = alternatives[wanted]
            else:
                self.deviated = True
        self.widths.append(len(alternatives))
        self.last = chosen
        return chosen

    def advance(self) -> bool:
        """Queue the plans that depart once more; False when no plan is left."""
        after = self.plan[-1][0] + 1 if self.plan else 0
        for position in range(after, len(self.widths)):
            for alternative in range(1, self.widths[position]):
                if len(self.plan) < self.bound:
                    self.queue.append((*self.plan, (position, alternative)))
                else:
                    self.pruned = True
        self.position = 0
        return bool(self.queue)

    def _next_after(self, runnable: list[int]) -> int:
        """Round-robin: the first runnable thread after the one that ran last."""
        if self.last is None:
            return runnable[0]
        return next((i for i in runnable if i > self.last), runnable[0])
