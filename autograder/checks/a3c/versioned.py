"""Exercise 4, VersionedNetwork: actors act while a learner updates, and no act sees half an update.

The grader's network starts with every weight equal to 1 (:func:`set_version`), and each
``learn`` is given gradients of minus one for a plain SGD optimizer of learning rate 1, so
after ``v`` learns every weight is ``1 + v``. An act on the probe state (``ones``) then gives
exactly ``expected_output(1 + v)`` in every output when its forward pass read one version,
and something else when its layers were read at different versions (a torn act).

Two engines:

- ``stress`` (:func:`run_versioned_stress`): one real learner thread calls ``learn``
  :data:`VERSIONED_LEARNS` times while :data:`VERSIONED_ACTORS` actor threads call ``act``
  until it is done, then once more. Every act's outputs must be those of the version it
  reports, versions never go backwards for one actor, an act that starts after ``learn``
  returned version ``v`` reports ``v`` or later, and the actors' last acts report the last
  version. Races inside Keras (a forward pass during ``apply_gradients``) show here.
- ``explore`` (:func:`run_versioned_explore`): one learn and an actor acting during and after
  it, Keras calls run whole: races in the Python around them (a version number counted apart
  from the weights it names, read without the lock the weights are read under).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.a3c.model import (
    actor_critic,
    flat_outputs,
    probe,
    set_version,
    version_of,
    version_step,
)
from autograder.checks.a3c.settings import (
    ACT_GAP_S,
    ACTIONS,
    SEED,
    TIMEOUT_S,
    VERSIONED_ACTORS,
    VERSIONED_DEVIATIONS,
    VERSIONED_EXPLORE_LEARNS,
    VERSIONED_LEARNS,
    VERSIONED_SAMPLES,
    VERSIONED_SCHEDULES,
    VERSIONED_TRIALS,
)
from autograder.checks.cache import memo
from autograder.checks.plain import NotPlainData, plain
from autograder.harness import Result, explore, stress

#: ``optimizer.iterations`` when the answer gets the optimizer: the one zero-gradient apply
#: that built and warmed it. Version 0 is the network as handed over, whatever the optimizer
#: counted before.
WARM_UP_APPLIES = 1

#: The weights' value before the first learn (version 0): 1, not 0, so that every layer
#: mixture reads as torn (with 0 a trunk at 0 hides the heads' version).
FIRST_WEIGHT = 1.0


class VersionPool:
    """The grader's network and its SGD (rate 1), built and warm; reset for every trial."""

    def __init__(self) -> None:
        import keras

        self.model = actor_critic()
        self.optimizer = keras.optimizers.SGD(learning_rate=1.0)
        self.optimizer.build(self.model.trainable_variables)
        self.step = version_step(self.model)
        zeros = [np.zeros_like(g) for g in self.step]
        self.optimizer.apply_gradients(zip(zeros, self.model.trainable_variables, strict=True))
        self.probe = probe()
        self.model.predict_on_batch(self.probe)
        self.model(self.probe)

    def fresh(self) -> tuple[Any, Any]:
        """The network at version 0, its optimizer having applied :data:`WARM_UP_APPLIES`
        updates already (the warm-up that builds it): ``optimizer.iterations`` counts the
        optimizer's updates, not this network's versions."""
        set_version(self.model, FIRST_WEIGHT)
        self.optimizer.iterations.assign(WARM_UP_APPLIES)
        return self.model, self.optimizer


_POOLS = memo("the VersionedNetwork check's network")


def version_pool() -> VersionPool:
    return _POOLS("versioned", VersionPool)


@dataclass
class VersionedTrial:
    """One run: the answer, each actor's acts ``(start, outputs, version)``, the learns; under
    ``explore``, the events that order them (``done``: the learner is done; with several
    actors, ``learned_once``: the first learn returned, ``acted``: every actor acted once)."""

    network: Any
    acts: list[list[tuple[float, Any, Any]]]
    learned: list[tuple[Any, float]] = field(default_factory=list)
    done: Any = None
    learned_once: Any = None
    acted: Any = None
    clock: Callable[[], float] = time.perf_counter


def _version(value: Any, what: str) -> int:
    return int(plain(value, what, (int,)))


def _act_result(result: Any, index: int) -> tuple[Any, int]:
    if not isinstance(result, tuple) or len(result) != 2:
        raise AssertionError(f"actor {index}: act() returned {type(result).__name__}; expected "
                             "a pair (outputs, version)")
    outputs, version = result
    return outputs, _version(version, "the version act() returned")


