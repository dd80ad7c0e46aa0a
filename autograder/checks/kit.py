"""Primitives the lesson checks share: calls with a deadline, worded for the student."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def bounded(exercise: str, what: str, call: Callable[[], Any], timeout_s: float) -> Any:
    """``call()`` on a daemon thread for at most ``timeout_s`` seconds; its result.

    Args:
        exercise: The exercise's name, which starts every message (``"run_ledger"``).
        what: The call in the student's terms (``"close()"``).
        call: What to run.
        timeout_s: How long to wait before the call counts as hung (the thread is left behind).

    Raises:
        AssertionError: the call raised (named with its first line) or did not return in time.
    """
    outcome: list[tuple[bool, Any]] = []

    def body() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # noqa: BLE001 - reported to the student below
            outcome.append((False, error))

    thread = threading.Thread(target=body, name=f"{exercise}: {what}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        raise AssertionError(f"{exercise}: {what} did not finish within {timeout_s:g} s; "
                             "expected it to return: something waits for an answer, a "
                             "process or a lock that never comes")
    ok, value = outcome[0]
    if not ok:
        lines = str(value).strip().splitlines()
        first = f": {lines[0]}" if lines else ""
        raise AssertionError(f"{exercise}: {what} raised {type(value).__name__}{first}; "
                             "expected it to work") from None
    return value
