"""Graded properties for lesson 04, "tfdata": tf.data instead of hand-rolled threads.

The exercises build ``tf.data`` pipelines, so the races they guard against live inside TF's
own threads (the workers of a parallel ``map``, the prefetch thread, ``from_generator``'s
calls into Python). The controlled scheduler runs TF ops atomically and cannot see them, so
the checks use the stress runner (:func:`autograder.harness.stress`): real threads released
together at the smallest switch interval, each iterating the student's pipeline while the
others do. The one piece of pure Python shared between tf.data's threads, exercise 4's
counting wrapper, is explored with the controlled scheduler instead.

- :func:`check_loader`: one thread iterates the dataset twice (two epochs), then in each trial
  two threads iterate one dataset at the same time; each iteration must yield every record
  exactly once, with the record's own values.
- :func:`check_augment`: two threads iterate the augmented dataset at the same time; both must
  see exactly the images a first, one-thread run produced (same augmentation every run), every
  image must be a brightness shift in range plus an optional flip, with the shifts differing
  from image to image and from seed to seed.
- :func:`check_served`: a read wrapper that counts the records it served and the reads that
  failed, called by tf.data's threads at once. Its counting is pure Python, so it is explored
  with the controlled scheduler (two threads calling one object), and so is the overlap of
  its reads (two reads that wait for each other must both finish); then a real parallel map
  checks it end to end.
- :func:`check_fast`: the pipeline must yield ``transform(read(i))`` in order; its reads must
  run in parallel and overlap the training step; and its speed-up over the naive loop, measured
  in the same run (the naive loop, the ideal bound and the pipeline run at the same time so a
  burst of load on the machine hits all three), must reach :data:`MIN_SHARE_OF_IDEAL` of the
  ideal speed-up measured alongside.

All work is simulated with ``time.sleep`` (which releases the GIL as real I/O does), so the
checks measure the pipeline's structure, not this machine's speed. Plumbing the notebook uses
(the live demonstrations, the timeline picture) lives here too.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks.kit import bounded, released_together
from autograder.checks.plain import exception_line, plain, plain_array
from autograder.checks.report import call_text, require_ok
from autograder.harness import Result, explore, stress
from autograder.harness.tamper import opaque

SEED = 4
WIDTH = 4
#: Records per loader check, and the simulated read time of each.
LOADER_RECORDS = 12
LOADER_READ_S = 0.002
STRESS_TRIALS = 2
TIMEOUT_S = 30.0
#: Images per augmentation check.
IMAGES = 16
IMAGE_SHAPE = (6, 6, 1)
MAX_DELTA = 0.2
#: The throughput workload: reads of 8-50 ms, a 10 ms transform, a 15 ms training step.
TRANSFORM_S = 0.010
TRAIN_S = 0.015
FAST_RECORDS = 8
#: The pipeline's speed-up over the naive loop must reach this share of the ideal speed-up.
MIN_SHARE_OF_IDEAL = 0.3


def read_seconds(index: int) -> float:
    """Simulated I/O time of record ``index``: 50 ms for the first record, then 8 ms for odd
    records and 25 ms for even ones (small files between big ones), so parallel reads finish
    out of order."""
    if index == 0:
        return 0.050
    return 0.025 if index % 2 == 0 else 0.008


def record(index: int) -> np.ndarray:
    """The values of record ``index``: ``WIDTH`` float32 numbers that identify it."""
    return (index * 10 + np.arange(WIDTH)).astype("float32")


def make_read(seconds: Callable[[int], float] | float = LOADER_READ_S,
              log: list | None = None) -> Callable[[int], np.ndarray]:
    """A ``read(index)`` that sleeps like a file read, then returns a fresh ``record(index)``.

    With ``log``, every call appends ``("read", thread name, start, end)`` to it, and the
    function is :func:`~autograder.harness.tamper.opaque`: the student's pipeline cannot reach
    the log through its closure.
    """
    def read(index: Any) -> np.ndarray:
        index = int(index)
        start = time.perf_counter()
        time.sleep(seconds(index) if callable(seconds) else seconds)
        if log is not None:
            log.append(("read", threading.current_thread().name, start, time.perf_counter()))
        return record(index)

    return read if log is None else opaque(read)


def make_transform(log: list | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """A ``transform(x)`` that sleeps ``TRANSFORM_S`` (simulated compute) and returns ``2 * x``;
    with ``log``, as :func:`make_read`."""
    def transform(x: Any) -> np.ndarray:
        start = time.perf_counter()
        time.sleep(TRANSFORM_S)
        if log is not None:
            log.append(("transform", threading.current_thread().name, start, time.perf_counter()))
        return (np.asarray(x, dtype="float32") * 2).astype("float32")

    return transform if log is None else opaque(transform)


def _values(element: Any, what: str = "iterating the dataset") -> np.ndarray:
    """An element the student's pipeline yielded, as a float32 array of the grader's own.

    Read once, through :func:`~autograder.checks.plain.plain_array` (a base ndarray, never the
    element's own comparisons) and copied, so the student's code cannot change it afterwards.

    Args:
        element: A tensor, an array or a list of numbers.
        what: How a message names where it came from (``plain_array``'s ``what``).

    Raises:
        NotPlainData: (an AssertionError) when the element is no array of numbers.
    """
    return plain_array(element.numpy() if hasattr(element, "numpy") else element,
                       what).astype("float32")


def _identify(values: np.ndarray) -> int | None:
    """The record index ``values`` equals, or None when it is no record (corrupt)."""
    flat = values.reshape(-1)
    if flat.shape != (WIDTH,):
        return None
    index = int(round(float(flat[0]) / 10))
    return index if np.array_equal(flat, record(index)) else None


# --------------------------------------------------------------------------- live demos


@dataclass
class Trials:
    """Counts from a live demonstration: ``broken`` of ``runs`` trials, plus what was seen."""

    broken: int = 0
    runs: int = 0
    seen: list[str] = field(default_factory=list)


def shared_generator_trials(make_generator: Callable[[], Any], *, trials: int,
                            threads: int = 2) -> Trials:
    """Share one generator between ``threads`` real threads; count trials that raised."""
    out = Trials()
    for _ in range(trials):
        errors, _seen = _drain_together(make_generator(), threads)
        out.runs += 1
        if errors:
            out.broken += 1
            out.seen.append(f"{type(errors[0]).__name__}: {errors[0]}")
    return out


def _drain_together(iterable: Any, threads: int) -> tuple[list[BaseException],
                                                          list[list[int | None]]]:
    """Iterate ``iterable`` from ``threads`` threads at once: their errors, what each saw."""
    seen: list[list[int | None]] = [[] for _ in range(threads)]

    def drain(k: int) -> Callable[[], None]:
        return lambda: seen[k].extend(_identify(_values(x)) for x in iterable)

    errors = [e for e in released_together([drain(k) for k in range(threads)])[1] if e is not None]
    return errors, seen


def concurrent_iterations(dataset_factory: Callable[[], Any], *, trials: int,
                          records: int, threads: int = 2) -> Trials:
    """Iterate one dataset from ``threads`` threads at once; count trials where one of them
    raised, lost a record, saw one twice, or saw a corrupt one."""
    out = Trials()
    for _ in range(trials):
        errors, seen = _drain_together(dataset_factory(), threads)
        out.runs += 1
        problems = [p for p in (_describe(got, records) for got in seen) if p]
        if errors:
            out.broken += 1
            out.seen.append(_short_error(errors[0]))
        elif problems:
            out.broken += 1
            out.seen.append(problems[0])
    return out


def _short_error(error: BaseException) -> str:
    """The exception's type and the most telling line of its text (TF wraps Python errors)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if "Error:" in line or "executing" in line]
    return f"{type(error).__name__}: {(telling or lines or [''])[-1][:120]}"


def _describe(got: Sequence[int | None], records: int) -> str:
    """'' when ``got`` holds each of ``records`` records once; otherwise what is wrong."""
    corrupt = sum(g is None for g in got)
    ids = [g for g in got if g is not None]
    missing = sorted(set(range(records)) - set(ids))
    twice = sorted({g for g in ids if ids.count(g) > 1})
    extra = sorted({g for g in ids if not 0 <= g < records})
    parts = []
    if corrupt:
        parts.append(f"{corrupt} corrupt record(s) (values of two records mixed)")
    if missing:
        parts.append(f"{len(missing)} record(s) lost, e.g. {missing[:3]}")
    if twice:
        parts.append(f"record(s) {twice[:3]} seen more than once")
    if extra:
        parts.append(f"record(s) {extra[:3]} that do not exist")
    return "; ".join(parts)


def reused_buffer_trials(*, trials: int, batches: int = 20, batch_size: int = 4,
                         read_s: float = 0.001, step_s: float = 0.002) -> Trials:
    """A hand-rolled loader: a producer thread fills ONE numpy buffer per batch and puts it on
    a queue; the training loop takes batches off it and works ``step_s`` on each. Count
    corrupt batches (rows that are not the batch's own records)."""
    out = Trials()
    for _ in range(trials):
        out.broken += _reused_buffer_once(batches, batch_size, read_s, step_s)
        out.runs += batches
    return out


def _reused_buffer_once(batches: int, batch_size: int, read_s: float, step_s: float) -> int:
    q: queue.Queue = queue.Queue(maxsize=4)
    buffer = np.empty((batch_size, WIDTH), dtype="float32")

    def produce() -> None:
        for b in range(batches):
            for row in range(batch_size):
                time.sleep(read_s)
                buffer[row] = record(b * batch_size + row)
            q.put((b, buffer))
        q.put(None)

    threading.Thread(target=produce, daemon=True).start()
    corrupt = 0
    while (item := q.get()) is not None:
        b, batch = item
        time.sleep(step_s)
        expected = np.stack([record(b * batch_size + r) for r in range(batch_size)])
        corrupt += not np.array_equal(batch, expected)
    return corrupt


# --------------------------------------------------------------------------- exercise 1


def check_loader(make_dataset: Callable[[Callable[[int], np.ndarray], int], Any]) -> None:
    """Grade exercise 1 (``make_dataset``); AssertionError with the student's message."""
    require_ok(run_loader(make_dataset), exercise="make_dataset",
               again=call_text("tfdata.run_loader", "make_dataset"))


def run_loader(make_dataset: Callable[[Callable[[int], np.ndarray], int], Any], *,
               trials: int = STRESS_TRIALS) -> Result:
    """Iterate ``make_dataset(read, n)`` twice on one thread, then from two threads at once."""
    n = LOADER_RECORDS
    _one_thread(make_dataset, n)

    # One dataset for every trial: a dataset is iterated again and again (one epoch after
    # another), and each trial starts two more iterations of it at the same time.
    dataset = make_dataset(make_read(), n)

    def setup() -> dict[str, Any]:
        return {"dataset": dataset, "seen": [[], []]}

    def worker(k: int) -> Callable[[dict[str, Any]], None]:
        def run(state: dict[str, Any]) -> None:
            state["seen"][k].extend(_identify(_values(x)) for x in state["dataset"])
        return run

    def check(state: dict[str, Any]) -> None:
        for k, got in enumerate(state["seen"]):
            problem = _describe(got, n)
            assert not problem, (
                f"thread {k}, iterating the dataset while another thread did too: expected "
                f"each of the {n} records exactly once, but saw {len(got)} element(s): "
                f"{problem}")

    return stress(setup, [worker(0), worker(1)], check, trials=trials, seed=SEED,
                  timeout_s=TIMEOUT_S)


def _one_thread(make_dataset: Callable[..., Any], n: int) -> None:
    # Instant reads, and the interpreter switching threads as often as it can: any thread the
    # answer starts itself (a producer filling a shared buffer) runs as far ahead as it may.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        dataset = make_dataset(make_read(0.0), n)
        what = "make_dataset: iterating the dataset"
        first = [_identify(_values(x, what)) for x in dataset]
        second = [_identify(_values(x, what)) for x in dataset]
    except AssertionError:
        raise
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"make_dataset: on one thread, building and iterating the dataset raised "
            f"{exception_line(error)} (expected each of "
            f"the {n} records exactly once)") from None
    finally:
        sys.setswitchinterval(interval)
    for label, got in (("first", first), ("second", second)):
        problem = _describe(got, n)
        if problem:
            raise AssertionError(
                f"make_dataset: on one thread, the {label} iteration over the dataset should "
                f"yield each of the {n} records exactly once (expected {n} elements), but it "
                f"yielded {len(got)}: {problem}. A tf.data.Dataset can be iterated again and "
                f"again; each iteration must start from the beginning.")


# --------------------------------------------------------------------------- exercise 2


def images(count: int = IMAGES) -> Any:
    """The grader's images: a tf.data.Dataset of ``count`` float32 images in [0.3, 0.7],
    each read with a 2 ms sleep (simulated I/O, four reads at a time, in order). No two images
    are alike, none is symmetric."""
    import tensorflow as tf

    rng = np.random.default_rng(SEED)
    data = rng.uniform(0.3, 0.7, size=(count, *IMAGE_SHAPE)).astype("float32")

    def load(i: Any) -> np.ndarray:
        time.sleep(0.002)
        return data[int(i)]

    def to_image(i: Any) -> Any:
        image = tf.numpy_function(load, [i], tf.float32)
        image.set_shape(IMAGE_SHAPE)
        return image

    return tf.data.Dataset.range(count).map(to_image, num_parallel_calls=4, deterministic=True)


def image_array(count: int = IMAGES) -> np.ndarray:
    """The images :func:`images` yields, as one numpy array."""
    rng = np.random.default_rng(SEED)
    return rng.uniform(0.3, 0.7, size=(count, *IMAGE_SHAPE)).astype("float32")


def _collect(dataset: Any) -> np.ndarray:
    return np.stack([_values(x, "iterating the augmented dataset") for x in dataset])


def check_augment(augment: Callable[[Any, int], Any]) -> None:
    """Grade exercise 2 (``augment``); AssertionError with the student's message."""
    require_ok(run_augment(augment), exercise="augment",
               again=call_text("tfdata.run_augment", "augment"))


def run_augment(augment: Callable[[Any, int], Any], *, trials: int = STRESS_TRIALS) -> Result:
    """Check one-thread properties, then stress two threads iterating the dataset at once."""
    originals = image_array()
    try:
        # The first iteration of the dataset the threads will iterate again is the reference.
        dataset = augment(images(), 11)
        reference = _collect(dataset)
        other_seed = _collect(augment(images(), 12))
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"augment: on one thread, building and iterating the augmented dataset raised "
            f"{exception_line(error)} (expected "
            f"{IMAGES} augmented images)") from None
    shifts, flips = _augmentation_sane(reference, originals)
    more_shifts, more_flips = _augmentation_sane(other_seed, originals)
    _distribution_sane(shifts + more_shifts, flips + more_flips)
    if np.array_equal(reference, other_seed):
        raise AssertionError(
            "augment: seeds 11 and 12 gave the same images; expected the seed to choose the "
            "random shifts and flips.")

    def setup() -> dict[str, Any]:
        return {"dataset": dataset, "seen": [None, None]}

    def worker(k: int) -> Callable[[dict[str, Any]], None]:
        def run(state: dict[str, Any]) -> None:
            state["seen"][k] = _collect(state["dataset"])
        return run

    def check(state: dict[str, Any]) -> None:
        for k, got in enumerate(state["seen"]):
            assert got is not None and got.shape == reference.shape, (
                f"thread {k} saw {0 if got is None else len(got)} images, expected {IMAGES}")
            differ = [i for i in range(IMAGES) if not np.allclose(got[i], reference[i],
                                                                  atol=1e-6)]
            assert not differ, (
                f"iterating augment(images, seed=11) again, on thread {k} while another thread "
                f"iterated it too, gave different images at position(s) {differ[:5]} than the "
                f"first run: expected the same augmentation on every run (draw randomness "
                f"from stateless ops seeded by the seed and the element's position)")

    return stress(setup, [worker(0), worker(1)], check, trials=trials, seed=SEED,
                  timeout_s=TIMEOUT_S)


