# Lesson 07 (capstone), a student who gets every part right, differently from the solution: one
# queue.Queue carries both requests and weight updates, so only the worker thread ever touches
# the model (no lock around it); answers come back through concurrent.futures.Future, and
# close() sends a sentinel behind the queued requests and joins the worker.

# %% ex_capstone_service
import collections
import concurrent.futures
import queue
import threading

import numpy as np


class InferenceService:
    """A queue.Queue; weight updates travel through it and the batcher applies them.

    Every touch of the model happens on the batcher thread, so no lock guards the model;
    ``update_weights`` waits until the batcher has applied the weights. ``close`` sends a
    sentinel behind the queued requests and joins.
    """

    _STOP = object()

    def __init__(self, model, example):
        self._model = model
        self._shape = tuple(np.shape(example))
        model.predict_on_batch(np.zeros((2, *self._shape), dtype="float32"))
        self._queue = queue.Queue()
        self._gate = threading.Lock()
        self._closed = False
        self._counts = collections.Counter(requests=0, batches=0, errors=0)
        self._worker = threading.Thread(target=self._loop, name="service-worker")
        self._worker.start()

    def _send(self, item):
        with self._gate:
            if self._closed:
                raise RuntimeError("InferenceService is closed")
            self._queue.put(item)

    def predict(self, x):
        x = np.asarray(x, dtype="float32")
        if x.shape != self._shape:
            with self._gate:
                self._counts["requests"] += 1
                self._counts["errors"] += 1
            raise ValueError(f"request shape {x.shape}, expected {self._shape}")
        future = concurrent.futures.Future()
        self._send(("predict", x, future))
        return future.result()

    def update_weights(self, weights):
        future = concurrent.futures.Future()
        self._send(("update", weights, future))
        future.result()

    def _loop(self):
        while True:
            items = [self._queue.get()]
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            rows = []
            for item in items + [None]:
                if item is not None and item is not self._STOP and item[0] == "predict":
                    rows.append(item)
                    continue
                if rows:  # serve the requests queued before this command, in one call
                    out = self._model.predict_on_batch(np.stack([x for _, x, _ in rows]))
                    with self._gate:
                        self._counts["requests"] += len(rows)
                        self._counts["batches"] += 1
                    for (_, _, future), row in zip(rows, np.asarray(out), strict=True):
                        future.set_result(row)
                    rows = []
                if item is self._STOP:
                    return
                if item is not None:
                    self._model.set_weights(item[1])
                    item[2].set_result(None)

    def stats(self):
        with self._gate:
            return dict(self._counts)

    def close(self):
        with self._gate:
            if not self._closed:
                self._closed = True
                self._queue.put(self._STOP)
        self._worker.join()
