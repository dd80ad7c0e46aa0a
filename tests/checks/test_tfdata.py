"""Lesson 04 (tfdata) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.tfdata``)
``RUNS`` times in this process, as that many grading runs would.

How each check decides, and why its counts are enough:

- ``make_dataset``: two one-thread iterations first (a generator object or a shared counter
  fails the second one, deterministically), then ``stress`` (2 trials, two real threads
  iterating one dataset at once). The reused-buffer loader's producer runs ahead of the
  consumer, so records are overwritten on every run, already on one thread.
- ``augment``: one-thread properties (shape, shift range, input order, per-element and
  per-seed draws), then ``stress`` (2 trials) comparing concurrent iterations with the first
  run. Stateful random ops are drawn in a different order on every iteration of a parallel
  map, so the first trial already differs.
- ``fast_pipeline``: order and values, at least two reads in flight (structural, so load on
  the machine cannot make a one-read-at-a-time pipeline pass), and a speed-up of at least
  30 % of the ideal one, measured in the same run (naive loop, ideal bound and pipeline run
  at the same time). The floor is low on purpose: on this shared two-core machine a correct
  pipeline measured 44-100 % of the ideal, and prefetch alone 35-55 %, so time alone cannot
  tell them apart; the parallel-read property does, deterministically.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import answers_tfdata as answers
import jupytext
import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import tfdata

RUNS = 20
SOLUTION_RUNS = 3
SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "04_tfdata.py"


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _solution_answers() -> dict[str, Any]:
    """Execute the solution's answer cells and return what they define."""
    notebook = jupytext.read(SOLUTION, fmt="py:percent")
    namespace: dict[str, Any] = {"threading": threading, "time": time, "tf": tf, "np": np,
                                 "tfdata": tfdata}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            exec(compile(cell.source, f"{SOLUTION.name}:{meta['grade_id']}", "exec"), namespace)
    return namespace


_SOLVED = _solution_answers()

EXERCISES = {
    "loader": (tfdata.check_loader, "make_dataset", _SOLVED["make_dataset"],
               answers.WRONG_LOADERS, answers.CORRECT_LOADERS),
    "augment": (tfdata.check_augment, "augment", _SOLVED["augment"],
                answers.WRONG_AUGMENTS, answers.CORRECT_AUGMENTS),
    "fast": (tfdata.check_fast, "fast_pipeline", _SOLVED["fast_pipeline"],
             answers.WRONG_PIPELINES, answers.CORRECT_PIPELINES),
}


def _cases(kind: str) -> list[Any]:
    cases = []
    for exercise, (check, name, solution, wrong, correct) in EXERCISES.items():
        chosen = {"wrong": wrong, "correct": correct, "solution": [solution]}[kind]
        for answer in chosen:
            label = "solution" if answer is solution else answer.__name__
            cases.append(pytest.param(check, name, answer, id=f"{exercise}-{label}"))
    return cases


@pytest.mark.parametrize(("check", "exercise", "answer"), _cases("wrong"))
def test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms(
        check: Callable[[Any], None], exercise: str, answer: Any) -> None:
    for run in range(RUNS):
        with pytest.raises(AssertionError) as failure:
            check(answer)
            pytest.fail(f"grading run {run + 1} of {RUNS} passed {answer.__name__}")
        message = str(failure.value)
        assert message.startswith(f"{exercise}: "), message
        assert "expected" in message, message
        assert "BEGIN HIDDEN TESTS" not in message


@pytest.mark.parametrize(("check", "exercise", "answer"), _cases("correct"))
def test_correct_answer_passes_every_grading_run(
        check: Callable[[Any], None], exercise: str, answer: Any) -> None:
    for run in range(RUNS):
        try:
            check(answer)
        except AssertionError as failure:
            pytest.fail(f"grading run {run + 1} of {RUNS} failed {exercise}: {failure}")


@pytest.mark.parametrize(("check", "exercise", "answer"), _cases("solution"))
def test_lessons_own_solution_passes(
        check: Callable[[Any], None], exercise: str, answer: Any) -> None:
    """A few runs: the lesson's own run and the demo class grade it too."""
    for run in range(SOLUTION_RUNS):
        try:
            check(answer)
        except AssertionError as failure:
            pytest.fail(f"grading run {run + 1} of {SOLUTION_RUNS} failed {exercise}: {failure}")
