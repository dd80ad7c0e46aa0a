"""Answers a student might write for lesson 08 (processes): wrong ones and correct ones.

The pool's mistakes: answers taken in arrival order (no request ids), the arrays handed to
every worker (a copy each), one shared block per worker, ``close()`` that never unlinks the
block, and workers started with ``fork``. The ledger's: no lock, a lock per worker, and a
``multiprocessing.Array`` trusted to lock the update itself. ``choose``'s: a mean of rates
(one busy round decides), medians compared unpaired, the memory budget ignored, no margin.
The correct ones are written differently from the lesson's solution.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing
import os
import queue
import statistics
import threading
import time
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from autograder.checks import process_workers
from tests.checks.liars import lying

# --------------------------------------------------------------------------- SharedWeightsPool


def _pack(weights: Any) -> tuple[shared_memory.SharedMemory, list[tuple[int, ...]]]:
    block = shared_memory.SharedMemory(create=True, size=sum(w.nbytes for w in weights))
    offset = 0
    for w in weights:
        data = np.ascontiguousarray(w, dtype=np.float32).tobytes()
        block.buf[offset:offset + len(data)] = data
        offset += len(data)
    return block, [tuple(w.shape) for w in weights]


class _Base:
    """Starts the workers on one block; subclasses differ in how they route and close."""

    method = "spawn"

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        ctx = multiprocessing.get_context(self.method)
        self.block, shapes = _pack(weights)
        self.requests, self.answers = self._queues(ctx)
        self.workers = [ctx.Process(target=target, args=(self._source(weights), shapes,
                                                         self.requests, self.answers))
                        for _ in range(workers)]
        for process in self.workers:
            process.start()

    def _source(self, weights: Any) -> Any:
        return self.block.name

    def _queues(self, ctx: Any) -> tuple[Any, Any]:
        return ctx.Queue(), ctx.Queue()

    def predict(self, tokens: Any) -> Any:
        self.requests.put((0, tokens))
        return self.answers.get()[1]

    def close(self) -> None:
        for _ in self.workers:
            self.requests.put(None)
        for process in self.workers:
            process.join()
        self.block.close()
        self.block.unlink()


class ArrivalOrderPool(_Base):
    """Put the request, take the next answer: fine on one thread, swapped under load."""


class _Routed(_Base):
    """Answers routed by request id through futures (correct routing)."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        super().__init__(weights, workers, target)
        self.lock = threading.Lock()
        self.futures: dict[int, concurrent.futures.Future] = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for request_id, output in iter(self.answers.get, None):
            with self.lock:
                future = self.futures.pop(request_id)
            future.set_result(output)

    def predict(self, tokens: Any) -> Any:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self.lock:
            request_id, self.next_id = self.next_id, self.next_id + 1
            self.futures[request_id] = future
        self.requests.put((request_id, tokens))
        return self._answer(future)

    def _answer(self, future: concurrent.futures.Future) -> Any:
        return future.result()

    def close(self) -> None:
        for _ in self.workers:
            self.requests.put(None)
        for process in self.workers:
            self._wait_for_worker(process)
        self.answers.put(None)
        self._wait_for_reader()
        self.block.close()
        self.block.unlink()

    def _wait_for_worker(self, process: Any) -> None:
        process.join()

    def _wait_for_reader(self) -> None:
        self.reader.join()


class CopyPerWorkerPool(_Routed):
    """Hands every worker the arrays themselves: right answers, one copy per worker."""

    def _source(self, weights: Any) -> Any:
        return [np.asarray(w) for w in weights]


class BlockPerWorkerPool(_Routed):
    """One new shared block per worker: shared with nobody, a copy each in /dev/shm."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        self.extra = [_pack(weights)[0] for _ in range(workers)]
        self._next_extra = iter(self.extra)
        super().__init__(weights, workers, target)

    def _source(self, weights: Any) -> Any:
        return next(self._next_extra).name

    def close(self) -> None:
        super().close()
        for block in self.extra:
            block.close()
            block.unlink()


class CloseWithoutUnlinkPool(_Routed):
    """``close()`` closes the block but never unlinks it: the segment stays in /dev/shm."""

    def close(self) -> None:
        for _ in self.workers:
            self.requests.put(None)
        for process in self.workers:
            process.join()
        self.answers.put(None)
        self.reader.join()
        self.block.close()


class NoJoinPool(_Routed):
    """``close()`` unlinks the block and returns, never telling the workers to stop."""

    def close(self) -> None:
        self.block.close()
        self.block.unlink()


class ForkedPool(_Routed):
    """Workers started with ``fork``: a copy of a parent that may run TensorFlow's threads."""

    method = "fork"


