"""Answers a student might write for lesson 04 (tfdata): wrong ones and correct ones.

Each exercise gets the mistakes people really make (a generator object handed to
``from_generator``, a shared iterator or counter inside a map, a hand-rolled producer thread
that reuses one buffer, stateful random ops, one seed for every element, ``deterministic=False``,
prefetch without parallel reads, a Python loop wrapped in ``from_generator``) and correct
answers written differently from the lesson's solution.
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
from typing import Any

import numpy as np
import tensorflow as tf

from autograder.checks import tfdata
from tests.checks.grading_runs import demo_answer
from tests.checks.liars import EqualsEverything, lying

AUTOTUNE = tf.data.AUTOTUNE
SPEC = tf.TensorSpec((tfdata.WIDTH,), tf.float32)


def _py(function):
    def call(x):
        out = tf.numpy_function(function, [x], tf.float32)
        out.set_shape((tfdata.WIDTH,))
        return out
    return call


# --------------------------------------------------------------------------- make_dataset


def generator_object_loader(read, n):
    """``from_generator`` given a generator object (through a lambda): one pass, shared."""
    records = (read(i) for i in range(n))
    return tf.data.Dataset.from_generator(lambda: records, output_signature=SPEC)


def shared_counter_loader(read, n):
    """A parallel map whose element ignores its index and takes the next one from a counter."""
    counter = itertools.count()
    return tf.data.Dataset.range(n).map(_py(lambda _i: read(next(counter))),
                                        num_parallel_calls=AUTOTUNE)


def reused_buffer_loader(read, n):
    """A hand-rolled producer thread reading ahead into one buffer shared by every iteration."""
    buffer = np.empty(tfdata.WIDTH, dtype="float32")

    def generate():
        q = queue.Queue(maxsize=4)

        def produce():
            for i in range(n):
                buffer[:] = read(i)
                q.put(buffer)
            q.put(None)

        threading.Thread(target=produce, daemon=True).start()
        while (item := q.get()) is not None:
            yield item

    return tf.data.Dataset.from_generator(generate, output_signature=SPEC).prefetch(2)


def interval_resetting_loader(read, n):
    """The reused-buffer loader, setting a 1 µs switch interval first, as if to keep its
    producer in step with the dataset so the shared buffer never shows."""
    import sys

    sys.setswitchinterval(1e-6)
    return reused_buffer_loader(read, n)


def producer_per_iteration_loader(read, n):
    """A fresh producer thread and queue per iteration (nothing shared between iterations), but
    an iteration that stops early leaves its producer blocked on the full queue for good: one
    leaked thread per early stop (red team round 4, l3)."""
    def generate():
        ahead = queue.Queue(maxsize=4)

        def produce():
            for i in range(n):
                ahead.put(read(i))
            ahead.put(None)

        threading.Thread(target=produce, daemon=True).start()
        while (item := ahead.get()) is not None:
            yield item

    return tf.data.Dataset.from_generator(generate, output_signature=SPEC)


#: Its producers are blocked on a full queue for good, every run (10 s of waiting for them
#: each): three runs, not twenty.
producer_per_iteration_loader.decided_by_construction = True


def stopped_producer_loader(read, n):
    """Correct: a producer thread per iteration that stops when its iteration does (the
    generator's ``finally`` sets an event; the producer's puts wait briefly and look at it)."""
    def generate():
        ahead = queue.Queue(maxsize=4)
        stop = threading.Event()

        def offer(item):
            while not stop.is_set():
                try:
                    ahead.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    pass
            return False

        def produce():
            for i in range(n):
                if not offer(read(i).copy()):
                    return
            offer(None)

        threading.Thread(target=produce, daemon=True).start()
        try:
            while (item := ahead.get()) is not None:
                yield item
        finally:
            stop.set()

    return tf.data.Dataset.from_generator(generate, output_signature=SPEC)


def generator_function_loader(read, n):
    """``from_generator`` given the generator *function*: a fresh generator per iteration."""
    def generate():
        for i in range(n):
            yield read(i)
    return tf.data.Dataset.from_generator(generate, output_signature=SPEC).prefetch(AUTOTUNE)


def tensor_slices_loader(read, n):
    """Indices as tensor slices, an unordered parallel map: order is not part of the contract."""
    return (tf.data.Dataset.from_tensor_slices(np.arange(n))
            .map(_py(read), num_parallel_calls=4, deterministic=False))


WRONG_LOADERS = [generator_object_loader, shared_counter_loader, reused_buffer_loader,
                 interval_resetting_loader, producer_per_iteration_loader]
CORRECT_LOADERS = [generator_function_loader, tensor_slices_loader, stopped_producer_loader]


# --------------------------------------------------------------------------- augment


def stateful_augment(images, seed):
    """``tf.random.uniform`` and a coin flip with no per-element seed: new draws every run."""
    tf.random.set_seed(seed)

    def one(image):
        image = image + tf.random.uniform([], -tfdata.MAX_DELTA, tfdata.MAX_DELTA)
        return tf.cond(tf.random.uniform([]) < 0.5, lambda: image[:, ::-1], lambda: image)

    return images.map(one, num_parallel_calls=AUTOTUNE)


def shared_generator_augment(images, seed):
    """A ``tf.random.Generator`` shared by the parallel map: its state moves on every run."""
    generator = tf.random.Generator.from_seed(seed)

    def one(image):
        image = image + generator.uniform([], -tfdata.MAX_DELTA, tfdata.MAX_DELTA)
        return tf.cond(generator.uniform([]) < 0.5, lambda: image[:, ::-1], lambda: image)

    return images.map(one, num_parallel_calls=AUTOTUNE)


def one_seed_augment(images, seed):
    """Stateless ops, but every element gets the same seed: every image the same shift."""
    def one(image):
        pair = tf.constant([seed, 0], dtype=tf.int64)
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA, pair)
        return tf.image.stateless_random_flip_left_right(image, pair)

    return images.map(one, num_parallel_calls=AUTOTUNE)


def unordered_augment(images, seed):
    """Per-element stateless seeds, but ``deterministic=False``: same images, order changes."""
    def one(index, image):
        pair = tf.stack([tf.constant(seed, tf.int64), index])
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA, pair)
        return tf.image.stateless_random_flip_left_right(image, pair + 1)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=False)


def split_seed_augment(images, seed):
    """Seeds split from one per-element seed with ``stateless_split``; ops written by hand."""
    def one(index, image):
        seeds = tf.random.experimental.stateless_split(tf.stack([index, seed]), num=2)
        delta = tf.random.stateless_uniform([], seeds[0], -tfdata.MAX_DELTA, tfdata.MAX_DELTA)
        flip = tf.random.stateless_uniform([], seeds[1]) < 0.5
        image = image + delta
        return tf.where(flip, tf.reverse(image, axis=[1]), image)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


def numpy_rng_augment(images, seed):
    """A numpy ``default_rng((seed, index))`` per element inside ``numpy_function``."""
    def draw(index, image):
        rng = np.random.default_rng((seed, int(index)))
        image = image + np.float32(rng.uniform(-tfdata.MAX_DELTA, tfdata.MAX_DELTA))
        return (image[:, ::-1] if rng.random() < 0.5 else image).astype("float32")

    def one(index, image):
        out = tf.numpy_function(draw, [index, image], tf.float32)
        out.set_shape(tfdata.IMAGE_SHAPE)
        return out

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE)


def _seeded_augment(images: Any, seed: int, shift: Any, flip: Any) -> Any:
    """Per-element stateless seeds, deterministic order; ``shift(seeds)`` and ``flip(seeds)``
    draw the shift and the flip decision: the wrong answers below differ only there."""
    def one(index, image):
        seeds = tf.random.experimental.stateless_split(tf.stack([index, seed]), num=2)
        image = image + shift(seeds[0])
        return tf.where(flip(seeds[1]), tf.reverse(image, axis=[1]), image)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


def brighter_only_augment(images, seed):
    """Shifts drawn from [0, MAX_DELTA]: right size, wrong sign (issue #18, class 6)."""
    return _seeded_augment(
        images, seed, lambda s: tf.random.stateless_uniform([], s, 0.0, tfdata.MAX_DELTA),
        lambda s: tf.random.stateless_uniform([], s) < 0.5)


def narrow_shift_augment(images, seed):
    """Shifts drawn from [-MAX_DELTA / 10, MAX_DELTA / 10]: within bounds, far too narrow."""
    return _seeded_augment(
        images, seed,
        lambda s: tf.random.stateless_uniform([], s, -tfdata.MAX_DELTA / 10,
                                              tfdata.MAX_DELTA / 10),
        lambda s: tf.random.stateless_uniform([], s) < 0.5)


def rare_flip_augment(images, seed):
    """A flip "sometimes": with probability 0.05 instead of 1/2."""
    return _seeded_augment(
        images, seed,
        lambda s: tf.random.stateless_uniform([], s, -tfdata.MAX_DELTA, tfdata.MAX_DELTA),
        lambda s: tf.random.stateless_uniform([], s) < 0.05)


def _flip_with(probability: float) -> Any:
    """An answer right in all but its flip probability: per-element stateless seeds, a
    uniform shift, a flip when a stateless uniform draw is below ``probability``."""
    def augment(images, seed):
        return _seeded_augment(
            images, seed,
            lambda s: tf.random.stateless_uniform([], s, -tfdata.MAX_DELTA, tfdata.MAX_DELTA),
            lambda s: tf.random.stateless_uniform([], s) < probability)

    return augment


def fifth_flip_augment(images, seed):
    """A flip with probability 0.2 (issue #32): passed the old bound of 6-26 flips in 32."""
    return _flip_with(0.2)(images, seed)


def forty_percent_flip_augment(images, seed):
    """A flip with probability 0.4: as near 1/2 as the check must still tell apart."""
    return _flip_with(0.4)(images, seed)


def sixty_percent_flip_augment(images, seed):
    """A flip with probability 0.6: the band's other side (its verdict is deterministic, as
    0.4's is, so it is checked once, in test_tfdata's flip-count test, not 20 times)."""
    return _flip_with(0.6)(images, seed)


def bernoulli_flip_augment(images, seed):
    """Correct, unusual: the flip decided by a stateless binomial draw, the shift uniform."""
    return _seeded_augment(
        images, seed,
        lambda s: tf.random.stateless_uniform([], s, -tfdata.MAX_DELTA, tfdata.MAX_DELTA),
        lambda s: tf.random.stateless_binomial([], s, 1, 0.5) > 0)


def same_seed_augment(images, seed):
    """One element seed for both the brightness and the flip: flipped exactly when the shift
    is negative (red team round 4, a1)."""
    def one(index, image):
        element_seed = tf.stack([tf.constant(seed, tf.int64), index])
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA, element_seed)
        return tf.image.stateless_random_flip_left_right(image, element_seed)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