#: Bounds on the 32 augmentations of seeds 11 and 12 together (issue #18, class 6). For a
#: correct answer (shift uniform in [-MAX_DELTA, MAX_DELTA], flip with probability 1/2) each
#: bound fails with probability below 1e-4 on one fixed seed pair, so a correct answer passes
#: every run; shifts of one sign, a narrow spread or rare flips fail every run.
MIN_EACH_SIGN = 6
MIN_SPREAD = 0.5 * 2 * MAX_DELTA
FLIPS_WITHIN = (6, 26)


def _distribution_sane(shifts: list[float], flips: int) -> None:
    """The shifts and flips of both seeds follow the spec's distribution, within the bounds."""
    count = len(shifts)
    negative, positive = sum(d < 0 for d in shifts), sum(d > 0 for d in shifts)
    if min(negative, positive) < MIN_EACH_SIGN:
        raise AssertionError(
            f"augment: expected brightness shifts drawn uniformly from [-{MAX_DELTA}, "
            f"{MAX_DELTA}], so about as many negative as positive, but the {count} images of "
            f"seeds 11 and 12 got {negative} negative and {positive} positive shifts")
    if max(shifts) - min(shifts) < MIN_SPREAD:
        raise AssertionError(
            f"augment: expected brightness shifts spread over [-{MAX_DELTA}, {MAX_DELTA}], but "
            f"the {count} images of seeds 11 and 12 got shifts from {min(shifts):+.3f} to "
            f"{max(shifts):+.3f} only")
    low, high = FLIPS_WITHIN
    if not low <= flips <= high:
        raise AssertionError(
            f"augment: expected each image flipped with probability 1/2, but {flips} of the "
            f"{count} images of seeds 11 and 12 were flipped (expected {low}-{high})")


