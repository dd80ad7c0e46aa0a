"""Answers a student might write for lesson 00 (anatomy of a race): wrong ones and correct ones.

Wrong answers are the mistakes people really make: for the schedules, a sequential run, the two
tokens swapped, the demo's token copied, a switch one step too late, a token without its
``v1:`` prefix; for the counter and the cache, no lock (the ``+=`` that never lost an update
with real threads on Python 3.11), a new lock on every call, a lock on one side only, a check
outside the lock. Correct answers are written differently from the lesson's solution (another
primitive, another structure, a hand-written token in another order).
"""

from __future__ import annotations

import collections
import functools
import threading
from typing import Any

from tests.checks.liars import (
    EqualsEverything,
    KeptKey,
    PosingInt,
    PosingKey,
    get_hiding_extra_calls,
    lying,
)

# --------------------------------------------------------------------------- schedules
# (OVERDRAFT, DOUBLE_PAY) pairs. Steps of one customer running alone: 2 read the balance for
# the `if`, 3 read it for `-=`, 4 write it, 5 read `account.paid`, 6 store the payout, 7 done.

WRONG_SCHEDULES = {
    "sequential_runs": ("v1:1>0,7>1", "v1:1>1,7>0"),
    "tokens_swapped": ("v1:1>0,2>1,5>0,10>1", "v1:1>0,3>1,9>0"),
    "demo_counter_token_as_overdraft": ("v1:1>0,3>1,6>0", "v1:1>0,2>1,5>0,10>1"),
    "switch_after_the_write": ("v1:1>0,5>1,11>0", "v1:1>0,2>1,5>0,10>1"),
    "same_token_twice": ("v1:1>0,3>1,9>0", "v1:1>0,3>1,9>0"),
    "no_v1_prefix": ("1>0,3>1,9>0", "1>0,2>1,5>0,10>1"),
    "list_of_pairs": ([(1, 0), (3, 1), (9, 0)], [(1, 0), (2, 1), (5, 0), (10, 1)]),
    "empty_tokens": ("v1:", "v1:"),
    "double_pay_switch_before_the_if": ("v1:1>0,3>1,9>0", "v1:1>0,2>1,8>0"),
}

CORRECT_SCHEDULES = {
    "explore_found_them": ("v1:1>0,3>1,9>0", "v1:1>0,2>1,5>0,10>1"),
    "bob_first_by_hand": ("v1:1>1,3>0,9>1", "v1:1>0,4>1,7>0,10>1"),
    "minimal_switches": ("v1:1>0,3>1", "v1:1>1,4>0,7>1"),
    "with_spaces_around": ("  v1:1>0,3>1,9>0\n", " v1:1>1,2>0,5>1,10>0 "),
    # Spaces anywhere are allowed and ignored (issue #18: say so in the lesson).
    "with_spaces_inside": ("v1: 1>0, 3>1, 9>0", "v1:1 > 0, 2 > 1, 5 > 0, 10 > 1"),
}


# --------------------------------------------------------------------------- SafeCounter


class PlusEqualsCounter:
    """No lock: ``+=`` never lost an update with real threads on 3.11, but it can."""

    def __init__(self) -> None:
        self.value = 0

    def increment(self, by: int = 1) -> None:
        self.value += by

    def take(self) -> int:
        value = self.value
        self.value = 0
        return value


class LockPerCallCounter(PlusEqualsCounter):
    """A new lock on every call: each caller holds its own lock and nobody ever waits."""

    def increment(self, by: int = 1) -> None:
        with threading.Lock():
            self.value += by

    def take(self) -> int:
        with threading.Lock():
            value = self.value
            self.value = 0
            return value


class IncrementOnlyLockCounter(PlusEqualsCounter):
    """Locks the writers but not ``take``: an increment lands between its read and reset."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def increment(self, by: int = 1) -> None:
        with self.lock:
            self.value += by


class TakeOnlyLockCounter(PlusEqualsCounter):
    """Locks ``take`` but not the increments: two increments still interleave."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            value = self.value
            self.value = 0
            return value


class ReadUnderLockCounter(PlusEqualsCounter):
    """Reads under the lock but resets after releasing it: the increments in between vanish."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def increment(self, by: int = 1) -> None:
        with self.lock:
            self.value += by

    def take(self) -> int:
        with self.lock:
            value = self.value
        self.value = 0
        return value


class ClassLockInstanceValueCounter(PlusEqualsCounter):
    """Locks the increment with a lock made per call in a helper: still a new lock each time."""

    def _lock(self) -> threading.Lock:
        return threading.Lock()

    def increment(self, by: int = 1) -> None:
        with self._lock():
            self.value += by

    def take(self) -> int:
        with self._lock():
            value, self.value = self.value, 0
            return value


class ResetThroughIncrementCounter(PlusEqualsCounter):
    """``take`` resets by calling ``increment`` while holding the same plain Lock: it waits
    for itself forever (caught on one thread, with a timeout, before any race is looked for)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def increment(self, by: int = 1) -> None:
        with self.lock:
            self.value += by

    def take(self) -> int:
        with self.lock:
            value = self.value
            self.increment(-value)
            return value


