"""Services a student might write for lesson 07 (capstone): wrong ones and correct ones.

Each wrong service breaks one graded part the way people really do (a lock around every call,
no warmup, weights written while the batcher computes, updates applied "later", weights set
on a model never called, a batcher that exits without serving what it holds, a batch taken
off the queue outside the lock, a closed-check and an append in two lock regions, a close
that leaves its thread running or deadlocks, one malformed request failing its whole batch,
a model copy per thread). The correct ones are written differently from the lesson's
solution (a queue with commands, a Condition with futures, a queue polled with a timeout).
``ConditionBatchService`` is the lesson's solution.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import queue
import threading
import time
import warnings

import numpy as np
import tensorflow as tf

from autograder.checks import capstone
from tests.checks.grading_runs import demo_answer
from tests.checks.liars import EqualsEverything, lying

# --------------------------------------------------------------------------- the solution


class _Request:
    __slots__ = ("x", "done", "result", "error")

    def __init__(self, x):
        self.x = x
        self.done = threading.Event()
        self.result = None
        self.error = None


class ConditionBatchService:
    """The lesson's solution: a Condition-guarded list, one batcher, a lock for the model."""

    max_batch = 32

    def __init__(self, model, example):
        self._model = model
        self._shape = np.shape(example)
        self.warm()
        self._model_lock = threading.Lock()
        self._cond = threading.Condition()
        self._pending = []
        self._closed = False
        self._requests = self._batches = self._errors = 0
        self._thread = threading.Thread(target=self._serve, name="batcher", daemon=True)
        self._thread.start()

    def warm(self):
        self._model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))

    def predict(self, x):
        request = _Request(np.asarray(x, dtype="float32"))
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._pending.append(request)
            self._cond.notify()
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.result

    def _take(self):
        """The next batch (up to max_batch waiting requests), or None once closed and empty."""
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if not self._pending:
                return None
            batch = self._pending[:self.max_batch]
            del self._pending[:self.max_batch]
            return batch

    def _serve(self):
        while (batch := self._take()) is not None:
            good = self._well_formed(batch)
            if good:
                self._compute(good)
            self._count(batch, good)
            self._wake(batch)

    def _well_formed(self, batch):
        """The batch's requests of the example's shape; the others get a ValueError."""
        for r in batch:
            if r.x.shape != self._shape:
                r.error = ValueError(f"expected shape {self._shape}, got {r.x.shape}")
        return [r for r in batch if r.x.shape == self._shape]

    def _count(self, batch, good):
        with self._cond:
            self._requests += len(batch)
            self._batches += self._counted_batches(good)
            self._errors += len(batch) - len(good)

    def _wake(self, batch):
        for r in batch:
            r.done.set()

    def _counted_batches(self, good):
        """The batches one taken batch counts: one model call, when it had a good request."""
        return int(bool(good))

    def _compute(self, good):
        with self._model_lock:
            out = np.asarray(self._model.predict_on_batch(np.stack([r.x for r in good])))
        for r, row in zip(good, out, strict=True):
            r.result = row

    def update_weights(self, weights):
        with self._model_lock:
            self._model.set_weights(weights)

    def stats(self):
        with self._cond:
            return {"requests": self._requests, "batches": self._batches,
                    "errors": self._errors}

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()


# --------------------------------------------------------------------------- correct, different


#: Correct: a queue.Queue carries requests and weight updates, so only the worker thread
#: touches the model; futures carry the answers; close() queues a sentinel and joins. The demo
#: class's ``correct`` student submits this very cell.
QueueCommandService = demo_answer("demo/correct/07_capstone.py", "ex_capstone_service",
                                  "InferenceService", renamed="QueueCommandService")


