"""Threads released together at a barrier: the load every check puts on an answer."""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from autograder.harness import tamper


def released_together(bodies: Sequence[Callable[[], Any]], *, timeout_s: float | None = None
                      ) -> tuple[float, list[BaseException | None]]:
    """Run each body on its own real (daemon) thread, all released at once by a barrier.

    Args:
        bodies: What each thread runs.
        timeout_s: How long to wait for them after the release; None waits as long as it takes.

    Returns:
        Seconds from the release until the last body finished, and each body's exception (None
        for a body that returned).

    Raises:
        AssertionError: bodies were still running after ``timeout_s`` (a deadlock, usually);
            they stay blocked in the background.
    """
    barrier = threading.Barrier(len(bodies) + 1)
    errors: list[BaseException | None] = [None] * len(bodies)

    def run(index: int) -> None:
        barrier.wait()
        try:
            bodies[index]()
        except BaseException as error:  # noqa: BLE001 - handed back to the caller
            errors[index] = error

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(len(bodies))]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    deadline = None if timeout_s is None else start + timeout_s
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.perf_counter()))
    elapsed = time.perf_counter() - start
    stuck = sum(thread.is_alive() for thread in threads)
    if stuck:
        raise AssertionError(f"{stuck} of {len(bodies)} threads were still running after "
                             f"{timeout_s:g} s: a deadlock, or a thread waiting for itself")
    return elapsed, errors


def run_together(bodies: Sequence[Callable[[], Any]], *, timeout_s: float | None = None
                 ) -> float:
    """:func:`released_together`, raising the first body's exception here; seconds taken."""
    elapsed, errors = released_together(bodies, timeout_s=timeout_s)
    for error in errors:
        if error is not None:
            raise error
    return elapsed


def run_threads(target: Callable[[int], Any], threads: int, *,
                timeout_s: float = 60.0) -> float:
    """Run ``target(index)`` on ``threads`` real threads released together; seconds taken.

    An exception in any thread is raised again here, after all threads have finished. Threads
    still running after ``timeout_s`` (a deadlock, usually) raise AssertionError instead of
    hanging the notebook; they are daemon threads and stay blocked in the background.
    """
    return run_together([functools.partial(target, k) for k in range(threads)],
                        timeout_s=timeout_s)


#: Where a thread waits for another (``Condition.wait``, which ``Event.wait``, ``Future.result``
#: and ``Queue.get`` use, and ``Thread.join``): the file and the function names, read once.
_THREADING_FILE = threading.Condition.wait.__code__.co_filename
_WAITING_IN = frozenset({"wait", "join", "_wait_for_tstate_lock"})
#: Where ``Thread.join`` waits (Python 3.11: ``_wait_for_tstate_lock``; 3.13: ``join``).
_JOINING_IN = frozenset({"join", "_wait_for_tstate_lock"})
_THREAD_START = threading.Thread.start.__code__
_QUEUE_PUT = queue.Queue.put.__code__


def waiting_for_another(thread: threading.Thread) -> bool:
    """True when ``thread`` has ended or is waiting in ``threading`` for another thread: its
    innermost frame is ``Condition.wait`` (so also ``Event.wait``, ``Future.result``,
    ``Queue.get``) or ``Thread.join``. A client seen there after it called ``predict`` has
    handed its request over and waits for the answer; ``close()`` seen there waits for the
    service's threads (or its queue) to finish. The wait inside ``Thread.start`` (until the new
    thread has begun, which it may have done already) is not one."""
    if not threading.Thread.is_alive(thread):
        return True
    frame = tamper.current_frames().get(thread.ident or -1)
    if frame is None or frame.f_code.co_filename != _THREADING_FILE:
        return False
    caller = frame
    for _ in range(3):  # Thread.start -> Event.wait -> Condition.wait
        caller = caller.f_back
        if caller is None:
            break
        if caller.f_code is _THREAD_START:
            return False
    return frame.f_code.co_name in _WAITING_IN


def waiting_for_room(thread: threading.Thread) -> bool:
    """True when ``thread`` waits inside ``queue.Queue.put`` (a full bounded queue): a client
    seen there has not handed its request over yet, though :func:`waiting_for_another` is true
    of it."""
    frame = tamper.current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code is _QUEUE_PUT:
            return True
        frame = frame.f_back
    return False


def joining(thread: threading.Thread, other: threading.Thread,
            through: Sequence[object] = ()) -> bool:
    """True when ``thread`` is inside ``other.join()`` (waiting for ``other`` to end), or waits
    in ``threading`` on one of ``through`` (a condition that stands for ``other``'s end)."""
    if not threading.Thread.is_alive(thread):
        return False
    frame = tamper.current_frames().get(thread.ident or -1)
    if frame is None or frame.f_code.co_filename != _THREADING_FILE:
        return False
    waited = frame.f_locals.get("self")
    return ((frame.f_code.co_name in _JOINING_IN and waited is other)
            or (frame.f_code.co_name in _WAITING_IN and any(waited is t for t in through)))