def truncated_normal_augment(images, seed):
    """Shifts from a normal truncated to [-MAX_DELTA, MAX_DELTA], not uniform (round 4, a2)."""
    return _seeded_augment(
        images, seed,
        lambda s: tf.random.stateless_truncated_normal([], s, stddev=tfdata.MAX_DELTA / 2),
        lambda s: tf.random.stateless_uniform([], s) < 0.5)


def seed_plus_index_augment(images, seed):
    """Element seed ``seed + index``: seed 12's draws are seed 11's moved by one (round 4, a6)."""
    def one(index, image):
        element_seed = tf.stack([seed + index, tf.constant(0, tf.int64)])
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA, element_seed)
        return tf.image.stateless_random_flip_left_right(image, element_seed + 1)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


def pixel_seed_augment(images, seed):
    """Element seed from the image's own pixels (its sum): identical images at different
    positions get identical draws (red team round 4, a3)."""
    def one(image):
        key = tf.cast(tf.reduce_sum(image) * 1e6, tf.int64)
        element_seed = tf.stack([tf.constant(seed, tf.int64), key])
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA, element_seed)
        return tf.image.stateless_random_flip_left_right(image, element_seed + 1)

    return images.map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


#: The flip images' identical pairs fail it with one fixed seed, the same way every run: three
#: runs, not twenty.
pixel_seed_augment.decided_by_construction = True


