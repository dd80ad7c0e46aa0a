"""Lesson 08, "threads or processes?": the notebook's toolbox and the graders.

The lesson compares three designs for serving one model to N concurrent requests: N worker
processes that each load their own copy, one process whose N threads share one copy, and N
worker processes attached read-only to one copy in shared memory. Everything that runs in a
worker process lives in :mod:`autograder.checks.process_workers` (a notebook's functions
cannot be ``spawn`` targets); this module starts and measures those workers for the notebook,
and grades the student's parent-side code:

- :func:`check_pool`: a ``SharedWeightsPool`` starts its workers with ``spawn``, puts the
  weights in shared memory once (each worker attaches read-only, no private copy), answers
  every request from several threads at once with its own output while the grader's workers
  answer out of order, and closes without leaving a process or a shared-memory segment;
- :func:`check_ledger`: ``run_ledger`` starts the ledger workers on real processes so that no
  update is lost (one ``multiprocessing`` lock shared by all, or a single writer);
- :func:`check_choose`: ``choose`` picks threads or processes from measurements the grader
  makes up (fixed seed), by the lesson's rule.

Every check has fixed seeds and counts, waits only with time limits, never retries, and
cleans up after a wrong answer (kills the processes it left, unlinks its segments) so that a
leak costs only its own exercise.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from autograder.checks import process_workers
from autograder.checks.kit import bounded
from autograder.checks.plain import NotPlainData, plain, plain_array
from autograder.harness.tamper import scratch_folder

SHM_DIR = Path("/dev/shm")
MB = 2**20
#: The exercise's model: an embedding table (vocabulary x 64) and a Dense head (64 -> 4).
VOCABULARY, DIM, OUTPUTS = 98_304, 64, 4
EMBEDDING_SHAPES = ((VOCABULARY, DIM), (DIM, OUTPUTS), (OUTPUTS,))
TOKENS_PER_REQUEST = 16
#: Graded load: threads calling ``predict`` at once, requests each, pool workers.
POOL_THREADS, POOL_REQUESTS_EACH, POOL_WORKERS = 4, 6, 2
#: Time limits of the graded steps (seconds): a pool that hangs fails, it never hangs the grader.
START_S, LOAD_S, CLOSE_S, EXIT_POLLS, EXIT_POLL_S = 20.0, 20.0, 10.0, 10, 0.05
#: Looks at a worker that still shows this process's command line (forked, or spawned and
#: not yet exec'd on a loaded machine): up to 40 x 0.05 s.
EXEC_POLLS, EXEC_POLL_S = 40, 0.05
LEDGER_WORKERS, LEDGER_UPDATES, LEDGER_S = 3, 400, 30.0
#: ``choose``'s rule: processes must fit the memory budget and serve at least this much more.
MARGIN = 1.2


# --------------------------------------------------------------------------- processes and segments


def spawn_context() -> Any:
    """``multiprocessing.get_context("spawn")``."""
    return multiprocessing.get_context("spawn")


def _is_tracker(proc: Any) -> bool:
    try:
        return "resource_tracker" in " ".join(proc.cmdline())
    except Exception:  # noqa: BLE001 - a process that ended or became a zombie
        return False


def child_processes() -> dict[int, Any]:
    """This process's live children, by pid, without multiprocessing's resource tracker."""
    import psutil

    found = {}
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE and not _is_tracker(proc):
                found[proc.pid] = proc
    return found


def segments() -> dict[str, int]:
    """Shared-memory segments in ``/dev/shm`` (name -> bytes), without semaphores."""
    found = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(SHM_DIR):
            if not entry.name.startswith("sem."):
                with contextlib.suppress(OSError):
                    found[entry.name] = entry.stat().st_size
    return found


@dataclass
class Leftovers:
    """Processes and segments that appeared since a :func:`snapshot` and are still there."""

    processes: list[int] = field(default_factory=list)
    segments: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.processes or self.segments)

    def describe(self) -> str:
        """The leftovers in words."""
        parts = []
        if self.processes:
            parts.append(f"{len(self.processes)} process{'es' if len(self.processes) > 1 else ''}"
                         " still running")
        if self.segments:
            parts.append(f"{len(self.segments)} shared-memory segment"
                         f"{'s' if len(self.segments) > 1 else ''} still in /dev/shm "
                         f"({sum(self.segments.values()) / MB:.0f} MB)")
        return " and ".join(parts)


@dataclass
class Snapshot:
    """What ran and what was in ``/dev/shm`` at one moment."""

    processes: set[int]
    segments: set[str]

    def since(self) -> Leftovers:
        """What appeared since this snapshot and is still there."""
        now = segments()
        return Leftovers(sorted(set(child_processes()) - self.processes),
                         {n: s for n, s in now.items() if n not in self.segments})


def snapshot() -> Snapshot:
    """Remember this process's children and the segments in ``/dev/shm`` now."""
    return Snapshot(set(child_processes()), set(segments()))


