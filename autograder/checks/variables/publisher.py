"""Exercise 2, WeightPublisher: readers served while a writer publishes new weights."""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.cache import memo
from autograder.checks.plain import plain_array
from autograder.checks.timeouts import CUT_CALLS, CUT_GLUE, cut_timeouts
from autograder.checks.variables.model import probe, read_versions, version_weights, versioned_model
from autograder.checks.variables.settings import (
    EXPLORE_LAYERS,
    EXPLORE_STRATEGY,
    EXPLORE_TIMEOUT_S,
    FIRST_VERSION,
    LAYERS,
    PUBLISHER_DEVIATIONS,
    PUBLISHER_EXPLORE_UPDATES,
    PUBLISHER_READERS,
    PUBLISHER_READERS_DEVIATIONS,
    PUBLISHER_SAMPLES,
    PUBLISHER_SCHEDULES,
    PUBLISHER_TRIALS,
    PUBLISHER_UPDATES,
    READ_GAP_S,
    SEED,
    TIMEOUT_S,
)
from autograder.harness import Result, explore, stress


def kept(outputs: Any) -> Any:
    """What a read returned, as it was when it returned: a copy of a numpy array (a predict that
    hands every caller one buffer it overwrites would otherwise show each read the last
    prediction made, whole, by the time the check decodes it). Anything else (a tensor, which
    cannot change) is kept as it is."""
    if isinstance(outputs, np.ndarray):
        return np.array(outputs, copy=True, subok=False)
    return outputs