def clipped_augment(images, seed):
    """The solution's draws, and the brightened image clipped to [0, 1] before the flip: not
    the image plus a shift wherever a pixel leaves the range (red team round 4, a4)."""
    def one(index, image):
        element_seed = tf.stack([tf.constant(seed, tf.int64), index])
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA, element_seed)
        image = tf.clip_by_value(image, 0.0, 1.0)
        return tf.image.stateless_random_flip_left_right(image, element_seed + 1)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


def op_seeded_sequential_augment(images, seed):
    """Stateful ops with op seeds in a sequential map: the same draws on every iteration under
    one global seed, other draws under another (red team round 4, a5)."""
    def one(image):
        image = image + tf.random.uniform([], -tfdata.MAX_DELTA, tfdata.MAX_DELTA, seed=seed)
        flip = tf.random.uniform([], seed=seed + 1) < 0.5
        return tf.where(flip, tf.reverse(image, axis=[1]), image)

    return images.map(one)


#: Both fail on one thread, before any stress, the same way every run: three runs, not twenty.
clipped_augment.decided_by_construction = True
op_seeded_sequential_augment.decided_by_construction = True


def fold_in_augment(images, seed):
    """Correct, unusual: a ``tf.random.Generator.from_seed`` key folded with the position
    (``stateless_fold_in``), the flip and the shift from two different folds."""
    key = tf.random.Generator.from_seed(seed).make_seeds(1)[:, 0]

    def one(index, image):
        element = tf.random.experimental.stateless_fold_in(key, index)
        shift_seed = tf.random.experimental.stateless_fold_in(element, 0)
        flip_seed = tf.random.experimental.stateless_fold_in(element, 1)
        image = image + tf.random.stateless_uniform([], shift_seed, -tfdata.MAX_DELTA,
                                                    tfdata.MAX_DELTA)
        return tf.image.stateless_random_flip_left_right(image, flip_seed)

    return images.enumerate().map(one, num_parallel_calls=AUTOTUNE, deterministic=True)


