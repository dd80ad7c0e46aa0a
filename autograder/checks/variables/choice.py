"""Exercise 3, choose_publisher: the grader's candidate publishers and what a choice must match."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.cache import memo
from autograder.checks.plain import plain
from autograder.checks.variables.model import (
    _shape,
    is_torn,
    probe,
    read_versions,
    versioned_model,
)
from autograder.checks.variables.settings import (
    CHOICE_INTERVAL_S,
    CHOICE_MIN_UPDATES_PER_S,
    CHOICE_READERS,
    CHOICE_UPDATES,
    LAYERS,
    SEED,
)

#: Simulated costs of the grader's candidate publishers (sleeps stand in for compute, so the
#: ranking does not depend on how loaded the machine is). Their races are real.
_FAST_READ_S = 0.0002
_GOOD_READ_S = 0.003
_LAYER_WRITE_S = 0.0004
#: The longest a torn publish waits for a read between its first and second layer writes.
_TEAR_WAIT_S = 1.0
_GOOD_PUBLISH_S = 0.003
_SLOW_PUBLISH_S = 0.08
#: Every candidate's last publish takes this much longer, so that a reader that keeps reading
#: until the writer is done is seen reading during it, even on a loaded machine.
_LAST_PUBLISH_S = 0.02
#: Before it returns, every candidate's last publish waits (at most :data:`_TEAR_WAIT_S`) until
#: each reader has been served the last version this many times: a reader that keeps reading
#: until the writer is done always is; one that stops once it has seen the last version is not.
LAST_VERSION_READS = 2
#: How far above the truth (the grader's clock, from the first publish's start to the last
#: one's end) a reported ``updates_per_s`` may be. A writer timed around its own publishes took
#: at least that long, so its rate is at most the truth; the margin covers another clock.
UPDATES_RATE_ABOVE = 1.05


class _Recorder:
    """What the grader's candidate publishers saw: who called them, when, and what they said.

    Attributes:
        reads: Per candidate name, ``(thread ident, start, end, torn)`` of every predict.
        publishes: Per candidate name, ``(thread ident, version, start, end)`` of every publish.
        last_reads: Per candidate name, how many whole reads of the last version each thread
            was served.
    """

    def __init__(self) -> None:
        self.reads: dict[str, list[tuple[int, float, float, bool]]] = {}
        self.publishes: dict[str, list[tuple[int, int, float, float]]] = {}
        self.last_reads: dict[str, Counter[int]] = {}
        self.lock = threading.Lock()
        self.served = threading.Condition(self.lock)
        self.instances: Counter[str] = Counter()


def _outputs(layer_versions: Sequence[int], width: int) -> np.ndarray:
    """The output a versioned model with these layer versions gives (row of suffix sums)."""
    row = np.zeros(width, dtype="float32")
    row[:len(layer_versions)] = np.cumsum(np.asarray(layer_versions, dtype="float32")[::-1])[::-1]
    return row[None, :]


def _candidate_classes(recorder: _Recorder, names: Mapping[str, str], last_version: int,
                       readers: int = 0) -> dict[str, type]:
    """The grader's four candidate publishers, each reporting to ``recorder`` under its name.

    ``names`` maps each kind (``"torn"``, ``"slow_updates"``, ``"good"``, ``"slow_reads"``) to
    the name the student sees. The publish of ``last_version`` waits for ``readers`` reader
    threads (:data:`LAST_VERSION_READS`).
    """

    class Candidate:
        kind = ""

        def __init__(self, model: Any) -> None:
            self.name = names[self.kind]
            self.width = _shape(model)[1]
            self.layers = [0] * LAYERS
            with recorder.lock:
                recorder.instances[self.name] += 1
                recorder.reads.setdefault(self.name, [])
                recorder.publishes.setdefault(self.name, [])
                recorder.last_reads.setdefault(self.name, Counter())

        def _version_of(self, weights: Sequence[Any]) -> int:
            return int(round(float(np.asarray(weights[1])[0])))

        def _record_read(self, start: float, outputs: np.ndarray) -> np.ndarray:
            torn = is_torn(outputs)
            entry = (threading.get_ident(), start, time.perf_counter(), torn)
            with recorder.lock:
                recorder.reads[self.name].append(entry)
                if not torn and int(read_versions(outputs).min()) == last_version:
                    recorder.last_reads[self.name][entry[0]] += 1
                    recorder.served.notify_all()
            return outputs

        def _record_publish(self, version: int, start: float) -> None:
            if version == last_version:
                time.sleep(_LAST_PUBLISH_S)
                served = recorder.last_reads[self.name]
                with recorder.served:
                    recorder.served.wait_for(
                        lambda: sum(n >= LAST_VERSION_READS for n in served.values())
                        >= readers, _TEAR_WAIT_S)
            entry = (threading.get_ident(), version, start, time.perf_counter())
            with recorder.lock:
                recorder.publishes[self.name].append(entry)

    class Torn(Candidate):
        """No lock: publish writes the layers one by one; a read in between mixes versions.

        After its first layer, a publish waits (at most :data:`_TEAR_WAIT_S`) until a read
        has looked at the layers: a writer that slow always has a read land mid-publish when
        readers run beside it, so its measured tearing never drops to 0 on a loaded machine
        (where readers could otherwise miss every gap of a short publish).
        """

        kind = "torn"

        def __init__(self, model: Any) -> None:
            super().__init__(model)
            self.read_seen = threading.Event()

        def publish(self, weights: Sequence[Any]) -> None:
            start, version = time.perf_counter(), self._version_of(weights)
            for index in range(LAYERS):
                self.layers[index] = version
                if index == 0:
                    self.read_seen.clear()
                    self.read_seen.wait(_TEAR_WAIT_S)
                time.sleep(_LAYER_WRITE_S)
            self._record_publish(version, start)

        def predict(self, x: Any) -> np.ndarray:
            start = time.perf_counter()
            seen = list(self.layers)
            self.read_seen.set()
            time.sleep(_FAST_READ_S)
            return self._record_read(start, _outputs(seen, self.width))

    class Swapping(Candidate):
        """Build-then-swap: a publish builds for ``publish_s``, a read computes for ``read_s``."""

        publish_s = read_s = 0.0

        def publish(self, weights: Sequence[Any]) -> None:
            start, version = time.perf_counter(), self._version_of(weights)
            time.sleep(self.publish_s)
            self.layers = [version] * LAYERS
            self._record_publish(version, start)

        def predict(self, x: Any) -> np.ndarray:
            start = time.perf_counter()
            seen = self.layers
            time.sleep(self.read_s)
            return self._record_read(start, _outputs(seen, self.width))

    class SlowUpdates(Swapping):
        """Build-then-swap with an expensive build: reads never wait, updates are slow."""

        kind = "slow_updates"
        publish_s, read_s = _SLOW_PUBLISH_S, _FAST_READ_S

    class Good(Swapping):
        """Build-then-swap with a cheap build and slower reads."""

        kind = "good"
        publish_s, read_s = _GOOD_PUBLISH_S, _GOOD_READ_S

    class SlowReads(Candidate):
        """Reads queue up one at a time behind a lock (the writer never waits for it)."""

        kind = "slow_reads"

        def __init__(self, model: Any) -> None:
            super().__init__(model)
            self.one_reader = threading.Lock()

        def publish(self, weights: Sequence[Any]) -> None:
            start, version = time.perf_counter(), self._version_of(weights)
            time.sleep(_GOOD_PUBLISH_S)
            self.layers = [version] * LAYERS
            self._record_publish(version, start)

        def predict(self, x: Any) -> np.ndarray:
            start = time.perf_counter()
            with self.one_reader:
                seen = self.layers
                time.sleep(5 * _GOOD_READ_S)
            return self._record_read(start, _outputs(seen, self.width))

    return {names[c.kind]: c for c in (Torn, SlowUpdates, Good, SlowReads)}


def practice_candidates() -> dict[str, type]:
    """Two small publishers to try ``choose_publisher`` on, whatever your own publisher does.

    ``"whole"`` never mixes versions; ``"tearing"`` writes its layers one by one with no lock,
    so reads made while it publishes mix versions. Both simulate their compute with short
    sleeps (their race is real) and accept any model.
    """
    names = {"torn": "tearing", "slow_updates": "slow", "good": "whole",
             "slow_reads": "queued"}
    classes = _candidate_classes(_Recorder(), names, last_version=-1)
    return {"whole": classes["whole"], "tearing": classes["tearing"]}


class AtEveryRate(float):
    """A ``min_updates_per_s`` that every measured rate equals exactly: compared with a rate it
    answers as a tie does (``rate >= it`` and ``rate <= it`` are true, ``rate > it`` and
    ``rate < it`` false, whichever side it is on), and as a plain number it is 0.0, below every
    rate. "At least" then lets every candidate through on its rate, and "more than" none.

    A measured rate never lands exactly on a threshold by chance, so this is the one way to
    grade the boundary of the rule the exercise states.
    """

    def __new__(cls) -> AtEveryRate:
        return super().__new__(cls, 0.0)

    def __ge__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return False

    def __lt__(self, other: object) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = float.__hash__

    def __repr__(self) -> str:
        return "<a rate equal to every measured one>"

    __str__ = __repr__


@dataclass
class ChoiceRun:
    """What one graded ``choose_publisher`` call returned, and what really happened."""

    chosen: Any = None
    table: Any = None
    expected: Any = None
    names: dict[str, str] = field(default_factory=dict)
    recorder: _Recorder = field(default_factory=_Recorder)
    error: BaseException | None = None


def run_choice(choose: Callable[..., Any], *, seed: int = SEED,
               readers: int = CHOICE_READERS, updates: int = CHOICE_UPDATES,
               interval_s: float = CHOICE_INTERVAL_S,
               min_updates_per_s: float = CHOICE_MIN_UPDATES_PER_S) -> ChoiceRun:
    """Call ``choose(candidates, make_model, readers=, updates=, interval_s=,
    min_updates_per_s=)`` once, on the grader's four candidates.

    The four candidates have names drawn from ``seed`` and come in a seeded order. What it
    returns is read as plain data (:func:`autograder.checks.plain.plain`) before anything
    judges it.

    Raises:
        NotPlainData: (an AssertionError naming ``choose_publisher``) when it returned
            anything but plain data.
    """
    rng = random.Random(f"choice/{seed}")
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    picked = rng.sample(words, 4)
    kinds = ["torn", "slow_updates", "good", "slow_reads"]
    run = ChoiceRun(names=dict(zip(kinds, picked, strict=True)))
    classes = _candidate_classes(run.recorder, run.names, updates, readers)
    order = rng.sample(sorted(classes), len(classes))
    candidates = {name: classes[name] for name in order}
    model = _shared_small_model()
    try:
        answer = choose(candidates, lambda: model, readers=readers, updates=updates,
                        interval_s=interval_s, min_updates_per_s=min_updates_per_s)
    except Exception as error:  # noqa: BLE001 - reported to the student
        run.error = error
        return run
    answer = plain(answer, "choose_publisher: choose_publisher(...)")
    if isinstance(answer, tuple) and len(answer) == 2:
        run.chosen, run.table = answer
    else:
        run.chosen = answer
    return run


_SMALL_MODEL = memo("the choice check's model")


def _shared_small_model() -> Any:
    def build() -> Any:
        model = versioned_model()
        model.predict_on_batch(probe(model))
        return model

    return _SMALL_MODEL(None, build)


def _choice_problems(run: ChoiceRun, readers: int, updates: int,
                     min_updates_per_s: float = CHOICE_MIN_UPDATES_PER_S) -> list[str]:
    """Everything wrong with one ``choose_publisher`` call, in the exercise's terms."""
    if run.error is not None:
        lines = str(run.error).strip().splitlines()
        return [f"choose_publisher raised {type(run.error).__name__}"
                + (f": {lines[0]}" if lines else "")]
    names = set(run.names.values())
    table = run.table
    if not isinstance(table, Mapping) or set(table) != names:
        got = sorted(table) if isinstance(table, Mapping) else type(table).__name__
        return [f"expected the measurements as a dict with one entry per candidate "
                f"{sorted(names)}, got {got}"]
    problems = []
    for name in run.names.values():
        entry = table[name]
        reads = run.recorder.reads.get(name, [])
        publishes = run.recorder.publishes.get(name, [])
        keys = {"reads", "torn", "reads_per_s", "updates_per_s"}
        if not isinstance(entry, Mapping) or not keys <= set(entry):
            problems.append(f"{name}: expected a dict with keys {sorted(keys)}, got {entry!r}")
            continue
        if run.recorder.instances[name] != 1:
            problems.append(f"{name}: expected one publisher made for the measurement, "
                            f"saw {run.recorder.instances[name]}")
            continue
        versions = [version for _, version, _, _ in publishes]
        if versions != list(range(1, updates + 1)):
            problems.append(f"{name}: expected publishes of versions 1 .. {updates} in order, "
                            f"saw {versions}")
            continue
        writer_threads = {ident for ident, _, _, _ in publishes}
        reader_threads = {ident for ident, _, _, _ in reads}
        if len(reader_threads) != readers or writer_threads & reader_threads:
            problems.append(f"{name}: expected {readers} reader threads besides the writer, "
                            f"saw {len(reader_threads - writer_threads)}")
            continue
        writer_done = publishes[-1][3]
        writer_start = publishes[0][2]
        last_start = publishes[-1][2]
        for thread in sorted(reader_threads):
            mine = [r for r in reads if r[0] == thread]
            late = sum(start > writer_done for _, start, _, _ in mine)
            during = sum(start < writer_done and end > writer_start for _, start, end, _ in mine)
            if during == 0:
                problems.append(
                    f"{name}: expected every reader to read while the writer was publishing, "
                    f"but one made its {len(mine)} reads before or after: a measurement of "
                    "serving while publishing must run readers and writer at the same time")
                break
            last_reads = run.recorder.last_reads[name][thread]
            if (max(end for _, _, end, _ in mine) < last_start
                    or last_reads < LAST_VERSION_READS):
                problems.append(
                    f"{name}: expected every reader to keep reading until the writer was "
                    f"done, but one stopped before ({len(mine)} reads, {last_reads} of the "
                    "last version while the last publish waited for more): the races of the "
                    "last updates go unseen")
                break
            if late > max(3, len(mine) // 2):
                problems.append(
                    f"{name}: expected readers to stop once the writer was done, but one made "
                    f"{late} of its {len(mine)} reads after it: those reads measure serving "
                    "without publishing")
                break
        torn = sum(r[3] for r in reads)
        if entry["reads"] != len(reads) or entry["torn"] != torn:
            problems.append(f"{name}: reported {entry['reads']} reads with {entry['torn']} torn,"
                            f" expected {len(reads)} reads with {torn} torn (what the publisher "
                            "really returned)")
            continue
        span = max(r[2] for r in reads) - min(r[1] for r in reads)
        truth_reads = len(reads) / max(span, 1e-9)
        truth_updates = updates / max(writer_done - writer_start, 1e-9)
        for key, truth, above in (("reads_per_s", truth_reads, 5.0),
                                  ("updates_per_s", truth_updates, UPDATES_RATE_ABOVE)):
            value = entry[key]
            if not isinstance(value, (int, float)) or not 0.05 * truth <= value <= above * truth:
                problems.append(f"{name}: reported {key} = {value!r}, expected about "
                                f"{truth:.0f} (what it really did)")
    if problems:
        return problems
    # The measurements are sound: the choice must follow from them. (On a quiet machine the
    # rule picks the "good" candidate; under heavy load the measurements decide.)
    qualified = [name for name, row in table.items()
                 if row["torn"] == 0 and row["updates_per_s"] >= min_updates_per_s]
    run.expected = max(qualified, key=lambda name: table[name]["reads_per_s"], default=None)
    if run.chosen != run.expected:
        row = table.get(run.chosen) if isinstance(run.chosen, str) else None
        if row is None:
            why = "it is not one of the candidates"
        elif row["torn"]:
            why = f"your own measurement found {row['torn']} torn reads"
        elif row["updates_per_s"] < min_updates_per_s:
            why = (f"your own measurement found {row['updates_per_s']:.1f} updates per second, "
                   f"fewer than the {min_updates_per_s:g} required")
        else:
            why = (f"{run.expected!r} qualifies and serves more reads per second "
                   "in your own measurement")
        problems.append(f"chose {run.chosen!r}, expected {run.expected!r}: {why}")
    return problems


def _choice_observation(run: ChoiceRun) -> dict:
    """What one passing ``choose_publisher`` call did, as plain data for the judge.

    Per candidate, in the order of the returned table (which breaks ties in the choice): how
    many publishers were made for it, the versions published in order, when the first and
    the last publish started and when the last one ended, how many threads read and how many
    of them also published, every reader thread's reads (in all, during the writer's run,
    after it, and when its last read ended), the reads in all and the torn ones, the time from
    the first read's start to the last read's end (the grader's clock), and what the table
    reported. With ``chosen``: the name it chose.
    """
    candidates = []
    for name in run.table:
        reads = run.recorder.reads.get(name, [])
        publishes = run.recorder.publishes.get(name, [])
        writer_threads = {ident for ident, _, _, _ in publishes}
        reader_threads = {ident for ident, _, _, _ in reads}
        writer_start = publishes[0][2] if publishes else None
        writer_done = publishes[-1][3] if publishes else None
        per_reader = []
        for thread in sorted(reader_threads):
            mine = [r for r in reads if r[0] == thread]
            per_reader.append({
                "reads": len(mine),
                "during": sum(start < writer_done and end > writer_start
                              for _, start, end, _ in mine) if publishes else 0,
                "late": sum(start > writer_done for _, start, _, _ in mine) if publishes else 0,
                "last_version_reads": run.recorder.last_reads.get(name, Counter())[thread],
                "last_end": max(end for _, _, end, _ in mine)})
        entry = run.table[name]
        candidates.append({
            "name": name,
            "instances": run.recorder.instances[name],
            "versions": [version for _, version, _, _ in publishes],
            "writer_start": writer_start,
            "last_start": publishes[-1][2] if publishes else None,
            "writer_done": writer_done,
            "reader_threads": len(reader_threads),
            "shared_threads": len(writer_threads & reader_threads),
            "readers": per_reader,
            "reads": len(reads),
            "torn": sum(bool(r[3]) for r in reads),
            "span": (max(r[2] for r in reads) - min(r[1] for r in reads)) if reads else 0.0,
            "table": {key: _observed_number(entry[key])
                      for key in ("reads", "torn", "reads_per_s", "updates_per_s")}})
    return {"chosen": run.chosen if type(run.chosen) is str else None,
            "candidates": candidates}


def _observed_number(value: Any) -> int | float | bool | None:
    """A number the answer reported, already read as plain data, as the judge receives it: an
    exact ``int``, ``float`` or ``bool`` as it is, an array of one number as that number,
    anything else None (which no judge accepts)."""
    if type(value) in (int, float, bool):
        return value
    if type(value) is np.ndarray and value.size == 1:
        return _observed_number(value.item())
    return None