def alive_since(before: set[threading.Thread], ignore: tuple[str, ...] = ()) -> list[str]:
    """Names (quoted) of the threads started since ``before`` (the threads then, kept as
    objects: a new thread may reuse the ident of one that ended since) that are alive now.
    The scheduler's own workers (raw threads, or named ``racelab-``) and threads whose name
    starts with one of ``ignore`` (the grader's) are not among them."""
    return [repr(t.name) for t in threading.enumerate()
            if t not in before and t.is_alive()
            and not isinstance(t, threading._DummyThread)
            and not t.name.startswith(("racelab-", *ignore))]


class JoinProbe:
    """Holds one of an answer's threads until the answer waits for it: a missing join is seen
    every time, never by luck.

    An answer that returns while a thread it started still runs (no ``join()``, or a sleep in
    its place) passes or fails by chance when that thread's last steps are quick. The grader
    calls :meth:`hold` from code it owns that the answer's threads run (a hidden ledger's
    method, a stand-in queue's ``get``): once :meth:`arm`-ed, the first thread other than the
    waiter to get there (or the next after ``passed`` others) stops until :meth:`watch` sees
    the waiter join it, or sees no :meth:`progress` for :attr:`quiet_s` seconds (the waiter
    waits for the held thread some other way: an ``Event``, a ``Future``, a loop that polls
    ``is_alive()`` and sleeps). An answer that returns while its thread is held
    (:meth:`finish`) did not wait for it: the thread certainly still ran. (An answer that
    does not wait, but sleeps longer than ``quiet_s`` before it returns, lets the thread go
    on: such a sleep is a join in all but name, on any machine that is not stalled for that
    long.)

    Attributes:
        through: What else the waiter may wait on to wait for the held thread (the condition
            of a stand-in process's exit event, say), for :func:`joining`.
        held: The thread held (None while none got there).
        released_by: ``"join"``, ``"quiet"``, ``"finish"`` (the waiter's call ended first) or
            ``"timeout"``; "" while held or while none was held.
    """

    def __init__(self, quiet_s: float, limit_s: float, passed: int = 0) -> None:
        """Args: quiet_s: how long the answer may make no progress before the held thread
        goes on; limit_s: how long any thread is held at most; passed: how many distinct
        threads go through :meth:`hold` before the next one is held (0: the first is)."""
        self.quiet_s = quiet_s
        self.limit_s = limit_s
        self._to_pass = passed
        self._passed: set[threading.Thread] = set()
        self.through: list[object] = []
        self.held: threading.Thread | None = None
        self.released_by = ""
        self._gate = threading.Event()
        self._lock = threading.Lock()
        self._waiter: threading.Thread | None = None
        self._armed = False
        self._last = time.perf_counter()

    def arm(self, waiter: threading.Thread) -> None:
        """From now on, the first other thread to reach :meth:`hold` stops there."""
        with self._lock:
            self._waiter, self._armed = waiter, True
        self.progress()

    def progress(self) -> None:
        """The answer's threads did work (a quiet waiter is not yet stuck on the held one)."""
        self._last = time.perf_counter()

    def hold(self) -> bool:
        """Called in the answer's thread, by grader code: the first one stops here.

        Returns:
            True when this call was the one held (it returns once released).
        """
        me = threading.current_thread()
        with self._lock:
            if not self._armed or self.held is not None or me is self._waiter:
                return False
            if me in self._passed or len(self._passed) < self._to_pass:
                self._passed.add(me)
                return False
            self.held = me
        if not self._gate.wait(self.limit_s):
            self._release("timeout")
        return True

    def watch(self) -> None:
        """Release the held thread when the waiter joins it or waits quietly; returns once
        released (run it on a grader thread)."""
        while not self._gate.is_set():
            waiter, held = self._waiter, self.held
            if held is not None and waiter is not None:
                if joining(waiter, held, self.through):
                    self._release("join")
                elif time.perf_counter() - self._last > self.quiet_s:
                    self._release("quiet")
            time.sleep(0.001)

    def finish(self) -> bool:
        """The waiter's call ended: True when a thread was still held then (the answer did not
        wait for it). Releases it either way."""
        with self._lock:
            still_held = self.held is not None and not self._gate.is_set()
            self._armed = False
        self._release("finish")
        return still_held

    def _release(self, why: str) -> None:
        with self._lock:
            if not self._gate.is_set():
                if self.held is not None:
                    self.released_by = why  # before the gate: the held thread reads it
                self._gate.set()


class Overlap:
    """How many calls (of an answer's, or into it) were running at once, at most.

    A race shows only when calls overlap: a check can require that they did (a stress test
    that failed a racy ledger whose calls never overlapped did not see the race; a logger whose
    accesses never overlap serialised them). Counted under a lock of its own, around the calls,
    not inside them.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._running = 0
        self.most = 0

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        """Count the body as one call running."""
        with self._guard:
            self._running += 1
            self.most = max(self.most, self._running)
        try:
            yield
        finally:
            with self._guard:
                self._running -= 1
