"""Exercise 1's run: a ``SharedWeightsPool`` started, loaded from threads and closed, watched."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks import process_workers
from autograder.checks.kit import bounded, run_together
from autograder.checks.plain import NotPlainData, plain_array
from autograder.checks.processes.ledger import waiting
from autograder.checks.processes.model import _graded_requests, embedding_weights
from autograder.checks.processes.resources import (
    Leftovers,
    _wait_for_exit,
    clean_up,
    snapshot,
    uss_mb,
)
from autograder.checks.processes.settings import (
    CLOSE_S,
    EXEC_POLL_S,
    EXEC_POLLS,
    IDLE_MARGIN_S,
    IDLE_MAX_S,
    IDLE_PREDICT_S,
    IDLE_SEEN_S,
    LOAD_S,
    MB,
    OUTPUTS,
    POOL_THREADS,
    POOL_WORKERS,
    START_S,
)
from autograder.harness.tamper import remove_scratch, scratch_folder


@dataclass
class PoolRun:
    """What the grader saw of one pool (see :func:`run_pool`); ``outputs`` holds what each
    graded request's ``predict()`` returned, as a flat list of floats (None when it returned
    None); ``after_idle`` what the first request's returned once more, after the pool had been
    left idle for ``idle_s`` seconds; ``by_workers`` how many requests the workers running the
    grader's target say they answered."""

    workers: list[int] = field(default_factory=list)
    not_spawned: int = 0
    wrong: list[tuple[int, Any, tuple[float, ...]]] = field(default_factory=list)
    answered: int = 0
    worker_uss_mb: dict[int, float] = field(default_factory=dict)
    segment_mb: float = 0.0
    still_running: list[int] = field(default_factory=list)
    other_target: list[int] = field(default_factory=list)
    served: list[int] = field(default_factory=list)
    leftovers: Leftovers = field(default_factory=Leftovers)
    outputs: list[list[float] | None] = field(default_factory=list)
    idle_s: float = 0.0
    after_idle: list[float] | None = None
    by_workers: int = 0


def run_pool(pool_class: Callable[..., Any], *, workers: int = POOL_WORKERS,
             exercise: str = "SharedWeightsPool") -> PoolRun:
    """Start a pool with the grader's out-of-order workers, load it from threads, close it.

    Raises AssertionError (in the exercise's terms) when a step raises or does not finish in
    time. Whatever happens, processes and segments the pool left are killed and unlinked.
    """
    before = snapshot()
    seen = PoolRun()
    marks = scratch_folder("served-by")
    target = functools.partial(process_workers.serve, served_by=marks)
    threads_before = threading.enumerate()  # kept, so that no id below is reused
    try:
        pool = bounded(exercise, f"SharedWeightsPool(weights, {workers}, serve)",
                        lambda: pool_class(list(embedding_weights()), workers, target), START_S)
        started = before.since()
        seen.workers = started.processes
        seen.not_spawned = _count_not_spawned(started.processes, marks)
        seen.segment_mb = sum(started.segments.values()) / MB
        _load(exercise, pool, seen)
        for pid in seen.workers:
            with contextlib.suppress(Exception):
                seen.worker_uss_mb[pid] = uss_mb(pid)
        seen.idle_s = _idle(threads_before)
        seen.after_idle = _predict_after_idle(exercise, pool, seen.idle_s)
        bounded(exercise, "close()", pool.close, CLOSE_S)
        seen.still_running = _wait_for_exit(seen.workers)
        seen.served = [pid for pid in seen.workers if _mark(marks, pid)]
        seen.by_workers = sum(_answered(marks, pid) for pid in seen.workers)
        seen.other_target = [pid for pid in seen.workers if pid not in seen.still_running
                             and pid not in seen.served]
        seen.leftovers = before.since()
    finally:
        clean_up(before.since())
        remove_scratch(marks)
    return seen


def _count_not_spawned(pids: Sequence[int], marks: str) -> int:
    """How many of ``pids`` run something other than multiprocessing's ``spawn_main``.

    A worker that runs the grader's target says how its process was started in its mark (in
    ``marks``, see :func:`process_workers.serve`): that settles it. Any other process is
    judged by its command line. ``Process.start()`` with spawn can return while the child is
    still inside ``execve``: its command line then reads empty (the new program's arguments
    are not set up yet), or this process's own if the exec has not begun. Such a child is
    looked at again, up to :data:`EXEC_POLLS` times, :data:`EXEC_POLL_S` apart (a forked
    process that runs no target of the grader's keeps this process's command line, and costs
    that wait). A spawned worker was once counted as forked under the full suite's load (1
    grading run in 20).
    """
    import psutil

    own = psutil.Process().cmdline()
    looks_forked, other = set(pids), set()
    for poll in range(EXEC_POLLS):
        for pid in sorted(looks_forked):
            method = _mark(marks, pid)
            if method:
                looks_forked.discard(pid)
                if method != "spawn":
                    other.add(pid)
                continue
            try:
                command = psutil.Process(pid).cmdline()
            except psutil.Error:
                looks_forked.discard(pid)  # gone: nothing to judge
                continue
            if "spawn_main" in " ".join(command):
                looks_forked.discard(pid)
            elif command and command != own:  # another program: no need to wait
                looks_forked.discard(pid)
                other.add(pid)
        if not looks_forked:
            break
        if poll < EXEC_POLLS - 1:
            time.sleep(EXEC_POLL_S)
    return len(other) + len(looks_forked)


