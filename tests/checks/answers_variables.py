"""Answers a student might write for lesson 03 (variables): wrong ones and correct ones.

Each exercise gets the mistakes people really make (``assign`` where ``assign_add`` is needed,
trusting the value ``assign_add`` returns, a lock made on every call, a lock on one side only,
a model reference published before its weights are set, a version number stored apart from the
weights, a measurement whose readers stop early or never overlap the writer, a choice that
ignores torn reads or the update rate) and correct answers written differently from the
lesson's solution (another primitive, another structure).
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.ops.resource_variable_ops import ResourceVariable

from autograder.checks import variables
from tests.checks.grading_runs import demo_answer
from tests.checks.liars import EqualsEverything, EqualsEverythingFloat, EqualsEverythingStr, lying

# --------------------------------------------------------------------------- StepCounter


class AssignReadBackCounter:
    """``assign(steps + 1)``: read, add, write in three ops; two threads write the same sum."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    def step(self) -> int:
        self.steps.assign(self.steps + 1)
        return int(self.steps.numpy())


class UseLockingCounter:
    """TF1 advice: ``use_locking=True`` locks the write only, not the read before it."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    def step(self) -> int:
        return int(self.steps.assign(self.steps + 1, use_locking=True))


class AssignAddValueCounter:
    """``int(v.assign_add(1))``: the add is atomic, but the value is read later, after others."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    def step(self) -> int:
        return int(self.steps.assign_add(1))


class AssignAddThenReadCounter:
    """``assign_add`` then a separate read: another thread's add lands in between."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    def step(self) -> int:
        self.steps.assign_add(1)
        return int(self.steps.read_value())


class LockPerCallCounter:
    """A new lock on every call: nobody else ever waits for it."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    def step(self) -> int:
        with threading.Lock():
            self.steps.assign(self.steps + 1)
            return int(self.steps.numpy())


class LockedAddReadOutsideCounter:
    """The lock covers the update but not the read of the step number."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self.lock = threading.Lock()

    def step(self) -> int:
        with self.lock:
            self.steps.assign_add(1)
        return int(self.steps.numpy())


class LazyLockCounter:
    """A lock made on first use around ``assign_add`` and the read-back: two threads' first
    steps can each make a lock of their own and hand out the same number (session 19's U:
    passed every run before; found in the first-use run)."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._lock: threading.Lock | None = None

    def step(self) -> int:
        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            self.steps.assign_add(1)
            return int(self.steps.numpy())


LazyLockCounter.decided_by_construction = True  # the first-use search, every run


class TicketCounter:
    """Correct: the number comes from ``itertools.count`` (atomic in CPython), the variable
    from ``assign_add``; each is atomic on its own and they need not agree mid-flight."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._numbers = itertools.count(1)

    def step(self) -> int:
        number = next(self._numbers)
        self.steps.assign_add(1, read_value=False)
        return number


class SemaphoreAssignCounter:
    """Correct: a semaphore used as a mutex around read-add-write and the read-back."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._gate = threading.Semaphore(1)

    def step(self) -> int:
        self._gate.acquire()
        try:
            value = self.steps.read_value() + 1
            self.steps.assign(value)
            return int(value)
        finally:
            self._gate.release()


class PythonMirrorCounter:
    """Correct: keep the count in Python under an RLock and copy it into the variable."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._lock = threading.RLock()
        self._count = 0

    def step(self) -> int:
        with self._lock:
            self._count += 1
            self.steps.assign(self._count)
            return self._count


class FunctionAddThenReadCounter:
    """``assign_add`` and a separate read-back inside one ``tf.function``: the function is not
    atomic, another call's add lands between the two ops (issue #18, class 4: real threads
    caught it in 5 of 7 grading runs)."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def _step(self) -> Any:
        self.steps.assign_add(1)
        return self.steps.read_value()

    def step(self) -> int:
        return int(self._step())


class LockInsideFunctionCounter:
    """A Python lock inside the ``tf.function``: it is taken only while the function is
    traced, so the graph every call runs adds and reads back with no lock at all."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._lock = threading.Lock()

    @tf.function
    def _step(self) -> Any:
        with self._lock:
            self.steps.assign_add(1)
            return self.steps.read_value()

    def step(self) -> int:
        return int(self._step())


class FunctionAddValueCounter:
    """``return v.assign_add(1)`` from a ``tf.function``: the value is a later read of ``v``."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._step = tf.function(lambda: self.steps.assign_add(1))

    def step(self) -> int:
        return int(self._step())