def clean_up(leftovers: Leftovers) -> None:
    """Kill leftover processes (and reap them) and unlink leftover segments."""
    import psutil

    procs = []
    for pid in leftovers.processes:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            proc.kill()
            procs.append(proc)
    with contextlib.suppress(psutil.Error):
        psutil.wait_procs(procs, timeout=5)
    for name in leftovers.segments:
        _unlink(name)


def _unlink(name: str) -> None:
    """Unlink a segment through SharedMemory, so that the resource tracker forgets it too."""
    from multiprocessing.shared_memory import SharedMemory

    try:
        block = SharedMemory(name=name)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(SHM_DIR / name)
        return
    block.close()
    with contextlib.suppress(OSError):
        block.unlink()


def _wait_for_exit(pids: Sequence[int]) -> list[int]:
    """Poll (bounded) until ``pids`` have exited; the ones still running."""
    import psutil

    running = list(pids)
    for _ in range(EXIT_POLLS):
        running = [pid for pid in running if _alive(pid, psutil)]
        if not running:
            return []
        time.sleep(EXIT_POLL_S)
    return running


def _alive(pid: int, psutil: Any) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def uss_mb(pid: int) -> float:
    """Unique set size of a process: memory no other process maps (MB)."""
    import psutil

    return psutil.Process(pid).memory_full_info().uss / MB


def rss_mb(pid: int) -> float:
    """Resident set size of a process: every page it maps that is in RAM, shared or not (MB)."""
    import psutil

    return psutil.Process(pid).memory_info().rss / MB


# --------------------------------------------------------------------------- the exercise's model


