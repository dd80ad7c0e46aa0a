"""Exercise 1: schedule tokens read, explained in words and replayed on the bank."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from autograder.checks.anatomy.bank import Account, alice, bob, open_account
from autograder.checks.anatomy.settings import TIMEOUT_S
from autograder.harness import Result, replay

_TOKEN = re.compile(r"v1:\d+>\d+(,\d+>\d+)*")


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


def _compact(token: object) -> object:
    """A token with its whitespace removed (``"v1:1>0, 3>1"`` is ``"v1:1>0,3>1"``): spaces
    anywhere in a token are allowed and ignored, as ``replay`` ignores them (issue #18)."""
    return "".join(token.split()) if isinstance(token, str) else token


def _holds(check: Callable[[Account], Any], account: Account) -> bool:
    try:
        return check(account) is not False
    except AssertionError:
        return False
