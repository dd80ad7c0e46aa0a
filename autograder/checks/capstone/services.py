"""Reference services: one global lock, one model copy per client thread, no lock at all."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np


class GlobalLockService:
    """The simplest safe service: one lock around every call of the model, one row per call."""

    def __init__(self, model: Any, example: np.ndarray) -> None:
        self._model = model
        self._shape = np.shape(example)
        model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        self._lock = threading.Lock()
        self._counts = {"requests": 0, "batches": 0, "errors": 0}
        self._closed = False

    def predict(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            if x.shape != self._shape:
                self._counts["errors"] += 1
                raise ValueError(f"expected a request of shape {self._shape}, got {x.shape}")
            self._counts["batches"] += 1
            return np.asarray(self._model.predict_on_batch(x[None]))[0]

    def update_weights(self, weights: list[np.ndarray]) -> None:
        with self._lock:
            self._model.set_weights(weights)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _fresh_layer(layer: Any) -> Any:
    """A new layer like ``layer`` (its initializers replaced: the weights are loaded anyway)."""
    config = layer.get_config()
    for key in [k for k in config if k.endswith("_initializer")]:
        config[key] = "zeros"
    return type(layer).from_config(config)


class PerThreadService:
    """One copy of the model per client thread: no lock around the model, one copy each.

    Each thread clones the model the first time it calls, and loads the latest published
    weights into its copy before a request when they changed. The copies live as long as
    their threads.
    """

    def __init__(self, model: Any, example: np.ndarray) -> None:
        self._model = model
        self._shape = np.shape(example)
        model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        self._lock = threading.Lock()
        self._weights = (0, model.get_weights())
        self._local = threading.local()
        self._counts = {"requests": 0, "batches": 0, "errors": 0}
        self._closed = False

    def _copy(self) -> Any:
        import keras

        local = self._local
        with self._lock:
            version, weights = self._weights
            if getattr(local, "model", None) is None:
                copy = keras.models.clone_model(self._model, clone_function=_fresh_layer)
                local.model, local.version = copy, -1
        if local.version != version:
            local.model.set_weights(weights)
            local.version = version
        return local.model

    def predict(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            if x.shape != self._shape:
                self._counts["errors"] += 1
                raise ValueError(f"expected a request of shape {self._shape}, got {x.shape}")
            self._counts["batches"] += 1
        return np.asarray(self._copy().predict_on_batch(x[None]))[0]

    def update_weights(self, weights: list[np.ndarray]) -> None:
        with self._lock:
            self._weights = (self._weights[0] + 1, [np.array(w) for w in weights])

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def close(self) -> None:
        with self._lock:
            self._closed = True


class DirectService:
    """No warmup, no lock: each client calls the shared model itself."""

    def __init__(self, model: Any, example: np.ndarray) -> None:
        self.model = model

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_on_batch(x[None]))[0]

    def close(self) -> None:
        pass
