"""The three graders hidden tests call, each after proving the scheduler sees the grader's code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.anatomy.bank import _money_made, _overdrawn, never_overdrawn
from autograder.checks.anatomy.counter import counter_on_one_thread, run_counter
from autograder.checks.anatomy.once_cache import cache_on_one_thread, run_cache
from autograder.checks.anatomy.schedules import (
    _TOKEN,
    _compact,
    _holds,
    _outcome,
    parse_schedule,
    replay_bank,
)
from autograder.checks.kit import call_text, report, require
from autograder.checks.plain import plain

#: A schedule the lesson's bank code fails on (worker 0 checks the balance, then bob runs to the
#: end): the canary that proves the scheduler sees inside this package's code.
_CANARY_TOKEN = "v1:1>0,3>1,9>0"


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
    observed = {}
    for name, (token, broken, goal) in wanted.items():
        try:
            parse_schedule(token, name=name, workers=2)
        except AssertionError as problem:
            raise AssertionError(f"{exercise}: {problem}") from None
        result, account = replay_bank(token, broken)
        if result.ok:
            observed[name.lower()] = _final_state(account)
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
    report(observed)


def _final_state(account: object) -> dict:
    """A replayed account's balance and payouts, as plain data for the judge."""
    if account is None:
        return {"balance": None, "paid": []}
    return {"balance": account.balance, "paid": sorted(account.paid.values())}


def check_counter(counter_class: Callable[[], Any], **kwargs: Any) -> None:
    """Grade a counter class (exercise 2); raise AssertionError with the student's message."""
    _require_visible()
    one_thread = counter_on_one_thread(counter_class)
    totals: list = []
    result = run_counter(counter_class, observed=totals, **kwargs)
    require(result, exercise="SafeCounter",
            again=call_text("anatomy.run_counter", "SafeCounter", **kwargs))
    report({"one_thread": list(one_thread), "totals": totals,
            "schedules": result.schedules_run})


def check_cache(cache_class: Callable[[Callable[[str], Any]], Any], **kwargs: Any) -> None:
    """Grade a cache class (exercise 3); raise AssertionError with the student's message."""
    _require_visible()
    one_thread = cache_on_one_thread(cache_class)
    runs: list = []
    result = run_cache(cache_class, observed=runs, **kwargs)
    require(result, exercise="OnceCache",
            again=call_text("anatomy.run_cache", "OnceCache", **kwargs))
    report({"one_thread": one_thread, "runs": runs, "schedules": result.schedules_run})


def _require_visible() -> None:
    """Fail closed when the scheduler cannot switch inside this package's code.

    The scheduler runs code from site-packages atomically. Were the course installed there
    (``pip install .`` rather than ``pip install -e .``), the exercises' workers would run as
    one step each and every answer would pass; this canary replay would then pass too.
    """
    result, _ = replay_bank(_CANARY_TOKEN, never_overdrawn)
    if result.verdict != "race":
        raise AssertionError(
            "The race detector could not switch threads inside the grader's own code, so this "
            "exercise cannot be graded here (is the course installed with `pip install -e .`?). "
            f"This is not about your answer. Replay said: {result.message}")
