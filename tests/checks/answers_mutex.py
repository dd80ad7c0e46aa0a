"""Answers a student might write for lesson 02 (mutex): wrong ones and correct ones.

Each exercise gets the mistakes people really make (no lock, a lock made on every call, a lock
on one side only, a lock per counter, a check outside the lock, locks taken in argument order,
``acquire``/``release`` without ``finally``, a plain ``Lock`` taken twice by one thread) and
correct answers written differently from the lesson's solution (another primitive, another
structure).
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
import time
from typing import Any

from tests.checks.liars import (
    Agrees,
    EqualsEverything,
    KeptKey,
    PosingKey,
    get_hiding_extra_calls,
    lying,
)

# --------------------------------------------------------------------------- ServerMetrics


class NoLockMetrics:
    """Plain attribute updates: the GIL hides it with real threads, the scheduler does not."""

    def __init__(self) -> None:
        self.requests = 0
        self.ok = 0
        self.errors = 0
        self.latency_total = 0.0

    def record(self, latency_s: float, ok: bool) -> None:
        self.requests += 1
        if ok:
            self.ok += 1
        else:
            self.errors += 1
        self.latency_total += latency_s

    def snapshot(self) -> dict[str, Any]:
        return {"requests": self.requests, "ok": self.ok, "errors": self.errors,
                "latency_total": self.latency_total}


class LockPerCallMetrics(NoLockMetrics):
    """A new lock in every call: each caller holds its own lock and nobody ever waits."""

    def record(self, latency_s: float, ok: bool) -> None:
        with threading.Lock():
            super().record(latency_s, ok)

    def snapshot(self) -> dict[str, Any]:
        with threading.Lock():
            return super().snapshot()


class WriterOnlyLockMetrics(NoLockMetrics):
    """The writer locks, the reader does not: a snapshot can land in the middle of a record."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def record(self, latency_s: float, ok: bool) -> None:
        with self.lock:
            super().record(latency_s, ok)


class ReaderOnlyLockMetrics(NoLockMetrics):
    """The reader locks, the writers do not: records still interleave with everything."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return super().snapshot()


class LockPerCounterMetrics:
    """One lock per counter: no update is lost, but a snapshot still mixes two moments."""

    def __init__(self) -> None:
        self.counts = {"requests": 0, "ok": 0, "errors": 0, "latency_total": 0.0}
        self.locks = {name: threading.Lock() for name in self.counts}

    def _add(self, name: str, amount: float) -> None:
        with self.locks[name]:
            self.counts[name] += amount

    def record(self, latency_s: float, ok: bool) -> None:
        self._add("requests", 1)
        self._add("ok" if ok else "errors", 1)
        self._add("latency_total", latency_s)

    def snapshot(self) -> dict[str, Any]:
        out = {}
        for name in self.counts:
            with self.locks[name]:
                out[name] = self.counts[name]
        return out


class LiveDictMetrics:
    """Locked everywhere, but ``snapshot`` hands out the live dict, which keeps changing."""

    def __init__(self) -> None:
        self.counts = {"requests": 0, "ok": 0, "errors": 0, "latency_total": 0.0}
        self.lock = threading.Lock()

    def record(self, latency_s: float, ok: bool) -> None:
        with self.lock:
            self.counts["requests"] += 1
            self.counts["ok" if ok else "errors"] += 1
            self.counts["latency_total"] += latency_s

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return self.counts


class CountLockedOnlyMetrics(NoLockMetrics):
    """Locks the request count but updates the outcome and latency after releasing it."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def record(self, latency_s: float, ok: bool) -> None:
        with self.lock:
            self.requests += 1
        if ok:
            self.ok += 1
        else:
            self.errors += 1
        self.latency_total += latency_s

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return super().snapshot()


class ImmutableSwapMetrics:
    """Correct: the counters are one immutable tuple, replaced whole under a writers' lock.

    Reading one attribute is a single step, so ``snapshot`` needs no lock: it always sees a
    whole tuple, before or after a record, never half of one.
    """

    def __init__(self) -> None:
        self._state = (0, 0, 0, 0.0)
        self._writers = threading.Lock()

    def record(self, latency_s: float, ok: bool) -> None:
        with self._writers:
            requests, good, bad, latency = self._state
            self._state = (requests + 1, good + ok, bad + (not ok), latency + latency_s)

    def snapshot(self) -> dict[str, Any]:
        requests, good, bad, latency = self._state
        return {"requests": requests, "ok": good, "errors": bad, "latency_total": latency}


