"""The grader's own witness of what a student's exploration did to the hidden ledgers (exercise 3).

A student's ``explore_ledger`` could tell the hidden ledgers apart without running them (by
their bases, their code, their docstrings: this repository is public) and hand back a failing
``Result`` of its own making. So a failing ``Result`` counts against a racy ledger only when the
grader itself saw that ledger misbehave during the student's exploration: :func:`witnessed`
makes anonymous ledgers whose every call the grader records, and judges the calls afterwards.

What counts as misbehaving (:data:`ANOMALIES`):

* ``"snapshot"``: a ``totals()`` that returned a pair no order of the records gives. It must
  count every record that finished before the read began, and may count any record that began
  before the read ended; a torn snapshot and a lost update (read after the writers) both fail
  that test, and no correct ledger ever does.
* ``"deadlock"``: two calls of one ledger, one of them a ``record()``, stopped by the scheduler
  while both were in progress (the harness aborts the threads of a run it found deadlocked).

The records live behind :func:`~autograder.harness.tamper.opaque` hooks that answer only the
ledger's own call wrappers: code under test that calls them is refused as tampering. A ledger's
state changed by anything but its own methods between calls (``ledger.rows += 1``, a swapped
class) is also tampering, so a student cannot fake a torn snapshot either.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any

from autograder.harness.tamper import opaque, record_attempt

#: What the witness can report of a ledger that misbehaved.
ANOMALIES = ("snapshot", "deadlock")

_getframe = sys._getframe
_dict_of = object.__getattribute__
_get_ident = threading.get_ident


class _Call:
    """One call of a watched ledger: its method, thread, rows, and when it began and ended."""

    __slots__ = ("method", "thread", "rows", "began", "ended", "how", "value")

    def __init__(self, method: str, thread: int, rows: int, began: int) -> None:
        self.method, self.thread, self.rows, self.began = method, thread, rows, began
        self.ended: int | None = None
        self.how = ""  # "returned", "raised" or "aborted"
        self.value: Any = None


class _Watch:
    """One ledger the factory made: its calls, and its state whenever no call was running."""

    def __init__(self, ledger: Any, hidden: type) -> None:
        self.ledger = ledger
        self.hidden = hidden
        self.members = dict(vars(hidden))
        self.calls: list[_Call] = []
        self.running: set[_Call] = set()
        self.state = self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        return dict(_dict_of(self.ledger, "__dict__"))

    def intact(self) -> str:
        """"" when the ledger is as its own methods left it; else what changed."""
        if type(self.ledger) is not self.hidden or dict(vars(self.hidden)) != self.members:
            return "a hidden ledger's class was changed"
        if not self.running and self.snapshot() != self.state:
            return "a hidden ledger's state was changed outside its record() and totals()"
        return ""


def _torn(call: _Call, calls: list[_Call]) -> bool:
    """Whether ``totals()`` returned a pair that no order of the records gives."""
    value = call.value
    if type(value) is not tuple or len(value) != 2:
        return True
    records = [c for c in calls if c.method == "record" and c is not call]
    done, maybe = [], []
    for record in records:
        if record.how == "returned" and record.ended < call.began:
            done.append(record)
        elif record.began < call.ended:
            maybe.append(record)
    reachable = {(len(done), sum(c.rows for c in done))}
    for record in maybe:  # which of the records in progress the read counted: any subset
        reachable |= {(count + 1, rows + record.rows) for count, rows in reachable}
    return value not in reachable


def _judge(watch: _Watch) -> str:
    """The anomaly one ledger's calls show (one of :data:`ANOMALIES`), or ""."""
    reads = [c for c in watch.calls if c.method == "totals" and c.how == "returned"]
    if any(_torn(call, watch.calls) for call in reads):
        return "snapshot"
    aborted = [c for c in watch.calls if c.how == "aborted"]
    for one, other in itertools.combinations(aborted, 2):
        if "record" in (one.method, other.method) and one.began < other.ended \
                and other.began < one.ended:
            return "deadlock"
    return ""


def witnessed(cls: type) -> tuple[Callable[[], Any], Callable[[], dict[str, Any]]]:
    """A factory of anonymous ``cls`` ledgers whose calls the grader watches, and its verdict.

    Args:
        cls: A hidden pure-Python ledger (``record(data)`` counts ``len(data)`` rows).

    Returns:
        ``(make_ledger, seen)``. ``make_ledger`` is opaque and makes a ledger whose class is
        called ``Ledger``; ``record(data)`` asks ``len(data)`` once, before the call begins,
        and hands the implementation that many rows. ``seen()`` returns ``{"anomaly": one of
        ANOMALIES or "", "tampered": "" or what was tampered with, "ledgers": how many were
        made, "calls": how many calls were watched}``.
    """
    watches: dict[int, _Watch] = {}
    tampered: list[str] = []
    clock = itertools.count()

    def refuse(what: str) -> None:
        tampered.append(what)
        record_attempt(what)
        raise PermissionError(f"{what} is not available to code under test")

    def enter(method: str, ledger: Any, rows: int) -> _Call | None:
        if _getframe(2).f_code not in wrappers:  # 1 is the opaque hook that called this one
            refuse("writing a hidden ledger's call record")
        watch = watches.get(id(ledger))
        if watch is None or watch.ledger is not ledger:
            return None
        problem = watch.intact()
        if problem:
            tampered.append(problem)
        call = _Call(method, _get_ident(), rows, next(clock))
        watch.calls.append(call)
        watch.running.add(call)
        return call

    def leave(ledger: Any, call: _Call | None, how: str, value: Any) -> None:
        if _getframe(2).f_code not in wrappers:
            refuse("writing a hidden ledger's call record")
        watch = watches.get(id(ledger))
        if call is None or watch is None or call not in watch.running:
            return
        call.ended, call.how, call.value = next(clock), how, value
        watch.running.discard(call)
        if not watch.running:
            watch.state = watch.snapshot()

    entered, left = opaque(enter), opaque(leave)

    def record(self: Any, data: Any) -> None:
        rows = len(data)
        if type(rows) is not int or rows < 0:
            raise TypeError(f"len(data) must be a count of rows, not {rows!r}")
        call = entered("record", self, rows)
        try:
            cls.record(self, range(rows))
        except Exception:
            left(self, call, "raised", None)
            raise
        except BaseException:
            left(self, call, "aborted", None)
            raise
        left(self, call, "returned", None)

    def totals(self: Any) -> tuple[int, int]:
        call = entered("totals", self, 0)
        try:
            value = cls.totals(self)
        except Exception:
            left(self, call, "raised", None)
            raise
        except BaseException:
            left(self, call, "aborted", None)
            raise
        left(self, call, "returned", value)
        return value

    wrappers = (record.__code__, totals.__code__)
    hidden = type("Ledger", (cls,), {"__doc__": "A ledger (record, totals).",
                                     "record": record, "totals": totals})
    hidden.__qualname__ = "Ledger"

    def make_ledger() -> Any:
        ledger = hidden()
        watches[id(ledger)] = _Watch(ledger, hidden)
        return ledger

    def seen() -> dict[str, Any]:
        anomalies = set()
        made = list(watches.values())  # an explorer that hung may still be making ledgers
        for watch in made:
            problem = watch.intact()
            if problem:
                tampered.append(problem)
            anomalies.add(_judge(watch))
        anomaly = next((kind for kind in ANOMALIES if kind in anomalies), "")
        return {"anomaly": anomaly, "tampered": tampered[0] if tampered else "",
                "ledgers": len(made), "calls": sum(len(watch.calls) for watch in made)}

    return opaque(make_ledger), seen
