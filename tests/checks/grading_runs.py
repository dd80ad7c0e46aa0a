"""What every lesson's grader tests share: the solution's answers, the cases, repeated runs.

A lesson's ``test_<module>.py`` names its exercises (check, the name its messages start with,
the solution's answer, wrong answers, correct answers) and runs each answer through the real
hidden check as many times as that many grading runs would: never retried, since a retry would
hide the flaky grade these tests exist to catch.

Each wrong answer runs :data:`RUNS` (20) times: one pass would be a grade a student wins by
submitting again. Each correct answer runs :data:`CORRECT_RUNS` times, 6 by default: a
correct answer runs every trial of its check (a wrong one stops at the first failure found),
so these runs were 41 % of the whole suite's time at 20 each (about 900 of 4,100 worker-seconds
at 10), and the suite must stay within its 30-minute budget on 2 cores.
``RACELAB_CORRECT_RUNS=20 make test`` runs the full 20.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from autograder import judges
from autograder.checks.kit import verdict
from autograder.course.answers import read_answers, solution_answers
from autograder.course.source import Lesson, find_lessons
from autograder.kernel.runner import make_plain_encoder

#: The repository (found from this file: answer modules import this one in child processes too).
REPO = Path(__file__).resolve().parents[2]

RUNS = 20
CORRECT_RUNS = int(os.environ.get("RACELAB_CORRECT_RUNS", "6"))
#: Grading runs of a lying answer (see ``liars.py``; marked by :func:`liars.lying`): what
#: catches its lie is the plain-data reading, which does the same on every run, and the honest
#: mistake it hides is among the wrong answers that run :data:`RUNS` times. Like the slow
#: answers beyond the required sets, these run fewer times to keep the suite in its budget.
LIAR_RUNS = 3


#: Idle threads :func:`threads_left_behind` keeps alive: more than a test worker holds after
#: the files that leave daemon threads behind (about 100 made the grader's own snapshot of
#: the live threads outlast FAIR_STEPS, session 20).
LEFT_BEHIND = 300


@contextlib.contextmanager
def threads_left_behind(count: int = LEFT_BEHIND) -> Iterator[None]:
    """While inside, ``count`` idle daemon threads are alive in this process, as in a test
    worker (or a grading kernel) where earlier code left threads behind: a verdict must not
    depend on them."""
    stop = threading.Event()
    idle = [threading.Thread(target=stop.wait, name=f"left-behind-{n}", daemon=True)
            for n in range(count)]
    for thread in idle:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in idle:
            thread.join()


def runs_for(answer: Any) -> int:
    """How many grading runs a wrong answer gets: :data:`LIAR_RUNS` for a lying one, and for
    one marked ``decided_by_construction`` (its verdict comes from what the check does to it
    on every run, as the ledger's hold does to a timeout, not from sampled interleavings)."""
    fewer = getattr(answer, "lies", False) or getattr(answer, "decided_by_construction", False)
    return LIAR_RUNS if fewer else RUNS


def solution_lesson(lesson_name: str) -> Lesson:
    """The lesson source ``solutions/<lesson_name>.py``, e.g. ``"03_variables"``."""
    return next(found for found in find_lessons(REPO / "solutions") if found.name == lesson_name)


def solution_namespace(lesson_name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute the instructor's answer cells of ``lesson_name`` in ``namespace`` and return it.

    Args:
        lesson_name: The lesson, e.g. ``"03_variables"``.
        namespace: What the notebook's setup cell would have imported for the answers.
    """
    lesson = solution_lesson(lesson_name)
    for grade_id, source in solution_answers(lesson).items():
        exec(compile(source, f"{lesson.path.name}:{grade_id}", "exec"), namespace)
    return namespace


def demo_answer(path: str, grade_id: str, name: str, *, renamed: str,
                setup: dict[str, Any] | None = None) -> Any:
    """What a demo student's answer cell defines, as a test answer.

    Args:
        path: The demo answer file, relative to the repository (``demo/correct/07_capstone.py``).
        grade_id: The answer cell.
        name: The name the cell defines (``InferenceService``).
        renamed: The answer's name in the tests (its ``__name__``, used in test ids).
        setup: What the notebook's setup cell imported, when the cell relies on it.
    """
    source = read_answers(REPO / path).answers[grade_id]
    namespace: dict[str, Any] = dict(setup or {})
    exec(compile(source, path, "exec"), namespace)
    answer = namespace[name]
    answer.__name__ = answer.__qualname__ = renamed
    return answer


@dataclass(frozen=True)
class Exercise:
    """One graded exercise and the answers its check must sort.

    Attributes:
        check: The hidden test's check, called with the answer.
        name: What the check's messages start with (the answer's name in the notebook).
        solution: The instructor's answer.
        wrong: Answers a student would plausibly write that must fail every run.
        correct: Answers written differently from the solution that must pass every run.
    """

    check: Callable[[Any], None]
    name: str
    solution: Any = None
    wrong: Sequence[Any] = ()
    correct: Sequence[Any] = ()


def cases(exercises: dict[str, Exercise], kind: str,
          check_for: Callable[[Exercise, Any], Callable[[Any], None]] | None = None) -> list[Any]:
    """Parameters ``(check, exercise, answer)`` for every answer of ``kind`` in ``exercises``.

    Args:
        exercises: Exercise label -> Exercise.
        kind: ``"wrong"``, ``"correct"`` or ``"solution"``.
        check_for: Picks another check for one answer (e.g. a shorter budget); default the
            exercise's own.
    """
    params = []
    for label, exercise in exercises.items():
        answers = {"wrong": exercise.wrong, "correct": exercise.correct,
                   "solution": [exercise.solution]}[kind]
        for answer in answers:
            name = "solution" if answer is exercise.solution else answer.__name__
            check = check_for(exercise, answer) if check_for else exercise.check
            params.append(pytest.param(check, exercise.name, answer, id=f"{label}-{name}"))
    return params


def fails_every_run(check: Callable[[Any], None], exercise: str, answer: Any,
                    runs: int | None = None, *, terms: Sequence[str] = ("expected",)
                    ) -> list[str]:
    """Run ``check(answer)`` ``runs`` times (default :func:`runs_for`); each must fail in the
    exercise's own terms.

    Returns:
        The failure messages, one per run.
    """
    messages = []
    runs = runs_for(answer) if runs is None else runs
    for run in range(runs):
        with pytest.raises(AssertionError) as failure:
            check(answer)
            pytest.fail(f"grading run {run + 1} of {runs} passed {answer.__name__}")
        message = str(failure.value)
        assert message.startswith(f"{exercise}: "), message
        assert any(term in message for term in terms), message
        assert "BEGIN HIDDEN TESTS" not in message
        messages.append(message)
    return messages


def passes_every_run(check: Callable[[Any], None], exercise: str, answer: Any,
                     runs: int = CORRECT_RUNS) -> None:
    """Run ``check(answer)`` ``runs`` times; every run must pass, and where ``check`` is a
    lesson's own check, the host's judge must accept what it observed (:func:`judged`)."""
    for run in range(runs):
        try:
            judged(check, answer)
        except AssertionError as failure:
            pytest.fail(f"grading run {run + 1} of {runs} failed {exercise}: {failure}")


def face_of(check: Callable[..., Any]) -> str | None:
    """The lesson face a check belongs to (``anatomy`` for ``anatomy.check_counter``), or None
    for anything but a lesson's own ``check_*`` function called as it is (no partial)."""
    module = getattr(check, "__module__", "") or ""
    parts = module.split(".")
    name = getattr(check, "__name__", "")
    if len(parts) < 3 or parts[:2] != ["autograder", "checks"] or not name.startswith("check_"):
        return None
    return parts[2]


def judged(check: Callable[..., Any], *args: Any, **kwargs: Any) -> dict | None:
    """Call a check as the grading runner does: what it reports crosses as plain data (the
    runner's own encoder) to the host's judge (:mod:`autograder.judges`), which must accept it.

    Returns:
        The observations the check reported (None for a check that is not a lesson's own).

    Raises:
        AssertionError: the check failed, or the judge refused what it observed.
    """
    face = face_of(check)
    if face is None:
        check(*args, **kwargs)
        return None
    reports: list[dict] = []
    before = verdict.OBSERVATION_SINK
    verdict.OBSERVATION_SINK = reports.append
    try:
        check(*args, **kwargs)
    finally:
        verdict.OBSERVATION_SINK = before
    refused = judges.verdict(face, check.__name__, make_plain_encoder()(list(reports)))
    assert refused is None, f"{face}.{check.__name__} passed in the kernel, but {refused}"
    return reports[0]


def validity_tests(exercises: dict[str, Exercise], *,
                   check_for: Callable[[Exercise, Any], Callable[[Any], None]] | None = None,
                   terms: Sequence[str] = ("expected",), same_message: bool = False,
                   leaves_nothing: Callable[[], Callable[[], str]] | None = None,
                   correct_runs: int | None = None, solution_runs: int = 1
                   ) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
    """The three validity tests every lesson's exercises get, for its test module to bind.

    ``wrong, correct, solution = validity_tests(EXERCISES)`` at module level, bound to the
    names ``test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms``,
    ``test_correct_answer_passes_every_grading_run`` and ``test_lessons_own_solution_passes``.

    Args:
        exercises: Exercise label -> Exercise.
        check_for: Picks another check for one answer (see :func:`cases`).
        terms: Words a wrong answer's message must contain one of.
        same_message: Every run of a wrong answer must give the same message (addresses aside).
        leaves_nothing: Called before a wrong answer's runs; returns a function that names
            what the runs left behind (processes, segments), empty when nothing.
        correct_runs: Runs of each correct answer (default :data:`CORRECT_RUNS`).
        solution_runs: Runs of the lesson's own solution (the lesson's run covers it again).
    """

    @pytest.mark.parametrize(("check", "exercise", "answer"),
                             cases(exercises, "wrong", check_for))
    def wrong(check: Callable[[Any], None], exercise: str, answer: Any) -> None:
        left_behind = leaves_nothing() if leaves_nothing else None
        messages = fails_every_run(check, exercise, answer, terms=terms)
        if same_message:
            same = {re.sub(r"0x[0-9a-f]+", "0x...", message) for message in messages}
            assert len(same) == 1, "the same answer got different verdicts in different runs"
        if left_behind is not None:
            assert not left_behind(), f"the check left {left_behind()}"

    @pytest.mark.parametrize(("check", "exercise", "answer"),
                             cases(exercises, "correct", check_for))
    def correct(check: Callable[[Any], None], exercise: str, answer: Any) -> None:
        passes_every_run(check, exercise, answer,
                         CORRECT_RUNS if correct_runs is None else correct_runs)

    @pytest.mark.parametrize(("check", "exercise", "answer"), cases(exercises, "solution"))
    def solution(check: Callable[[Any], None], exercise: str, answer: Any) -> None:
        passes_every_run(check, exercise, answer, solution_runs)

    return wrong, correct, solution


class _NotImplemented:
    """An answer cell left as released: it raises ``NotImplementedError`` when called."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError()


def _not_implemented(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError()


def unfilled_answer_test(exercises: dict[str, Exercise], *, terms: Sequence[str] = (),
                         ) -> Callable[..., None]:
    """The unfilled-answer test every lesson gets, for its test module to bind: each check,
    handed the released placeholder (a class or a function that raises
    ``NotImplementedError``), fails at once with a message that starts with the exercise's
    name, names the error, and contains every one of ``terms``.

    ``test_unfilled_answer_fails_at_once_naming_the_exercise_and_the_error =
    unfilled_answer_test(EXERCISES)`` at module level.
    """

    @pytest.mark.parametrize(("check", "exercise", "placeholder"), [
        pytest.param(exercise.check, exercise.name, placeholder, id=f"{label}-{kind}")
        for label, exercise in exercises.items()
        for kind, placeholder in (("class", _NotImplemented), ("function", _not_implemented))])
    def unfilled(check: Callable[[Any], None], exercise: str, placeholder: Any) -> None:
        with pytest.raises(AssertionError) as failure:
            check(placeholder)
        message = str(failure.value)
        assert message.startswith(f"{exercise}: "), message
        assert "NotImplementedError" in message, message
        for term in terms:
            assert term in message, message

    return unfilled
