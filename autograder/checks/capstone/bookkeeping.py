"""Part 3's bookkeeping explored: requests, the batcher and ``close()`` on a stub model.

The accounting check runs real threads, and two mistakes hide from them in a window of a few
bytecodes: a batch sliced off the queue outside the lock (a request appended between the
slice and the store is dropped with the old list), and a ``predict()`` that checks "closed"
and appends in two lock regions (``close()`` runs in between, the batcher ends, and the
request appended after it is never answered). Here the service runs under the controlled
scheduler (:func:`autograder.harness.explore`): every schedule with at most one preemption,
then seeded samples. Its model is a :class:`StubModel` (plain NumPy, built from the start),
so no TensorFlow runs under the scheduler. Two scenarios, in each of which the first client
makes the service and the service is closed before the schedule ends (so its threads end):

- ``clients``: the first client sends two requests, one after the other; the second client
  sends one while the model computes the first (the model's first call that computes a
  request waits until the second client is about to send, as a real model lets other
  threads run while it computes); then the first client closes the service. Each request
  must get its own answer. So the batcher answers the first request, wakes its client, and
  finds the second request waiting: one preemption there, and the first client's next
  request can land in the batcher's window.
- ``closing``: the first client sends one request while the second calls ``close()``: the
  request gets its answer or ``RuntimeError`` (the service is closed).

In both, nobody may hang: when every thread waits, the scheduler reports a deadlock.

Under the scheduler a timed wait runs out only when no other thread can move, and then sleeps
out its timeout for real. So while a service is explored, the ``threading``, ``queue`` and
``time`` names its own code reads (the modules, or ``Event``, ``Condition``, ``Thread``,
``Queue``... imported from them) stand for the same with every timeout cut to a millisecond
(:func:`_cut_timeouts`): the same schedules and verdicts, without a service that polls its
queue every half second sleeping out every poll of every schedule (it ran out of the search's
time). They are put back when the exploration ends.

A service that uses what the stub does not model (Keras layers, a ``tf.function`` around the
model...) or does not work once, on one thread, on it is not explored: the real-thread parts
graded it.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.cache import GRADER_DIR
from autograder.checks.capstone.settings import (
    EXPLORE_PROBE_S,
    EXPLORE_SAMPLES,
    EXPLORE_SCHEDULES,
    EXPLORE_SEED,
    EXPLORE_TIMEOUT_S,
)
from autograder.checks.kit import bounded, explored_report
from autograder.checks.plain import NotPlainData, plain_array
from autograder.harness import Result, codemap, explore

#: The stub model's weights (a 2 x 4 kernel and 4 biases): request ``i``'s row is
#: ``(i + 1, 0)`` (:func:`stub_row`), its answer :func:`stub_answer` ``(i)``, only its own.
_KERNEL = np.array([[1.0, 1.0, -1.0, 2.0], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
_BIAS = np.array([0.0, 0.5, 0.0, 0.0], dtype=np.float32)
#: The requests of the explored schedules (0, 1 and 2).
_REQUESTS = 3
#: How close an answer must be to the stub's (as :func:`~.models.same_answer`).
_RTOL, _ATOL = 1e-4, 1e-5


def stub_row(request: int) -> np.ndarray:
    """The row of request ``request`` (0, 1, 2...) in the explored schedules."""
    return np.array([request + 1, 0], dtype=np.float32)


def stub_answer(request: int) -> list[float]:
    """What the stub model answers for :func:`stub_row` ``(request)``."""
    first = float(request + 1)
    return [first, first + 0.5, -first, 2.0 * first]


class StubModel:
    """A model built from the start, in plain NumPy: ``predict_on_batch``, ``__call__`` and
    ``predict`` answer ``x @ kernel + bias`` for a batch of rows; ``get_weights`` and
    ``set_weights`` as Keras's.

    With ``hold``, its first call that computes a request's row (not a warm-up) sets
    :attr:`entered`, then waits until :attr:`go` is set (by the grader's client, which then
    sends its own request while the model computes). The waits are untimed: a timed one would
    let the scheduler time out the service's own timed waits instead, which sleep for real.

    Attributes:
        entered: Set by the first call that computes a request.
        go: Lets that call finish.
    """

    def __init__(self, *, hold: bool = False) -> None:
        self.built = True
        self.entered = threading.Event()
        self.go = threading.Event()
        self._hold = hold
        self._weights = [_KERNEL.copy(), _BIAS.copy()]

    def predict_on_batch(self, x: Any) -> np.ndarray:
        """The answers for the batch ``x``, one row each."""
        return self._compute(x)

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        """As :meth:`predict_on_batch` (``training`` and the like are ignored)."""
        return self._compute(x)

    def predict(self, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        """As :meth:`predict_on_batch` (``batch_size``, ``verbose`` are ignored)."""
        return self._compute(x)

    def get_weights(self) -> list[np.ndarray]:
        """A copy of the weights, in ``set_weights`` order."""
        return [w.copy() for w in self._weights]

    def set_weights(self, weights: Any) -> None:
        """Replace the weights (a list shaped as :meth:`get_weights`'s)."""
        new = [np.array(w, dtype=np.float32) for w in weights]
        if [w.shape for w in new] != [w.shape for w in self._weights]:
            raise ValueError(f"expected weights of shapes {[w.shape for w in self._weights]}, "
                             f"got {[w.shape for w in new]}")
        self._weights = new

    def _compute(self, x: Any) -> np.ndarray:
        rows = np.atleast_2d(np.asarray(x, dtype=np.float32))
        kernel, bias = self._weights
        out = rows @ kernel + bias  # a row of the wrong width raises ValueError, as Keras
        if self._hold and not self.entered.is_set() and bool(np.any(
                (rows[:, 1] == 0) & np.isin(rows[:, 0], np.arange(1, _REQUESTS + 1)))):
            self.entered.set()
            self.go.wait()
        return out.reshape(*np.shape(x)[:-1], out.shape[-1])


@dataclass
class _ServiceRun:
    """One schedule: the service, its stub model, and how each request ended."""

    service_class: Any
    model: StubModel = field(default_factory=StubModel)
    service: Any = None
    ready: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    got: dict[int, Any] = field(default_factory=dict)
    closed: bool = False


def _make(run: _ServiceRun) -> bool:
    """Make the service (the first client does), then let the other client go on: whether
    there is a service."""
    try:
        run.service = run.service_class(run.model, np.zeros(2, dtype=np.float32))
    finally:
        run.ready.set()
    return run.service is not None


def _ask(run: _ServiceRun, request: int) -> None:
    """``predict`` request ``request``: its answer, or the RuntimeError of a closed service."""
    try:
        run.got[request] = run.service.predict(stub_row(request))
    except RuntimeError as refused:
        run.got[request] = refused


def _close(run: _ServiceRun) -> None:
    """Close the service; note that close() returned."""
    run.service.close()
    run.closed = True


def _first_client(run: _ServiceRun) -> None:
    """Scenario ``clients``: make the service, ask requests 0 and 2, close once the second
    client is done."""
    if not _make(run):
        return
    _ask(run, 0)
    _ask(run, 2)
    run.done.wait()
    _close(run)


def _second_client(run: _ServiceRun) -> None:
    """Scenario ``clients``: once the model computes a request, let it go on and ask
    request 1."""
    run.ready.wait()
    if run.service is None:
        return
    try:
        run.model.entered.wait()
        run.model.go.set()
        _ask(run, 1)
    finally:
        run.done.set()


def _asking_client(run: _ServiceRun) -> None:
    """Scenario ``closing``: make the service and ask request 0."""
    if _make(run):
        _ask(run, 0)


def _closing_client(run: _ServiceRun) -> None:
    """Scenario ``closing``: close the service once it is made."""
    run.ready.wait()
    if run.service is not None:
        _close(run)


def _answer_of(run: _ServiceRun, request: int, worker: int) -> list[float] | None:
    """Request ``request``'s answer as plain floats (None: refused with RuntimeError), or an
    AssertionError in the exercise's terms."""
    if request not in run.got:
        raise AssertionError(f"predict() of request {request} in worker {worker} never "
                             "returned")
    got = run.got[request]
    if isinstance(got, RuntimeError):
        return None
    want = stub_answer(request)
    try:
        row = plain_array(got, "predict()").astype(np.float64).reshape(-1)
    except (NotPlainData, ValueError) as error:
        raise AssertionError(str(error)) from None
    if row.shape != (len(want),) or not np.allclose(row, want, rtol=_RTOL, atol=_ATOL):
        owner = next((k for k in range(_REQUESTS) if row.shape == (len(want),)
                      and np.allclose(row, stub_answer(k), rtol=_RTOL, atol=_ATOL)), None)
        whose = (f"the answer to request {owner}" if owner is not None
                 else "no request's answer")
        raise AssertionError(f"predict() of request {request} in worker {worker} returned "
                             f"{row.tolist()}, {whose}; expected its own, {want}")
    return [float(v) for v in row]


def _check_clients(run: _ServiceRun, schedules: list | None = None) -> None:
    """Every request got its own answer; none was refused (the service was open)."""
    answers = []
    for request, worker in ((0, 0), (1, 1), (2, 0)):
        answer = _answer_of(run, request, worker)
        if answer is None:
            raise AssertionError(f"predict() of request {request} in worker {worker} raised "
                                 "RuntimeError before close() was called; expected its answer")
        answers.append(answer)
    if schedules is not None:
        schedules.append({"answers": answers})


def _check_closing(run: _ServiceRun, schedules: list | None = None) -> None:
    """The request got its answer or RuntimeError; close() returned."""
    answer = _answer_of(run, 0, 0)
    if not run.closed:
        raise AssertionError("close() in worker 1 never returned")
    if schedules is not None:
        schedules.append({"outcome": "RuntimeError" if answer is None else "answered",
                          "answer": answer, "closed": run.closed})


# --------------------------------------------------------------------------- timeouts cut


#: What every timeout of the service's own waits is cut to while it is explored.
_CUT_S = 0.001


def _cut(timeout: float | None) -> float | None:
    """``timeout`` cut to :data:`_CUT_S` (None: no timeout)."""
    return None if timeout is None else min(timeout, _CUT_S)


def _cut_sleep(seconds: float) -> None:
    """``time.sleep``, cut as the timeouts are."""
    time.sleep(min(seconds, _CUT_S))


class _Event(threading.Event):
    """``threading.Event``, its ``wait`` timeout cut."""

    def wait(self, timeout: float | None = None) -> bool:
        return threading.Event.wait(self, _cut(timeout))


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
    """``threading.Thread``, its ``join`` timeout cut."""

    def join(self, timeout: float | None = None) -> None:
        threading.Thread.join(self, _cut(timeout))


def _cut_queue(base: type) -> type:
    """``base`` (a ``queue`` class) whose ``get`` and ``put`` timeouts are cut."""
    def get(self: Any, block: bool = True, timeout: float | None = None) -> Any:
        return base.get(self, block, _cut(timeout))

    def put(self: Any, item: Any, block: bool = True, timeout: float | None = None) -> None:
        base.put(self, item, block, _cut(timeout))

    return type(base.__name__, (base,), {"get": get, "put": put, "__module__": __name__})


_QUEUES = {cls: _cut_queue(cls) for cls in (queue.Queue, queue.LifoQueue, queue.PriorityQueue)}
#: The stand-ins of the objects a service's code may read, by the real object's ``id`` (no
#: hash or comparison of the service's own values runs).
_STAND_INS: dict[int, Any] = {
    id(real): stand_in for real, stand_in in (
        (threading.Event, _Event), (threading.Condition, _Condition),
        (threading.Thread, _Thread), *_QUEUES.items(), (time.sleep, _cut_sleep))}


class _CutModule(types.ModuleType):
    """A module (``threading``, ``queue``, ``time``) as an explored service reads it: its
    stand-ins (:data:`_STAND_INS`) for the objects that have one, itself for the rest."""

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__)
        self.__dict__["_module"] = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.__dict__["_module"], name)
        return _STAND_INS.get(id(value), value)