class SemaphoreMetrics(NoLockMetrics):
    """Correct: a ``Semaphore(1)`` used as a mutex, released in ``finally``."""

    def __init__(self) -> None:
        super().__init__()
        self._gate = threading.Semaphore(1)

    def record(self, latency_s: float, ok: bool) -> None:
        self._gate.acquire()
        try:
            super().record(latency_s, ok)
        finally:
            self._gate.release()

    def snapshot(self) -> dict[str, Any]:
        self._gate.acquire()
        try:
            return super().snapshot()
        finally:
            self._gate.release()


class ReusedSnapshotMetrics(ImmutableSwapMetrics):
    """Hands every caller the same dict until the next ``record()`` (red team round 7: 3/3):
    a dashboard that changes its snapshot changes everyone's, and every later one."""

    def __init__(self) -> None:
        super().__init__()
        self._last: tuple[tuple, dict] | None = None

    def snapshot(self) -> dict[str, Any]:
        state = self._state
        if self._last is None or self._last[0] is not state:
            self._last = (state, super().snapshot())
        return self._last[1]


ReusedSnapshotMetrics.decided_by_construction = True  # on one thread, before any schedule

class LazyLockMetrics(NoLockMetrics):
    """Makes its lock on first use, "so that an unused object costs nothing": two threads'
    first calls can each see None and each make a lock of its own, then update the counters
    at once (session 19's D: passed every run before; the race needs two departures, the
    graded search allows one). Found in the first-use run."""

    def __init__(self) -> None:
        super().__init__()
        self._lock: threading.Lock | None = None

    def _locked(self) -> threading.Lock:
        if self._lock is None:
            self._lock = threading.Lock()
        return self._lock

    def record(self, latency_s: float, ok: bool) -> None:
        with self._locked():
            super().record(latency_s, ok)

    def snapshot(self) -> dict[str, Any]:
        with self._locked():
            return super().snapshot()


LazyLockMetrics.decided_by_construction = True  # the first-use search, every run

WRONG_METRICS = [
    NoLockMetrics,
    LazyLockMetrics,
    LockPerCallMetrics,
    WriterOnlyLockMetrics,
    ReaderOnlyLockMetrics,
    LockPerCounterMetrics,
    LiveDictMetrics,
    ReusedSnapshotMetrics,
    CountLockedOnlyMetrics,
]
CORRECT_METRICS = [ImmutableSwapMetrics, SemaphoreMetrics]


# --------------------------------------------------------------------------- PredictionCache


class NoLockCache:
    """Check-then-act: two misses on one key both compute it."""

    def __init__(self, compute: Any) -> None:
        self.compute = compute
        self.values: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        if key not in self.values:
            self.values[key] = self.compute(key)
        return self.values[key]


class LockPerCallCache(NoLockCache):
    """A new lock in every call protects nothing."""

    def get(self, key: Any) -> Any:
        with threading.Lock():
            return super().get(key)


class LockOnlyTheWriteCache(NoLockCache):
    """Locks the store but not the check: both misses still compute."""

    def __init__(self, compute: Any) -> None:
        super().__init__(compute)
        self.lock = threading.Lock()

    def get(self, key: Any) -> Any:
        if key not in self.values:
            value = self.compute(key)
            with self.lock:
                self.values[key] = value
        return self.values[key]


class DoubleCheckedStoreCache(NoLockCache):
    """Checks under a lock, computes outside it, stores under it: both misses compute."""

    def __init__(self, compute: Any) -> None:
        super().__init__(compute)
        self.lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self.lock:
            if key in self.values:
                return self.values[key]
        value = self.compute(key)
        with self.lock:
            self.values.setdefault(key, value)
            return self.values[key]


class RacyKeyLocksCache(NoLockCache):
    """A lock per key, but the lock itself is made check-then-act: two threads make two."""

    def __init__(self, compute: Any) -> None:
        super().__init__(compute)
        self.locks: dict[Any, threading.Lock] = {}

    def get(self, key: Any) -> Any:
        if key not in self.locks:
            self.locks[key] = threading.Lock()
        with self.locks[key]:
            if key not in self.values:
                self.values[key] = self.compute(key)
            return self.values[key]