class FutureBatchService:
    """Correct: a deque and Condition, futures for answers, an RLock around the model.

    Built with ``model(x)`` rather than ``predict_on_batch``; warms with a batch of zeros.
    """

    def __init__(self, model, example, max_batch=16):
        self.model = model
        self.width = np.shape(example)[-1]
        self.max_batch = max_batch
        self.model(np.zeros((1, self.width), dtype="float32"))
        self.model_lock = threading.RLock()
        self.cv = threading.Condition(threading.Lock())
        self.waiting = collections.deque()
        self.open = True
        self.counts = {"requests": 0, "batches": 0, "errors": 0}
        self.thread = threading.Thread(target=self.run, name="micro-batcher", daemon=True)
        self.thread.start()

    def predict(self, x):
        x = np.asarray(x, dtype="float32")
        future = concurrent.futures.Future()
        with self.cv:
            if not self.open:
                raise RuntimeError("closed: no more requests")
            self.counts["requests"] += 1
            if x.shape != (self.width,):
                self.counts["errors"] += 1
                raise ValueError("wrong request shape")
            self.waiting.append((x, future))
            self.cv.notify()
        return future.result()

    def run(self):
        while True:
            with self.cv:
                self.cv.wait_for(lambda: self.waiting or not self.open)
                if not self.waiting:
                    return
                batch = [self.waiting.popleft()
                         for _ in range(min(self.max_batch, len(self.waiting)))]
                self.counts["batches"] += 1
            with self.model_lock:
                out = np.asarray(self.model(np.stack([x for x, _ in batch])))
            for (_, future), row in zip(batch, out, strict=True):
                future.set_result(row)

    def update_weights(self, weights):
        with self.model_lock:
            self.model.set_weights(weights)

    def stats(self):
        with self.cv:
            return dict(self.counts)

    def close(self):
        with self.cv:
            self.open = False
            self.cv.notify_all()
        self.thread.join()


class SpareModelSwapService(ConditionBatchService):
    """Correct: writes new weights into a spare copy of the model, outside the batcher's lock,
    and swaps the copies under it (the batcher holds it for a whole call, so the copy it
    reads is never written): two models, one extra copy."""

    def __init__(self, model, example):
        super().__init__(model, example)
        import keras

        self._spare = keras.models.clone_model(model)
        self._spare.set_weights(model.get_weights())
        self._update_lock = threading.Lock()

    def update_weights(self, weights):
        with self._update_lock:
            self._spare.set_weights(weights)
            with self._model_lock:
                self._model, self._spare = self._spare, self._model


class PollingBatchService(ConditionBatchService):
    """Correct: a queue.Queue its batcher polls every half second (``get(timeout=0.5)``) to
    see whether close() was called. Under the explorer each poll that runs out would sleep
    half a second for real, schedule after schedule, unless its timeouts are cut."""

    def __init__(self, model, example):
        self._queue = queue.Queue()
        self._stop = threading.Event()
        super().__init__(model, example)

    def predict(self, x):
        request = _Request(np.asarray(x, dtype="float32"))
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._queue.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.result

    def _take(self):
        while True:
            try:
                batch = [self._queue.get(timeout=0.5)]
            except queue.Empty:
                # close() refuses new requests before it sets _stop: once _stop is seen, a
                # request put before it is in the queue.
                if self._stop.is_set() and self._queue.empty():
                    return None
                continue
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            return batch

    def close(self):
        with self._cond:
            self._closed = True
        self._stop.set()
        self._thread.join()


class LocalSleepPollingService(ConditionBatchService):
    """Correct: its batcher polls the list every 0.2 s with a ``time`` imported inside the
    method, a name the cut timeouts' swap of the module's names never reaches. Explored, each
    poll slept for real and the search ran out of time (a correct service failed)."""

    def _take(self):
        import time as clock

        while True:
            with self._cond:
                if self._pending:
                    batch = self._pending[:self.max_batch]
                    del self._pending[:self.max_batch]
                    return batch
                if self._closed:
                    return None
            clock.sleep(0.2)


class TimedJoinService(ConditionBatchService):
    """Wrong (red team round 9, 14/14 before): close() joins the batcher with a 2 s timeout
    "so that close() never hangs": under load it returns while the batcher still runs, against
    "returns only when every thread the service started has ended". Explored, a timed join
    runs out first."""

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=2.0)


