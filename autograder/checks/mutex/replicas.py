"""Exercise 3, move_slots: moves in opposite directions between replicas while requests use them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autograder.checks.mutex.settings import SCHEDULES, SEED, _explore, observed_number
from autograder.checks.plain import plain
from autograder.harness import Result
from autograder.harness.primitives import OwnedLock

SLOTS_EACH = 2
MOVE = 2


class Replica:
    """A model replica's free request slots; ``slots`` is guarded by ``lock``.

    The same shape as the notebook's ``Replica``: any code that reads or changes ``slots``
    holds ``lock`` while it does. This one also remembers the lowest count it ever held, and
    every read or change made by a thread that did not hold ``lock``, whether or not another
    thread held it at the time: ``lock`` is the harness's ``OwnedLock``, a Lock that knows its
    holder (issue #18, class 3: "guarded" used to mean "some thread holds the lock", so a
    timed acquire that gave up while another thread held it looked guarded). A count written
    to ``slots`` is kept as plain data (:func:`~autograder.checks.plain.plain`), so the
    requests' ``slots > 0`` and the check's sums never run the student's own number type.
    """

    def __init__(self, name: str, slots: int) -> None:
        self.name = name
        self._slots = slots
        self.lowest = slots
        self.unguarded: list[str] = []
        self.lock = OwnedLock()

    @property
    def slots(self) -> int:
        if not self.lock.held_here():
            self.unguarded.append("read")
        return self._slots

    @slots.setter
    def slots(self, value: int) -> None:
        if not self.lock.held_here():
            self.unguarded.append("changed")
        if type(value) is not int:  # an exact int passes without a step the scheduler sees
            value = plain(value, f"the count move_slots wrote to replica {self.name}'s slots")
        self._slots = value
        self.lowest = min(self.lowest, value)

    def __repr__(self) -> str:
        return f"Replica({self.name!r}, slots={self._slots})"


@dataclass
class SlotsRun:
    """Shared state of one rebalancing schedule."""

    a: Replica
    b: Replica
    moved: dict[str, Any] = field(default_factory=dict)
    in_flight: int = 0


def run_move_slots(move_slots: Callable[[Any, Any, int], Any], *, seed: int = SEED,
                   schedules: int = SCHEDULES, observed: list | None = None) -> Result:
    """Move slots A -> B and B -> A at once while a request thread uses both, under ``explore``.

    Replicas ``a`` and ``b`` start with 2 free slots each. Thread 0 calls
    ``move_slots(a, b, 2)``, thread 1 ``move_slots(b, a, 2)``; thread 2 starts two requests
    on replica ``a`` the way the server does (take a free slot under the replica's lock) and
    keeps them in flight, so one preemption between a move's check and its move lets the
    requests take the slots the move counted on. The check: no deadlock, ``slots`` was never
    read or changed by a thread that did not hold the replica's lock, no replica ever had a
    negative count, ``a.slots + b.slots`` plus the requests in flight is still 4, and each
    replica's count matches the moves that reported success.

    Engine and bound: ``explore`` only (no TensorFlow here); every schedule with at most one
    preemption or other departure from round-robin order (about 100 schedules for the answers
    in the tests), then 100 seeded samples.

    When ``observed`` is given, each schedule that passed appends (for the judge) how many
    unguarded reads and changes each replica saw, the lowest and the final free slots of each,
    the requests in flight and what the two moves returned (``a->b`` first).
    """
    def setup() -> SlotsRun:
        return SlotsRun(Replica("a", SLOTS_EACH), Replica("b", SLOTS_EACH))

    def move_a_to_b(run: SlotsRun) -> None:
        run.moved["a->b"] = move_slots(run.a, run.b, MOVE)

    def move_b_to_a(run: SlotsRun) -> None:
        run.moved["b->a"] = move_slots(run.b, run.a, MOVE)

    def serve_two_requests_on_a(run: SlotsRun) -> None:
        replica = run.a
        for _ in range(2):
            with replica.lock:
                if replica.slots > 0:
                    replica.slots -= 1
                    run.in_flight += 1

    def check(run: SlotsRun) -> None:
        for replica in (run.a, run.b):
            if replica.unguarded:
                raise AssertionError(
                    f"move_slots {replica.unguarded[0]} replica {replica.name}'s slots without "
                    f"holding {replica.name}.lock; expected every read and change of a "
                    "replica's slots under that replica's own lock, taken by the thread that "
                    "reads or changes them (a timed acquire that gave up does not count): the "
                    "request threads use those locks, so an unguarded check or update races "
                    "with them")
        for replica in (run.a, run.b):
            if replica.lowest < 0:
                raise AssertionError(
                    f"replica {replica.name} went down to {replica.lowest} free slots, expected "
                    "never less than 0: move_slots moved slots the source no longer had. Check "
                    "a replica's free slots and change them under its lock, in one go")
        a, b = run.a._slots, run.b._slots
        if a + b + run.in_flight != 2 * SLOTS_EACH:
            raise AssertionError(
                f"the replicas ended with {a + b} free slots in all (a={a}, b={b}) and "
                f"{run.in_flight} requests in flight, expected {2 * SLOTS_EACH} slots in all: "
                "an update of a replica's slots was lost")
        moved = {key: plain(run.moved.get(key), f"move_slots (moving {key})")
                 for key in ("a->b", "b->a")}
        for key in ("a->b", "b->a"):
            if moved[key] not in (True, False):
                raise AssertionError(
                    f"move_slots returned {moved[key]!r}, expected True or False")
        want_a = SLOTS_EACH - MOVE * moved["a->b"] + MOVE * moved["b->a"] - run.in_flight
        if a != want_a:
            raise AssertionError(
                f"replica a ended with {a} free slots, expected {want_a} after the moves that "
                f"returned True ({moved})")
        if observed is not None:
            replicas = (run.a, run.b)
            observed.append({
                "unguarded": [len(replica.unguarded) for replica in replicas],
                "lowest": [observed_number(replica.lowest) for replica in replicas],
                "slots": [observed_number(replica._slots) for replica in replicas],
                "in_flight": run.in_flight,
                "moved": [observed_number(moved[key]) for key in ("a->b", "b->a")]})

    workers = [move_a_to_b, move_b_to_a, serve_two_requests_on_a]
    return _explore(setup, workers, check, seed, schedules)
