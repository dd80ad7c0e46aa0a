"""Lesson 01's small seeded Keras models, their inputs, reference outputs and serving calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from autograder.checks.cache import frozen, memo
from autograder.checks.warmup.settings import HIDDEN_UNITS, OUTPUT_UNITS


@keras.saving.register_keras_serializable(package="racelab")
class _SeededNormal(keras.initializers.Initializer):
    """Normal(0, 0.5) weights drawn by a stateless TensorFlow op from ``seed``.

    Keras's own ``RandomNormal(seed=...)`` keeps its state in a seed-generator variable that
    is created lazily on the first draw; when several threads build cold models at once, they
    create it together, and that can crash TensorFlow itself (a segfault, measured on TF 2.21),
    which would end the lesson's demonstrations with a dead kernel instead of the race they
    show. A stateless draw builds the same kind of ops, so a racy build keeps its window, but
    shares no state between threads. Registered with Keras, so a model made with it can be
    cloned (``keras.models.clone_model``) or saved and loaded, as students' copies are made.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        return tf.random.stateless_normal(tuple(shape), seed=[self.seed, 0], stddev=0.5,
                                          dtype=dtype or "float32")

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed}


def _initializer(seed: int) -> keras.initializers.Initializer:
    return _SeededNormal(seed)


def tiny_sequential(seed: int = 0, *, input_width: int | None = None) -> keras.Sequential:
    """A small Sequential model, unbuilt unless ``input_width`` is given.

    Its initializers are seeded, so two models made with the same seed get the same weights,
    whichever thread builds them.

    Args:
        seed: Picks the weights.
        input_width: When given, the model starts with ``keras.Input((input_width,))`` and is
            built at once.
    """
    layers: list[Any] = [] if input_width is None else [keras.Input((input_width,))]
    layers += [
        keras.layers.Dense(HIDDEN_UNITS, activation="relu",
                           kernel_initializer=_initializer(4 * seed),
                           bias_initializer=_initializer(4 * seed + 1)),
        keras.layers.Dense(OUTPUT_UNITS,
                           kernel_initializer=_initializer(4 * seed + 2),
                           bias_initializer=_initializer(4 * seed + 3)),
    ]
    return keras.Sequential(layers)


class BuildDelayDense(keras.layers.Dense):
    """``Dense`` whose ``build`` can take longer, to widen the window a racy build has.

    Args:
        units: As for ``Dense``.
        build_delay_s: Seconds ``build`` sleeps before creating the weights.
        on_build: Called when ``build`` starts (the grader uses it to send threads in).
        **kwargs: As for ``Dense``.
    """

    def __init__(self, units: int, *, build_delay_s: float = 0.0,
                 on_build: Callable[[], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self._build_delay_s = build_delay_s
        self._on_build = on_build

    def build(self, input_shape: Any) -> None:
        if self._on_build is not None:
            self._on_build()
        if self._build_delay_s:
            time.sleep(self._build_delay_s)
        super().build(input_shape)


class TinyNet(keras.Model):
    """A subclassed model whose layers create their weights on the first call.

    It has no ``build()`` method, so ``model.build(shape)`` marks it built without creating a
    single weight (Keras warns); only calling it on data creates them.

    Args:
        seed: Picks the weights (seeded initializers, as in :func:`tiny_sequential`).
        build_delay_s: Extra time each layer takes to create its weights. The grader sets it
            so that a thread arriving during a build is inside the window; the lesson's
            demonstrations leave it at 0.
        on_build: Called whenever a layer starts creating its weights.
    """

    def __init__(self, seed: int = 0, *, build_delay_s: float = 0.0,
                 on_build: Callable[[], Any] | None = None) -> None:
        super().__init__()
        self.hidden = BuildDelayDense(HIDDEN_UNITS, activation="relu",
                                      build_delay_s=build_delay_s, on_build=on_build,
                                      kernel_initializer=_initializer(4 * seed),
                                      bias_initializer=_initializer(4 * seed + 1))
        self.out = BuildDelayDense(OUTPUT_UNITS, build_delay_s=build_delay_s, on_build=on_build,
                                   kernel_initializer=_initializer(4 * seed + 2),
                                   bias_initializer=_initializer(4 * seed + 3))

    def call(self, x: Any) -> Any:
        return self.out(self.hidden(x))


def batches(seed: int, count: int, rows: int, features: int) -> list[np.ndarray]:
    """``count`` float32 batches of shape ``(rows, features)`` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(rows, features)).astype("float32") for _ in range(count)]


def _reference(make_model: Callable[[int], Any], seed: int,
               inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of a twin model, ``make_model(seed)``, built and run on this thread alone."""
    def build() -> tuple[np.ndarray, ...]:
        twin = make_model(seed)
        return tuple(frozen(twin(x)) for x in inputs)

    return _REFERENCES((make_model, seed, tuple((x.shape, x.tobytes()) for x in inputs)), build)


#: Reference outputs by model kind, seed and inputs: the graded trials are the same each run.
_REFERENCES = memo("the warmup checks' reference outputs")


def predict_on_batch(model: Any, batch: np.ndarray) -> Any:
    """``model.predict_on_batch(batch)``: one thread's request in the demonstrations."""
    return model.predict_on_batch(batch)


def predict(model: Any, batch: np.ndarray) -> Any:
    """``model.predict(batch, verbose=0)``: the call most tutorials show."""
    return model.predict(batch, verbose=0)


def call_model(model: Any, batch: np.ndarray) -> Any:
    """``model(batch)``: calling the model directly."""
    return model(batch)


def make_predict_function_only(model: Any, batch: np.ndarray) -> None:
    """``model.make_predict_function()``: the outdated "warmup" (builds and traces nothing)."""
    model.make_predict_function()


def built_sequential(seed: int) -> keras.Model:
    """:func:`tiny_sequential` with a ``keras.Input`` of width 8: built before any call."""
    return tiny_sequential(seed, input_width=8)