def next_position_flip_augment(images, seed):
    """Wrong (red team round 8, 3/3 before): the flip is seeded with ``[seed, index + 1]``,
    the next image's shift seed: image i is flipped exactly when image i + 1 is darkened."""
    def one(index, image):
        seed64 = tf.constant(seed, tf.int64)
        image = tf.image.stateless_random_brightness(image, tfdata.MAX_DELTA,
                                                   tf.stack([seed64, index]))
        return tf.image.stateless_random_flip_left_right(image, tf.stack([seed64, index + 1]))

    return images.enumerate().map(one, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


next_position_flip_augment.decided_by_construction = True  # stateless, fixed seeds


WRONG_AUGMENTS = [next_position_flip_augment, stateful_augment, shared_generator_augment,
                  one_seed_augment,
                  unordered_augment, brighter_only_augment, narrow_shift_augment,
                  rare_flip_augment, fifth_flip_augment, forty_percent_flip_augment,
                  same_seed_augment, truncated_normal_augment, seed_plus_index_augment,
                  pixel_seed_augment, clipped_augment, op_seeded_sequential_augment]
CORRECT_AUGMENTS = [split_seed_augment, numpy_rng_augment, bernoulli_flip_augment,
                    fold_in_augment]


# --------------------------------------------------------------------------- fast_pipeline


def prefetch_only_pipeline(read, transform, n):
    """``prefetch`` on sequential maps: input overlaps training, but reads run one at a time."""
    return (tf.data.Dataset.range(n).map(_py(read)).map(_py(transform))
            .prefetch(AUTOTUNE))


def unordered_pipeline(read, transform, n):
    """Parallel reads with ``deterministic=False``: fast, but records arrive out of order."""
    return (tf.data.Dataset.range(n)
            .map(_py(read), num_parallel_calls=AUTOTUNE, deterministic=False)
            .map(_py(transform), num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE))


def python_loop_pipeline(read, transform, n):
    """The naive loop moved into ``from_generator``: prefetched, but one read at a time."""
    def generate():
        for i in range(n):
            yield transform(read(i))
    return tf.data.Dataset.from_generator(generate, output_signature=SPEC).prefetch(AUTOTUNE)


def one_map_pipeline(read, transform, n):
    """Read and transform in one parallel map, fixed parallelism, explicit prefetch."""
    return (tf.data.Dataset.range(n)
            .map(_py(lambda i: transform(read(i))), num_parallel_calls=4, deterministic=True)
            .prefetch(2))


def interleave_pipeline(read, transform, n):
    """Parallel ``interleave`` of one-record datasets, then a parallel transform."""
    def one(i):
        return tf.data.Dataset.from_tensors(i).map(_py(read))
    return (tf.data.Dataset.range(n)
            .interleave(one, cycle_length=4, num_parallel_calls=AUTOTUNE, deterministic=True)
            .map(_py(transform), num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE))


def unordered_transform_pipeline(read, transform, n):
    """Parallel reads in order, then a transform map with ``deterministic=False``: the slow,
    uneven reads of the timing run pace the transforms so they finish in order, and it passed
    (issue #18, class 5); records that finish in reverse pairs show the reordering."""
    return (tf.data.Dataset.range(n)
            .map(_py(read), num_parallel_calls=AUTOTUNE, deterministic=True)
            .map(_py(transform), num_parallel_calls=AUTOTUNE, deterministic=False)
            .prefetch(AUTOTUNE))


def options_deterministic_pipeline(read, transform, n):
    """Correct, unusual: maps without ``deterministic=``, order kept by ``tf.data.Options``
    (``deterministic = True``), which also governs the parallel maps."""
    options = tf.data.Options()
    options.deterministic = True
    return (tf.data.Dataset.range(n)
            .map(_py(read), num_parallel_calls=AUTOTUNE)
            .map(_py(transform), num_parallel_calls=AUTOTUNE)
            .prefetch(AUTOTUNE)
            .with_options(options))


def pairs_pipeline(read, transform, n):
    """Reads in pairs with ``batch(2, drop_remainder=True)``: loses the last record when n is
    odd (red team round 4, f9)."""
    def read_pair(indices):
        return np.stack([read(int(i)) for i in indices])

    def load_pair(indices):
        out = tf.numpy_function(read_pair, [indices], tf.float32)
        out.set_shape((2, tfdata.WIDTH))
        return out

    return (tf.data.Dataset.range(n).batch(2, drop_remainder=True)
            .map(load_pair, num_parallel_calls=AUTOTUNE).unbatch()
            .map(_py(transform), num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE))


WRONG_PIPELINES = [prefetch_only_pipeline, unordered_pipeline, python_loop_pipeline,
                   unordered_transform_pipeline, pairs_pipeline]
CORRECT_PIPELINES = [one_map_pipeline, interleave_pipeline, options_deterministic_pipeline]


# --------------------------------------------------------------------------- ServedStats


#: Wrong: ``+=`` on the counts from tf.data's threads ("the GIL makes it safe"), as the demo
#: class's racy student writes it.
UnlockedStats = demo_answer("demo/racy/04_tfdata.py", "ex_tfdata_served", "ServedStats",
                            renamed="UnlockedStats")


class LockAroundReadStats(UnlockedStats):
    """Wrong: counts right, but the lock is held through the read, so reads never overlap."""

    def __init__(self, read):
        super().__init__(read)
        self._lock = threading.Lock()

    def __call__(self, i):
        with self._lock:
            return super().__call__(i)


#: Reads that wait for each other deadlock it in the overlap run's first schedule, every run:
#: three runs, not twenty.
LockAroundReadStats.decided_by_construction = True


class LockPerCallStats(UnlockedStats):
    """Wrong: a new lock on every call guards nothing."""

    def __call__(self, i):
        try:
            record = self._read(i)
        except Exception:
            with threading.Lock():
                self.failed_count += 1
            raise
        with threading.Lock():
            self.served_count += 1
        return record


class FailuresUnlockedStats(UnlockedStats):
    """Wrong: the served count is locked, the failed count is not."""

    def __init__(self, read):
        super().__init__(read)
        self._lock = threading.Lock()

    def __call__(self, i):
        try:
            record = self._read(i)
        except Exception:
            self.failed_count += 1
            raise
        with self._lock:
            self.served_count += 1
        return record


class PerThreadStats:
    """Wrong: each thread counts in its own ``threading.local``; the totals see one thread."""

    def __init__(self, read):
        self._read = read
        self._local = threading.local()

    def _mine(self):
        if not hasattr(self._local, "served"):
            self._local.served = self._local.failed = 0
        return self._local

    def __call__(self, i):
        mine = self._mine()
        try:
            record = self._read(i)
        except Exception:
            mine.failed += 1
            raise
        mine.served += 1
        return record

    def served(self):
        return self._mine().served

    def failed(self):
        return self._mine().failed


class SwallowsErrorsStats:
    """Wrong: counts a failed read but returns None instead of raising its error again."""

    def __init__(self, read):
        self._read = read
        self._lock = threading.Lock()
        self._served = self._failed = 0

    def __call__(self, i):
        try:
            record = self._read(i)
        except Exception:
            with self._lock:
                self._failed += 1
            return None
        with self._lock:
            self._served += 1
        return record

    def served(self):
        return self._served

    def failed(self):
        return self._failed


class LyingStats(UnlockedStats):
    """Liar: racy counts, reported as ints that equal any number."""

    def served(self):
        return EqualsEverything(self.served_count)

    def failed(self):
        return EqualsEverything(self.failed_count)


class LazyLockStats:
    """Makes its lock on first use (``if not hasattr(self, "_lock")``): two first calls can
    each make one, and count under different locks."""

    def __init__(self, read):
        self._read = read
        self._served = self._failed = 0

    def _guard(self):
        if not hasattr(self, "_lock"):
            self._lock = threading.Lock()
        return self._lock

    def __call__(self, i):
        try:
            record = self._read(i)
        except Exception:
            with self._guard():
                self._failed += 1
            raise
        with self._guard():
            self._served += 1
        return record

    def served(self):
        with self._guard():
            return self._served

    def failed(self):
        with self._guard():
            return self._failed


class _LockedStats:
    """The lesson's layout (a lock around each count, none around the read), for the wrong
    answers below to change one thing of: which errors count (``counted``), where the counts
    live (``_counts``)."""

    counted: type[BaseException] = Exception

    def __init__(self, read):
        self._read = read
        self._lock = threading.Lock()
        self._counts = {"served": 0, "failed": 0}

    def _add(self, kind, amount=1):
        with self._lock:
            self._counts[kind] += amount

    def __call__(self, i):
        try:
            record = self._read(i)
        except self.counted:
            self._add("failed")
            raise
        self._add("served")
        return record

    def served(self):
        with self._lock:
            return self._counts["served"]

    def failed(self):
        with self._lock:
            return self._counts["failed"]


class CountFirstStats(_LockedStats):
    """Counts a record before its read and takes it back when the read raises ("most reads
    succeed"): served() counts a read that is still running, and may yet fail (red team
    round 4, s3)."""

    def __call__(self, i):
        self._add("served")
        try:
            return self._read(i)
        except Exception:
            self._add("served", -1)
            self._add("failed")
            raise


class ClassCountsStats(_LockedStats):
    """Keeps the counts on the class and resets them in ``__init__``: a second object resets
    the first one's counts (red team round 4, s4)."""

    shared_counts = {"served": 0, "failed": 0}

    def __init__(self, read):
        super().__init__(read)
        ClassCountsStats.shared_counts.update(served=0, failed=0)
        self._counts = ClassCountsStats.shared_counts


class OSErrorOnlyStats(_LockedStats):
    """Counts only the reads that raise an OSError (a missing file); a read that raises anything
    else is not counted at all (red team round 4, s2)."""

    counted = OSError


class TwoReadsStats(_LockedStats):
    """Lets two reads in at once (``BoundedSemaphore(2)``): a third thread's read waits for one
    of them, so tf.data's threads do not all read together (red team round 4, s5)."""

    def __init__(self, read):
        super().__init__(read)
        self._reads = threading.BoundedSemaphore(2)

    def __call__(self, i):
        with self._reads:
            return super().__call__(i)


#: Three reads that wait for each other deadlock it in the overlap run's first schedule, every
#: run (no interleaving is sampled): three runs, not twenty.
TwoReadsStats.decided_by_construction = True


class FourReadsStats(TwoReadsStats):
    """Counts under a lock, but lets four reads in at once (``BoundedSemaphore(4)``, red team
    round 8: 3/3 while the overlap run had three calls)."""

    def __init__(self, read):
        super().__init__(read)
        self._reads = threading.BoundedSemaphore(4)


FourReadsStats.decided_by_construction = True


WRONG_STATS = [UnlockedStats, LockAroundReadStats, LockPerCallStats, FailuresUnlockedStats,
               PerThreadStats, SwallowsErrorsStats, LazyLockStats, CountFirstStats,
               ClassCountsStats, OSErrorOnlyStats, TwoReadsStats, FourReadsStats,
               *lying(LyingStats)]


#: Correct: one ``list.append`` per call (one indivisible step), counted on demand, as the
#: demo class's correct student writes it.
MarksStats = demo_answer("demo/correct/04_tfdata.py", "ex_tfdata_served", "ServedStats",
                         renamed="MarksStats")


class CounterUnderLockStats:
    """Correct: a ``collections.Counter`` updated in ``finally``, under an RLock."""

    def __init__(self, read):
        self._read = read
        self._lock = threading.RLock()
        self._counts = collections.Counter()

    def __call__(self, i):
        outcome = "failed"
        try:
            record = self._read(i)
            outcome = "served"
            return record
        finally:
            with self._lock:
                self._counts[outcome] += 1

    def served(self):
        with self._lock:
            return self._counts["served"]

    def failed(self):
        with self._lock:
            return self._counts["failed"]


CORRECT_STATS = [MarksStats, CounterUnderLockStats]


# --------------------------------------------------------------------------- lying answers
# Elements that lie (comparisons, ``__array__``, a faked ``__class__``, iteration). The checks
# read every element as a plain float32 array before judging it, so none of them passes.


class _LyingArray(np.ndarray):
    """An array equal to every array, whose mean and difference claim a shift of 0.1."""

    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)

    def __ne__(self, other):
        return np.zeros(np.shape(self), dtype=bool)

    def __sub__(self, other):
        return np.full(np.shape(self), 0.1, dtype="float32")

    __hash__ = None


