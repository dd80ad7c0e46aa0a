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
exploration ends.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

from autograder.checks.cache import GRADER_DIR
from autograder.harness import codemap

#: What every timeout of the answer's own waits is cut to while it is explored.
_CUT_S = 0.001


def _cut(timeout: float | None) -> float | None:
    """``timeout`` cut to :data:`_CUT_S` (None: no timeout)."""
    return None if timeout is None else min(timeout, _CUT_S)


def _cut_sleep(seconds: float) -> None:
    """``time.sleep``, cut as the timeouts are."""
    time.sleep(min(seconds, _CUT_S))


_cut_sleep.__wrapped__ = time.sleep  # the scheduler yields at it, as at a sleep


class _Event(threading.Event):
    """``threading.Event``, its ``wait`` timeout cut."""

    def wait(self, timeout: float | None = None) -> bool:
        return threading.Event.wait(self, _cut(timeout))


_Event.wait.__wrapped__ = threading.Event.wait  # the scheduler's timed call (at the call)


class _Condition(threading.Condition):
    """``threading.Condition``, its ``wait`` and ``wait_for`` timeouts cut."""

    def wait(self, timeout: float | None = None) -> bool:
        return threading.Condition.wait(self, _cut(timeout))

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


def _cut_queue(base: type) -> type:
    """``base`` (a ``queue`` class) whose ``get`` and ``put`` timeouts are cut."""
    def get(self: Any, block: bool = True, timeout: float | None = None) -> Any:
        return base.get(self, block, _cut(timeout))

    def put(self: Any, item: Any, block: bool = True, timeout: float | None = None) -> None:
        base.put(self, item, block, _cut(timeout))

    get.__wrapped__, put.__wrapped__ = base.get, base.put  # the scheduler's timed calls
    return type(base.__name__, (base,), {"get": get, "put": put, "__module__": __name__})


_QUEUES = {cls: _cut_queue(cls) for cls in (queue.Queue, queue.LifoQueue, queue.PriorityQueue)}
#: The stand-ins of the objects an answer's code may read, by the real object's ``id`` (no
#: hash or comparison of the answer's own values runs).
_STAND_INS: dict[int, Any] = {
    id(real): stand_in for real, stand_in in (
        (threading.Event, _Event), (threading.Condition, _Condition),
        (threading.Thread, _Thread), *_QUEUES.items(), (time.sleep, _cut_sleep))}


class _CutModule(types.ModuleType):
    """A module (``threading``, ``queue``, ``time``) as an explored answer reads it: its
    stand-ins (:data:`_STAND_INS`) for the objects that have one, itself for the rest."""

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__)
        self.__dict__["_module"] = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.__dict__["_module"], name)
        return _STAND_INS.get(id(value), value)


_STAND_INS.update({id(module): _CutModule(module) for module in (threading, queue, time)})


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
def cut_timeouts(answer_class: type) -> Iterator[None]:
    """While inside: the answer's own code reads the stand-ins for ``threading``, ``queue``
    and ``time`` and for the names imported from them (put back on the way out)."""
    swapped: list[tuple[dict[str, Any], str, Any, Any]] = []
    try:
        for space in _own_namespaces(answer_class):
            for name, value in list(space.items()):
                stand_in = _STAND_INS.get(id(value))
                if stand_in is not None:
                    space[name] = stand_in
                    swapped.append((space, name, value, stand_in))
        yield
    finally:
        for space, name, value, stand_in in reversed(swapped):
            if space.get(name) is stand_in:
                space[name] = value


#: The stand-ins' own functions: glue for ``explore`` (no decision points of their own).
CUT_GLUE = (_cut, _cut_sleep, _CutModule.__getattr__,
            *(f for cls in (_Event, _Condition, _Thread, *_QUEUES.values())
              for f in vars(cls).values() if isinstance(f, types.FunctionType)))
