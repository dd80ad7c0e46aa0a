"""Lesson 06's judge: accepts what the solution's answers observe, refuses a race's outcome."""

import copy
import threading
import time

import pytest

from autograder.checks import tracing
from autograder.checks.tracing import recording, settings
from autograder.checks.tracing.logs import _conflict_edge_logs, _hidden_logs, _lockset_edge_logs
from autograder.checks.tracing.recording import _record
from autograder.judges import Malformed, Rejected
from autograder.judges import tracing as judge
from tests.checks.grading_runs import judged, solution_namespace

CHECKS = ("check_log_access", "check_who_overwrote", "check_find_conflicts",
          "check_lockset_races", "check_publish_locked")


@pytest.fixture(scope="module")
def observed():
    solved = solution_namespace("06_tracing", {"threading": threading, "time": time})
    answers = {"check_log_access": "log_access", "check_who_overwrote": "who_overwrote",
               "check_find_conflicts": "find_conflicts", "check_lockset_races": "lockset_races",
               "check_publish_locked": "publish_locked"}
    return {check: judged(getattr(tracing, check), solved[answer])
            for check, answer in answers.items()}


def _refused(check: str, seen: dict, match: str) -> None:
    with pytest.raises(Rejected, match=match):
        getattr(judge, check)(seen)


def test_the_judge_accepts_what_the_solutions_observe(observed):
    for check in CHECKS:
        getattr(judge, check)(observed[check])


@pytest.mark.parametrize(("check", "key"), [
    ("check_log_access", "trials"), ("check_log_access", "one_call"),
    ("check_log_access", "trials_run"), ("check_log_access", "overlap"),
    ("check_log_access", "together"),
    ("check_log_access", "explored"),
    ("check_who_overwrote", "logs"),
    ("check_find_conflicts", "logs"), ("check_lockset_races", "logs"),
    ("check_publish_locked", "schedules"), ("check_publish_locked", "schedules_run")])
def test_a_report_without_a_decisive_observation_is_refused(observed, check, key):
    seen = {name: value for name, value in observed[check].items() if name != key}
    with pytest.raises(Malformed, match=f"'{key}' is missing"):
        getattr(judge, check)(seen)


def test_a_record_by_the_wrong_thread_or_a_lost_record_in_one_trial_is_refused(observed):
    seen = observed["check_log_access"]
    forged = copy.deepcopy(seen)
    forged["trials"][3]["records"][0][0] = "MainThread"  # the caller's name read elsewhere
    _refused("check_log_access", forged, "no record by")
    forged = copy.deepcopy(seen)
    writes = [r for r in forged["trials"][3]["records"] if r[1] == "write"]
    forged["trials"][3]["records"].remove(writes[0])  # the failed write never logged
    _refused("check_log_access", forged, "logged 5 records")
    forged = copy.deepcopy(seen)
    for record in forged["trials"][5]["records"]:
        record[3] = record[4]  # the start taken after the call
    _refused("check_log_access", forged, "not around")
    _refused("check_log_access", {**seen, "trials_run": 2, "trials": seen["trials"][:2]},
             "2 trials ran")


def test_a_record_lost_in_one_explored_schedule_or_a_short_search_is_refused(observed):
    seen = observed["check_log_access"]
    forged = copy.deepcopy(seen)
    del forged["explored"]["schedules"][7]["records"][0]  # copied and written back over
    _refused("check_log_access", forged, "schedule 8 logged 1 records, not 2")
    forged = copy.deepcopy(seen)
    forged["explored"]["schedules"][2]["returned"] = [100, 100]
    _refused("check_log_access", forged, "schedule 3: the reads returned")
    explored = seen["explored"]
    short = {**explored, "schedules_run": 3, "schedules": explored["schedules"][:3]}
    _refused("check_log_access", {**seen, "explored": short}, "3 schedules ran")


def _with_results(seen: dict, number: int, results: list) -> dict:
    forged = copy.deepcopy(seen)
    forged["logs"][number]["results"] = results
    forged["logs"][number]["returned"] = len(results)
    return forged


