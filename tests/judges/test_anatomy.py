"""Lesson 00's judge: accepts what the solution's runs observe, refuses a race's outcome."""

import pytest

from autograder.checks import anatomy
from autograder.judges import Rejected
from autograder.judges import anatomy as judge
from tests.checks import answers_anatomy as answers
from tests.checks.grading_runs import judged


@pytest.fixture(scope="module")
def observed():
    counter = judged(anatomy.check_counter, answers.CORRECT_COUNTERS[0])
    cache = judged(anatomy.check_cache, answers.CORRECT_CACHES[0])
    schedules = judged(anatomy.check_schedules,
                       *answers.CORRECT_SCHEDULES["explore_found_them"])
    return {"counter": counter, "cache": cache, "schedules": schedules}


def test_the_judge_accepts_what_correct_answers_observe(observed):
    judge.check_counter(observed["counter"])
    judge.check_cache(observed["cache"])
    judge.check_schedules(observed["schedules"])


def test_a_lost_increment_in_one_schedule_is_refused(observed):
    totals = list(observed["counter"]["totals"])
    totals[123] = 6
    with pytest.raises(Rejected, match="handed out other than 7"):
        judge.check_counter({**observed["counter"], "totals": totals})


def test_a_key_loaded_twice_in_one_schedule_is_refused(observed):
    runs = [dict(run) for run in observed["cache"]["runs"]]
    runs[7]["loads"] = ["a", "a", "b"]
    with pytest.raises(Rejected, match="loaded"):
        judge.check_cache({**observed["cache"], "runs": runs})


def test_a_sequential_replay_is_neither_interleaving(observed):
    sequential = {"balance": 40, "paid": [0, 60]}
    with pytest.raises(Rejected, match="OVERDRAFT"):
        judge.check_schedules({**observed["schedules"], "overdraft": sequential})
    with pytest.raises(Rejected, match="DOUBLE_PAY"):
        judge.check_schedules({**observed["schedules"], "double_pay": sequential})