@cache
def embedding_weights(seed: int = 0) -> tuple[np.ndarray, ...]:
    """The exercise's model weights: ``table``, ``kernel``, ``bias`` (float32, about 24 MB)."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape, dtype=np.float32) for shape in EMBEDDING_SHAPES)


def request_tokens(count: int, seed: int = 0) -> list[tuple[int, ...]]:
    """``count`` requests of :data:`TOKENS_PER_REQUEST` token ids each, drawn from ``seed``."""
    rng = random.Random(seed)
    return [tuple(rng.randrange(VOCABULARY) for _ in range(TOKENS_PER_REQUEST))
            for _ in range(count)]


def reference_output(tokens: Sequence[int], weights: Sequence[np.ndarray] | None = None
                     ) -> tuple[float, ...]:
    """What a worker answers for ``tokens`` (the same code, run here)."""
    arrays = weights if weights is not None else embedding_weights()
    views = [memoryview(np.ascontiguousarray(a)).cast("B").cast("f") for a in arrays]
    return process_workers.embedding_predict(views, EMBEDDING_SHAPES, tokens)


@cache
def _graded_requests() -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[float, ...], ...]]:
    tokens = request_tokens(POOL_THREADS * POOL_REQUESTS_EACH, seed=8)
    return tuple(tokens), tuple(reference_output(t) for t in tokens)


# --------------------------------------------------------------------------- bounded calls


# --------------------------------------------------------------------------- exercise 1: the pool


@dataclass
class PoolRun:
    """What the grader saw of one pool (see :func:`run_pool`)."""

    workers: list[int] = field(default_factory=list)
    not_spawned: int = 0
    wrong: list[tuple[int, Any, tuple[float, ...]]] = field(default_factory=list)
    answered: int = 0
    worker_uss_mb: dict[int, float] = field(default_factory=dict)
    segment_mb: float = 0.0
    still_running: list[int] = field(default_factory=list)
    other_target: list[int] = field(default_factory=list)
    leftovers: Leftovers = field(default_factory=Leftovers)


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
    try:
        pool = bounded(exercise, f"SharedWeightsPool(weights, {workers}, serve)",
                        lambda: pool_class(list(embedding_weights()), workers, target), START_S)
        started = before.since()
        seen.workers = started.processes
        seen.not_spawned = _count_not_spawned(started.processes)
        seen.segment_mb = sum(started.segments.values()) / MB
        _load(exercise, pool, seen)
        for pid in seen.workers:
            with contextlib.suppress(Exception):
                seen.worker_uss_mb[pid] = uss_mb(pid)
        bounded(exercise, "close()", pool.close, CLOSE_S)
        seen.still_running = _wait_for_exit(seen.workers)
        seen.other_target = [pid for pid in seen.workers if pid not in seen.still_running
                             and not os.path.exists(os.path.join(marks, str(pid)))]
        seen.leftovers = before.since()
    finally:
        clean_up(before.since())
        shutil.rmtree(marks, ignore_errors=True)
    return seen


def _count_not_spawned(pids: Sequence[int]) -> int:
    """How many of ``pids`` run something other than multiprocessing's ``spawn_main``.

    ``Process.start()`` with spawn can return while the child is still inside ``execve``:
    its command line then reads empty (the new program's arguments are not set up yet), or
    this process's own if the exec has not begun. Such a child is looked at again, up to
    :data:`EXEC_POLLS` times, :data:`EXEC_POLL_S` apart (a forked worker keeps this
    process's command line, and costs that wait). A spawned worker was once counted as
    forked under the full suite's load (1 grading run in 20).
    """
    import psutil

    own = psutil.Process().cmdline()
    looks_forked, other = set(pids), set()
    for poll in range(EXEC_POLLS):
        for pid in sorted(looks_forked):
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


def _load(exercise: str, pool: Any, seen: PoolRun) -> None:
    tokens, expected = _graded_requests()
    outputs: list[Any] = [None] * len(tokens)
    not_plain: list[str] = []
    barrier = threading.Barrier(POOL_THREADS)

    def client(k: int) -> None:
        barrier.wait()
        for index in range(k, len(tokens), POOL_THREADS):
            output = pool.predict(tokens[index])
            try:  # plain numbers, copied as they come back: nothing of the pool's runs later
                outputs[index] = None if output is None else np.array(
                    plain_array(output, f"{exercise}: predict()"))
            except NotPlainData as error:
                not_plain.append(str(error))
                return

    def load() -> None:
        threads = [threading.Thread(target=client, args=(k,), daemon=True)
                   for k in range(POOL_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    bounded(exercise, f"predict() from {POOL_THREADS} threads at once", load, LOAD_S)
    if not_plain:
        raise AssertionError(f"{not_plain[0]} (expected the model's output, {OUTPUTS} numbers)")
    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        if got is None:
            continue
        seen.answered += 1
        if not _same(got, want):
            seen.wrong.append((index, got, want))


def _same(got: Any, want: tuple[float, ...]) -> bool:
    try:
        return np.allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-5, atol=1e-6)
    except (TypeError, ValueError):
        return False


def check_pool(pool_class: Callable[..., Any]) -> None:
    """Grade a ``SharedWeightsPool`` class (see :func:`run_pool`); AssertionError if it fails."""
    exercise = "SharedWeightsPool"
    weights_mb = sum(a.nbytes for a in embedding_weights()) / MB
    seen = run_pool(pool_class, exercise=exercise)
    total = POOL_THREADS * POOL_REQUESTS_EACH
    if len(seen.workers) < POOL_WORKERS:
        raise AssertionError(
            f"{exercise}: with workers={POOL_WORKERS} it started {len(seen.workers)} worker "
            f"process(es), expected {POOL_WORKERS}")
    if seen.not_spawned:
        raise AssertionError(
            f"{exercise}: {seen.not_spawned} of its worker processes were not started with "
            "spawn, expected multiprocessing.get_context('spawn'): a forked child of a "
            "process that runs TensorFlow can hang")
    if seen.other_target:
        raise AssertionError(
            f"{exercise}: {len(seen.other_target)} of its worker processes did not run the "
            "target it was given, expected every worker to run target(block_name, shapes, "
            "requests, answers)")
    if seen.wrong:
        index, got, want = seen.wrong[0]
        raise AssertionError(
            f"{exercise}: {len(seen.wrong)} of {total} predict() calls made from "
            f"{POOL_THREADS} threads at once returned another request's output (request "
            f"{index}: got {_short(got)}, expected {_short(want)}). Workers may answer in any "
            "order: match each answer to its request by its request id")
    if seen.answered != total:
        raise AssertionError(f"{exercise}: {total - seen.answered} of {total} predict() calls "
                             "returned None, expected the model's output")
    private = {pid: mb for pid, mb in seen.worker_uss_mb.items() if mb > weights_mb / 2}
    if private:
        mb = max(private.values())
        raise AssertionError(
            f"{exercise}: a worker held {mb:.0f} MB of private memory for {weights_mb:.0f} MB "
            f"of weights, expected under {weights_mb / 2:.0f} MB: it has its own copy of the "
            f"weights, so {POOL_WORKERS} workers hold {POOL_WORKERS} full copies. Pass the "
            "shared block's name, not the arrays")
    if seen.segment_mb > 1.5 * weights_mb:
        raise AssertionError(
            f"{exercise}: its shared-memory blocks held {seen.segment_mb:.0f} MB for "
            f"{weights_mb:.0f} MB of weights, expected one copy: make one block for all workers")
    if seen.still_running or seen.leftovers:
        left = seen.leftovers.describe() or f"{len(seen.still_running)} worker(s) still running"
        raise AssertionError(
            f"{exercise}: after close() returned there were {left}, expected none: stop and "
            "join every worker, then close and unlink the shared block")


def _short(values: Any) -> str:
    try:
        return "(" + ", ".join(f"{float(v):.3f}" for v in values) + ")"
    except (TypeError, ValueError):
        return repr(values)[:80]


# --------------------------------------------------------------------------- exercise 2: the ledger


@dataclass
class LedgerRun:
    """What the grader saw of one ``run_ledger`` call."""

    totals: Any = None
    expected: list[int] = field(default_factory=list)
    workers_seen: int = 0
    workers_ran: set[int] = field(default_factory=set)
    leftovers: Leftovers = field(default_factory=Leftovers)


def run_ledger_once(run_ledger: Callable[[int, int], Any], *, workers: int = LEDGER_WORKERS,
                    updates: int = LEDGER_UPDATES, exercise: str = "run_ledger") -> LedgerRun:
    """Call ``run_ledger(workers, updates)`` (bounded) and clean up whatever it left."""
    before = snapshot()
    seen = LedgerRun(expected=process_workers.expected_totals(workers, updates))
    watcher = _ChildWatcher(before.processes)
    receipts = scratch_folder("receipts")
    os.environ[process_workers.RECEIPTS_ENV] = receipts
    watcher.start()
    try:
        seen.totals = bounded(exercise, f"run_ledger({workers}, {updates})",
                               lambda: run_ledger(workers, updates), LEDGER_S)
    finally:
        watcher.stop()
        os.environ.pop(process_workers.RECEIPTS_ENV, None)
        seen.workers_seen = len(watcher.seen)
        seen.workers_ran = {index for index, pid in process_workers.read_receipts(receipts)
                            if pid in watcher.seen}
        shutil.rmtree(receipts, ignore_errors=True)
        seen.leftovers = before.since()
        clean_up(seen.leftovers)
    return seen


class _ChildWatcher:
    """Counts the child processes that run while a call is made (sampled every 10 ms)."""

    def __init__(self, ignore: set[int]) -> None:
        self.ignore = ignore
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            self.seen |= set(child_processes()) - self.ignore


def check_ledger(run_ledger: Callable[[int, int], Any]) -> None:
    """Grade ``run_ledger`` (see :func:`run_ledger_once`); AssertionError if it fails."""
    exercise = "run_ledger"
    seen = run_ledger_once(run_ledger, exercise=exercise)
    values = plain(seen.totals, f"{exercise}:")
    try:
        totals = [int(v) for v in (values.tolist() if isinstance(values, np.ndarray)
                                   else values)]
    except (TypeError, ValueError):
        raise AssertionError(f"{exercise}: returned {values!r}, expected a list of "
                             f"{process_workers.ACCOUNTS} account totals") from None
    missing = sorted(set(range(LEDGER_WORKERS)) - seen.workers_ran)
    if missing:
        raise AssertionError(
            f"{exercise}: ledger worker(s) {missing} never ran process_workers.tally in a "
            f"process of their own; expected each of the {LEDGER_WORKERS} workers to run it on "
            "a process (the totals must come from the workers, not be computed)")
    if totals != seen.expected:
        counted, want = sum(totals), sum(seen.expected)
        raise AssertionError(
            f"{exercise}: the ledger counted {counted} of {want} (accounts {totals}, expected "
            f"{seen.expected}): updates made by different processes at the same time were "
            "lost. Every worker must hold one and the same multiprocessing lock around its "
            "read-modify-write (or send its updates to a single writer)")
    if seen.leftovers:
        raise AssertionError(f"{exercise}: when it returned there were "
                             f"{seen.leftovers.describe()}, expected none: join every worker, "
                             "then close and unlink the ledger")


def tally_race(lock: str, *, trials: int, workers: int = LEDGER_WORKERS,
               updates: int = LEDGER_UPDATES) -> list[int]:
    """Lost updates per trial of the ledger workers on real processes, without a proper lock.

    Args:
        lock: ``"none"`` (no lock), ``"per worker"`` (each worker gets its own new Lock),
            ``"array"`` (a ``multiprocessing.Array``, whose own lock guards each read and each
            write separately, and no lock around the update).
        trials: Runs.
    """
    return [_tally_once(lock, workers, updates) for _ in range(trials)]


def _tally_once(lock: str, workers: int, updates: int) -> int:
    from multiprocessing.shared_memory import SharedMemory

    ctx = spawn_context()
    block = array = None
    if lock == "array":
        array = ctx.Array("q", process_workers.LEDGER_SLOTS)
        ledger: Any = array
    else:
        block = SharedMemory(create=True, size=8 * process_workers.LEDGER_SLOTS)
        block.buf[:] = bytes(block.size)
        ledger = block.name
    locks = [ctx.Lock() if lock == "per worker" else None for _ in range(workers)]
    procs = [ctx.Process(target=process_workers.tally,
                         args=(ledger, locks[k], k, workers, updates)) for k in range(workers)]
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(LEDGER_S)
        if array is not None:
            counted = sum(array[:process_workers.ACCOUNTS])
        else:
            view = block.buf.cast("q")
            counted = sum(view[:process_workers.ACCOUNTS])
            view.release()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        if block is not None:
            block.close()
            block.unlink()
    return sum(process_workers.expected_totals(workers, updates)) - counted


# --------------------------------------------------------------------------- exercise 3: choose


@dataclass(frozen=True)
class DesignRun:
    """One design measured in paired rounds.

    Attributes:
        per_second: Requests per second in each round (round ``i`` of two designs measured a
            moment apart).
        memory_mb: Memory of the whole design.
    """

    per_second: tuple[float, ...]
    memory_mb: float


def reference_choice(threads: DesignRun, processes: DesignRun, memory_budget_mb: float) -> str:
    """The lesson's rule (what ``choose`` must return)."""
    if processes.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes.per_second, threads.per_second, strict=True)]
    return "processes" if statistics.median(ratios) >= MARGIN else "threads"


