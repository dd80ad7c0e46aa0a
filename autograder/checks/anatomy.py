"""Graded properties for lesson 00, "anatomy of a race": shared state, switches, schedules.

Everything in this lesson is pure-Python shared state, so every check uses the controlled
scheduler (:mod:`autograder.harness`): one thread at a time, switching before each instruction
other threads can see, with a fixed seed and a fixed number of schedules. The same answer gets
the same verdict in every grading run, and nothing is retried.

- :func:`check_schedules` replays the student's two schedule tokens against the lesson's bank
  account (:func:`withdraw`, :func:`alice`, :func:`bob`): one must leave the account
  overdrawn, the other must pay out more money than the account ever held.
- :func:`check_counter` explores a shared :class:`SafeCounter`-like class: every increment must
  be handed out by exactly one ``take()``, in every interleaving.
- :func:`check_cache` explores a shared check-then-act cache: each key is loaded exactly once
  under concurrent misses, and every caller of a key gets the same object.

The bank code below is the code the notebook shows; ``tests/checks/test_anatomy.py`` proves the
notebook's copy is identical, so a schedule a student works out in the notebook replays the same
way here. The worker functions in this module must be *user code* for the scheduler (it switches
only inside code outside site-packages and the standard library); :func:`_require_visible` proves
that before every check and fails closed, with an explanation, when it is not.

Plumbing the notebook uses (real-thread trials, throughput) lives here too.
"""

from __future__ import annotations

import re
import sys
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks.kit import run_threads
from autograder.checks.plain import plain
from autograder.checks.report import call_text, require_ok
from autograder.harness import Result, explore, replay

SEED = 0
#: Schedules per graded check. Every wrong answer in ``tests/checks/answers_anatomy.py`` is
#: found well inside these budgets and every correct one passes them (the tests prove both).
#: Engine ``explore`` only. Search bound: every schedule with at most one preemption or other
#: departure from round-robin order (29 for the counter's solution, 85 for the cache's), in an
#: order no seed changes, then seeded PCT/random samples up to these counts.
SCHEDULES_COUNTER = 300
SCHEDULES_CACHE = 300
TIMEOUT_S = 60.0
#: How long the one-thread contract check may run before it is called hung.
ONE_THREAD_TIMEOUT_S = 10.0
OPENING_BALANCE = 100
WITHDRAWAL = 60
#: A schedule the lesson's bank code fails on (worker 0 checks the balance, then bob runs to the
#: end): the canary that proves the scheduler sees inside this module.
_CANARY_TOKEN = "v1:1>0,3>1,9>0"
_TOKEN = re.compile(r"v1:\d+>\d+(,\d+>\d+)*")


# --------------------------------------------------------------------------- the bank (notebook)


class Account:
    """A bank account two customers share."""

    def __init__(self, balance):
        self.balance = balance
        self.paid = {}


def withdraw(account, amount):
    """Pay out `amount` if the balance covers it; return what was paid."""
    if account.balance >= amount:
        account.balance -= amount
        return amount
    return 0


def alice(account):
    account.paid["alice"] = withdraw(account, 60)


def bob(account):
    account.paid["bob"] = withdraw(account, 60)


def open_account():
    return Account(100)


def never_overdrawn(account):
    """The bank's first rule: the balance never goes below zero."""
    assert account.balance >= 0, f"the balance ended at {account.balance}"


def money_conserved(account):
    """The bank's second rule: what was paid out plus what is left is what the account held."""
    paid = sum(account.paid.values())
    assert account.balance + paid == 100, (
        f"paid out {paid} and {account.balance} is left: {account.balance + paid} in all, "
        "but the account held 100")


def _overdrawn(account: Account) -> None:
    """Holds exactly when the run broke the first rule (used to grade OVERDRAFT)."""
    assert account.balance < 0


def _money_made(account: Account) -> None:
    """Holds exactly when the run broke the second rule but not the first (DOUBLE_PAY)."""
    assert account.balance >= 0 and account.balance + sum(account.paid.values()) > 100