def _racy(seen: dict, definition) -> int:
    """A log of ``seen`` on which ``definition`` finds something."""
    return next(k for k, graded in enumerate(seen["logs"]) if definition(graded["log"]))


def test_a_missed_lost_update_or_one_reported_twice_is_refused(observed):
    seen = observed["check_who_overwrote"]
    k = _racy(seen, judge.who_overwrote)
    results = seen["logs"][k]["results"]
    _refused("check_who_overwrote", _with_results(seen, k, results[1:]), "missed")
    _refused("check_who_overwrote", _with_results(seen, k, results + results[:1]),
             "more than once")
    swapped = [[b, a, resource] for a, b, resource in results]
    _refused("check_who_overwrote", _with_results(seen, k, swapped), "wrongly reported")


def test_touching_accesses_reported_as_a_conflict_are_refused(observed):
    seen = observed["check_find_conflicts"]
    forged = copy.deepcopy(seen)
    for graded in forged["logs"]:
        log = graded["log"]
        touching = [[i, j] for i in range(len(log)) for j in range(i + 1, len(log))
                    if log[i][2] == log[j][2] and log[i][0] != log[j][0]
                    and (log[i][4] == log[j][3] or log[j][4] == log[i][3])]
        if touching:
            graded["results"] = graded["results"] + touching[:1]
            graded["returned"] = len(graded["results"])
            break
    else:
        pytest.fail("no log has two accesses that touch")
    _refused("check_find_conflicts", forged, "wrongly reported")
    k = _racy(seen, judge.find_conflicts)
    _refused("check_find_conflicts", _with_results(seen, k, []), "missed")


def test_a_clean_log_flagged_or_a_racy_one_missed_by_lockset_is_refused(observed):
    seen = observed["check_lockset_races"]
    _refused("check_lockset_races", _with_results(seen, 0, ["best"]), "wrongly reported")
    k = _racy(seen, judge.lockset_races)
    _refused("check_lockset_races", _with_results(seen, k, []), "missed")
    # The small logs graded after the hidden ones: not the graded order.
    edge = judge.EDGE_LOGS
    _refused("check_lockset_races", {"logs": seen["logs"][edge:] + seen["logs"][:edge]},
             "not the grader's logs")


def test_other_logs_than_the_graders_are_refused(observed):
    seen = observed["check_find_conflicts"]
    forged = copy.deepcopy(seen)
    forged["logs"][7]["log"] = forged["logs"][7]["log"][:1]
    forged["logs"][7]["results"] = []
    _refused("check_find_conflicts", forged, "not the grader's logs")


def _with_schedule(seen: dict, number: int, **changes) -> dict:
    forged = copy.deepcopy(seen)
    forged["schedules"][number].update(changes)
    return forged


def test_a_lost_best_score_or_a_save_under_the_lock_in_one_schedule_is_refused(observed):
    seen = observed["check_publish_locked"]
    _refused("check_publish_locked", _with_schedule(seen, 17, best=["trainer-2", 0.85]),
             "an update was lost")
    saves = [[who, True] for who, _ in seen["schedules"][17]["saves"]]
    _refused("check_publish_locked", _with_schedule(seen, 17, saves=saves),
             "while its thread held the lock")
    log = copy.deepcopy(seen["schedules"][17]["log"])
    log[0][5] = None
    _refused("check_publish_locked", _with_schedule(seen, 17, log=log), "logged with locks")
    twice = [["trainer-0", False], ["trainer-2", False], ["trainer-1", False]]
    wrote = [[who, op, True] for who in ("trainer-0", "trainer-1", "trainer-2")
             for op in ("read", "write")]
    _refused("check_publish_locked", _with_schedule(seen, 17, saves=twice, accesses=wrote),
             "the same score both saved")
    runs = seen["schedules_run"]
    _refused("check_publish_locked", {**seen, "schedules_run": runs - 1,
                                      "schedules": seen["schedules"][:-1]},
             "not the graded")


