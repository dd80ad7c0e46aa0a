"""Lesson 00's judge: the bank's two interleavings, the counter and the cache, from what ran."""

from __future__ import annotations

from autograder.judges import expect, field, items

OPENING_BALANCE = 100
#: Increments the counter's workers make (1 + 2 + 4).
COUNTER_TOTAL = 7
#: Schedules each graded exploration runs (``autograder.checks.anatomy.settings``).
SCHEDULES = 300
#: Gets the cache's three workers make in one schedule, and the keys they ask for.
CACHE_GETS = 5
CACHE_KEYS = ["a", "b"]


def _account(seen: dict, name: str) -> tuple[int, int]:
    state = field(seen, name, dict)
    balance = field(state, "balance", int)
    paid = items(state, "paid", int, at_least=0, at_most=2)
    return balance, sum(paid)


def check_schedules(seen: dict) -> None:
    """OVERDRAFT ended below zero; DOUBLE_PAY paid out more than the account held, at or
    above zero."""
    balance, _ = _account(seen, "overdraft")
    expect(balance < 0, f"OVERDRAFT's replay ended with a balance of {balance}, not below 0")
    balance, paid = _account(seen, "double_pay")
    expect(balance >= 0 and balance + paid > OPENING_BALANCE,
           f"DOUBLE_PAY's replay ended at {balance} after paying out {paid}: not more money "
           f"than the account's {OPENING_BALANCE} with a balance at or above 0")


def _explored(seen: dict, key: str, kind: type) -> list:
    schedules = field(seen, "schedules", int)
    expect(schedules == SCHEDULES, f"{schedules} schedules ran, not the graded {SCHEDULES}")
    return items(seen, key, kind, at_least=SCHEDULES, at_most=SCHEDULES)


def check_counter(seen: dict) -> None:
    """take() returned 4, 0, 2 on one thread, and every schedule handed out exactly 7."""
    one_thread = items(seen, "one_thread", int, at_least=3, at_most=3)
    expect(one_thread == [4, 0, 2], f"on one thread take() returned {one_thread}, not 4, 0, 2")
    totals = _explored(seen, "totals", int)
    wrong = [total for total in totals if total != COUNTER_TOTAL]
    expect(not wrong, f"{len(wrong)} of {len(totals)} schedules handed out other than "
                      f"{COUNTER_TOTAL} (first: {wrong[:1]})")


def check_cache(seen: dict) -> None:
    """One load per key on one thread and in every schedule, and every get shared it."""
    one_thread = field(seen, "one_thread", dict)
    expect(items(one_thread, "loads", str, at_least=0) == ["x", "y"],
           "on one thread load did not run once per key")
    expect(items(one_thread, "keys", str, at_least=0) == ["x", "y"],
           "on one thread get(key) did not return what load(key) made")
    expect(field(one_thread, "same_object", bool) is True,
           "on one thread a second get('x') returned another object")
    runs = _explored(seen, "runs", dict)
    for number, run in enumerate(runs, 1):
        loads = items(run, "loads", (str, type(None)), at_least=0, at_most=1000)
        expect(sorted(loads) == CACHE_KEYS if None not in loads else False,
               f"schedule {number} loaded {loads}, not each of {CACHE_KEYS} once")
        gets, shared = field(run, "gets", int), field(run, "shared", int)
        expect(gets == CACHE_GETS and shared == CACHE_GETS,
               f"schedule {number}: {shared} of {gets} gets returned the loaded object, "
               f"not all {CACHE_GETS}")