class GlobalLockCache(NoLockCache):
    """Exactly once, but one lock held while computing makes every key wait for a slow one."""

    def __init__(self, compute: Any) -> None:
        super().__init__(compute)
        self.lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self.lock:
            if key not in self.values:
                self.values[key] = self.compute(key)
            return self.values[key]


class FutureCache:
    """Correct: the first miss puts a Future in the dict under a lock and fills it outside."""

    def __init__(self, compute: Any) -> None:
        self._compute = compute
        self._futures: dict[Any, concurrent.futures.Future] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            future = self._futures.get(key)
            mine = future is None
            if mine:
                future = self._futures[key] = concurrent.futures.Future()
        if mine:
            try:
                future.set_result(self._compute(key))
            except BaseException as error:
                future.set_exception(error)
        return future.result()


class SetdefaultKeyLockCache:
    """Correct: ``dict.setdefault`` picks one lock per key in a single step, no guard lock."""

    def __init__(self, compute: Any) -> None:
        self._compute = compute
        self._values: dict[Any, Any] = {}
        self._locks: dict[Any, threading.Lock] = {}

    def get(self, key: Any) -> Any:
        key_lock = self._locks.setdefault(key, threading.Lock())
        with key_lock:
            if key not in self._values:
                self._values[key] = self._compute(key)
            return self._values[key]


class StripedLocksCache:
    """Lock striping: 32 locks picked by ``hash(key) % 32``, held while ``compute`` runs. Two
    keys on one stripe wait for each other; with the string hash seeded anew in every process,
    the grader's two keys shared a stripe in about 1 run in 70 (the check now picks its other
    key so that they always do)."""

    STRIPES = 32

    def __init__(self, compute: Any) -> None:
        self._compute = compute
        self._values: dict = {}
        self._stripes = [threading.Lock() for _ in range(self.STRIPES)]

    def get(self, key: Any) -> Any:
        with self._stripes[hash(key) % self.STRIPES]:
            if key not in self._values:
                self._values[key] = self._compute(key)
            return self._values[key]


class ThousandStripesCache(StripedLocksCache):
    """The same with 1,000 stripes (red team round 7): the name the check picks for its other
    key shares a stripe modulo 40 only, so they collided in about 1 run in 25 (it had 4/4);
    the key the check passes now hashes as the slow one, whatever the stripe count."""

    STRIPES = 1000


ThousandStripesCache.decided_by_construction = True  # the keys' hashes are equal


class EvictingFutureCache(FutureCache):
    """Wrong (red team round 9, 4/4 before): the Future cache with LRU eviction at 256 keys,
    "so that it cannot grow for ever": an evicted key is computed again and comes back as
    another object, against "computed once per key and then kept"."""

    LIMIT = 256

    def get(self, key: Any) -> Any:
        with self._lock:
            future = self._futures.pop(key, None)
            mine = future is None
            if mine:
                future = concurrent.futures.Future()
            self._futures[key] = future  # most recently used last
            while len(self._futures) > self.LIMIT:
                del self._futures[next(iter(self._futures))]
        if mine:
            try:
                future.set_result(self._compute(key))
            except BaseException as error:
                future.set_exception(error)
        return future.result()


EvictingFutureCache.decided_by_construction = True  # the one-thread run, every run