# --------------------------------------------------------------------------- exercise 1


def parse_schedule(token: object, *, name: str = "the schedule",
                   workers: int | None = None) -> list[tuple[int, int]]:
    """The ``(step, thread)`` pairs of a schedule token, or AssertionError saying what is wrong.

    A token is ``"v1:"`` followed by comma-separated ``step>thread`` pairs with increasing
    steps, for instance ``"v1:1>0,4>1"``: worker 0 starts; at step 4 worker 1 takes over.

    Args:
        token: What the student wrote.
        name: The variable's name, for the message.
        workers: How many workers the program has, when the threads should be checked.
    """
    example = ("Write it as 'v1:' then step>thread pairs separated by commas, for example "
               "'v1:1>0,7>1' (worker 0 starts; at step 7 worker 1 takes over).")
    if not isinstance(token, str):
        raise AssertionError(f"{name} must be a string schedule token, not "
                             f"{type(token).__name__} {token!r}. {example}")
    text = "".join(token.split())  # spaces anywhere are allowed and ignored
    if not _TOKEN.fullmatch(text):
        raise AssertionError(f"{name} = {token!r} is not a schedule token. {example}")
    pairs = [(int(step), int(thread)) for step, thread in
             (part.split(">") for part in text[3:].split(","))]
    steps = [step for step, _ in pairs]
    if steps != sorted(set(steps)) or steps[0] < 1:
        raise AssertionError(f"{name} = {token!r}: the steps must start at 1 or later and "
                             f"increase from one pair to the next. {example}")
    unknown = sorted({thread for _, thread in pairs if workers is not None and thread >= workers})
    if unknown:
        raise AssertionError(f"{name} = {token!r} names worker(s) {unknown}, but there are only "
                             f"{workers} workers, numbered 0 to {workers - 1}.")
    return pairs


def explain_schedule(token: str) -> str:
    """Say in words what a schedule token asks for, one line per switch.

    Example: ``explain_schedule("v1:1>0,3>1,6>0")``.
    """
    pairs = parse_schedule(token, name="the token")
    lines = []
    for number, (step, thread) in enumerate(pairs):
        if number == 0:
            lines.append(f"step {step}: worker {thread} gets the turn first")
        else:
            lines.append(f"step {step}: the turn passes to worker {thread}")
    lines.append("(between two entries the thread that has the turn keeps running)")
    return "\n".join(lines)


def replay_bank(token: str, check: Callable[[Account], Any]) -> tuple[Result, Account | None]:
    """Replay ``token`` on a fresh account with alice and bob; the result and the final account."""
    seen: list[Account] = []

    def setup() -> Account:
        account = open_account()
        seen.append(account)
        return account

    result = replay(setup, [alice, bob], check, token.strip(), timeout_s=TIMEOUT_S)
    return result, (seen[-1] if seen else None)


def _outcome(account: Account | None) -> str:
    if account is None:
        return "nothing ran"
    paid = sum(account.paid.values())
    return f"the balance ended at {account.balance} after paying out {paid}"


