"""Counting the traces of a Keras model's predict function, and which threads ran them."""

from __future__ import annotations

import functools
import threading
from typing import Any

import keras
import numpy as np

from autograder.checks.warmup.models import tiny_sequential


class TraceLog:
    """Record every trace of ``model``'s predict function, and which thread ran it.

    Keras calls ``predict_step`` only while tracing the predict function (the traced graph then
    runs without Python), so each call is one trace. Attach it before the first call.

    Attributes:
        threads: The id of the thread that ran each trace, in order.
    """

    def __init__(self, model: keras.Model) -> None:
        self.threads: list[int] = []
        original = model.predict_step

        @functools.wraps(original)
        def predict_step(data: Any) -> Any:
            self.threads.append(threading.get_ident())
            return original(data)

        model.predict_step = predict_step
        self._model = model
        self._wrapper = predict_step
        self._function: Any = None
        self._function_count = 0

    @property
    def count(self) -> int:
        """Traces recorded since the last :meth:`reset`."""
        return len(self.threads)

    @property
    def intact(self) -> bool:
        """Whether the model still calls this log's ``predict_step`` and its predict function
        is still a ``tf.function`` (code that removes either would trace unseen)."""
        function = self._model.__dict__.get("predict_function")
        return self._model.__dict__.get("predict_step") is self._wrapper and (
            function is None or hasattr(function, "experimental_get_tracing_count"))

    def function_traces(self) -> int:
        """Traces of the model's predict function since the last :meth:`reset`, counted by
        TensorFlow itself (a second count, which no change to ``predict_step`` hides)."""
        function = self._model.__dict__.get("predict_function")
        count = _tracing_count(function)
        if function is not self._function:
            return max(1, count) if function is not None else 0
        return count - self._function_count

    @property
    def tracing_threads(self) -> int:
        """How many different threads traced since the last :meth:`reset`."""
        return len(set(self.threads))

    def reset(self) -> None:
        """Forget the traces recorded so far."""
        self.threads.clear()
        self._function = self._model.__dict__.get("predict_function")
        self._function_count = _tracing_count(self._function)


def _tracing_count(function: Any) -> int:
    counter = getattr(function, "experimental_get_tracing_count", None)
    return int(counter()) if callable(counter) else 0


@functools.cache
def first_call_traces() -> int:
    """Traces one first ``predict_on_batch`` on an unbuilt model costs, on one thread.

    Keras traces twice when the model is unbuilt: the first trace creates the weights.
    """
    model = tiny_sequential(0)
    log = TraceLog(model)
    model.predict_on_batch(np.zeros((2, 3), dtype="float32"))
    return log.count