class _FakeTensor:
    """Not a tensor, but ``isinstance`` says so; its ``numpy()`` is record 0 every time."""

    @property
    def __class__(self):
        return tf.Tensor

    def numpy(self):
        return tfdata.record(0).view(_LyingArray)

    def __array__(self, dtype=None, copy=None):
        return tfdata.record(0)

    def __eq__(self, other):
        return True

    __hash__ = None


class _Iterable:
    """A "dataset": each iteration calls ``start()`` for its iterator."""

    def __init__(self, start):
        self.start = start

    def __iter__(self):
        return self.start()


def lying_array_loader(read, n):
    """Liar: one shared pass over the records (second epoch empty), as arrays equal to all."""
    shared = (read(i).view(_LyingArray) for i in range(n))
    return _Iterable(lambda: shared)


def fake_tensor_loader(read, n):
    """Liar: no reads at all, ``n`` fake tensors claiming to be every record."""
    return _Iterable(lambda: iter([_FakeTensor() for _ in range(n)]))


WRONG_LOADERS += lying(lying_array_loader, fake_tensor_loader)


def lying_images_augment(images, seed):
    """Liar: the images unchanged, as arrays whose difference claims a 0.1 shift."""
    return [np.asarray(image).view(_LyingArray) for image in images]


WRONG_AUGMENTS += lying(lying_images_augment)


def lying_loop_pipeline(read, transform, n):
    """Liar: the naive loop in a generator, yielding arrays equal to every record."""
    class Pipeline:
        def __iter__(self):
            return (np.asarray(transform(read(i))).view(_LyingArray) for i in range(n))

    return Pipeline()


WRONG_PIPELINES += lying(lying_loop_pipeline)