def check_schedules(overdraft: object, double_pay: object) -> None:
    """Grade the two named interleavings of the bank (exercise 1).

    ``overdraft`` must replay to a negative balance (it breaks :func:`never_overdrawn`);
    ``double_pay`` must replay to more money paid out than the account held, with a balance
    at or above zero (it breaks :func:`money_conserved` only). A malformed token, or one that
    does not end in that state, fails with a message saying what the replay did instead.

    The replay's check asserts the *broken* state, so a right token is a passing, harness-issued
    result (``result.ok``): a replaced ``replay`` cannot fake one.
    """
    _require_visible()
    exercise = "OVERDRAFT and DOUBLE_PAY"
    overdraft = _compact(plain(overdraft, f"{exercise}: OVERDRAFT"))
    double_pay = _compact(plain(double_pay, f"{exercise}: DOUBLE_PAY"))
    wanted = {
        "OVERDRAFT": (overdraft, _overdrawn, "end with a negative balance (both customers "
                      "passed the balance check before either one subtracted)"),
        "DOUBLE_PAY": (double_pay, _money_made, "pay out 120 while the balance shows 40 (both "
                       "customers read the balance for `-=` before either one wrote it back)"),
    }
    for name, (token, broken, goal) in wanted.items():
        try:
            parse_schedule(token, name=name, workers=2)
        except AssertionError as problem:
            raise AssertionError(f"{exercise}: {problem}") from None
        result, account = replay_bank(token, broken)
        if result.ok:
            continue
        other = "DOUBLE_PAY" if name == "OVERDRAFT" else "OVERDRAFT"
        swapped = ""
        if account is not None and _holds(wanted[other][1], account):
            swapped = f" That is a {other} interleaving."
            other_token = wanted[other][0]
            if isinstance(other_token, str) and _TOKEN.fullmatch(other_token.strip()) and \
                    replay_bank(other_token, broken)[0].ok:
                swapped = f" That is a {other} interleaving, and {other} is a {name} one: " \
                          "swap the two tokens."
        raise AssertionError(
            f"{exercise}: replaying {name} = {token!r}: {_outcome(account)}. {name} must "
            f"{goal}.{swapped}")


def _compact(token: object) -> object:
    """A token with its whitespace removed (``"v1:1>0, 3>1"`` is ``"v1:1>0,3>1"``): spaces
    anywhere in a token are allowed and ignored, as ``replay`` ignores them (issue #18)."""
    return "".join(token.split()) if isinstance(token, str) else token


def _holds(check: Callable[[Account], Any], account: Account) -> bool:
    try:
        return check(account) is not False
    except AssertionError:
        return False


# --------------------------------------------------------------------------- exercise 2


class _CounterRun:
    """One schedule's shared state: the student's counter and what ``take()`` handed out."""

    def __init__(self, counter_class: Callable[[], Any]):
        self.counter = counter_class()
        self.taken: list[Any] = []


def _add_one_then_two(run):
    run.counter.increment()
    run.counter.increment(2)


def _add_four(run):
    run.counter.increment(4)


def _take(run):
    run.taken.append(run.counter.take())


#: Increments the workers make: 1 + 2 + 4, so any lost one shows in the total.
COUNTER_TOTAL = 7


def _on_one_thread(exercise: str, what: str, body: Callable[[], Any]) -> Any:
    """Run ``body()`` alone under the scheduler and return its value, or fail saying why.

    Run alone, so that an answer broken even without other threads gets a plain message, and
    under the scheduler, so that a lock taken twice by one thread is reported as a deadlock
    instead of hanging the grading kernel.
    """
    box: dict[str, Any] = {}

    def alone(_state: object) -> None:
        try:
            box["value"] = body()
        except Exception as error:  # noqa: BLE001 - reported to the student below
            box["error"] = error

    result = explore(lambda: None, [alone], lambda _state: True, max_schedules=1,
                     timeout_s=ONE_THREAD_TIMEOUT_S)
    where = f"{exercise}: on one thread, before any threads were started, {what}"
    if "error" in box:
        error = box["error"]
        raise AssertionError(f"{where} raised {type(error).__name__}: {error}")
    if result.verdict == "deadlock":
        raise AssertionError(
            f"{where} never returned: it waits for a lock that the same thread already holds. "
            "A threading.Lock cannot be taken twice, even by the thread holding it: do not "
            "call a method that takes the lock while you hold it (or use an RLock).\n"
            + result.message.split("How it got there:")[0].rstrip())
    if result.verdict != "pass" or "value" not in box:
        raise AssertionError(f"{where} did not finish: {result.message}")
    return box["value"]


