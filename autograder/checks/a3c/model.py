"""The lesson's shared actor-critic network, its version stamps and its exact-arithmetic grid.

:func:`actor_critic` is a functional Keras model: a state of :data:`STATE_SIZE` numbers, a
``trunk`` of :data:`HIDDEN` ReLU units, and two heads read from the trunk, ``policy``
(:data:`ACTIONS` logits) and ``value`` (one number).

Two ways to make what a thread saw exact:

- **version stamps**: with every weight equal to ``k`` (:func:`set_version`) and the state
  ``ones`` (:func:`probe`), the trunk gives ``(STATE_SIZE + 1) * k`` in every unit and each
  head ``HIDDEN * (STATE_SIZE + 1) * k * k + k`` in every output (144 k^2 + k here, exact in
  float32 up to k = 300). A forward pass whose layers were at different versions gives
  anything else (:func:`version_of`). SGD with learning rate 1 and gradients of minus one
  (:func:`version_step`) raises every weight, so every version, by exactly one.
- **the grid**: weights on multiples of :data:`WEIGHT_STEP`, gradients on multiples of
  :data:`GRADIENT_STEP` in [-1, 1], learning rate :data:`LEARNING_RATE`. Every sum of a few
  hundred such updates is a float32 number, so SGD gives the same weights, bit for bit, in
  every order of the same updates (:func:`grid_weights`, :func:`grid_gradients`,
  :func:`expected_after`). A lost update shows as a difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autograder.checks.a3c.settings import (
    ACTIONS,
    GRADIENT_STEP,
    HIDDEN,
    LEARNING_RATE,
    SEED,
    STATE_SIZE,
    WEIGHT_STEP,
)


def actor_critic(seed: int = SEED) -> Any:
    """The shared actor-critic network: functional, built by ``keras.Input``, never called.

    Inputs ``(batch, STATE_SIZE)``; outputs ``[logits (batch, ACTIONS), value (batch, 1)]``.
    """
    import keras

    def init(offset: int) -> Any:
        return keras.initializers.GlorotUniform(seed=seed * 10 + offset)

    state = keras.Input(shape=(STATE_SIZE,), name="state")
    trunk = keras.layers.Dense(HIDDEN, activation="relu", name="trunk",
                               kernel_initializer=init(0))(state)
    logits = keras.layers.Dense(ACTIONS, name="policy", kernel_initializer=init(1))(trunk)
    value = keras.layers.Dense(1, name="value", kernel_initializer=init(2))(trunk)
    return keras.Model(state, [logits, value], name="actor_critic")


def probe(rows: int = 1) -> np.ndarray:
    """The state that reads a version: ``ones((rows, STATE_SIZE))``."""
    return np.ones((rows, STATE_SIZE), dtype="float32")


def states(seed: int, count: int) -> list[np.ndarray]:
    """``count`` one-row states (one-hot positions of a corridor), drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(count):
        state = np.zeros((1, STATE_SIZE), dtype="float32")
        state[0, rng.integers(STATE_SIZE)] = 1.0
        made.append(state)
    return made


def expected_output(version: float) -> float:
    """Every output of a forward pass of :func:`probe` on weights all equal to ``version``."""
    return HIDDEN * (STATE_SIZE + 1) * version * version + version


def version_weights(version: float, model: Any) -> list[np.ndarray]:
    """A weight list (``set_weights`` order) with every weight equal to ``version``."""
    return [np.full(tuple(w.shape), version, dtype="float32") for w in model.weights]


def set_version(model: Any, version: float) -> Any:
    """Set every weight of ``model`` to ``version``; return the model."""
    model.set_weights(version_weights(version, model))
    return model


def version_step(model: Any) -> list[np.ndarray]:
    """Gradients (``trainable_variables`` order) that one SGD step of rate 1 turns into +1."""
    return [np.full(tuple(v.shape), -1.0, dtype="float32") for v in model.trainable_variables]


def flat_outputs(outputs: Any) -> np.ndarray:
    """Every number of a forward pass's outputs (a list of arrays, a dict, one array), flat."""
    if isinstance(outputs, dict):
        outputs = [outputs[key] for key in sorted(outputs)]
    if isinstance(outputs, (list, tuple)):
        parts = [np.asarray(part, dtype="float64").reshape(-1) for part in outputs]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(outputs, dtype="float64").reshape(-1)


def version_of(outputs: Any) -> int | None:
    """The version every layer had in a forward pass of :func:`probe`, or None when torn.

    Torn: the outputs are not all ``expected_output(k)`` for one whole number ``k``.
    """
    values = flat_outputs(outputs)
    if values.size == 0 or values.min() != values.max():
        return None
    value = float(values[0])
    k = round((-1 + (1 + 4 * HIDDEN * (STATE_SIZE + 1) * value) ** 0.5)
              / (2 * HIDDEN * (STATE_SIZE + 1))) if value >= 0 else -1
    return k if k >= 0 and expected_output(k) == value else None


def weight_versions(weights: Sequence[Any]) -> list[float]:
    """The version of each weight in a weight list: its first number (all of one are equal)."""
    return [float(np.asarray(w).reshape(-1)[0]) for w in weights]


def grid_weights(model: Any, seed: int) -> list[np.ndarray]:
    """Random weights for ``model`` on the grid: multiples of WEIGHT_STEP in [-1, 1]."""
    rng = np.random.default_rng(seed)
    steps = int(1 / WEIGHT_STEP)
    return [(rng.integers(-steps, steps + 1, size=tuple(w.shape)) * WEIGHT_STEP)
            .astype("float32") for w in model.weights]


def grid_gradients(model: Any, seed: int, count: int) -> list[list[np.ndarray]]:
    """``count`` random gradient lists for ``model.trainable_variables``, on the grid."""
    rng = np.random.default_rng(seed)
    steps = int(1 / GRADIENT_STEP)
    return [[(rng.integers(-steps, steps + 1, size=tuple(v.shape)) * GRADIENT_STEP)
             .astype("float32") for v in model.trainable_variables] for _ in range(count)]


def expected_after(start: Sequence[np.ndarray], gradients: Sequence[Sequence[np.ndarray]],
                   learning_rate: float = LEARNING_RATE) -> list[np.ndarray]:
    """The weights plain SGD gives after every gradient in ``gradients``, in float64 (exact)."""
    total = [np.zeros(w.shape, dtype="float64") for w in start]
    for grads in gradients:
        for index, g in enumerate(grads):
            total[index] += g
    return [np.asarray(w, dtype="float64") - learning_rate * t
            for w, t in zip(start, total, strict=True)]
