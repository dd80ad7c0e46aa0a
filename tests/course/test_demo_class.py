"""The bundled demo class, graded as `make demo` grades it.

One grading run per test session (two workers); each test checks one student's rows. The
instructor's own answers are not graded here again: ``tests/course/test_lessons.py`` runs
every lesson with its hidden tests, and each lesson's validity tests grade its solution.
"""

import pytest

from autograder.pipeline.course import make_course
from autograder.pipeline.demo import make_submissions
from autograder.pipeline.grade import grade_submissions
from tests.conftest import REPO

# Grading the whole class takes minutes (one job per student and lesson, two at a time).
pytestmark = pytest.mark.timeout(3600)

# Students of demo/ that submit one lesson on purpose to show one failure mode:
# student -> (lesson, status, score).
HOSTILE = {
    "deadlock": ("00_anatomy", "timeout", 5),
    "exits": ("00_anatomy", "kernel-died", 5),  # graded again without its deadly cell
    "invalid": ("00_anatomy", "invalid-notebook", 0),
    "edited": ("00_anatomy", "tampered", 8),
    "deleted": ("00_anatomy", "missing-cells", 5),
    "lockcheat": ("00_anatomy", "tampered", 5),
    "snoop": ("00_anatomy", "graded", 5),
}


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


def test_hostile_students_submit_only_their_lesson(demo_class):
    for student, (lesson, _, _) in HOSTILE.items():
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
    lesson, status, score = HOSTILE[student]
    r = demo_class["rows"][(student, lesson)]
    assert (r.status, r.score) == (status, score), r.detail
