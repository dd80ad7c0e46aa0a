"""Client threads sending requests to a service, and the stacks of the ones that are stuck.

The clients are released together by a barrier and waited for within bounds; the threads the
grader starts are told apart from the service's own by identity.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.capstone.models import _answer
from autograder.checks.capstone.settings import STALL_S, STUCK_S
from autograder.checks.kit import describe_threads, within

#: The threads the grader started (clients, close() and smoke runners), by ``id``: a thread the
#: service starts can take any name, so the grader's threads are told apart by identity.
_GRADER_THREADS: weakref.WeakValueDictionary[int, threading.Thread] = (
    weakref.WeakValueDictionary())


def _grader_thread(thread: threading.Thread) -> threading.Thread:
    _GRADER_THREADS[id(thread)] = thread
    return thread


def _is_grader_thread(thread: threading.Thread) -> bool:
    return _GRADER_THREADS.get(id(thread)) is thread


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not in ``before`` (by identity, asking ``threading`` itself:
    a service's thread class could answer ``is_alive()`` or ``==`` as it likes)."""
    known = {id(t) for t in before}
    return [t for t in threading.enumerate()
            if id(t) not in known and threading.Thread.is_alive(t)]


def _start(body: Callable[[], Any], name: str) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``body`` on a new daemon thread; the list receives what it raises."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            errors.append(error)

    thread = _grader_thread(threading.Thread(target=run, name=name, daemon=True))
    thread.start()
    return thread, errors


def _close_quietly(service: Any, seconds: float = 0.3) -> None:
    """Close a service after a check, without waiting long for a broken close()."""
    if service is not None and hasattr(service, "close"):
        within(service.close, seconds, name="grader-close", track=_grader_thread)


@dataclass
class Call:
    """One request a client made: its row, when, and what came back."""

    client: int
    index: int
    x: np.ndarray
    start: float = 0.0
    end: float = 0.0
    output: Any = None
    error: BaseException | None = None


@dataclass
class ClientRun:
    """Requests made by client threads released together.

    Attributes:
        calls: Every request, per client, in the order the client made them.
        seconds: From the release until the last client finished (or the deadline).
        stuck: Client threads still inside a request at the deadline.
        threads: The client threads, by client.
        held_until: Until then (a ``time.perf_counter()`` value) the grader itself held the
            model (the close test's gate): no answer was due, so no stall is counted before.
    """

    calls: list[list[Call]]
    seconds: float
    stuck: list[threading.Thread] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    held_until: float = 0.0

    @property
    def done(self) -> list[Call]:
        """The requests that were answered (or raised)."""
        return [c for mine in self.calls for c in mine if c.end]


def run_clients(service: Any, rows: Sequence[Sequence[np.ndarray]], *, deadline_s: float,
                gap_s: float = 0.0, when_released: Callable[[ClientRun], Any] | None = None,
                on_finished: Callable[[], Any] | None = None,
                starts: Sequence[threading.Event | None] = ()) -> ClientRun:
    """One real thread per client sends its rows to ``service.predict``, one after another.

    The clients are released together by a barrier; ``when_released`` then runs on this
    thread with the (still running) :class:`ClientRun` (``close()`` in the close test).
    Client ``c`` sends its first request once ``starts[c]`` is set (at most :data:`STUCK_S`
    after the release), when there is one; the others at the release.
    Waits at most ``deadline_s`` for the clients.
    ``on_finished`` runs on this thread after every client finished its requests but before
    any client thread ends (to measure what lives as long as the threads do).
    """
    calls = [[Call(c, i, np.array(x)) for i, x in enumerate(mine)] for c, mine in enumerate(rows)]
    go = threading.Barrier(len(rows) + 1)
    finished = threading.Barrier(len(rows) + 1) if on_finished else None
    leave = threading.Event()

    def client(mine: list[Call], begin: threading.Event | None) -> None:
        go.wait()
        if begin is not None:
            begin.wait(STUCK_S)
        for call in mine:
            call.start = time.perf_counter()
            try:
                call.output = _answer(service.predict(call.x))
            except Exception as error:  # noqa: BLE001 - recorded for the check
                call.error = error
            call.end = time.perf_counter()
            if gap_s:
                time.sleep(gap_s)
        if finished is not None:
            finished.wait()
            leave.wait(STUCK_S)

    starts = list(starts) + [None] * (len(calls) - len(starts))
    threads = [_grader_thread(threading.Thread(target=client, args=(mine, starts[c]),
                                               name=f"client-{c}", daemon=True))
               for c, mine in enumerate(calls)]
    for thread in threads:
        thread.start()
    go.wait()
    start = time.perf_counter()
    run = ClientRun(calls, 0.0, threads=threads)
    if when_released is not None:
        when_released(run)
    deadline = start + deadline_s
    if finished is not None and on_finished is not None:
        try:
            finished.wait(timeout=max(0.0, deadline - time.perf_counter()))
            on_finished()
        except threading.BrokenBarrierError:
            pass
        leave.set()
    wait_for_progress(threads, run, start, deadline)
    end = max((c.end for mine in calls for c in mine if c.end), default=time.perf_counter())
    run.seconds = end - start
    run.stuck = [t for c, t in enumerate(threads)
                 if t.is_alive() and any(x.start and not x.end for x in calls[c])]
    run.latencies = [c.end - c.start for c in run.done]
    return run


def _last_answer(run: ClientRun, since: float) -> float:
    return max([since, *(c.end for mine in run.calls for c in mine)])


def _in_flight(run: ClientRun) -> list[Call]:
    """Requests sent and not answered yet."""
    return [c for mine in run.calls for c in mine if c.start and not c.end]


def wait_for_progress(threads: Sequence[threading.Thread], run: ClientRun, since: float,
                      deadline: float, *, clients: bool = True) -> None:
    """Wait until ``threads`` end or ``deadline`` (a ``time.perf_counter()`` value) passes,
    or until they are stuck: no request answered for :data:`STALL_S` while one is waiting
    (``clients``: the threads are the clients), or at all (otherwise: a thread such as
    ``close()`` that should end once the waiting requests are answered). Time before
    ``run.held_until`` (the grader held the model) does not count."""
    while True:
        alive = [t for t in threads if t.is_alive()]
        now = time.perf_counter()
        if not alive or now > deadline:
            return
        waiting = _in_flight(run) if clients else True
        if waiting and now - _last_answer(run, max(since, run.held_until)) > STALL_S:
            return
        alive[0].join(0.02)


def wait_until(condition: Callable[[], bool], within_s: float) -> bool:
    """Poll ``condition`` every millisecond until it holds; False if it did not within
    ``within_s`` seconds."""
    limit = time.perf_counter() + within_s
    while not condition():
        if time.perf_counter() > limit:
            return False
        time.sleep(0.001)
    return True


def _stuck_message(run: ClientRun, what: str, before: set[threading.Thread] | None = None
                   ) -> str:
    waiting = _in_flight(run)
    service = [] if before is None else [
        t for t in _new_threads(before) if not _is_grader_thread(t)]
    shown = describe_threads(run.stuck[:4]) + (
        f"\n  ... and {len(run.stuck) - 4} more client threads" if len(run.stuck) > 4 else "")
    if service:
        shown += f"\nThe service's own threads:\n{describe_threads(service)}"
    return (f"{len(run.stuck)} client thread(s) were still waiting inside predict() after "
            f"{what}: no request was answered for {STALL_S:g} s ({len(waiting)} request(s) "
            "never answered). A request was lost: queued but never served, or its caller never "
            f"woken. Where the stuck threads are:\n{shown}")
