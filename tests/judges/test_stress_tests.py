"""Lesson 05's judge: accepts what the solution's runs observe, refuses a race's outcome."""

import random
import re
import threading
import time

import pytest

from autograder.checks import stress_tests
from autograder.harness import explore
from autograder.judges import Malformed, Rejected
from autograder.judges import stress_tests as judge
from tests.checks.grading_runs import judged, solution_namespace

CHECKS = ("check_stress_test", "check_measure", "check_explore_ledger")


@pytest.fixture(scope="module")
def observed():
    solved = solution_namespace("05_stress", {"threading": threading, "time": time,
                                              "explore": explore, "stress_tests": stress_tests})
    return {
        "check_stress_test": judged(stress_tests.check_stress_test, solved["stress_ledger"]),
        "check_measure": judged(stress_tests.check_measure, solved["measure"]),
        "check_explore_ledger": judged(stress_tests.check_explore_ledger,
                                       solved["explore_ledger"]),
    }


def test_the_judge_accepts_what_the_solution_observes(observed):
    for check in CHECKS:
        getattr(judge, check)(observed[check])


def test_every_report_without_one_of_its_observations_is_refused(observed):
    for check in CHECKS:
        for key in observed[check]:
            cut = {k: v for k, v in observed[check].items() if k != key}
            with pytest.raises(Rejected, match=re.escape(key)):
                getattr(judge, check)(cut)


def _with_row(seen: dict, number: int, **changes) -> dict:
    ledgers = [dict(row) for row in seen["ledgers"]]
    ledgers[number - 1].update(changes)
    return {**seen, "ledgers": ledgers}


def test_a_stress_test_that_missed_a_racy_ledger_is_refused(observed):
    seen = observed["check_stress_test"]
    racy = next(n for n, row in enumerate(seen["ledgers"], 1) if row["racy"])
    with pytest.raises(Rejected, match=f"ledger {racy} \\(racy\\): the test returned"):
        judge.check_stress_test(_with_row(seen, racy, verdict="returned"))
    correct = next(n for n, row in enumerate(seen["ledgers"], 1) if not row["racy"])
    with pytest.raises(Rejected, match="the test hung"):
        judge.check_stress_test(_with_row(seen, correct, verdict="hung"))
    with pytest.raises(Rejected, match="not the graded 13"):
        judge.check_stress_test({**seen, "ledgers": seen["ledgers"][:-1]})
    with pytest.raises(Rejected, match="not the graded 13"):
        judge.check_stress_test(_with_row(seen, racy, racy=False))


def test_a_racy_ledger_failed_without_two_of_its_calls_at_once_is_refused(observed):
    seen = observed["check_stress_test"]
    racy = next(n for n, row in enumerate(seen["ledgers"], 1) if row["racy"])
    assert seen["ledgers"][racy - 1]["overlap"] >= 2
    with pytest.raises(Rejected, match=f"ledger {racy} \\(racy\\): .* the race never happened"):
        judge.check_stress_test(_with_row(seen, racy, overlap=1))
    with pytest.raises(Malformed, match="'overlap' is missing"):
        row = {k: v for k, v in seen["ledgers"][racy - 1].items() if k != "overlap"}
        judge.check_stress_test({**seen, "ledgers": [
            row if n == racy else r for n, r in enumerate(seen["ledgers"], 1)]})


def test_a_stress_test_that_returned_before_its_reader_ended_is_refused(observed):
    seen = observed["check_stress_test"]
    joined = seen["joined"]
    assert joined["held"] and joined["released_by"] == "join"
    assert joined["torn"] and joined["verdict"] == "raised"
    left_running = {**joined, "returned_while_held": True, "released_by": "finish"}
    with pytest.raises(Rejected, match="still held"):
        judge.check_stress_test({**seen, "joined": left_running})
    with pytest.raises(Rejected, match="held-reader ledger \\(its held read torn\\): the test "
                                       "returned, not raised"):
        judge.check_stress_test({**seen, "joined": {**joined, "verdict": "returned"}})
    with pytest.raises(Rejected, match="held-reader ledger \\(correct\\): the test raised"):
        judge.check_stress_test({**seen, "joined": {**joined, "torn": False}})
    judge.check_stress_test({**seen, "joined": {**joined, "torn": False, "verdict": "returned"}})
    with pytest.raises(Rejected, match="how its reader went on"):
        judge.check_stress_test({**seen, "joined": {**seen["joined"], "released_by": "luck"}})
    # The second held-reader run is judged alike (the solution starts one reader: none held).
    second = seen["joined_second"]
    assert not second["held"] and second["verdict"] == "returned"
    with pytest.raises(Rejected, match="still held"):
        judge.check_stress_test({**seen, "joined_second": left_running})
    with pytest.raises(Malformed, match="'joined_second' is missing"):
        judge.check_stress_test({k: v for k, v in seen.items() if k != "joined_second"})


def test_a_stress_test_that_passed_the_ledger_that_races_once_is_refused(observed):
    seen = observed["check_stress_test"]
    once = seen["racy_once"]
    assert once["verdict"] == "raised" and once["writes"] >= 2
    with pytest.raises(Rejected, match="races once \\(racy\\): the test returned"):
        judge.check_stress_test({**seen, "racy_once": {**once, "verdict": "returned"}})
    with pytest.raises(Rejected, match="the race never happened"):
        judge.check_stress_test({**seen, "racy_once": {**once, "writes": 1}})


