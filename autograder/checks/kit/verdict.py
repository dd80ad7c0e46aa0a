"""A harness result turned into the verdict a student reads: one wording for every lesson."""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from autograder.checks.kit.signature import signature_of

FIGURE_SINK: Callable[[bytes], None] | None = None
"""Where figures go outside IPython: the grading runner sets it to collect PNG bytes."""
OBSERVATION_SINK: Callable[[dict], None] | None = None
"""Where a check's observations go: the grading runner sets it to send them to the judge."""


#: Where the harness's own "how to run it again" advice starts in a result's message; it
#: names the grader's internal ``setup``, ``workers`` and ``check``, which a student cannot run.
_HARNESS_REPLAY = ("Replay exactly this interleaving", "Run `stress(")


def require_ok(result: Any, *, exercise: str, show_figure: bool = True,
               again: str | None = None, hint: str | None = None,
               details: str | None = None) -> None:
    """Pass silently when ``result.ok``; otherwise show the interleaving and fail.

    Args:
        result: A :class:`autograder.harness.Result`.
        exercise: The exercise's name as the student knows it, put first in the message.
        show_figure: Display ``result.figure()`` in the notebook (feedback keeps it) before
            failing. Ignored outside IPython.
        again: The call that produced ``result``, as the student can run it in the lesson's
            notebook (``"anatomy.run_counter(SafeCounter)"``): it replaces the harness's own
            replay advice, which names the grader's internals. The checks' runs are seeded:
            an ``explore`` verdict comes back exactly, a ``stress`` one as the same failure
            (real threads, perhaps in another trial).
        hint: What the verdict means in the exercise's terms, added to the message.
        details: More lines about the failing run (what the threads raised), added last
            before the replay lines.

    Raises:
        AssertionError: With the exercise name and ``result.message`` when the result is not ok.
    """
    if result.ok:
        return
    if show_figure:
        _display_figure(result)
    message = result.message
    if again is not None:
        message = _without_harness_replay(message)
    if hint:
        message += f"\nWhat this means for {exercise}: {hint}"
    if details:
        message += f"\n{details}"
    if again is not None:
        message += (f"\nRun it again in a cell of your notebook (the grader's runs are seeded, "
                    f"so it fails the same way):\n    result = {again}\n    print(result)\n"
                    f"    result.figure()")
    raise failure(f"{exercise}: {message}", result, again=again)


#: The attribute of a failing verdict's AssertionError that holds its failure signature (plain
#: data the grading runner passes on to the host: information for the class report only).
SIGNATURE_ATTRIBUTE = "racelab_signature"


def failure(message: str, result: Any = None, *, again: str | None = None) -> AssertionError:
    """The AssertionError a check raises, carrying the failure signature of ``result`` (see
    :mod:`~autograder.checks.kit.signature`) as plain data in :data:`SIGNATURE_ATTRIBUTE`.

    Args:
        message: What the student reads.
        result: The harness result that failed, when there is one.
        again: The call that gives this verdict again in the notebook, when there is one.
    """
    error = AssertionError(message)
    if result is not None:
        try:
            found = signature_of(result)
        except Exception:  # noqa: BLE001 - a signature is information; the verdict stands
            return error
        found["again"] = again
        setattr(error, SIGNATURE_ATTRIBUTE, found)
    return error


def require(result: Any, *, exercise: str, again: str | None = None,
            hints: Mapping[str, str] | None = None, hint: str | None = None,
            raised: Iterable[str] = (), by: str = "the threads",
            show_figure: bool = True) -> None:
    """The verdict every lesson's graders give: pass silently, or fail in one wording.

    A failing verdict names the exercise, explains the interleaving, adds the hint for its
    verdict (``"race"``, ``"deadlock"``, ...) in the exercise's terms, lists what the threads
    raised (the five most common, counted) and ends with the call that replays it. A result in
    which no schedule ran (the answer failed before any thread started) has no interleaving:
    no figure and no replay line.

    Args:
        result: A :class:`autograder.harness.Result`.
        exercise: The exercise's name as the student knows it.
        again: The call, as the student can run it in the lesson's notebook, that gives this
            verdict again (:func:`call_text` writes it).
        hints: A hint per verdict.
        hint: One hint whatever the verdict (wins over ``hints``).
        raised: Errors the threads raised, each as :func:`~autograder.checks.kit.describe_error`
            words it.
        by: Who raised them (``"the clients"``), as the message's list names them.
        show_figure: Display the interleaving's figure (see :func:`require_ok`).

    Raises:
        AssertionError: when the result is not ok.
    """
    if result.ok:
        return
    ran = bool(result.schedules_run)
    listed = "\n".join(f"  {n} x {error}" for error, n in Counter(raised).most_common(5))
    require_ok(result, exercise=exercise, show_figure=show_figure and ran,
               again=again if ran else None,
               hint=hint if hint is not None else (hints or {}).get(result.verdict),
               details=f"What {by} raised:\n{listed}" if listed else None)


def report(observations: dict) -> None:
    """Hand what a passing check saw to the grader's judge, which decides the grade.

    A check calls it once, last, after its own verdict passed. The observations are the raw
    outcomes of the answer's runs (counts, values, orders, one entry per schedule or trial),
    never a verdict: the judge (:mod:`autograder.judges`, on the host, never beside student
    code) compares them with expectations the kernel does not hold. Outside grading it does
    nothing, so a check called in the lab returns None as before.

    Args:
        observations: Plain data only (exact ``int``, ``float``, ``str``, ``bool``, ``None``,
            and lists, tuples and str-keyed dicts of them): anything else reaches the judge as
            "not plain" and the test fails.
    """
    if OBSERVATION_SINK is not None:
        OBSERVATION_SINK(observations)


def explored_report(result: Any, schedules: list) -> dict[str, Any]:
    """An ``explore`` run as a judge reads it: each schedule's observation (``schedules``), how
    many ran, whether they covered every schedule, and how many the bounded search ran (read
    from ``result.bound``'s "(N schedules)"; 0 when its bound was not reached, the search then
    samples a fixed number more)."""
    bounded = re.search(r"\((\d+) schedules?\)", result.bound or "")
    return {"schedules": schedules, "schedules_run": result.schedules_run,
            "covered": bool(result.covered),
            "bounded": (result.schedules_run if result.covered
                        else int(bounded.group(1)) if bounded else 0)}


def _without_harness_replay(message: str) -> str:
    for marker in _HARNESS_REPLAY:
        cut = message.find(marker)
        if cut >= 0:
            message = message[:cut].rstrip()
    return message


def call_text(function: str, *args: str, **kwargs: Any) -> str:
    """How a call reads in a notebook: ``call_text("mutex.run_cache", "PredictionCache",
    schedules=60)`` is ``"mutex.run_cache(PredictionCache, schedules=60)"``."""
    return f"{function}({', '.join([*args, *(f'{k}={v!r}' for k, v in kwargs.items())])})"


def _display_figure(result: Any) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        get_ipython = None  # noqa: N806
    if (get_ipython is None or get_ipython() is None) and FIGURE_SINK is None:
        return
    try:
        figure = result.figure()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    except Exception as exc:  # noqa: BLE001 - a broken picture must not hide the verdict
        print(f"(could not draw the interleaving: {exc})")
        return
    if FIGURE_SINK is not None:
        FIGURE_SINK(buffer.getvalue())
        return
    # As PNG bytes: shows in every frontend and in nbgrader's feedback, whatever the backend.
    display(Image(data=buffer.getvalue(), format="png"))