class _ReadLater:
    """An output computed only when someone reads it (``np.asarray`` calls ``__array__``)."""

    def __init__(self, compute: Any, tokens: Any) -> None:
        self._compute = compute
        self._tokens = tokens

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._compute(self._tokens), dtype=dtype)


class ReadLaterPool(ArrivalOrderPool):
    """Arrival-order answers fetched only when read: read one at a time, none is swapped."""

    def predict(self, tokens: Any) -> Any:
        return _ReadLater(super().predict, tokens)


class _Bookkept(_Base):
    """A collector thread hands each answer to the caller registered under its request id;
    subclasses differ in how they hand out ids and register callers."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        super().__init__(weights, workers, target)
        self.lock = threading.Lock()
        self.waiting: dict[int, list[Any]] = {}
        self.next_id = 0
        self.collector = threading.Thread(target=self._collect, daemon=True)
        self.collector.start()

    def _collect(self) -> None:
        for request_id, output in iter(self.answers.get, None):
            with self.lock:
                done, box = self.waiting.pop(request_id)
            box.append(output)
            done.set()

    def _wait(self, done: threading.Event, box: list[Any]) -> Any:
        done.wait()
        return box[0]

    def close(self) -> None:
        for _ in self.workers:
            self.requests.put(None)
        for process in self.workers:
            process.join()
        self.answers.put(None)
        self.collector.join()
        self.block.close()
        self.block.unlink()


class UnlockedIdPool(_Bookkept):
    """Reads the next request id, then writes it back one higher, without the lock: two
    callers can read the same id, and one of them gets the other's answer."""

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        request_id = self.next_id
        self.next_id = request_id + 1
        with self.lock:
            self.waiting[request_id] = (done, box)
        self.requests.put((request_id, tokens))
        return self._wait(done, box)


class _OnManagerQueues:
    """Requests and answers on a Manager's queues; close() shuts the manager down."""

    def _queues(self, ctx: Any) -> tuple[Any, Any]:
        self.manager = ctx.Manager()
        return self.manager.Queue(), self.manager.Queue()

    def close(self) -> None:
        super().close()
        self.manager.shutdown()


class ManagerUnlockedIdPool(_OnManagerQueues, UnlockedIdPool):
    """:class:`UnlockedIdPool` on a Manager's queues (red team round 8, 5/5 before: a pool with
    a Manager was graded on real processes only)."""


class ValueIdPool(_Bookkept):
    """Ids from a ``multiprocessing.Value``, counted under its lock but read after it (red team
    round 8, 5/5 before): two callers can read the same id."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        self.counter = multiprocessing.get_context("spawn").Value("i", 0)
        super().__init__(weights, workers, target)

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        with self.counter.get_lock():
            self.counter.value += 1
        request_id = self.counter.value
        with self.lock:
            self.waiting[request_id] = (done, box)
        self.requests.put((request_id, tokens))
        return self._wait(done, box)


class ReapingUnlockedIdPool(UnlockedIdPool):
    """:class:`UnlockedIdPool` whose close() also reaps its workers with
    ``multiprocessing.active_children()`` (red team round 8, 5/5 before: the explored stand-ins
    had no ``active_children``, so the pool was graded on real processes only)."""

    def close(self) -> None:
        super().close()
        multiprocessing.active_children()


class FirstFreeIdPool(_Bookkept):
    """Check-then-act on the ids: looks for the first id nobody waits on, then takes it (each
    step under the lock, the pair not): two callers can pick the same free id."""

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        with self.lock:
            request_id = 0
            while request_id in self.waiting:
                request_id += 1
        with self.lock:
            self.waiting[request_id] = (done, box)
        self.requests.put((request_id, tokens))
        return self._wait(done, box)


class RegisterAfterPutPool(_Bookkept):
    """Sends the request, then registers its caller: an answer that comes back first finds
    nobody waiting for it (the collector fails on it, and the caller waits forever)."""

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        with self.lock:
            request_id = self.next_id
            self.next_id += 1
        self.requests.put((request_id, tokens))
        with self.lock:
            self.waiting[request_id] = (done, box)
        return self._wait(done, box)


class TokensIdPool(_Bookkept):
    """Keys each caller by its tokens (``request_id = tuple(tokens)``): two callers asking
    about the same tokens at once share one key, so one of them is answered twice and the
    other never."""

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        request_id = tuple(int(t) for t in np.asarray(tokens).reshape(-1))
        with self.lock:
            self.waiting[request_id] = (done, box)
        self.requests.put((request_id, tokens))
        return self._wait(done, box)


class ParkedAnswerPool(_Bookkept):
    """An answer for a caller not registered yet is parked; a caller first looks for a parked
    answer, then registers. Check-then-act across two threads: the caller finds nothing
    parked, the collector finds nobody registered and parks it, and the caller waits forever."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        self.parked: dict[int, Any] = {}
        super().__init__(weights, workers, target)

    def _collect(self) -> None:
        for request_id, output in iter(self.answers.get, None):
            with self.lock:
                waiter = self.waiting.pop(request_id, None)
            if waiter is None:
                with self.lock:
                    self.parked[request_id] = output
                continue
            waiter[1].append(output)
            waiter[0].set()

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        with self.lock:
            request_id = self.next_id
            self.next_id += 1
        self.requests.put((request_id, tokens))
        with self.lock:
            if request_id in self.parked:
                return self.parked.pop(request_id)
        with self.lock:
            self.waiting[request_id] = (done, box)
        return self._wait(done, box)


