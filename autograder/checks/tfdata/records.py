"""The simulated records, reads and transforms, and reading a pipeline's elements back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.checks.plain import plain_array
from autograder.checks.tfdata.settings import LOADER_READ_S, PIPELINE_THREADS, TRANSFORM_S, WIDTH
from autograder.harness.tamper import opaque


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


def own_threads(dataset: Any) -> Any:
    """``dataset`` on a private pool of :data:`PIPELINE_THREADS` threads when it is a
    ``tf.data.Dataset`` (anything else as it is): its parallel calls then run as they would on a
    machine with that many cores, however many cores the grading process may use (exercises 2
    and 3: see :data:`PIPELINE_THREADS`)."""
    import tensorflow as tf

    if not isinstance(dataset, tf.data.Dataset):
        return dataset
    options = tf.data.Options()
    options.threading.private_threadpool_size = PIPELINE_THREADS
    return dataset.with_options(options)


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
