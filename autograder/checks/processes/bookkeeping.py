"""Exercise 1's bookkeeping explored: ``predict()`` from two threads, the processes stubbed.

A pool's parent side pairs each answer with its request: request ids handed out, callers
registered, answers collected and delivered. Real worker processes answer milliseconds after a
request, and real threads switch every few milliseconds, so a check-then-act in that
bookkeeping (an id read then written back, a caller registered after its request went out, an
answer parked because its caller was not registered yet) almost never breaks under real load.
Here it runs under the controlled scheduler (:func:`autograder.harness.explore`): every
schedule with at most one preemption, then seeded samples, with the process side replaced by
stubs in this process:

- while :func:`explore_pool` runs, the names of ``multiprocessing`` the pool's code reads (the
  module, ``get_context``, a context, its ``Process`` or ``Queue``, in the globals of the
  pool's code or on its classes) stand for :class:`StubContext` and its stubs; they are put
  back when it returns;
- a :class:`StubQueue` is an in-process ``queue.Queue`` with the API of a ``multiprocessing``
  queue, and a :class:`StubProcess` serves its requests queue in one of two ways, each explored
  in turn: *eager*, each request is answered the moment it is put (an answer that comes back
  before its caller is registered), or *gathering*, a thread of this process takes requests
  until no other thread can move and answers them last first, as the grader's real workers do
  (an answer that comes back only after other callers have run);
- the shared-memory block is real, and tiny.

A pool that uses what the stubs do not model (a ``Manager``, a ``multiprocessing.Pool``, pipes,
a process's sentinel, a worker target other than the one it was given) is not explored: it was
graded on real processes only. So is one that does not work once, on one thread, on the stubs.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import queue
import re
import sysconfig
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.kit import JoinProbe, bounded, within
from autograder.checks.plain import NotPlainData, plain_array
from autograder.checks.processes.resources import clean_up, snapshot
from autograder.checks.processes.settings import (
    BOOKKEEPING_CLIENTS,
    BOOKKEEPING_PROBE_S,
    BOOKKEEPING_SAMPLES,
    BOOKKEEPING_SCHEDULES,
    BOOKKEEPING_SEED,
    BOOKKEEPING_TIMEOUT_S,
    CLOSE_QUIET_S,
    CLOSE_S,
    JOIN_GRACE_S,
)
from autograder.harness import Result, explore


class Unsupported(Exception):
    """The pool uses something the stubs do not model; it is not explored."""


class _Over(SystemExit):
    """Ends a thread still waiting on a stub queue once its schedule is over (silently: the
    threading module does not report a SystemExit)."""


#: The threads of gathering stub workers (the grader's, not the pool's).
_STUB_THREADS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
#: The tiny weights the explored pools are made with (a 4-row table, a 2 x 4 head).
_WEIGHTS = (np.arange(8, dtype=np.float32).reshape(4, 2), np.ones((2, 4), np.float32),
            np.zeros(4, np.float32))
#: The fake pids of stub processes: above Linux's largest pid, so that no signal sent to one
#: reaches a real process.
_PIDS = itertools.count(2**30)
#: Requests a gathering stub worker takes before it answers, and how long it waits for the
#: next one (under the scheduler a timed wait ends only when no other thread can move).
_GROUP, _HOLD_S = 4, 0.001


def stub_output(tokens: Any) -> tuple[float, ...]:
    """What a stub worker answers for ``tokens``: four numbers only these tokens get."""
    first = int(np.asarray(tokens).reshape(-1)[0])
    return (float(first), first + 0.5, -float(first), 2.0 * first)


def stub_target(source: Any, shapes: Any, requests: Any, answers: Any) -> None:
    """The worker target the explored pools are given; a stub process never runs it."""
    raise AssertionError("a stub worker target runs in no process")


# --------------------------------------------------------------------------- stubs


@dataclass
class _Stubs:
    """One stubbed world: how its workers answer, and the queues made in it."""

    eager: bool
    queues: list[StubQueue] = field(default_factory=list)
    #: Every stub worker started in it (for ``active_children``).
    processes: list[StubProcess] = field(default_factory=list)
    #: Timeouts of the pool's waits cut to a millisecond (under the scheduler; see
    #: :attr:`StubQueue.get`); :func:`closing_run` runs real threads and keeps them.
    cut: bool = True
    #: Holds the first pool thread to touch a queue once close() began (:func:`closing_run`).
    probe: JoinProbe | None = None
    #: Holds a gathering stub worker that took its end marker until close() joins it.
    exit_probe: JoinProbe | None = None

    def end(self) -> None:
        """Wake and end every thread waiting on these queues; forget them."""
        for stub in self.queues:
            stub.end()
        self.queues.clear()


class StubQueue(queue.Queue):
    """A ``multiprocessing`` queue's API on an in-process ``queue.Queue`` (``put``, ``get``,
    their ``_nowait`` forms, ``empty``, ``qsize``, ``close``...). Items are not copied."""

    def __init__(self, maxsize: int = 0, *, stubs: _Stubs | None = None) -> None:
        super().__init__(maxsize)
        self._over = False
        self._servers: list[StubProcess] = []
        self._stubs = stubs
        if stubs is not None:
            stubs.queues.append(self)

    @property
    def put(self) -> Callable[..., None]:
        """``put(obj, block=True, timeout=None)``. A partial, not a function: calling it is a
        decision point at the caller's line, and then one step: an eager worker answers the
        request (or ends on ``None``), or it waits in this queue."""
        return functools.partial(StubQueue._deliver, self)

    @property
    def put_nowait(self) -> Callable[..., None]:
        """``put_nowait(obj)``, as :attr:`put`."""
        return functools.partial(StubQueue._deliver, self, block=False)

    @property
    def get(self) -> Callable[..., Any]:
        """``get(block=True, timeout=None)``, a decision point at the caller's line as
        :attr:`put`; then ``queue.Queue.get``, which the scheduler parks while it would block.
        A timeout is cut to a millisecond: under the scheduler it runs out only when no other
        thread can move, and waiting longer then changes nothing (a pool that polls its
        answers queue would only make the search slow)."""
        return functools.partial(_queue_get, self)

    @property
    def get_nowait(self) -> Callable[..., Any]:
        """``get_nowait()``, as :attr:`get`."""
        return functools.partial(_queue_get, self, False)

    def _deliver(self, obj: Any, block: bool = True, timeout: float | None = None) -> None:
        server = next((p for p in self._servers if p.is_alive()), None)
        if server is None:
            queue.Queue.put(self, obj, block, timeout)
        else:
            server._handle(obj)

    def empty(self) -> bool:
        """As ``queue.Queue.empty`` (a pool thread asking, once close() began, is held)."""
        _hold(self)
        return queue.Queue.empty(self)

    def qsize(self) -> int:
        """As ``queue.Queue.qsize`` (held as :meth:`empty`)."""
        _hold(self)
        return queue.Queue.qsize(self)

    def close(self) -> None:
        """As ``multiprocessing.Queue.close``: nothing to release here."""

    def join_thread(self) -> None:
        """As ``multiprocessing.Queue.join_thread``: no feeder thread here."""

    def cancel_join_thread(self) -> None:
        """As ``multiprocessing.Queue.cancel_join_thread``."""

    def end(self) -> None:
        """The schedule is over: every thread still waiting in ``get`` wakes and ends."""
        with self.mutex:
            self._over = True
            self.not_empty.notify_all()

    def _qsize(self) -> int:
        return max(len(self.queue), 1) if self._over else len(self.queue)

    def _get(self) -> Any:
        if self._over:
            raise _Over
        return self.queue.popleft()


def _queue_get(stub: StubQueue, block: bool = True, timeout: float | None = None) -> Any:
    if stub._stubs is None or stub._stubs.cut:
        timeout = _cut(timeout)
    try:
        return queue.Queue.get(stub, block, timeout)  # the pool waits for an item here
    finally:
        _hold(stub)


def _hold(stub: StubQueue) -> None:
    """Once close() began, the first pool thread to get here stops until close() joins it."""
    probe = stub._stubs.probe if stub._stubs is not None else None
    if probe is not None:
        probe.hold()


def _cut(timeout: float | None) -> float | None:
    return None if timeout is None else min(timeout, _HOLD_S)


class _Kill:
    """Put on a gathering worker's requests queue by ``terminate()``: that worker ends."""

    def __init__(self, process: StubProcess) -> None:
        self.process = process