class EventNoFinallyCache:
    """Wrong (red team round 9, 4/4 before): one Event per key, set once the value is stored,
    but no try/finally around compute: when compute raises, the Event is never set, and every
    get of that key, waiting or later, waits for ever."""

    def __init__(self, compute: Any) -> None:
        self._compute = compute
        self._values: dict[Any, Any] = {}
        self._events: dict[Any, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            event = self._events.get(key)
            mine = event is None
            if mine:
                event = self._events[key] = threading.Event()
        if mine:
            self._values[key] = self._compute(key)
            event.set()
        event.wait()
        return self._values[key]


EventNoFinallyCache.decided_by_construction = True  # a deadlock the search always reaches


class TimedWaitThenComputeCache:
    """Wrong (red team round 9, B, 4/4 before): a waiter waits for the key's Event at most
    5 s "so that a stuck compute never hangs a request", then computes the key itself: on a
    busy machine the wait runs out while the first compute still runs, and the key is
    computed twice."""

    def __init__(self, compute: Any) -> None:
        self._compute = compute
        self._values: dict[Any, Any] = {}
        self._pending: dict[Any, threading.Event] = {}
        self._lock = threading.Lock()

    def _wait_for(self, event: threading.Event) -> bool:
        return event.wait(timeout=5.0)

    def get(self, key: Any) -> Any:
        with self._lock:
            if key in self._values:
                return self._values[key]
            event = self._pending.get(key)
            mine = event is None
            if mine:
                event = self._pending[key] = threading.Event()
        if mine:
            try:
                value = self._compute(key)
                with self._lock:
                    self._values[key] = value
                return value
            finally:
                with self._lock:
                    del self._pending[key]
                event.set()
        if self._wait_for(event):
            with self._lock:
                if key in self._values:
                    return self._values[key]
        return self._compute(key)


TimedWaitThenComputeCache.decided_by_construction = True  # a give-up the search reaches


class PartialTimedWaitCache(TimedWaitThenComputeCache):
    """The same timed wait hidden behind ``functools.partial`` (an attack on the call-site
    test, which sees a partial, not ``Event.wait``): the wait still gives up inside."""

    _wait_for = functools.partial(threading.Event.wait, timeout=5.0)  # not a method: no self


PartialTimedWaitCache.decided_by_construction = True

WRONG_CACHES = [
    NoLockCache,
    LockPerCallCache,
    LockOnlyTheWriteCache,
    DoubleCheckedStoreCache,
    RacyKeyLocksCache,
    GlobalLockCache,
    StripedLocksCache,
    ThousandStripesCache,
    EvictingFutureCache,
    EventNoFinallyCache,
    TimedWaitThenComputeCache,
    PartialTimedWaitCache,
]
CORRECT_CACHES = [FutureCache, SetdefaultKeyLockCache]


# --------------------------------------------------------------------------- move_slots


def move_in_argument_order(src: Any, dst: Any, n: int) -> bool:
    """The lesson's broken version: opposite moves take the two locks in opposite orders."""
    with src.lock:
        with dst.lock:
            if src.slots < n:
                return False
            src.slots -= n
            dst.slots += n
            return True


def move_locking_source_only(src: Any, dst: Any, n: int) -> bool:
    """Only the source is locked: the destination's count is changed unprotected."""
    with src.lock:
        if src.slots < n:
            return False
        src.slots -= n
        dst.slots += n
        return True


def move_with_lock_per_call(src: Any, dst: Any, n: int) -> bool:
    """A fresh lock guards nothing; the replicas' own locks are never taken."""
    with threading.Lock():
        if src.slots < n:
            return False
        src.slots -= n
        dst.slots += n
        return True


_ONE_BIG_LOCK = threading.Lock()


def move_under_one_global_lock(src: Any, dst: Any, n: int) -> bool:
    """No deadlock, but the request path uses the replicas' locks, not this one."""
    with _ONE_BIG_LOCK:
        if src.slots < n:
            return False
        src.slots -= n
        dst.slots += n
        return True


def move_checking_before_locking(src: Any, dst: Any, n: int) -> bool:
    """Ordered locks, but the free-slot check is made before taking them."""
    if src.slots < n:
        return False
    first, second = sorted((src, dst), key=lambda r: r.name)
    with first.lock, second.lock:
        src.slots -= n
        dst.slots += n
    return True


def move_ordered_by_free_slots(src: Any, dst: Any, n: int) -> bool:
    """Sorts the locks by a value that changes (and ties): not one fixed order."""
    first, second = sorted((src, dst), key=lambda r: r.slots)
    with first.lock, second.lock:
        if src.slots < n:
            return False
        src.slots -= n
        dst.slots += n
        return True


def move_ordered_by_id(src: Any, dst: Any, n: int) -> bool:
    """Correct: one global order, the objects' ids."""
    first, second = (src, dst) if id(src) < id(dst) else (dst, src)
    with first.lock:
        with second.lock:
            if src.slots < n:
                return False
            src.slots -= n
            dst.slots += n
            return True


def move_one_lock_at_a_time(src: Any, dst: Any, n: int) -> bool:
    """Correct: never holds two locks, so no order can deadlock (the slots are in flight)."""
    with src.lock:
        if src.slots < n:
            return False
        src.slots -= n
    with dst.lock:
        dst.slots += n
    return True


def move_checked_then_moved_in_two_regions(src: Any, dst: Any, n: int) -> bool:
    """Wrong: the check holds the source's lock, the move holds both, but the lock is let go
    in between, so another move can take the slots first (issue #18, class 2: 200 seeded
    schedules missed it for 12 seeds in a row; one preemption exposes it)."""
    with src.lock:
        enough = src.slots >= n
    if not enough:
        return False
    first, second = (src, dst) if src.name < dst.name else (dst, src)
    with first.lock, second.lock:
        src.slots -= n
        dst.slots += n
    return True


def move_timed_acquire_unchecked(src: Any, dst: Any, n: int) -> bool:
    """Wrong: timed acquires (no deadlock) whose failure is ignored: when one gives up, the
    slots are read and changed without that replica's lock (issue #18, class 3)."""
    got_src = src.lock.acquire(timeout=0.5)
    got_dst = dst.lock.acquire(timeout=0.5)
    try:
        if src.slots < n:
            return False
        src.slots -= n
        dst.slots += n
        return True
    finally:
        if got_dst:
            dst.lock.release()
        if got_src:
            src.lock.release()


def move_backing_off(src: Any, dst: Any, n: int) -> bool:
    """Correct, unusual: locks in argument order, but a timed acquire of the second that
    fails gives everything back and reports no move (no deadlock, nothing changed)."""
    with src.lock:
        if not dst.lock.acquire(True, 0.05):
            return False
        try:
            if src.slots < n:
                return False
            src.slots -= n
            dst.slots += n
            return True
        finally:
            dst.lock.release()


def move_retrying_after_a_pause(src: Any, dst: Any, n: int) -> bool:
    """Correct, common: locks in argument order; when the timed acquire of the second lock
    gives up, it lets go of the first, sleeps a millisecond and tries again (round 7: it ran
    out of time in schedule 14, because the scheduler let the thread that gave up take its
    lock back before the other mover could, for ever)."""
    while True:
        with src.lock:
            if dst.lock.acquire(timeout=0.5):
                try:
                    if src.slots < n:
                        return False
                    src.slots -= n
                    dst.slots += n
                    return True
                finally:
                    dst.lock.release()
        time.sleep(0.001)


WRONG_MOVES = [
    move_in_argument_order,
    move_locking_source_only,
    move_with_lock_per_call,
    move_under_one_global_lock,
    move_checking_before_locking,
    move_ordered_by_free_slots,
    move_checked_then_moved_in_two_regions,
    move_timed_acquire_unchecked,
]
CORRECT_MOVES = [move_ordered_by_id, move_one_lock_at_a_time, move_backing_off,
                 move_retrying_after_a_pause]


# --------------------------------------------------------------------------- ModelSlot


class NoLockSlot:
    """Two attributes read and written separately: a swap can land between the two reads."""

    def __init__(self, model: Any, version: int) -> None:
        self.model = model
        self.version = version

    def predict(self, batch: Any) -> tuple[int, Any]:
        model = self.model
        return self.version, model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        model.predict_on_batch(example_batch)
        self.model = model
        self.version = version


class ManualReleaseSlot:
    """``acquire``/``release`` without ``finally``: the failed predict leaves the lock held."""

    def __init__(self, model: Any, version: int) -> None:
        self.model = model
        self.version = version
        self.lock = threading.Lock()

    def predict(self, batch: Any) -> tuple[int, Any]:
        self.lock.acquire()
        output = self.model.predict_on_batch(batch)
        version = self.version
        self.lock.release()
        return version, output

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        self.lock.acquire()
        self.model, self.version = model, version
        self.model.predict_on_batch(example_batch)
        self.lock.release()


class NestedPlainLockSlot:
    """A plain Lock, and ``swap`` calls ``predict`` while holding it: it waits for itself."""

    def __init__(self, model: Any, version: int) -> None:
        self.model = model
        self.version = version
        self.lock = threading.Lock()

    def predict(self, batch: Any) -> tuple[int, Any]:
        with self.lock:
            return self.version, self.model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        with self.lock:
            self.model, self.version = model, version
            self.predict(example_batch)


class PublishThenWarmSlot:
    """Reads the pair under the lock, but publishes the new model before warming it."""

    def __init__(self, model: Any, version: int) -> None:
        self.model = model
        self.version = version
        self.lock = threading.Lock()

    def predict(self, batch: Any) -> tuple[int, Any]:
        with self.lock:
            model, version = self.model, self.version
        return version, model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        with self.lock:
            self.model, self.version = model, version
        model.predict_on_batch(example_batch)


class LockPerCallSlot(NoLockSlot):
    """A new lock per call: the version and the model are still read at different moments."""

    def predict(self, batch: Any) -> tuple[int, Any]:
        with threading.Lock():
            model = self.model
            return self.version, model.predict_on_batch(batch)


class SwallowErrorsSlot:
    """Locked with ``with``, but it hides the model's error instead of raising it."""

    def __init__(self, model: Any, version: int) -> None:
        self.model = model
        self.version = version
        self.lock = threading.RLock()

    def predict(self, batch: Any) -> tuple[int, Any] | None:
        with self.lock:
            try:
                return self.version, self.model.predict_on_batch(batch)
            except Exception:
                return None

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        with self.lock:
            self.model, self.version = model, version
            self.predict(example_batch)


class RLockSlot:
    """Correct: an RLock around everything; ``swap`` warms through ``predict`` under it."""

    def __init__(self, model: Any, version: int) -> None:
        self._model = model
        self._version = version
        self._lock = threading.RLock()

    def predict(self, batch: Any) -> tuple[int, Any]:
        with self._lock:
            return self._version, self._model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        with self._lock:
            self._model, self._version = model, version
            self.predict(example_batch)


class TupleReferenceSlot:
    """Correct without a lock: warm first, then publish one immutable (model, version) pair."""

    def __init__(self, model: Any, version: int) -> None:
        self._current = (model, version)

    def predict(self, batch: Any) -> tuple[int, Any]:
        model, version = self._current
        return version, model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        model.predict_on_batch(example_batch)
        self._current = (model, version)


class PublishOutsideTheLockSlot:
    """Readers take the lock, but ``swap`` warms under it and publishes after it: the model
    and the version are two stores, and a request between them reads them mixed (the
    mutation benchmark's ``shift_region`` of the reference)."""

    def __init__(self, model: Any, version: int) -> None:
        self._model, self._version = model, version
        self._lock = threading.Lock()

    def predict(self, batch: Any) -> tuple[int, Any]:
        with self._lock:
            model, version = self._model, self._version
        return version, model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        with self._lock:
            model.predict_on_batch(example_batch)
        self._model, self._version = model, version


class LazyLockSlot(PublishOutsideTheLockSlot):
    """The lesson's lock layout with the lock made on first use: a request's first call and
    the swap can each make a lock of their own, and the request reads the model and the
    version between the swap's two stores (session 19's ML). Found in the first-use run."""

    def __init__(self, model: Any, version: int) -> None:
        self._model, self._version = model, version
        self._lock = None

    def _locked(self) -> threading.Lock:
        if self._lock is None:
            self._lock = threading.Lock()
        return self._lock

    def predict(self, batch: Any) -> tuple[int, Any]:
        with self._locked():
            model, version = self._model, self._version
        return version, model.predict_on_batch(batch)

    def swap(self, model: Any, version: int, example_batch: Any) -> None:
        model.predict_on_batch(example_batch)
        with self._locked():
            self._model, self._version = model, version


LazyLockSlot.decided_by_construction = True  # the first-use search, every run

WRONG_SLOTS = [
    NoLockSlot,
    LazyLockSlot,
    PublishOutsideTheLockSlot,
    ManualReleaseSlot,
    NestedPlainLockSlot,
    PublishThenWarmSlot,
    LockPerCallSlot,
    SwallowErrorsSlot,
]
CORRECT_SLOTS = [RLockSlot, TupleReferenceSlot]


# --------------------------------------------------------------------------- answers that lie
# Each returns (or writes into the grader's objects) a value whose own methods misreport what
# it holds. They must fail like the honest mistakes they hide: the grader reads plain data.


class AgreeingObjectsMetrics(NoLockMetrics):
    """Lies: no lock, and snapshot() holds objects equal to every expected count."""

    def snapshot(self) -> dict[str, Any]:
        return {name: Agrees() for name in ("requests", "ok", "errors", "latency_total")}


class _CountsAgree(dict):
    """A dict whose items read back as ints equal to anything."""

    def __getitem__(self, key: Any) -> Any:
        return EqualsEverything(dict.__getitem__(self, key))


class AgreeingIntsMetrics(NoLockMetrics):
    """Lies: no lock, and snapshot() is a dict subclass whose items are ints equal to anything."""

    def snapshot(self) -> dict[str, Any]:
        return _CountsAgree(super().snapshot())


LYING_METRICS = lying(AgreeingObjectsMetrics, AgreeingIntsMetrics)
WRONG_METRICS += LYING_METRICS


class HiddenSecondComputeCache(NoLockCache):
    """Lies: check-then-act computes a key twice, with keys that hide all but the kept build."""

    key_type: Any = KeptKey

    def get(self, key: Any) -> Any:
        return get_hiding_extra_calls(self.values, self.compute, key, self.key_type)


class PosingKeySecondComputeCache(HiddenSecondComputeCache):
    """Lies: as above, with compute keys that are objects posing as str."""

    key_type = PosingKey


LYING_CACHES = lying(HiddenSecondComputeCache, PosingKeySecondComputeCache)
WRONG_CACHES += LYING_CACHES


def move_reporting_an_agreeing_true(src: Any, dst: Any, n: int) -> bool:
    """Lies: moves only when it can, yet always returns an int equal to True and False alike,
    and to whatever the slot count should be."""
    first, second = (src, dst) if id(src) < id(dst) else (dst, src)
    with first.lock, second.lock:
        if src.slots >= n:
            src.slots -= n
            dst.slots += n
    return EqualsEverything(1)  # type: ignore[return-value]


class _NeverPositive(int):
    """A slot count that says it is not above 0, so requests take no slot from it."""

    def __gt__(self, other: object) -> bool:
        return False


def move_hiding_its_race_behind_a_count_that_is_never_positive(src: Any, dst: Any,
                                                                n: int) -> bool:
    """Lies: the check and the move in two locked regions (a race), but between them the
    source's count is an int that says it is not above 0, so no request takes its slots."""
    with src.lock:
        enough = src.slots >= n
        src.slots = _NeverPositive(src.slots)
    if not enough:
        return False
    first, second = (src, dst) if src.name < dst.name else (dst, src)
    with first.lock, second.lock:
        src.slots -= n
        dst.slots += n
    return True


LYING_MOVES = lying(move_reporting_an_agreeing_true,
                    move_hiding_its_race_behind_a_count_that_is_never_positive)
WRONG_MOVES += LYING_MOVES


class AgreeingVersionSlot(NoLockSlot):
    """Lies: no lock (a swap lands between the two reads), and the version is an int that
    equals every model's version."""

    def predict(self, batch: Any) -> tuple[int, Any]:
        version, output = super().predict(batch)
        return EqualsEverything(version), output


class _PairTellingTheModelsVersion(tuple):
    """A (version, output) pair that, read item by item, gives the output's own version."""

    def __iter__(self) -> Any:
        output = tuple.__getitem__(self, 1)
        return iter((output[0], output))

    def __getitem__(self, index: Any) -> Any:
        return tuple(self)[index]


class VersionFromTheOutputSlot(NoLockSlot):
    """Lies: no lock, and predict() returns a tuple subclass that reads back a matching pair."""

    def predict(self, batch: Any) -> tuple[int, Any]:
        return _PairTellingTheModelsVersion(super().predict(batch))


class _SaysItIsTheExample(str):
    """A batch name equal to every name, the example's included."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False


class NamesEveryRequestTheExampleSlot(PublishThenWarmSlot):
    """Lies: publishes before warming, and renames every request batch so that it equals the
    example batch's name."""

    def predict(self, batch: Any) -> tuple[int, Any]:
        name, features = batch
        return super().predict((_SaysItIsTheExample(name), features))


LYING_SLOTS = lying(AgreeingVersionSlot, VersionFromTheOutputSlot, NamesEveryRequestTheExampleSlot)
WRONG_SLOTS += LYING_SLOTS


# --------------------------------------------------------------------------- skipping the work


class ConstantSnapshotMetrics:
    """Counts nothing: snapshot() always says what the graded run ends with (4 requests)."""

    def record(self, latency_s, ok):
        pass

    def snapshot(self):
        return {"requests": 4, "ok": 2, "errors": 2, "latency_total": 10.0}


def move_that_never_moves(src, dst, n):
    """Never moves and says so: no lock, no race, and no slots ever moved."""
    return False


WRONG_METRICS.append(ConstantSnapshotMetrics)
WRONG_MOVES.append(move_that_never_moves)
