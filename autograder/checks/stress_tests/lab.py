"""The notebook's "Measure it": predict throughput of a shared Keras model, three ways."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np


def predict_throughput(model: Any, data: np.ndarray, *, threads: int, calls: int,
                       strategy: str) -> float:
    """Requests per second of ``threads`` threads each calling predict ``calls`` times.

    ``strategy``: ``"lock"`` (one shared model, one lock around every call), ``"copies"`` (one
    cloned model per thread, no lock) or ``"shared"`` (one shared, warmed model, no lock).
    """
    import keras

    lock = threading.Lock()
    if strategy == "copies":
        models = []
        for _ in range(threads):
            copy = keras.models.clone_model(model)
            copy.set_weights(model.get_weights())
            copy.predict_on_batch(data)
            models.append(copy)
    else:
        models = [model] * threads
    barrier = threading.Barrier(threads + 1)

    def body(index: int) -> None:
        own = models[index]
        barrier.wait()
        for _ in range(calls):
            if strategy == "lock":
                with lock:
                    own.predict_on_batch(data)
            else:
                own.predict_on_batch(data)

    pool = [threading.Thread(target=body, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in pool:
        thread.join()
    return threads * calls / (time.perf_counter() - start)
