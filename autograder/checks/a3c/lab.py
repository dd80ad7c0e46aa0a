"""The notebook's live trials and pictures: "See it break" and the figures that explain it.

- :func:`cold_start_trials`: N actor threads make the first calls of a cold shared network at
  once, in child processes (a cold network raced from threads can crash TensorFlow itself);
- :func:`lost_updates`: N threads apply gradients to one network with a given update
  function, counted exactly on the grid (:mod:`~autograder.checks.a3c.model`);
- :func:`torn_reads`: one learner thread updates the network while reader threads read it,
  every read decoded to the version each layer had;
- :func:`plot_lost_updates` and :func:`plot_torn_read`: the lesson's two pictures.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.a3c.model import (
    actor_critic,
    probe,
    set_version,
    states,
    version_of,
    version_step,
    weight_versions,
)
from autograder.checks.a3c.settings import LEARNING_RATE, SEED
from autograder.checks.cache import memo
from autograder.checks.child import Crashed, run_in_children
from autograder.checks.kit import describe_error, released_together, run_together

# --------------------------------------------------------------------------- cold start


def unbuilt_sequential(seed: int = SEED) -> Any:
    """The same layers as :func:`actor_critic`'s trunk and policy, as a ``Sequential`` with no
    ``keras.Input``: not built until its first call (one output, the policy logits)."""
    import keras

    from autograder.checks.a3c.settings import ACTIONS, HIDDEN

    return keras.Sequential([
        keras.layers.Dense(HIDDEN, activation="relu", name="trunk",
                           kernel_initializer=keras.initializers.GlorotUniform(seed=seed)),
        keras.layers.Dense(ACTIONS, name="policy",
                           kernel_initializer=keras.initializers.GlorotUniform(seed=seed + 1)),
    ])


@dataclass
class ColdOutcome:
    """One cold-start trial: what the actors' first calls did (crosses back from a child).

    Attributes:
        raised: Errors the actor threads raised, one line each.
        traces: Traces of the predict function made while the actors ran.
        weights: Weights the model held afterwards.
        expected_weights: Weights the model holds when built on one thread.
        broken_after: The model still raised when one thread called it after the race.
    """

    raised: list[str]
    traces: int
    weights: int
    expected_weights: int
    broken_after: bool


def _cold_trial(kind: str, threads: int, warm: bool, seed: int,
                switch_interval: float | None = None) -> ColdOutcome:
    """One trial in a child process: ``threads`` actors call ``predict_on_batch`` at once."""
    from autograder.checks.a3c.network import TraceCount

    model = unbuilt_sequential(seed) if kind == "sequential" else actor_critic(seed)
    inputs = states(seed, threads + 1)
    if warm:
        model.predict_on_batch(inputs[0])
    count = TraceCount(model)
    before = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        elapsed, errors = released_together(
            [lambda s=s: model.predict_on_batch(s) for s in inputs[1:]], timeout_s=60)
    finally:
        sys.setswitchinterval(before)
    raised = [describe_error(e) for e in errors if e is not None]
    traces = count.traces()
    try:
        model.predict_on_batch(inputs[0])
        broken = False
    except Exception:  # noqa: BLE001 - what the race left behind is the finding
        broken = True
    expected = len(actor_critic(seed).weights) if kind != "sequential" else 4
    return ColdOutcome(raised, traces, len(model.weights), expected, broken)


@dataclass
class ColdStats:
    """Cold-start trials of one kind of network.

    Attributes:
        outcomes: One per trial: a :class:`ColdOutcome`, or :class:`Crashed` when the trial
            ended its child process.
    """

    outcomes: list[Any] = field(default_factory=list)

    @property
    def trials(self) -> int:
        return len(self.outcomes)

    @property
    def raised(self) -> int:
        """Trials in which an actor raised (a crashed process counts)."""
        return sum(isinstance(o, Crashed) or bool(o.raised) for o in self.outcomes)

    @property
    def crashed(self) -> int:
        return sum(isinstance(o, Crashed) for o in self.outcomes)

    @property
    def traces(self) -> list[int]:
        """Traces made while the actors ran, per trial that finished."""
        return [o.traces for o in self.outcomes if isinstance(o, ColdOutcome)]

    @property
    def wrong_weights(self) -> int:
        return sum(isinstance(o, ColdOutcome) and o.weights != o.expected_weights
                   for o in self.outcomes)

    @property
    def errors(self) -> list[str]:
        return [e for o in self.outcomes if isinstance(o, ColdOutcome) for e in o.raised]

    def __str__(self) -> str:
        text = (f"an actor raised in {self.raised} of {self.trials} trials, predict function "
                f"traced {self.traces} times while the actors ran")
        if self.wrong_weights:
            text += f", wrong number of weights in {self.wrong_weights}"
        if self.crashed:
            text += f" (TensorFlow ended its process in {self.crashed})"
        return text


def cold_start_trials(kinds: Sequence[tuple[str, bool]], *, threads: int = 4,
                      trials: int = 5, seed: int = SEED, switch_interval: float | None = None
                      ) -> dict[tuple[str, bool], ColdStats]:
    """Cold-start trials for each ``(kind, warm)`` in ``kinds``, all in child processes.

    ``kind`` is ``"sequential"`` (:func:`unbuilt_sequential`) or ``"functional"``
    (:func:`actor_critic`, built by ``keras.Input``); ``warm`` makes one ``predict_on_batch``
    call first, before the threads start. Each trial: a fresh network, then
    ``threads`` real threads released together, each calling ``predict_on_batch`` on its own
    one-row state. Trials run one after the other in one child process; a trial that ends
    its process is recorded as :class:`Crashed` and the next ones go on in a new child.

    ``switch_interval``, when given, is the interpreter's thread switch interval
    (``sys.setswitchinterval``, 5 ms by default) while the actors run. At the default the
    unbuilt ``Sequential`` raised in about 60 % of trials on 2 cores (9 of 15); at 1e-6, in
    every one of 40 (20 idle, 20 with both cores busy).
    """
    calls = [(kind, threads, warm, seed + 100 * index + trial, switch_interval)
             for index, (kind, warm) in enumerate(kinds) for trial in range(trials)]
    outcomes = run_in_children(_cold_trial, calls, trial_timeout_s=90)
    stats = {key: ColdStats() for key in kinds}
    for (kind, _, warm, _, _), outcome in zip(calls, outcomes, strict=True):
        stats[(kind, warm)].outcomes.append(outcome)
    return stats


# --------------------------------------------------------------------------- lost updates


@dataclass
class LostRun:
    """Trials of one update function at one thread count, counted exactly.

    Attributes:
        calls: Updates made per trial (every thread together).
        lost_weights: Per trial, updates missing from the trunk kernel's weights (a weight
            started at 0 and each update subtracts exactly LEARNING_RATE, so the weight says
            how many landed).
        lost_iterations: Per trial, increments missing from ``optimizer.iterations``.
    """

    calls: int
    lost_weights: list[int] = field(default_factory=list)
    lost_iterations: list[int] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"weight updates lost {self.lost_weights}, iterations lost "
                f"{self.lost_iterations} (of {self.calls} per trial)")


class _LostPool:
    def __init__(self) -> None:
        import keras

        self.model = actor_critic()
        self.optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE)
        self.optimizer.build(self.model.trainable_variables)
        self.ones = [np.ones(tuple(v.shape), dtype="float32")
                     for v in self.model.trainable_variables]
        self.optimizer.apply_gradients(zip([0 * g for g in self.ones],
                                           self.model.trainable_variables, strict=True))


_POOLS = memo("the lesson's demonstration networks")


def lost_updates(update: Callable[[Any, Any, list[np.ndarray]], Any], *, threads: int,
                 calls: int = 400, trials: int = 2) -> LostRun:
    """``threads`` real threads call ``update(model, optimizer, grads)`` ``calls`` times in all.

    Each trial starts from a network whose weights are all 0 and an SGD optimizer (learning
    rate ``LEARNING_RATE``, a power of two) at 0 iterations; ``grads`` is all ones, so every
    update that lands subtracts exactly ``LEARNING_RATE`` from every weight. The threads are
    released together and the switch interval is left as it is.
    """
    pool = _POOLS("lost", _LostPool)
    model, optimizer, grads = pool.model, pool.optimizer, pool.ones
    run = LostRun(calls=calls)
    per_thread = [calls // threads + (k < calls % threads) for k in range(threads)]
    for _ in range(trials):
        set_version(model, 0.0)
        optimizer.iterations.assign(0)

        def body(count: int) -> None:
            for _ in range(count):
                update(model, optimizer, grads)

        run_together([lambda c=c: body(c) for c in per_thread], timeout_s=120)
        landed = -float(np.asarray(model.trainable_variables[0].numpy()).max()) / LEARNING_RATE
        run.lost_weights.append(calls - int(round(landed)))
        run.lost_iterations.append(calls - int(optimizer.iterations.numpy()))
    return run


def plot_lost_updates(table: dict[str, dict[int, LostRun]], *, what: str = "weights") -> Any:
    """Updates lost (share of all updates, mean of the trials) per thread count, one line per
    update function; ``what`` picks ``"weights"`` or ``"iterations"`` for every line unless
    the line's name ends with ``[iterations]``."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 3.6))
    styles = ["-o", "--s", ":^", "-.d", "-v"]
    for line, (name, runs) in enumerate(table.items()):
        counts = sorted(runs)
        kind = "iterations" if name.endswith("[iterations]") else what
        shares = [100 * float(np.mean(getattr(runs[n], f"lost_{kind}"))) / runs[n].calls
                  for n in counts]
        axes.plot(counts, shares, styles[line % len(styles)], markersize=7 - line,
                  label=name.removesuffix(" [iterations]"))
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted({n for runs in table.values() for n in runs}))
    axes.get_xaxis().set_major_formatter(plt.ScalarFormatter())
    axes.set_xlabel("threads updating the shared network at once")
    axes.set_ylabel("updates lost (% of all)")
    axes.set_title("lost updates per thread count (counted exactly on the grid)")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    plt.close(figure)
    return figure


