"""Part 2, weight updates: clients served while a writer publishes new weights (stress)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks import variables
from autograder.checks.cache import memo
from autograder.checks.capstone.clients import (
    _close_quietly,
    _grader_thread,
    _is_grader_thread,
    _new_threads,
    wait_until,
)
from autograder.checks.capstone.models import (
    _answer,
    _row,
    reference_outputs,
    requests_for,
    same_answer,
    served_weights,
    serving_model,
)
from autograder.checks.capstone.settings import (
    FIRST_VERSION,
    HANDOVER_S,
    SEED,
    SMOKE_S,
    TIMEOUT_S,
    UPDATE_CLIENTS,
    UPDATE_FIRST_REQUESTS,
    UPDATE_GAP_S,
    UPDATE_TRIALS,
    UPDATES,
)
from autograder.checks.kit import describe_error, describe_threads, waiting_for_another, within
from autograder.harness import Result, stress, tamper


@dataclass
class UpdateTrial:
    service: Any
    layers: int
    published: list[tuple[int, float]] = field(default_factory=list)
    reads: list[list[tuple[float, Any]]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    before: set[threading.Thread] = field(default_factory=set)


class _VersionedPool:
    """A versioned model built once per process; each trial resets it to its first version."""

    def __init__(self) -> None:
        self.model = variables.versioned_model()
        self.weights = [variables.version_weights(v, self.model)
                        for v in range(FIRST_VERSION + UPDATES + 1)]
        self.example = variables.probe(self.model)[0]

    def fresh(self) -> Any:
        self.model.set_weights(self.weights[FIRST_VERSION])
        return self.model


_POOL = memo("the capstone's versioned model")


def _versioned_pool() -> _VersionedPool:
    return _POOL(None, _VersionedPool)


def _update_problems(trial: UpdateTrial) -> list[str]:
    published = dict(trial.published)
    last_version = FIRST_VERSION + len(published)
    if sorted(published) != list(range(FIRST_VERSION + 1, last_version + 1)):
        return [f"expected the writer's update_weights calls for versions "
                f"{FIRST_VERSION + 1} .. {FIRST_VERSION + UPDATES} to return, saw "
                f"{sorted(published)}"]
    for index, reads in enumerate(trial.reads):
        if not reads:
            return [f"expected client {index} to get answers, it got none"]
        last = FIRST_VERSION
        for start, output in reads:
            versions = variables.read_versions(output, trial.layers)
            if versions.min() != versions.max():
                return [f"expected every answer computed with one version of the weights, but "
                        f"client {index} got one computed with layers of versions "
                        f"{versions.tolist()} (first layer first): a torn answer, mixing two "
                        "weight versions (the model was being updated while it computed)"]
            seen = int(versions[0])
            if seen != FIRST_VERSION and seen not in published:
                return [f"client {index} got an answer of version {seen}, which was never "
                        f"published (the service started at version {FIRST_VERSION})"]
            newest = max((v for v, at in published.items() if at < start),
                         default=FIRST_VERSION)
            if seen < newest:
                return [f"client {index} sent a request after update_weights() of version "
                        f"{newest} had returned, and got an answer of version {seen}: expected "
                        f"version {newest} or newer (once update_weights returns, every later "
                        "request must use the new weights)"]
            if seen < last:
                return [f"expected versions never to go backwards, but client {index} got "
                        f"version {last} and then version {seen}"]
            last = seen
        if last != last_version:
            return [f"client {index}'s last request, sent after the writer was done, got "
                    f"version {last}: expected the last version published, {last_version}"]
    return []


def _quiet_update(trial: UpdateTrial, weights: list, example: Any) -> tuple[int, int]:
    """Once the clients are done and every thread the service started waits (idle), publish
    the first version's weights again and send one request: (the version published, the
    version of its answer's first layer). A service that keeps an update aside until it is
    idle (no request waiting) serves that request with the old weights, whatever the machine's
    load: the request finds its batcher already waiting."""
    service = [t for t in _new_threads(trial.before) if not _is_grader_thread(t)]
    wait_until(lambda: all(waiting_for_another(t) for t in service), HANDOVER_S)
    trial.service.update_weights(weights[FIRST_VERSION])
    output = _answer(trial.service.predict(example))
    return FIRST_VERSION, int(variables.read_versions(output, trial.layers).max())


def _reads_seen(trial: UpdateTrial) -> list[list]:
    """Every client's answers, run-length encoded for the judge: one entry ``[client, count,
    first start, last start, *row]`` per run of consecutive answers with the same output row
    (its first :data:`~autograder.checks.variables.LAYERS` numbers, which name each layer's
    version). Lossless for what the check decides (a run's answers share their versions, and
    the newest update before its last start is the newest before any of them), and short: a
    passing client sees each version in one run, so at most ``UPDATES + 1`` runs."""
    runs: list[list] = []
    for client, reads in enumerate(trial.reads):
        last: list | None = None
        for start, output in reads:
            row = np.asarray(output, dtype="float64").reshape(-1, np.shape(output)[-1])[0]
            values = [float(v) for v in row[:trial.layers]]
            if last is not None and last[4:] == values:
                last[1] += 1
                last[3] = start
                continue
            last = [client, 1, start, start, *values]
            runs.append(last)
    return runs


def run_weight_updates(service_class: Callable[..., Any], *, trials: int = UPDATE_TRIALS,
                       clients: int = UPDATE_CLIENTS, updates: int = UPDATES,
                       seed: int = SEED, observed: list | None = None) -> Result:
    """Per trial: a new service on the versioned model, ``clients`` clients and one writer.

    The writer calls ``update_weights`` with versions ``FIRST_VERSION + 1 ..`` one after the
    other; each client sends requests until the writer is done, then one more. Then, once the
    service is idle, one more update and one request (:func:`_quiet_update`). When
    ``observed`` is given, each trial that passes appends what it saw (for the judge): each
    update's version and when it returned, and the clients' answers (:func:`_reads_seen`).
    """
    pool = _versioned_pool()
    pool.model.predict_on_batch(pool.example[None])

    def setup() -> UpdateTrial:
        model = pool.fresh()
        before = set(threading.enumerate())
        trial = UpdateTrial(service_class(model, pool.example.copy()), variables.LAYERS,
                            before=before)
        trial.reads = [[] for _ in range(clients)]
        return trial

    def writer(trial: UpdateTrial) -> None:
        try:
            for version in range(FIRST_VERSION + 1, FIRST_VERSION + updates + 1):
                trial.service.update_weights(pool.weights[version])
                trial.published.append((version, time.perf_counter()))
        finally:
            trial.done.set()

    def client(index: int) -> Callable[[UpdateTrial], None]:
        def run(trial: UpdateTrial) -> None:
            mine = trial.reads[index]
            while True:
                finished = trial.done.is_set()
                start = time.perf_counter()
                mine.append((start, _answer(trial.service.predict(pool.example))))
                if finished:
                    return
                time.sleep(UPDATE_GAP_S)
        return run

    def check(trial: UpdateTrial) -> None:
        try:
            problems = _update_problems(trial)
            if problems:
                raise AssertionError(problems[0])
            published, got = _quiet_update(trial, pool.weights, pool.example)
            if got != published:
                raise AssertionError(
                    f"when the clients were done and the service was idle, update_weights() "
                    f"of version {published} returned and the next request got an answer of "
                    f"version {got}: expected version {published} (once update_weights "
                    "returns, every later request must use the new weights, also one that "
                    "arrives while the service waits)")
            if observed is not None:
                observed.append({"published": [[version, at] for version, at in trial.published],
                                 "reads": _reads_seen(trial), "quiet": [published, got]})
        finally:
            _close_quietly(trial.service)

    return stress(setup, [writer, *[client(i) for i in range(clients)]], check, trials=trials,
                  seed=seed, timeout_s=TIMEOUT_S)


#: What an update that raised on a new service means (the usual cause: no warm-up).
_UNBUILT_HINT = (
    "nothing in the contract says an update comes after the first request. A model that has "
    "never been called has no weights yet, so set_weights has nothing to set: warm the model "
    "in __init__, before any other thread can reach it (a warm-up left to the service's own "
    "thread may not have run yet when the update comes)")


def run_update_first(service_class: Callable[..., Any], *, seed: int = SEED) -> dict[str, Any]:
    """A trainer's update before any request: the contract does not order the two.

    A new service on a never-called :func:`~.models.serving_model` ``(seed + 3)``; a grader
    thread (the trainer) calls ``update_weights`` with the weights ``serving_model(seed + 4)``
    gets at its first call, before any request; then one client sends
    :data:`UPDATE_FIRST_REQUESTS` requests, one at a time. Each must be answered with the new
    weights, and nothing may raise. A service that leaves building the model to its first
    request (no warm-up) has no weights to set then: Keras raises, every time. Each step is
    bounded by :data:`SMOKE_S`.

    A warm-up left to a thread of the service's own (its batcher, warming as it starts) races
    the update: on an idle machine it usually builds the model first. So the model's build on
    any thread but the constructor's and the trainer's is held (:func:`_hold_other_builds`),
    and so is every thread the constructor starts, before it runs
    (:class:`_ThreadsHeldAtStart`), until the update returned, or the constructor or the
    trainer is seen waiting for another thread (a constructor that waits for its warm-up, an
    update that waits for it), or :data:`HANDOVER_S` passed: an update that does not wait for
    that warm-up meets a model with no weights, every run.

    Returns:
        For the judge: each answer (``outputs``), the new weights' output for its row
        (``expected``) and the model's own first weights' output for it (``first``: what a
        service that dropped the update answers).

    Raises:
        AssertionError: in the exercise's terms, when a step raised or hung, or an answer was
            not the new weights'.
    """
    model = serving_model(seed + 3)
    rows = requests_for(seed + 3, 1, UPDATE_FIRST_REQUESTS)[0]
    new = served_weights(seed + 4)
    expected = reference_outputs(seed + 4, rows)
    first = reference_outputs(seed + 3, rows)
    held: dict[str, Any] = {}
    updated = threading.Event()
    steps: dict[str, threading.Thread] = {}

    def released() -> bool:
        return updated.is_set() or any(thread.is_alive() and waiting_for_another(thread)
                                       for thread in list(steps.values()))

    _hold_other_builds(model, steps, released)

    def step(name: str, call: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            steps[name] = threading.current_thread()
            return call()
        return run

    start_hold = _ThreadsHeldAtStart(released)

    def construct() -> None:
        with start_hold:
            held.update(service=service_class(model, rows[0].copy()))

    try:
        _bounded_step("InferenceService(model, example) on a model never called",
                      step("constructor", construct))
        start_hold.verify()
        _bounded_step("a trainer thread called update_weights(weights) on a new service, "
                      "before any request, and it",
                      step("trainer", lambda: held["service"].update_weights(
                          [w.copy() for w in new])),
                      hint=_UNBUILT_HINT)
        updated.set()
        _bounded_step(f"{UPDATE_FIRST_REQUESTS} requests sent one at a time after that "
                      "update_weights() returned",
                      lambda: held.update(outputs=[_answer(held["service"].predict(x))
                                                   for x in rows]))
    finally:
        updated.set()
        start_hold.close()
        _close_quietly(held.get("service"))
    for index, (output, want, old) in enumerate(zip(held["outputs"], expected, first,
                                                    strict=True)):
        if not same_answer(output, want):
            stale = (" (the output of the model's first weights: the update was not served)"
                     if same_answer(output, old) else "")
            raise AssertionError(
                f"a trainer called update_weights(weights) on a new service before any "
                f"request; request {index}, sent after it returned, got "
                f"{np.round(np.asarray(output, dtype=float), 4).tolist()}{stale}, expected "
                f"the new weights' output {np.round(want, 4).tolist()} (once update_weights "
                "returns, every later request must use the new weights, also before the "
                "first request was served)")
    return {"outputs": [_row(output) for output in held["outputs"]],
            "expected": [_row(row) for row in expected], "first": [_row(row) for row in first]}


def _hold_other_builds(model: Any, steps: dict[str, threading.Thread],
                       released: Callable[[], bool]) -> None:
    """Hold ``model``'s build on any thread but ``steps``' (the constructor's and the
    trainer's) until ``released()`` (the update returned, or one of ``steps`` still running is
    seen waiting for another thread), or :data:`HANDOVER_S` passed. Every way of building a
    Keras model (a call, ``predict``, ``predict_on_batch``, ``build``) goes through its
    ``build``."""
    build = model.build

    def held_build(input_shape: Any = None) -> None:
        if threading.current_thread() not in steps.values():
            wait_until(released, HANDOVER_S)
        build(input_shape)

    model.build = tamper.opaque(held_build)


class _ThreadsHeldAtStart:
    """While inside, a thread started (the service's own, by its constructor) waits before
    its ``run()`` until ``released()`` or :data:`HANDOVER_S` passed.

    A batcher that warms the model under the model's lock, which ``update_weights`` also
    takes, made the build hold useless: the update waited on that plain lock (a wait
    :func:`~autograder.checks.kit.waiting_for_another` cannot see) until the hold gave up, and
    then found the model built; with real threads the update takes the lock first now and
    then. Held before it runs, the batcher has taken no lock when the update comes.

    The hold is the thread trace hook (``threading.settrace``), which graded code can clear:
    :meth:`verify` records it as an attempt on the grader when the hook was gone at the end,
    or a thread started inside never reached it.
    """

    def __init__(self, released: Callable[[], bool]) -> None:
        self._released = released
        self._checked_in: set[threading.Thread] = set()
        self._before: set[threading.Thread] = set()
        self._started: list[threading.Thread] = []
        self._kept = True
        self._previous: Any = None
        self._installed: Any = None

    def __enter__(self) -> _ThreadsHeldAtStart:
        self._previous = previous = threading.gettrace()
        self._before = set(threading.enumerate())
        released, checked_in = self._released, self._checked_in

        def hold(frame: Any, event: str, arg: Any) -> Any:
            checked_in.add(threading.current_thread())
            wait_until(released, HANDOVER_S)
            sys.settrace(previous)
            return previous(frame, event, arg) if previous is not None else None

        self._installed = tamper.opaque(hold)
        threading.settrace(self._installed)
        return self

    def __exit__(self, *exc: object) -> None:
        self._kept = threading.gettrace() is self._installed
        threading.settrace(self._previous)
        self._started = [thread for thread in threading.enumerate()
                         if thread not in self._before]

    def close(self) -> None:
        """Take the hold down if a constructor that never returned left it up."""
        if threading.gettrace() is self._installed:
            threading.settrace(self._previous)

    def verify(self) -> None:
        """Record an attempt when the hold was cleared (see the class)."""
        def reached() -> bool:
            return all(thread in self._checked_in or not thread.is_alive()
                       for thread in self._started)

        if not wait_until(reached, SMOKE_S) or not self._kept:
            tamper.record_attempt("starting the service's threads past the grader's hold "
                                  "(threading.settrace)")


def _bounded_step(what: str, call: Callable[[], Any], *, hint: str = "") -> Any:
    """``call()`` on a grader thread within :data:`SMOKE_S`: its result, or an AssertionError
    naming ``what`` when it hangs or raises."""
    outcome = within(call, SMOKE_S, name="grader-trainer", track=_grader_thread)
    if not outcome.finished:
        raise AssertionError(f"{what} did not return within {SMOKE_S:g} s. Where it is "
                             f"stuck:\n{describe_threads([outcome.thread])}")
    if outcome.error is not None:
        raise AssertionError(f"{what} raised {describe_error(outcome.error)}; expected it to "
                             f"work{': ' + hint if hint else ''}")
    return outcome.value