class CollectorNotJoinedPool(_Routed):
    """``close()`` puts the end marker for the reader thread but does not join it: the reader
    may still be delivering when close() returns (the mutation benchmark's ``drop_join``)."""

    def _wait_for_reader(self) -> None:
        pass


class CollectorSleepPool(_Routed):
    """``close()`` sleeps 10 ms where it should join the reader thread (``join_to_sleep``)."""

    def _wait_for_reader(self) -> None:
        time.sleep(0.01)


class WorkerSleepPool(_Routed):
    """``close()`` sleeps 10 ms where it should join each worker (``join_to_sleep``): a
    worker that took its end marker usually exits within that, but nothing waits for it."""

    def _wait_for_worker(self, process: Any) -> None:
        time.sleep(0.01)


class IdleReaderPool(_Routed):
    """The reader thread reads answers with ``get(timeout=2)`` and returns once one times out
    ("the workers have gone quiet"): every later ``predict()`` waits forever for an answer
    nobody delivers (red team round 4, p_idle_reader)."""

    def _read(self) -> None:
        while True:
            try:
                item = self.answers.get(timeout=2)
            except queue.Empty:
                return
            if item is None:
                return
            request_id, output = item
            with self.lock:
                future = self.futures.pop(request_id)
            future.set_result(output)


class ManagerIdleReaderPool(_OnManagerQueues, IdleReaderPool):
    """:class:`IdleReaderPool` on a Manager's queues (red team round 8, 5/5 before: its reader's
    ``get(timeout=2)`` waits in the manager's connection, where the idle check saw no limit)."""


class PredictTimeoutPool(_Routed):
    """``predict()`` waits for its answer with ``result(timeout=10)``: on a machine slow enough
    it raises instead of answering (red team round 4, p6_predict_timeout; the lesson says no
    timeout, and the explored schedules let a timed wait run out)."""

    def _answer(self, future: concurrent.futures.Future) -> Any:
        return future.result(timeout=10)


#: Left idle past its reader's 2 s limit on every run, it hangs the same way; the timed wait
#: runs out in the first explored schedule every run: three runs each.
IdleReaderPool.decided_by_construction = True
PredictTimeoutPool.decided_by_construction = True

