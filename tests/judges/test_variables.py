"""Lesson 03's judge: accepts what the solution's runs observe, refuses a race's outcome."""

import copy
import threading
import time
import warnings

import keras
import pytest
import tensorflow as tf

from autograder.checks import variables
from autograder.checks.variables import choice, settings
from autograder.checks.variables.choice import run_choice
from autograder.judges import Malformed, Rejected
from autograder.judges import variables as judge
from tests.checks.grading_runs import judged, solution_namespace


@pytest.fixture(scope="module")
def observed():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solved = solution_namespace("03_variables", {
            "threading": threading, "time": time, "tf": tf, "keras": keras,
            "variables": variables})
        return {"counter": judged(variables.check_step_counter, solved["StepCounter"]),
                "publisher": judged(variables.check_publisher, solved["WeightPublisher"]),
                "choice": judged(variables.check_choice, solved["choose_publisher"])}


def _forged(seen: dict, path: tuple, value) -> dict:
    """A copy of ``seen`` with the entry at ``path`` set to ``value`` (``None``: deleted)."""
    forged = copy.deepcopy(seen)
    *inner, last = path
    where = forged
    for step in inner:
        where = where[step]
    if value is None:
        del where[last]
    else:
        where[last] = value
    return forged


def test_the_judge_accepts_what_the_solutions_observe(observed):
    judge.check_step_counter(observed["counter"])
    judge.check_publisher(observed["publisher"])
    judge.check_choice(observed["choice"])


def test_a_lost_step_or_a_number_handed_out_twice_is_refused(observed):
    seen = observed["counter"]
    with pytest.raises(Rejected, match="steps were lost"):
        judge.check_step_counter(_forged(seen, ("trials", 1, "recorded"), 799))
    numbers = copy.deepcopy(seen["runs"][5]["numbers"])
    numbers[1][0] = numbers[0][0]
    with pytest.raises(Rejected, match="each of 1 .. 4 once"):
        judge.check_step_counter(_forged(seen, ("runs", 5, "numbers"), numbers))
    with pytest.raises(Malformed, match="'recorded' is missing"):
        judge.check_step_counter(_forged(seen, ("trials", 1, "recorded"), None))
    with pytest.raises(Rejected, match="stress trials ran"):
        judge.check_step_counter({**seen, "trials_run": 1, "trials": seen["trials"][:1]})
    with pytest.raises(Rejected, match="not the complete graded search"):
        judge.check_step_counter({**seen, "schedules": 20, "runs": seen["runs"][:20]})


def test_a_number_handed_out_twice_on_first_use_or_a_cut_first_use_search_is_refused(observed):
    seen = observed["counter"]
    numbers = copy.deepcopy(seen["first_use"]["schedules"][7]["numbers"])
    numbers[1][0] = numbers[0][0]
    with pytest.raises(Rejected, match="first-use schedule 8"):
        judge.check_step_counter(_forged(seen, ("first_use", "schedules", 7, "numbers"),
                                         numbers))
    with pytest.raises(Rejected, match="5 schedules ran"):
        judge.check_step_counter(_forged(seen, ("first_use", "schedules_run"), 5))
    with pytest.raises(Malformed, match="first_use"):
        judge.check_step_counter(_forged(seen, ("first_use",), None))


def test_a_torn_or_stale_read_is_refused(observed):
    seen = observed["publisher"]
    reader, start, low, _ = seen["trials"][2]["reads"][0]
    torn = [reader, start, low, low + 1]
    with pytest.raises(Rejected, match="torn read"):
        judge.check_publisher(_forged(seen, ("trials", 2, "reads", 0), torn))
    reads = seen["runs"][3]["reads"]
    stale = [reads[0], [*reads[1][:2], judge.FIRST_VERSION, judge.FIRST_VERSION]]
    with pytest.raises(Rejected, match="last read got version 1|went back"):
        judge.check_publisher(_forged(seen, ("runs", 3, "reads"), stale))
    first_at = seen["trials"][0]["published"][0][1]
    late_old = [0, first_at + 1e-3, judge.FIRST_VERSION, judge.FIRST_VERSION]
    with pytest.raises(Rejected, match="after version"):
        judge.check_publisher(_forged(seen, ("trials", 0, "reads"),
                                      [late_old, *seen["trials"][0]["reads"]]))
    with pytest.raises(Malformed, match="'reads' is missing"):
        judge.check_publisher(_forged(seen, ("trials", 2, "reads"), None))
    with pytest.raises(Rejected, match="stress trials ran"):
        judge.check_publisher({**seen, "trials_run": 1, "trials": seen["trials"][:1]})


