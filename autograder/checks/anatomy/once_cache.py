"""Exercise 3: a check-then-act cache explored, each key loaded once and shared."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from autograder.checks.anatomy.one_thread import _on_one_thread
from autograder.checks.anatomy.settings import SCHEDULES_CACHE, SEED, TIMEOUT_S
from autograder.checks.plain import plain
from autograder.harness import Result, explore


class _CacheRun:
    """One schedule's shared state: the student's cache, its loader's calls and the answers."""

    def __init__(self, cache_class: Callable[[Callable[[str], Any]], Any]):
        self.loads: list[str] = []
        self.made: dict[str, Any] = {}
        self.got: list[tuple[str, Any]] = []
        self.cache = cache_class(self.load)

    def load(self, key):
        if type(key) is not str:  # an exact str passes without a step the scheduler sees
            key = plain(key, _LOAD_KEY, str)
        self.loads.append(key)
        value = types.SimpleNamespace(key=key, serial=len(self.loads))
        self.made[key] = value
        return value


#: Names a key ``load`` was called with that is not a plain str (the message goes on
#: "returned <type>; expected ...").
_LOAD_KEY = "load was called with a key that is not a plain str: the key get(key) passed on"


def _get_a_then_b(run):
    run.got.append(("a", run.cache.get("a")))
    run.got.append(("b", run.cache.get("b")))


def _get_a(run):
    run.got.append(("a", run.cache.get("a")))


def _get_b_then_a(run):
    run.got.append(("b", run.cache.get("b")))
    run.got.append(("a", run.cache.get("a")))


def cache_on_one_thread(cache_class: Callable[[Callable[[str], Any]], Any]) -> dict:
    """Check the cache's contract on one thread (with a timeout); AssertionError if not met.

    Returns:
        The judge's observation: the keys ``load`` was called with, the keys of what the two
        distinct gets returned, and whether the second ``get('x')`` returned the same object.
    """
    calls: list[str] = []

    def load(key: str) -> Any:
        calls.append(key)
        return types.SimpleNamespace(key=key)

    def body() -> tuple[Any, Any, Any]:
        cache = cache_class(load)
        return cache.get("x"), cache.get("x"), cache.get("y")

    first, again, other = _on_one_thread("OnceCache", "get('x'), get('x'), get('y')", body)
    calls = plain(calls, f"OnceCache: on one thread, {_LOAD_KEY}")
    keys = [plain(getattr(value, "key", None), "OnceCache: on one thread, get(key).key")
            for value in (first, other)]
    problems = []
    if calls != ["x", "y"]:
        problems.append(f"load was called with {calls}, expected ['x', 'y'] (once per key)")
    if keys != ["x", "y"]:
        problems.append("get(key) must return what load(key) returned")
    elif again is not first:
        problems.append("a second get('x') returned a different object than the first")
    if problems:
        raise AssertionError("OnceCache: on one thread, get('x'), get('x'), get('y'): "
                             + "; ".join(problems))
    return {"loads": list(calls), "keys": list(keys), "same_object": again is first}


def run_cache(cache_class: Callable[[Callable[[str], Any]], Any], *, seed: int = SEED,
              max_schedules: int = SCHEDULES_CACHE, observed: list | None = None) -> Result:
    """Explore a shared cache: three threads ask for keys "a" and "b" in different orders.

    The check: ``load`` ran exactly once per key, every ``get`` returned the object ``load``
    made for its key, and a later ``get("a")`` still returns it without loading again. When
    ``observed`` is given, each schedule appends what it saw (for the judge): the keys loaded,
    how many gets returned the object ``load`` made for their key, and how many gets ran.
    """

    def check(run: _CacheRun) -> None:
        problems = []
        for key in ("a", "b"):
            times = run.loads.count(key)
            if times != 1:
                problems.append(f"load({key!r}) ran {times} times, expected exactly once")
        others = sorted(set(run.loads) - {"a", "b"})
        if others:
            problems.append(f"load was called with {others}, keys no get() asked for; expected "
                            "only 'a' and 'b'")
        for key, value in run.got:
            if value is not run.made.get(key):
                problems.append(f"a get({key!r}) returned {value!r}, not the object load made "
                                "(callers of one key must all get the same object)")
                break
        if not problems:
            later = run.cache.get("a")
            if later is not run.made["a"] or run.loads.count("a") != 1:
                problems.append("a get('a') after the threads finished did not return the "
                                "cached object without loading again")
        if observed is not None:
            observed.append({"loads": [k if type(k) is str else None for k in run.loads],
                             "shared": sum(value is run.made.get(key) for key, value in run.got),
                             "gets": len(run.got)})
        assert not problems, "; ".join(problems)

    return explore(lambda: _CacheRun(cache_class), [_get_a_then_b, _get_a, _get_b_then_a],
                   check, seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)