class LocalComputePool(_Base):
    """Starts the workers on the shared weights, but never sends them a request: predict()
    computes each answer in the calling thread with the workers' own function."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        super().__init__(weights, workers, target)
        self.views = [np.asarray(w, np.float32).ravel() for w in weights]
        self.shapes = [tuple(w.shape) for w in weights]

    def predict(self, tokens: Any) -> Any:
        return process_workers.embedding_predict(self.views, self.shapes, tokens)


LocalComputePool.decided_by_construction = True
WRONG_POOLS = [ArrivalOrderPool, *lying(ReadLaterPool), IdleReaderPool, PredictTimeoutPool,
               LocalComputePool, ManagerIdleReaderPool]
#: Pools whose bookkeeping (request ids, registered callers) is a check-then-act across the
#: callers' threads and the collector: right on real processes in nearly every run, caught
#: every run by the explored schedules with the processes stubbed.
RACY_BOOKKEEPING_POOLS = [UnlockedIdPool, FirstFreeIdPool, RegisterAfterPutPool,
                          ParkedAnswerPool, TokensIdPool, ReapingUnlockedIdPool,
                          ManagerUnlockedIdPool, ValueIdPool]
#: Pools whose close() returns before the collector thread it started has ended: on real
#: processes the collector usually ends within microseconds of close(); caught every run on
#: stub workers, the collector held until close() joins it.
UNJOINED_POOLS = [CollectorNotJoinedPool, CollectorSleepPool]
#: A pool whose close() returns before its worker processes have exited: caught every run on
#: stub workers, the worker held until close() joins it.
UNJOINED_WORKER_POOLS = [WorkerSleepPool]
#: Wrong pools whose failure is counted, not raced (a start method, bytes of private memory or
#: of /dev/shm segments, processes alive after ``close()``): no interleaving can change the
#: count, though they run twenty times like every other wrong answer.
COUNTED_WRONG_POOLS = [CopyPerWorkerPool, BlockPerWorkerPool, CloseWithoutUnlinkPool, NoJoinPool,
                       ForkedPool]


class QueuePerWorkerPool:
    """A request queue and an answer queue per worker; a thread borrows a whole worker."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.block, shapes = _pack(weights)
        self.idle: queue.Queue = queue.Queue()
        self.processes = []
        for _ in range(workers):
            pair = (ctx.Queue(), ctx.Queue())
            process = ctx.Process(target=target, args=(self.block.name, shapes, *pair))
            process.start()
            self.processes.append((process, pair))
            self.idle.put(pair)

    def predict(self, tokens: Any) -> Any:
        requests, answers = self.idle.get()
        try:
            requests.put((0, tokens))
            return answers.get()[1]
        finally:
            self.idle.put((requests, answers))

    def close(self) -> None:
        for _, (requests, _answers) in self.processes:
            requests.put(None)
        for process, _ in self.processes:
            process.join(timeout=10)
        self.block.close()
        self.block.unlink()


class ConditionPool:
    """One collector thread fills a dict of answers; callers wait on a Condition for theirs."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        ctx = multiprocessing.get_context("spawn")
        sizes = [w.nbytes for w in weights]
        self.block = shared_memory.SharedMemory(create=True, size=sum(sizes))
        start = 0
        for w, size in zip(weights, sizes, strict=True):
            np.ndarray(w.shape, np.float32, self.block.buf, start)[...] = w
            start += size
        self.requests, self.answers = ctx.Queue(), ctx.Queue()
        self.procs = [ctx.Process(target=target, args=(self.block.name,
                                                       [w.shape for w in weights],
                                                       self.requests, self.answers), daemon=True)
                      for _ in range(workers)]
        for proc in self.procs:
            proc.start()
        self.ready: dict[int, Any] = {}
        self.changed = threading.Condition()
        self.counter = 0
        self.collector = threading.Thread(target=self._collect, daemon=True)
        self.collector.start()

    def _collect(self) -> None:
        while (item := self.answers.get()) is not None:
            with self.changed:
                self.ready[item[0]] = item[1]
                self.changed.notify_all()

    def predict(self, tokens: Any) -> Any:
        with self.changed:
            self.counter += 1
            mine = self.counter
        self.requests.put((mine, tokens))
        with self.changed:
            self.changed.wait_for(lambda: mine in self.ready)
            return self.ready.pop(mine)

    def close(self) -> None:
        for _ in self.procs:
            self.requests.put(None)
        for proc in self.procs:
            proc.join()
        self.answers.put(None)
        self.collector.join()
        self.block.close()
        self.block.unlink()


class PollingPool(_Base):
    """A collector that polls the answers queue with a timeout and stops on a flag; each
    caller waits on its own Event, registered with its id under a lock before it sends."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        super().__init__(weights, workers, target)
        self.lock = threading.Lock()
        self.pending: dict[int, tuple[threading.Event, list[Any]]] = {}
        self.ids = itertools.count()
        self.stopping = threading.Event()
        self.collector = threading.Thread(target=self._collect, daemon=True)
        self.collector.start()

    def _collect(self) -> None:
        while not self.stopping.is_set():
            try:
                request_id, output = self.answers.get(timeout=0.05)
            except queue.Empty:
                continue
            with self.lock:
                done, box = self.pending.pop(request_id)
            box.append(output)
            done.set()

    def predict(self, tokens: Any) -> Any:
        done, box = threading.Event(), []
        with self.lock:
            request_id = next(self.ids)
            self.pending[request_id] = (done, box)
        self.requests.put((request_id, tokens))
        done.wait()
        return box[0]

    def close(self) -> None:
        for _ in self.workers:
            self.requests.put(None)
        for process in self.workers:
            process.join()
        self.stopping.set()
        self.collector.join()
        self.block.close()
        self.block.unlink()