def choice_cases(seed: int = 8) -> list[tuple[str, DesignRun, DesignRun, float]]:
    """The grader's measurements: (what they test, threads, processes, memory budget)."""
    cases = [
        ("processes 1.8x faster and within budget",
         DesignRun((100.0, 104.0, 98.0, 101.0, 99.0), 900.0),
         DesignRun((181.0, 186.0, 178.0, 183.0, 180.0), 2100.0), 4000.0),
        ("processes 1.8x faster but over the memory budget",
         DesignRun((100.0, 104.0, 98.0, 101.0, 99.0), 900.0),
         DesignRun((181.0, 186.0, 178.0, 183.0, 180.0), 2100.0), 2000.0),
        ("processes only 10 % faster",
         DesignRun((200.0, 210.0, 190.0, 205.0, 195.0), 700.0),
         DesignRun((221.0, 230.0, 208.0, 226.0, 214.0), 1500.0), 4000.0),
        ("one round where a burst of other work hit threads",
         DesignRun((100.0, 101.0, 20.0, 99.0, 100.0), 700.0),
         DesignRun((104.0, 103.0, 101.0, 102.0, 105.0), 1500.0), 4000.0),
        ("one round where a burst of other work hit processes",
         DesignRun((100.0, 101.0, 99.0, 100.0, 102.0), 700.0),
         DesignRun((160.0, 158.0, 20.0, 161.0, 157.0), 1500.0), 4000.0),
        ("the machine's speed changed from round to round (pair the rounds)",
         DesignRun((100.0, 90.0, 80.0, 40.0, 30.0), 700.0),
         DesignRun((150.0, 140.0, 60.0, 60.0, 40.0), 1500.0), 4000.0),
        ("threads faster", DesignRun((150.0, 152.0, 149.0), 800.0),
         DesignRun((90.0, 91.0, 92.0), 1200.0), 4000.0),
        ("processes exactly at the memory budget and 1.5x faster",
         DesignRun((100.0, 100.0, 100.0), 800.0), DesignRun((150.0, 150.0, 150.0), 3000.0),
         3000.0),
    ]
    rng = random.Random(seed)
    for k in range(24):
        rounds = rng.choice((3, 5, 7))
        base = [rng.uniform(50, 400) for _ in range(rounds)]
        speedup = rng.choice((0.6, 0.9, 1.05, 1.1, 1.35, 1.6, 2.2))
        noise = [rng.uniform(0.97, 1.03) for _ in range(rounds)]
        threads = DesignRun(tuple(round(b, 2) for b in base), round(rng.uniform(300, 900), 1))
        rates = tuple(round(b * speedup * n, 2) for b, n in zip(base, noise, strict=True))
        processes = DesignRun(rates, round(rng.uniform(600, 4000), 1))
        cases.append((f"made-up measurement {k}", threads, processes,
                      float(rng.choice((1000, 2000, 3000, 5000)))))
    return cases


