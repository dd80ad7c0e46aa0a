"""Lesson 02's judge: accepts what the solution's runs observe, refuses a race's outcome."""

import copy
import threading

import pytest

from autograder.checks import mutex
from autograder.judges import Malformed, Rejected
from autograder.judges import mutex as judge
from tests.checks.grading_runs import judged, solution_namespace

CHECKS = ("check_metrics", "check_cache", "check_move_slots", "check_model_slot")


@pytest.fixture(scope="module")
def observed():
    solved = solution_namespace("02_mutex", {"threading": threading})
    return {"check_metrics": judged(mutex.check_metrics, solved["ServerMetrics"]),
            "check_cache": judged(mutex.check_cache, solved["PredictionCache"]),
            "check_move_slots": judged(mutex.check_move_slots, solved["move_slots"]),
            "check_model_slot": judged(mutex.check_model_slot, solved["ModelSlot"])}


def _with_run(seen: dict, number: int, **changes) -> dict:
    """``seen`` with schedule ``number``'s entry changed (``None`` deletes a key)."""
    forged = copy.deepcopy(seen)
    run = forged["runs"][number]
    for key, value in changes.items():
        if value is None:
            del run[key]
        else:
            run[key] = value
    return forged


def test_the_judge_accepts_what_the_solutions_observe(observed):
    for check in CHECKS:
        getattr(judge, check)(observed[check])


@pytest.mark.parametrize("check", CHECKS)
def test_a_search_cut_short_is_refused(observed, check):
    seen = observed[check]
    with pytest.raises(Rejected, match="not a complete graded search"):
        getattr(judge, check)({**seen, "schedules": 60, "runs": seen["runs"][:60]})
    with pytest.raises(Malformed, match="'runs' holds"):
        getattr(judge, check)({**seen, "runs": seen["runs"][:-1]})


def test_an_update_lost_or_a_mixed_answer_on_first_use_is_refused(observed):
    seen = copy.deepcopy(observed["check_metrics"])
    seen["first_use"]["schedules"][3]["final"] = [1, 1, 0, mutex.OK_LATENCY_S]
    with pytest.raises(Rejected, match="first-use schedule 4: the final snapshot"):
        judge.check_metrics(seen)
    seen = copy.deepcopy(observed["check_model_slot"])
    seen["first_use"]["schedules"][5]["answers"][0] = [mutex.OLD_VERSION, mutex.NEW_VERSION]
    with pytest.raises(Rejected, match="first-use schedule 6: an answer of version 1"):
        judge.check_model_slot(seen)
    for check in ("check_metrics", "check_model_slot"):
        seen = copy.deepcopy(observed[check])
        seen["first_use"]["schedules"].pop()
        with pytest.raises(Malformed, match="'schedules' holds"):
            getattr(judge, check)(seen)
        cut = copy.deepcopy(observed[check])
        cut["first_use"]["schedules_run"] = 10
        cut["first_use"]["schedules"] = cut["first_use"]["schedules"][:10]
        with pytest.raises(Rejected, match="10 schedules ran"):
            getattr(judge, check)(cut)
        del seen["first_use"]
        with pytest.raises(Malformed, match="first_use"):
            getattr(judge, check)(seen)


@pytest.mark.parametrize("check", CHECKS)
def test_a_report_without_its_schedules_is_refused(observed, check):
    seen = {key: value for key, value in observed[check].items() if key != "runs"}
    with pytest.raises(Malformed, match="'runs' is missing"):
        getattr(judge, check)(seen)


def test_a_cache_that_computed_a_key_again_on_one_thread_is_refused(observed):
    seen = observed["check_cache"]
    assert seen["kept"] == {"keys": 300, "computed": 300, "same": 300}
    with pytest.raises(Rejected, match="not each key computed once, kept"):
        judge.check_cache({**seen, "kept": {"keys": 300, "computed": 344, "same": 256}})
    with pytest.raises(Rejected, match="not the graded 300"):
        judge.check_cache({**seen, "kept": {"keys": 2, "computed": 2, "same": 2}})
    with pytest.raises(Malformed, match="'kept' is missing"):
        judge.check_cache({k: v for k, v in seen.items() if k != "kept"})


def test_a_get_that_hung_or_made_up_a_value_after_a_failed_build_is_refused(observed):
    seen = observed["check_cache"]
    failing = seen["failing"]
    assert {o for run in failing["runs"] for o in run["outcomes"]} <= {"raised", "value"}
    forged = copy.deepcopy(seen)
    forged["failing"]["runs"][1]["outcomes"] = ["raised", "other"]
    with pytest.raises(Rejected, match="failing-build schedule 2: the gets ended"):
        judge.check_cache(forged)
    forged = copy.deepcopy(seen)
    forged["failing"]["runs"][0]["outcomes"] = ["raised"]  # the other get never ended
    with pytest.raises(Malformed, match="'outcomes' holds 1"):
        judge.check_cache(forged)
    with pytest.raises(Rejected, match="not a complete graded search"):
        judge.check_cache({**seen, "failing": {**failing, "schedules": 1, "covered": False,
                                                "runs": failing["runs"][:1]}})