class ManagerQueuePool(_Routed):
    """Requests and answers on a Manager's queues (the workers get proxies): the manager is one
    more process, started with spawn, and shut down by close()."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.manager = ctx.Manager()
        self.block, shapes = _pack(weights)
        self.requests, self.answers = self.manager.Queue(), self.manager.Queue()
        self.workers = [ctx.Process(target=target, args=(self.block.name, shapes,
                                                         self.requests, self.answers))
                        for _ in range(workers)]
        for process in self.workers:
            process.start()
        self.lock = threading.Lock()
        self.futures = {}
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def close(self) -> None:
        super().close()
        self.manager.shutdown()


class WithPipePool(ManagerQueuePool):
    """:class:`ManagerQueuePool` that also opens a ``Pipe`` (closed by close()): the stubs model
    no Pipe, so it is graded on real processes only."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = process_workers.serve
                 ) -> None:
        self.pipe = multiprocessing.get_context("spawn").Pipe()
        super().__init__(weights, workers, target)

    def close(self) -> None:
        super().close()
        for end in self.pipe:
            end.close()


CORRECT_POOLS = [QueuePerWorkerPool, ConditionPool, PollingPool, ManagerQueuePool]


# --------------------------------------------------------------------------- run_ledger


def _join_each(procs: list[Any]) -> None:
    for proc in procs:
        proc.join()


def _ledger_run(workers: int, updates: int, lock_for: Any, *, array: bool = False,
                method: str = "spawn", wait: Any = _join_each) -> list[int]:
    ctx = multiprocessing.get_context(method)
    block = None
    if array:
        ledger: Any = ctx.Array("q", process_workers.LEDGER_SLOTS)
        source: Any = ledger
    else:
        block = shared_memory.SharedMemory(create=True, size=8 * process_workers.LEDGER_SLOTS)
        source = block.name
    locks = [lock_for(ctx, source) for _ in range(workers)]
    procs = [ctx.Process(target=process_workers.tally, args=(source, locks[k], k, workers,
                                                             updates)) for k in range(workers)]
    for proc in procs:
        proc.start()
    wait(procs)
    if block is None:
        return list(ledger[:process_workers.ACCOUNTS])
    view = block.buf.cast("q")
    totals = list(view[:process_workers.ACCOUNTS])
    view.release()
    block.close()
    block.unlink()
    return totals


def ledger_without_lock(workers: int, updates: int) -> list[int]:
    """Shared memory and no lock: read-modify-writes from several processes interleave."""
    return _ledger_run(workers, updates, lambda ctx, source: None)


def ledger_lock_per_worker(workers: int, updates: int) -> list[int]:
    """A new Lock for each worker: every worker holds its own lock and nobody waits."""
    return _ledger_run(workers, updates, lambda ctx, source: ctx.Lock())


def ledger_on_synchronized_array(workers: int, updates: int) -> list[int]:
    """``multiprocessing.Array`` "has a lock": each read and write is locked, not the update."""
    return _ledger_run(workers, updates, lambda ctx, source: None, array=True)


class _LossFreeWhenIterated(list):
    """The ledger's real totals, but iterating yields the totals of a run that lost nothing."""

    def __iter__(self) -> Any:
        return iter(process_workers.expected_totals(self.workers, self.updates))


def ledger_lies_when_iterated(workers: int, updates: int) -> list[int]:
    """No lock, and a list of the totals that iterates as if no update had been lost."""
    totals = _LossFreeWhenIterated(ledger_without_lock(workers, updates))
    totals.workers, totals.updates = workers, updates
    return totals


def ledger_returning_the_expected_totals(workers: int, updates: int) -> list[int]:
    """Starts no worker: returns the totals the lesson prints as "expected"."""
    return process_workers.expected_totals(workers, updates)


