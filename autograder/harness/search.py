"""Search strategies: which thread runs at each step of a controlled run.

* :class:`RandomWalk`: seeded random, with a bound on the number of preemptions per run.
* :class:`PriorityChange`: PCT (Burckhardt et al., ASPLOS 2010): random thread priorities,
  always run the highest, and lower the running thread's priority at ``depth - 1`` random steps;
  it finds a bug of depth ``d`` with probability at least ``1 / (n * k^(d-1))`` per run.
* :class:`Exhaustive`: depth-first enumeration of every schedule, one run per leaf; when it runs
  out of leaves the whole space has been covered.
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
