"""Every gradebook write: a class's results in one transaction, and the Formgrader copy."""

from pathlib import Path

import pytest

from autograder.course.course import make_course
from autograder.grading import gradebook
from autograder.grading.spec import JobResult
from tests.conftest import one_lesson_course

FIXTURES = Path(__file__).parent / "fixtures"
LESSON = "99_tiny"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return one_lesson_course(FIXTURES / f"{LESSON}.py", tmp_path_factory.mktemp("gradebook"))


@pytest.fixture
def class_course(course, tmp_path):
    """A course of its own for a test that records grades in it."""
    return make_course(course.root.parent / "solutions", tmp_path / "course")


def result(student: str, score: float) -> JobResult:
    return JobResult(student, LESSON, LESSON, "graded", score, 2.0,
                     cells={"test_tiny_add": [score, 2.0, ""]})


def scores(url: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with gradebook.nbgrader_environment(), Gradebook(url) as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(LESSON)}


def test_the_lessons_points_come_from_the_course_template(course):
    assert gradebook.max_score(course, LESSON) == 2.0
    assert gradebook.max_score(course, "no_such_lesson") == 0.0


def test_a_class_is_recorded_in_one_transaction(class_course):
    gradebook.record_grades(class_course, [result("ada", 2.0), result("bo", 0.0)], {})
    assert scores(class_course.db_url) == {"ada": 2.0, "bo": 0.0}

    def broken():
        yield result("cy", 2.0)
        raise RuntimeError("the grader stopped halfway")

    with pytest.raises(RuntimeError):
        gradebook.record_grades(class_course, broken(), {})
    assert scores(class_course.db_url) == {"ada": 2.0, "bo": 0.0}  # cy rolled back


def test_formgraders_copy_is_written_whole_beside_the_template(course, tmp_path):
    copy = tmp_path / "formgrader.db"
    gradebook.write_class_gradebook(course, copy, [result("ada", 1.0)])
    assert scores(f"sqlite:///{copy}") == {"ada": 1.0}
    assert not copy.with_suffix(".tmp").exists()
    assert gradebook.assignment_digest(course.root / "gradebook.db", LESSON)
