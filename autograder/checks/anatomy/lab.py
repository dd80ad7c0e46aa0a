"""The notebook's real-thread trials: lost updates counted, throughput, a cache's loads."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks.kit import run_threads


def count_trials(make: Callable[[], Any], add: Callable[[Any, int], Any], *, threads: int,
                 per_thread: int, trials: int, switch_interval: float | None = None
                 ) -> list[int]:
    """Run ``add(shared, per_thread)`` on ``threads`` real threads, ``trials`` times.

    Args:
        make: Returns a fresh shared object with a ``value`` attribute (0) per trial.
        add: Adds 1 to ``shared.value`` ``per_thread`` times.
        switch_interval: When given, the interpreter's thread switch interval
            (``sys.setswitchinterval``, 5 ms by default) while the threads run: a shorter one
            switches threads more often, so a race shows in fewer trials.

    Returns:
        The final ``value`` of each trial (``threads * per_thread`` when nothing was lost).
    """
    finals = []
    before = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        for _ in range(trials):
            shared = make()
            run_threads(lambda _index, shared=shared: add(shared, per_thread), threads)
            finals.append(shared.value)
    finally:
        sys.setswitchinterval(before)
    return finals


def describe_losses(finals: Sequence[int], expected: int) -> str:
    """A one-line summary of :func:`count_trials`: in how many trials updates were lost."""
    lost = [expected - final for final in finals]
    failing = sum(1 for n in lost if n)
    share = [n / expected for n in lost]
    return (f"expected {expected:,} per trial; lost updates in {failing} of {len(finals)} trials "
            f"(lost {min(share):.1%} to {max(share):.1%} of the increments)")


def throughput(make: Callable[[], Any], work: Callable[[Any, int], Any], *, threads: int,
               per_thread: int, repeats: int = 3) -> float:
    """Best operations per second over ``repeats`` runs of ``work(shared, per_thread)``."""
    best = 0.0
    for _ in range(repeats):
        shared = make()
        elapsed = run_threads(lambda _index, shared=shared: work(shared, per_thread), threads)
        best = max(best, threads * per_thread / max(elapsed, 1e-9))
    return best


def cache_trials(cache_class: Callable[[Callable[[str], Any]], Any], *, threads: int,
                 trials: int, same_key: bool = True, load_s: float = 0.01
                 ) -> list[tuple[int, float]]:
    """Ask a fresh cache for keys from ``threads`` real threads at once, ``trials`` times.

    The loader sleeps ``load_s`` seconds, as reading a model from disk would (a sleep lets go of
    the GIL, like real I/O).

    Args:
        cache_class: Called as ``cache_class(load)``; must have ``get(key)``.
        same_key: Every thread asks for ``"model"`` when True, else thread ``i`` asks for
            ``"model-i"``.

    Returns:
        Per trial: how many times ``load`` ran, and the seconds until every thread had its answer.
    """
    results = []
    for _ in range(trials):
        loads: list[str] = []

        def load(key: str, loads: list[str] = loads) -> dict[str, str]:
            loads.append(key)
            time.sleep(load_s)
            return {"name": key}

        cache = cache_class(load)
        elapsed = run_threads(
            lambda index, cache=cache: cache.get("model" if same_key else f"model-{index}"),
            threads)
        results.append((len(loads), elapsed))
    return results