class StubProcess:
    """A worker process that is none: it serves its requests queue from this process, eagerly
    (each request answered when it is put) or gathering (a thread takes requests until no other
    thread can move, then answers them last first)."""

    def __init__(self, group: Any = None, target: Any = None, name: str | None = None,
                 args: Any = (), kwargs: Any = None, *, daemon: bool | None = None,
                 stubs: _Stubs | None = None) -> None:
        self._target = target
        self._args = tuple(args)
        self._kwargs = dict(kwargs or {})
        self._eager = stubs is not None and stubs.eager
        self._stubs = stubs
        self.name = name or "StubProcess"
        self.daemon = daemon
        self.pid: int | None = None
        self.exitcode: int | None = None
        self._started = False
        self._exited = threading.Event()

    def start(self) -> None:
        if self._started:
            raise AssertionError("cannot start a process twice")
        if self._target is not stub_target or self._kwargs or len(self._args) != 4:
            raise Unsupported("a worker started with another target or other arguments")
        requests, answers = self._args[2], self._args[3]
        if not isinstance(requests, StubQueue) or not isinstance(answers, StubQueue):
            raise Unsupported("worker queues that are not multiprocessing queues")
        self._started = True
        self.pid = next(_PIDS)
        if self._stubs is not None:
            self._stubs.processes.append(self)
        if not self._eager:
            worker = threading.Thread(target=self._gather, args=(requests, answers), daemon=True)
            _STUB_THREADS.add(worker)
            worker.start()
            return
        requests._servers.append(self)
        while self.is_alive():  # requests put before this worker started
            try:
                item = queue.Queue.get_nowait(requests)
            except queue.Empty:
                return
            self._handle(item)

    def _handle(self, item: Any) -> None:
        """An eager worker takes ``item``: a request it answers, or ``None``, and it ends."""
        if item is None:
            self._stop(0)
        elif not self._answer([item], self._args[3]):
            self._stop(1)

    def _gather(self, requests: StubQueue, answers: StubQueue) -> None:
        try:
            while True:
                group = [queue.Queue.get(requests)]
                while _is_request(group[-1]) and len(group) < _GROUP:
                    try:
                        group.append(queue.Queue.get(requests, True, _HOLD_S))
                    except queue.Empty:
                        break
                last = group[-1]
                if isinstance(last, _Kill) and last.process is not self:
                    queue.Queue.put(requests, last)  # another worker's
                if not self._answer([item for item in group if _is_request(item)], answers):
                    self.exitcode = 1
                    return
                if not _is_request(last):
                    self.exitcode = -15 if isinstance(last, _Kill) else 0
                    return
        finally:
            probe = self._stubs.exit_probe if self._stubs is not None else None
            if probe is not None:
                probe.through.append(self._exited._cond)
                probe.hold()
            self._exited.set()

    @staticmethod
    def _answer(group: list[Any], answers: StubQueue) -> bool:
        """Answer ``group`` last first; False when a request is garbage (a worker dies)."""
        for item in reversed(group):
            try:
                request_id, tokens = item
                output = stub_output(tokens)
            except Exception:  # noqa: BLE001 - a worker process given garbage dies
                return False
            queue.Queue.put(answers, (request_id, output))
        return True

    def _stop(self, code: int) -> None:
        if not self._exited.is_set():
            self.exitcode = code
            self._exited.set()

    @property
    def join(self) -> Callable[..., None]:
        """``join(timeout=None)``: a decision point at the caller's line (a partial), then it
        waits for the worker's end (its timeout cut as :attr:`StubQueue.get`'s)."""
        if not self._started:
            raise AssertionError("can only join a started process")
        return functools.partial(_join, self)

    def is_alive(self) -> bool:
        return self._started and not self._exited.is_set()

    def terminate(self) -> None:
        if not self.is_alive():
            return
        if self._eager:
            self._stop(-15)
        else:
            queue.Queue.put(self._args[2], _Kill(self))

    kill = terminate

    def close(self) -> None:
        """As ``Process.close``: nothing to release here."""

    def run(self) -> None:
        raise Unsupported("Process.run called in the pool's own process")

    @property
    def sentinel(self) -> int:
        raise Unsupported("a process's sentinel")


