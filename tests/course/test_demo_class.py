"""The bundled demo class, graded as `make demo` grades it.

One grading run per test session (two workers); each test checks one student's rows. The
instructor's own answers are not graded here again: ``tests/course/test_lessons.py`` runs
every lesson with its hidden tests, and each lesson's validity tests grade its solution.
"""

import re

import pytest

from autograder.course.course import make_course
from autograder.grading.demo import make_submissions
from autograder.grading.grade import grade_submissions
from tests.conftest import REPO

# Grading the whole class takes minutes (one job per student and lesson, two at a time).
pytestmark = pytest.mark.timeout(3600)

_ROW = re.compile(r"^\| `(?P<student>[a-z]+)` \| (?P<lesson>\d\d) \|.*\| "
                  r"(?P<status>[a-z-]+), (?P<score>\d+)/(?P<max>\d+)\b")


def hostile_students() -> dict[str, tuple[str, str, int, int]]:
    """Students of demo/ that submit one lesson on purpose to show one failure mode, as
    demo/README.md's table states them: student -> (lesson number, status, score, max)."""
    rows = (_ROW.match(line) for line in (REPO / "demo" / "README.md").read_text().splitlines())
    return {row["student"]: (row["lesson"], row["status"], int(row["score"]), int(row["max"]))
            for row in rows if row}


HOSTILE = hostile_students()


@pytest.fixture(scope="session")
def demo_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo-class")
    course = make_course(REPO / "solutions", root / "course")
    submitted = root / "submitted"
    make_submissions(REPO / "demo", course, submitted)
    rows = grade_submissions(submitted, course, root / "out", workers=2, progress=False)
    by_key = {(r.student, r.assignment): r for r in rows}
    return {"rows": by_key, "course": course, "out": root / "out"}


def lessons(demo_class):
    return [lesson.name for lesson in demo_class["course"].lessons]


def lesson_named(demo_class, number: str) -> str:
    return next(name for name in lessons(demo_class) if name.startswith(f"{number}_"))


def test_the_readme_table_names_every_student_who_submits_one_lesson():
    only = {path.parent.name for path in (REPO / "demo").glob("*/ONLY")}
    assert only and set(HOSTILE) == only


def test_hostile_students_submit_only_their_lesson(demo_class):
    for student, (number, _, _, _) in HOSTILE.items():
        lesson = lesson_named(demo_class, number)
        others = [name for name in lessons(demo_class) if name != lesson]
        assert all(demo_class["rows"][(student, name)].status == "not-submitted"
                   for name in others)


def test_correct_student_scores_full_marks(demo_class):
    for name in lessons(demo_class):
        r = demo_class["rows"][("correct", name)]
        assert (r.status, r.score) == ("graded", r.max_score), r.detail


def test_unfilled_notebooks_score_zero_without_hanging(demo_class):
    for name in lessons(demo_class):
        r = demo_class["rows"][("empty", name)]
        assert (r.status, r.score) == ("graded", 0), r.detail


def test_racy_student_loses_points_on_every_lesson(demo_class):
    for name in lessons(demo_class):
        r = demo_class["rows"][("racy", name)]
        assert 0 <= r.score < r.max_score, r.detail
        # A racy answer that builds a cold Keras model from several threads can crash
        # TensorFlow itself (seen in this suite): then the kernel dies, and the notebook is
        # graded again with that cell skipped.
        assert r.status in ("graded", "kernel-died"), r.detail
        assert r.status == "kernel-died" or "=0/" in r.detail, "a racy exercise scores 0"


@pytest.mark.parametrize("student", sorted(HOSTILE))
def test_hostile_student_gets_its_own_status_and_score(demo_class, student):
    number, status, score, max_score = HOSTILE[student]
    r = demo_class["rows"][(student, lesson_named(demo_class, number))]
    assert (r.status, r.score, r.max_score) == (status, score, max_score), r.detail
