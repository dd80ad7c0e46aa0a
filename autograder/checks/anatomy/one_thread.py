"""An answer run alone under the scheduler first: a plain failure, or a self-deadlock named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.anatomy.settings import ONE_THREAD_TIMEOUT_S
from autograder.checks.kit import describe_error, failure
from autograder.harness import explore


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
        raise AssertionError(f"{where} raised {describe_error(box['error'])}")
    if result.verdict == "deadlock":
        raise failure(
            f"{where} never returned: it waits for a lock that the same thread already holds. "
            "A threading.Lock cannot be taken twice, even by the thread holding it: do not "
            "call a method that takes the lock while you hold it (or use an RLock).\n"
            + result.message.split("How it got there:")[0].rstrip(), result)
    if result.verdict != "pass" or "value" not in box:
        raise AssertionError(f"{where} did not finish: {result.message}")
    return box["value"]
