"""Lesson 01 (warmup) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.warmup``)
20 times in this process, with its fixed seeds and trial counts, as 20 grading runs would.

Why the trial counts are enough. Per-trial detection was measured by running each wrong answer
through its check with ``trials=1`` over many seeds, on the shared, loaded 2-core machine:

- ``warm_up`` (3 trials): each of the 7 wrong answers failed 30 of 30 single trials (serving
  traces again, deterministically, or threads raise). 95 % lower bound per trial 0.89, so a
  grading run misses with probability below 0.11^3 = 1.5e-3 even at that bound.
- ``warm_up_both`` (3 trials, half the threads on ``predict``, half on
  ``predict_on_batch``): the 4 answers that warm one entry point, or the wrong shape, or
  neither, leave the predict function to be traced while serving, which the trace log counts
  exactly: they fail the first trial every time. Warming both on two threads at once makes
  threads raise (a race of its own) in the first trial.
- ``SharedPredictor`` (5 trials): 6 wrong answers failed 40 of 40 single trials.
  ``BuildUnderLockPredictor`` (Keras's unlocked check-then-set in ``make_predict_function``)
  failed 121 of 140 with Keras's own microsecond window, and one fresh-clone suite run saw
  it pass 1 grading run of 20: a flaky grade. The check now holds that window open 0.1 s
  (``warmup._PREDICT_FUNCTION_WINDOW_S``, a real sleep): it failed 60 of 60 single trials,
  six threads tracing each time.
- ``LazyModel`` (4 trials): the 4 racy answers failed 30 of 30 single trials (late threads
  are sent in while the model is being built; the factory is slow enough for every unlocked
  caller to pass the check); miss per run < 1.7e-4 at the lower bound. The other 3 fail on one
  thread, before any thread starts, every time. Then ``explore`` (two threads, one warm model
  the factory hands out, every schedule with at most two preemptions: 40-640 schedules) finds
  races in the answer's own Python around the Keras calls, deterministically, whatever the
  seed: ``LockMadeOnFirstUseLazyModel`` (the lock itself created check-then-act; issue #18,
  class 1) fails only there.

Wrong answers run in a child process. A cold model built from several threads at once can
crash TensorFlow itself (a segmentation fault inside Keras's weight initialisation was seen once
in this suite): in a grading kernel that is a dead kernel and a failed grade, so here a run that
crashes the child counts as a failed grading run, and the remaining runs go on in a new child.
Nothing is retried: every one of the 20 runs of every answer has exactly one recorded verdict.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from autograder.checks import warmup
from tests.checks import answers_warmup as answers
from tests.checks.grading_runs import Exercise, passes_every_run, runs_for, unfilled_answer_test
from tests.checks.isolation import IsolatedRuns

WRONG = {
    "check_entry_point": "WRONG_WARM_UPS",
    "check_both_entry_points": "WRONG_WARM_UPS_BOTH",
    "check_shared_predictor": "WRONG_PREDICTORS",
    "check_lazy_model": "WRONG_LAZY_MODELS",
}
ANSWERS = [(check, answer) for check, group in WRONG.items() for answer in getattr(answers, group)]
TASKS = [(check, answer.__name__) for check, answer in ANSWERS]


_RUNNING: list[IsolatedRuns] = []


@pytest.fixture(scope="module", autouse=True)
def _isolated_wrong_answers() -> Any:
    """Start the wrong answers' grading runs in a child process before any test runs."""
    if not _RUNNING:
        _RUNNING.append(IsolatedRuns("autograder.checks.warmup", "tests.checks.answers_warmup",
                                     TASKS, [runs_for(answer) for _, answer in ANSWERS]))
    yield


@pytest.fixture(scope="module")
def wrong_verdicts() -> dict[tuple[str, str], list[str]]:
    """Each wrong answer's 20 grading-run verdicts, by (check, answer name), run in child
    processes: a TensorFlow crash there counts as a failed grading run, never retried."""
    verdicts = _RUNNING[0].verdicts()
    return {task: runs for task, runs in zip(TASKS, verdicts, strict=True)}


@pytest.fixture(autouse=True)
def _quiet_keras() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _name(answer: Callable[..., Any]) -> str:
    return answer.__name__


def _fails_every_run(verdicts: dict, check: Callable[[Any], None], answer: Any) -> None:
    runs = verdicts[(check.__name__, answer.__name__)]
    assert len(runs) == runs_for(answer)
    passed = [number + 1 for number, verdict in enumerate(runs) if verdict == "pass"]
    assert not passed, f"grading runs {passed} of {len(runs)} passed {answer.__name__}"


def _passes_every_run(check: Callable[[Any], None], answer: Any) -> None:
    passes_every_run(check, answer.__name__, answer)


@pytest.mark.parametrize("answer", answers.CORRECT_WARM_UPS, ids=_name)
def test_warm_up_that_traces_predict_on_batch_at_the_serving_shape_passes_every_run(answer):
    _passes_every_run(warmup.check_entry_point, answer)