def test_a_lost_update_or_a_torn_snapshot_in_one_schedule_is_refused(observed):
    seen = observed["check_metrics"]
    with pytest.raises(Rejected, match="an update was lost"):
        judge.check_metrics(_with_run(seen, 40, final=[3, 1, 2, 9.0]))
    torn = [[1, 1, 0, 1.0], [4, 2, 1, 6.0]]
    with pytest.raises(Rejected, match="ok \\+ errors != requests"):
        judge.check_metrics(_with_run(seen, 40, snapshots=torn, later=torn))
    with pytest.raises(Rejected, match="later"):
        judge.check_metrics(_with_run(seen, 40, later=[[1, 1, 0, 1.0], [4, 2, 2, 10.0]]))
    with pytest.raises(Malformed, match="'final' is missing"):
        judge.check_metrics(_with_run(seen, 40, final=None))
    with pytest.raises(Malformed, match="'one_thread' is missing"):
        judge.check_metrics({k: v for k, v in seen.items() if k != "one_thread"})
    with pytest.raises(Rejected, match="after the caller changed a returned snapshot"):
        judge.check_metrics({**seen, "after_a_change": [-1, 1, 1, 4.0]})
    with pytest.raises(Malformed, match="'after_a_change' is missing"):
        judge.check_metrics({k: v for k, v in seen.items() if k != "after_a_change"})


def test_a_key_computed_twice_in_one_schedule_is_refused(observed):
    seen = observed["check_cache"]
    with pytest.raises(Rejected, match="not one the check makes"):
        judge.check_cache({**seen, "fast_key": "fast"})
    with pytest.raises(Rejected, match="computed"):
        judge.check_cache(_with_run(seen, 12, computed=["slow", "slow", seen["fast_key"]]))
    with pytest.raises(Rejected, match="different objects"):
        judge.check_cache(_with_run(seen, 12, same_object=False))
    with pytest.raises(Rejected, match="waited for the slow build"):
        judge.check_cache(_with_run(seen, 12, gave_up=1))
    with pytest.raises(Malformed, match="'computed' is missing"):
        judge.check_cache(_with_run(seen, 12, computed=None))


def test_a_lost_slot_or_an_unguarded_move_in_one_schedule_is_refused(observed):
    seen = observed["check_move_slots"]
    with pytest.raises(Rejected, match="slots in all"):
        judge.check_move_slots(_with_run(seen, 70, slots=[2, 2], in_flight=2,
                                         moved=[False, False]))
    with pytest.raises(Rejected, match="went down to -2"):
        judge.check_move_slots(_with_run(seen, 70, lowest=[-2, 2]))
    with pytest.raises(Rejected, match="unguarded"):
        judge.check_move_slots(_with_run(seen, 70, unguarded=[1, 0]))
    with pytest.raises(Malformed, match="'unguarded' is missing"):
        judge.check_move_slots(_with_run(seen, 70, unguarded=None))
    with pytest.raises(Rejected, match="on one thread"):
        judge.check_move_slots({**seen, "one_thread": [[True, 1, 3], [True, -1, 4]]})


def test_an_answer_of_a_mixed_version_in_one_schedule_is_refused(observed):
    seen = observed["check_model_slot"]
    run = seen["runs"][30]
    mixed = [[2, 1], *run["answers"][1:]]
    with pytest.raises(Rejected, match="computed by version 1"):
        judge.check_model_slot(_with_run(seen, 30, answers=mixed))
    with pytest.raises(Rejected, match="first served"):
        judge.check_model_slot(_with_run(seen, 30, new_calls=["request 3", "example"]))
    with pytest.raises(Rejected, match="after swap"):
        judge.check_model_slot(_with_run(seen, 30, after_swap=1))
    with pytest.raises(Malformed, match="'answers' is missing"):
        judge.check_model_slot(_with_run(seen, 30, answers=None))


def test_the_judges_constants_are_the_checks_settings():
    assert (judge.SCHEDULES, judge.SAMPLES) == (mutex.SCHEDULES, mutex.SAMPLES)
    assert judge.FIRST_USE_SCHEDULES == mutex.FIRST_USE_SCHEDULES
    assert (judge.OK_LATENCY_S, judge.ERROR_LATENCY_S) == (mutex.OK_LATENCY_S,
                                                           mutex.ERROR_LATENCY_S)
    assert (judge.SLOW_KEY, judge.FAST_PREFIX) == (mutex.SLOW_KEY, mutex.FAST_PREFIX)
    assert judge.KEPT_KEYS == mutex.KEPT_KEYS
    assert (judge.SLOTS_EACH, judge.MOVE) == (mutex.SLOTS_EACH, mutex.MOVE)
    assert (judge.OLD_VERSION, judge.NEW_VERSION, judge.EXAMPLE) == (
        mutex.OLD_VERSION, mutex.NEW_VERSION, mutex.EXAMPLE)
