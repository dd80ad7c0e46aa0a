"""Calls with a deadline: an answer run once, bounded, so that a hang is a verdict, not a hang."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autograder.checks.kit.describe import describe_error

#: How long an answer may take when it is first run alone on one thread (:func:`smoke`).
SMOKE_TIMEOUT_S = 5.0


@dataclass
class Outcome:
    """What a call run by :func:`within` did.

    Attributes:
        finished: It returned or raised before the deadline.
        value: What it returned (None when it raised or is still running).
        error: What it raised, if it did.
        thread: The daemon thread it ran on (still running when not ``finished``).
        seconds: From the start until it finished, or until the deadline.
    """

    finished: bool
    value: Any
    error: BaseException | None
    thread: threading.Thread
    seconds: float


def within(call: Callable[[], Any], timeout_s: float | None, *, name: str = "grader-call",
           track: Callable[[threading.Thread], Any] | None = None) -> Outcome:
    """Run ``call()`` on a new daemon thread and wait for it at most ``timeout_s`` seconds.

    Args:
        call: What to run.
        timeout_s: How long to wait; None waits as long as it takes.
        name: The thread's name (what a stuck thread's description shows).
        track: Called with the thread before it starts (a check that tells its own threads
            from the answer's registers it here).

    Returns:
        The :class:`Outcome`; a call still running is left behind on its daemon thread.
    """
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            box["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the caller
            box["error"] = error

    thread = threading.Thread(target=body, name=name, daemon=True)
    if track is not None:
        track(thread)
    start = time.perf_counter()
    thread.start()
    thread.join(timeout_s)
    finished = not thread.is_alive()
    return Outcome(finished, box.get("value") if finished else None,
                   box.get("error") if finished else None, thread,
                   time.perf_counter() - start)


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
    outcome = within(call, timeout_s, name=f"{exercise}: {what}")
    if not outcome.finished:
        raise AssertionError(f"{exercise}: {what} did not finish within {timeout_s:g} s; "
                             "expected it to return: something waits for an answer, a "
                             "process or a lock that never comes")
    if outcome.error is not None:
        raise AssertionError(f"{exercise}: {what} raised {describe_error(outcome.error)}; "
                             "expected it to work") from None
    return outcome.value


def smoke(exercise: str, attempt: Callable[[], Any], *,
          timeout_s: float = SMOKE_TIMEOUT_S) -> Any:
    """Run an answer once, alone on one thread, before any load: its result, or a plain failure.

    An answer broken even without other threads gets a message that says so, and one that
    waits for itself (a plain ``Lock`` taken twice) fails here instead of hanging the grader.

    Args:
        exercise: The exercise's name, which starts every message.
        attempt: One use of the answer; an ``AssertionError`` it raises is a check's verdict.
        timeout_s: How long it may take.

    Raises:
        AssertionError: the attempt failed, raised or did not return in time.
    """
    outcome = within(attempt, timeout_s, name=f"{exercise} on one thread")
    if not outcome.finished:
        raise AssertionError(
            f"{exercise}: used on one thread it did not return within {timeout_s:g} s "
            "(before any threads were started): it waits for something that never happens, "
            "such as a Lock its own thread already holds.")
    if isinstance(outcome.error, AssertionError):
        raise AssertionError(f"{exercise}: used on one thread: {outcome.error}") from None
    if outcome.error is not None:
        raise AssertionError(
            f"{exercise}: used on one thread it raised {describe_error(outcome.error)} (before "
            "any threads were started). Make it work on one thread first.") from None
    return outcome.value
