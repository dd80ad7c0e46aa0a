"""Threads released together at a barrier: the load every check puts on an answer."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any


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
