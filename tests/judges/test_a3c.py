"""Lesson 09's judge: accepts what the solution's runs observe, refuses a race's outcome."""

import copy
import threading
import time
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import a3c
from autograder.checks.a3c.learner import VARIABLE_NAMES
from autograder.checks.a3c.model import expected_output
from autograder.checks.a3c.versioned import FIRST_WEIGHT
from autograder.judges import Malformed, Rejected
from autograder.judges import a3c as judge
from tests.checks.grading_runs import judged, solution_namespace

EXERCISES = {"check_shared_network": "make_shared_network", "check_learner": "SharedLearner",
             "check_budget": "StepBudget", "check_versioned": "VersionedNetwork"}


@pytest.fixture(scope="module")
def observed():
    """Each check's report for the lesson's solution."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solved = solution_namespace("09_a3c", {"threading": threading, "time": time, "tf": tf,
                                               "keras": keras, "np": np, "a3c": a3c})
        return {name: judged(getattr(a3c, name), solved[answer])
                for name, answer in EXERCISES.items()}


def _seen(observed, name):
    return copy.deepcopy(observed[name])


def test_the_judge_accepts_what_the_solution_observes(observed):
    for name, seen in observed.items():
        getattr(judge, name)(seen)


def test_a_network_traced_or_answering_otherwise_while_the_actors_ran_is_refused(observed):
    seen = _seen(observed, "check_shared_network")
    seen["trials"][2]["traces"] = 2
    with pytest.raises(Rejected, match="traced 2 time"):
        judge.check_shared_network(seen)
    seen = _seen(observed, "check_shared_network")
    seen["trials"][1]["outputs"][7] = [0.0] * judge.OUTPUTS
    with pytest.raises(Rejected, match="actor 2 got"):
        judge.check_shared_network(seen)


def test_a_lost_update_or_two_applies_at_once_are_refused(observed):
    seen = _seen(observed, "check_learner")
    seen["trials"][3]["iterations"] -= 1
    with pytest.raises(Rejected, match="update was lost"):
        judge.check_learner(seen)
    seen = _seen(observed, "check_learner")
    seen["trials"][0]["differences"][2] = a3c.LEARNING_RATE * a3c.GRADIENT_STEP
    with pytest.raises(Rejected, match="1 variables differ"):
        judge.check_learner(seen)
    seen = _seen(observed, "check_learner")
    seen["trials"][1]["applies"] = [[0, 1.0, 2.0], [1, 1.5, 2.5]]
    with pytest.raises(Rejected, match="1 pair"):
        judge.check_learner(seen)


def test_a_gradient_dropped_while_the_learner_was_busy_is_refused(observed):
    seen = _seen(observed, "check_learner")
    seen["backlog"]["iterations"] -= 1
    with pytest.raises(Rejected, match="a push lost its gradient"):
        judge.check_learner(seen)
    seen = _seen(observed, "check_learner")
    seen["backlog"]["differences"][0] = a3c.LEARNING_RATE * a3c.GRADIENT_STEP
    with pytest.raises(Rejected, match="busy, the weights differ"):
        judge.check_learner(seen)
    seen = _seen(observed, "check_learner")
    seen["backlog"]["left"] = 1
    with pytest.raises(Rejected, match="did not stop every thread"):
        judge.check_learner(seen)


def test_a_long_budget_that_drops_equal_or_old_returns_is_refused(observed):
    seen = _seen(observed, "check_budget")
    seen["long_returns"] = sorted(set(seen["long_returns"]))  # a set() of returns
    with pytest.raises(Rejected, match="kept 7 returns"):
        judge.check_budget(seen)
    seen = _seen(observed, "check_budget")
    seen["long_returns"] = seen["long_returns"][-100:]  # a deque(maxlen=100)
    with pytest.raises(Rejected, match="kept 100 returns"):
        judge.check_budget(seen)
    seen = _seen(observed, "check_budget")
    seen["long_taken"] = seen["long_taken"][:-1]
    with pytest.raises(Rejected, match="handed out 249 steps"):
        judge.check_budget(seen)


def test_a_step_handed_out_twice_or_a_lost_step_is_refused(observed):
    seen = _seen(observed, "check_budget")
    seen["schedules"][17]["taken"] = [1, 1, 2]
    with pytest.raises(Rejected, match="schedule 18 handed out"):
        judge.check_budget(seen)
    seen = _seen(observed, "check_budget")
    seen["schedules"][250]["T"] = 2
    with pytest.raises(Rejected, match="T == 2"):
        judge.check_budget(seen)
    seen = _seen(observed, "check_budget")
    seen["schedules"][30]["t_at_stop"] = [4]
    with pytest.raises(Rejected, match="schedule 31 T read 4 once an actor"):
        judge.check_budget(seen)
    seen = _seen(observed, "check_budget")
    seen["schedules"][40]["stopped_at"] = [3, 1]
    with pytest.raises(Rejected, match="schedule 41 an actor's take.. returned None when at "
                                       "most 1 of the 3"):
        judge.check_budget(seen)
    seen = _seen(observed, "check_budget")
    seen["schedules_run"] = seen["bounded"] = 12
    seen["schedules"] = seen["schedules"][:12]
    with pytest.raises(Rejected, match="12 schedules ran"):
        judge.check_budget(seen)


def test_a_torn_act_or_a_stamp_read_apart_is_refused(observed):
    seen = _seen(observed, "check_versioned")
    act = seen["trials"][2]["acts"][-1]
    act[5] = expected_output(act[4] + FIRST_WEIGHT + 1)
    with pytest.raises(Rejected, match="torn"):
        judge.check_versioned(seen)
    seen = _seen(observed, "check_versioned")
    act = seen["schedules"][6]["acts"][0]
    act[5:] = [expected_output(FIRST_WEIGHT + act[4] - 1)] * judge.OUTPUTS
    with pytest.raises(Rejected, match="labelled version"):
        judge.check_versioned(seen)


def test_two_actors_acting_on_a_stale_cache_or_a_cut_search_are_refused(observed):
    seen = _seen(observed, "check_versioned")
    act = seen["actors"]["schedules"][4]["acts"][1]
    act[5:] = [expected_output(FIRST_WEIGHT + act[4] - 1)] * judge.OUTPUTS
    with pytest.raises(Rejected, match="with 2 actors actor 1 got outputs"):
        judge.check_versioned(seen)
    seen = _seen(observed, "check_versioned")
    seen["actors"]["schedules"][4]["acts"] = [
        entry for entry in seen["actors"]["schedules"][4]["acts"] if entry[0] == 0]
    with pytest.raises(Malformed, match="'acts' holds 1 entries, not 2"):
        judge.check_versioned(seen)
    seen = _seen(observed, "check_versioned")
    seen["actors"]["schedules_run"] = 10
    with pytest.raises(Rejected, match="not the graded"):
        judge.check_versioned(seen)
    seen = _seen(observed, "check_versioned")
    del seen["actors"]
    with pytest.raises(Malformed, match="actors"):
        judge.check_versioned(seen)


@pytest.mark.parametrize(("name", "key"), [
    ("check_shared_network", "trials"), ("check_shared_network", "trials_run"),
    ("check_learner", "trials"), ("check_learner", "one_thread"), ("check_learner", "backlog"),
    ("check_budget", "schedules"),
    ("check_budget", "bounded"), ("check_versioned", "trials"), ("check_versioned", "schedules")])
def test_a_report_without_a_decisive_observation_is_refused(observed, name, key):
    seen = _seen(observed, name)
    del seen[key]
    with pytest.raises(Malformed, match=key):
        getattr(judge, name)(seen)


def test_a_trial_without_its_decisive_observation_is_refused(observed):
    for name, key in (("check_shared_network", "traces"), ("check_learner", "iterations"),
                      ("check_versioned", "learned")):
        seen = _seen(observed, name)
        del seen["trials"][0][key]
        with pytest.raises(Malformed, match=key):
            getattr(judge, name)(seen)


def test_the_judges_constants_are_the_checks_settings():
    for name in ("HIDDEN", "STATE_SIZE", "NETWORK_TRIALS", "NETWORK_THREADS", "NETWORK_CALLS",
                 "LEARNER_TRIALS", "LEARNER_THREADS", "LEARNER_PUSHES", "LEARNER_SCHEDULES",
                 "LEARNER_BACKLOG_PUSHES",
                 "LEARNER_SAMPLES", "BUDGET_T_MAX", "BUDGET_LONG_T_MAX", "BUDGET_LONG_RETURNS",
                 "BUDGET_ACTORS", "BUDGET_SCHEDULES", "BUDGET_SAMPLES", "VERSIONED_TRIALS",
                 "VERSIONED_LEARNS", "VERSIONED_ACTORS", "VERSIONED_EXPLORE_LEARNS",
                 "VERSIONED_SCHEDULES", "VERSIONED_SAMPLES", "VERSIONED_EXPLORE_ACTORS"):
        assert getattr(judge, name) == getattr(a3c.settings, name), name
    assert judge.OUTPUTS == a3c.settings.ACTIONS + 1
    assert judge.VARIABLES == len(VARIABLE_NAMES) == len(a3c.actor_critic().trainable_variables)
    assert judge.FIRST_WEIGHT == FIRST_WEIGHT
    for version in (0, 1, 7, 30):
        assert judge._output(version) == expected_output(version + FIRST_WEIGHT)
