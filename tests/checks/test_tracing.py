"""Lesson 06 (tracing) graders: every known wrong answer fails every run, every right one passes.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.tracing``)
20 times in this process, as 20 grading runs would.

- ``check_who_overwrote``, ``check_find_conflicts`` and ``check_lockset_races`` are
  deterministic: they grade the answer on 40 seeded hidden logs (20 racy, 20 clean; the
  lockset check first on six small logs that each decide one part of its definition) against
  the lesson's definition, so the same answer gets the same verdict every run. The 20 runs
  still run (they are cheap).
- ``check_publish_locked`` uses the controlled scheduler (``explore``, seed ``tracing.SEED``,
  ``tracing.SCHEDULES`` = 150 schedules): deterministic too. Over seeds 0-9 the racy answers
  were found within 17-69 schedules; the others fail on the first schedule.
- ``check_log_access`` runs real threads under ``stress`` (fixed trial count and seed); the
  wrong answers break a property in every trial (clock, thread name, missing record, value),
  so they fail every run, and the 20 runs show the correct ones never fail.

``answers_tracing.py`` says what each wrong answer gets wrong; the correct ones are written
differently from the lesson's solution. The solution itself (read from
``solutions/06_tracing.py``) runs once per exercise.
"""

from __future__ import annotations

import threading
import time

from autograder.checks import tracing
from autograder.checks.tracing.logs import _lockset_edge_logs
from tests.checks import answers_tracing as answers
from tests.checks.grading_runs import (
    Exercise,
    solution_namespace,
    validity_tests,
)

_SOLVED = solution_namespace("06_tracing", {"threading": threading, "time": time})

EXERCISES = {
    label: Exercise(check, label, _SOLVED[label], wrong, correct)
    for label, check, wrong, correct in [
        ("log_access", tracing.check_log_access,
         answers.WRONG_LOG_ACCESS, answers.CORRECT_LOG_ACCESS),
        ("who_overwrote", tracing.check_who_overwrote,
         answers.WRONG_WHO_OVERWROTE, answers.CORRECT_WHO_OVERWROTE),
        ("find_conflicts", tracing.check_find_conflicts,
         answers.WRONG_FIND_CONFLICTS, answers.CORRECT_FIND_CONFLICTS),
        ("lockset_races", tracing.check_lockset_races,
         answers.WRONG_LOCKSET, answers.CORRECT_LOCKSET),
        ("publish_locked", tracing.check_publish_locked,
         answers.WRONG_PUBLISH, answers.CORRECT_PUBLISH),
    ]
}


(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(EXERCISES)


def test_hidden_logs_hold_races_and_clean_runs() -> None:
    """Racy logs all contain a conflict and most a lost update; clean logs contain neither."""
    racy = [tracing.hidden_log(tracing.SEED * 100 + k, racy=True) for k in range(0, 40, 2)]
    clean = [tracing.hidden_log(tracing.SEED * 100 + k, racy=False) for k in range(1, 40, 2)]
    assert all(tracing.reference_find_conflicts(log) for log in racy)
    assert sum(bool(tracing.reference_who_overwrote(log)) for log in racy) >= 15
    assert not any(tracing.reference_find_conflicts(log) for log in clean)
    assert not any(tracing.reference_who_overwrote(log) for log in clean)


def test_lockset_check_flags_racy_logs_and_never_needs_accesses_that_overlap() -> None:
    """The racy hidden logs are flagged by the lockset definition, the clean ones never, and
    the small logs decide it without any two accesses overlapping in time."""
    racy = [tracing.hidden_log(tracing.SEED * 100 + k, racy=True) for k in range(0, 40, 2)]
    clean = [tracing.hidden_log(tracing.SEED * 100 + k, racy=False) for k in range(1, 40, 2)]
    assert sum(bool(tracing.reference_lockset_races(log)) for log in racy) >= 15
    assert not any(tracing.reference_lockset_races(log) for log in clean)
    small = [log for _, log in _lockset_edge_logs()]
    assert not any(tracing.reference_find_conflicts(log) for log in small)
    assert [sorted(tracing.reference_lockset_races(log)) for log in small] == [
        [], [], ["best"], ["best"], ["best"], ["step"], ["best"]]