def _queue_workers(ctx: Any, updates_queue: Any, workers: int, updates: int) -> list[Any]:
    """The ledger workers of a single-writer design, started: each sends its updates on
    ``updates_queue``."""
    procs = [ctx.Process(target=process_workers.tally,
                         args=(updates_queue, None, k, workers, updates))
             for k in range(workers)]
    for proc in procs:
        proc.start()
    return procs


def ledger_without_lock_returning_the_expected_totals(workers: int, updates: int) -> list[int]:
    """No lock, every worker runs to the end, and it returns what ``expected_totals`` says the
    accounts hold instead of what its racy ledger holds."""
    ledger_without_lock(workers, updates)
    return process_workers.expected_totals(workers, updates)


def ledger_unread_queue_returning_the_expected_totals(workers: int, updates: int) -> list[int]:
    """Workers send their updates to a manager's queue (its pipe never fills) that nobody
    reads, and it returns what ``expected_totals`` says."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        for proc in _queue_workers(ctx, manager.Queue(), workers, updates):
            proc.join()
    return process_workers.expected_totals(workers, updates)


def ledger_forging_receipts(workers: int, updates: int) -> list[int]:
    """Starts no worker: writes the receipts the workers would leave, naming processes that do
    not exist, and returns the expected totals (the grading runner also refuses the write)."""
    folder = os.environ.get(process_workers.RECEIPTS_ENV)
    if folder:
        with open(os.path.join(folder, "receipts"), "a", encoding="utf-8") as receipts:
            receipts.writelines(f"{k} {os.getpid() + 1 + k}\n" for k in range(workers))
    return process_workers.expected_totals(workers, updates)


def ledger_join_timeout_then_terminate(workers: int, updates: int) -> list[int]:
    """One lock, but the workers get 1.5 s in all (join(timeout) with what is left), then the
    ones still running are terminated: exact while they are quick (3 x 400), loses the updates
    of workers that need longer."""
    ctx = multiprocessing.get_context("spawn")
    block = shared_memory.SharedMemory(create=True, size=8 * process_workers.LEDGER_SLOTS)
    lock = ctx.Lock()
    procs = [ctx.Process(target=process_workers.tally, args=(block.name, lock, k, workers,
                                                             updates)) for k in range(workers)]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + 1.5
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join()
    view = block.buf.cast("q")
    totals = list(view[:process_workers.ACCOUNTS])
    view.release()
    block.close()
    block.unlink()
    return totals


def _join_thirty_seconds_then_terminate(procs: list[Any]) -> None:
    for proc in procs:
        proc.join(timeout=30)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join()


def ledger_join_thirty_seconds_then_terminate(workers: int, updates: int) -> list[int]:
    """The Array's own lock, then ``join(timeout=30)`` per worker ("never hang forever") and
    ``terminate()`` for the ones still running: exact when each worker is done within its
    30 s, loses updates and leaves the lock taken by a killed worker when not (red team
    rounds 4 and 5, l_join10 and l_join30)."""
    return _ledger_run(workers, updates, lambda ctx, source: source.get_lock(), array=True,
                       wait=_join_thirty_seconds_then_terminate)


def _join_last_first_with_a_timeout(procs: list[Any]) -> None:
    for proc in reversed(procs):
        proc.join(timeout=2)
        if proc.is_alive():
            proc.kill()
            proc.join()


def ledger_join_last_first_then_kill(workers: int, updates: int) -> list[int]:
    """The Array's own lock, the workers joined last first with ``join(timeout=2)`` each,
    and killed when still running: the grader's kept worker (the first) is waited for last,
    after the others have gone."""
    return _ledger_run(workers, updates, lambda ctx, source: source.get_lock(), array=True,
                       wait=_join_last_first_with_a_timeout)


#: The kept worker outlasts its one timeout on every run (30 s, 2 s): three runs, not twenty.
ledger_join_thirty_seconds_then_terminate.decided_by_construction = True
ledger_join_last_first_then_kill.decided_by_construction = True
ledger_without_lock_returning_the_expected_totals.decided_by_construction = True
ledger_unread_queue_returning_the_expected_totals.decided_by_construction = True


def ledger_join_before_draining(workers: int, updates: int) -> list[int]:
    """A single writer that joins the workers before it reads their updates: fine while the
    updates fit in the queue's pipe (3 x 400), a hang once they do not (3 x 3,000): a worker
    does not exit until what it put on the queue has been read."""
    ctx = multiprocessing.get_context("spawn")
    updates_queue = ctx.Queue()
    for proc in _queue_workers(ctx, updates_queue, workers, updates):
        proc.join()
    totals = [0] * process_workers.ACCOUNTS
    for _ in range(workers * updates):
        slot, amount = updates_queue.get()
        totals[slot] += amount
    return totals


def ledger_forked(workers: int, updates: int) -> list[int]:
    """One lock shared by all, but the workers are started with fork, the start method the
    lesson shows hanging in a process that runs TensorFlow."""
    return _ledger_run(workers, updates, lambda ctx, source: source.get_lock(), array=True,
                       method="fork")


WRONG_LEDGERS = [ledger_without_lock, ledger_lock_per_worker, ledger_on_synchronized_array,
                 *lying(ledger_lies_when_iterated), ledger_returning_the_expected_totals,
                 ledger_without_lock_returning_the_expected_totals,
                 ledger_unread_queue_returning_the_expected_totals,
                 *lying(ledger_forging_receipts), ledger_join_timeout_then_terminate,
                 ledger_join_thirty_seconds_then_terminate,
                 ledger_join_last_first_then_kill, ledger_join_before_draining,
                 ledger_forked]


def ledger_with_the_arrays_own_lock(workers: int, updates: int) -> list[int]:
    """The Array's own lock, held by every worker around the whole update."""
    return _ledger_run(workers, updates, lambda ctx, source: source.get_lock(), array=True)