# --------------------------------------------------------------------------- torn reads

#: The network's variables in ``get_weights`` order, as the pictures name them.
VARIABLES = ("trunk\nkernel", "trunk\nbias", "policy\nkernel", "policy\nbias", "value\nkernel",
             "value\nbias")


@dataclass
class TornRun:
    """One trial of reading the network while a learner updates it.

    Attributes:
        updates: Updates the learner made.
        reads: Reads the readers made.
        torn: Reads that mixed versions.
        example: The per-variable versions of one torn read (None when none tore), and the
            learner's last finished update at the time the read started.
    """

    updates: int
    reads: int = 0
    torn: int = 0
    example: tuple[list[float], int] | None = None

    @property
    def torn_share(self) -> float:
        return self.torn / max(1, self.reads)


class _TornPool:
    def __init__(self) -> None:
        import keras

        self.model = actor_critic()
        self.optimizer = keras.optimizers.SGD(learning_rate=1.0)
        self.optimizer.build(self.model.trainable_variables)
        self.step = version_step(self.model)
        self.optimizer.apply_gradients(zip([0 * g for g in self.step],
                                           self.model.trainable_variables, strict=True))
        self.probe = probe()
        self.model.predict_on_batch(self.probe)
        self.model(self.probe)


def torn_reads(read: Callable[[Any, np.ndarray], Any], *, updates: int = 60, readers: int = 2,
               lock: Any = None) -> TornRun:
    """A learner thread applies ``updates`` SGD steps while ``readers`` threads call ``read``.

    The network starts with every weight 1 (version 1); each step (SGD of rate 1, gradients of
    minus one) raises every weight by one. ``read(model, probe)`` returns either a forward
    pass's outputs (decoded by :func:`version_of`) or a weight list (``get_weights()``,
    decoded weight by weight). Readers read until the learner is done. With ``lock``, the
    learner holds it around each ``apply_gradients`` and the readers around each read.
    """
    pool = _POOLS("torn", _TornPool)
    model, optimizer = pool.model, pool.optimizer
    set_version(model, 1.0)
    guard = lock if lock is not None else _NoLock()
    done = threading.Event()
    finished: list[int] = [1]
    run = TornRun(updates=updates)
    seen: list[list[tuple[Any, int]]] = [[] for _ in range(readers)]

    def learner() -> None:
        try:
            for version in range(2, updates + 2):
                with guard:
                    optimizer.apply_gradients(zip(pool.step, model.trainable_variables,
                                                  strict=True))
                finished.append(version)
        finally:
            done.set()

    def reader(mine: list[tuple[Any, int]]) -> None:
        while not done.is_set():
            at = finished[-1]
            with guard:
                got = read(model, pool.probe)
            mine.append((got, at))
            time.sleep(0)

    run_together([learner, *[lambda m=m: reader(m) for m in seen]], timeout_s=120)
    for mine in seen:
        for got, at in mine:
            run.reads += 1
            versions = _versions_read(got)
            if versions is None or min(versions) != max(versions):
                run.torn += 1
                if run.example is None and versions is not None:
                    run.example = (versions, at)
    return run


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _versions_read(got: Any) -> list[float] | None:
    """Per-variable versions of a weight list, or the one version of a forward pass (None:
    a forward pass that no single version gives)."""
    if isinstance(got, list) and len(got) == len(VARIABLES) and all(
            isinstance(w, np.ndarray) for w in got):
        return weight_versions(got)
    version = version_of(got)
    return None if version is None else [float(version)]


def plot_torn_read(run: TornRun) -> Any:
    """The versions of the variables in one torn weight copy, as bars."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 3.2))
    if run.example is None:
        axes.text(0.5, 0.5, "no torn copy in this run", ha="center", va="center")
        axes.set_axis_off()
        plt.close(figure)
        return figure
    versions, at = run.example
    colours = ["tab:blue" if v == min(versions) else "tab:orange" for v in versions]
    axes.bar(range(len(versions)), versions, color=colours)
    axes.set_xticks(range(len(versions)), VARIABLES[:len(versions)], fontsize=8)
    axes.set_ylim(min(versions) - 2, max(versions) + 1.5)
    for index, version in enumerate(versions):
        axes.text(index, version + 0.15, f"{version:g}", ha="center")
    axes.set_ylabel("version of the weights read")
    axes.set_title(f"one actor's copy of the network, read while the learner worked (its last "
                   f"finished update: version {at:g}; orange: newer than the rest)", fontsize=9)
    figure.tight_layout()
    plt.close(figure)
    return figure
