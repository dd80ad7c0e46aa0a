"""Exercise 1 (``make_dataset``): two epochs on one thread, then two threads at once."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.plain import exception_line
from autograder.checks.tfdata.records import _describe, _identify, _values, make_read, record
from autograder.checks.tfdata.settings import (
    EARLY_STOPS,
    EARLY_TAKE,
    LEFT_RUNNING_WAIT_S,
    LOADER_RECORDS,
    ONE_THREAD_RUNS,
    ONE_THREAD_SWITCH_S,
    SEED,
    STRESS_TRIALS,
    TIMEOUT_S,
)
from autograder.harness import Result, stress, tamper


def run_loader(make_dataset: Callable[[Callable[[int], np.ndarray], int], Any], *,
               trials: int = STRESS_TRIALS, observed: list | None = None,
               one_thread: list | None = None, early: list | None = None) -> Result:
    """Iterate ``make_dataset(read, n)`` twice on one thread, then in iterations that stop
    early (nothing may stay running behind them), then from two threads at once.

    When ``one_thread`` is given, each one-thread run appends the record indices its two
    iterations yielded (``[first, second]``, None for a corrupt record); ``early`` gets the
    number of the answer's threads still running after the early-stopped iterations; when
    ``observed`` is given, each trial appends what its two threads saw, alike (for the judge).
    """
    n = LOADER_RECORDS
    runs = _one_thread(make_dataset, n)
    if one_thread is not None:
        one_thread.extend(runs)
    left = left_running_after_early_stops(make_dataset, n)
    if early is not None:
        early.append(left)
    if left:
        raise AssertionError(
            f"make_dataset: {EARLY_STOPS} iterations over one dataset each stopped after "
            f"{EARLY_TAKE} of the {n} records (as a training loop's break does), and "
            f"{left} thread(s) your code started were still running "
            f"{LEFT_RUNNING_WAIT_S:g} s later: each early stop leaves one behind, blocked for "
            "good (a producer on a full queue nobody reads); expected an iteration that stops "
            "to leave nothing running: let tf.data run the reads (tf.numpy_function, or "
            "from_generator with a generator function that reads itself)")

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
        if observed is not None:
            observed.append([list(got) for got in state["seen"]])
        for k, got in enumerate(state["seen"]):
            problem = _describe(got, n)
            assert not problem, (
                f"thread {k}, iterating the dataset while another thread did too: expected "
                f"each of the {n} records exactly once, but saw {len(got)} element(s): "
                f"{problem}")

    return stress(setup, [worker(0), worker(1)], check, trials=trials, seed=SEED,
                  timeout_s=TIMEOUT_S)


def left_running_after_early_stops(make_dataset: Callable[..., Any], n: int) -> int:
    """How many Python threads started while :data:`EARLY_STOPS` iterations of
    ``make_dataset(read, n)`` each stopped after :data:`EARLY_TAKE` elements are still alive
    once the iterators are gone, after waiting up to :data:`LEFT_RUNNING_WAIT_S` for them to
    end (threads of native code that merely called Python do not count)."""
    before = threading.enumerate()  # kept, so that no id below is reused by a new thread
    known = {id(thread) for thread in before}
    try:
        dataset = make_dataset(_instant_read, n)
        for _ in range(EARLY_STOPS):
            iterator = iter(dataset)
            for _ in range(EARLY_TAKE):
                next(iterator)
            del iterator
        del dataset
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"make_dataset: iterations that stop after {EARLY_TAKE} of the {n} records raised "
            f"{exception_line(error)}") from None
    gc.collect()
    deadline = tamper.monotonic() + LEFT_RUNNING_WAIT_S
    while True:
        # enumerate() lists the running threads only (it is watched: replacing it fails the
        # stress run that follows); Thread.is_alive, a method the answer could patch, is not read.
        left = [thread for thread in threading.enumerate() if id(thread) not in known
                and not isinstance(thread, threading._DummyThread)]  # noqa: SLF001
        if not left or tamper.monotonic() >= deadline:
            return len(left)
        time.sleep(0.05)


def _one_thread(make_dataset: Callable[..., Any], n: int) -> list[list[list[int | None]]]:
    return [_one_thread_run(make_dataset, n) for _ in range(ONE_THREAD_RUNS)]


def _instant_read(index: Any) -> np.ndarray:
    # No sleep, not even sleep(0): that would hand the interpreter to another thread.
    return record(int(index))


def _one_thread_run(make_dataset: Callable[..., Any], n: int) -> list[list[int | None]]:
    # Instant reads and a long switch interval: a thread the answer starts itself (a producer
    # filling a shared buffer) runs as far ahead as it may before the dataset copies an element.
    # The elements are read only after both iterations: one that still shares the answer's
    # buffer shows what was written there last.
    interval = tamper.getswitchinterval()
    tamper.setswitchinterval(ONE_THREAD_SWITCH_S)
    try:
        dataset = make_dataset(_instant_read, n)
        first_elements = list(dataset)
        second_elements = list(dataset)
        what = "make_dataset: iterating the dataset"
        first = [_identify(_values(x, what)) for x in first_elements]
        second = [_identify(_values(x, what)) for x in second_elements]
    except AssertionError:
        raise
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"make_dataset: on one thread, building and iterating the dataset raised "
            f"{exception_line(error)} (expected each of "
            f"the {n} records exactly once)") from None
    finally:
        held = tamper.getswitchinterval() == ONE_THREAD_SWITCH_S
        tamper.setswitchinterval(interval)
    if not held:
        raise AssertionError(
            f"make_dataset: the answer called sys.setswitchinterval while the check ran "
            f"(expected the {ONE_THREAD_SWITCH_S} s interval the check set to stay: it lets a "
            f"thread the answer starts run as far ahead as it can)")
    for label, got in (("first", first), ("second", second)):
        problem = _describe(got, n)
        if problem:
            raise AssertionError(
                f"make_dataset: on one thread, the {label} iteration over the dataset should "
                f"yield each of the {n} records exactly once (expected {n} elements), but it "
                f"yielded {len(got)}: {problem}. A tf.data.Dataset can be iterated again and "
                f"again; each iteration must start from the beginning.")
    return [first, second]