def _augmentation_sane(out: np.ndarray, originals: np.ndarray) -> tuple[list[float], int]:
    """Each image is its input (or mirror) plus one shift within bounds, in input order.

    Returns:
        The shifts, and how many images were flipped.
    """
    if out.shape != originals.shape:
        raise AssertionError(f"augment: expected {len(originals)} images shaped "
                             f"{originals.shape[1:]}, got an array shaped {out.shape}")
    deltas, flips = [], 0
    for i, (got, image) in enumerate(zip(out, originals, strict=True)):
        matches = [(flipped, float(np.mean(got - base)))
                   for flipped, base in ((False, image), (True, image[:, ::-1]))
                   if np.allclose(got - base, np.mean(got - base), atol=1e-5)]
        if not matches:
            raise AssertionError(
                f"augment: image {i} is not the input image (or its left-right mirror) plus "
                f"one brightness shift; expected exactly that augmentation, in input order")
        flipped, delta = matches[0]
        if abs(delta) > MAX_DELTA + 1e-5:
            raise AssertionError(f"augment: image {i} was shifted by {delta:+.3f}; expected "
                                 f"shifts in [-{MAX_DELTA}, {MAX_DELTA}]")
        deltas.append(round(delta, 4))
        flips += flipped
    if len(set(deltas)) < len(deltas) // 2:
        raise AssertionError(
            f"augment: expected a different random brightness shift for each image, but the "
            f"{len(deltas)} images got only {len(set(deltas))} different shifts: is every "
            f"element seeded with the same seed?")
    if not 0 < flips < len(out):
        raise AssertionError(f"augment: expected about half of the images flipped, saw "
                             f"{flips} of {len(out)}")
    return deltas, flips


