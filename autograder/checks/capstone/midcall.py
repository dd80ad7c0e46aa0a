"""Part 2, updates lined up with a model call or another update, every time, not by luck.

The stress trials (:mod:`.updates`) catch a service that writes the weights a running model
call reads only when a ``set_weights`` happens to land in the few microseconds in which the
call reads its variables: real threads almost never line up so (an unlocked swap passed 1
grading run of 20). Here the grader lines them up. The served model is lesson 03's versioned
model with two changes: each layer reads its weights only once its input is computed (Keras
and TensorFlow otherwise read every variable when the call starts), and a gate after the
first half of the layers, which holds one call there once armed (waiting on an event: it
releases the GIL, as waiting for a device does). The grader sends one request, waits until
its call is held at the gate, calls ``update_weights`` on a trainer thread and waits (bounded)
for it to return, then lets the call go on. A service that wrote the new weights into the
model that call is reading answers with its first half at the old version and its second
half at the new one, every run; a service that waits for the call, or writes other weights
and swaps them in between calls, answers one version.

The same model can hold an update as it is about to write a weight, before it writes anything
(:func:`run_update_mid_set`): a second update then comes while the first is being applied,
and must not be lost.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks import variables
from autograder.checks.cache import memo
from autograder.checks.capstone.clients import _close_quietly, _grader_thread, _start
from autograder.checks.capstone.models import CallGate, _answer, _row
from autograder.checks.capstone.settings import FIRST_VERSION, MID_CALL_WAIT_S, SMOKE_S
from autograder.checks.capstone.updates import _bounded_step
from autograder.checks.kit import describe_error, describe_threads, within
from autograder.checks.timeouts import cut_timeouts
from autograder.harness.tamper import opaque


def _held_only_from(gate: CallGate, caller_ok: Callable[[types.CodeType], bool]
                    ) -> Callable[..., Any]:
    """``gate`` behind an :func:`~autograder.harness.tamper.opaque` hook that holds only the
    calls ``caller_ok`` accepts by the calling code: the model's own. Graded code can find the
    hook through the model's classes; calling it to feign a held call (and let the grader's
    second update come while nothing is written) only passes through."""
    def run(value: Any = None) -> Any:
        caller = sys._getframe(2).f_code  # run <- the opaque hook <- its caller
        return gate(value) if caller_ok(caller) else value

    return opaque(run)


def _gated_versioned_model(gate: CallGate, set_gate: CallGate) -> Any:
    """:func:`~autograder.checks.variables.versioned_model`'s layers, each reading its weights
    after its input is computed, with ``gate`` run between the two halves, and ``set_gate``
    run by every write of a weight (``assign``: ``set_weights`` on the model or a layer writes
    through it too), before it writes.

    The classes are made here, so a clone of the model (``keras.models.clone_model``) runs
    the same gates; each holds only the model's own calls (:func:`_held_only_from`).
    """
    import keras
    import tensorflow as tf

    class GatedWrite:
        """A weight's ``assign``, which passes ``set_gate`` before it writes."""

        def __init__(self, assign: Callable[..., Any]) -> None:
            self._assign = assign

        def __call__(self, value: Any) -> Any:
            before_writing()
            return self._assign(value)

    before_writing = _held_only_from(set_gate,
                                     lambda code: code is GatedWrite.__call__.__code__)
    tensorflow = os.path.join(os.path.dirname(tf.__file__), "")
    in_the_model = _held_only_from(gate, lambda code: code.co_filename.startswith(tensorflow))

    class InOrderDense(keras.layers.Dense):
        def build(self, input_shape: Any) -> None:
            super().build(input_shape)
            for weight in self.weights:
                weight.assign = GatedWrite(weight.assign)

        def call(self, x: Any) -> Any:
            with tf.control_dependencies([x]):
                return super().call(x)

    class Gate(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            y = tf.numpy_function(in_the_model, [x], tf.float32, stateful=True)
            y.set_shape(x.shape)
            return y

        def compute_output_shape(self, shape: Any) -> Any:
            return shape

    layers = variables.LAYERS
    inputs = keras.Input((layers,), name="requests")
    hidden = inputs
    for index in range(layers):
        hidden = InOrderDense(layers, name=f"layer_{index}")(hidden)
        if index == layers // 2 - 1:
            hidden = Gate(name="gate")(hidden)
    return keras.Model(inputs, hidden, name="versioned_gated")


class _GatedPool:
    """The gated model built once per process; each run resets it to its first version."""

    def __init__(self) -> None:
        self.gate = CallGate(SMOKE_S)
        self.set_gate = CallGate(SMOKE_S)
        self.model = _gated_versioned_model(self.gate, self.set_gate)
        self.weights = [variables.version_weights(v, self.model)
                        for v in (FIRST_VERSION, FIRST_VERSION + 1, FIRST_VERSION + 2)]
        self.example = variables.probe(self.model)[0]
        self.model.set_weights(self.weights[0])
        self.model.predict_on_batch(self.example[None])

    def fresh(self) -> Any:
        self.gate.release()
        self.set_gate.release()
        self.model.set_weights(self.weights[0])
        return self.model


_POOL = memo("the capstone's gated versioned model")


def _timeouts_cut(run: Callable[[Callable[..., Any]], dict[str, Any]]
                  ) -> Callable[[Callable[..., Any]], dict[str, Any]]:
    """``run(service_class)`` with the answer's timeouts cut, its locks' included."""
    @functools.wraps(run)
    def cut(service_class: Callable[..., Any]) -> dict[str, Any]:
        with cut_timeouts(service_class, locks=True):
            return run(service_class)

    return cut


@_timeouts_cut
def run_update_mid_call(service_class: Callable[..., Any]) -> dict[str, Any]:
    """One request held halfway through its model call while a trainer updates the weights.

    The answer's timeouts are cut meanwhile, its locks' timed acquires included
    (:func:`~autograder.checks.timeouts.cut_timeouts` with ``locks``): a timed wait that gives
    up while the call is held gives up here, whatever its timeout, as on a loaded machine.

    A new service on the gated versioned model at version :data:`FIRST_VERSION`; one client
    sends a request; once its model call is held at the gate (its first half computed), a
    trainer thread calls ``update_weights`` with version ``FIRST_VERSION + 1`` and the grader
    waits up to :data:`MID_CALL_WAIT_S` for it to return (a service that waits for the call keeps
    it waiting), then lets the call go on. The answer must be of one version. Then one more
    request, sent once the update returned, must get the new version. Each step is bounded
    by :data:`SMOKE_S`.

    Returns:
        For the judge: the held request's answer (``held``), whether ``update_weights``
        returned while the call was held (``returned_while_held``), and the next request's
        answer (``after``).

    Raises:
        AssertionError: in the exercise's terms, when a step raised or hung, the call never
            reached the model, or an answer mixed versions or missed the update.
    """
    pool = _POOL(None, _GatedPool)
    model = pool.fresh()
    service = _bounded_step("InferenceService(model, example)",
                            lambda: service_class(model, pool.example.copy()))
    answers: list[np.ndarray] = []
    try:
        pool.gate.arm()
        client, errors = _start(lambda: answers.append(_answer(service.predict(pool.example))),
                                "client-0")
        if not pool.gate.entered.wait(SMOKE_S):
            pool.gate.release()
            client.join(SMOKE_S)
            raised = f" (predict() raised {describe_error(errors[0])})" if errors else ""
            raise AssertionError(
                f"a request sent to a new service was not computed by the model it was given "
                f"within {SMOKE_S:g} s{raised}; expected every request served by that model")
        trainer = within(lambda: service.update_weights(pool.weights[1]), MID_CALL_WAIT_S,
                         name="grader-trainer", track=_grader_thread)
        returned_while_held = trainer.finished
        pool.gate.release()
        client.join(SMOKE_S)
        if client.is_alive() or errors:
            raise AssertionError(
                "the request whose model call was held while update_weights() was called "
                + (f"raised {describe_error(errors[0])}" if errors else
                   f"was not answered within {SMOKE_S:g} s once the call went on. Where it is "
                   f"stuck:\n{describe_threads([client])}"))
        trainer.thread.join(SMOKE_S)
        if trainer.thread.is_alive():
            raise AssertionError(
                f"update_weights(), called while a model call was running, did not return "
                f"within {SMOKE_S:g} s after that call ended. Where it is stuck:\n"
                f"{describe_threads([trainer.thread])}")
        if trainer.error is not None:
            raise AssertionError(f"update_weights(), called while a model call was running, "
                                 f"raised {describe_error(trainer.error)}")
        held = answers[0]
        versions = variables.read_versions(held)
        if versions.min() != versions.max():
            raise AssertionError(
                f"a request's model call was held after its first {variables.LAYERS // 2} "
                f"layers while a trainer called update_weights() with version "
                f"{FIRST_VERSION + 1}, which {'returned' if returned_while_held else 'ran'} "
                f"before the call went on; the answer was computed with layers of versions "
                f"{versions.tolist()} (first layer first): a torn answer, mixing two weight "
                "versions. Expected one version: never write the weights a running model "
                "call reads (take the batcher's lock in update_weights, or set the new "
                "weights on another copy and swap it in between calls)")
        after = _bounded_step("a request sent after that update_weights() returned",
                              lambda: _answer(service.predict(pool.example)))
        got = variables.read_versions(after)
        if got.min() != got.max() or int(got[0]) != FIRST_VERSION + 1:
            raise AssertionError(
                f"update_weights() of version {FIRST_VERSION + 1}, called while a model call "
                f"was running, returned, and the next request got an answer of versions "
                f"{got.tolist()}: expected version {FIRST_VERSION + 1} in every layer (once "
                "update_weights returns, every later request must use the new weights; an "
                "update that gives up on a timed wait while a model call holds the lock is "
                "lost, and on a loaded machine any timeout can run out)")
        return {"held": _row(held), "returned_while_held": returned_while_held,
                "after": _row(after)}
    finally:
        pool.gate.release()
        _close_quietly(service)


def _wait_for(gate: CallGate, thread: threading.Thread) -> bool:
    """Wait (bounded) until ``gate`` holds a call or ``thread`` has ended; whether it holds."""
    for _ in range(int(SMOKE_S / 0.001)):
        if gate.entered.wait(0.001):
            return True
        if not thread.is_alive():
            return gate.entered.is_set()
    return gate.entered.is_set()


@_timeouts_cut
def run_update_mid_set(service_class: Callable[..., Any]) -> dict[str, Any]:
    """A second update while the first is being written into the model: the last one wins.

    The answer's timeouts are cut meanwhile, as in :func:`run_update_mid_call`.

    A new service on the gated versioned model at version :data:`FIRST_VERSION`; a trainer
    calls ``update_weights`` with version ``FIRST_VERSION + 1``. The model holds the first
    write of a weight that reaches it (``set_weights`` or a weight's ``assign``), before it
    writes anything: the trainer's own, or, for a service that keeps an update aside, the
    service thread's that applies it (a request is sent to make it). While it is held, a
    second trainer calls ``update_weights`` with version ``FIRST_VERSION + 2``; the grader
    waits up to :data:`MID_CALL_WAIT_S` for it to return, then lets the first write go on.
    Once both returned, a request must get the last version. A service that reads an update
    aside and clears it in two steps (an update that arrives in between is lost) fails every
    run. A service that writes no weight of the model (or of a clone) through Keras is not
    held, and this step decides nothing for it (``held`` is False).

    Returns:
        For the judge: whether a weight's write was held (``held``), and the answer of
        the request sent after both updates returned (``after``).

    Raises:
        AssertionError: in the exercise's terms, when a step raised or hung, or the request
            after both updates missed the last one.
    """
    pool = _POOL(None, _GatedPool)
    model = pool.fresh()
    service = _bounded_step("InferenceService(model, example)",
                            lambda: service_class(model, pool.example.copy()))
    first, second = FIRST_VERSION + 1, FIRST_VERSION + 2
    try:
        pool.set_gate.arm()
        trainer, errors = _start(lambda: service.update_weights(pool.weights[1]),
                                 "grader-trainer")
        held = _wait_for(pool.set_gate, trainer)
        client = None
        if not held and not trainer.is_alive() and not errors:
            client, _ = _start(lambda: service.predict(pool.example), "client-0")
            held = _wait_for(pool.set_gate, client)
        late, late_errors = None, []
        if held:
            late, late_errors = _start(lambda: service.update_weights(pool.weights[2]),
                                       "grader-trainer-2")
            late.join(MID_CALL_WAIT_S)
        pool.set_gate.release()
        for thread in (trainer, client, late):
            if thread is not None:
                thread.join(SMOKE_S)
                if thread.is_alive():
                    raise AssertionError(
                        f"while a trainer's update_weights() of version {first} was being "
                        f"written into the model, a call did not return within {SMOKE_S:g} s "
                        f"after the write went on. Where it is stuck:\n"
                        f"{describe_threads([thread])}")
        raised = [*errors, *late_errors]
        if raised:
            raise AssertionError(f"update_weights() raised {describe_error(raised[0])} while "
                                 "another update was being written into the model")
        if not held:
            _bounded_step(f"update_weights() of version {second}",
                          lambda: service.update_weights(pool.weights[2]))
        after = _bounded_step("a request sent after both update_weights() calls returned",
                              lambda: _answer(service.predict(pool.example)))
        got = variables.read_versions(after)
        if got.min() != got.max() or int(got[0]) != second:
            how = (f"a trainer's update_weights() of version {first} was held as it was "
                   f"about to write the model's weights, before it wrote anything, while a "
                   f"second trainer called update_weights() of version {second}" if held else
                   f"update_weights() of version {first}, then of version {second}, returned")
            raise AssertionError(
                f"{how}; once both had returned, the next request got an answer of versions "
                f"{got.tolist()}: expected version {second}, the last update (an update that "
                "arrived while another was being applied was lost: take the waiting weights "
                "and clear them under one lock, or apply each update under the lock the "
                "model's calls hold)")
        return {"held": held, "after": _row(after)}
    finally:
        pool.set_gate.release()
        _close_quietly(service)