@dataclass
class PublishTrial:
    """Shared state of one publisher run.

    Attributes:
        publisher: The answer under test.
        published: ``(version, seconds)`` when each ``publish`` returned.
        layers: The model's number of layers.
        reads: Per reader, ``(start, outputs)`` of every read (decoded by the check, so that
            the workers run as little Python as possible between the answer's own steps; a
            numpy array is copied as it is returned, :func:`kept`).
        done: Set when the writer has published everything.
        readers_done: Set when every reader has read (explored with several readers).
    """

    publisher: Any
    layers: int = LAYERS
    published: list[tuple[int, float]] = field(default_factory=list)
    reads: list[list[tuple[float, Any]]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    readers_done: threading.Event = field(default_factory=threading.Event)
    clock: Any = None
    errors: list[str] = field(default_factory=list)


def _publisher_check(min_updates: int, observed: list | None = None, *,
                     reads_last: bool = True) -> Callable[[PublishTrial], None]:
    """The publisher's check (``reads_last``: each reader's last read must get the last
    version published). When ``observed`` is given, each run that passed appends (for the
    judge) the versions published, each with the clock when its ``publish`` returned (None when
    the run has no clock: under ``explore`` no read counts as after a publish), and every read
    as ``[reader, clock at its start, lowest and highest layer version it got]``."""
    def check(trial: PublishTrial) -> None:
        if trial.errors:
            raise AssertionError(trial.errors[0])
        published = dict(trial.published)
        last_version = FIRST_VERSION + len(published)
        seen_reads = []
        if (sorted(published) != list(range(FIRST_VERSION + 1, last_version + 1))
                or len(published) < min_updates):
            raise AssertionError(f"expected the writer to publish versions from "
                                 f"{FIRST_VERSION + 1} on, it published {sorted(published)}")
        for index, reads in enumerate(trial.reads):
            if not reads:
                raise AssertionError(f"expected reader {index} to make reads, it made none")
            last = FIRST_VERSION
            for start, outputs in reads:
                versions = read_versions(plain_array(outputs, f"reader {index}'s predict()"),
                                         trial.layers)
                seen_reads.append([index, float(start), int(versions.min()),
                                   int(versions.max())])
                if versions.min() != versions.max():
                    raise AssertionError(
                        f"expected every prediction computed with one version in every "
                        f"layer, but reader {index} got one computed with layers of versions "
                        f"{versions.tolist()} (first layer first): a torn read, mixing weights "
                        "of different versions")
                seen = int(versions[0])
                if seen != FIRST_VERSION and seen not in published:
                    raise AssertionError(
                        f"expected predictions of published versions only, but reader {index} "
                        f"got version {seen}, which was never published (the model started "
                        f"at version {FIRST_VERSION}; version 0 is a freshly built model "
                        "whose weights were not set yet)")
                newest = max((v for v, at in published.items() if at < start),
                             default=FIRST_VERSION)
                if seen < newest:
                    raise AssertionError(
                        f"reader {index} started a read after publish() of version {newest} "
                        f"had returned, and got version {seen}: expected version {newest} or "
                        "newer (once publish returns, every later read must see it)")
                if seen < last:
                    raise AssertionError(
                        f"expected versions never to go backwards, but reader {index} got "
                        f"version {last} and then version {seen}")
                last = seen
            if reads_last and last != last_version:
                raise AssertionError(
                    f"reader {index}'s last read, made after the writer was done, got version "
                    f"{last}: expected the last version published, {last_version}")
        if observed is not None:
            observed.append({
                "published": [[version, at if math.isfinite(at) else None]
                              for version, at in trial.published],
                "reads": seen_reads})
    return check


def _publisher_workers(updates: int, readers: int, weights: list[list[np.ndarray]],
                       batch: np.ndarray) -> list[Callable[[PublishTrial], None]]:
    """The writer, and readers that read until the writer is done and then once more."""
    def writer(trial: PublishTrial) -> None:
        try:
            for version in range(FIRST_VERSION + 1, FIRST_VERSION + updates + 1):
                trial.publisher.publish(weights[version])
                trial.published.append((version, trial.clock()))
        finally:
            trial.done.set()

    def reader(index: int) -> Callable[[PublishTrial], None]:
        def run(trial: PublishTrial) -> None:
            mine = trial.reads[index]
            while True:
                finished = trial.done.is_set()
                start = trial.clock()
                outputs = trial.publisher.predict(batch)
                mine.append((start, kept(outputs)))
                if finished:
                    return
                # Requests arrive, they do not queue back to back: without a gap a plain lock
                # can keep the writer out for seconds (readers retake it before it wakes).
                time.sleep(READ_GAP_S)
        return run

    return [writer, *[reader(i) for i in range(readers)]]


class _ModelPool:
    """A built, warm versioned model; every trial resets it to its first version.

    Built once per process and size (:func:`_pool`): a grading kernel checks one answer, and
    the tests' repeated runs do not pay for building it again.
    """

    def __init__(self, layers: int = LAYERS) -> None:
        self.layers = layers
        self.model = versioned_model(layers)
        self.weights = [version_weights(v, self.model) for v in range(FIRST_VERSION + 17)]
        self.batch = probe(self.model)
        self.model.predict_on_batch(self.batch)
        self.model(self.batch)

    def fresh(self) -> Any:
        self.model.set_weights(self.weights[FIRST_VERSION])
        return self.model


_POOLS = memo("the publisher checks' model pools")


def _pool(layers: int) -> _ModelPool:
    return _POOLS(layers, lambda: _ModelPool(layers))


def run_publisher_stress(publisher_class: Callable[[Any], Any], *, seed: int = SEED,
                         trials: int = PUBLISHER_TRIALS, updates: int = PUBLISHER_UPDATES,
                         readers: int = PUBLISHER_READERS, pool: _ModelPool | None = None,
                         observed: list | None = None) -> Result:
    """One real writer thread publishes ``updates`` versions while ``readers`` serve.

    Readers keep calling ``predict`` until the writer is done (pausing :data:`READ_GAP_S`
    between two calls), then read once more. When ``observed`` is given, each trial that
    passed appends what it saw (see :func:`_publisher_check`).
    """
    pool = pool or _pool(LAYERS)

    def setup() -> PublishTrial:
        trial = PublishTrial(publisher_class(pool.fresh()), pool.layers)
        trial.reads = [[] for _ in range(readers)]
        trial.clock = time.perf_counter
        return trial

    workers = _publisher_workers(updates, readers, pool.weights, pool.batch)
    return stress(setup, workers,
                  _publisher_check(updates, observed),
                  trials=trials, seed=seed,
                  timeout_s=TIMEOUT_S)


class _Waypoint:
    """What :func:`_waypoint` reads: shared, so the read is visible to ``explore``."""

    seen = 0


_WAYPOINT = _Waypoint()


def _waypoint(point: _Waypoint) -> None:
    """Exactly one decision point under ``explore`` (one read another thread could see), then
    the core given away (a sleep of 0): a layer's write is a TensorFlow op that releases the
    GIL, so in the default order every other thread that can run goes first, as on a real
    machine. A writer let in while a reader is inside (a timed wait for the readers that gave
    up) then tears that reader's read without one more departure from that order."""
    point.seen  # noqa: B018
    time.sleep(0)


def _stepped_set_weights(model: Any, weights: Sequence[Any]) -> None:
    """``model.set_weights``, one layer per step: what Keras really does, layer after layer.

    Under ``explore`` this is glue (no decision points of its own) with one decision point
    between two layers, so a read can land in the middle of a publish.
    """
    start = 0
    for layer in model.layers:
        count = len(layer.weights)
        if count:
            if start:
                _waypoint(_WAYPOINT)
            layer.set_weights(list(weights[start:start + count]))
            start += count


def _set_layer_by_layer(model: Any) -> None:
    """Make the explore model's ``set_weights`` one step per layer under ``explore``.

    A whole ``set_weights`` is one Keras call, so it would be one atomic step and no read
    could land between two layers: a publisher whose own Python lets a read start while it
    writes (a readers-writer handshake without a lock) would pass ``explore`` and, under the
    GIL, ``stress`` too (issue #18, class 1). Writing layer by layer puts a decision point
    between the layers, as real threads have.
    """
    if "set_weights" not in vars(model):
        object.__setattr__(model, "set_weights", functools.partial(_stepped_set_weights, model))


def run_publisher_explore(publisher_class: Callable[[Any], Any], *, seed: int = SEED,
                          schedules: int = PUBLISHER_SCHEDULES, pool: _ModelPool | None = None,
                          observed: list | None = None, readers: int = 1) -> Result:
    """A writer publishes a version while readers serve, under ``explore``.

    Keras calls run atomically here, so this finds races in the Python around them. With one
    reader (the default): a version number stored apart from the weights it names, a model
    published before its weights were set, a reader let in by a handshake without a lock. The
    reader (going first) reads once while the writer may be publishing, waits until the writer
    is done, and reads again: that last read must see the last version. With more readers,
    each reads once and the writer publishes once they are all done: bookkeeping the readers
    share (a count of readers changed outside its lock) must leave the publisher as it found
    it, or the writer waits for ever (reported as a deadlock). That search is bounded by
    :data:`PUBLISHER_READERS_DEVIATIONS` switches.

    The workers and the layer-by-layer ``set_weights`` are glue (no decision points of their
    own, one between two layers), so the search spends its bound on the answer's code. The
    answer's timeouts are cut meanwhile (:func:`~autograder.checks.timeouts.cut_timeouts`): a
    ``Condition.wait_for`` with a timeout then ends when its wait gives up, as its deadline
    does on a loaded machine, instead of waiting again until its real deadline. When
    ``observed`` is given, each schedule that passed appends what it saw (see
    :func:`_publisher_check`).
    """
    pool = pool or _pool(EXPLORE_LAYERS)
    _set_layer_by_layer(pool.model)
    updates = PUBLISHER_EXPLORE_UPDATES
    weights = pool.weights[FIRST_VERSION + 1:FIRST_VERSION + updates + 1]
    batch = pool.batch
    alone = readers == 1

    def setup() -> PublishTrial:
        trial = PublishTrial(publisher_class(pool.fresh()), pool.layers)
        trial.reads = [[] for _ in range(readers)]
        trial.published = [(FIRST_VERSION + 1 + k, float("inf")) for k in range(updates)]
        return trial

    def writer(trial: PublishTrial) -> None:
        publish = trial.publisher.publish
        if not alone:
            trial.readers_done.wait()
        try:
            for new in weights:
                publish(new)
        finally:
            trial.done.set()

    def reader_for(index: int) -> Callable[[PublishTrial], None]:
        def reader(trial: PublishTrial) -> None:
            predict, mine = trial.publisher.predict, trial.reads[index]
            mine.append((0.0, kept(predict(batch))))
            if alone:
                trial.done.wait()
                mine.append((0.0, kept(predict(batch))))
            elif sum(map(len, trial.reads)) == readers:
                trial.readers_done.set()
        return reader

    workers = [reader_for(index) for index in range(readers)]
    with cut_timeouts(publisher_class):
        return explore(setup, [*workers, writer],
                       _publisher_check(updates, observed, reads_last=alone), seed=seed,
                       max_schedules=schedules, timeout_s=EXPLORE_TIMEOUT_S,
                       strategy=EXPLORE_STRATEGY,
                       deviations=PUBLISHER_DEVIATIONS if alone else PUBLISHER_READERS_DEVIATIONS,
                       samples=PUBLISHER_SAMPLES,
                       glue=(writer, *workers, _stepped_set_weights, *CUT_GLUE),
                       stand_ins=CUT_CALLS)