# Fails in schedule 1 of the explored close, every run. Session 18 saw it pass 3 grading runs of
# 3 in an isolated child after other wrong services: their ~100 threads left behind made the
# grader's snapshot of the live threads outlast FAIR_STEPS (found and mended in session 20).
TimedJoinService.decided_by_construction = True


class CountsAfterWakingService(ConditionBatchService):
    """Wrong (red team round 9, 14/14 before): the batcher wakes the batch's clients, then
    counts it: a client whose predict() returned (nothing in flight) can read stats() one
    batch short, against "exact whenever no request is in flight"."""

    def _serve(self):
        while (batch := self._take()) is not None:
            good = self._well_formed(batch)
            if good:
                self._compute(good)
            self._wake(batch)
            self._count(batch, good)


# Each fails the explored stats check in one seeded schedule, the same every run.
CountsAfterWakingService.decided_by_construction = True


class UnlockedCountService(ConditionBatchService):
    """Wrong (red team round 9, 14/14 before): predict() counts its request with a bare
    ``self._requests += 1`` outside any lock, a read-modify-write two clients can interleave
    (real threads lost 6 of 320 counts in 3 trials of 20 with a Counter's update)."""

    def predict(self, x):
        request = _Request(np.asarray(x, dtype="float32"))
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._pending.append(request)
            self._cond.notify()
        self._accepted()
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.result

    def _accepted(self):
        self._requests += 1

    def _count(self, batch, good):
        with self._cond:  # the requests were counted, unlocked, as they came
            self._batches += self._counted_batches(good)
            self._errors += len(batch) - len(good)


class CounterUpdateService(UnlockedCountService):
    """Wrong (session 19's c1b): counts its requests with ``Counter.update({"requests": 1})``
    outside any lock, "one call, so atomic"; it is a loop in the library's Python (read the
    count, add, store), and two clients at once can lose one."""

    def __init__(self, model, example):
        self._tally = collections.Counter()  # before the batcher starts
        super().__init__(model, example)

    def _accepted(self):
        self._tally.update({"requests": 1})

    def stats(self):
        return {**super().stats(), "requests": self._tally["requests"]}


UnlockedCountService.decided_by_construction = True
CounterUpdateService.decided_by_construction = True


# --------------------------------------------------------------------------- wrong: throughput


class LockPerCallService(capstone.GlobalLockService):
    """One global lock around every model call: safe, but every request is its own call."""


class PerThreadCopyService(capstone.PerThreadService):
    """A model copy per client thread: no lock on the model, but 16 copies for 16 clients."""


class FlatCombiningService(ConditionBatchService):
    """Flat combining (session 19's c80): a client queues its request, then takes the model
    lock and serves every request waiting, its own among them, in one call (or finds its
    request already served). Safe, but a request waits only for the one call before it: 1.28
    requests per call with 16 clients, 1.2-1.3x the global lock (session 19's variant: 1.56
    to 1.59, and one run of 4 crossed 2x). No thread of its own: ``close()`` only stops
    taking requests."""

    def __init__(self, model, example):
        self._model = model
        self._shape = np.shape(example)
        self.warm()
        self._model_lock = threading.Lock()
        self._cond = threading.Condition()
        self._pending = []
        self._closed = False
        self._requests = self._batches = self._errors = 0

    def predict(self, x):
        request = _Request(np.asarray(x, dtype="float32"))
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._pending.append(request)
        while not request.done.is_set():
            with self._model_lock:
                with self._cond:
                    batch, self._pending = self._pending, []
                good = self._well_formed(batch)
                if good:
                    out = np.asarray(self._model.predict_on_batch(np.stack([r.x for r in good])))
                    for r, row in zip(good, out, strict=True):
                        r.result = row
                self._count(batch, good)
                self._wake(batch)
        if request.error is not None:
            raise request.error
        return request.result

    def close(self):
        with self._cond:
            self._closed = True