class TwoLocksCounter:
    """One lock for the count, one for the reporter, taken in opposite orders: fine on one
    thread, a deadlock when an increment and a take each hold their first lock."""

    def __init__(self) -> None:
        self.value = 0
        self.count_lock = threading.Lock()
        self.report_lock = threading.Lock()

    def increment(self, by: int = 1) -> None:
        with self.count_lock, self.report_lock:
            self.value += by

    def take(self) -> int:
        with self.report_lock, self.count_lock:
            value, self.value = self.value, 0
            return value


class RLockCounter:
    """Correct: an RLock taken with acquire/release in try/finally."""

    def __init__(self) -> None:
        self._count = 0
        self._guard = threading.RLock()

    def increment(self, by: int = 1) -> None:
        self._guard.acquire()
        try:
            self._count = self._count + by
        finally:
            self._guard.release()

    def take(self) -> int:
        self._guard.acquire()
        try:
            taken, self._count = self._count, 0
        finally:
            self._guard.release()
        return taken


class DequeCounter:
    """Correct without a lock: each increment is one ``append`` (a single step); ``take``
    pops what is there, so an increment is either taken now or left for the next take."""

    def __init__(self) -> None:
        self._deltas: collections.deque[int] = collections.deque()

    def increment(self, by: int = 1) -> None:
        self._deltas.append(by)

    def take(self) -> int:
        total = 0
        while True:
            try:
                total += self._deltas.popleft()
            except IndexError:
                return total


class SemaphoreCounter:
    """Correct: a ``Semaphore(1)`` as the mutex, via ``with``."""

    def __init__(self) -> None:
        self.value = 0
        self.gate = threading.Semaphore(1)

    def increment(self, by: int = 1) -> None:
        with self.gate:
            self.value += by

    def take(self) -> int:
        with self.gate:
            value = self.value
            self.value = 0
        return value


WRONG_COUNTERS = [
    PlusEqualsCounter,
    LockPerCallCounter,
    IncrementOnlyLockCounter,
    TakeOnlyLockCounter,
    ReadUnderLockCounter,
    ClassLockInstanceValueCounter,
    ResetThroughIncrementCounter,
    TwoLocksCounter,
]
CORRECT_COUNTERS = [RLockCounter, DequeCounter, SemaphoreCounter]


# --------------------------------------------------------------------------- OnceCache


class CheckThenActCache:
    """No lock: two threads miss the same key and both load it."""

    def __init__(self, load: Any) -> None:
        self.load = load
        self.values: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        if key not in self.values:
            self.values[key] = self.load(key)
        return self.values[key]


class LockPerCallCache(CheckThenActCache):
    """A new lock on every call protects nothing."""

    def get(self, key: str) -> Any:
        with threading.Lock():
            return super().get(key)


class LockTheCheckOnlyCache(CheckThenActCache):
    """The check is locked, the load and the store are not: both misses still load."""

    def __init__(self, load: Any) -> None:
        super().__init__(load)
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            missing = key not in self.values
        if missing:
            self.values[key] = self.load(key)
        return self.values[key]


class LockTheStoreOnlyCache(CheckThenActCache):
    """Only the store is locked: both misses load, the second store replaces the first."""

    def __init__(self, load: Any) -> None:
        super().__init__(load)
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        if key not in self.values:
            value = self.load(key)
            with self.lock:
                self.values[key] = value
        return self.values[key]


class NoSecondCheckCache(CheckThenActCache):
    """Double-checked locking without the second check: the waiter loads again."""

    def __init__(self, load: Any) -> None:
        super().__init__(load)
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        if key not in self.values:
            with self.lock:
                self.values[key] = self.load(key)
        return self.values[key]


class SetdefaultCache(CheckThenActCache):
    """``setdefault`` looks atomic, but its argument ``load(key)`` runs on every call."""

    def get(self, key: str) -> Any:
        return self.values.setdefault(key, self.load(key))


class LruCacheCache:
    """``functools.lru_cache`` is thread-safe, but it runs the function once per concurrent miss."""

    def __init__(self, load: Any) -> None:
        self.get = functools.lru_cache(maxsize=None)(load)


WRONG_CACHES = [
    CheckThenActCache,
    LockPerCallCache,
    LockTheCheckOnlyCache,
    LockTheStoreOnlyCache,
    NoSecondCheckCache,
    SetdefaultCache,
    LruCacheCache,
]


class DoubleCheckedCache:
    """Correct: a fast unlocked look-up, then check again under the lock before loading."""

    def __init__(self, load: Any) -> None:
        self._load = load
        self._values: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        value = self._values.get(key)
        if value is None:
            with self._lock:
                if key not in self._values:
                    self._values[key] = self._load(key)
                value = self._values[key]
        return value


