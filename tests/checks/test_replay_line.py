"""The line a failing verdict gives for running it again works as printed, in the notebook.

A student copies the lines after "Run it again in a cell of your notebook" into a cell of the
lesson's notebook, where the checks module and their answer have the names the line uses; the
verdict printed there must be the one the grader gave (issue #16): the same schedule for
``explore``, the same failure for ``stress``.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest

from autograder.checks import anatomy, mutex, variables
from autograder.checks.kit import call_text
from tests.checks import answers_anatomy, answers_mutex, answers_variables

REPLAY_HEADING = "Run it again in a cell of your notebook"

CASES = {  # engine: (notebook module name, module, check, answer's name, a wrong answer)
    "explore": ("anatomy", anatomy, anatomy.check_counter, "SafeCounter",
                answers_anatomy.PlusEqualsCounter),
    "explore-with-hint": ("mutex", mutex, mutex.check_move_slots, "move_slots",
                          answers_mutex.move_in_argument_order),
    "stress": ("variables", variables, variables.check_step_counter, "StepCounter",
               answers_variables.AssignReadBackCounter),
    "stress-then-explore": ("variables", variables, variables.check_publisher,
                            "WeightPublisher", answers_variables.HandshakePublisher),
}


def replay_cell(message: str) -> str:
    """The lines a student pastes, as one cell."""
    assert REPLAY_HEADING in message, message
    lines = message.split(REPLAY_HEADING, 1)[1].splitlines()[1:]
    assert lines and all(line.startswith("    ") for line in lines), lines
    return "\n".join(line[4:] for line in lines)


@pytest.mark.parametrize("engine", list(CASES))
def test_the_replay_line_of_a_failing_verdict_prints_the_same_verdict_in_the_notebook(
        engine: str) -> None:
    name, module, check, answer_name, answer = CASES[engine]
    with pytest.raises(AssertionError) as graded:
        check(answer)
    message = str(graded.value)
    cell = replay_cell(message)
    assert cell.startswith(f"result = {name}.run_"), cell
    printed = io.StringIO()
    namespace: dict[str, Any] = {name: module, answer_name: answer}
    with contextlib.redirect_stdout(printed):
        exec(compile(cell, "<the student's cell>", "exec"), namespace)
    verdict = message.split(": ", 1)[1].splitlines()[0]
    again = printed.getvalue().splitlines()[0]
    if engine == "stress":  # real threads: the same failure, perhaps in another trial
        assert verdict.startswith("Race found in trial") and again.startswith(
            "Race found in trial"), (verdict, again)
    else:  # explore: the same search, the same schedule
        assert again == verdict
    assert not namespace["result"].ok
    assert namespace["result"].figure() is not None


def test_the_replay_line_keeps_the_options_the_check_was_given() -> None:
    assert call_text("mutex.run_cache", "PredictionCache", schedules=60) == \
        "mutex.run_cache(PredictionCache, schedules=60)"
    with pytest.raises(AssertionError) as graded:
        anatomy.check_counter(answers_anatomy.PlusEqualsCounter, max_schedules=300)
    assert replay_cell(str(graded.value)).startswith(
        "result = anatomy.run_counter(SafeCounter, max_schedules=300)\n")