class LockAroundFunctionCounter:
    """Correct: a ``tf.function`` that adds and reads back, called under a lock (the lock is
    taken on every call, outside the graph)."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._lock = threading.Lock()

    @tf.function
    def _add_and_read(self) -> Any:
        self.steps.assign_add(1)
        return self.steps.read_value()

    def step(self) -> int:
        with self._lock:
            return int(self._add_and_read())


class CriticalSectionCounter:
    """Correct: ``tf.CriticalSection`` runs the add and the read-back as one exclusive unit."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._section = tf.CriticalSection()

    def step(self) -> int:
        return int(self._section.execute(lambda: self.steps.assign_add(1).read_value()))


class CriticalSectionAddReadOutsideCounter:
    """The critical section covers the add, but the step number is read after it, outside."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self._section = tf.CriticalSection()

    def step(self) -> int:
        self._section.execute(lambda: self.steps.assign_add(1))
        return int(self.steps.numpy())


class BlocksOfTwoCounter:
    """Each thread takes its step numbers two at a time from a shared ``itertools.count``: one
    call on each of two threads returns 1 and 3; only threads making an even number of calls
    use every number they took."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        self.blocks = itertools.count(0)
        self.mine = threading.local()

    def step(self) -> int:
        mine = self.mine
        if not getattr(mine, "left", 0):
            mine.next, mine.left = next(self.blocks) * 2 + 1, 2
        number = mine.next
        mine.next += 1
        mine.left -= 1
        self.steps.assign_add(1, read_value=False)
        return number


WRONG_COUNTERS = [AssignReadBackCounter, UseLockingCounter, AssignAddValueCounter,
                  AssignAddThenReadCounter, LockPerCallCounter, LockedAddReadOutsideCounter,
                  FunctionAddThenReadCounter, LockInsideFunctionCounter, FunctionAddValueCounter,
                  CriticalSectionAddReadOutsideCounter, BlocksOfTwoCounter, LazyLockCounter]
CORRECT_COUNTERS = [TicketCounter, PythonMirrorCounter, LockAroundFunctionCounter]
#: Run once each: a critical section blocks inside TensorFlow, where the controlled scheduler
#: waits 0.5 s before it lets another thread run (about 17 s per grading run).
SLOW_CORRECT_COUNTERS = [SemaphoreAssignCounter, CriticalSectionCounter]


# --------------------------------------------------------------------------- WeightPublisher


class UnlockedPublisher:
    """``set_weights`` while another thread runs ``predict_on_batch``: torn reads."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def publish(self, weights: list[Any]) -> None:
        self.model.set_weights(weights)

    def predict(self, x: Any) -> Any:
        return self.model.predict_on_batch(x)


class WriterLockOnlyPublisher(UnlockedPublisher):
    """Only publish takes the lock; readers never ask for it."""

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.lock = threading.Lock()

    def publish(self, weights: list[Any]) -> None:
        with self.lock:
            self.model.set_weights(weights)


class LockPerCallPublisher(UnlockedPublisher):
    """A fresh lock in each method: no two calls ever share one."""

    def publish(self, weights: list[Any]) -> None:
        with threading.Lock():
            self.model.set_weights(weights)

    def predict(self, x: Any) -> Any:
        with threading.Lock():
            return self.model.predict_on_batch(x)


class LockedReferencePublisher(UnlockedPublisher):
    """The reader locks only to fetch the model; the weights change in place under its pass."""

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.lock = threading.Lock()

    def publish(self, weights: list[Any]) -> None:
        with self.lock:
            self.model.set_weights(weights)

    def predict(self, x: Any) -> Any:
        with self.lock:
            model = self.model
        return model.predict_on_batch(x)


class SwapBeforeSetPublisher(UnlockedPublisher):
    """Build-then-swap done backwards: the new model is served before its weights are set."""

    def publish(self, weights: list[Any]) -> None:
        self.model = keras.models.clone_model(self.model)
        self.model.set_weights(weights)


class VersionFirstCopiesPublisher:
    """Per-thread copies keyed by a version number that is stored before the weights."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.weights = model.get_weights()
        self.version = 0
        self.local = threading.local()

    def publish(self, weights: list[Any]) -> None:
        self.version += 1
        self.weights = weights

    def predict(self, x: Any) -> Any:
        local = self.local
        if not hasattr(local, "model"):
            local.model = keras.models.clone_model(self.model)
            local.version = -1
        if local.version != self.version:
            local.version = self.version
            local.model.set_weights(self.weights)
        return local.model.predict_on_batch(x)


