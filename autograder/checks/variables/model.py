"""The versioned model: a Keras model whose forward pass reports each layer's version.

One forward pass returns every layer's version (:func:`read_versions`); a pass that saw
several versions is torn (:func:`is_torn`). The trials, the graders and lesson 07 use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograder.checks.variables.settings import LAYERS


def _kernel(index: int, width: int) -> np.ndarray:
    """Layer ``index``'s frozen kernel: the identity, except that it drops coordinate ``index``."""
    kernel = np.eye(width, dtype="float32")
    kernel[index, index] = 0.0
    return kernel


def _bias(index: int, version: float, width: int) -> np.ndarray:
    """Layer ``index``'s bias at ``version``: the version in coordinates ``0 .. index``."""
    return np.where(np.arange(width) <= index, np.float32(version), np.float32(0.0)).astype(
        "float32")


def versioned_model(layers: int = LAYERS, *, width: int | None = None) -> Any:
    """A built Keras model whose forward pass reports the version of each of its layers.

    ``layers`` ``Dense`` layers of ``width`` units (at least ``layers``; default ``layers``).
    Layer ``i`` has a frozen kernel (not trainable) that copies its input but drops coordinate
    ``i``, and a bias that holds the layer's version ``v_i`` in coordinates ``0 .. i``. After
    the last layer, output coordinate ``j < layers`` is ``v_j + v_{j+1} + ... + v_last``
    whatever the input, so :func:`read_versions` recovers every ``v_i`` from one output row.
    All layers start at version 0. Only the biases are trainable: SGD with learning rate 1 on
    the loss ``-sum(output)`` raises every layer's version by exactly 1 per step.

    Args:
        layers: Number of layers, hence of version numbers per pass.
        width: Units per layer; extra units only add parameters (and memory).
    """
    import keras

    width = layers if width is None else width
    if width < layers:
        raise ValueError(f"width must be at least layers ({layers}), got {width}")
    inputs = keras.Input((width,), name="requests")
    hidden = inputs
    for index in range(layers):
        dense = keras.layers.Dense(width, name=f"layer_{index}")
        hidden = dense(hidden)
        dense.kernel.assign(_kernel(index, width))
        dense.kernel.trainable = False
        dense.bias.assign(_bias(index, 0.0, width))
    return keras.Model(inputs, hidden, name=f"versioned_{layers}x{width}")


def _shape(model: Any | None) -> tuple[int, int]:
    if model is None:
        return LAYERS, LAYERS
    weights = model.weights
    return len(weights) // 2, int(weights[0].shape[-1])


def version_weights(version: int, model: Any | None = None) -> list[np.ndarray]:
    """The full weight list (``set_weights`` order) that puts every layer at ``version``.

    Args:
        version: The version number every layer gets.
        model: A :func:`versioned_model`, to match its size; default the default size.
    """
    layers, width = _shape(model)
    weights: list[np.ndarray] = []
    for index in range(layers):
        weights += [_kernel(index, width), _bias(index, version, width)]
    return weights


def probe(model: Any | None = None, rows: int = 1) -> np.ndarray:
    """A batch to send a :func:`versioned_model` (its content does not matter: zeros)."""
    _, width = _shape(model)
    return np.zeros((rows, width), dtype="float32")


def read_versions(outputs: Any, layers: int = LAYERS) -> np.ndarray:
    """The version each layer had during the forward pass that produced ``outputs``.

    Args:
        outputs: What the model returned for one batch (a tensor or an array; row 0 is read).
        layers: The model's number of layers.

    Returns:
        An int array, one version per layer, first layer first.
    """
    row = np.asarray(outputs, dtype="float64").reshape(-1, np.shape(outputs)[-1])[0][:layers]
    versions = np.append(row[:-1] - row[1:], row[-1])
    return np.rint(versions).astype(int)


def is_torn(outputs: Any, layers: int = LAYERS) -> bool:
    """True when the forward pass behind ``outputs`` mixed layers of different versions."""
    versions = read_versions(outputs, layers)
    return bool(versions.min() != versions.max())


def parameter_bytes(model: Any) -> int:
    """Bytes of one copy of ``model``'s weights, counted from their shapes and dtypes."""
    return int(sum(np.prod(w.shape) * np.dtype(w.dtype).itemsize for w in model.weights))


def compile_for_versions(model: Any) -> Any:
    """Compile a :func:`versioned_model` so that each ``fit`` step raises every version by 1."""
    import keras
    from keras import ops

    def minus_sum(y_true: Any, y_pred: Any) -> Any:
        return -ops.sum(y_pred, axis=-1)

    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), loss=minus_sum)
    return model


def version_step_gradients(model: Any) -> list[np.ndarray]:
    """Gradients for ``model.trainable_variables`` that one SGD step (rate 1) turns into +1."""
    layers, width = _shape(model)
    return [-_bias(index, 1.0, width) for index in range(layers)]