@pytest.mark.parametrize("answer", answers.CORRECT_WARM_UPS_BOTH, ids=_name)
def test_warm_up_that_traces_both_predict_and_predict_on_batch_passes_every_run(answer):
    _passes_every_run(warmup.check_both_entry_points, answer)


@pytest.mark.parametrize("answer", answers.CORRECT_PREDICTORS, ids=_name)
def test_predictor_that_lets_one_thread_warm_first_passes_every_run(answer):
    _passes_every_run(warmup.check_shared_predictor, answer)


@pytest.mark.parametrize("answer", answers.CORRECT_LAZY_MODELS, ids=_name)
def test_lazy_model_built_once_before_it_is_shared_passes_every_run(answer):
    _passes_every_run(warmup.check_lazy_model, answer)


test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error = unfilled_answer_test(
    {"entry_point": Exercise(warmup.check_entry_point, "warm_up"),
     "both_entry_points": Exercise(warmup.check_both_entry_points, "warm_up_both"),
     "shared_predictor": Exercise(warmup.check_shared_predictor, "SharedPredictor"),
     "lazy_model": Exercise(warmup.check_lazy_model, "LazyModel")},
    terms=("before any threads were started",))


def test_racy_warm_up_message_names_what_the_threads_did():
    result = warmup.run_entry_point(answers.warm_with_predict)
    assert result.verdict == "race"
    assert "traced 1 time(s) while 6 threads served predict_on_batch" in result.message


def test_cold_model_race_is_reported_with_what_the_threads_did_and_its_picture():
    """A cold model served from threads fails in one of two ways, both named: a thread raises
    while another builds the model (verdict "error"), or, when the threads happen to run one
    after another (a busy machine: seen once in a fresh clone's suite), the serving threads
    traced the predict function (verdict "race"). The grade is the same."""
    result = warmup.run_entry_point(answers.warm_nothing)
    assert result.verdict in ("error", "race"), result.message
    assert ("raised" if result.verdict == "error" else "traced") in result.message
    figure = result.figure()
    assert len(figure.axes[0].get_yticklabels()) == warmup.THREADS


@pytest.mark.parametrize("seed", range(4))
def test_lock_made_check_then_act_is_found_by_explore_whatever_the_seed(seed):
    result = warmup.run_lazy_model_explore(answers.LockMadeOnFirstUseLazyModel, seed=seed)
    assert result.verdict == "race", result.message
    assert "the factory ran 2 times" in result.message


def test_duplicate_weights_from_a_racy_build_are_reported():
    result = warmup.run_lazy_model(answers.PublishBeforeBuildLazyModel)
    assert not result.ok
    assert "raised" in result.message or "weights" in result.message


def test_demo_runner_counts_failures_errors_and_weights_in_child_processes():
    stats = warmup.race_trials(warmup.tiny_sequential, warmup.predict_on_batch, trials=3)
    assert stats.trials == 3
    assert 0 <= stats.failed <= 3
    assert sum(stats.weights.values()) + stats.crashed == 3
    assert "of 3 trials" in stats.report()
    assert stats.first_failure is None or not stats.first_failure.ok
    warm = warmup.race_trials(warmup.tiny_sequential, warmup.predict_on_batch, trials=3,
                              warm=warmup.predict_on_batch, in_child=False)
    assert warm.failed == 0 and warm.traces == [0, 0, 0]
    assert warm.weights == {warmup.EXPECTED_WEIGHTS: 3}


def test_demo_runner_counts_a_crashed_trial_as_failed():
    stats = warmup.RaceStats()
    stats.add(warmup.Crashed("crashed (SIGSEGV)"))
    assert (stats.trials, stats.failed, stats.crashed) == (1, 1, 1)
    assert "TensorFlow ended its whole process" in stats.report()


def test_trace_log_counts_two_traces_for_a_first_call_on_an_unbuilt_model():
    assert warmup.first_call_traces() == 2


# The wrong answers last: their grading runs go on in a child process meanwhile.


@pytest.mark.parametrize("answer", answers.WRONG_WARM_UPS, ids=_name)
def test_warm_up_that_leaves_predict_on_batch_cold_fails_every_grading_run(answer, wrong_verdicts):
    _fails_every_run(wrong_verdicts, warmup.check_entry_point, answer)


@pytest.mark.parametrize("answer", answers.WRONG_WARM_UPS_BOTH, ids=_name)
def test_warm_up_that_leaves_predict_or_predict_on_batch_cold_fails_every_grading_run(
    answer, wrong_verdicts
):
    _fails_every_run(wrong_verdicts, warmup.check_both_entry_points, answer)


@pytest.mark.parametrize("answer", answers.WRONG_PREDICTORS, ids=_name)
def test_predictor_whose_first_calls_race_fails_every_grading_run(answer, wrong_verdicts):
    _fails_every_run(wrong_verdicts, warmup.check_shared_predictor, answer)


@pytest.mark.parametrize("answer", answers.WRONG_LAZY_MODELS, ids=_name)
def test_lazy_model_built_twice_or_handed_out_unbuilt_fails_every_grading_run(
    answer, wrong_verdicts
):
    _fails_every_run(wrong_verdicts, warmup.check_lazy_model, answer)
