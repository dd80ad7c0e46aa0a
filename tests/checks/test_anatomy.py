"""Lesson 00 (anatomy) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.anatomy``)
in this process as often as that many grading runs would (``grading_runs.RUNS``, 20, for a
wrong answer; ``CORRECT_RUNS`` for a right one).

All three checks are deterministic: exercise 1 replays fixed schedules, and exercises 2 and 3
explore with the controlled scheduler under a fixed seed and schedule budget, so an answer's
verdict cannot change from run to run (the programs under test do not read the clock or
iterate over sets). The 20 runs are kept anyway: they are cheap (about 0.4-0.8 s per run of a
correct counter or cache, milliseconds for the rest) and they would catch a harness change
that made the search depend on timing. Margins, measured with seeds 0-4 against a budget of
300 schedules: the slowest wrong counter was caught after 59 schedules (seed 0, the one graded),
the slowest wrong cache after 31; a counter taking two locks in opposite orders is reported as a
deadlock within 30, and one whose ``take`` re-takes its own plain Lock is caught on one thread.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from autograder.checks import anatomy
from autograder.checks.anatomy import schedules
from autograder.checks.anatomy.grading import _require_visible
from autograder.harness import Result
from tests.checks import answers_anatomy as answers
from tests.checks.grading_runs import (
    CORRECT_RUNS,
    RUNS,
    Exercise,
    judged,
    unfilled_answer_test,
)


def _fails_every_run(check: Callable[..., None], *answer: Any) -> str:
    message = ""
    for run in range(RUNS):
        with pytest.raises(AssertionError) as failure:
            check(*answer)
            pytest.fail(f"grading run {run + 1} of {RUNS} passed {answer!r}")
        message = str(failure.value)
    return message


def _passes_every_run(check: Callable[..., None], *answer: Any) -> None:
    for run in range(CORRECT_RUNS):
        try:
            judged(check, *answer)
        except AssertionError as failure:
            pytest.fail(f"grading run {run + 1} of {CORRECT_RUNS} failed {answer!r}: {failure}")


# --------------------------------------------------------------------------- exercise 1


@pytest.mark.parametrize("pair", answers.WRONG_SCHEDULES.values(), ids=answers.WRONG_SCHEDULES)
def test_schedules_that_do_not_break_their_invariant_fail_every_grading_run(pair):
    message = _fails_every_run(anatomy.check_schedules, *pair)
    assert message.startswith("OVERDRAFT and DOUBLE_PAY: ")
    assert ("not a schedule token" in message or "must be a string" in message
            or "balance ended at" in message or "expected plain data" in message)


@pytest.mark.parametrize("pair", answers.CORRECT_SCHEDULES.values(),
                         ids=answers.CORRECT_SCHEDULES)
def test_schedules_that_overdraw_and_double_pay_pass_every_run(pair):
    _passes_every_run(anatomy.check_schedules, *pair)


def test_swapped_schedules_are_named_as_swapped():
    overdraft, double_pay = answers.WRONG_SCHEDULES["tokens_swapped"]
    with pytest.raises(AssertionError) as failure:
        anatomy.check_schedules(overdraft, double_pay)
    message = str(failure.value)
    assert "the balance ended at 40 after paying out 120" in message
    assert "swap the two tokens" in message


def test_a_double_pay_given_as_overdraft_is_named_without_suggesting_a_swap():
    overdraft, double_pay = answers.WRONG_SCHEDULES["demo_counter_token_as_overdraft"]
    with pytest.raises(AssertionError) as failure:
        anatomy.check_schedules(overdraft, double_pay)
    message = str(failure.value)
    assert "That is a DOUBLE_PAY interleaving." in message
    assert "swap" not in message


def test_a_replaced_replay_cannot_fake_a_right_answer(monkeypatch):
    """A right token is a pass the harness issued; a hand-made Result never is."""
    for verdict in ("race", "pass"):
        monkeypatch.setattr(schedules, "replay",
                            lambda *args, verdict=verdict, **kwargs: Result(verdict))
        with pytest.raises(AssertionError):
            anatomy.check_schedules(*answers.WRONG_SCHEDULES["sequential_runs"])


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("v1:1>0,3>1,3>0", "increase"),
        ("v1:0>0,3>1", "start at 1"),
        ("v1:1>0,3>2", "names worker(s) [2]"),
        ("v1:1>0;3>1", "is not a schedule token"),
        ("", "is not a schedule token"),
        (None, "must be a string"),
    ],
)
def test_malformed_token_is_refused_with_how_to_write_one(token, says):
    with pytest.raises(AssertionError) as failure:
        anatomy.parse_schedule(token, name="OVERDRAFT", workers=2)
    assert says in str(failure.value)
    with pytest.raises(AssertionError):
        anatomy.check_schedules(token, "v1:1>0,2>1,5>0,10>1")


def test_notebook_bank_is_the_graders_bank(repo):
    """A token worked out in the notebook must replay the same way in the grader."""
    source = (repo / "solutions" / "00_anatomy.py").read_text(encoding="utf-8")
    for thing in (anatomy.Account, anatomy.withdraw, anatomy.alice, anatomy.bob,
                  anatomy.open_account):
        code = inspect.getsource(thing).rstrip()
        assert code in source, f"the notebook's {thing.__name__} differs from the grader's"


def test_explain_schedule_reads_a_token_aloud():
    text = anatomy.explain_schedule("v1:1>0,3>1,6>0")
    assert text.splitlines()[:3] == ["step 1: worker 0 gets the turn first",
                                     "step 3: the turn passes to worker 1",
                                     "step 6: the turn passes to worker 0"]


# --------------------------------------------------------------------------- exercise 2


@pytest.mark.parametrize("answer", answers.WRONG_COUNTERS, ids=lambda a: a.__name__)
def test_counter_that_loses_or_doubles_an_increment_fails_every_grading_run(answer):
    message = _fails_every_run(anatomy.check_counter, answer)
    assert message.startswith("SafeCounter: ")
    if answer is answers.ResetThroughIncrementCounter:
        assert "never returned" in message and "already holds" in message
    elif answer is answers.TwoLocksCounter:
        assert message.startswith("SafeCounter: Deadlock")
    elif answer in (answers.EqualsEverythingCounter, answers.PosingIntCounter):
        assert message.startswith("SafeCounter: on one thread, ") and "; expected " in message
    else:
        assert message.startswith("SafeCounter: Race found")
        assert re.search(r"were lost|counted twice", message)
        assert "result = anatomy.run_counter(SafeCounter)\n" in message
        assert "replay(setup" not in message


@pytest.mark.parametrize("answer", answers.CORRECT_COUNTERS, ids=lambda a: a.__name__)
def test_counter_that_hands_out_every_increment_once_passes_every_run(answer):
    _passes_every_run(anatomy.check_counter, answer)


# --------------------------------------------------------------------------- exercise 3


@pytest.mark.parametrize("answer", answers.WRONG_CACHES, ids=lambda a: a.__name__)
def test_cache_that_loads_a_key_twice_fails_every_grading_run(answer):
    message = _fails_every_run(anatomy.check_cache, answer)
    assert message.startswith("OnceCache: ")
    assert re.search(r"load\('[abx]'\) ran \d+ times|called with", message)


@pytest.mark.parametrize("answer", answers.CORRECT_CACHES, ids=lambda a: a.__name__)
def test_cache_that_loads_each_key_once_passes_every_run(answer):
    _passes_every_run(anatomy.check_cache, answer)


# --------------------------------------------------------------------------- unfilled answers


test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error = unfilled_answer_test(
    {"counter": Exercise(anatomy.check_counter, "SafeCounter"),
     "cache": Exercise(anatomy.check_cache, "OnceCache")},
    terms=("before any threads were started",))


def test_the_detector_sees_inside_the_graders_workers():
    """The canary every check runs first: without it a site-packages install passes anything."""
    _require_visible()
    result, account = anatomy.replay_bank("v1:1>0,7>1", anatomy.never_overdrawn)
    assert result.verdict == "pass" and account.balance == 40