def check_choose(choose: Callable[[DesignRun, DesignRun, float], Any]) -> None:
    """Grade ``choose`` on :func:`choice_cases`; AssertionError naming the first wrong case."""
    exercise = "choose"
    for what, threads, processes, budget in choice_cases():
        want = reference_choice(threads, processes, budget)
        try:
            got = choose(threads, processes, budget)
        except Exception as error:  # noqa: BLE001 - reported to the student
            raise AssertionError(f"{exercise}: raised {type(error).__name__}: {error} on "
                                 f"measurements where {what}") from None
        got = plain(got, f"{exercise}:")
        if got != want:
            ratios = [round(p / t, 2) for p, t in zip(processes.per_second,
                                                       threads.per_second, strict=True)]
            raise AssertionError(
                f"{exercise}: returned {got!r} where {what}, expected {want!r}. Threads "
                f"{list(threads.per_second)} req/s, {threads.memory_mb:g} MB; processes "
                f"{list(processes.per_second)} req/s, {processes.memory_mb:g} MB; budget "
                f"{budget:g} MB; per-round ratios {ratios}")


# --------------------------------------------------------------------------- see it: the designs


@dataclass
class Server:
    """One worker process of the "See it" designs and the end of its pipe."""

    process: Any
    conn: Any
    pid: int


