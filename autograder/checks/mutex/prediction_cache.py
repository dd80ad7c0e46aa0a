"""Exercise 2, PredictionCache: concurrent misses of one slow key while another key is served."""

from __future__ import annotations

import functools
import itertools
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autograder.checks.mutex.settings import FAILING_TIMEOUT_S, SCHEDULES, SEED, _explore
from autograder.checks.plain import plain
from autograder.harness import Result

SLOW_KEY = "slow"
#: The other key's name starts with this; :func:`fast_key` picks the rest in each process.
FAST_PREFIX = "fast-"
#: A cache that stripes its locks by ``hash(key) % n`` (or ``& (n - 1)``) holds the slow
#: key's lock for the fast key too whenever n divides this: every n from 1 to 16, and 32, 64,
#: 20, 24, 30, 48... :func:`fast_key` makes the two keys collide modulo it, so the verdict
#: does not depend on the process's string hash seed.
STRIPES_COVERED = 4 * math.lcm(*range(1, 17))
#: How long the slow build waits (real seconds) for a get() of another key to finish. The
#: scheduler only lets this wait run out when no other thread can move, so a correct cache
#: never reaches it.
_OTHER_KEY_WAIT_S = 0.05


@functools.cache
def fast_key() -> str:
    """The other key of this process: the first ``fast-<n>`` whose string hash is the slow
    key's modulo :data:`STRIPES_COVERED` (strings hash differently in every process, so it
    is searched for here: about 3 million hashes, well under a second)."""
    target = hash(SLOW_KEY) % STRIPES_COVERED
    for number in itertools.count():
        key = f"{FAST_PREFIX}{number}"
        if hash(key) % STRIPES_COVERED == target:
            return key
    raise AssertionError("unreachable")


class _HashedAsSlow(str):
    """The fast key as the checked ``get`` passes it: equal to :func:`fast_key`'s name, but
    hashed as :data:`SLOW_KEY` is, so a cache that stripes its locks by ``hash(key)`` holds
    the slow key's lock for it whatever the number of stripes (a thousand stripes let the two
    keys share one in about 1 run in 25 with the name alone). Dicts and per-key locks tell
    the two keys apart by equality, as they must for any two keys whose hashes collide."""

    def __hash__(self) -> int:
        return hash(SLOW_KEY)


@dataclass
class CacheRun:
    """Shared state of one cache schedule.

    ``compute`` returns a new tuple ``(key, build number)`` per call, so callers that got the
    same cached object can be told from callers that got two builds.
    """

    cache: Any = None
    computed: list[str] = field(default_factory=list)
    slow: list[Any] = field(default_factory=list)
    fast: list[Any] = field(default_factory=list)
    slow_started: threading.Event = field(default_factory=threading.Event)
    fast_done: threading.Event = field(default_factory=threading.Event)
    blocked_by_slow: list[bool] = field(default_factory=list)