def counter_on_one_thread(counter_class: Callable[[], Any]) -> None:
    """Check the counter's contract on one thread (with a timeout); AssertionError if not met."""
    calls = "increment(), increment(3), take(), take(), increment(2), take()"

    def body() -> tuple[Any, Any, Any]:
        counter = counter_class()
        counter.increment()
        counter.increment(3)
        first, second = counter.take(), counter.take()
        counter.increment(2)
        return first, second, counter.take()

    taken = plain(_on_one_thread("SafeCounter", calls, body),
                  f"SafeCounter: on one thread, {calls}: take()")
    if taken != (4, 0, 2):
        raise AssertionError(
            f"SafeCounter: on one thread, {calls} returned {', '.join(map(repr, taken))}; "
            "expected 4, 0, 2 (take() returns the count so far and resets it to 0)")


def run_counter(counter_class: Callable[[], Any], *, seed: int = SEED,
                max_schedules: int = SCHEDULES_COUNTER) -> Result:
    """Explore a shared counter: two threads increment (by 1 and 2, and by 4), one takes.

    The check: what ``take()`` handed out during the run plus one final ``take()`` adds up to
    exactly :data:`COUNTER_TOTAL`, so every increment was counted once.
    """

    def check(run: _CounterRun) -> None:
        taken = plain(run.taken, "take()")
        final = plain(run.counter.take(), "take()")
        counted = sum(taken) + final
        assert counted == COUNTER_TOTAL, (
            f"expected the increments (1 + 2 + 4 = {COUNTER_TOTAL}) to be handed out exactly "
            f"once, but take() returned {taken[0]!r} during the run and {final!r} at the "
            f"end: {counted} in all, so "
            + (f"{COUNTER_TOTAL - counted} of the increments were lost"
               if counted < COUNTER_TOTAL else
               f"{counted - COUNTER_TOTAL} more than the increments were handed out "
               "(counted twice)"))

    return explore(lambda: _CounterRun(counter_class), [_add_one_then_two, _add_four, _take],
                   check, seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)


def check_counter(counter_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a counter class (exercise 2); raise AssertionError with the student's message."""
    _require_visible()
    counter_on_one_thread(counter_class)
    require_ok(run_counter(counter_class, **kwargs), exercise="SafeCounter",
               again=call_text("anatomy.run_counter", "SafeCounter", **kwargs))


# --------------------------------------------------------------------------- exercise 3


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


def cache_on_one_thread(cache_class: Callable[[Callable[[str], Any]], Any]) -> None:
    """Check the cache's contract on one thread (with a timeout); AssertionError if not met."""
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


def run_cache(cache_class: Callable[[Callable[[str], Any]], Any], *, seed: int = SEED,
              max_schedules: int = SCHEDULES_CACHE) -> Result:
    """Explore a shared cache: three threads ask for keys "a" and "b" in different orders.

    The check: ``load`` ran exactly once per key, every ``get`` returned the object ``load``
    made for its key, and a later ``get("a")`` still returns it without loading again.
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
        assert not problems, "; ".join(problems)

    return explore(lambda: _CacheRun(cache_class), [_get_a_then_b, _get_a, _get_b_then_a],
                   check, seed=seed, max_schedules=max_schedules, timeout_s=TIMEOUT_S)


def check_cache(cache_class: Callable[[Callable[[str], Any]], Any], **kwargs: Any) -> None:
    """Grade a cache class (exercise 3); raise AssertionError with the student's message."""
    _require_visible()
    cache_on_one_thread(cache_class)
    require_ok(run_cache(cache_class, **kwargs), exercise="OnceCache",
               again=call_text("anatomy.run_cache", "OnceCache", **kwargs))


# --------------------------------------------------------------------------- fail closed


def _require_visible() -> None:
    """Fail closed when the scheduler cannot switch inside this module's code.

    The scheduler runs code from site-packages atomically. Were the course installed there
    (``pip install .`` rather than ``pip install -e .``), the workers above would run as one
    step each and every answer would pass; this canary replay would then pass too.
    """
    result, _ = replay_bank(_CANARY_TOKEN, never_overdrawn)
    if result.verdict != "race":
        raise AssertionError(
            "The race detector could not switch threads inside the grader's own code, so this "
            "exercise cannot be graded here (is the course installed with `pip install -e .`?). "
            f"This is not about your answer. Replay said: {result.message}")


# --------------------------------------------------------------------------- notebook plumbing


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
