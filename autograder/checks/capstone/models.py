"""The served model, the requests clients send, and the answers the checks compare with."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.checks import variables, warmup
from autograder.checks.cache import frozen, memo
from autograder.checks.capstone.settings import FEATURES, SEED, SLOW_CALL_S
from autograder.checks.plain import plain_array
from autograder.harness.tamper import opaque


def serving_model(seed: int = SEED) -> Any:
    """The served model: lesson 01's ``warmup.tiny_sequential(seed)``, never called.

    ``Sequential([Dense(16, relu), Dense(4)])`` without a ``keras.Input``: its weights are
    created by its first call, drawn from ``seed``, so two models made with the same seed get
    the same weights, whichever thread builds them.
    """
    return warmup.tiny_sequential(seed)


def requests_for(seed: int, clients: int, per_client: int, features: int = FEATURES
                 ) -> list[list[np.ndarray]]:
    """``per_client`` float32 request rows of width ``features`` for each of ``clients``."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(clients, per_client, features)).astype("float32")
    return [[rows[c, r] for r in range(per_client)] for c in range(clients)]


def reference_outputs(seed: int, rows: Sequence[np.ndarray]) -> np.ndarray:
    """What :func:`serving_model` ``(seed)`` answers for each row, run on this thread alone.

    Read-only, and cached per process by seed and rows for the grader's own calls (the
    graded runs repeat the same seeds).
    """
    stacked = np.stack(rows)
    return _REFERENCES((seed, stacked.shape, stacked.tobytes()),
                       lambda: frozen(serving_model(seed)(stacked)))


_REFERENCES = memo("the capstone's reference outputs")


def served_weights(seed: int) -> tuple[np.ndarray, ...]:
    """The weights :func:`serving_model` ``(seed)`` gets at its first call, in ``set_weights``
    order: what a trainer publishes (read-only, cached per process by seed, as
    :func:`reference_outputs`)."""
    def build() -> tuple[np.ndarray, ...]:
        model = serving_model(seed)
        model(np.zeros((1, FEATURES), dtype="float32"))
        return tuple(frozen(w) for w in model.get_weights())

    return _WEIGHTS(seed, build)


_WEIGHTS = memo("the capstone's published weights")


def same_answer(output: Any, expected: np.ndarray) -> bool:
    """True when ``output`` is the row ``expected`` (float32 round-off allowed)."""
    try:
        got = np.asarray(output, dtype="float64")
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=1e-4,
                                                            atol=1e-5))


def _answer(output: Any) -> np.ndarray:
    """What ``predict()`` returned, as plain numbers copied the moment it came back.

    Judged later, a value could still change (a view of a buffer the service reuses) or run
    the service's code (an object that computes its row when read); the copy does neither.

    Raises:
        NotPlainData: (an AssertionError) when it is not an array of numbers.
    """
    return np.array(plain_array(output, "predict()"))


def _row(values: Any) -> list[float] | None:
    """A row of numbers (an answer, or what it should be) as plain floats for the judge; None
    for no answer."""
    if values is None:
        return None
    return [float(v) for v in np.asarray(values, dtype="float64").reshape(-1)]


class CallGate:
    """Holds the first call that reaches it after :meth:`arm` (on whichever thread made it)
    until :meth:`release`, at most ``hold_s`` seconds. Calls before arming, and after the
    held one, pass through. It can be armed again once released.

    Args:
        hold_s: The longest a held call waits.
    """

    def __init__(self, hold_s: float) -> None:
        self._hold_s = hold_s
        self._lock = threading.Lock()
        self._armed = False
        self.entered = threading.Event()
        self._released = threading.Event()

    def arm(self) -> None:
        with self._lock:
            self.entered.clear()
            self._released.clear()
            self._armed = True

    def release(self) -> None:
        """Let the held call go on (and disarm, if no call came)."""
        with self._lock:
            self._armed = False
        self._released.set()

    def __call__(self, value: Any = None) -> Any:
        with self._lock:
            mine, self._armed = self._armed, False
            if mine:
                self.entered.set()
        if mine:
            self._released.wait(self._hold_s)
        return value


def _pause(x: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    time.sleep(float(seconds))
    return x


def _busy(x: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    end = time.perf_counter() + float(seconds)
    while time.perf_counter() < end:
        pass
    return x


def _recording(body: Callable[[np.ndarray, np.ndarray], np.ndarray],
               record: Callable[[np.ndarray], Any]) -> Callable[..., np.ndarray]:
    """``body`` that first hands ``record`` a copy of the rows it was given.

    Opaque: the model's layer holds only the hook, so no closure leads an answer to
    ``record`` (it could add the rows it never served).
    """
    def run(x: np.ndarray, seconds: np.ndarray) -> np.ndarray:
        record(np.array(x))
        return body(x, seconds)

    return opaque(run)


def slow_model(seed: int = SEED, seconds: float = SLOW_CALL_S, *, busy: bool = False,
               record: Callable[[np.ndarray], Any] | None = None) -> Any:
    """:func:`serving_model` whose every call takes ``seconds`` longer, whatever its batch size.

    The extra time is a ``tf.numpy_function`` layer at the end, so it runs in every entry
    point (``predict_on_batch``, ``model(x)``, ``predict``). By default it sleeps, releasing
    the GIL as waiting for a device does. With ``busy`` it spins in a Python loop instead,
    keeping the interpreter (the GIL) as Python pre- and post-processing of a call does:
    calls from several threads then do not overlap, and only serving several requests per
    call makes the model answer more of them. With ``record``, every call first hands it the
    rows the layer was given (the model's answers: the layer returns them unchanged).
    """
    import keras
    import tensorflow as tf

    body = _busy if busy else _pause
    if record is not None:
        body = _recording(body, record)

    class Pause(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            y = tf.numpy_function(body, [x, np.float32(seconds)], tf.float32, stateful=True)
            y.set_shape(x.shape)
            return y

        def compute_output_shape(self, shape: Any) -> Any:
            return shape

    model = serving_model(seed)
    model.add(Pause(name="pause"))
    return model


def weight_bytes(model: Any) -> int:
    """Bytes of one copy of ``model``'s weights."""
    return variables.parameter_bytes(model)