# --------------------------------------------------------------------------- exercise 3


@dataclass
class FastRun:
    """One measurement of a pipeline against the naive loop and the ideal bound, run at the
    same time. Times in seconds; ``log`` holds ``(stage, thread, start, end)`` events."""

    naive_s: float
    ideal_s: float
    pipeline_s: float
    values: list[np.ndarray]
    log: list[tuple[str, str, float, float]]

    @property
    def speedup(self) -> float:
        """Naive loop time over pipeline time."""
        return self.naive_s / self.pipeline_s

    @property
    def ideal_speedup(self) -> float:
        """Naive loop time over the ideal bound's time."""
        return self.naive_s / self.ideal_s

    @property
    def share_of_ideal(self) -> float:
        """The pipeline's speed-up as a share of the ideal one."""
        return self.ideal_s / self.pipeline_s

    def max_parallel(self, stage: str) -> int:
        """Most calls of ``stage`` in flight at one moment."""
        spans = [(s, e) for what, _t, s, e in self.log if what == stage]
        return max((sum(s2 < e and s < e2 for s2, e2 in spans) for s, e in spans), default=0)


def naive_loop(read: Callable[[int], np.ndarray], transform: Callable[[np.ndarray], Any],
               n: int, train_step: Callable[[Any], None]) -> None:
    """The hand-written baseline: read, transform, train, one record after another."""
    for i in range(n):
        train_step(transform(read(i)))