class SkipsTheSlowLayerService(capstone.GlobalLockService):
    """Cheats the throughput check: one lock, one row per call, but through a model made of
    the served model's layers without its last one (the check's slow layer is an identity,
    so every answer is still right), sharing those layers (no extra weights)."""

    def __init__(self, model, example):
        import keras

        layers = list(getattr(model, "layers", []))
        if layers and layers[-1].name == "pause":
            model = keras.Sequential(layers[:-1])
        super().__init__(model, example)


class SlowsTheOtherServicesService(capstone.GlobalLockService):
    """Cheats the throughput check: slows the shared model's ``predict_on_batch`` for every
    later user (the global-lock service it is compared with), and calls the class's own."""

    def __init__(self, model, example):
        super().__init__(model, example)
        method = type(model).predict_on_batch
        if "predict_on_batch" not in vars(model):
            def slowed(x, _method=method, _model=model):
                time.sleep(0.02)
                return _method(_model, x)
            model.predict_on_batch = slowed
        self._fast = functools.partial(method, model)

    def predict(self, x):
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            self._counts["batches"] += 1
            return np.asarray(self._fast(x[None]))[0]


class ZerosWhenTimedService(capstone.GlobalLockService):
    """Cheats the throughput check: answers zeros, at once, when the model is the slow one."""

    def predict(self, x):
        layers = getattr(self._model, "layers", [])
        if layers and layers[-1].name == "pause":
            with self._lock:
                self._counts["requests"] += 1
                self._counts["batches"] += 1
            return np.zeros(4, dtype="float32")
        return super().predict(x)


# --------------------------------------------------------------------------- wrong: cold start


class LockFreeColdService(capstone.GlobalLockService):
    """"TensorFlow is thread-safe": no warmup and no lock; clients call the model directly."""

    def __init__(self, model, example):
        self._model = model
        self._shape = np.shape(example)
        self._lock = threading.Lock()
        self._counts = {"requests": 0, "batches": 0, "errors": 0}
        self._closed = False

    def predict(self, x):
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            self._counts["batches"] += 1
        return np.asarray(self._model.predict_on_batch(x[None]))[0]


class TwoBatchersNoWarmupService(ConditionBatchService):
    """One batcher per core, and no warmup: the first two batches build the model together."""

    def warm(self):
        pass

    def __init__(self, model, example):
        super().__init__(model, example)
        self._model_lock = _NoLock()
        self._second = threading.Thread(target=self._serve, name="batcher-2", daemon=True)
        self._second.start()

    def _compute(self, good):
        try:
            super()._compute(good)
        except Exception as error:  # a failed batch fails its requests, the batcher goes on
            for r in good:
                r.error = error

    def close(self):
        super().close()
        self._second.join()