def _join(process: StubProcess, timeout: float | None = None) -> None:
    if process._stubs is None or process._stubs.cut:
        timeout = _cut(timeout)
    process._exited.wait(timeout)  # the pool waits for a worker to end here


def _is_request(item: Any) -> bool:
    return item is not None and not isinstance(item, _Kill)


def _refuse(what: str, *args: Any, **kwargs: Any) -> Any:
    raise Unsupported(what)


#: What a stub context refuses: the pool is then graded on real processes only.
_UNSUPPORTED = frozenset({"Pool", "Pipe", "Array", "RawArray",
                          "set_start_method", "set_executable", "set_forkserver_preload"})


class StubContext:
    """A ``multiprocessing`` context (and the module's own API) whose processes are stubs."""

    def __init__(self, method: str | None, stubs: _Stubs) -> None:
        self._method = method
        self._stubs = stubs

    def __getattr__(self, name: str) -> Any:
        if name in _UNSUPPORTED:
            return functools.partial(_refuse, f"multiprocessing {name}")
        raise AttributeError(name)

    @property
    def Process(self) -> Callable[..., StubProcess]:  # noqa: N802 - the multiprocessing name
        return functools.partial(StubProcess, stubs=self._stubs)

    def get_context(self, method: str | None = None) -> StubContext:
        return StubContext(method, self._stubs)

    def get_start_method(self, allow_none: bool = False) -> str | None:
        return self._method or (None if allow_none else "fork")

    def get_all_start_methods(self) -> list[str]:
        return multiprocessing.get_all_start_methods()

    def cpu_count(self) -> int:
        return multiprocessing.cpu_count()

    def active_children(self) -> list[StubProcess]:
        """As ``multiprocessing.active_children``: the stub workers still running."""
        return [process for process in self._stubs.processes if process.is_alive()]

    def parent_process(self) -> None:
        """As ``multiprocessing.parent_process`` in the main process."""
        return None

    def current_process(self) -> Any:
        return multiprocessing.current_process()

    def Queue(self, maxsize: int = 0) -> StubQueue:  # noqa: N802
        return StubQueue(maxsize, stubs=self._stubs)

    def SimpleQueue(self) -> StubQueue:  # noqa: N802
        return StubQueue(stubs=self._stubs)

    def JoinableQueue(self, maxsize: int = 0) -> StubQueue:  # noqa: N802
        return StubQueue(maxsize, stubs=self._stubs)

    def Lock(self) -> Any:  # noqa: N802
        return threading.Lock()

    def RLock(self) -> Any:  # noqa: N802
        return threading.RLock()

    def Event(self) -> Any:  # noqa: N802
        return threading.Event()

    def Condition(self, lock: Any = None) -> Any:  # noqa: N802
        return threading.Condition(lock)

    def Semaphore(self, value: int = 1) -> Any:  # noqa: N802
        return threading.Semaphore(value)

    def BoundedSemaphore(self, value: int = 1) -> Any:  # noqa: N802
        return threading.BoundedSemaphore(value)

    def Barrier(self, parties: int, action: Any = None,  # noqa: N802
                timeout: float | None = None) -> Any:
        return threading.Barrier(parties, action, timeout)

    def Value(self, typecode: Any, value: Any = 0, *, lock: Any = True) -> StubValue:  # noqa: N802
        return StubValue(value, lock)

    def RawValue(self, typecode: Any, value: Any = 0) -> StubValue:  # noqa: N802
        return StubValue(value, False)

    def Manager(self) -> StubManager:  # noqa: N802
        return StubManager(self)


