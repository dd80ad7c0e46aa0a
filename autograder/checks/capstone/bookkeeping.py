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
(:func:`~autograder.checks.timeouts.cut_timeouts`): the same schedules and verdicts, without
a service that polls its queue every half second sleeping out every poll of every schedule (it
ran out of the search's time). They are put back when the exploration ends.

A service that uses what the stub does not model (Keras layers of its own...) or does not
work once, on one thread, on it is not explored: the real-thread parts graded it. The stub's
call answers rows that have ``.numpy()``, as a Keras call's tensor does, so
``model(x).numpy()`` is explored; and ``tf.function``s run their Python eagerly while a
service is explored (:func:`~autograder.checks.kit.functions_run_eagerly`), so a model
called through one is too.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.capstone.settings import (
    EXPLORE_PROBE_S,
    EXPLORE_SAMPLES,
    EXPLORE_SCHEDULES,
    EXPLORE_SEED,
    EXPLORE_TIMEOUT_S,
)
from autograder.checks.kit import (
    alive_since,
    bounded,
    explored_report,
    functions_run_eagerly,
)
from autograder.checks.plain import NotPlainData, plain, plain_array
from autograder.checks.timeouts import CUT_CALLS, CUT_GLUE, cut_timeouts
from autograder.harness import Result, explore

#: The stub model's weights (a 2 x 4 kernel and 4 biases): request ``i``'s row is
#: ``(i + 1, 0)`` (:func:`stub_row`), its answer :func:`stub_answer` ``(i)``, only its own.
_KERNEL = np.array([[1.0, 1.0, -1.0, 2.0], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
_BIAS = np.array([0.0, 0.5, 0.0, 0.0], dtype=np.float32)
#: The requests of the explored schedules (0, 1 and 2).
_REQUESTS = 3
#: The module of ``tf.function``'s ``Function``.
_TF_FUNCTION_MODULE = "tensorflow.python.eager.polymorphic_function.polymorphic_function"
#: How close an answer must be to the stub's (as :func:`~.models.same_answer`).
_RTOL, _ATOL = 1e-4, 1e-5


def stub_row(request: int) -> np.ndarray:
    """The row of request ``request`` (0, 1, 2...) in the explored schedules."""
    return np.array([request + 1, 0], dtype=np.float32)


def stub_answer(request: int) -> list[float]:
    """What the stub model answers for :func:`stub_row` ``(request)``."""
    first = float(request + 1)
    return [first, first + 0.5, -first, 2.0 * first]


class CalledOutput(np.ndarray):
    """What :meth:`StubModel.__call__` answers: NumPy rows that, like the tensor a Keras
    model's call returns, also have ``.numpy()`` (a service that reads its model's call with
    ``model(x).numpy()`` works on the stub, and is explored)."""

    def numpy(self) -> np.ndarray:
        """The rows as a plain ndarray (a copy)."""
        return np.array(self, subok=False)


class StubModel:
    """A model built from the start, in plain NumPy: ``predict_on_batch``, ``__call__`` and
    ``predict`` answer ``x @ kernel + bias`` for a batch of rows (``__call__`` as a
    :class:`CalledOutput`, which has ``.numpy()`` as Keras's tensor does); ``get_weights``
    and ``set_weights`` as Keras's.

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

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> CalledOutput:
        """As :meth:`predict_on_batch` (``training`` and the like are ignored), with
        ``.numpy()``."""
        return self._compute(x).view(CalledOutput)

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
    #: The threads alive when the schedule began; then those the service started that were
    #: still running when its close() returned (None until it returned).
    before: set = field(default_factory=lambda: set(threading.enumerate()))
    left: list[str] | None = None
    #: Scenario ``clients``: what ``stats()`` returned once every request had been answered.
    stats: Any = None


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
    """Close the service; note that close() returned, and which threads the service started
    were still running then."""
    run.service.close()
    run.left = alive_since(run.before)
    run.closed = True


def _check_closed(run: _ServiceRun) -> int:
    """close() returned and left none of the service's threads running: how many it left."""
    if not run.closed:
        raise AssertionError("close() never returned")
    if run.left:
        raise AssertionError(
            f"close() returned, but {len(run.left)} thread(s) the service started "
            f"({', '.join(run.left)}) were still running; expected close() to return only "
            "once every thread it started has ended (a join with a timeout gives up while "
            "the thread still runs)")
    return len(run.left)


def _first_client(run: _ServiceRun) -> None:
    """Scenario ``clients``: make the service, ask requests 0 and 2, close once the second
    client is done."""
    if not _make(run):
        return
    _ask(run, 0)
    _ask(run, 2)
    run.done.wait()
    run.stats = run.service.stats()  # no request in flight: its counts are exact
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
    counts = _counts_of(run.stats)
    requests, batches, errors = counts
    if requests != _REQUESTS or errors != 0 or not 1 <= batches <= _REQUESTS:
        raise AssertionError(
            f"once the {_REQUESTS} predict() calls had returned (none in flight), "
            f"stats() said requests {requests}, batches {batches}, errors {errors}; expected "
            f"requests {_REQUESTS}, errors 0 and 1 to {_REQUESTS} batches: a "
            "count was lost (updated outside the lock), or made after the answer was handed "
            "back")
    left = _check_closed(run)
    if schedules is not None:
        schedules.append({"answers": answers, "left_running": left, "stats": counts})


def _counts_of(stats: Any) -> list:
    """``stats()``'s requests, batches and errors, as plain numbers (AssertionError if not)."""
    try:
        stats = plain(stats, "stats()", dict)
        return [plain(stats[key], f"stats()[{key!r}]", (int, float))
                for key in ("requests", "batches", "errors")]
    except (NotPlainData, KeyError, TypeError) as error:
        raise AssertionError(f"stats() returned {type(stats).__name__}, not a dict of the "
                             f"counts 'requests', 'batches' and 'errors' ({error})") from None


def _check_closing(run: _ServiceRun, schedules: list | None = None) -> None:
    """The request got its answer or RuntimeError; close() returned."""
    answer = _answer_of(run, 0, 0)
    if not run.closed:
        raise AssertionError("close() in worker 1 never returned")
    left = _check_closed(run)
    if schedules is not None:
        schedules.append({"outcome": "RuntimeError" if answer is None else "answered",
                          "answer": answer, "closed": run.closed, "left_running": left})


# --------------------------------------------------------------------------- the exploration


#: The scenarios: name, whether the model holds its first request, workers, check.
_SCENARIOS: tuple[tuple[str, bool, tuple[Callable[[Any], None], ...], Callable[..., None]],
                  ...] = (
    ("clients", True, (_first_client, _second_client), _check_clients),
    ("closing", False, (_asking_client, _closing_client), _check_closing),
)
_GLUE = (_make, _ask, _close, _first_client, _second_client, _asking_client, _closing_client,
         stub_row, alive_since, *CUT_GLUE,
         *(f for cls in (StubModel, CalledOutput) for f in vars(cls).values()
           if isinstance(f, types.FunctionType)))
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
    with functions_run_eagerly():
        return _explore(service_class, seed, max_schedules, observed)


def _explore(service_class: Callable[..., Any], seed: int, max_schedules: int,
             observed: dict | None) -> Result | None:
    if not _works_once(service_class):
        return None
    result = None
    for name, hold, workers, check in _SCENARIOS:
        schedules: list = []
        with cut_timeouts(service_class):
            result = explore(lambda hold=hold: _ServiceRun(service_class, StubModel(hold=hold)),
                             workers, functools.partial(check, schedules=schedules),
                             seed=seed, max_schedules=max_schedules, samples=EXPLORE_SAMPLES,
                             timeout_s=EXPLORE_TIMEOUT_S,
                             glue=(*_GLUE, *_tf_function_glue()), stand_ins=CUT_CALLS)
        if observed is not None:
            observed[name] = explored_report(result, schedules)
        if result.verdict != "pass":
            return result
    return result


def _tf_function_glue() -> tuple[types.CodeType, ...]:
    """TensorFlow's frames between a ``tf.function`` call and its Python body run eagerly
    (the traceback filter, ``Function.__call__``, a method's bound wrapper), as glue: the
    body's code keeps its decision points, and a wait in it (the stub model's hold) is seen
    as a wait, not as a library call stuck in native code."""
    if _TF_FUNCTION_MODULE not in sys.modules:
        return ()
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    call = polymorphic_function.Function.__call__
    codes = [call.__code__, getattr(call, "__wrapped__", call).__code__]
    codes += [const for const in
              polymorphic_function.class_method_to_instance_method.__code__.co_consts
              if isinstance(const, types.CodeType) and const.co_name == "bound_method_wrapper"]
    return tuple(codes)


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
