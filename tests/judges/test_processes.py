"""Lesson 08's judge: accepts what the solution's answers observe, refuses a race's outcome."""

import copy
import itertools
import multiprocessing
import threading
from multiprocessing import shared_memory

import numpy as np
import pytest

from autograder.checks import process_workers, processes
from autograder.checks.processes import bookkeeping
from autograder.checks.processes.model import _graded_requests
from autograder.judges import Malformed, Rejected
from autograder.judges import processes as judge
from tests.checks import answers_processes as answers
from tests.checks.grading_runs import judged, solution_namespace
from tests.conftest import dev_shm_alone

CHECKS = ("check_pool", "check_ledger", "check_choose")
#: The checks count /dev/shm: one such test at a time across the workers.
pytestmark = pytest.mark.usefixtures("shm_to_itself")


@pytest.fixture(scope="module")
def observed():
    solved = solution_namespace("08_processes", {
        "itertools": itertools, "multiprocessing": multiprocessing, "threading": threading,
        "shared_memory": shared_memory, "np": np, "process_workers": process_workers,
        "processes": processes})
    with dev_shm_alone():
        return {"check_pool": judged(processes.check_pool, solved["SharedWeightsPool"]),
                "check_ledger": judged(processes.check_ledger, solved["run_ledger"]),
                "check_choose": judged(processes.check_choose, solved["choose"])}


def _refused(check: str, seen: dict, match: str) -> None:
    with pytest.raises(Rejected, match=match):
        getattr(judge, check)(seen)


def test_the_judge_accepts_what_the_solutions_observe(observed):
    for check in CHECKS:
        getattr(judge, check)(observed[check])
    assert [[run["eager"], run["same_tokens"]] for run in observed["check_pool"]["bookkeeping"]
            ] == [[True, False], [False, False], [True, True]]


def test_a_pool_that_stopped_answering_once_idle_is_refused(observed):
    seen = copy.deepcopy(observed["check_pool"])
    assert seen["after_idle"] is not None
    seen["after_idle"] = seen["outputs"][1]  # another request's answer
    _refused("check_pool", seen, "after the pool was idle")
    _refused("check_pool", {**observed["check_pool"], "idle_s": -1.0}, "left idle")


def test_a_pool_graded_on_real_processes_only_is_accepted_without_explorations():
    seen = judged(processes.check_pool, answers.WithPipePool)
    assert seen["bookkeeping"] == [] and seen["closing"] is None


@pytest.mark.parametrize(("check", "key"), [
    ("check_pool", "outputs"), ("check_pool", "private_mb"), ("check_pool", "not_spawned"),
    ("check_pool", "leftovers"), ("check_pool", "bookkeeping"), ("check_pool", "closing"),
    ("check_pool", "after_idle"), ("check_pool", "by_workers"),
    ("check_ledger", "totals"), ("check_ledger", "extras"),
    ("check_ledger", "methods"), ("check_ledger", "stopped"), ("check_choose", "cases")])
def test_a_report_without_a_decisive_observation_is_refused(observed, check, key):
    seen = {name: value for name, value in observed[check].items() if name != key}
    with pytest.raises(Malformed, match=f"'{key}' is missing"):
        getattr(judge, check)(seen)


def test_swapped_answers_a_copy_or_a_leak_of_the_pool_are_refused(observed):
    seen = observed["check_pool"]
    outputs = copy.deepcopy(seen["outputs"])
    outputs[3], outputs[4] = outputs[4], outputs[3]  # answers matched in arrival order
    _refused("check_pool", {**seen, "outputs": outputs}, "an answer went to another request")
    _refused("check_pool", {**seen, "private_mb": [24.5, 1.0]}, "its own copy")
    _refused("check_pool", {**seen, "segment_mb": 48.0}, "more than one copy")
    _refused("check_pool", {**seen, "leftovers": [0, 1]}, "segments were left")
    _refused("check_pool", {**seen, "not_spawned": 2}, "not started with spawn")


def test_a_client_given_another_clients_answer_in_one_schedule_is_refused(observed):
    seen = copy.deepcopy(observed["check_pool"])
    schedules = seen["bookkeeping"][1]["schedules"]
    schedules[5] = schedules[5][4:] + schedules[5][:4]  # each got the other's answer
    _refused("check_pool", seen, "not their own answers")
    seen = copy.deepcopy(observed["check_pool"])
    run = seen["bookkeeping"][0]
    run["schedules_run"] -= 1
    run["schedules"] = run["schedules"][:-1]
    _refused("check_pool", seen, "not the graded")
    _refused("check_pool", {**observed["check_pool"],
                            "bookkeeping": observed["check_pool"]["bookkeeping"][:1]},
             "eager workers, same tokens")
    seen = copy.deepcopy(observed["check_pool"])
    run = seen["bookkeeping"][2]  # every client sent client 0's tokens: both get its answer
    run["schedules"][0] = [*run["schedules"][0][:4], *judge._stub_output(1)]
    _refused("check_pool", seen, "the same tokens: the clients got")