_STAND_INS.update({id(module): _CutModule(module) for module in (threading, queue, time)})


def _own_namespaces(service_class: type) -> list[dict[str, Any]]:
    """The global namespaces of the service's own code: of its classes' functions written
    outside the libraries and the grader (the notebook's, or a test's module)."""
    spaces: dict[int, dict[str, Any]] = {}
    for cls in getattr(service_class, "__mro__", ()):
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
def _cut_timeouts(service_class: type) -> Iterator[None]:
    """While inside: the service's own code reads the stand-ins for ``threading``, ``queue``
    and ``time`` and for the names imported from them (put back on the way out)."""
    swapped: list[tuple[dict[str, Any], str, Any, Any]] = []
    try:
        for space in _own_namespaces(service_class):
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


# --------------------------------------------------------------------------- the exploration


#: The scenarios: name, whether the model holds its first request, workers, check.
_SCENARIOS: tuple[tuple[str, bool, tuple[Callable[[Any], None], ...], Callable[..., None]],
                  ...] = (
    ("clients", True, (_first_client, _second_client), _check_clients),
    ("closing", False, (_asking_client, _closing_client), _check_closing),
)
_GLUE = (_make, _ask, _close, _first_client, _second_client, _asking_client, _closing_client,
         stub_row, _cut, _cut_sleep, _CutModule.__getattr__,
         *(f for cls in (StubModel, _Event, _Condition, _Thread, *_QUEUES.values())
           for f in vars(cls).values() if isinstance(f, types.FunctionType)))
