"""A cell that kills the grading process costs only the tests that depend on it.

The grader runs the notebook again in a new sandbox with the deadly cell replaced by an error
(never re-running it), so the other exercises keep their points. Graded once per module on a
two-exercise lesson without TensorFlow; the crashes are real (a SIGSEGV delivered to the
process, ``os._exit``): ``ctypes`` itself is refused to graded code.
"""

import json
from pathlib import Path

import pytest

from autograder.course.answers import fill_answers
from autograder.grading.grade import grade_submissions
from autograder.grading.job import MAX_DEADLY_CELLS
from autograder.grading.spec import Limits
from tests.conftest import one_lesson_course

FIXTURES = Path(__file__).parent / "fixtures"
LIMITS = Limits(cell_timeout_s=8, memory_mb=800, job_timeout_s=300)
ADD, MUL = "def add(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"
SEGFAULT = "import os, signal\n        os.kill(os.getpid(), signal.SIGSEGV)  # a real crash"

ANSWERS = {
    "good": {"ex_pair_add": ADD, "ex_pair_mul": MUL},
    "segfault_in_hidden_test": {
        "ex_pair_add": f"def add(a, b):\n    if (a, b) == (2, 2):\n        {SEGFAULT}\n"
                       "    return a + b",
        "ex_pair_mul": MUL},
    "exits_in_answer": {"ex_pair_add": ADD, "ex_pair_mul": MUL + "\nimport os\nos._exit(3)"},
    "segfault_in_both_tests": {
        "ex_pair_add": f"def add(a, b):\n    if (a, b) == (2, 2):\n        {SEGFAULT}\n"
                       "    return a + b",
        "ex_pair_mul": f"def mul(a, b):\n    if (a, b) == (4, 4):\n        {SEGFAULT}\n"
                       "    return a * b"},
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("crashes")
    course = one_lesson_course(FIXTURES / "98_pair.py", root)
    release = course.release_notebook(course.lessons[0])
    submitted = root / "submitted"
    for student, answers in ANSWERS.items():
        fill_answers(release, answers, submitted / student / "98_pair" / "98_pair.ipynb")
    out = root / "out"
    rows = grade_submissions(submitted, course, out, workers=2, limits=LIMITS, progress=False)
    return {"rows": {r.student: r for r in rows}, "out": out}


def result_of(graded, student):
    return json.loads((graded["out"] / f"jobs/{student}/98_pair/result.json").read_text())


def test_a_notebook_that_kills_nothing_is_graded_once_as_usual(graded):
    r = graded["rows"]["good"]
    assert (r.status, r.score) == ("graded", 5)
    assert not result_of(graded, "good")["notes"]


def test_segfault_in_one_hidden_test_zeroes_that_test_only(graded):
    r = graded["rows"]["segfault_in_hidden_test"]
    assert (r.status, r.score) == ("kernel-died", 3), r.detail
    assert r.detail.startswith("test_pair_add=0/2 test_pair_mul=3/3")
    notes = " ".join(result_of(graded, "segfault_in_hidden_test")["notes"])
    assert "stopped while it ran the test cell test_pair_add" in notes
    assert "SIGSEGV" in notes


def test_answer_cell_that_exits_zeroes_the_tests_of_that_answer_only(graded):
    r = graded["rows"]["exits_in_answer"]
    assert (r.status, r.score) == ("kernel-died", 2), r.detail
    notes = " ".join(result_of(graded, "exits_in_answer")["notes"])
    assert "stopped while it ran your answer cell ex_pair_mul" in notes


def test_every_deadly_cell_is_skipped_in_turn_never_rerun(graded):
    r = graded["rows"]["segfault_in_both_tests"]
    assert (r.status, r.score) == ("kernel-died", 0), r.detail
    notes = result_of(graded, "segfault_in_both_tests")["notes"]
    died = [note for note in notes if note.startswith("Grading stopped while")]
    assert len(died) == 2 <= MAX_DEADLY_CELLS
    assert "test_pair_add" in died[0] and "test_pair_mul" in died[1]
