"""Timeouts cut while an answer's class is explored.

Under the scheduler (``explore``) a timed wait runs out when no other thread can move, or where
the schedule makes it give up (:data:`~autograder.harness.turns.GIVE_UPS`). The waits it sees at
the user's call (``Event.wait``, ``Queue.get``...) then return at once; the others (a
``wait_for``'s deadline loop, a ``sleep``) run for real: an answer that polls with them every
half second would sleep out every poll of every schedule and run out of the search's time. So
while an answer is
explored, the ``threading``, ``queue`` and ``time`` names its own code reads (the modules, or
``Event``, ``Condition``, ``Thread``, ``Queue``... imported from them) stand for the same with
every timeout cut to a millisecond (:func:`cut_timeouts`): the same schedules and verdicts,
faster. A ``join`` with a timeout returns at once, as if the thread outlasted it on a loaded
machine: code that goes on as if the thread had ended shows it. They are put back when the
exploration ends. A call the answer's code makes to a real one that it reached otherwise (a
``time`` imported inside a method) takes the stand-in too, under ``explore`` given
:data:`CUT_CALLS` as its ``stand_ins``.

The clocks the answer reads meanwhile (``time.monotonic``, ``time.time``, ``perf_counter`` and
their ``_ns`` forms) run ahead of the real ones by the time the cut waits skipped (a sleep of
half a second that took a millisecond moved them half a second) and by the time the grader
says passed (:func:`pass_time`: a learner the grader holds, as a loaded machine would), so a
deadline the answer computes from them runs out as it would have: a loop that polls a full
queue "for at most two seconds" gives up, and shows what it does then.

Real threads that the grader holds on purpose (the capstone's update during a model call held
at a gate) cut the timed acquires of the answer's locks and semaphores too (``locks``): a
timeout that gives up while the grader holds the lock's owner shows what the code does then,
every run, instead of a wait longer than the hold outlasting it.
"""

from __future__ import annotations

import _thread
import contextlib
import queue
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

from autograder.checks.cache import GRADER_DIR
from autograder.harness import codemap, tamper

#: What every timeout of the answer's own waits is cut to while it is explored.
_CUT_S = 0.001


#: How far the answer's clocks run ahead of the real ones (seconds), for the whole process,
#: and moving it ahead: graded code may neither set it nor wind it back.
_ahead, _move_ahead = tamper.growing_total("the answer's clock")


def pass_time(seconds: float) -> None:
    """Move the clocks the answer reads while its timeouts are cut ``seconds`` (> 0) ahead."""
    _move_ahead(seconds)


def _skipped(timeout: object) -> None:
    """A cut wait of ``timeout`` ran out: the time it did not wait passes on the answer's
    clocks."""
    if type(timeout) in (int, float) and timeout > _CUT_S:
        pass_time(timeout - _CUT_S)


def _cut(timeout: float | None) -> float | None:
    """``timeout`` cut to :data:`_CUT_S` (None: no timeout)."""
    return None if timeout is None else min(timeout, _CUT_S)


def _cut_sleep(seconds: float) -> None:
    """``time.sleep``, cut as the timeouts are."""
    time.sleep(min(seconds, _CUT_S))
    _skipped(seconds)


def _monotonic() -> float:
    return time.monotonic() + _ahead()


def _time() -> float:
    return time.time() + _ahead()


def _perf_counter() -> float:
    return time.perf_counter() + _ahead()


def _monotonic_ns() -> int:
    return time.monotonic_ns() + int(_ahead() * 1e9)


def _time_ns() -> int:
    return time.time_ns() + int(_ahead() * 1e9)


def _perf_counter_ns() -> int:
    return time.perf_counter_ns() + int(_ahead() * 1e9)


_CLOCKS = [(time.monotonic, _monotonic), (time.time, _time), (time.perf_counter, _perf_counter),
           (time.monotonic_ns, _monotonic_ns), (time.time_ns, _time_ns),
           (time.perf_counter_ns, _perf_counter_ns)]


