"""The class's gradebook on PostgreSQL: ``racelab grade --gradebook-url postgresql+psycopg://...``.

A real PostgreSQL server is started for this module (``tests.grading.engines.postgres_server``:
``initdb`` and ``postgres`` as the ``postgres`` user when the tests run as root), listening on a
Unix socket only, and stopped by its PID. Two demo students on lesson 00 (no TensorFlow) are
graded once into a database of their own and once into the course's SQLite ``gradebook.db``:
nbgrader's ``Gradebook`` and Formgrader's API must read back the same students, assignments and
scores as ``grades.csv`` from both.
"""

import argparse
import shutil

import pytest

from autograder.cli import main
from autograder.course.course import Course, make_course, nbgrader_environment
from autograder.course.source import find_lessons
from autograder.grading.demo import make_submissions
from tests.conftest import REPO
from tests.grading.engines import csv_rows, gradebook_rows, postgres_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LESSON = "00_anatomy"
STUDENTS = ("correct", "racy")


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server on a private Unix socket; yields a function making a database's URL."""
    with postgres_server() as database:
        yield database


@pytest.fixture(scope="module")
def graded(postgres, tmp_path_factory):
    """The same two students graded by the CLI into PostgreSQL and into SQLite."""
    root = tmp_path_factory.mktemp("pg-class")
    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(REPO / "solutions" / f"{LESSON}.py", solutions)
    students = root / "demo"
    for student in STUDENTS:
        shutil.copytree(REPO / "demo" / student, students / student)
    make_submissions(students, make_course(solutions, root / "template"), root / "submitted")
    url = postgres("racelab_course")
    runs = {"postgres": ["--gradebook-url", url], "sqlite": []}
    for name, extra in runs.items():
        assert main(["grade", str(root / "submitted"), "--out", str(root / name),
                     "--solutions", str(solutions), "--course", str(root / name / "course"),
                     "--workers", "2", "--cell-timeout", "60", "--memory-mb", "1500",
                     *extra]) == 0
    lessons = tuple(find_lessons(solutions))
    return {"root": root, "url": url,
            "courses": {"postgres": Course(root / "postgres" / "course", lessons, url),
                        "sqlite": Course(root / "sqlite" / "course", lessons)}}


def csv_scores(path) -> set[tuple]:
    """``grades.csv``'s rows as ``(student, assignment, score, max_score)``."""
    return {row[:4] for row in csv_rows(path)}


def test_postgres_gradebook_holds_the_rows_of_grades_csv(graded):
    expected = csv_scores(graded["root"] / "postgres" / "grades.csv")
    assert {row[0] for row in expected} == set(STUDENTS)
    assert len({row[2] for row in expected}) == 2, "the two students should score differently"
    assert gradebook_rows(graded["url"]) == expected


def test_postgres_and_sqlite_gradebooks_hold_the_same_rows(graded):
    sqlite = graded["courses"]["sqlite"]
    assert csv_scores(graded["root"] / "sqlite" / "grades.csv") == \
        csv_scores(graded["root"] / "postgres" / "grades.csv")
    assert gradebook_rows(sqlite.db_url) == gradebook_rows(graded["url"])


def test_formgrader_api_on_postgres_shows_every_student_assignment_and_score(graded):
    """What Formgrader's pages ask nbgrader for: the same answers from both databases."""
    seen = {}
    for name, course in graded["courses"].items():
        with nbgrader_environment():
            api = course.api()
            students = {s["id"]: s["score"] for s in api.get_students()}
            assignments = {a["name"]: (a["max_score"], a["average_score"])
                           for a in api.get_assignments()}
            submissions = {(s["student"], s["score"], s["max_score"], s["autograded"])
                           for s in api.get_submissions(LESSON)}
        seen[name] = (students, assignments, submissions)
    rows = csv_scores(graded["root"] / "postgres" / "grades.csv")
    students, assignments, submissions = seen["postgres"]
    assert students == {student: score for student, _, score, _ in rows}
    assert assignments == {LESSON: (max(r[3] for r in rows), sum(r[2] for r in rows) / len(rows))}
    assert submissions == {(student, score, top, True) for student, _, score, top in rows}
    assert seen["postgres"] == seen["sqlite"]


def test_the_template_gradebook_of_a_postgres_course_holds_no_grades(graded):
    from nbgrader.api import Gradebook

    course = graded["courses"]["postgres"]
    with nbgrader_environment(), Gradebook(course.template_url) as gb:
        assert gb.students == []


def test_recording_grades_is_one_transaction(graded, postgres):
    """A result the gradebook refuses (an unknown assignment) leaves nothing recorded at all."""
    from nbgrader.api import Gradebook

    from autograder.grading.gradebook import record_grades
    from autograder.grading.spec import JobResult

    url = postgres("racelab_refused")
    course = Course(graded["courses"]["postgres"].root, graded["courses"]["postgres"].lessons, url)
    results = [JobResult("correct", LESSON, LESSON, "graded", 1.0, 8.0),
               JobResult("ghost", "99_nope", "99_nope", "graded", 1.0, 1.0)]
    with pytest.raises(Exception, match="99_nope"):
        record_grades(course, results, {})
    with nbgrader_environment(), Gradebook(url) as gb:
        assert (gb.assignments, gb.students) == ([], [])


def test_instructor_lab_points_formgrader_at_the_gradebook_url(tmp_path):
    from autograder.lab.__main__ import setup_from_args
    from autograder.lab.config import nbgrader_config

    url = "postgresql+psycopg://racelab@/racelab?host=/tmp/pg"
    args = argparse.Namespace(role="instructor", home=tmp_path, root=None,
                              solutions=REPO / "solutions", exchange=None,
                              course=tmp_path / "course", no_sandbox=True, gradebook_url=url)
    assert nbgrader_config(setup_from_args(args))["CourseDirectory"]["db_url"] == url
    args.gradebook_url = None
    assert nbgrader_config(setup_from_args(args))["CourseDirectory"]["db_url"] == \
        f"sqlite:///{(tmp_path / 'course').resolve() / 'gradebook.db'}"