def measure(pipeline: Callable[..., Any] | None, n: int = FAST_RECORDS) -> FastRun:
    """Run the naive loop, the ideal bound and ``pipeline(read, transform, n)`` at once.

    The ideal bound is a training loop whose input costs nothing after the first record: one
    read and one transform, then ``n`` training steps. With ``pipeline=None`` only the first
    two run (the pipeline time is then the naive time).
    """
    log: list[tuple[str, str, float, float]] = []
    values: list[np.ndarray] = []
    times: dict[str, float] = {}

    def step(into: list | None) -> Callable[[Any], None]:
        def train(x: Any) -> None:
            start = time.perf_counter()
            time.sleep(TRAIN_S)
            if into is not None:
                values.append(_values(x, "iterating the pipeline"))
                log.append(("train", threading.current_thread().name, start,
                            time.perf_counter()))
        return train

    def timed(name: str, body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            start = time.perf_counter()
            body()
            times[name] = time.perf_counter() - start
        return run

    def ideal() -> None:
        time.sleep(read_seconds(0) + TRANSFORM_S)
        for _ in range(n):
            time.sleep(TRAIN_S)

    targets = [timed("naive", lambda: naive_loop(make_read(read_seconds), make_transform(), n,
                                                 step(None))),
               timed("ideal", ideal)]
    if pipeline is not None:
        # Built before the clock starts: tracing the map functions is a one-off cost.
        dataset = pipeline(make_read(read_seconds, log), make_transform(log), n)
        train = step(values)
        targets.append(timed("pipeline", lambda: [train(x) for x in dataset]))
    errors = [e for e in released_together(targets)[1] if e is not None]
    if errors:
        raise errors[0]
    return FastRun(times["naive"], times["ideal"], times.get("pipeline", times["naive"]),
                   values, log)


#: The order run: record i's read and transform take ORDER_SLOW_S when i is even and
#: ORDER_FAST_S when odd, so in every pair the later element is ready long before the earlier.
ORDER_SLOW_S = 0.060
ORDER_FAST_S = 0.001


def _uneven(index: int) -> float:
    return ORDER_SLOW_S if index % 2 == 0 else ORDER_FAST_S


def _uneven_transform() -> Callable[[np.ndarray], np.ndarray]:
    """``2 * x``, taking :func:`_uneven` seconds of record ``x``'s index (read off its values)."""
    def transform(x: Any) -> np.ndarray:
        values = np.asarray(x, dtype="float32")
        time.sleep(_uneven(int(round(float(values.reshape(-1)[0]) / 10))))
        return values * 2
    return transform


def order_run(fast_pipeline: Callable[..., Any], n: int = FAST_RECORDS) -> list[int | None]:
    """The record order ``fast_pipeline`` yields when later records are always ready first.

    Every even record takes 60 ms to read and to transform, every odd one 1 ms, so a stage
    that hands out results as they finish (``deterministic=False``, a thread pool's
    ``as_completed``) reorders every pair, on a quiet machine or a loaded one; the timing
    run's reads (slow, uneven, and the transform stage paced by them) hid such a transform
    map (issue #18, class 5: out of order in 127 of 399 runs with instant reads, never in
    grading).
    """
    dataset = fast_pipeline(make_read(_uneven), _uneven_transform(), n)
    return [int(round(float(v[0]) / 20)) if v.shape == (WIDTH,) else None
            for v in (_values(x, "iterating the pipeline").reshape(-1) for x in dataset)]


def check_fast(fast_pipeline: Callable[..., Any]) -> None:
    """Grade exercise 3 (``fast_pipeline``); AssertionError with the student's message.

    Engines: real tf.data threads, no harness engine. First the order run
    (:func:`order_run`: records that finish in reverse pairs must still come out 0, 1, 2,
    ...), then the timing run (:func:`measure`): values and order again, at least 2 reads in
    flight, and the speed-up share of the ideal measured in the same run.
    """
    name = "fast_pipeline"
    try:
        order = order_run(fast_pipeline)
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"{name}: building and iterating the pipeline raised "
            f"{exception_line(error)} (expected transform(read(i)) for i in "
            f"range({FAST_RECORDS}))") from None
    if order != list(range(FAST_RECORDS)):
        raise AssertionError(
            f"{name}: expected transform(read(i)) for i = 0, 1, ..., {FAST_RECORDS - 1}, in "
            f"that order, but when every odd record was read and transformed faster than the "
            f"even one before it, the training loop got records {order}. Training order must "
            f"not depend on which read or transform finishes first: keep every map "
            f"deterministic.")
    try:
        run = measure(fast_pipeline)
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"{name}: building and iterating the pipeline raised "
            f"{exception_line(error)} (expected transform(read(i)) for i in "
            f"range({FAST_RECORDS}))") from None
    expected = [2 * record(i) for i in range(FAST_RECORDS)]
    got = [v.reshape(-1) for v in run.values]
    order = [int(round(float(v[0]) / 20)) if v.shape == (WIDTH,) else None for v in got]
    in_order = len(got) == len(expected) and all(
        np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
    if not in_order:
        raise AssertionError(
            f"{name}: expected transform(read(i)) for i = 0, 1, ..., {FAST_RECORDS - 1}, in "
            f"that order, but the training loop got records {order}. Training order must not "
            f"depend on which read finishes first: keep the map deterministic.")
    parallel = run.max_parallel("read")
    if parallel < 2:
        raise AssertionError(
            f"{name}: expected reads to run in parallel (I/O waits overlap), but at most "
            f"{parallel} read ran at a time (speed-up {run.speedup:.2f}x over the naive loop, "
            f"ideal {run.ideal_speedup:.2f}x)")
    if run.share_of_ideal < MIN_SHARE_OF_IDEAL:
        raise AssertionError(
            f"{name}: expected a speed-up over the naive loop of at least "
            f"{MIN_SHARE_OF_IDEAL:.0%} of the ideal {run.ideal_speedup:.2f}x measured in the same "
            f"run, but measured {run.speedup:.2f}x ({run.share_of_ideal:.0%} of ideal)")


# --------------------------------------------------------------------------- exercise 4

#: Schedules per explored run of ``ServedStats``. Search bound: every schedule with at most one
#: preemption (28 for the solution; the lost update of an unlocked ``+=`` needs one), then
#: seeded samples up to this count. Every wrong answer in the tests is found in the first 28.
SERVED_SCHEDULES = 100
#: Records the integration run maps in parallel through ``tf.numpy_function``.
SERVED_RECORDS = 4
#: Schedules of the overlap run (two calls whose reads wait for each other): a lock held
#: through the read deadlocks in the first schedule; a correct answer passes every one.
OVERLAP_SCHEDULES = 20


class MissingRecord(OSError):
    """What the explored runs' ``read`` raises for an odd index (a file that is not there)."""


def read_or_missing(index: Any) -> np.ndarray:
    """An instant ``read``: ``record(index)`` for an even index, :class:`MissingRecord` for odd."""
    index = int(index)
    if index % 2:
        raise MissingRecord(f"record {index} is missing")
    return record(index)


class _ServedRun:
    """One explored schedule: the student's object over :func:`read_or_missing`, and what each call
    really did (appended by the grader's workers: a list append is one atomic step)."""

    def __init__(self, stats_class: Callable[[Callable[[Any], np.ndarray]], Any]) -> None:
        self.stats = stats_class(read_or_missing)
        self.outcomes: list[str] = []

    def call(self, index: int) -> None:
        try:
            self.stats(index)
        except MissingRecord:
            self.outcomes.append("failed")
            return
        self.outcomes.append("served")


def _served_worker(indices: Sequence[int]) -> Callable[[_ServedRun], None]:
    def work(run: _ServedRun) -> None:
        for index in indices:
            run.call(index)
    return work


def _counts(stats: Any, exercise: str = "ServedStats") -> tuple[int, int]:
    return (plain(stats.served(), f"{exercise}.served()", int),
            plain(stats.failed(), f"{exercise}.failed()", int))


def served_on_one_thread(stats_class: Callable[..., Any]) -> None:
    """The contract on one thread, within :data:`TIMEOUT_S`: records come back unchanged, a
    failing read's error is raised again, and the counts match; AssertionError if not."""
    calls = "stats(0), stats(1) (its read raises), stats(2)"

    def body() -> tuple[list[Any], tuple[int, int]]:
        stats = stats_class(read_or_missing)
        got: list[Any] = [stats(0)]
        try:
            stats(1)
        except MissingRecord:
            got.append("raised")
        else:
            got.append("returned")
        got.append(stats(2))
        return got, _counts(stats)

    got, counts = bounded("ServedStats", f"on one thread, {calls}", body, TIMEOUT_S)
    what = "ServedStats: on one thread"
    if _identify(_values(got[0], f"{what}, stats(0)")) != 0 \
            or _identify(_values(got[2], f"{what}, stats(2)")) != 2:
        raise AssertionError(f"{what}, stats(0) and stats(2) should return read(0) and read(2) "
                             "unchanged")
    if got[1] != "raised":
        raise AssertionError(f"{what}, stats(1) returned although read(1) raised; expected the "
                             "read's error to be raised again (after counting it)")
    if counts != (2, 1):
        raise AssertionError(f"{what}, after {calls}: served() == {counts[0]} and failed() == "
                             f"{counts[1]}; expected 2 and 1")


def run_served(stats_class: Callable[..., Any], *, seed: int = SEED,
               max_schedules: int = SERVED_SCHEDULES) -> Result:
    """Explore two threads calling one object as tf.data's workers would, two calls each
    (one read served, one read failing); ``served()`` and ``failed()`` must then count
    exactly the calls that returned and that raised."""

    def check(run: _ServedRun) -> None:
        served, failed = _counts(run.stats)
        want = (run.outcomes.count("served"), run.outcomes.count("failed"))
        assert (served, failed) == want, (
            f"{want[0]} calls returned a record and {want[1]} raised, so expected served() "
            f"== {want[0]} and failed() == {want[1]}, but they were {served} and {failed}: "
            + ("counts were lost (two threads read the same count, and each wrote back its "
               "own count plus one)" if served + failed < sum(want) else
               "calls were counted more than once" if served + failed > sum(want) else
               "calls were counted as the wrong kind"))

    return explore(lambda: _ServedRun(stats_class),
                   [_served_worker([0, 1]), _served_worker([2, 3])], check,
                   seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)


def run_overlap(stats_class: Callable[..., Any], *, seed: int = SEED,
                max_schedules: int = OVERLAP_SCHEDULES) -> Result:
    """Explore two threads calling one object, ``stats(0)`` and ``stats(1)``, whose reads each
    wait until the other read has started. Reads that overlap finish in every schedule; an
    object that makes one read wait for another (a lock held through ``read``) deadlocks."""

    def setup() -> Any:
        started = [threading.Event(), threading.Event()]

        def read(index: Any) -> np.ndarray:
            index = int(index)
            started[index].set()
            started[1 - index].wait()
            return record(index)

        return stats_class(read)

    return explore(setup, [lambda stats: stats(0), lambda stats: stats(1)], lambda _: True,
                   seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)


def served_by_a_parallel_map(stats_class: Callable[..., Any]) -> tuple[int, int]:
    """Map :data:`SERVED_RECORDS` records in parallel through ``tf.numpy_function(stats, ...)``
    on tf.data's own threads (bounded); ``(served(), failed())`` afterwards.

    Raises:
        AssertionError: the map failed or hung, or a record came back changed.
    """
    import tensorflow as tf

    exercise = "ServedStats"
    stats = stats_class(make_read(0.0))

    def load(index: Any) -> Any:
        out = tf.numpy_function(stats, [index], tf.float32)
        out.set_shape((WIDTH,))
        return out

    dataset = tf.data.Dataset.range(SERVED_RECORDS).map(load, num_parallel_calls=SERVED_RECORDS)
    got = bounded(exercise, f"a parallel map over {SERVED_RECORDS} records",
                  lambda: [_values(x) for x in dataset], TIMEOUT_S)
    found = sorted(_identify(v) for v in got if _identify(v) is not None)
    if found != list(range(SERVED_RECORDS)):
        raise AssertionError(f"{exercise}: a parallel map over records 0-{SERVED_RECORDS - 1} "
                             f"gave back records {found}; expected each one, unchanged")
    return _counts(stats)


def check_served(stats_class: Callable[..., Any]) -> None:
    """Grade exercise 4 (``ServedStats``); AssertionError with the student's message.

    Engines: ``explore`` for the counts (:func:`run_served`: every interleaving with at most
    one preemption, then seeded samples up to :data:`SERVED_SCHEDULES`) and for the overlap of
    reads (:func:`run_overlap`: a read that waits for the other deadlocks when the answer
    serializes them, in the first schedule, with no timing involved); then real tf.data
    threads (:func:`served_by_a_parallel_map`).
    """
    exercise = "ServedStats"
    served_on_one_thread(stats_class)
    require_ok(run_served(stats_class), exercise=exercise,
               again=call_text("tfdata.run_served", "ServedStats"))
    overlap = run_overlap(stats_class)
    if overlap.verdict == "deadlock":
        raise AssertionError(
            f"{exercise}: two threads called stats(0) and stats(1), whose reads each wait "
            "until the other read has started, and they never finished: while one thread's "
            "read ran, your object kept the other thread from starting its read (a lock held "
            "through read()); expected the two reads to run at the same time, as tf.data's "
            "threads need: hold the lock only around the counts")
    require_ok(overlap, exercise=exercise, again=call_text("tfdata.run_overlap", "ServedStats"))
    counts = served_by_a_parallel_map(stats_class)
    if counts != (SERVED_RECORDS, 0):
        raise AssertionError(f"{exercise}: after a parallel map over {SERVED_RECORDS} "
                             f"records, served() == {counts[0]} and failed() == {counts[1]}; "
                             f"expected {SERVED_RECORDS} and 0")


# --------------------------------------------------------------------------- pictures


def plot_timeline(runs: Sequence[tuple[str, FastRun]]) -> Any:
    """One panel per run: a lane per stage (read, transform, train), bars where it ran."""
    from matplotlib.figure import Figure

    colors = {"read": "tab:blue", "transform": "tab:orange", "train": "tab:green"}
    figure = Figure(figsize=(9, 1.3 * len(runs) + 0.4), layout="constrained")
    axes_list = figure.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    for axes, (title, run) in zip(axes_list, runs, strict=True):
        origin = min((s for _w, _t, s, _e in run.log), default=0.0)
        for lane, stage in enumerate(("read", "transform", "train")):
            spans = [(s - origin, e - s) for what, _t, s, e in run.log if what == stage]
            # Parallel calls of one stage stack inside its lane.
            ends: list[float] = []
            for start, width in sorted(spans):
                slot = next((k for k, end in enumerate(ends) if end <= start), len(ends))
                if slot == len(ends):
                    ends.append(0.0)
                ends[slot] = start + width
                axes.broken_barh([(start * 1000, width * 1000)],
                                 (2 - lane - 0.4 + 0.8 * slot / 3, 0.8 / 3 - 0.02),
                                 color=colors[stage], edgecolor="white", linewidth=0.5)
        axes.set_yticks([2, 1, 0], ["read", "transform", "train"])
        axes.set_title(f"{title}: {run.pipeline_s * 1000:.0f} ms, {run.speedup:.2f}x the "
                       f"naive loop", fontsize=10, loc="left")
    axes_list[-1].set_xlabel("time since the first call (ms)")
    return figure