_cut_sleep.__wrapped__ = time.sleep  # the scheduler yields at it, as at a sleep


class _Event(threading.Event):
    """``threading.Event``, its ``wait`` timeout cut."""

    def wait(self, timeout: float | None = None) -> bool:
        if threading.Event.wait(self, _cut(timeout)):
            return True
        _skipped(timeout)
        return False


_Event.wait.__wrapped__ = threading.Event.wait  # the scheduler's timed call (at the call)


class _Condition(threading.Condition):
    """``threading.Condition``, its ``wait`` and ``wait_for`` timeouts cut."""

    def wait(self, timeout: float | None = None) -> bool:
        if threading.Condition.wait(self, _cut(timeout)):
            return True
        _skipped(timeout)
        return False

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        """As ``Condition.wait_for``: a wait that ran out (no other thread could move, so none
        could make ``predicate`` true) ends it."""
        result = predicate()
        while not result:
            if not self.wait(timeout) and timeout is not None:
                return predicate()
            result = predicate()
        return result


class _Thread(threading.Thread):
    """``threading.Thread``, whose ``join`` with a timeout returns at once: the timeout ran
    out before the thread ended, as on a loaded machine (a join without one still waits)."""

    def join(self, timeout: float | None = None) -> None:
        threading.Thread.join(self, None if timeout is None else 0)
        if self.is_alive():
            _skipped(timeout)


def _cut_queue(base: type) -> type:
    """``base`` (a ``queue`` class) whose ``get`` and ``put`` timeouts are cut."""
    def get(self: Any, block: bool = True, timeout: float | None = None) -> Any:
        try:
            return base.get(self, block, _cut(timeout))
        except queue.Empty:
            if block:
                _skipped(timeout)
            raise

    def put(self: Any, item: Any, block: bool = True, timeout: float | None = None) -> None:
        try:
            base.put(self, item, block, _cut(timeout))
        except queue.Full:
            if block:
                _skipped(timeout)
            raise

    get.__wrapped__, put.__wrapped__ = base.get, base.put  # the scheduler's timed calls
    return type(base.__name__, (base,), {"get": get, "put": put, "__module__": __name__})


_QUEUES = {cls: _cut_queue(cls) for cls in (queue.Queue, queue.LifoQueue, queue.PriorityQueue)}


class _CutLock:
    """A ``Lock`` or ``RLock`` (the real one inside) whose timed ``acquire`` is cut: for real
    threads only (:func:`cut_timeouts` with ``locks``), never under ``explore``, which sees
    real locks and makes their timed acquires give up itself. A ``Condition`` built on it
    uses the real lock's own helpers (an ``RLock``'s ``_is_owned``...)."""

    __slots__ = ("_lock",)

    def __init__(self, lock: Any) -> None:
        self._lock = lock

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        asked = timeout
        if type(timeout) in (int, float) and timeout > 0:
            timeout = min(timeout, _CUT_S)
        if self._lock.acquire(blocking, timeout):
            return True
        _skipped(asked)
        return False

    __enter__ = acquire

    def __exit__(self, *_: object) -> None:
        self._lock.release()

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lock, name)


def _cut_lock() -> _CutLock:
    """``threading.Lock()``, its timed acquire cut."""
    return _CutLock(_thread.allocate_lock())


def _cut_rlock() -> _CutLock:
    """``threading.RLock()``, its timed acquire cut."""
    return _CutLock(threading.RLock())


def _cut_semaphore(base: type) -> type:
    """``base`` (``Semaphore`` or ``BoundedSemaphore``) whose ``acquire`` timeout is cut."""
    def acquire(self: Any, blocking: bool = True, timeout: float | None = None) -> bool:
        if base.acquire(self, blocking, _cut(timeout)):
            return True
        _skipped(timeout)
        return False

    return type(base.__name__, (base,), {"acquire": acquire, "__module__": __name__})