class HandshakePublisher(UnlockedPublisher):
    """A readers-writer handshake without a lock: the writer raises a flag and waits for the
    readers to leave; a reader waits for the flag to drop, then counts itself in. A reader
    that saw the flag down and is about to count itself in, while the writer sees zero
    readers and starts writing, reads a model half written (issue #18, class 1: 0 in 3,000
    real trials under the GIL)."""

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.writing = False
        self.readers = 0

    def publish(self, weights: list[Any]) -> None:
        self.writing = True
        while self.readers:
            time.sleep(0)
        self.model.set_weights(weights)
        self.writing = False

    def predict(self, x: Any) -> Any:
        while self.writing:
            time.sleep(0)
        self.readers += 1
        try:
            return self.model.predict_on_batch(x)
        finally:
            self.readers -= 1


class LockedPublisher:
    """Correct (for the tests' reference, written like the lesson's first strategy)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()

    def publish(self, weights: list[Any]) -> None:
        with self.lock:
            self.model.set_weights(weights)

    def predict(self, x: Any) -> Any:
        with self.lock:
            return self.model.predict_on_batch(x)


class SemaphorePublisher:
    """Correct: a semaphore of one as the mutex, taken by hand with ``try``/``finally``."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._turn = threading.BoundedSemaphore(1)

    def publish(self, weights: list[Any]) -> None:
        self._turn.acquire()
        try:
            self._model.set_weights(weights)
        finally:
            self._turn.release()

    def predict(self, x: Any) -> Any:
        self._turn.acquire()
        try:
            return self._model.predict_on_batch(x)
        finally:
            self._turn.release()


#: Correct: readers share, the writer waits for them to leave and keeps new ones out. The
#: demo class's ``correct`` student submits this very cell.
ReadersWriterPublisher = demo_answer("demo/correct/03_variables.py", "ex_variables_publisher",
                                     "WeightPublisher", renamed="ReadersWriterPublisher",
                                     setup={"threading": threading})


class FirstReaderLocksPublisher:
    """Correct: the textbook readers-writer lock. The first reader in takes the writer's lock
    and the last reader out releases it, often on another thread (a ``Lock`` allows that); a
    second lock guards the count of readers."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.count_lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.readers = 0

    def publish(self, weights: list[Any]) -> None:
        with self.write_lock:
            self.model.set_weights(weights)

    def predict(self, x: Any) -> Any:
        with self.count_lock:
            self.readers += 1
            if self.readers == 1:
                self.write_lock.acquire()
        try:
            return self.model.predict_on_batch(x)
        finally:
            with self.count_lock:
                self.readers -= 1
                if self.readers == 0:
                    self.write_lock.release()


class UnlockedLeaveReadersWriterPublisher(ReadersWriterPublisher):
    """The demo's readers-writer lock, except that a reader counts itself out without the
    lock (it takes the lock only to wake the writer): two readers leaving at once lose a
    decrement, the count never gets back to zero, and the writer waits for ever. With one
    reader the count is never shared, so only two readers can show it."""

    def predict(self, x: Any) -> Any:
        with self.cond:
            while self.writing or self.writers_waiting:
                self.cond.wait()
            self.readers += 1
        try:
            return self.model.predict_on_batch(x)
        finally:
            self.readers -= 1
            with self.cond:
                if self.readers == 0:
                    self.cond.notify_all()


UnlockedLeaveReadersWriterPublisher.decided_by_construction = True  # explore, every run


class BuildThenSwapPublisher:
    """Correct: build and warm a new model, then publish it with one reference assignment."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._example = variables.probe(model)

    def publish(self, weights: list[Any]) -> None:
        fresh = keras.models.clone_model(self.model)
        fresh.set_weights(weights)
        fresh(self._example)
        self.model = fresh

    def predict(self, x: Any) -> Any:
        model = self.model
        return model(x)


