"""The three graders hidden tests call: verdicts on the hidden implementations, in words."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.kit import report
from autograder.checks.stress_tests.gil_hidden import GIL_HIDDEN_CORRECT, GIL_HIDDEN_RACY
from autograder.checks.stress_tests.ledgers import CORRECT, RACY
from autograder.checks.stress_tests.running import (
    EXPLORE_WORDS,
    explore_rows,
    grade_against,
    joined_run,
    racy_once_run,
    verdict_table,
)
from autograder.checks.stress_tests.servers import measure_problems
from autograder.checks.stress_tests.settings import BUDGET_S


def check_stress_test(test: Callable[[Callable[[], Any]], Any], **kwargs: Any) -> None:
    """Grade ``stress_ledger``: it must fail every racy ledger and pass every correct one.

    Engine: the student's own test, real threads, once per hidden ledger (7 racy, 5 correct,
    in a seeded order), each within :data:`BUDGET_S`; every hidden ``totals()`` costs a TF
    call (:func:`_costed_totals`), so the student's work is bounded by its counts. Reports
    (for the judge) each hidden ledger's name, whether it is racy, and what the student's test
    did with it.
    """
    rows = grade_against(test, **kwargs)
    wrong = [row for row in rows if not row["right"]]
    expected = len(kwargs.get("racy", RACY)) + len(kwargs.get("correct", CORRECT))
    if not wrong and len(rows) == expected:
        # The first reader thread held, then the second: a test that starts two readers
        # and joins one of them is caught whichever of them gets to totals() first.
        joined = joined_run(test, budget_s=kwargs.get("budget_s", BUDGET_S))
        _require_joined(joined)
        second = joined_run(test, budget_s=kwargs.get("budget_s", BUDGET_S), passed=1)
        _require_joined(second)
        once = racy_once_run(test, budget_s=kwargs.get("budget_s", BUDGET_S))
        _require_first_failure_kept(once)
        report({"ledgers": [{"name": row["name"], "racy": row["racy"],
                             "verdict": row["verdict"], "overlap": row["overlap"]}
                            for row in rows],
                **{name: {key: run[key] for key in
                          ("verdict", "held", "released_by", "returned_while_held", "torn")}
                   for name, run in (("joined", joined), ("joined_second", second))},
                "racy_once": {key: once[key] for key in ("verdict", "overlap", "writes")}})
        return
    missed = sum(row["racy"] and row["verdict"] == "returned" for row in wrong)
    unseen = sum(row["racy"] and row["verdict"] == "raised" for row in wrong)
    false_alarms = sum(not row["racy"] and row["verdict"] == "raised" for row in wrong)
    hung = sum(row["verdict"] == "hung" for row in rows)
    summary = []
    if missed:
        summary.append(f"it passed {missed} racy ledger(s) it was expected to fail (a race it "
                       "never provoked or never checked for)")
    if unseen:
        summary.append(f"it failed {unseen} racy ledger(s) without ever calling the ledger from "
                       "two threads at once, so it never saw the race it reported: expected "
                       "the failure to come from what the test observed under concurrent load")
    if false_alarms:
        summary.append(f"it failed {false_alarms} correct ledger(s) it was expected to pass "
                       "(an invariant that is not part of the contract, or a crash)")
    if hung:
        summary.append(f"it hung: a run took longer than {kwargs.get('budget_s', BUDGET_S):.0f} s "
                       "(a barrier with the wrong number of parties, a join that never "
                       "returns, or too much work)")
    raise AssertionError(
        "stress_ledger: expected to fail every racy ledger and pass every correct one, but "
        + "; ".join(summary) + ".\nWhat your test did with each hidden ledger, in the order "
        "they ran (grading stops at the first wrong verdict):\n" + verdict_table(rows))


def _require_joined(joined: dict[str, Any]) -> None:
    """The held-reader run (its first reader thread held until the test joins it, and then
    given the ledger's only torn snapshot): the test did not return while that thread still
    ran, and failed the ledger exactly when the torn snapshot was given."""
    if joined["returned_while_held"]:
        raise AssertionError(
            "stress_ledger: your test returned while a thread it started was still running: "
            "the grader held your reader thread inside totals() until your test joined it, "
            "and your test returned without waiting for it (no join(), or a sleep instead): "
            "expected your test to join every thread it starts before it checks what they "
            "saw, since a reader still running then can miss the torn snapshot it was about "
            "to see.")
    if joined["torn"]:
        if joined["verdict"] == "raised":
            return
        said = ("passed it" if joined["verdict"] == "returned"
                else f"hung ({joined['detail']})")
        raise AssertionError(
            "stress_ledger: on one more racy ledger, the grader held your reader thread inside "
            "totals() until your test waited for it, and that call returned the ledger's only "
            f"torn snapshot; your test {said}: it checked what its reader saw before it joined "
            "the reader (or never checked that snapshot, or retried on a fresh ledger): "
            "expected your test to join every thread it starts, then check every snapshot "
            "its reader took.")
    if joined["verdict"] != "returned":
        said = {"raised": f"failed it ({joined['detail']})",
                "hung": f"hung ({joined['detail']})"}[joined["verdict"]]
        raise AssertionError(
            f"stress_ledger: on one more correct ledger, whose reader thread's totals() was "
            f"slow to return, your test {said}; expected it to pass (a reader may be slow)")


def _require_first_failure_kept(once: dict[str, Any]) -> None:
    """The run on ledgers that race only until two ``record()`` calls overlapped once: the test
    failed it, after that overlap."""
    if once["verdict"] == "raised" and once["writes"] >= 2:
        return
    if once["verdict"] == "raised":
        said = (f"failed it ({once['detail']}) without ever running two record() calls at "
                "once, so the race never happened")
    elif once["verdict"] == "returned":
        said = ("passed it: the first ledger your test stressed raced, and only the ledgers "
                "made after it were sound, so the test retried until an attempt passed, or "
                "judged a later ledger than the one that raced")
    else:
        said = f"hung ({once['detail']})"
    raise AssertionError(
        "stress_ledger: on one more racy ledger, whose race shows only the first time two "
        f"record() calls overlap (as an intermittent bug does), your test {said}; expected it to "
        "fail on the first race it sees: a failing stress test is a found bug, never retry it "
        "away.")


def check_measure(measure: Callable[..., Any]) -> None:
    """Grade ``measure``: its numbers obey the physics of servers whose behaviour is known.

    Reports (for the judge) the numbers ``measure`` returned on each server.
    """
    numbers: dict = {}
    problems = measure_problems(measure, observed=numbers)
    if problems:
        raise AssertionError("measure: " + "; ".join(problems))
    report(numbers)


def check_explore_ledger(explore_ledger: Callable[[Callable[[], Any]], Any], **kwargs: Any) -> None:
    """Grade ``explore_ledger``: not ok on every GIL-hidden racy ledger, ok on every correct one.

    Engine: the student's own ``explore`` call (its seed and ``max_schedules``; the harness
    first runs every schedule with at most one preemption), once per hidden pure-Python
    ledger (6 racy that fail differently, 3 correct), each within :data:`EXPLORE_BUDGET_S`.
    A racy ledger counts as caught only when the grader saw the exploration break it
    (:func:`explore_rows`). Reports (for the judge) each hidden ledger's name, whether it is
    racy, whether the call returned, raised or hung, what it returned, and what the grader
    saw happen to the ledger (its ``witness``).
    """
    rows = explore_rows(explore_ledger, **kwargs)
    expected = (len(kwargs.get("racy", GIL_HIDDEN_RACY))
                + len(kwargs.get("correct", GIL_HIDDEN_CORRECT)))
    if all(row["right"] for row in rows) and len(rows) == expected:
        report({"ledgers": [{"name": row["name"], "racy": row["racy"],
                             "outcome": row["outcome"], "result": row["result"],
                             "witness": row["witness"]} for row in rows]})
        return
    table = verdict_table(rows, EXPLORE_WORDS)
    raise AssertionError(
        "explore_ledger: expected a Result that is not ok for every racy ledger, because your "
        "exploration broke it, and ok for every correct one, but it got one wrong (grading "
        "stops at the first wrong verdict):\n"
        + table)