def start_servers(count: int, kind: str, *, segment: Any = None, timeout_s: float = 180.0
                  ) -> list[Server]:
    """Start ``count`` worker processes with ``spawn`` and wait until each has its model.

    Args:
        count: Processes.
        kind: ``"tf"`` (TensorFlow, each its own copy of the model) or ``"numpy"`` (attached
            read-only to ``segment``, a SharedMemory holding :func:`pack`'s layout).
        segment: The shared block, for ``"numpy"``.
        timeout_s: How long to wait for all of them to be ready.
    """
    ctx = spawn_context()
    servers = []
    for _ in range(count):
        parent, child = ctx.Pipe()
        if kind == "tf":
            process = ctx.Process(target=process_workers.tf_server, args=(child,), daemon=True)
        else:
            shapes = process_workers.mlp_shapes()
            process = ctx.Process(target=process_workers.numpy_server,
                                  args=(child, segment.name, shapes), daemon=True)
        process.start()
        servers.append(Server(process, parent, 0))
    deadline = time.monotonic() + timeout_s
    for server in servers:
        if not server.conn.poll(max(0.0, deadline - time.monotonic())):
            stop_servers(servers)
            raise RuntimeError(f"a {kind} worker was not ready within {timeout_s:g} s")
        _, server.pid = server.conn.recv()
    return servers


