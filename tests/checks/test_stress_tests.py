"""Lesson 05 (stress tests and benchmarks) graders: wrong answers fail, right ones pass, 20 runs.

Each parametrized test runs the exercise's real hidden check (``autograder.checks.stress_tests``)
in this process as often as that many grading runs would (``grading_runs.RUNS``, 20, for a
wrong answer; ``CORRECT_RUNS`` for a right one).

- ``stress_ledger`` is graded with real threads: the student's test runs against 7 racy and 5
  correct hidden ledgers (each racy one has a GIL-releasing TensorFlow call inside its race
  window; they fail differently: torn snapshots only, lost updates only, or both). Every
  ``totals()`` of a hidden ledger costs a TF call, so a reader loop bounded by time makes
  about as many reads as the writers make records (issue #18, class 8). This check is not
  deterministic, which is why the 20 runs matter: the correct
  answers must catch every racy ledger in every run. Grading stops at the first wrong
  verdict, so wrong answers are cheap. The answer that hangs is graded with a 1 s budget
  instead of the real 20 s (the verdict, "hung", does not depend on the budget) to keep this
  file inside its time budget.
- ``measure`` is graded on sleeping servers whose physics is known (real threads, real
  clocks); the checks allow for a loaded machine (sleeps only ever take longer).
- ``explore_ledger`` is graded with the controlled scheduler: the student's own ``explore``
  call with a fixed seed, so its verdicts are deterministic; the 20 runs prove it. The hidden
  racy ledgers fail differently (lost updates only, torn snapshots only, both, a lock-order
  deadlock), so an explorer with one writer, or without a reader running during a record,
  fails (issue #18, class 7).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from autograder.checks import stress_tests
from autograder.checks.stress_tests.running import grade_against, racy_once_run
from autograder.harness import explore
from tests.checks import answers_stress_tests as answers
from tests.checks.grading_runs import (
    Exercise,
    passes_every_run,
    solution_namespace,
    validity_tests,
)

_SOLVED = solution_namespace("05_stress", {"threading": threading, "time": time,
                                           "explore": explore, "stress_tests": stress_tests})


def _check_hang(answer: Any) -> None:
    stress_tests.check_stress_test(answer, budget_s=1.0)


def _check_for(exercise: Exercise, answer: Any) -> Callable[[Any], None]:
    return _check_hang if answer is answers.barrier_miscounted else exercise.check


EXERCISES = {
    "ledger": Exercise(stress_tests.check_stress_test, "stress_ledger", _SOLVED["stress_ledger"],
                       answers.WRONG_STRESS, answers.CORRECT_STRESS),
    "measure": Exercise(stress_tests.check_measure, "measure", _SOLVED["measure"],
                        answers.WRONG_MEASURES, answers.CORRECT_MEASURES),
    "explore": Exercise(stress_tests.check_explore_ledger, "explore_ledger",
                        _SOLVED["explore_ledger"], answers.WRONG_EXPLORES,
                        answers.CORRECT_EXPLORES),
}


(test_wrong_answer_fails_every_grading_run_with_a_message_in_the_exercises_terms,
 test_correct_answer_passes_every_grading_run,
 test_lessons_own_solution_passes) = validity_tests(EXERCISES, check_for=_check_for)


def test_hidden_sets_are_big_enough_and_names_are_hidden() -> None:
    assert len(stress_tests.RACY) >= 4 and len(stress_tests.CORRECT) >= 4
    assert len(stress_tests.GIL_HIDDEN_RACY) >= 4 and len(stress_tests.GIL_HIDDEN_CORRECT) >= 3
    seen: list[str] = []

    def note_the_class(make: Any) -> None:
        seen.append(type(make()).__name__)

    rows = grade_against(note_the_class, racy=[], correct=stress_tests.CORRECT)
    racy_once_run(note_the_class)
    assert len(seen) == len(rows) + 1 and set(seen) == {"Ledger"}


def test_a_reader_looping_until_the_writers_are_done_reads_in_step_with_them() -> None:
    """Class 8 of issue #18: a reader bounded by time (``while not done``) used to read a
    hidden ledger millions of times a second (a 3 GB kernel when it kept every torn
    snapshot); each read now costs a GIL-releasing TF call, so reads follow the records, on
    any machine (measured: fewer reads than records; before: 6 million in 2 s)."""
    records = 200
    reads: list[int] = []

    def counting_test(make_ledger: Any) -> None:
        ledger = make_ledger()
        done = threading.Event()
        seen = [0]

        def read() -> None:
            while not done.is_set():
                ledger.totals()
                seen[0] += 1

        reader = threading.Thread(target=read)
        reader.start()
        for _ in range(records):
            ledger.record(stress_tests.batch(2))
        done.set()
        reader.join()
        reads.append(seen[0])

    stress_tests.grade_against(counting_test, racy=[], correct=[stress_tests.TupleLedger,
                                                                stress_tests.LockedLedger])
    assert len(reads) == 2 and max(reads) <= 100 * records, reads


def test_a_hanging_test_is_a_bounded_verdict_not_a_hang() -> None:
    rows = stress_tests.grade_against(answers.barrier_miscounted, budget_s=0.5)
    assert [row["verdict"] for row in rows] == ["hung"]
    assert rows[0]["seconds"] < 2.0


def test_a_hung_tests_spinning_reader_ends_and_leaves_the_next_check_alone() -> None:
    """A hung test's reader would call its ledger for ever beside the next exercise's check:
    the explorer of exercise 3 then hung on the lock-order ledger, and the harness it left
    running read as tampering. The hung test's ledger is revoked, and its reader ends."""
    hook = threading.excepthook
    before = set(threading.enumerate())
    rows = stress_tests.grade_against(answers.reader_spins_writers_never_start, budget_s=1.0)
    assert [row["verdict"] for row in rows] == ["hung"]
    time.sleep(0.2)
    spinning = [t for t in threading.enumerate() if t not in before
                and t.name.endswith("(read)")]
    assert not spinning, spinning
    passes_every_run(stress_tests.check_explore_ledger, "explore_ledger",
                     _SOLVED["explore_ledger"], 1)
    assert threading.excepthook is hook
