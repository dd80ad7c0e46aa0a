"""The notebook's "Measure it": predict throughput of a shared Keras model, three ways."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from autograder.checks.kit import run_threads


def predict_throughput(model: Any, data: np.ndarray, *, threads: int, calls: int,
                       strategy: str) -> float:
    """Requests per second of ``threads`` threads each calling predict ``calls`` times.

    ``strategy``: ``"lock"`` (one shared model, one lock around every call), ``"copies"`` (one
    cloned model per thread, no lock) or ``"shared"`` (one shared, warmed model, no lock). The
    threads are released together (the kit's :func:`run_threads`); a call that raises is
    raised here.
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

    def body(index: int) -> None:
        own = models[index]
        for _ in range(calls):
            if strategy == "lock":
                with lock:
                    own.predict_on_batch(data)
            else:
                own.predict_on_batch(data)

    return threads * calls / run_threads(body, threads)
