"""Lesson 01's judge: accepts what correct answers' trials observe, refuses a race's outcome."""

import copy

import pytest

from autograder.checks import warmup
from autograder.checks.warmup import settings
from autograder.judges import Malformed, Rejected
from autograder.judges import warmup as judge
from tests.checks import answers_warmup as answers
from tests.checks.grading_runs import judged


@pytest.fixture(scope="module")
def observed():
    return {
        "check_entry_point": judged(warmup.check_entry_point, answers.CORRECT_WARM_UPS[0]),
        "check_both_entry_points": judged(warmup.check_both_entry_points,
                                          answers.CORRECT_WARM_UPS_BOTH[0]),
        "check_shared_predictor": judged(warmup.check_shared_predictor,
                                         answers.CORRECT_PREDICTORS[0]),
        "check_lazy_model": judged(warmup.check_lazy_model, answers.CORRECT_LAZY_MODELS[0]),
    }


def _changed(seen: dict, trial: int, **fields) -> dict:
    changed = copy.deepcopy(seen)
    changed["trials"][trial].update(fields)
    return changed


@pytest.mark.parametrize("check", ["check_entry_point", "check_both_entry_points"])
def test_a_predict_function_traced_while_serving_is_refused(observed, check):
    getattr(judge, check)(observed[check])
    with pytest.raises(Rejected, match="traced 1 time"):
        getattr(judge, check)(_changed(observed[check], 2, function_traces=1))


@pytest.mark.parametrize("check", ["check_entry_point", "check_both_entry_points"])
def test_a_warm_up_that_traced_on_another_thread_is_refused(observed, check):
    with pytest.raises(Rejected, match="1 other thread"):
        getattr(judge, check)(_changed(observed[check], 1, warm_threads=1))


def test_a_model_built_twice_or_a_wrong_output_is_refused(observed):
    seen = observed["check_entry_point"]
    with pytest.raises(Rejected, match="8 weights"):
        judge.check_entry_point(_changed(seen, 0, weights=8))
    outputs = copy.deepcopy(seen["trials"][1]["outputs"])
    outputs[3][0][0] += 0.5
    with pytest.raises(Rejected, match="worker 3"):
        judge.check_entry_point(_changed(seen, 1, outputs=outputs))
    with pytest.raises(Rejected, match="worker 2"):
        judge.check_entry_point(_changed(seen, 1, outputs=[*outputs[:2], None, *outputs[3:]]))


def test_two_threads_tracing_the_shared_predictor_are_refused(observed):
    seen = observed["check_shared_predictor"]
    judge.check_shared_predictor(seen)
    with pytest.raises(Rejected, match="2 threads traced"):
        judge.check_shared_predictor(_changed(seen, 4, tracing_threads=2, traces=4))


def test_a_lazy_model_built_twice_is_refused_in_a_trial_or_a_schedule(observed):
    seen = observed["check_lazy_model"]
    judge.check_lazy_model(seen)
    with pytest.raises(Rejected, match="ran 2 times"):
        judge.check_lazy_model(_changed(seen, 3, factory_calls=2, models=2))
    racy = copy.deepcopy(seen)
    racy["explore"]["schedules"][40] = {"factory_calls": 2, "got_the_model": [True, False]}
    with pytest.raises(Rejected, match="explored schedule 41"):
        judge.check_lazy_model(racy)


def test_a_shared_predictor_whose_cold_model_was_entered_twice_is_refused(observed):
    """In the explored run of the cold stand-in model, a second first call (a claim without a
    lock) or a call during the first one (a fast path on ``model.built``) is refused, and so
    is a search cut short."""
    seen = observed["check_shared_predictor"]
    for number, forged in ((3, {"first_calls": 2, "during_first": 0, "answered": [True] * 2}),
                           (7, {"first_calls": 1, "during_first": 1, "answered": [True] * 2})):
        racy = copy.deepcopy(seen)
        racy["explore"]["schedules"][number - 1] = forged
        with pytest.raises(Rejected, match=f"explored schedule {number}:"):
            judge.check_shared_predictor(racy)
    explore = seen["explore"]
    cut = {**explore, "schedules": explore["schedules"][:judge.SHARED_SAMPLES],
           "schedules_run": judge.SHARED_SAMPLES}
    with pytest.raises(Rejected, match="not the graded"):
        judge.check_shared_predictor({**seen, "explore": cut})


def test_a_lazy_models_search_cut_short_or_missing_is_refused(observed):
    seen = observed["check_lazy_model"]
    explore = seen["explore"]
    assert explore["schedules_run"] == len(explore["schedules"]) > judge.LAZY_SAMPLES
    cut = {**explore, "schedules": explore["schedules"][:judge.LAZY_SAMPLES],
           "schedules_run": judge.LAZY_SAMPLES}
    with pytest.raises(Rejected, match="not the graded"):
        judge.check_lazy_model({**seen, "explore": cut})
    with pytest.raises(Malformed):
        judge.check_lazy_model({k: v for k, v in seen.items() if k != "explore"})


@pytest.mark.parametrize("check", ["check_entry_point", "check_both_entry_points",
                                   "check_shared_predictor", "check_lazy_model"])
def test_a_report_without_its_trials_or_cut_short_is_refused(observed, check):
    seen = observed[check]
    with pytest.raises(Malformed):
        getattr(judge, check)({k: v for k, v in seen.items() if k != "trials"})
    with pytest.raises((Rejected, Malformed)):
        getattr(judge, check)({**seen, "trials": seen["trials"][:1], "schedules_run": 1})
    with pytest.raises(Malformed):
        getattr(judge, check)(_changed(seen, 0, weights=None))


def test_the_judges_constants_are_the_checks_settings():
    assert judge.EXPECTED_WEIGHTS == settings.EXPECTED_WEIGHTS
    assert judge.OUTPUT_UNITS == settings.OUTPUT_UNITS
    assert judge.THREADS == settings.THREADS
    assert judge.TRIALS_ENTRY_POINT == settings.TRIALS_ENTRY_POINT
    assert judge.TRIALS_BOTH_ENTRY_POINTS == settings.TRIALS_BOTH_ENTRY_POINTS
    assert judge.TRIALS_SHARED_PREDICTOR == settings.TRIALS_SHARED_PREDICTOR
    assert judge.TRIALS_LAZY_MODEL == settings.TRIALS_LAZY_MODEL
    assert judge.LAZY_SAMPLES == settings.LAZY_SAMPLES
    assert judge.LAZY_SCHEDULES == settings.LAZY_SCHEDULES
    for name in ("SHARED_EXPLORE_THREADS", "SHARED_SAMPLES", "SHARED_SCHEDULES"):
        assert getattr(judge, name) == getattr(settings, name), name