class _NoLock:
    """Two batchers share the model without a lock ("predict only reads")."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --------------------------------------------------------------------------- wrong: updates


class UnlockedSwapService(ConditionBatchService):
    """Writes the new weights into the served model while the batcher is computing."""

    def update_weights(self, weights):
        self._model.set_weights(weights)


class IdleUpdateService(ConditionBatchService):
    """Keeps new weights aside and applies them when no request is waiting ("don't disturb").

    No answer is torn, but under steady load the update is not served after it returned.
    """

    def __init__(self, model, example):
        self._next_weights = None
        super().__init__(model, example)

    def update_weights(self, weights):
        self._next_weights = weights

    def _take(self):
        with self._cond:
            if not self._pending and self._next_weights is not None:
                self._model.set_weights(self._next_weights)
                self._next_weights = None
        return super()._take()


class PendingUpdateLostService(ConditionBatchService):
    """Keeps each update aside; before each batch the batcher reads the waiting weights,
    applies them, then clears them in another step: an update that arrives while another is
    applied is cleared unapplied (red team round 6, ``k1_lost_update``: 14/14 before; real
    threads practically never hit the window)."""

    def __init__(self, model, example):
        self._waiting_weights = None
        super().__init__(model, example)

    def update_weights(self, weights):
        with self._cond:
            self._waiting_weights = weights

    def _take(self):
        batch = super()._take()
        weights = self._waiting_weights
        if weights is not None:
            with self._model_lock:
                self._model.set_weights(weights)
            self._waiting_weights = None
        return batch


class PendingUpdateLostAssignService(PendingUpdateLostService):
    """``PendingUpdateLostService`` that writes each weight with ``assign`` instead of calling
    ``set_weights``: the same lost update."""

    def _take(self):
        batch = ConditionBatchService._take(self)
        weights = self._waiting_weights
        if weights is not None:
            with self._model_lock:
                for variable, value in zip(self._model.weights, weights, strict=True):
                    variable.assign(value)
            self._waiting_weights = None
        return batch


class FeignedHoldService(PendingUpdateLostService):
    """``PendingUpdateLostService`` that attacks the grader's mid-set step: a thread of its own
    keeps calling the hooks it finds behind the model's weights (the write gate's among them),
    so that the grader sees a write held and sends its second update while nothing is being
    written."""

    def __init__(self, model, example):
        super().__init__(model, example)
        cells = type(model.weights[0].assign).__call__.__closure__ or ()
        self.hooks = hooks = [cell.cell_contents for cell in cells if callable(cell.cell_contents)
                              and not isinstance(cell.cell_contents, type)]
        self._feigning = True

        def feign():
            while self._feigning:
                for hook in hooks:
                    hook()
                time.sleep(0.0005)

        threading.Thread(target=feign, name="feign", daemon=True).start()

    def close(self):
        self._feigning = False
        super().close()


class TimedUpdateSkipService(ConditionBatchService):
    """``update_weights`` waits at most 2 s for the model lock "so that a trainer never
    hangs", and warns and skips the update when it gives up: on a loaded machine a model call
    outlasts the wait and the update is lost (session 19's c2: passed every run before; the
    mid-call step held the call for 0.5 s, less than the 2 s)."""

    def update_weights(self, weights):
        if not self._model_lock.acquire(timeout=2.0):
            warnings.warn("update_weights: the model is busy; update skipped", stacklevel=2)
            return
        self._set_and_release(weights)

    def _set_and_release(self, weights):
        try:
            self._model.set_weights(weights)
        finally:
            self._model_lock.release()


class TimedUpdateRetryService(TimedUpdateSkipService):
    """Correct: ``update_weights`` waits for the model lock half a second at a time until it
    has it; no update is skipped."""

    def update_weights(self, weights):
        while not self._model_lock.acquire(timeout=0.5):
            pass
        self._set_and_release(weights)


class SetWeightsUnbuiltService(ConditionBatchService):
    """No warm-up: the batcher's first batch builds the model (on one thread, so the cold
    start passes), but an update sent before any request meets a model with no weights yet,
    and ``set_weights`` raises (mutation drop_warmup)."""

    def warm(self):
        pass


class BatcherWarmsService(ConditionBatchService):
    """Warms the model as the first thing its batcher thread does, not in ``__init__`` (session
    19's c30): an update sent as soon as the constructor returned meets a model with no weights
    when the batcher has not run yet. Real threads showed it in 1 trial of 60; the update-first
    step holds every build but the constructor's and the trainer's, so it fails every run."""

    def warm(self):
        pass

    def _serve(self):
        self._model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        super()._serve()


BatcherWarmsService.decided_by_construction = True


class BatcherWarmsUnderLockService(ConditionBatchService):
    """Warms the model on its batcher thread under the model's lock, which ``update_weights``
    also takes: an update that takes the lock before the batcher has run meets a model with no
    weights. The build hold alone let it pass: the update waited on the plain lock until the
    hold gave up, then found the model built."""

    def warm(self):
        pass

    def _serve(self):
        with self._model_lock:
            self._model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        super()._serve()


BatcherWarmsUnderLockService.decided_by_construction = True


class BatcherBuildsThroughTheClassService(ConditionBatchService):
    """Builds the model on its batcher thread through the class
    (``keras.Sequential.build(model, shape)``), which the model's own ``build`` hold never
    sees: an update that comes first meets a model with no weights."""

    def warm(self):
        pass

    def _serve(self):
        type(self._model).build(self._model, (None, *self._shape))
        super()._serve()


class BatcherWarmsBeforeReturnService(ConditionBatchService):
    """Correct: the batcher warms the model, and ``__init__`` waits until it has."""

    def warm(self):
        pass

    def __init__(self, model, example):
        self._warmed = threading.Event()
        super().__init__(model, example)
        self._warmed.wait()

    def _serve(self):
        self._model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        self._warmed.set()
        super()._serve()


# --------------------------------------------------------------------------- wrong: accounting


class DropsPartialBatchService(ConditionBatchService):
    """Stops at once when closed: the requests still waiting are never answered."""

    def _take(self):
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            batch = self._pending[:self.max_batch]
            del self._pending[:self.max_batch]
            return batch


class WindowDropsPartialService(DropsPartialBatchService):
    """Waits up to 20 ms for more requests before each model call (a batching window, as
    TF Serving's ``batch_timeout_micros``), and stops at once when closed.

    The same lost requests as :class:`DropsPartialBatchService`, but its window swallowed the
    close test's late requests into the first batch when they came 10 ms after the early
    ones and ``close()`` 5 ms later: that timed close test passed it in 10 runs of 10 on an
    idle machine (issue #32). Held inside the model, the first batch cannot take them.
    """

    window_s = 0.02

    def _take(self):
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            deadline = time.monotonic() + self.window_s
            while len(self._pending) < self.max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch = self._pending[:self.max_batch]
            del self._pending[:self.max_batch]
            return batch


class LeakyCloseService(ConditionBatchService):
    """close() refuses new requests but never wakes or joins the batcher: it waits forever."""

    def close(self):
        with self._cond:
            self._closed = True

    def _take(self):
        with self._cond:
            while not self._pending:
                self._cond.wait()
            batch = self._pending[:self.max_batch]
            del self._pending[:self.max_batch]
            return batch


class CloseWithoutJoinService(ConditionBatchService):
    """close() wakes the batcher and returns at once: the queued requests are answered after
    close() returned, by a thread close() never waited for (mutation drop_join)."""

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class CloseSleepsInsteadOfJoinService(ConditionBatchService):
    """close() sleeps a little where it should join: a guess at how long draining takes
    (mutation join_to_sleep)."""

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        time.sleep(0.01)


class CloseRefusesQueuedService(ConditionBatchService):
    """close() refuses what is still queued (RuntimeError) instead of answering it: the batch
    already in the model is answered, the requests accepted behind it are not (session 19's
    c5b)."""

    def close(self):
        with self._cond:
            self._closed = True
            queued, self._pending = self._pending, []
            self._cond.notify_all()
        for request in queued:
            request.error = RuntimeError("the service is closed")
            request.done.set()
        self._thread.join()


CloseRefusesQueuedService.decided_by_construction = True


class DeadlockCloseService(ConditionBatchService):
    """close() joins the batcher while holding the lock the batcher needs to finish."""

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            self._thread.join()


class UnlockedSliceService(ConditionBatchService):
    """Takes the batch off the queue after leaving the lock: a request appended between the
    slice and the store is dropped with the old list, and its caller waits forever (mutation
    shrink_region). A window of a few bytecodes: real threads practically never hit it."""

    def _take(self):
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if not self._pending:
                return None
        batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
        return batch


class NumpyOfCallSliceService(UnlockedSliceService):
    """``UnlockedSliceService``'s race, its model read as ``model(x).numpy()`` (a Keras call
    answers a tensor): on a stub whose call answered plain NumPy it did not work once, so its
    bookkeeping was never explored, and it passed."""

    def _compute(self, good):
        with self._model_lock:
            out = self._model(np.stack([r.x for r in good])).numpy()
        for r, row in zip(good, out, strict=True):
            r.result = row


NumpyOfCallSliceService.decided_by_construction = True


class TfFunctionService(ConditionBatchService):
    """The solution, its model called through a ``tf.function`` (one traced call per batch
    shape, as TensorFlow's performance guide suggests): correct."""

    def __init__(self, model, example):
        self._infer = tf.function(model, reduce_retracing=True)
        super().__init__(model, example)

    def _compute(self, good):
        with self._model_lock:
            out = self._infer(tf.convert_to_tensor(np.stack([r.x for r in good]))).numpy()
        for r, row in zip(good, out, strict=True):
            r.result = row


class TfFunctionSliceService(TfFunctionService, UnlockedSliceService):
    """``UnlockedSliceService``'s race, its model called through a ``tf.function``: the stub
    model met a symbolic tensor while the function traced, so the service never worked on it,
    its bookkeeping was never explored, and it passed."""


TfFunctionSliceService.decided_by_construction = True


class CheckThenAppendService(ConditionBatchService):
    """predict() checks "closed" in one lock region and appends in another: close() can run
    in between, the batcher ends with nothing queued, and the request appended after it is
    never answered (mutation split_region)."""

    def predict(self, x):
        request = _Request(np.asarray(x, dtype="float32"))
        with self._cond:
            if self._closed:
                raise RuntimeError("the service is closed")
        with self._cond:
            self._pending.append(request)
            self._cond.notify()
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.result


class WholeBatchFailsService(ConditionBatchService):
    """Stacks every waiting row: one malformed request makes the whole batch raise."""

    def _serve(self):
        while (batch := self._take()) is not None:
            try:
                with self._model_lock:
                    out = np.asarray(self._model.predict_on_batch(np.stack([r.x for r in batch])))
                for r, row in zip(batch, out, strict=True):
                    r.result = row
                failed = 0
            except ValueError as error:
                for r in batch:
                    r.error = error
                failed = len(batch)
            with self._cond:
                self._requests += len(batch)
                self._batches += 1
                self._errors += failed
            for r in batch:
                r.done.set()


# --------------------------------------------------------------------------- wrong: lying values


class _ReadLater:
    """A row that is computed only when someone reads it (``np.asarray`` calls ``__array__``)."""

    def __init__(self, compute, x):
        self._compute = compute
        self._x = x

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._compute(self._x), dtype=dtype)


class RetryWhenReadColdService(LockFreeColdService):
    """No warmup; a request that fails on the cold model answers a row computed when read."""

    def predict(self, x):
        try:
            return super().predict(x)
        except Exception:
            return _ReadLater(lambda row: np.asarray(self._model.predict_on_batch(row[None]))[0],
                              np.asarray(x, dtype="float32"))


class ReusedBufferSwapService(UnlockedSwapService):
    """Unlocked updates, and every answer a view of one buffer each batch overwrites whole."""

    def warm(self):
        self._model.predict_on_batch(np.zeros((self.max_batch, *self._shape), dtype="float32"))

    def _compute(self, good):
        rows = np.stack([r.x for r in good])
        padded = np.concatenate([rows, np.repeat(rows[:1], self.max_batch - len(rows), 0)])
        out = np.asarray(self._model.predict_on_batch(padded))
        if getattr(self, "_out", None) is None:
            self._out = np.empty_like(out)
        self._out[...] = out
        for i, r in enumerate(good):
            r.result = self._out[i]


class UncountedStatsService(ConditionBatchService):
    """Counts nothing: stats() answers counts equal to whatever they are compared with."""

    def stats(self):
        return {"requests": EqualsEverything(0), "batches": EqualsEverything(0),
                "errors": EqualsEverything(0)}


class ComputeWhenReadService(capstone.GlobalLockService):
    """Answers at once with a row computed (under the lock) only when someone reads it."""

    def predict(self, x):
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            if x.shape != self._shape:
                self._counts["errors"] += 1
                raise ValueError(f"expected a request of shape {self._shape}, got {x.shape}")
            self._counts["batches"] += 1
        return _ReadLater(self._compute_one, x)

    def _compute_one(self, x):
        with self._lock:
            return np.asarray(self._model.predict_on_batch(x[None]))[0]



class GraderNamedLeakService(LeakyCloseService):
    """LeakyCloseService whose batcher, never joined, is named like the grader's threads."""

    def __init__(self, model, example):
        super().__init__(model, example)
        self._thread.name = "grader-batcher"


class _DeadLookingThread(threading.Thread):
    """A thread that says it is not alive."""

    def is_alive(self):
        return False


class DeadLookingLeakService(LeakyCloseService):
    """LeakyCloseService whose batcher, never joined, says it is not alive."""

    def __init__(self, model, example):
        super().__init__(model, example)
        self._thread.__class__ = _DeadLookingThread


lying(RetryWhenReadColdService, ReusedBufferSwapService, UncountedStatsService,
      GraderNamedLeakService, DeadLookingLeakService, ComputeWhenReadService,
      SkipsTheSlowLayerService, SlowsTheOtherServicesService, ZerosWhenTimedService)
class ReshapingService(ConditionBatchService):
    """Reshapes each request to the example's shape first, "to accept (1, 8) rows": a request
    of the wrong shape with the right number of values is answered, not refused with
    ValueError (only a row of the wrong width is refused)."""

    def predict(self, x):
        row = np.asarray(x, dtype="float32")
        try:
            row = row.reshape(self._shape)
        except ValueError:
            pass  # refused by the batcher, as a malformed request
        return super().predict(row)


class BatchesEveryTakeService(ConditionBatchService):
    """Counts a batch for every batch it takes, even one of only malformed requests that no
    model call answered ("batches" is model calls made)."""

    def _counted_batches(self, good):
        return 1


BatchesEveryTakeService.decided_by_construction = True  # a lone malformed request, any run
UnlockedSwapService.decided_by_construction = True  # torn by the update held mid-call
PendingUpdateLostService.decided_by_construction = True  # held while it applies an update
PendingUpdateLostAssignService.decided_by_construction = True  # the same, held at assign
LockPerCallService.decided_by_construction = True  # one model call per request, every run
ReusedBufferSwapService.decided_by_construction = True  # the same
ReshapingService.decided_by_construction = True  # the reshape answers it on any schedule
TimedUpdateSkipService.decided_by_construction = True  # the mid-call step, cut timeouts
TimedUpdateRetryService.decided_by_construction = False  # correct: not inherited


WRONG_COLD = [LockFreeColdService, TwoBatchersNoWarmupService, RetryWhenReadColdService]
WRONG_UPDATES = [UnlockedSwapService, IdleUpdateService, ReusedBufferSwapService,
                 SetWeightsUnbuiltService, BatcherWarmsService, BatcherWarmsUnderLockService,
                 PendingUpdateLostService,
                 PendingUpdateLostAssignService, TimedUpdateSkipService]
WRONG_ACCOUNTING = [DropsPartialBatchService, WindowDropsPartialService, LeakyCloseService,
                    DeadlockCloseService, WholeBatchFailsService, UncountedStatsService,
                    GraderNamedLeakService, DeadLookingLeakService, CloseWithoutJoinService,
                    CloseSleepsInsteadOfJoinService, CloseRefusesQueuedService,
                    UnlockedSliceService, NumpyOfCallSliceService,
                    TfFunctionSliceService,
                    CheckThenAppendService, ReshapingService, BatchesEveryTakeService,
                    CountsAfterWakingService, UnlockedCountService, CounterUpdateService,
                    TimedJoinService]
WRONG_THROUGHPUT = [LockPerCallService, PerThreadCopyService, ComputeWhenReadService,
                    SkipsTheSlowLayerService, SlowsTheOtherServicesService, ZerosWhenTimedService,
                    FlatCombiningService]
CORRECT = [ConditionBatchService, QueueCommandService, FutureBatchService, PollingBatchService,
           SpareModelSwapService, TimedUpdateRetryService]