def stop_servers(servers: Sequence[Server]) -> None:
    """Ask every server to stop, join it (bounded), kill it if it does not."""
    for server in servers:
        with contextlib.suppress(OSError, ValueError):
            server.conn.send(("stop",))
    for server in servers:
        server.process.join(10)
        if server.process.is_alive():
            server.process.kill()
            server.process.join(5)
        server.conn.close()


def pack(weights: Sequence[np.ndarray]) -> Any:
    """A new SharedMemory block holding ``weights`` back to back as float32 (C order)."""
    from multiprocessing.shared_memory import SharedMemory

    total = sum(int(w.nbytes) for w in weights)
    block = SharedMemory(create=True, size=total)
    offset = 0
    for w in weights:
        flat = np.ascontiguousarray(w, dtype=np.float32).reshape(-1)
        block.buf[offset:offset + flat.nbytes] = flat.view(np.uint8)
        offset += flat.nbytes
    return block


def _ask(servers: Sequence[Server], commands: Sequence[tuple]) -> list[tuple[float, float]]:
    for server, command in zip(servers, commands, strict=True):
        server.conn.send(command)
    seconds = []
    for server in servers:
        status, value = server.conn.recv()
        if status != "ok":
            raise RuntimeError(f"worker {server.pid}: {value}")
        seconds.append(value)
    return seconds


@dataclass(frozen=True)
class Served:
    """One measured run: requests per second, and CPU seconds used per wall second (cores)."""

    per_second: float
    cores: float


def serve(servers: Sequence[Server], workload: str, request_ids: Sequence[int], *,
          threads: int = 1) -> Served:
    """Serve ``request_ids`` shared among ``servers`` (each with ``threads`` threads)."""
    share = [list(request_ids[k::len(servers)]) for k in range(len(servers))]
    start = time.perf_counter()
    replies = _ask(servers, [("run", workload, ids, threads) for ids in share])
    wall = time.perf_counter() - start
    return Served(len(request_ids) / wall, sum(cpu for _, cpu in replies) / wall)


def serve_rate(servers: Sequence[Server], workload: str, request_ids: Sequence[int], *,
               threads: int = 1) -> float:
    """Requests per second of ``servers`` sharing ``request_ids`` (each with ``threads``)."""
    return serve(servers, workload, request_ids, threads=threads).per_second


def rebuild_seconds(server: Server, workload: str, request_ids: Sequence[int]) -> float:
    """Seconds ``server`` takes when it builds the model anew for every request."""
    return _ask([server], [("rebuild", workload, list(request_ids))])[0][0]


@dataclass
class Memory:
    """Memory of one design: the sum of its processes' USS, plus shared blocks counted once.

    ``rss_mb`` is what adding up RSS would say (it counts shared pages in every process).
    """

    label: str
    processes: int
    uss_mb: float
    shared_mb: float
    rss_mb: float

    @property
    def total_mb(self) -> float:
        """USS of every process plus the shared blocks once."""
        return self.uss_mb + self.shared_mb


