"""Exercise 1's runs: ``log_access`` called from three real threads under stress, then from two
threads under the controlled scheduler."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from autograder.checks.kit import Overlap, released_together
from autograder.checks.plain import plain
from autograder.checks.tracing.settings import (
    LOG_EXPLORE_THREADS,
    LOG_SAMPLES,
    LOG_SCHEDULES,
    SEED,
    STRESS_TRIALS,
    TOGETHER_WAIT_S,
)
from autograder.harness import explore, stress
from autograder.harness.tamper import opaque


class Cancelled(BaseException):
    """What one worker's failing write raises: an exception that is not an ``Exception``, as
    ``KeyboardInterrupt`` is, so that a ``log_access`` that logs in ``except Exception``
    rather than in ``finally`` loses its record."""


def run_log_access(log_access: Callable[..., Any], *, trials: int = STRESS_TRIALS,
                   seed: int = SEED, observed: list | None = None,
                   overlap: Overlap | None = None) -> Any:
    """Three real threads call ``log_access`` twice each (a read and a write that raises: an
    ``OSError``, and for the last worker :class:`Cancelled`, which is not an ``Exception``).
    Each ``fn`` must run exactly once per access.

    ``fn`` sleeps (releasing the GIL) so the accesses overlap; it notes its own thread name and
    a ``perf_counter_ns`` taken inside the call, which every record must match and bracket.
    When ``observed`` is given, each passing trial appends what it saw (for the judge): what
    each worker's read returned, the workers whose failing write raised to them, every record
    as ``[thread, op, resource, start, end, lock]`` and what ``fn`` noted inside each call as
    ``[op, worker, thread, perf_counter_ns]``. When ``overlap`` is given, ``overlap.most`` is
    the most ``fn`` calls that ran at once in any trial (a ``log_access`` that holds a lock
    of its own around ``fn()`` keeps it at 1: it serialises the accesses it should observe).
    """
    running = overlap if overlap is not None else Overlap()

    def setup() -> dict[str, Any]:
        return {"log": [], "inside": {}, "returned": {}, "raised": {}, "calls": []}

    def make_worker(k: int) -> Callable[[dict[str, Any]], None]:
        def worker(state: dict[str, Any]) -> None:
            def read() -> int:
                state["calls"].append(("read", k))
                with running.counting():
                    time.sleep(0.006)
                    state["inside"][("read", k)] = (threading.current_thread().name,
                                                    time.perf_counter_ns())
                    time.sleep(0.006)
                return 100 + k

            def write() -> None:
                state["calls"].append(("write", k))
                with running.counting():
                    time.sleep(0.002)
                    state["inside"][("write", k)] = (threading.current_thread().name,
                                                     time.perf_counter_ns())
                if k == 2:
                    raise Cancelled(f"write cancelled for worker {k}")
                raise OSError(f"disk full for worker {k}")

            # Opaque: the answer cannot reach the trial's state or the overlap count.
            state["returned"][k] = log_access(state["log"], "read", f"res{k % 2}",
                                              opaque(read))
            try:
                log_access(state["log"], "write", f"res{k % 2}", opaque(write), lock=None)
            except (OSError, Cancelled) as error:
                state["raised"][k] = str(error)

        worker.__name__ = f"worker_{k}"
        return worker

    def check(state: dict[str, Any]) -> None:
        # What log_access returned and appended, as plain data (its own == never decides).
        log = plain(_record_fields(state["log"]), "reading the records log_access appended")
        for call in sorted(set(state["calls"])):
            times = state["calls"].count(call)
            assert times == 1, (
                f"expected log_access to call fn() once per access, but worker {call[1]}'s "
                f"{call[0]} ran fn() {times} times: a retry repeats the access itself (a write "
                "made twice) under one record")
        for k in range(3):
            returned = plain(state["returned"].get(k), f"log_access(log, 'read', 'res{k % 2}', fn)")
            assert returned == 100 + k, (
                f"expected log_access to return fn's value {100 + k}, got {returned!r}")
            assert k in state["raised"], (
                "expected the exception raised by fn to reach the caller of log_access, "
                "but it was swallowed")
        assert isinstance(log, list) and len(log) == 6, (
            f"expected 6 records (3 threads x a read and a failing write), got "
            f"{len(log) if isinstance(log, list) else type(log).__name__}: the write whose fn "
            "raised must be logged too, whatever it raised (an OSError, or a BaseException "
            "such as KeyboardInterrupt): use try/finally, not except Exception")
        names = sorted({str(r.get("thread")) for r in log if isinstance(r, dict)})
        for (op, k), (name, inside_ns) in state["inside"].items():
            matches = [r for r in log if isinstance(r, dict) and r.get("op") == op
                       and r.get("resource") == f"res{k % 2}" and r.get("thread") == name]
            assert matches, (
                f"expected a record with thread {name!r}, op {op!r}, resource 'res{k % 2}' "
                f"(the thread that ran fn), got threads {names}")
            ok = [r for r in matches if isinstance(r.get("start"), int) and isinstance(
                r.get("end"), int) and r["start"] <= inside_ns <= r["end"]]
            assert ok, (
                f"expected start <= {inside_ns} <= end (time.perf_counter_ns() inside fn) for "
                f"{name}'s {op}, got start={matches[0].get('start')!r}, "
                f"end={matches[0].get('end')!r}: take perf_counter_ns before and after the call")
            assert all(r.get("lock") is None for r in ok), "expected lock None when none is held"
        if observed is not None:
            observed.append({
                "returned": [plain(state["returned"].get(k), "log_access") for k in range(3)],
                "raised": sorted(k for k in state["raised"] if type(k) is int),
                "records": [_record(r) for r in log],
                "inside": [[op, k, name, inside_ns]
                           for (op, k), (name, inside_ns) in sorted(state["inside"].items())]})

    workers = [make_worker(k) for k in range(3)]
    return stress(setup, workers, check, trials=trials, seed=seed)


def run_log_access_explore(log_access: Callable[..., Any], *, seed: int = SEED,
                           schedules: int = LOG_SCHEDULES, observed: list | None = None
                           ) -> Any:
    """Two threads each log one read (``fn`` returns ``100 + k``) under ``explore``.

    ``fn`` runs atomically; the scheduler switches wherever the answer's own Python lets
    another thread in: a record built from a copy of the log and written back (``log[:] =
    log + [record]``, a sort of the copy) loses the other thread's record in a schedule with
    one preemption, which real threads reach only by luck. Search bound: every schedule with at
    most one preemption, then :data:`LOG_SAMPLES` seeded samples, at most ``schedules``. When
    ``observed`` is given, each passing schedule appends what it saw: what each read returned,
    every record as ``[thread, op, resource, start, end, lock]`` and what ``fn`` noted inside
    each call as ``["read", worker, thread, perf_counter_ns]``.
    """

    def setup() -> dict[str, Any]:
        return {"log": [], "inside": {}, "returned": {}, "calls": []}

    def make_worker(k: int) -> Callable[[dict[str, Any]], None]:
        def worker(state: dict[str, Any]) -> None:
            def read() -> int:
                state["calls"].append(k)
                state["inside"][k] = (threading.current_thread().name, time.perf_counter_ns())
                return 100 + k

            state["returned"][k] = log_access(state["log"], "read", f"res{k % 2}",
                                              opaque(read))

        worker.__name__ = f"worker_{k}"
        return worker

    def check(state: dict[str, Any]) -> None:
        log = plain(_record_fields(state["log"]), "reading the records log_access appended")
        for k in range(LOG_EXPLORE_THREADS):
            assert state["calls"].count(k) == 1, (
                f"expected log_access to call fn() once per access, but worker {k}'s read ran "
                f"fn() {state['calls'].count(k)} times")
            returned = plain(state["returned"].get(k), f"log_access(log, 'read', 'res{k % 2}', fn)")
            assert returned == 100 + k, (
                f"expected log_access to return fn's value {100 + k}, got {returned!r}")
        assert isinstance(log, list) and len(log) == LOG_EXPLORE_THREADS, (
            f"expected {LOG_EXPLORE_THREADS} records (one read per thread), got "
            f"{len(log) if isinstance(log, list) else type(log).__name__}: a record was lost "
            "while another thread logged. Add the record to the shared list in one step "
            "(list.append is atomic); never copy the log and write the copy back")
        for k, (name, inside_ns) in state["inside"].items():
            ok = [r for r in log if isinstance(r, dict) and r.get("thread") == name
                  and r.get("op") == "read" and r.get("resource") == f"res{k % 2}"
                  and isinstance(r.get("start"), int) and isinstance(r.get("end"), int)
                  and r["start"] <= inside_ns <= r["end"] and r.get("lock") is None]
            assert ok, (f"expected a record of {name}'s read of 'res{k % 2}' with start <= "
                        f"{inside_ns} <= end and lock None, got {log}")
        if observed is not None:
            observed.append({
                "returned": [plain(state["returned"].get(k), "log_access")
                             for k in range(LOG_EXPLORE_THREADS)],
                "records": [_record(r) for r in log],
                "inside": [["read", k, name, inside_ns]
                           for k, (name, inside_ns) in sorted(state["inside"].items())]})

    workers = [make_worker(k) for k in range(LOG_EXPLORE_THREADS)]
    return explore(setup, workers, check, seed=seed, max_schedules=schedules, timeout_s=60.0,
                   samples=LOG_SAMPLES)


#: The fields of a record, in the order the judge reads them.
RECORD_FIELDS = ("thread", "op", "resource", "start", "end", "lock")


def _record_fields(log: Any) -> Any:
    """The log with each record cut to :data:`RECORD_FIELDS`: a record may carry more (the
    exception ``fn`` raised, a note), which no check reads, so it need not be plain data."""
    if type(log) is not list:
        return log
    return [{key: dict.__getitem__(record, key) for key in RECORD_FIELDS
             if dict.__contains__(record, key)} if type(record) is dict else record
            for record in list(log)]


#: What :func:`run_log_access_together` tries: (its name, the op, the lock name both threads
#: log). The last: two threads that say they hold one lock, which a logger must record as
#: said, not make true with a lock of its own (that would hide a caller that never held it).
TOGETHER_CASES = (("read", "read", None), ("write", "write", None),
                  ("write naming one lock", "write", "best_lock"))


def run_log_access_together(log_access: Callable[..., Any], *,
                            wait_s: float = TOGETHER_WAIT_S) -> dict[str, bool]:
    """Two real threads log an access to one resource at once (:data:`TOGETHER_CASES`): a
    read, a write, and a write both threads log under one lock name while holding none. Each
    ``fn`` waits (at most ``wait_s``) until the other thread's ``fn`` has started too.

    Returns:
        For each case's name: whether both ``fn`` calls ran at once (False when
        ``log_access`` ran them one after the other, a lock of its own around ``fn()``).
    """
    return {name: _both_inside(log_access, op, wait_s, lock)
            for name, op, lock in TOGETHER_CASES}


def _both_inside(log_access: Callable[..., Any], op: str, wait_s: float,
                 lock: str | None = None) -> bool:
    """Whether two threads' ``op`` of one resource, logged at once (under the lock name
    ``lock``), ran their ``fn`` at once."""
    barrier = threading.Barrier(2)
    log: list = []
    met: list[bool] = []

    def meet() -> None:
        barrier.wait(wait_s)  # raises BrokenBarrierError when the other fn() never came
        met.append(True)

    fn = opaque(meet)

    def body() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            log_access(log, op, "best", fn, lock=lock)

    _, errors = released_together([body, body], timeout_s=2 * wait_s + 30)
    failed = next((error for error in errors if error is not None), None)
    if failed is not None:
        raise failed
    return len(met) == 2


def _record(record: dict[str, Any]) -> list[Any]:
    """A record (plain data already) as ``[thread, op, resource, start, end, lock]``."""
    if type(record) is not dict:
        return [None] * len(RECORD_FIELDS)
    return [record.get(key) for key in RECORD_FIELDS]