def test_a_two_reader_search_cut_short_or_missing_a_reader_is_refused(observed):
    seen = observed["publisher"]
    assert seen["readers_schedules"] > judge.PUBLISHER_SAMPLES
    with pytest.raises(Rejected, match="not the complete graded search"):
        judge.check_publisher({**seen, "readers_schedules": 20, "readers_covered": False,
                               "readers_runs": seen["readers_runs"][:20]})
    reads = seen["readers_runs"][5]["reads"]
    with pytest.raises(Malformed, match="holds 1 entries, not 2"):
        judge.check_publisher(_forged(seen, ("readers_runs", 5, "reads"),
                                      [read for read in reads if read[0] == 0]))
    reader, start, low, _ = reads[0]
    with pytest.raises(Rejected, match="torn read"):
        judge.check_publisher(_forged(seen, ("readers_runs", 5, "reads", 0),
                                      [reader, start, low, low + 1]))
    with pytest.raises(Malformed, match="'readers_runs' is missing"):
        judge.check_publisher(_forged(seen, ("readers_runs",), None))


def test_a_torn_candidate_chosen_or_a_misreported_measurement_is_refused(observed):
    seen = observed["choice"]
    chosen = [c["name"] for c in seen["candidates"]].index(seen["chosen"])
    tearing = _forged(seen, ("candidates", chosen, "torn"), 3)
    tearing["candidates"][chosen]["table"]["torn"] = 3
    with pytest.raises(Rejected, match="the measurements pick"):
        judge.check_choice(tearing)
    with pytest.raises(Rejected, match="reported 0 reads"):
        judge.check_choice(_forged(seen, ("candidates", chosen, "table", "reads"), 0))
    fast = seen["candidates"][chosen]["table"]["reads_per_s"] * 100
    with pytest.raises(Rejected, match="reads_per_s"):
        judge.check_choice(_forged(seen, ("candidates", chosen, "table", "reads_per_s"), fast))
    with pytest.raises(Rejected, match="stopped before the last publish"):
        judge.check_choice(_forged(seen, ("candidates", 0, "readers", 1, "last_end"),
                                   seen["candidates"][0]["writer_start"]))
    with pytest.raises(Rejected, match="stopped before the writer was done"):
        judge.check_choice(_forged(seen, ("candidates", 0, "readers", 0,
                                          "last_version_reads"), 1))
    inflated = seen["candidates"][chosen]["table"]["updates_per_s"] * 1.5
    with pytest.raises(Rejected, match="updates_per_s"):
        judge.check_choice(_forged(seen, ("candidates", chosen, "table", "updates_per_s"),
                                   inflated))
    with pytest.raises(Malformed, match="'torn' is missing"):
        judge.check_choice(_forged(seen, ("candidates", chosen, "torn"), None))
    with pytest.raises(Malformed, match="'chosen' is missing"):
        judge.check_choice({k: v for k, v in seen.items() if k != "chosen"})


def test_a_choice_that_turned_away_every_rate_at_the_threshold_is_refused(observed):
    seen = observed["choice"]
    boundary = seen["boundary"]
    assert boundary["chosen"] is not None
    with pytest.raises(Rejected, match="with every rate at the threshold"):
        judge.check_choice({**seen, "boundary": {**boundary, "chosen": None}})
    with pytest.raises(Malformed, match="'boundary' is missing"):
        judge.check_choice({k: v for k, v in seen.items() if k != "boundary"})


def test_a_publisher_that_served_an_old_version_after_publishes_in_a_row_is_refused(observed):
    """On one thread, after two publishes in a row of new lists, an id-keyed copy serves the
    version it synced before them (the ABA problem)."""
    seen = observed["publisher"]
    assert len(seen["one_thread"]) == 4
    stale = [judge.FIRST_VERSION + 2] * judge.LAYERS
    with pytest.raises(Rejected, match=f"not {judge.ONE_THREAD_IN_A_ROW[-1]} everywhere"):
        judge.check_publisher(_forged(seen, ("one_thread", 3), stale))
    with pytest.raises(Rejected):
        judge.check_publisher(_forged(seen, ("one_thread", 3), None))


def test_the_judges_constants_are_the_checks_settings():
    names = [
        "LAYERS", "FIRST_VERSION", "COUNTER_TRIALS", "COUNTER_STRESS_THREADS",
        "COUNTER_STRESS_STEPS", "COUNTER_EXPLORE_THREADS", "COUNTER_EXPLORE_STEPS",
        "COUNTER_SCHEDULES", "COUNTER_FIRST_USE_SCHEDULES", "PUBLISHER_TRIALS",
        "PUBLISHER_READERS", "PUBLISHER_UPDATES",
        "PUBLISHER_EXPLORE_UPDATES", "PUBLISHER_SAMPLES",
        "PUBLISHER_SCHEDULES", "PUBLISHER_EXPLORE_READERS", "ONE_THREAD_IN_A_ROW",
        "CHOICE_READERS", "CHOICE_UPDATES", "CHOICE_MIN_UPDATES_PER_S"]
    assert {n: getattr(judge, n) for n in names} == {n: getattr(settings, n) for n in names}
    assert (judge.UPDATES_RATE_ABOVE, judge.LAST_VERSION_READS) == (
        choice.UPDATES_RATE_ABOVE, choice.LAST_VERSION_READS)
    named = run_choice(lambda *args, **kwargs: (None, {}))
    assert sorted(named.names.values()) == list(judge.CHOICE_NAMES)