class _CutModule(types.ModuleType):
    """A module (``threading``, ``queue``, ``time``) as an answer reads it while its timeouts
    are cut: the stand-ins it was given for the objects that have one, itself for the rest."""

    def __init__(self, module: types.ModuleType, stand_ins: dict[int, Any]) -> None:
        super().__init__(module.__name__)
        self.__dict__["_module"] = module
        self.__dict__["_stand_ins"] = stand_ins

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.__dict__["_module"], name)
        return self.__dict__["_stand_ins"].get(id(value), value)


def _stand_ins(pairs: list[tuple[Any, Any]]) -> dict[int, Any]:
    """The stand-ins of the objects an answer's code may read, by the real object's ``id``
    (no hash or comparison of the answer's own values runs), the modules' included."""
    stand_ins: dict[int, Any] = {id(real): stand_in for real, stand_in in pairs}
    stand_ins.update({id(module): _CutModule(module, stand_ins)
                      for module in (threading, queue, time)})
    return stand_ins


_WAITS = [(threading.Event, _Event), (threading.Condition, _Condition),
          (threading.Thread, _Thread), *_QUEUES.items(), (time.sleep, _cut_sleep), *_CLOCKS]
#: While explored: the waits an answer makes, and its sleeps.
_STAND_INS = _stand_ins(_WAITS)
#: The same, for ``explore``'s ``stand_ins``: a call the answer's code makes to a real one it
#: reached otherwise than by a name this module swaps (a ``time`` imported inside a method)
#: calls the stand-in.
CUT_CALLS = _STAND_INS
#: On real threads held on purpose: those, and its locks' and semaphores' timed acquires.
_WITH_LOCKS = _stand_ins([*_WAITS, (threading.Lock, _cut_lock), (_thread.allocate_lock, _cut_lock),
                          (threading.RLock, _cut_rlock),
                          *((cls, _cut_semaphore(cls))
                            for cls in (threading.Semaphore, threading.BoundedSemaphore))])


def _own_namespaces(answer_class: type) -> list[dict[str, Any]]:
    """The global namespaces of the answer's own code: of its classes' functions written
    outside the libraries and the grader (the notebook's, or a test's module)."""
    spaces: dict[int, dict[str, Any]] = {}
    for cls in getattr(answer_class, "__mro__", ()):
        for value in vars(cls).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            functions = ([value.fget, value.fset, value.fdel] if isinstance(value, property)
                         else [value])
            for function in functions:
                if not isinstance(function, types.FunctionType):
                    continue
                filename = function.__code__.co_filename
                if (codemap.kind_of_file(filename) == codemap.USER
                        and not filename.startswith(GRADER_DIR)):
                    spaces.setdefault(id(function.__globals__), function.__globals__)
    return list(spaces.values())


@contextlib.contextmanager
def cut_timeouts(answer_class: type, *, locks: bool = False) -> Iterator[None]:
    """While inside: the answer's own code reads the stand-ins for ``threading``, ``queue``
    and ``time`` and for the names imported from them (put back on the way out).

    Args:
        answer_class: The answer, whose functions' global namespaces are changed.
        locks: Also cut the timed acquires of the locks and semaphores the answer makes
            meanwhile (on real threads only: under ``explore`` they stay real locks, whose
            timed acquires the scheduler makes give up).
    """
    stand_ins = _WITH_LOCKS if locks else _STAND_INS
    swapped: list[tuple[dict[str, Any], str, Any, Any]] = []
    try:
        for space in _own_namespaces(answer_class):
            for name, value in list(space.items()):
                stand_in = stand_ins.get(id(value))
                if stand_in is not None:
                    space[name] = stand_in
                    swapped.append((space, name, value, stand_in))
        yield
    finally:
        for space, name, value, stand_in in reversed(swapped):
            if space.get(name) is stand_in:
                space[name] = value


#: The stand-ins' own functions: glue for ``explore`` (no decision points of their own).
CUT_GLUE = (_cut, _cut_sleep, _skipped, pass_time, _CutModule.__getattr__,
            *(clock for _, clock in _CLOCKS),
            *(f for cls in (_Event, _Condition, _Thread, *_QUEUES.values())
              for f in vars(cls).values() if isinstance(f, types.FunctionType)))