class StubValue:
    """A ``multiprocessing.Value`` (or a manager's ``Value`` proxy) in this process: ``value``
    read and written as an attribute (each a step of its own, as a shared ctypes value's are),
    ``get()``/``set()``, and ``get_lock()`` (an RLock, as the real default) unless made
    without one."""

    def __init__(self, value: Any, lock: Any = True) -> None:
        self.value = value
        self._lock = threading.RLock() if lock is True else lock or None

    def get_lock(self) -> Any:
        if self._lock is None:
            raise AttributeError("a Value made with lock=False has no get_lock()")
        return self._lock

    def get(self) -> Any:
        return self.value

    def set(self, value: Any) -> None:
        self.value = value


class StubManager:
    """A ``multiprocessing.Manager()`` whose proxies live in this process: its queues are the
    context's stub queues, its locks, events and values the threading ones."""

    def __init__(self, context: StubContext) -> None:
        self._context = context

    def __enter__(self) -> StubManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def start(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to start: the proxies are local."""

    def shutdown(self) -> None:
        """Nothing to stop."""

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for."""

    def Queue(self, maxsize: int = 0) -> StubQueue:  # noqa: N802
        return self._context.Queue(maxsize)

    def JoinableQueue(self, maxsize: int = 0) -> StubQueue:  # noqa: N802
        return self._context.JoinableQueue(maxsize)

    def Value(self, typecode: Any, value: Any = 0, lock: Any = True) -> StubValue:  # noqa: N802
        return StubValue(value, False)

    def dict(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def list(self, sequence: Any = ()) -> list:
        return list(sequence)

    def Namespace(self) -> types.SimpleNamespace:  # noqa: N802
        return types.SimpleNamespace()

    def __getattr__(self, name: str) -> Any:
        if name in ("Lock", "RLock", "Event", "Condition", "Semaphore", "BoundedSemaphore",
                    "Barrier"):
            return getattr(self._context, name)
        if name.startswith("_"):
            raise AttributeError(name)
        return functools.partial(_refuse, f"a Manager's {name}")


class StubModule(types.ModuleType):
    """The ``multiprocessing`` module as the stubbed pool sees it: its default context's API,
    the rest of the real module (``shared_memory``...) for anything else."""

    def __init__(self, context: StubContext) -> None:
        super().__init__("multiprocessing")
        self.__dict__["_context"] = context

    def __getattr__(self, name: str) -> Any:
        context = self.__dict__["_context"]
        if hasattr(StubContext, name) or name in _UNSUPPORTED:
            return getattr(context, name)
        return getattr(multiprocessing, name)


# --------------------------------------------------------------------------- swapping names


_PROCESS_CLASSES = tuple(
    cls for cls in (multiprocessing.process.BaseProcess, multiprocessing.context.Process,
                    *(getattr(multiprocessing.context, name, None)
                      for name in ("ForkProcess", "SpawnProcess", "ForkServerProcess")))
    if cls is not None)


def _stand_in(value: Any, module: StubModule) -> Any:
    """What stands for ``value`` in the stubbed pool's names, or None when it stays itself."""
    context = module.__dict__["_context"]
    if value is multiprocessing:
        return module
    if isinstance(value, multiprocessing.context.BaseContext):
        method = getattr(value, "_name", None)
        return context.get_context(method)
    if (isinstance(value, types.MethodType)
            and isinstance(value.__self__, multiprocessing.context.BaseContext)):
        method = getattr(value.__self__, "_name", None)
        stand_in = context.get_context(method)
        return getattr(stand_in, value.__name__, None) or functools.partial(
            _refuse, f"multiprocessing {value.__name__}")
    if isinstance(value, type) and value in _PROCESS_CLASSES:
        return context.Process
    return None


def _namespaces(pool_class: type) -> tuple[list[dict[str, Any]], list[type]]:
    """The global namespaces of the pool's own code, and its own classes: those of its
    classes (itself and its bases) with a method written outside the libraries."""
    spaces: dict[int, dict[str, Any]] = {}
    classes = []
    for cls in pool_class.__mro__:
        functions = [f for value in vars(cls).values() for f in _functions_in(value)
                     if not _library_file(f.__code__.co_filename)]
        if cls is object or not functions:
            continue
        classes.append(cls)
        for function in functions:
            spaces.setdefault(id(function.__globals__), function.__globals__)
    return list(spaces.values()), classes


def _functions_in(value: Any) -> Iterator[types.FunctionType]:
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        yield from (f for f in (value.fget, value.fset, value.fdel)
                    if isinstance(f, types.FunctionType))
        return
    if isinstance(value, types.FunctionType):
        yield value


_LIBRARY_ROOTS = tuple(sorted({os.path.join(os.path.realpath(p), "") for key, p in
                               sysconfig.get_paths().items()
                               if key in ("stdlib", "platstdlib", "purelib", "platlib")}
                              | {os.path.join(os.path.dirname(os.path.dirname(
                                  os.path.dirname(os.path.realpath(__file__)))), "")}))


def _library_file(filename: str) -> bool:
    """Code of the standard library, an installed package or the grader (not the pool's)."""
    if filename.startswith("<"):
        return filename.startswith("<frozen")
    return os.path.realpath(filename).startswith(_LIBRARY_ROOTS) or "site-packages" in filename


@contextlib.contextmanager
def _stubbed(pool_class: type, stubs: _Stubs) -> Iterator[None]:
    """While inside: the pool's code reads stubs for every ``multiprocessing`` name it uses."""
    module = StubModule(StubContext(None, stubs))
    swapped: list[tuple[Any, str, Any, Any]] = []
    spaces, classes = _namespaces(pool_class)
    try:
        for space in spaces:
            for name, value in list(space.items()):
                stand_in = _stand_in(value, module)
                if stand_in is not None:
                    space[name] = stand_in
                    swapped.append((space, name, value, stand_in))
        for cls in classes:
            for name, value in list(vars(cls).items()):
                stand_in = _stand_in(value, module)
                if stand_in is not None:
                    setattr(cls, name, stand_in)
                    swapped.append((cls, name, value, stand_in))
        yield
    finally:
        for owner, name, value, stand_in in reversed(swapped):
            if isinstance(owner, dict):
                if owner.get(name) is stand_in:
                    owner[name] = value
            elif vars(owner).get(name) is stand_in:
                setattr(owner, name, value)


# --------------------------------------------------------------------------- the explored run


@dataclass
class _PoolRun:
    """One schedule: the pool, the answers each client got, the stubbed world it ran in."""

    pool_class: Any
    stubs: _Stubs
    pool: Any = None
    ready: threading.Event = field(default_factory=threading.Event)
    done: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    got: dict[int, Any] = field(default_factory=dict)
    same_tokens: bool = False


def _tokens(client: int) -> tuple[int, ...]:
    return (client + 1, 0, client + 1)


def _request_of(run: _PoolRun, client: int) -> tuple[int, ...]:
    """The tokens ``client`` sends: its own, or client 0's when every client sends the same."""
    return _tokens(0 if run.same_tokens else client)


def _ask(run: _PoolRun, client: int) -> None:
    run.got[client] = run.pool.predict(_request_of(run, client))


def _first_client(run: _PoolRun) -> None:
    """Makes the pool (one stub worker), asks, waits for the other clients, closes it."""
    try:
        run.pool = run.pool_class([w.copy() for w in _WEIGHTS], 1, stub_target)
    finally:
        run.ready.set()
    _ask(run, 0)
    for _ in range(BOOKKEEPING_CLIENTS - 1):
        run.done.acquire()
    run.pool.close()


def _other_client(client: int) -> Callable[[_PoolRun], None]:
    def other(run: _PoolRun) -> None:
        run.ready.wait()
        if run.pool is None:
            return
        try:
            _ask(run, client)
        finally:
            run.done.release()

    other.__name__ = other.__qualname__ = f"client_{client}"
    return other


_CLIENTS = [_first_client] + [_other_client(k) for k in range(1, BOOKKEEPING_CLIENTS)]
_GLUE = (*_CLIENTS, _ask, _tokens, _request_of, stub_output, _is_request, _refuse, _Kill.__init__,
         _queue_get, _cut, _join, _hold,
         _Stubs.end, StubModule.__getattr__,
         *(vars(StubQueue)[name] for name in (
             "__init__", "_deliver", "empty", "qsize", "close", "join_thread",
             "cancel_join_thread", "_qsize", "_get")),
         *(vars(StubQueue)[name].fget for name in ("put", "put_nowait", "get", "get_nowait")),
         vars(StubProcess)["join"].fget, vars(StubProcess)["_answer"].__func__,
         vars(StubContext)["Process"].fget,
         *(f for cls in (StubProcess, StubContext) for f in vars(cls).values()
           if isinstance(f, types.FunctionType)))
"""The check's own code and the stubs' (no decision points): the search spends its bound on the
pool's code. A stub queue's ``put`` and ``get`` and a stub process's ``join`` are partials, not
functions, when the pool calls them: each call is a decision point at the pool's own line."""


def _check(run: _PoolRun, answers: list | None = None) -> None:
    """Each client got the answer to its own request; when it did and ``answers`` is given,
    the schedule appends what the clients got (for the judge), client 0's numbers then
    client 1's, as one flat list of floats."""
    got_all: list[float] = []
    try:
        for client in range(BOOKKEEPING_CLIENTS):
            want = stub_output(_request_of(run, client))
            if client not in run.got:
                raise AssertionError(f"predict() in client {client} never returned")
            try:
                got = plain_array(run.got[client], "predict()")
            except NotPlainData as error:
                raise AssertionError(str(error)) from None
            if got.shape != (len(want),) or not np.allclose(got, want):
                owner = next((k for k in range(BOOKKEEPING_CLIENTS)
                              if got.shape == (len(want),)
                              and np.allclose(got, stub_output(_tokens(k)))), None)
                whose = (f"the answer to client {owner}'s request" if owner is not None
                         else "no request's answer")
                raise AssertionError(
                    f"predict({_request_of(run, client)}) in client {client} returned "
                    f"{tuple(got.tolist())}, {whose}; expected {want}")
            got_all.extend(float(v) for v in got.astype(np.float64))
    finally:
        run.stubs.end()
    if answers is not None:
        answers.append(got_all)


#: The explorations, in order: (eager workers, every client sends the same tokens). Two
#: requests with the same tokens are two requests: a pool that keys its callers by the tokens
#: (``request_id = tuple(tokens)``) answers one caller twice and the other never.
EXPLORATIONS = ((True, False), (False, False), (True, True))


def explore_pool(pool_class: Callable[..., Any], *, seed: int = BOOKKEEPING_SEED,
                 max_schedules: int = BOOKKEEPING_SCHEDULES,
                 observed: list | None = None) -> Result | None:
    """Explore the pool's bookkeeping: two threads call ``predict`` at once.

    The first client makes the pool (with one stub worker) and closes it once both clients'
    ``predict`` returned. The check: each client got the answer to its own request. Both ways
    of answering are explored, eager then gathering (see the module's docstring), then eager
    again with both clients sending the same tokens (:data:`EXPLORATIONS`).

    When ``observed`` is given, each exploration appends what it saw (for the judge):
    whether its workers were eager and its clients sent the same tokens, what the clients
    got in each schedule (see :func:`_check`), how many schedules ran, whether they covered
    every schedule, and how many the bounded search ran.

    Returns:
        The first failing :class:`~autograder.harness.Result`, else the gathering one's; None
        when the pool uses something the stubs do not model, or does not work on them once on
        one thread (then it is not explored: the real processes graded it).
    """
    before = snapshot()
    result = None
    try:
        for eager, same_tokens in EXPLORATIONS:
            stubs = _Stubs(eager)
            with _stubbed(pool_class, stubs):
                if not _works_once(pool_class, stubs):
                    return None
                answers: list = []
                result = explore(lambda stubs=stubs, same=same_tokens:
                                 _PoolRun(pool_class, stubs, same_tokens=same),
                                 _CLIENTS, functools.partial(_check, answers=answers),
                                 seed=seed, max_schedules=max_schedules,
                                 samples=BOOKKEEPING_SAMPLES, timeout_s=BOOKKEEPING_TIMEOUT_S,
                                 glue=_GLUE + _setup_and_teardown(pool_class))
            stubs.end()
            if observed is not None:
                observed.append({"eager": eager, "same_tokens": same_tokens,
                                 **_explored(result, answers)})
            if result.verdict != "pass":
                return result
        return result
    finally:
        clean_up(before.since())


def _explored(result: Result, answers: list) -> dict[str, Any]:
    """An exploration as the judge reads it: each schedule's answers, how many ran, whether
    they covered every schedule, and how many the bounded search ran (0 when its bound was not
    reached; the search then samples a fixed number more)."""
    bounded = re.search(r"\((\d+) schedules?\)", result.bound or "")
    return {"schedules": answers, "schedules_run": result.schedules_run,
            "covered": bool(result.covered),
            "bounded": (result.schedules_run if result.covered
                        else int(bounded.group(1)) if bounded else 0)}


def _setup_and_teardown(pool_class: Any) -> tuple[Callable[..., Any], ...]:
    """The pool's ``__init__`` and ``close``: run without decision points of their own (what
    they call keeps its own), so the search spends its bound on ``predict`` and the threads
    that answer it."""
    found = []
    for name in ("__init__", "close"):
        function = getattr(pool_class, name, None)
        if isinstance(function, types.FunctionType) and \
                not _library_file(function.__code__.co_filename):
            found.append(function)
    return tuple(found)


def _works_once(pool_class: Callable[..., Any], stubs: _Stubs) -> bool:
    """Make a stubbed pool, ask it twice and close it, on one thread: did it all work?"""
    def once() -> bool:
        pool = pool_class([w.copy() for w in _WEIGHTS], 2, stub_target)
        try:
            answers = [pool.predict(_tokens(k)) for k in range(2)]
        finally:
            pool.close()
        return all(np.allclose(np.asarray(a, dtype=np.float64), stub_output(_tokens(k)))
                   for k, a in enumerate(answers))

    try:
        return bool(bounded("SharedWeightsPool", "a pool on stub workers", once,
                            BOOKKEEPING_PROBE_S))
    except (AssertionError, Unsupported):
        return False
    finally:
        stubs.end()


# --------------------------------------------------------------------------- close() joins


def closing_run(pool_class: Callable[..., Any]) -> dict[str, Any] | None:
    """Close a stubbed pool (eager stub workers) while the grader holds the pool's own thread.

    The pool is made with one gathering stub worker and asked twice on a grader thread; the
    threads it started are its own. Then ``close()`` runs on a grader thread (the pool's waits
    keep their timeouts), and two things are held
    (:class:`~autograder.checks.kit.JoinProbe`) until ``close()`` waits for them, or waits
    some other way for :data:`CLOSE_QUIET_S`: the first of the pool's threads to touch a stub
    queue (its answer collector, taking the end marker), and the stub worker that took its
    end marker, before it counts as exited (``close()`` joins it through ``Process.join``). A
    ``close()`` that does not wait for its threads or its workers (no join, or a sleep instead)
    returns while one is still held, or has not yet taken the marker: every time, never by
    chance.

    Returns:
        ``threads`` (the pool's own), ``held`` (one was held), ``released_by`` (the probe's
        word), ``returned`` (close() returned within :data:`CLOSE_S`), ``running_at_return``
        (the pool's threads alive the moment close() returned, after a release by join or
        with none held), ``left_running`` (still alive :data:`JOIN_GRACE_S` later), and for
        the worker ``worker_held``, ``worker_released_by`` and ``worker_running_at_return``
        (close() returned before it exited); None when the pool uses what the stubs do not
        model, or does not work on them once.
    """
    stubs = _Stubs(eager=False, cut=False)
    try:
        return _close_held(pool_class, stubs)
    finally:
        stubs.end()


def _close_held(pool_class: Callable[..., Any], stubs: _Stubs) -> dict[str, Any] | None:
    before = {id(t) for t in threading.enumerate()}
    seen: dict[str, Any] = {"running_at_return": 0}
    with _stubbed(pool_class, stubs):
        def make_and_ask() -> Any:
            pool = pool_class([w.copy() for w in _WEIGHTS], 1, stub_target)
            for k in range(2):
                pool.predict(_tokens(k))
            return pool

        grader: list[threading.Thread] = []
        made = within(make_and_ask, BOOKKEEPING_PROBE_S, name="grader-stub-pool",
                      track=grader.append)
        if not made.finished or made.error is not None:
            return None
        pool = made.value
        before.update(id(t) for t in grader)
        own = [t for t in threading.enumerate()
               if id(t) not in before and t not in _STUB_THREADS]
        probe = JoinProbe(CLOSE_QUIET_S, CLOSE_S / 2)
        exit_probe = JoinProbe(CLOSE_QUIET_S, CLOSE_S / 2)
        stubs.probe, stubs.exit_probe = probe, exit_probe

        def close() -> None:
            probe.arm(threading.current_thread())
            exit_probe.arm(threading.current_thread())
            try:
                pool.close()
            finally:
                seen["returned_while_held"] = probe.finish()
                seen["worker_held_at_return"] = exit_probe.finish()
                if probe.released_by in ("", "join", "finish"):
                    seen["running_at_return"] = sum(threading.Thread.is_alive(t) for t in own)

        watchers = [threading.Thread(target=p.watch, name="grader-join-probe", daemon=True)
                    for p in (probe, exit_probe)]
        for watcher in watchers:
            watcher.start()
        outcome = within(close, CLOSE_S, name="grader-close")
        probe.finish()
        exit_probe.finish()
        for watcher in watchers:
            watcher.join(1.0)
        for thread in own:
            thread.join(JOIN_GRACE_S / max(len(own), 1))
    return {"threads": len(own), "held": probe.held is not None,
            "released_by": probe.released_by, "returned": bool(outcome.finished),
            "raised": outcome.error is not None,
            "returned_while_held": bool(seen.get("returned_while_held", False)),
            "running_at_return": int(seen["running_at_return"]),
            "left_running": sum(threading.Thread.is_alive(t) for t in own),
            "worker_held": exit_probe.held is not None,
            "worker_released_by": exit_probe.released_by,
            "worker_running_at_return": bool(seen.get("worker_held_at_return", False))}
