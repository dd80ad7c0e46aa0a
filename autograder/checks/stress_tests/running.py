"""A student's code run with a deadline, once per hidden implementation: the rows graded."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks.kit import JoinProbe, Overlap, within
from autograder.checks.plain import exception_line, plain
from autograder.checks.stress_tests.gil_hidden import GIL_HIDDEN_CORRECT, GIL_HIDDEN_RACY
from autograder.checks.stress_tests.ledgers import (
    CORRECT,
    RACY,
    _anonymous,
    _rows_of,
    batch,
    held_reader,
    racy_once,
)
from autograder.checks.stress_tests.settings import BUDGET_S, EXPLORE_BUDGET_S, JOIN_QUIET_S, SEED
from autograder.checks.stress_tests.witness import witnessed


def run_bounded(function: Callable[[], Any], budget_s: float) -> tuple[str, str, float]:
    """Run ``function()`` on a daemon thread with a deadline (the kit's :func:`within`).

    Returns ``(verdict, detail, seconds)``: ``"returned"``, ``"raised"`` (detail names the
    exception) or ``"hung"`` (still running after ``budget_s``; the thread is abandoned).
    ``sys.setswitchinterval`` is restored afterwards, whatever the function set. The exception
    is named on the function's own thread, inside the deadline (its ``__str__`` is the
    student's code).
    """
    interval = sys.getswitchinterval()

    def attempt() -> tuple[str, str]:
        try:
            function()
        except BaseException as error:  # noqa: BLE001 - any exception is the test's verdict
            return "raised", exception_line(error)
        return "returned", ""

    outcome = within(attempt, budget_s, name="student-test")
    sys.setswitchinterval(interval)
    if not outcome.finished or outcome.value is None:
        return "hung", f"still running after {budget_s:.0f} s", outcome.seconds
    verdict, detail = outcome.value
    return verdict, detail, outcome.seconds


def grade_against(test: Callable[[Callable[[], Any]], Any], *, racy: Sequence[type] = RACY,
                  correct: Sequence[type] = CORRECT, budget_s: float = BUDGET_S,
                  seed: int = SEED) -> list[dict[str, Any]]:
    """Run ``test(make_ledger)`` once per hidden implementation, in a seeded order. The
    ledgers of a test that hung are revoked (``ledgers._revoked``): its threads end at their next
    call rather than spin beside the checks that follow.

    Returns one row per implementation: ``racy`` (bool), ``verdict``, ``detail``, ``seconds``
    and ``right`` (the test raised for a racy one, or returned for a correct one). Warms the
    TensorFlow path first so the first run does not pay TensorFlow's start-up.
    """
    _rows_of(batch(1))
    plan = [(cls, True) for cls in racy] + [(cls, False) for cls in correct]
    random.Random(seed).shuffle(plan)
    rows = []
    for number, (cls, is_racy) in enumerate(plan, 1):
        revoked = threading.Event()
        overlap = Overlap()
        make_ledger = _anonymous(cls, costed=True, revoked=revoked, overlap=overlap)
        verdict, detail, seconds = run_bounded(lambda m=make_ledger: test(m), budget_s)
        if verdict == "hung":
            revoked.set()  # its threads end at their next call instead of spinning on
        right = verdict == "raised" if is_racy else verdict == "returned"
        if is_racy and verdict == "raised" and overlap.most < 2:
            right = False
            detail = (f"{detail}; but no two calls of the ledger ever ran at once, so the race "
                      "never happened: the test judged it by something other than what it saw")
        rows.append({"number": number, "racy": is_racy, "verdict": verdict, "detail": detail,
                     "seconds": seconds, "right": right, "name": cls.__name__,
                     "overlap": overlap.most})
        if not right:
            break  # one wrong verdict decides the grade; a hung test also keeps a thread busy
    return rows


def joined_run(test: Callable[[Callable[[], Any]], Any], *, budget_s: float = BUDGET_S,
               passed: int = 0) -> dict[str, Any]:
    """Run ``test`` once more, on a ledger whose first reader thread (or the next after
    ``passed`` others) is held until the test joins it, and whose only torn snapshot is the
    one that held call returns (:func:`held_reader`, :class:`~autograder.checks.kit.JoinProbe`).

    A test that returns without joining its reader (or sleeps instead) returns while that
    reader is certainly still inside ``totals()``; one that checks what its reader saw before
    joining it never looks at that snapshot: either misses the tear. Returns ``verdict`` and
    ``detail`` (as :func:`run_bounded`), ``held`` (a reader thread was held), ``released_by``
    (how it went on: the probe's word), ``returned_while_held`` and ``torn`` (the held call
    returned a torn snapshot: the test was expected to fail this ledger).
    """
    probe = JoinProbe(JOIN_QUIET_S, budget_s, passed)
    revoked = threading.Event()
    seen: dict[str, Any] = {"returned_while_held": False}
    make_ledger = held_reader(probe, revoked, seen)

    def run() -> None:
        probe.arm(threading.current_thread())
        try:
            test(make_ledger)
        finally:
            seen["returned_while_held"] = probe.finish()

    watcher = threading.Thread(target=probe.watch, name="grader-join-probe", daemon=True)
    watcher.start()
    verdict, detail, seconds = run_bounded(run, budget_s)
    if verdict == "hung":
        revoked.set()
    probe.finish()
    watcher.join(1.0)
    return {"verdict": verdict, "detail": detail, "seconds": seconds,
            "held": probe.held is not None, "released_by": probe.released_by,
            "returned_while_held": bool(seen["returned_while_held"]),
            "torn": bool(seen["torn"])}


def racy_once_run(test: Callable[[Callable[[], Any]], Any], *, budget_s: float = BUDGET_S
                  ) -> dict[str, Any]:
    """Run ``test`` once more, on ledgers that race only until one of them has had two
    ``record()`` calls at once (:func:`racy_once`): an intermittent bug's first and only showing.

    Returns ``verdict`` and ``detail`` (as :func:`run_bounded`), ``overlap`` (the most calls
    that ran at once) and ``writes`` (the most ``record()`` calls that ran at once).
    """
    overlap, writes, revoked = Overlap(), Overlap(), threading.Event()
    make_ledger = racy_once(overlap, writes, revoked)
    verdict, detail, seconds = run_bounded(lambda: test(make_ledger), budget_s)
    if verdict == "hung":
        revoked.set()
    return {"verdict": verdict, "detail": detail, "seconds": seconds,
            "overlap": overlap.most, "writes": writes.most}


#: How :func:`verdict_table` says each verdict of a stress test's run.
TEST_WORDS = {"raised": "your test failed it", "returned": "your test passed it",
              "hung": "your test hung"}
#: Alike, for an explorer's run (:func:`explore_rows`).
EXPLORE_WORDS = {"failed": "your Result was not ok", "returned": "your Result was ok",
                 "raised": "your explorer raised", "other": "your explorer returned no Result",
                 "hung": "your explorer hung"}


def verdict_table(rows: Sequence[dict[str, Any]], words: dict[str, str] = TEST_WORDS) -> str:
    """The grading runs as text, one line per hidden implementation (names withheld)."""
    lines = []
    for row in rows:
        kind = "racy   " if row["racy"] else "correct"
        said = words[row["verdict"]]
        mark = "ok " if row["right"] else "BAD"
        extra = f" ({row['detail']})" if row["detail"] else ""
        lines.append(f"  {mark} ledger {row['number']:2d}, {kind}: {said} "
                     f"in {row['seconds']:.2f} s{extra}")
    return "\n".join(lines)


def explore_rows(explore_ledger: Callable[[Callable[[], Any]], Any], *,
                 racy: Sequence[type] = GIL_HIDDEN_RACY,
                 correct: Sequence[type] = GIL_HIDDEN_CORRECT,
                 budget_s: float = EXPLORE_BUDGET_S) -> list[dict[str, Any]]:
    """Run ``explore_ledger(make_ledger)`` per hidden pure-Python ledger; one row each.

    A racy ledger is caught only by a returned harness Result that is not ok, whose verdict
    is one of :data:`FAILING`, and whose exploration really broke the ledger: the grader's
    :func:`~autograder.checks.stress_tests.witness.witnessed` ledgers saw a snapshot no order
    of records gives or, for a ``"deadlock"``, two of their calls stopped in progress.
    Raising, a hand-made Result or a failure the ledger did not cause catches nothing.

    Each row also holds what the run itself did (for the judge): ``outcome``, as
    :func:`run_bounded` says it; ``result``: for a returned value, its type's name and, for a
    harness Result, its ``ok``, ``verdict`` and ``schedules_run`` (None otherwise); and
    ``witness``: what the grader saw of the ledgers (``seen()``).
    """
    from autograder.harness import Result

    plan = [(cls, True) for cls in racy] + [(cls, False) for cls in correct]
    random.Random(SEED).shuffle(plan)
    rows = []
    for number, (cls, is_racy) in enumerate(plan, 1):
        got: list[Any] = []
        make_ledger, seen = witnessed(cls)
        verdict, detail, seconds = run_bounded(
            lambda m=make_ledger, g=got: g.append(explore_ledger(m)), budget_s)
        outcome, returned, witness = verdict, None, seen()
        if verdict == "returned":
            result = got[0]
            # Exactly a Result (a subclass or a faked __class__ would decide its own ``ok``),
            # read as plain data: ``ok`` is the harness's own (a hand-made Result is never ok).
            if type(result) is not Result:
                kind = plain(type(result).__name__, "explore_ledger: its result's type", str)
                verdict, detail = "other", f"returned {kind}, not a Result"
                returned = {"type": kind}
            else:
                ok = plain(result.ok, "explore_ledger: Result.ok", bool)
                said = plain(result.verdict, "explore_ledger: Result.verdict", str)
                runs = plain(result.schedules_run, "explore_ledger: Result.schedules_run", int)
                verdict = "returned" if ok else "failed"
                detail = f"verdict {said!r} after {runs} schedules"
                returned = {"type": "Result", "ok": ok, "verdict": said, "schedules": int(runs)}
        right = verdict == "returned" and not witness["tampered"]
        if is_racy:
            right, why = _caught(verdict, returned, witness)
            detail = "; ".join(part for part in (detail, why) if part)
        elif witness["tampered"]:
            detail = "; ".join(part for part in (detail, witness["tampered"]) if part)
        rows.append({"number": number, "racy": is_racy, "verdict": verdict, "detail": detail,
                     "seconds": seconds, "right": right, "name": cls.__name__,
                     "outcome": outcome, "result": returned, "witness": witness})
        if not right:
            break  # one wrong verdict decides the grade
    return rows


#: The verdicts of a harness Result that can name a race the exploration caused.
FAILING = ("race", "deadlock", "error")


def _caught(verdict: str, result: dict[str, Any] | None, witness: dict[str, Any]
            ) -> tuple[bool, str]:
    """Whether a racy ledger was caught, and if not, why not (in the student's terms)."""
    if witness["tampered"]:
        return False, witness["tampered"]
    if verdict != "failed":
        return False, ("" if verdict in ("returned", "hung") else
                       "return the Result that explore gave you")
    said = result["verdict"] if result else ""
    if said not in FAILING:
        return False, f"a {said!r} Result names no race"
    anomaly = witness["anomaly"]
    if not anomaly or (anomaly == "deadlock") != (said == "deadlock"):
        return False, ("but no call of this ledger misbehaved in your exploration (no snapshot "
                       "that no order of records gives, no update lost, no deadlock inside "
                       "it): the failure was not the ledger's race")
    return True, ""