"""The check's own code, the stub model's and the stand-ins' (no decision points): the search
spends its bound on the service's code."""


def explore_service(service_class: Callable[..., Any], *, seed: int = EXPLORE_SEED,
                    max_schedules: int = EXPLORE_SCHEDULES,
                    observed: dict | None = None) -> Result | None:
    """Explore the service's bookkeeping on a stub model, one scenario after the other (see
    the module): ``clients``, then ``closing``.

    Args:
        service_class: The answer, ``InferenceService``.
        seed: Seeds the samples after the bounded search.
        max_schedules: The most schedules per scenario.
        observed: Receives, per scenario run (for the judge), each schedule's outcome (the
            answers of requests 0, 1 and 2; or how request 0 ended, its answer and whether
            ``close()`` returned) and the search's counts
            (:func:`~autograder.checks.kit.explored_report`).

    Returns:
        The first failing :class:`~autograder.harness.Result`, else the last one; None when
        the service does not work once on the stub model (it is then not explored).
    """
    if not _works_once(service_class):
        return None
    result = None
    for name, hold, workers, check in _SCENARIOS:
        schedules: list = []
        with _cut_timeouts(service_class):
            result = explore(lambda hold=hold: _ServiceRun(service_class, StubModel(hold=hold)),
                             workers, functools.partial(check, schedules=schedules),
                             seed=seed, max_schedules=max_schedules, samples=EXPLORE_SAMPLES,
                             timeout_s=EXPLORE_TIMEOUT_S, glue=_GLUE)
        if observed is not None:
            observed[name] = explored_report(result, schedules)
        if result.verdict != "pass":
            return result
    return result


def _works_once(service_class: Callable[..., Any]) -> bool:
    """Make a service on a stub model, ask it twice and close it, on one thread: did it all
    work?"""
    def once() -> bool:
        model = StubModel()
        service = service_class(model, np.zeros(2, dtype=np.float32))
        try:
            answers = [service.predict(stub_row(k)) for k in range(2)]
        finally:
            service.close()
        return all(np.allclose(np.asarray(a, dtype=np.float64), stub_answer(k))
                   for k, a in enumerate(answers))

    try:
        return bool(bounded("InferenceService", "a service on a stub model", once,
                            EXPLORE_PROBE_S))
    except AssertionError:
        return False