def memory_of(label: str, pids: Sequence[int], shared_bytes: int = 0) -> Memory:
    """:class:`Memory` of the processes ``pids`` and ``shared_bytes`` of shared blocks."""
    return Memory(label, len(pids), sum(uss_mb(p) for p in pids), shared_bytes / MB,
                  sum(rss_mb(p) for p in pids))


def paired_median(top: Sequence[float], bottom: Sequence[float]) -> float:
    """Median over rounds of ``top[i] / bottom[i]``."""
    return statistics.median(t / b for t, b in zip(top, bottom, strict=True))


def plot_memory(rows: Sequence[Memory]) -> Any:
    """Bars of each design's memory (USS + shared once) next to its summed RSS."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 0.6 + 0.55 * len(rows)), layout="constrained")
    axes = figure.add_subplot()
    y = np.arange(len(rows))
    axes.barh(y - 0.2, [r.total_mb for r in rows], 0.4, color="#4C72B0",
              label="sum of USS + shared blocks once")
    axes.barh(y + 0.2, [r.rss_mb for r in rows], 0.4, color="#BBBBBB", label="sum of RSS")
    for k, row in enumerate(rows):
        axes.text(row.total_mb, k - 0.2, f" {row.total_mb:,.0f} MB", va="center", fontsize=8)
    axes.set_yticks(y, [r.label for r in rows])
    axes.invert_yaxis()
    axes.set_xlabel("MB")
    axes.legend(loc="lower right", fontsize=8)
    return figure


# --------------------------------------------------------------------------- see it break: fork


_FORK_SCRIPT = """
import json, multiprocessing as mp, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
from autograder.checks import process_workers
forks, fork_wait, spawn_wait, size = json.loads(sys.argv[1])
x = tf.random.normal((size, size), seed=0)
float(tf.reduce_sum(tf.matmul(x, x)))
children = [("fork", mp.get_context("fork").Process(target=process_workers.tf_matmul,
                                                   args=(size,))) for _ in range(forks)]
children.append(("spawn", mp.get_context("spawn").Process(target=process_workers.tf_matmul,
                                                          args=(size,))))
started = time.monotonic()
for _, child in children:
    child.start()
report = []
for method, child in children:
    limit = fork_wait if method == "fork" else spawn_wait
    child.join(max(0.0, started + limit - time.monotonic()))
    if child.exitcode is None:
        child.kill()
        child.join(5)
        outcome = "hung"
    elif child.exitcode == 0:
        outcome = "finished"
    elif child.exitcode < 0:
        outcome = f"crashed (signal {-child.exitcode})"
    else:
        outcome = f"failed (exit {child.exitcode})"
    report.append([method, outcome, round(time.monotonic() - started, 1)])
print("REPORT " + json.dumps(report), flush=True)
os._exit(0)
"""


def fork_after_tf(*, forks: int = 3, fork_wait_s: float = 5.0, spawn_wait_s: float = 90.0,
                  size: int = 512) -> list[tuple[str, str, float]]:
    """Start TensorFlow in a child Python, then fork and spawn from it; each child's outcome.

    The child Python imports TensorFlow and runs a ``size`` x ``size`` matmul (its thread pool
    starts). Then it forks ``forks`` processes and spawns one, all running the same matmul,
    waits up to ``fork_wait_s`` for the forked ones and ``spawn_wait_s`` for the spawned one
    (it imports TensorFlow itself), and kills those still running.

    Returns:
        ``(start method, outcome, seconds)`` per child: outcome ``"finished"``, ``"hung"``,
        ``"crashed (signal N)"`` or ``"failed (exit N)"``.
    """
    package = str(Path(process_workers.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [package, *filter(None, [os.environ.get("PYTHONPATH")])])}
    args = json.dumps([forks, fork_wait_s, spawn_wait_s, size])
    done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, args], capture_output=True,
                          text=True, env=env, timeout=spawn_wait_s + 120, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("REPORT "):
            return [tuple(item) for item in json.loads(line[len("REPORT "):])]
    raise RuntimeError(f"the fork experiment did not report (exit {done.returncode}): "
                       f"{done.stderr[-2000:]}")