class EventPerKeyCache:
    """Correct: the thread that claims a key (under a guard lock) loads it outside the lock;
    the others wait on that key's Event."""

    def __init__(self, load: Any) -> None:
        self._load = load
        self._values: dict[str, Any] = {}
        self._ready: dict[str, threading.Event] = {}
        self._guard = threading.Lock()

    def get(self, key: str) -> Any:
        with self._guard:
            event = self._ready.get(key)
            mine = event is None
            if mine:
                event = self._ready[key] = threading.Event()
        if mine:
            self._values[key] = self._load(key)
            event.set()
        else:
            event.wait()
        return self._values[key]


class ConditionCache:
    """Correct: a Condition guards the dict and a set of keys being loaded."""

    def __init__(self, load: Any) -> None:
        self._load = load
        self._values: dict[str, Any] = {}
        self._loading: set[str] = set()
        self._changed = threading.Condition()

    def get(self, key: str) -> Any:
        with self._changed:
            while key in self._loading:
                self._changed.wait()
            if key in self._values:
                return self._values[key]
            self._loading.add(key)
        value = self._load(key)
        with self._changed:
            self._values[key] = value
            self._loading.discard(key)
            self._changed.notify_all()
        return value


CORRECT_CACHES = [DoubleCheckedCache, EventPerKeyCache, ConditionCache]


# --------------------------------------------------------------------------- answers that lie
# Each returns (or hands the grader) a value whose own methods misreport what it holds. They
# must fail like the honest mistakes they hide: the grader reads only plain data.


class _SplitLiesToken(str):
    """A token whose text is one schedule while ``split``/``strip`` hand over another."""

    def __new__(cls, text: str, handed_over: str) -> _SplitLiesToken:
        token = super().__new__(cls, text)
        token.handed_over = handed_over
        return token

    def split(self, *args: Any, **kwargs: Any) -> list[str]:
        return [self.handed_over]

    def strip(self, *args: Any) -> str:
        return self.handed_over


class _PosingToken:
    """Not a str, but its ``__class__`` says str; ``split``/``strip`` hand over a right token."""

    __class__ = property(lambda self: str)  # type: ignore[assignment]

    def __init__(self, handed_over: str) -> None:
        self.handed_over = handed_over

    def split(self, *args: Any, **kwargs: Any) -> list[str]:
        return [self.handed_over]

    def strip(self, *args: Any) -> str:
        return self.handed_over

    def __repr__(self) -> str:
        return repr(self.handed_over)


WRONG_SCHEDULES.update({
    # Sequential runs whose split() hands the grader the right tokens.
    "str_subclass_splitting_into_other_tokens": (
        _SplitLiesToken("v1:1>0,7>1", "v1:1>0,3>1,9>0"),
        _SplitLiesToken("v1:1>1,7>0", "v1:1>0,2>1,5>0,10>1")),
    "object_posing_as_a_str": (_PosingToken("v1:1>0,3>1,9>0"),
                               _PosingToken("v1:1>0,2>1,5>0,10>1")),
})


class EqualsEverythingCounter(PlusEqualsCounter):
    """Lies: no lock, and take() returns an int subclass equal to every expected total."""

    def take(self) -> int:
        super().take()
        return EqualsEverything(0)


class LiesOnlyUnderThreadsCounter(PlusEqualsCounter):
    """Lies: no lock; honest ints on one thread, an int equal to anything once threads share it."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def increment(self, by: int = 1) -> None:
        self.threads.add(threading.get_ident())
        super().increment(by)

    def take(self) -> int:
        self.threads.add(threading.get_ident())
        value = super().take()
        return value if len(self.threads) == 1 else EqualsEverything(value)


class PosingIntCounter(PlusEqualsCounter):
    """Lies: no lock, and take() returns an object posing as an int that equals anything."""

    def take(self) -> int:
        super().take()
        return PosingInt()  # type: ignore[return-value]


LYING_COUNTERS = lying(EqualsEverythingCounter, LiesOnlyUnderThreadsCounter, PosingIntCounter)
WRONG_COUNTERS += LYING_COUNTERS


class HiddenSecondLoadCache:
    """Lies: check-then-act loads a key twice, with keys that hide every load but the kept one."""

    key_type: Any = KeptKey

    def __init__(self, load: Any) -> None:
        self.load = load
        self.values: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return get_hiding_extra_calls(self.values, self.load, key, self.key_type)


class PosingKeySecondLoadCache(HiddenSecondLoadCache):
    """Lies: as above, with load keys that are objects posing as str."""

    key_type = PosingKey


LYING_CACHES = lying(HiddenSecondLoadCache, PosingKeySecondLoadCache)
WRONG_CACHES += LYING_CACHES