class SnapshotCopiesPublisher:
    """Correct: per-thread copies; the (version, weights) pair is one tuple, swapped at once."""

    def __init__(self, model: Any) -> None:
        self._source = model
        self._latest = (0, model.get_weights())
        self._local = threading.local()
        self._build = threading.Lock()

    def publish(self, weights: list[Any]) -> None:
        version, _ = self._latest
        self._latest = (version + 1, [w.copy() for w in weights])

    def predict(self, x: Any) -> Any:
        local = self._local
        if not hasattr(local, "model"):
            with self._build:
                local.model = keras.models.clone_model(self._source)
            local.version = -1
        version, weights = self._latest
        if version != local.version:
            local.model.set_weights(weights)
            local.version = version
        return local.model(x)


class SharedBufferPublisher(UnlockedPublisher):
    """No lock, and every caller gets one output buffer that the next prediction overwrites:
    a torn output is soon overwritten by a whole one, before anyone looks at it again."""

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        self.out: Any = None

    def predict(self, x: Any) -> Any:
        y = self.model.predict_on_batch(x)
        if self.out is None or self.out.shape != y.shape:
            self.out = np.empty_like(y)
        np.copyto(self.out, y)
        return self.out


class IdKeyedCopiesPublisher:
    """Per-thread copies that tell a new version by the ``id`` of the list published: once
    a published list is dropped, CPython hands its memory (and so its ``id``) to the next list
    made, and a thread that synced with the dropped one takes the newer list for the one it
    already has (the ABA problem). Its copy then serves old weights for ever."""

    def __init__(self, model: Any) -> None:
        self._source = model
        self._latest = model.get_weights()
        self._local = threading.local()
        self._build = threading.Lock()

    def publish(self, weights: list[Any]) -> None:
        self._latest = weights

    def predict(self, x: Any) -> Any:
        local = self._local
        if not hasattr(local, "model"):
            with self._build:
                local.model = keras.models.clone_model(self._source)
            local.key = None
        latest = self._latest
        if id(latest) != local.key:
            local.model.set_weights(latest)
            local.key = id(latest)
        return local.model(x)


IdKeyedCopiesPublisher.decided_by_construction = True  # one thread, CPython's free list


class TimedWaitForWriterPublisher(ReadersWriterPublisher):
    """The demo's readers-writer lock, except that the writer waits at most 2 s for the
    readers to leave "so that a slow reader never blocks an update", then writes anyway: on a
    loaded machine a reader is still inside and gets a torn read (session 19's T: passed
    every run before; explored, the library's wait_for waited again after its wait gave up)."""

    writer_timeout: float | None = 2.0

    def publish(self, weights: list[Any]) -> None:
        with self.cond:
            self.writers_waiting += 1
            self.cond.wait_for(lambda: not self.writing and not self.readers,
                               timeout=self.writer_timeout)
            self.writers_waiting -= 1
            self.writing = True
        try:
            self.model.set_weights(weights)
        finally:
            with self.cond:
                self.writing = False
                self.cond.notify_all()


class WaitForWriterPublisher(TimedWaitForWriterPublisher):
    """Correct: the same writer with ``wait_for`` and no timeout; readers wait with a timeout
    in a loop, which gives up and waits again."""

    writer_timeout = None

    def predict(self, x: Any) -> Any:
        with self.cond:
            while self.writing or self.writers_waiting:
                self.cond.wait(timeout=0.5)
            self.readers += 1
        try:
            return self.model.predict_on_batch(x)
        finally:
            with self.cond:
                self.readers -= 1
                if self.readers == 0:
                    self.cond.notify_all()


TimedWaitForWriterPublisher.decided_by_construction = True  # explore's bounded search


WRONG_PUBLISHERS = [UnlockedPublisher, WriterLockOnlyPublisher, LockPerCallPublisher,
                    LockedReferencePublisher, HandshakePublisher, SharedBufferPublisher,
                    IdKeyedCopiesPublisher, UnlockedLeaveReadersWriterPublisher,
                    TimedWaitForWriterPublisher]
CORRECT_PUBLISHERS = [ReadersWriterPublisher, SemaphorePublisher, WaitForWriterPublisher]
#: Answers that build a model per publish or per thread: several seconds per grading run, so
#: the tests run them a few times only (see test_variables.py). Both wrong ones are found by
#: ``explore``, deterministically.
SLOW_WRONG_PUBLISHERS = [SwapBeforeSetPublisher, VersionFirstCopiesPublisher]
SLOW_CORRECT_PUBLISHERS = [BuildThenSwapPublisher, SnapshotCopiesPublisher]