def _acts_seen(acts: list[list[tuple[float, int, list[float]]]]) -> list[list]:
    """Every actor's acts, run-length encoded for the judge: one entry ``[actor, count, first
    start, last start, version, *outputs]`` per run of consecutive acts that reported the same
    version with the same outputs. Lossless for what the check decides (the newest learn
    before a run's last start is the newest before any of its acts), and short: a passing
    actor sees each version in one run."""
    runs: list[list] = []
    for index, mine in enumerate(acts):
        last: list | None = None
        for start, version, values in mine:
            if last is not None and last[4] == version and last[5:] == values:
                last[1] += 1
                last[3] = start
                continue
            last = [index, 1, start, start, version, *values]
            runs.append(last)
    return runs


#: Why a version one ahead is wrong: it was read off ``optimizer.iterations``.
_ITERATIONS_HINT = (f" (optimizer.iterations counts every update the optimizer ever applied, "
                    f"{WARM_UP_APPLIES} before this network was made here: count this "
                    "network's learns yourself, from version 0 when it is made)")


def _versioned_check(learns: int, observed: list | None = None, *, acts_last: bool = True
                     ) -> Callable[[VersionedTrial], None]:
    """The check of a run (``acts_last``: each actor's last act comes after the last learn
    and must get its version)."""
    def check(trial: VersionedTrial) -> None:
        learned = [(_version(v, "learn()"), at) for v, at in trial.learned]
        seen_acts: list[list[tuple[float, int, list[float]]]] = []
        if [v for v, _ in learned] != list(range(1, learns + 1)):
            raise AssertionError(f"expected learn() to return the new version, 1 .. {learns} "
                                 f"in order, but it returned {[v for v, _ in learned][:8]}"
                                 + _ITERATIONS_HINT * (learned[:1] == [(1 + WARM_UP_APPLIES,
                                                                        learned[0][1])]))
        for index, acts in enumerate(trial.acts):
            if not acts:
                raise AssertionError(f"expected actor {index} to act, it never did")
            seen_acts.append([])
            last = 0
            for start, result, _ in acts:
                outputs, version = _act_result(result, index)
                try:
                    values = flat_outputs(outputs)
                except (TypeError, ValueError) as error:
                    raise NotPlainData(f"actor {index}: act() returned outputs that are not "
                                       f"arrays of numbers ({error})") from None
                if values.size != ACTIONS + 1:
                    raise AssertionError(
                        f"actor {index}: act() on one state returned {values.size} numbers; "
                        f"expected {ACTIONS + 1} ({ACTIONS} policy logits and a value)")
                seen = version_of(values)
                if seen is None:
                    raise AssertionError(
                        f"expected every act to use one version of the weights, but actor "
                        f"{index} got outputs {np.round(values, 1).tolist()}, which no single "
                        f"version gives (version {version} gives "
                        f"{_expected(version)} in every output): a torn act, its forward "
                        "pass read some layers before an update and some after")
                seen = int(seen - FIRST_WEIGHT)
                if seen != version:
                    raise AssertionError(
                        f"expected the version act() reports to be the one its outputs were "
                        f"computed with, but actor {index} got the outputs of version {seen} "
                        f"labelled version {version}: the stamp and the weights were read "
                        "apart, with an update in between")
                if version < last:
                    raise AssertionError(f"expected versions never to go backwards, but actor "
                                         f"{index} saw version {last} and then {version}")
                newest = max((v for v, at in learned if at < start), default=0)
                if version < newest:
                    raise AssertionError(
                        f"actor {index} started an act after learn() had returned version "
                        f"{newest}, and got version {version}: once learn() returns, every "
                        "later act must use that version or a newer one")
                last = version
                seen_acts[-1].append((float(start), version, [float(v) for v in values]))
            if acts_last and last != learns:
                raise AssertionError(f"actor {index}'s last act, made after the learner was "
                                     f"done, got version {last}; expected {learns}")
        if observed is not None:
            observed.append({"learned": [[v, float(at) if at < float("inf") else None]
                                         for v, at in learned],
                             "acts": _acts_seen(seen_acts)})
    return check


def _expected(version: int) -> float:
    from autograder.checks.a3c.model import expected_output

    return expected_output(version + FIRST_WEIGHT)