def run_cache(cache_class: Callable[[Callable[[str], Any]], Any], *, seed: int = SEED,
              schedules: int = SCHEDULES, observed: list | None = None) -> Result:
    """Two threads miss the same slow key while a third asks for a fast key, under ``explore``.

    Threads 0 and 1 call ``get("slow")``; thread 2 waits until the slow build has started and
    calls ``get`` of the fast key (:func:`fast_key`'s name, hashed as ``"slow"``: a striped lock
    shares it with ``"slow"``). Building ``"slow"`` waits until that ``get`` has returned (the
    scheduler lets that wait give up only when no thread can move). The check: ``compute`` ran
    exactly once per key, both callers of ``"slow"`` got the object ``compute`` returned, and
    the fast ``get`` returned while ``"slow"`` was being built. When ``observed`` is given, each
    schedule that passed appends (for the judge) the keys ``compute`` ran for, how often the
    build of ``"slow"`` gave up waiting for the fast ``get``, the key of each value the gets
    returned, and whether the two ``get("slow")`` calls returned the same object.
    """
    fast = fast_key()
    asked = _HashedAsSlow(fast)

    def setup() -> CacheRun:
        run = CacheRun()
        computed, started, fast_done = run.computed, run.slow_started, run.fast_done

        def compute(key: str) -> tuple[str, int]:
            if type(key) is _HashedAsSlow:
                key = str.__str__(key)
            elif type(key) is not str:  # an exact str passes with no step the scheduler sees
                key = plain(key, "compute was called with a key that is not a plain str: the "
                            "key get(key) passed on", str)
            computed.append(key)
            if key == SLOW_KEY:
                started.set()
                # A build of "slow" waits here until a get("fast") has returned:
                if not fast_done.wait(_OTHER_KEY_WAIT_S):
                    run.blocked_by_slow.append(True)
            return key, len(computed)

        run.cache = cache_class(compute)
        return run

    def get_slow(run: CacheRun) -> None:
        run.slow.append(run.cache.get(SLOW_KEY))

    def get_fast_during_slow_build(run: CacheRun) -> None:
        run.slow_started.wait()
        run.fast.append(run.cache.get(asked))
        run.fast_done.set()

    def check(run: CacheRun) -> None:
        for key in (SLOW_KEY, fast):
            times = run.computed.count(key)
            if times != 1:
                raise AssertionError(
                    f"compute({key!r}) ran {times} times, expected exactly once: threads "
                    f"that missed {key!r} at the same time each computed it")
        others = sorted(set(run.computed) - {SLOW_KEY, fast})
        if others:
            raise AssertionError(
                f"compute was called with {others}, keys no get() asked for; expected only "
                f"{SLOW_KEY!r} and {fast!r}")
        if run.blocked_by_slow:
            raise AssertionError(
                f"get({fast!r}) could not return while {SLOW_KEY!r} was being computed; "
                "expected other keys to be served meanwhile. A slow build holds up every other "
                "key: do not hold a lock that other keys need while compute() runs")
        for key, values in ((SLOW_KEY, run.slow), (fast, run.fast)):
            for value in plain(values, f"get({key!r})"):
                if not (isinstance(value, tuple) and len(value) == 2 and value[0] == key):
                    raise AssertionError(
                        f"get({key!r}) returned {value!r}, expected what compute({key!r}) "
                        "returned")
        first, second = run.slow
        if first is not second:
            raise AssertionError(
                f"the two get({SLOW_KEY!r}) calls returned different objects ({first!r} and "
                f"{second!r}); every caller must get the one cached object")
        if observed is not None:
            observed.append({
                "computed": [key if type(key) is str else None for key in run.computed],
                "gave_up": len(run.blocked_by_slow),
                "slow": [_key_of(value) for value in plain(run.slow, f"get({SLOW_KEY!r})")],
                "fast": [_key_of(value) for value in plain(run.fast, f"get({fast!r})")],
                "same_object": first is second})

    workers = [get_slow, get_slow, get_fast_during_slow_build]
    return _explore(setup, workers, check, seed, schedules)


def _key_of(value: Any) -> str | None:
    """The key a value ``get`` returned was built for (``compute`` returns ``(key, build)``),
    as the judge receives it; None for anything else."""
    if type(value) is tuple and len(value) == 2 and type(value[0]) is str:
        return value[0]
    return None


#: The key whose first ``compute`` raises (:func:`run_cache_failing`).
FAILING_KEY = "failing"


class ComputeFailed(Exception):
    """What ``compute`` raises on its first call in :func:`run_cache_failing`."""


@dataclass
class FailingRun:
    """Shared state of one failing-build schedule: the cache, ``compute``'s call count, and
    how each ``get`` ended (``"raised"``, ``"value"``, or ``"other"`` for a value that is not
    the key's)."""

    cache: Any = None
    calls: Any = field(default_factory=itertools.count)
    outcomes: list[str] = field(default_factory=list)


def run_cache_failing(cache_class: Callable[[Callable[[str], Any]], Any], *, seed: int = SEED,
                      schedules: int = SCHEDULES, observed: list | None = None) -> Result:
    """Two threads ``get`` one key whose first ``compute`` raises, under ``explore``.

    ``compute("failing")`` raises :class:`ComputeFailed` the first time and returns
    ``("failing", n)`` after. No ``get`` may wait for ever (a key left marked "being
    computed" by the failed build makes the scheduler report a deadlock): each returns the
    key's value or raises. When ``observed`` is given, each schedule that passed appends how
    its two gets ended (``"raised"`` or ``"value"``).
    """
    def setup() -> FailingRun:
        run = FailingRun()

        def compute(key: str) -> tuple[str, int]:
            number = next(run.calls)  # one C call: no step between reading and counting
            if number == 0:
                raise ComputeFailed(f"compute({key!r}) failed (the grader's first build)")
            return FAILING_KEY, number

        run.cache = cache_class(compute)
        return run

    def get_failing(run: FailingRun) -> None:
        try:
            value = run.cache.get(FAILING_KEY)
        except Exception:  # noqa: BLE001 - raising is one of the two right endings
            run.outcomes.append("raised")
            return
        run.outcomes.append("value" if _key_of(value) == FAILING_KEY else "other")

    def check(run: FailingRun) -> None:
        if "other" in run.outcomes:
            raise AssertionError(
                f"after the first compute({FAILING_KEY!r}) raised, a get({FAILING_KEY!r}) "
                "returned something compute never returned; expected the key's value or an "
                "error")
        if observed is not None:
            observed.append({"outcomes": list(run.outcomes)})

    return _explore(setup, [get_failing, get_failing], check, seed, schedules,
                    timeout_s=FAILING_TIMEOUT_S)