# --------------------------------------------------------------------------- choose_publisher


def _measure(publisher_class: Any, make_model: Any, readers: int, updates: int,
             interval_s: float, *, versions_counted: int | None = None,
             stop_at_last_version: bool = False) -> dict[str, Any]:
    """A correct measurement: readers loop until the writer is done (shared by wrong choices).

    Wrong on request: ``versions_counted`` divides that many versions (not ``updates``) by the
    writer's time; ``stop_at_last_version`` stops a reader once it was served the last one.
    """
    model = make_model()
    publisher = publisher_class(model)
    x = variables.probe(model)
    weights = [variables.version_weights(v, model) for v in range(1, updates + 1)]
    done = threading.Event()
    results: list[list[bool]] = [[] for _ in range(readers)]
    writer_time: list[float] = []

    go = threading.Barrier(readers + 1)

    def reader(mine: list[bool]) -> None:
        go.wait()
        while not done.is_set():
            outputs = publisher.predict(x)
            mine.append(variables.is_torn(outputs))
            if (stop_at_last_version and not mine[-1]
                    and int(variables.read_versions(outputs).min()) == updates):
                return

    def writer() -> None:
        go.wait()
        start = time.perf_counter()
        for k, w in enumerate(weights):
            if k:
                time.sleep(interval_s)
            publisher.publish(w)
        writer_time.append(time.perf_counter() - start)
        done.set()

    threads = [threading.Thread(target=reader, args=(m,)) for m in results]
    threads.append(threading.Thread(target=writer))
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    reads = sum(len(m) for m in results)
    counted = updates if versions_counted is None else versions_counted
    return {"reads": reads, "torn": sum(sum(m) for m in results),
            "reads_per_s": reads / elapsed, "updates_per_s": counted / writer_time[0]}


def choose_ignoring_torn(candidates: Any, make_model: Any, *, readers: int, updates: int,
                         interval_s: float, min_updates_per_s: float) -> Any:
    """Measures right, but picks the fastest reader even when its reads are torn."""
    table = {n: _measure(c, make_model, readers, updates, interval_s)
             for n, c in candidates.items()}
    ok = [n for n in table if table[n]["updates_per_s"] >= min_updates_per_s]
    return max(ok, key=lambda n: table[n]["reads_per_s"], default=None), table


def choose_ignoring_update_rate(candidates: Any, make_model: Any, *, readers: int,
                                updates: int, interval_s: float, min_updates_per_s: float
                                ) -> Any:
    """Measures right, but forgets that the trainer must be able to publish often enough."""
    table = {n: _measure(c, make_model, readers, updates, interval_s)
             for n, c in candidates.items()}
    ok = [n for n in table if table[n]["torn"] == 0]
    return max(ok, key=lambda n: table[n]["reads_per_s"], default=None), table


def choose_fixed_reads(candidates: Any, make_model: Any, *, readers: int, updates: int,
                       interval_s: float, min_updates_per_s: float) -> Any:
    """Each reader makes a fixed 8 reads: they may stop long before the writer does."""
    table = {}
    for name, cls in candidates.items():
        model = make_model()
        publisher = cls(model)
        x = variables.probe(model)
        torn = [0] * readers
        reads = [0] * readers
        spans: list[float] = []

        def reader(i: int, publisher: Any = publisher, x: Any = x, torn: Any = torn,
                   reads: Any = reads) -> None:
            for _ in range(8):
                torn[i] += variables.is_torn(publisher.predict(x))
                reads[i] += 1

        def writer(publisher: Any = publisher, model: Any = model, spans: Any = spans) -> None:
            start = time.perf_counter()
            for v in range(1, updates + 1):
                if v > 1:
                    time.sleep(interval_s)
                publisher.publish(variables.version_weights(v, model))
            spans.append(time.perf_counter() - start)

        start = time.perf_counter()
        with ThreadPoolExecutor(readers + 1) as pool:
            for i in range(readers):
                pool.submit(reader, i)
            pool.submit(writer)
        elapsed = time.perf_counter() - start
        table[name] = {"reads": sum(reads), "torn": sum(torn), "reads_per_s": sum(reads) / elapsed,
                       "updates_per_s": updates / spans[0]}
    ok = [n for n in table if table[n]["torn"] == 0
          and table[n]["updates_per_s"] >= min_updates_per_s]
    return max(ok, key=lambda n: table[n]["reads_per_s"], default=None), table