def _mark(marks: str, pid: int) -> str:
    """How worker ``pid`` says its process was started ("" before it wrote its mark)."""
    try:
        with open(os.path.join(marks, str(pid)), encoding="utf-8") as mark:
            return mark.read().strip()
    except OSError:
        return ""


def _answered(marks: str, pid: int) -> int:
    """How many requests worker ``pid`` (running the grader's target) says it answered."""
    try:
        with open(os.path.join(marks, f"{pid}.answered"), encoding="utf-8") as count:
            text = count.read().strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def _load(exercise: str, pool: Any, seen: PoolRun) -> None:
    tokens, expected = _graded_requests()
    outputs: list[Any] = [None] * len(tokens)
    not_plain: list[str] = []

    def client(k: int) -> None:
        for index in range(k, len(tokens), POOL_THREADS):
            output = pool.predict(tokens[index])
            try:  # plain numbers, copied as they come back: nothing of the pool's runs later
                outputs[index] = None if output is None else np.array(
                    plain_array(output, f"{exercise}: predict()"))
            except NotPlainData as error:
                not_plain.append(str(error))
                return

    def load() -> None:
        run_together([functools.partial(client, k) for k in range(POOL_THREADS)])

    bounded(exercise, f"predict() from {POOL_THREADS} threads at once", load, LOAD_S)
    if not_plain:
        raise AssertionError(f"{not_plain[0]} (expected the model's output, {OUTPUTS} numbers)")
    seen.outputs = [None if got is None else _floats(got) for got in outputs]
    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if got is None:
            continue
        seen.answered += 1
        if not _same(got, want):
            seen.wrong.append((index, got, want))


def _idle(threads_before: list[threading.Thread]) -> float:
    """Leave the pool idle for the longest time limit its own threads are seen waiting with
    (at most :data:`IDLE_MAX_S`) plus :data:`IDLE_MARGIN_S`; none with a limit: no wait. The
    threads are watched until each is seen blocked at once (or ended), for at most
    :data:`IDLE_SEEN_S`, and every limit seen meanwhile counts.

    Returns:
        The seconds it was left idle.
    """
    known = {id(thread) for thread in threads_before}
    limits: list[float] = []
    watch_until = time.monotonic() + IDLE_SEEN_S
    while True:
        seen = [waiting(thread) for thread in threading.enumerate() if id(thread) not in known
                and not isinstance(thread, threading._DummyThread)]  # noqa: SLF001
        limits += [wait.limit for wait in seen if wait.blocked and wait.limit is not None
                   and wait.limit <= IDLE_MAX_S]
        if all(wait.blocked for wait in seen) or time.monotonic() > watch_until:
            break
        time.sleep(0.005)
    if not limits:
        return 0.0
    idle_s = float(max(limits)) + IDLE_MARGIN_S
    time.sleep(idle_s)
    return idle_s


def _predict_after_idle(exercise: str, pool: Any, idle_s: float) -> list[float] | None:
    """The first graded request asked once more after the idle time, for at most
    :data:`IDLE_PREDICT_S`.

    Raises:
        AssertionError: it did not return in time, raised, or returned another output.
    """
    tokens, expected = _graded_requests()
    what = f"predict() after the pool had been idle for {idle_s:g} s"
    try:
        output = bounded(exercise, what, lambda: pool.predict(tokens[0]), IDLE_PREDICT_S)
    except AssertionError as failure:
        if not idle_s:
            raise
        raise AssertionError(
            f"{failure} (the pool's own thread waited with a time limit: expected the pool "
            "to keep answering however long it was idle, so a thread that collects answers "
            "must not give up when nothing comes for a while)") from None
    if output is None:
        raise AssertionError(f"{exercise}: {what} returned None, expected the model's output")
    got = np.array(plain_array(output, f"{exercise}: {what}"))
    if not _same(got, expected[0]):
        raise AssertionError(f"{exercise}: {what} returned {_floats(got)[:OUTPUTS]}, expected "
                             f"{list(expected[0])}")
    return _floats(got)


#: The most numbers of one output kept for the judge (a right one has OUTPUTS).
_KEPT = 64


def _floats(got: np.ndarray) -> list[float]:
    """An output (a plain array already) as a flat list of floats, for the judge."""
    try:
        return [float(v) for v in np.asarray(got, dtype=np.float64).reshape(-1)[:_KEPT]]
    except (TypeError, ValueError):
        return []


def _same(got: Any, want: tuple[float, ...]) -> bool:
    try:
        return np.allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-5, atol=1e-6)
    except (TypeError, ValueError):
        return False