def test_lost_updates_or_a_stopped_worker_of_the_ledger_are_refused(observed):
    seen = observed["check_ledger"]
    totals = list(seen["totals"])
    totals[2] -= 417  # two processes' read-modify-writes interleaved
    _refused("check_ledger", {**seen, "totals": totals}, "updates were lost")
    _refused("check_ledger", {**seen, "stopped": [1]}, "stopped before their last update")
    _refused("check_ledger", {**seen, "methods": [[0, "spawn"], [1, "fork"], [2, "spawn"]]},
             "not spawn")
    _refused("check_ledger", {**seen, "ran": [0, 2]}, "ran in a process")


def test_a_pool_whose_workers_did_not_answer_its_requests_is_refused(observed):
    seen = observed["check_pool"]
    assert seen["by_workers"] >= judge.POOL_REQUESTS
    _refused("check_pool", {**seen, "by_workers": 0}, "the workers answered 0")


def test_totals_without_the_workers_extra_amounts_are_refused(observed):
    seen = observed["check_ledger"]
    assert seen["totals"] != judge.EXPECTED_TOTALS  # the extras are in the ledger's totals
    _refused("check_ledger", {**seen, "totals": list(judge.EXPECTED_TOTALS)},
             "updates were lost")
    extras = [0, *seen["extras"][1:]]  # no extra amount: expected_totals would be right
    _refused("check_ledger", {**seen, "extras": extras}, "are not from")


def test_a_wrong_choice_on_one_case_is_refused(observed):
    seen = copy.deepcopy(observed["check_choose"])
    over_budget = next(case for case in seen["cases"]
                       if case["processes_mb"] > case["budget"])
    over_budget["chose"] = "processes"  # the memory budget ignored
    _refused("check_choose", seen, "the rule says 'threads'")
    seen = copy.deepcopy(observed["check_choose"])
    seen["cases"][0]["threads"][0] = 1.0  # not the grader's measurements
    _refused("check_choose", seen, "not the grader's")


def test_the_judges_constants_are_the_checks_settings():
    assert judge.MB == processes.MB
    assert judge.POOL_WORKERS == processes.POOL_WORKERS
    assert judge.POOL_REQUESTS == processes.POOL_THREADS * processes.POOL_REQUESTS_EACH
    assert judge.OUTPUTS == processes.OUTPUTS
    assert (judge.IDLE_MAX_S, judge.IDLE_MARGIN_S) == (processes.IDLE_MAX_S,
                                                         processes.IDLE_MARGIN_S)
    assert judge.WEIGHTS_BYTES == sum(a.nbytes for a in processes.embedding_weights())
    assert judge.EXPECTED_OUTPUTS == _graded_requests()[1]
    assert judge.BOOKKEEPING_CLIENTS == processes.BOOKKEEPING_CLIENTS
    assert judge.BOOKKEEPING_SCHEDULES == processes.BOOKKEEPING_SCHEDULES
    assert judge.BOOKKEEPING_SAMPLES == processes.BOOKKEEPING_SAMPLES
    assert judge.EXPLORATIONS == [list(kind) for kind in bookkeeping.EXPLORATIONS]
    assert [judge._stub_output(k) for k in range(judge.BOOKKEEPING_CLIENTS)] == [
        list(processes.stub_output((k + 1, 0, k + 1))) for k in range(2)]
    assert judge.LEDGER_WORKERS == processes.LEDGER_WORKERS
    assert judge.EXPECTED_TOTALS == process_workers.expected_totals(
        processes.LEDGER_WORKERS, processes.LEDGER_UPDATES)
    assert judge.LAST_ACCOUNTS == [process_workers.account(index, processes.LEDGER_UPDATES - 1)
                                   for index in range(processes.LEDGER_WORKERS)]
    assert judge.LEDGER_EXTRA == processes.LEDGER_EXTRA
    assert judge.MARGIN == processes.MARGIN
    cases = processes.choice_cases()
    assert judge.CHOICE_CASES == len(cases)
    measured = [[list(t.per_second), t.memory_mb, list(p.per_second), p.memory_mb, budget]
                for _, t, p, budget in cases]
    assert judge.fingerprint(measured) == judge.CHOICE_CASES_SHA256
    assert [judge.rule(t, p, p_mb, budget) for t, _, p, p_mb, budget in measured] == [
        processes.reference_choice(t, p, budget) for _, t, p, budget in cases]


def test_a_close_that_returned_before_the_pools_thread_ended_is_refused(observed):
    seen = observed["check_pool"]
    closing = seen["closing"]
    assert closing["held"] and closing["released_by"] == "join" and closing["threads"] == 1
    for change in ({"returned_while_held": True, "released_by": "finish"},
                   {"running_at_return": 1}):
        _refused("check_pool", {**seen, "closing": {**closing, **change}},
                 "returned while a thread the pool started was still running")
    _refused("check_pool", {**seen, "closing": {**closing, "left_running": 1}},
             "still ran after close")
    _refused("check_pool", {**seen, "closing": {**closing, "worker_running_at_return": True}},
             "a worker process was still running")
    _refused("check_pool", {**seen, "closing": None}, "was not watched")
    _refused("check_pool", {**seen, "bookkeeping": [], "closing": closing},
             "never ran on")
