"""Lesson 04 (tfdata) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.tfdata``)
``RUNS`` times in this process, as that many grading runs would.

How each check decides, and why its counts are enough:

- ``make_dataset``: two one-thread iterations first (a generator object or a shared counter
  fails the second one, deterministically), then ``stress`` (2 trials, two real threads
  iterating one dataset at once). The one-thread run (three times) reads instantly, sets a
  0.5 s switch interval and reads the elements after both iterations, so the reused-buffer
  loader's producer overwrites records on every run, already on one thread; an answer that
  changes the switch interval during the check fails for that. Then three iterations that
  each stop after two records: a Python thread the answer started and left running (a
  producer blocked on its full queue) is still alive after a 10 s wait, every run.
- ``augment``: one-thread properties (shape, shift range, input order, per-element and
  per-seed draws), the flip probability (3,000 images of one fixed seed, 1,350-1,650 flips
  accepted: exact binomial tails give a correct answer 3.8e-8 and a p = 0.4 or 0.6 answer
  1.5e-8 of a false verdict, both checked below; the same band bounds, with the same error
  rates, how many of those images were flipped exactly when their shift was negative (the flip
  independent of the shift) and how many shifts lie within +-MAX_DELTA / 2 (the shift
  uniform); seed 12's shifts must not be seed 11's moved by one position, as element seeds
  ``seed + index`` give; of 8 pairs of identical images among the 3,000, fewer than 2 may get
  the same flip and shift, as seeds from the pixels give), then ``stress`` (2 trials) comparing
  concurrent iterations with the first run. Stateful random ops are drawn in a different order
  on every iteration of a parallel map, so the first trial already differs.
- ``fast_pipeline``: order and values, at least two reads in flight (structural, so load on
  the machine cannot make a one-read-at-a-time pipeline pass), and a speed-up of at least
  30 % of the ideal one, measured in the same run (naive loop, ideal bound and pipeline run
  at the same time). The floor is low on purpose: on this shared two-core machine a correct
  pipeline measured 44-100 % of the ideal, and prefetch alone 35-55 %, so time alone cannot
  tell them apart; the parallel-read property does, deterministically.
- ``ServedStats``: the contract on one thread (records unchanged, a failing read raised again,
  exact counts; a second object over a read that raises a ValueError keeps its own counts and
  leaves the first's alone), then ``explore`` (two threads, two calls each, one failing read
  each, the second thread reading the counts after its first call: every schedule with two
  preemptions, then 20 samples, finds each lost update and each count made before its read),
  then three explored calls whose reads each wait for the others, so a lock held through the
  read, or a semaphore of two, deadlocks in every run whatever the load; then a real
  parallel map.
"""

from __future__ import annotations

import threading
import time
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import tfdata
from tests.checks import answers_tfdata as answers
from tests.checks.grading_runs import (
    Exercise,
    solution_namespace,
    validity_tests,
)

SOLUTION_RUNS = 3


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


_SOLVED = solution_namespace("04_tfdata", {"threading": threading, "time": time, "tf": tf,
                                           "np": np, "tfdata": tfdata})

EXERCISES = {
    "loader": Exercise(tfdata.check_loader, "make_dataset", _SOLVED["make_dataset"],
                       answers.WRONG_LOADERS, answers.CORRECT_LOADERS),
    "augment": Exercise(tfdata.check_augment, "augment", _SOLVED["augment"],
                        answers.WRONG_AUGMENTS, answers.CORRECT_AUGMENTS),
    "fast": Exercise(tfdata.check_fast, "fast_pipeline", _SOLVED["fast_pipeline"],
                     answers.WRONG_PIPELINES, answers.CORRECT_PIPELINES),
    "served": Exercise(tfdata.check_served, "ServedStats", _SOLVED["ServedStats"],
                       answers.WRONG_STATS, answers.CORRECT_STATS),
}


(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(EXERCISES, solution_runs=SOLUTION_RUNS)


def test_flip_band_tells_one_half_from_0_4_and_0_6_with_errors_below_one_in_a_million():
    """The flip check's design, from exact binomial tails (integers, no approximation)."""
    errors = tfdata.flip_band_errors()
    assert tfdata.FLIP_DRAWS == 3000 and tfdata.FLIPS_WITHIN == (1350, 1650)
    assert errors[Fraction(1, 2)] < 1e-7  # a correct answer outside the band: 3.8e-8
    assert errors[Fraction(2, 5)] < 1e-7  # p = 0.4 inside it: 1.5e-8
    assert errors[Fraction(3, 5)] == errors[Fraction(2, 5)]  # the band is symmetric
    assert errors[Fraction(1, 5)] < 1e-200  # p = 0.2, issue #32's answer


_FLIP_COUNTS = [pytest.param(answer, id=answer.__name__) for answer in
                [_SOLVED["augment"], *answers.CORRECT_AUGMENTS,
                 answers.fifth_flip_augment, answers.forty_percent_flip_augment,
                 answers.sixty_percent_flip_augment]]


@pytest.mark.parametrize("answer", _FLIP_COUNTS)
def test_flip_count_of_the_fixed_seed_is_in_the_band_exactly_when_the_probability_is_one_half(
        answer):
    out = np.stack([np.asarray(x) for x in answer(tfdata.flip_images(), tfdata.FLIP_SEED)])
    flips = tfdata.count_flips(out, tfdata.flip_image_array(), "the flip images")
    low, high = tfdata.FLIPS_WITHIN
    wrong = answer in (answers.fifth_flip_augment, answers.forty_percent_flip_augment,
                       answers.sixty_percent_flip_augment)
    assert (low <= flips <= high) != wrong, f"{flips} flips of {tfdata.FLIP_DRAWS}"
    if wrong:
        with pytest.raises(AssertionError, match="flipped with probability 1/2, but "
                                                 f"{flips} of the 3000 images"):
            tfdata.check_augment(answer)


def test_a_leaking_loader_that_hides_its_threads_from_enumerate_still_fails(monkeypatch):
    """The early-stop run counts threads with ``threading.enumerate``; an answer that replaces
    it (or patches ``Thread.is_alive``) to hide its leaked producers fails all the same."""
    def hiding_loader(read, n):
        threading.Thread.is_alive = lambda self: False
        threading.enumerate = lambda: [threading.main_thread()]
        return answers.producer_per_iteration_loader(read, n)

    monkeypatch.setattr(threading, "enumerate", threading.enumerate)
    monkeypatch.setattr(threading.Thread, "is_alive", threading.Thread.is_alive)
    with pytest.raises(AssertionError, match="threading.enumerate was replaced"):
        tfdata.check_loader(hiding_loader)