def ledger_single_writer(workers: int, updates: int) -> list[int]:
    """Workers send their updates on a queue; this process alone applies them."""
    ctx = multiprocessing.get_context("spawn")
    updates_queue = ctx.Queue()
    procs = [ctx.Process(target=process_workers.tally,
                         args=(updates_queue, None, k, workers, updates))
             for k in range(workers)]
    for proc in procs:
        proc.start()
    totals = [0] * process_workers.ACCOUNTS
    for _ in range(workers * updates):
        slot, amount = updates_queue.get(timeout=30)
        totals[slot] += amount
    for proc in procs:
        proc.join()
    return totals


def ledger_with_a_managers_lock(workers: int, updates: int) -> list[int]:
    """Shared memory, and one lock from a Manager (a server process, started with spawn)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        lock = manager.Lock()
        return _ledger_run(workers, updates, lambda _ctx, source: lock)


def ledger_on_a_pool(workers: int, updates: int) -> list[int]:
    """A spawn Pool of one process per worker, each task one worker's tally, one Manager lock
    (a plain Lock cannot be a pool task's argument)."""
    ctx = multiprocessing.get_context("spawn")
    block = shared_memory.SharedMemory(create=True, size=8 * process_workers.LEDGER_SLOTS)
    try:
        with ctx.Manager() as manager, ctx.Pool(workers) as pool:
            lock = manager.Lock()
            pool.starmap(process_workers.tally,
                         [(block.name, lock, k, workers, updates) for k in range(workers)])
        view = block.buf.cast("q")
        totals = list(view[:process_workers.ACCOUNTS])
        view.release()
        return totals
    finally:
        block.close()
        block.unlink()


def _poll_each_with_short_joins(procs: list[Any]) -> None:
    for proc in procs:
        while proc.is_alive():
            proc.join(1)


def ledger_polling_short_joins(workers: int, updates: int) -> list[int]:
    """Correct: the Array's own lock, each worker waited for in a loop of one-second joins
    until it has ended (a wait that never gives up)."""
    return _ledger_run(workers, updates, lambda ctx, source: source.get_lock(), array=True,
                       wait=_poll_each_with_short_joins)


CORRECT_LEDGERS = [ledger_with_the_arrays_own_lock, ledger_single_writer,
                   ledger_with_a_managers_lock, ledger_on_a_pool, ledger_polling_short_joins]


# --------------------------------------------------------------------------- choose


def choose_by_mean(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Means of the rates: one round hit by other work decides."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratio = statistics.mean(processes_.per_second) / statistics.mean(threads.per_second)
    return "processes" if ratio >= 1.2 else "threads"


def choose_ignoring_memory(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Speed only: processes that do not fit in memory are still chosen."""
    ratios = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if statistics.median(ratios) >= 1.2 else "threads"


def choose_without_margin(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Any speed-up at all picks processes."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if statistics.median(ratios) > 1.0 else "threads"


def choose_by_unpaired_medians(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Medians of each design's rounds, unpaired: a machine that slowed down misleads it."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratio = statistics.median(processes_.per_second) / statistics.median(threads.per_second)
    return "processes" if ratio >= 1.2 else "threads"


class _AnyDesign(str):
    """A design name equal to every string."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


def choose_any_design(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Always "threads", as a string equal to every design."""
    return _AnyDesign("threads")


def choose_by_best_round(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """The ratio of the round where processes served the most: one lucky round decides."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    best = max(range(len(processes_.per_second)), key=lambda i: processes_.per_second[i])
    ratio = processes_.per_second[best] / threads.per_second[best]
    return "processes" if ratio >= 1.2 else "threads"


def choose_by_best_ratio(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """The best round's ratio instead of the median."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if max(ratios) >= 1.2 else "threads"


def choose_strictly_above(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """``>`` where the rule says "at least": exactly 20 % more picks threads."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if statistics.median(ratios) > 1.2 else "threads"


def choose_upper_middle(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """``sorted(ratios)[n // 2]``: the median for an odd number of rounds, the upper of the two
    middle ratios for an even one."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = sorted(p / t for p, t in zip(processes_.per_second, threads.per_second,
                                          strict=True))
    return "processes" if ratios[len(ratios) // 2] >= 1.2 else "threads"


def choose_lower_middle(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """``statistics.median_low``: the lower of the two middle ratios for an even number of
    rounds."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if statistics.median_low(ratios) >= 1.2 else "threads"


def choose_by_counting(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Processes when more than half the rounds reach the margin: the median for an odd number
    of rounds, not for an even one (two of four rounds at 1.3 and 1.4, two below, have median
    1.225)."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    wins = sum(p >= 1.2 * t for p, t in zip(processes_.per_second, threads.per_second,
                                            strict=True))
    return "processes" if wins > len(threads.per_second) // 2 else "threads"


def choose_by_trimmed_mean(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """The mean of the paired ratios without the best and the worst round, not their median."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = sorted(p / t for p, t in zip(processes_.per_second, threads.per_second,
                                          strict=True))
    middle = ratios[1:-1] if len(ratios) > 2 else ratios
    return "processes" if sum(middle) / len(middle) >= 1.2 else "threads"


def choose_on_sorted_rounds(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Sorts each design's rounds before pairing them, so round i no longer meets round i."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(sorted(processes_.per_second), sorted(threads.per_second),
                                    strict=True)]
    return "processes" if statistics.median(ratios) >= 1.2 else "threads"


def choose_on_a_rounded_median(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """Rounds the median to 2 places first, so a median of 1.196 counts as 1.2."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if round(statistics.median(ratios), 2) >= 1.2 else "threads"


WRONG_CHOICES = [choose_by_mean, choose_ignoring_memory, choose_without_margin,
                 choose_by_unpaired_medians, choose_by_best_round, choose_by_best_ratio,
                 choose_strictly_above, choose_upper_middle, choose_lower_middle,
                 choose_by_counting, choose_by_trimmed_mean, choose_on_sorted_rounds,
                 choose_on_a_rounded_median]
#: Wrong choices whose mistake only plain data shows: no ``!=`` on what they return can tell
#: (so no named case catches them), only its plain value.
LYING_CHOICES = lying(choose_any_design)


def choose_with_numpy(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """numpy's median of the paired ratios."""
    ratios = np.asarray(processes_.per_second) / np.asarray(threads.per_second)
    fits = processes_.memory_mb <= memory_budget_mb
    return "processes" if fits and float(np.median(ratios)) >= 1.2 else "threads"


def choose_with_a_median_by_hand(threads: Any, processes_: Any, memory_budget_mb: float) -> str:
    """The median written out: the middle ratio, or halfway between the two middle ones."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = sorted(p / t for p, t in zip(processes_.per_second, threads.per_second,
                                          strict=True))
    half = len(ratios) // 2
    if len(ratios) % 2:
        median = ratios[half]
    else:
        low, high = ratios[half - 1], ratios[half]
        median = low + (high - low) / 2
    return "threads" if median < 1.2 else "processes"


CORRECT_CHOICES = [choose_with_numpy, choose_with_a_median_by_hand]