def test_an_explorer_whose_result_passed_a_racy_ledger_is_refused(observed):
    seen = observed["check_explore_ledger"]
    racy = next(n for n, row in enumerate(seen["ledgers"], 1) if row["racy"])
    passed = {"type": "Result", "ok": True, "verdict": "pass", "schedules": 40}
    with pytest.raises(Rejected, match=f"ledger {racy} \\(racy\\)"):
        judge.check_explore_ledger(_with_row(seen, racy, outcome="returned", result=passed))
    correct = next(n for n, row in enumerate(seen["ledgers"], 1) if not row["racy"])
    made = {"type": "Result", "ok": False, "verdict": "pass", "schedules": 40}
    with pytest.raises(Rejected, match=f"ledger {correct} \\(correct\\)"):
        judge.check_explore_ledger(_with_row(seen, correct, result=made))
    with pytest.raises(Rejected, match=f"ledger {racy} \\(racy\\)"):
        judge.check_explore_ledger(_with_row(seen, racy, outcome="hung", result=None))


def test_an_explorer_whose_failure_the_grader_did_not_see_happen_is_refused(observed):
    """A failing Result counts against a racy ledger only if the grader's witness saw the
    exploration break that ledger: a Result the explorer made up, one whose deadlock the
    ledger never had, or a ledger whose state was tampered with is refused."""
    seen = observed["check_explore_ledger"]
    rows = list(enumerate(seen["ledgers"], 1))
    racy = next(n for n, row in rows if row["racy"] and row["witness"]["anomaly"] == "snapshot")
    clean = {**seen["ledgers"][racy - 1]["witness"], "anomaly": ""}
    with pytest.raises(Rejected, match=f"ledger {racy} \\(racy\\).*saw no such thing"):
        judge.check_explore_ledger(_with_row(seen, racy, witness=clean))
    locked = {**seen["ledgers"][racy - 1]["result"], "verdict": "deadlock"}
    with pytest.raises(Rejected, match="saw no such thing"):
        judge.check_explore_ledger(_with_row(seen, racy, result=locked))
    timeout = {**seen["ledgers"][racy - 1]["result"], "verdict": "timeout"}
    with pytest.raises(Rejected, match="names a race"):
        judge.check_explore_ledger(_with_row(seen, racy, result=timeout))
    forged = {**seen["ledgers"][racy - 1]["witness"], "tampered": "a state changed"}
    with pytest.raises(Rejected, match="a state changed"):
        judge.check_explore_ledger(_with_row(seen, racy, witness=forged))
    correct = next(n for n, row in rows if not row["racy"])
    broken = {**seen["ledgers"][correct - 1]["witness"], "anomaly": "snapshot"}
    with pytest.raises(Rejected, match=f"ledger {correct} \\(correct\\): the grader saw"):
        judge.check_explore_ledger(_with_row(seen, correct, witness=broken))
    with pytest.raises(Rejected, match="names a race"):
        judge.check_explore_ledger(_with_row(seen, racy, outcome="raised", result=None))


def _case(seen: dict, name: str, **changes) -> dict:
    return {**seen, name: {**seen[name], **changes}}


def test_a_benchmark_that_serialized_or_averaged_is_refused(observed):
    seen = observed["check_measure"]
    overlapping = seen[judge.OVERLAPPING]
    one_after_another = sum(overlapping["latencies_s"])  # the threads ran in turn
    with pytest.raises(Rejected, match="ran one after another"):
        judge.check_measure(_case(seen, judge.OVERLAPPING, wall_s=one_after_another,
                                  throughput=24 / one_after_another))
    alternating = seen[judge.ALTERNATING]
    average = sum(alternating["latencies_s"]) / 24  # every call given the mean latency
    with pytest.raises(Rejected, match="longest latency"):
        judge.check_measure(_case(seen, judge.ALTERNATING, latencies_s=[average] * 24))
    warmed = {**seen[judge.OVERLAPPING], "calls": [judge.CALLS + 1] * judge.THREADS}
    with pytest.raises(Rejected, match="times per thread"):
        judge.check_measure({**seen, judge.OVERLAPPING: warmed})
    with pytest.raises(Rejected, match="not 24 calls"):
        judge.check_measure(_case(seen, judge.LOCKED, throughput=12 / seen[judge.LOCKED]["wall_s"]))
    with pytest.raises(Rejected, match="23 latencies"):
        judge.check_measure(_case(seen, judge.LOCKED,
                                  latencies_s=seen[judge.LOCKED]["latencies_s"][:23]))


def test_the_judges_constants_are_the_checks_settings():
    for name in ("THREADS", "CALLS", "SLEEP_S", "FAILING", "ANOMALIES"):
        assert getattr(judge, name) == getattr(stress_tests, name), name
    for plan, racy, correct in ((judge.STRESS_LEDGERS, stress_tests.RACY, stress_tests.CORRECT),
                                (judge.EXPLORE_LEDGERS, stress_tests.GIL_HIDDEN_RACY,
                                 stress_tests.GIL_HIDDEN_CORRECT)):
        order = [(cls.__name__, True) for cls in racy] + [(cls.__name__, False)
                                                          for cls in correct]
        random.Random(stress_tests.SEED).shuffle(order)
        assert plan == order