def choose_sequential(candidates: Any, make_model: Any, *, readers: int, updates: int,
                      interval_s: float, min_updates_per_s: float) -> Any:
    """Times publishing, then times reading: nothing runs at the same time, nothing tears."""
    table = {}
    for name, cls in candidates.items():
        model = make_model()
        publisher = cls(model)
        x = variables.probe(model)
        start = time.perf_counter()
        for v in range(1, updates + 1):
            if v > 1:
                time.sleep(interval_s)
            publisher.publish(variables.version_weights(v, model))
        updates_per_s = updates / (time.perf_counter() - start)
        counts = [0] * readers
        torn = [0] * readers

        def reader(i: int, publisher: Any = publisher, x: Any = x, torn: Any = torn,
                   counts: Any = counts) -> None:
            for _ in range(3):
                torn[i] += variables.is_torn(publisher.predict(x))
                counts[i] += 1

        start = time.perf_counter()
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(readers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        reads = sum(counts)
        table[name] = {"reads": reads, "torn": sum(torn),
                       "reads_per_s": reads / (time.perf_counter() - start),
                       "updates_per_s": updates_per_s}
    ok = [n for n in table if table[n]["torn"] == 0
          and table[n]["updates_per_s"] >= min_updates_per_s]
    return max(ok, key=lambda n: table[n]["reads_per_s"], default=None), table


def choose_with_pool_and_flag(candidates: Any, make_model: Any, *, readers: int, updates: int,
                              interval_s: float, min_updates_per_s: float) -> Any:
    """Correct: a thread pool, readers poll the writer's future, counts kept per reader."""
    table = {}
    for name, cls in candidates.items():
        model = make_model()
        publisher = cls(model)
        x = variables.probe(model)
        weights = [variables.version_weights(v, model) for v in range(1, updates + 1)]

        go = threading.Barrier(readers + 1)

        def write(publisher: Any = publisher, weights: Any = weights, go: Any = go) -> float:
            go.wait()
            start = time.perf_counter()
            for k, w in enumerate(weights):
                if k:
                    time.sleep(interval_s)
                publisher.publish(w)
            return time.perf_counter() - start

        def read(writing: Any, publisher: Any = publisher, x: Any = x,
                 go: Any = go) -> tuple[int, int]:
            go.wait()
            reads = torn = 0
            while not writing.done():
                torn += variables.is_torn(publisher.predict(x))
                reads += 1
            return reads, torn

        start = time.perf_counter()
        with ThreadPoolExecutor(readers + 1) as pool:
            writing = pool.submit(write)
            results = [pool.submit(read, writing) for _ in range(readers)]
            counts = [r.result() for r in results]
            writer_s = writing.result()
        elapsed = time.perf_counter() - start
        reads = sum(c[0] for c in counts)
        table[name] = {"reads": reads, "torn": sum(c[1] for c in counts),
                       "reads_per_s": reads / elapsed, "updates_per_s": updates / writer_s}
    qualified = {n: m for n, m in table.items()
                 if m["torn"] == 0 and m["updates_per_s"] >= min_updates_per_s}
    best = sorted(qualified, key=lambda n: -qualified[n]["reads_per_s"])
    return (best[0] if best else None), table


def choose_with_locked_totals(candidates: Any, make_model: Any, *, readers: int, updates: int,
                              interval_s: float, min_updates_per_s: float) -> Any:
    """Correct: shared totals under a lock, the writer is the main thread, a flag list."""
    table = {}
    for name, cls in candidates.items():
        model = make_model()
        publisher = cls(model)
        x = variables.probe(model)
        totals = {"reads": 0, "torn": 0}
        lock = threading.Lock()
        running = [True]
        ready = threading.Semaphore(0)

        def reader(publisher: Any = publisher, x: Any = x, totals: Any = totals,
                   lock: Any = lock, running: Any = running, ready: Any = ready) -> None:
            ready.release()
            while running[0]:
                torn = variables.is_torn(publisher.predict(x))
                with lock:
                    totals["reads"] += 1
                    totals["torn"] += torn

        threads = [threading.Thread(target=reader) for _ in range(readers)]
        for t in threads:
            t.start()
        for _ in threads:
            ready.acquire()  # every reader is running before the first publish
        start = time.perf_counter()
        for v in range(1, updates + 1):
            publisher.publish(variables.version_weights(v, model))
            if v < updates:
                time.sleep(interval_s)
        writer_s = time.perf_counter() - start
        running[0] = False
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        table[name] = {**totals, "reads_per_s": totals["reads"] / elapsed,
                       "updates_per_s": updates / writer_s}
    best, best_rate = None, -1.0
    for n, m in table.items():
        if m["torn"] or m["updates_per_s"] < min_updates_per_s:
            continue
        if m["reads_per_s"] > best_rate:
            best, best_rate = n, m["reads_per_s"]
    return best, table


def choose_more_than_the_threshold(candidates: Any, make_model: Any, *, readers: int,
                                   updates: int, interval_s: float, min_updates_per_s: float
                                   ) -> Any:
    """Measures right, but asks for more than ``min_updates_per_s`` where the exercise says
    "at least": a candidate exactly at the threshold is turned away (the boundary mutant)."""
    table = {n: _measure(c, make_model, readers, updates, interval_s)
             for n, c in candidates.items()}
    ok = [n for n in table if table[n]["torn"] == 0
          and table[n]["updates_per_s"] > min_updates_per_s]
    return max(ok, key=lambda n: table[n]["reads_per_s"], default=None), table


def _choose_by_the_rule(table: dict[str, dict[str, Any]], min_updates_per_s: float) -> Any:
    """The exercise's rule on a table: most reads per second, no torn read, enough updates."""
    ok = [n for n in table if table[n]["torn"] == 0
          and table[n]["updates_per_s"] >= min_updates_per_s]
    return max(ok, key=lambda n: table[n]["reads_per_s"], default=None)


def choose_counting_the_first_version(candidates: Any, make_model: Any, *, readers: int,
                                      updates: int, interval_s: float,
                                      min_updates_per_s: float) -> Any:
    """Divides ``updates + 1`` versions (the first one too) by the writer's time: the rate is
    inflated by half at two updates, so a publisher too slow for the trainer qualifies."""
    table = {n: _measure(c, make_model, readers, updates, interval_s,
                         versions_counted=updates + 1) for n, c in candidates.items()}
    return _choose_by_the_rule(table, min_updates_per_s), table


def choose_readers_stop_at_the_last_version(candidates: Any, make_model: Any, *,
                                            readers: int, updates: int, interval_s: float,
                                            min_updates_per_s: float) -> Any:
    """A reader stops once it has been served the last version, while the writer's last
    publish is still running: reads made during its end are never measured."""
    table = {n: _measure(c, make_model, readers, updates, interval_s,
                         stop_at_last_version=True) for n, c in candidates.items()}
    return _choose_by_the_rule(table, min_updates_per_s), table


# The last publish waits until each reader was served the last version twice: never, here;
# nor while readers run only after the writer is done.
choose_readers_stop_at_the_last_version.decided_by_construction = True
choose_sequential.decided_by_construction = True

WRONG_CHOICES = [choose_ignoring_torn, choose_ignoring_update_rate, choose_fixed_reads,
                 choose_sequential, choose_more_than_the_threshold,
                 choose_counting_the_first_version, choose_readers_stop_at_the_last_version]
CORRECT_CHOICES = [choose_with_pool_and_flag, choose_with_locked_totals]


# --------------------------------------------------------------------------- liars
# Answers whose values lie: about their type, about their count, about what they equal.


class _PretendVariable:
    """Claims to be a ``tf.Variable`` (its ``__class__`` says so); counts in Python."""

    def __init__(self) -> None:
        self.value = 0

    @property
    def __class__(self) -> type:  # type: ignore[override]
        return tf.Variable

    def numpy(self) -> int:
        return self.value


class PretendVariableCounter:
    """Updates its tf.Variable with the racy ``assign(v + 1)``; ``steps`` is no tf.Variable but
    says it is, and reports a count kept in a Python int under a lock."""

    def __init__(self) -> None:
        self.steps = _PretendVariable()
        self._variable = tf.Variable(0, dtype=tf.int64)
        self._lock = threading.Lock()

    def step(self) -> int:
        self._variable.assign(self._variable + 1)
        with self._lock:
            self.steps.value += 1
            return self.steps.value


class _ReportingVariable(ResourceVariable):
    """A real tf.Variable whose ``numpy()`` reports a count kept elsewhere, not its value."""

    reported = 0

    def numpy(self) -> Any:
        return np.int64(self.reported)


class ReportedCountCounter:
    """Updates the variable with the racy ``assign(v + 1)`` but makes ``steps.numpy()`` report
    a count kept under a lock."""

    def __init__(self) -> None:
        self.steps = _ReportingVariable(0, dtype=tf.int64)
        self._lock = threading.Lock()
        self._count = 0

    def step(self) -> int:
        self.steps.assign(self.steps + 1)
        with self._lock:
            self._count += 1
            self.steps.reported = self._count
            return self._count


class _Ticket:
    """A step "number" that is drawn only when someone converts it with ``int()``."""

    _numbers = itertools.count(1)
    _lock = threading.Lock()

    def __int__(self) -> int:
        with self._lock:
            return next(self._numbers)

    __index__ = __int__


class TicketObjectCounter:
    """Returns a ticket object whose ``int()`` draws a fresh number; the update is racy."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)
        _Ticket._numbers = itertools.count(1)

    def step(self) -> Any:
        self.steps.assign(self.steps + 1)
        return _Ticket()


class EqualsEverythingCounter:
    """Racy ``assign(v + 1)``; the number it returns says it equals any number."""

    def __init__(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64)

    def step(self) -> int:
        self.steps.assign(self.steps + 1)
        return EqualsEverything(int(self.steps.numpy()))


class ObjectOutputsPublisher(UnlockedPublisher):
    """Torn reads, served as an object array of values that say they equal anything."""

    def predict(self, x: Any) -> Any:
        outputs = np.asarray(self.model.predict_on_batch(x))
        return np.array([[EqualsEverythingFloat(v) for v in row] for row in outputs],
                        dtype=object)


class FloatSubclassOutputsPublisher(UnlockedPublisher):
    """Torn reads, served as lists of floats that say they equal anything."""

    def predict(self, x: Any) -> Any:
        outputs = np.asarray(self.model.predict_on_batch(x))
        return [[EqualsEverythingFloat(v) for v in row] for row in outputs]


def choose_ignoring_torn_lying_name(candidates: Any, make_model: Any, *, readers: int,
                                    updates: int, interval_s: float,
                                    min_updates_per_s: float) -> Any:
    """Measures right, picks the fastest reader even when torn, and returns its name as a
    string that says it equals any name."""
    chosen, table = choose_ignoring_torn(candidates, make_model, readers=readers,
                                         updates=updates, interval_s=interval_s,
                                         min_updates_per_s=min_updates_per_s)
    return EqualsEverythingStr(chosen or ""), table


def choose_with_lying_table(candidates: Any, make_model: Any, *, readers: int, updates: int,
                            interval_s: float, min_updates_per_s: float) -> Any:
    """Runs the measurement but reports numbers that equal anything and a choice that equals
    any name."""
    table = {}
    for name, cls in candidates.items():
        _measure(cls, make_model, readers, updates, interval_s)
        table[name] = {"reads": EqualsEverything(0), "torn": EqualsEverything(0),
                       "reads_per_s": EqualsEverythingFloat(1.0),
                       "updates_per_s": EqualsEverythingFloat(1.0)}
    return EqualsEverythingStr("none"), table


class _LyingPair(tuple):
    """A pair that unpacks to other values than it holds."""

    def __iter__(self) -> Any:
        return iter(self.real)


def choose_with_lying_pair(candidates: Any, make_model: Any, *, readers: int, updates: int,
                           interval_s: float, min_updates_per_s: float) -> Any:
    """Holds ``(None, {})`` but unpacks to a lying name and a lying table."""
    pair = _LyingPair((None, {}))
    pair.real = choose_with_lying_table(candidates, make_model, readers=readers,
                                        updates=updates, interval_s=interval_s,
                                        min_updates_per_s=min_updates_per_s)
    return pair


WRONG_COUNTERS += lying(PretendVariableCounter, ReportedCountCounter, TicketObjectCounter,
                        EqualsEverythingCounter)
WRONG_PUBLISHERS += lying(ObjectOutputsPublisher, FloatSubclassOutputsPublisher)
WRONG_CHOICES += lying(choose_ignoring_torn_lying_name, choose_with_lying_table,
                       choose_with_lying_pair)