def run_versioned_stress(network_class: Callable[[Any, Any], Any], *,
                         trials: int = VERSIONED_TRIALS, learns: int = VERSIONED_LEARNS,
                         actors: int = VERSIONED_ACTORS, seed: int = SEED,
                         observed: list | None = None) -> Result:
    """One real learner thread learns ``learns`` times while ``actors`` actors act (see above).

    When ``observed`` is given, each trial that passes appends what it saw (for the judge):
    each learn's version and when it returned, and the actors' acts (:func:`_acts_seen`).
    """
    import threading

    pool = version_pool()

    def setup() -> VersionedTrial:
        model, optimizer = pool.fresh()
        trial = VersionedTrial(network_class(model, optimizer), [[] for _ in range(actors)])
        trial.done = threading.Event()
        return trial

    def learner(trial: VersionedTrial) -> None:
        learn, step, clock = trial.network.learn, pool.step, trial.clock
        try:
            for _ in range(learns):
                version = learn(step)
                trial.learned.append((version, clock()))
        finally:
            trial.done.set()

    def actor(index: int) -> Callable[[VersionedTrial], None]:
        def run(trial: VersionedTrial) -> None:
            act, mine, state, clock = trial.network.act, trial.acts[index], pool.probe, \
                trial.clock
            while True:
                finished = trial.done.is_set()
                start = clock()
                mine.append((start, act(state), None))
                if finished:
                    return
                time.sleep(ACT_GAP_S)
        run.__name__ = f"actor_{index}"
        return run

    return stress(setup, [learner, *[actor(k) for k in range(actors)]],
                  _versioned_check(learns, observed), trials=trials, seed=seed,
                  timeout_s=TIMEOUT_S)


def run_versioned_explore(network_class: Callable[[Any, Any], Any], *, seed: int = SEED,
                          schedules: int = VERSIONED_SCHEDULES,
                          observed: list | None = None, actors: int = 1) -> Result:
    """Learns while actors act, under ``explore`` (see above).

    Keras calls run whole here, so this finds races in the answer's own Python: a version
    counted apart from the weights, a stamp read outside the lock. With one actor (the
    default): one learn while the actor acts during and after it. With more: a learn, then
    every actor acts once at the same time, then a second learn.
    Bookkeeping the actors share (a cache of the weights refreshed by whichever actor comes
    first, a count of readers changed outside its lock) must neither hand an actor weights of
    another version than it reports nor keep the second learn waiting for ever (reported as a
    deadlock). The workers are glue (no decision points of their own), so the search bound is
    spent on the answer's code. When ``observed`` is given, each schedule that passes appends
    what it saw, as :func:`run_versioned_stress` does (a learn's time is None here: acts start
    at 0).
    """
    import threading

    pool = version_pool()
    alone = actors == 1
    learns = VERSIONED_EXPLORE_LEARNS if alone else VERSIONED_EXPLORE_LEARNS + 1

    def setup() -> VersionedTrial:
        model, optimizer = pool.fresh()
        trial = VersionedTrial(network_class(model, optimizer), [[] for _ in range(actors)],
                               clock=itertools.count().__next__)
        trial.done = threading.Event()
        trial.learned_once = threading.Event()
        trial.acted = threading.Event()
        return trial

    def learner(trial: VersionedTrial) -> None:
        learn = trial.network.learn
        try:
            for number in range(learns):
                if not alone and number:
                    trial.acted.wait()
                trial.learned.append((learn(pool.step), float("inf")))
                trial.learned_once.set()
        finally:
            trial.learned_once.set()
            trial.done.set()

    def actor_for(index: int) -> Callable[[VersionedTrial], None]:
        def actor(trial: VersionedTrial) -> None:
            act, mine = trial.network.act, trial.acts[index]
            if not alone:
                trial.learned_once.wait()
            mine.append((0.0, act(pool.probe), None))
            if alone:
                trial.done.wait()
                mine.append((0.0, act(pool.probe), None))
            elif sum(map(len, trial.acts)) == actors:
                trial.acted.set()
        return actor

    workers = [actor_for(index) for index in range(actors)]
    return explore(setup, [*workers, learner],
                   _versioned_check(learns, observed, acts_last=alone), seed=seed,
                   max_schedules=schedules, timeout_s=TIMEOUT_S, samples=VERSIONED_SAMPLES,
                   deviations=VERSIONED_DEVIATIONS, glue=(*workers, learner))