def test_a_log_access_whose_accesses_never_overlapped_is_refused(observed):
    seen = observed["check_log_access"]
    assert seen["overlap"] >= 2
    _refused("check_log_access", {**seen, "overlap": 1}, "serialised the accesses")


def test_a_log_access_whose_two_writers_never_met_in_fn_is_refused(observed):
    seen = observed["check_log_access"]
    assert seen["together"] == {case: True for case in judge.TOGETHER_CASES}
    _refused("check_log_access", {**seen, "together": {**seen["together"], "write": False}},
             "writes of one resource did not run at once")
    named = {**seen["together"], "write naming one lock": False}
    _refused("check_log_access", {**seen, "together": named},
             "write naming one locks of one resource did not run at once")


def test_a_publish_that_returned_before_its_save_is_refused(observed):
    seen = observed["check_publish_locked"]
    writers = sorted({who for who, op, _ in seen["schedules"][17]["accesses"] if op == "write"})
    assert writers and seen["schedules"][17]["saved_on_return"] == writers
    _refused("check_publish_locked", _with_schedule(seen, 17, saved_on_return=[]),
             "returned before its save ran")


def test_an_access_without_the_lock_or_a_save_by_a_trainer_that_did_not_write_is_refused(
        observed):
    seen = observed["check_publish_locked"]
    accesses = copy.deepcopy(seen["schedules"][17]["accesses"])
    assert accesses and all(held is True for _, _, held in accesses)
    accesses[0][2] = False  # a read made before taking the lock passed in
    _refused("check_publish_locked", _with_schedule(seen, 17, accesses=accesses),
             "without the lock passed in held")
    saves = seen["schedules"][17]["saves"]
    writers = {who for who, op, _ in seen["schedules"][17]["accesses"] if op == "write"}
    assert {who for who, _ in saves} == writers
    not_written = [[who, op, held] for who, op, held in seen["schedules"][17]["accesses"]
                   if op == "read"]  # the writes went straight to the record
    _refused("check_publish_locked", _with_schedule(seen, 17, accesses=not_written),
             "are not those that saved")


def test_the_judges_constants_are_the_checks_settings():
    assert judge.STRESS_TRIALS == tracing.STRESS_TRIALS
    assert (judge.LOG_EXPLORE_THREADS, judge.LOG_SCHEDULES, judge.LOG_SAMPLES) == (
        settings.LOG_EXPLORE_THREADS, settings.LOG_SCHEDULES, settings.LOG_SAMPLES)
    assert judge.HIDDEN_LOGS == tracing.HIDDEN_LOGS
    assert judge.EDGE_LOGS == len(_lockset_edge_logs())
    assert judge.TOGETHER_CASES == tuple(name for name, _, _ in recording.TOGETHER_CASES)
    assert judge.CONFLICT_EDGE_LOGS == len(_conflict_edge_logs())
    assert judge.SCHEDULES == tracing.SCHEDULES
    assert judge.SAMPLES == tracing.SAMPLES
    assert judge.PUBLISH_SCORES == tracing.PUBLISH_SCORES
    log: list = []
    tracing.reference_log_access(log, "write", "best", lambda: 7, lock="best_lock")
    assert sorted(log[0]) == judge.RECORD_KEYS
    assert [log[0]["op"], log[0]["resource"], log[0]["lock"]] == judge.SMOKE_RECORD
    for logs, digest in ((_hidden_logs(), judge.HIDDEN_LOGS_SHA256),
                         (_lockset_edge_logs(), judge.EDGE_LOGS_SHA256),
                         (_conflict_edge_logs(), judge.CONFLICT_EDGE_LOGS_SHA256)):
        assert judge.fingerprint([[_record(r) for r in log] for _, log in logs]) == digest
        for _, log in logs:
            records = [_record(r) for r in log]
            assert judge.who_overwrote(records) == tracing.reference_who_overwrote(log)
            assert judge.find_conflicts(records) == tracing.reference_find_conflicts(log)
            assert judge.lockset_races(records) == tracing.reference_lockset_races(log)
