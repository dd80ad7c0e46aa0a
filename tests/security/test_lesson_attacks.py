"""Every lesson's grader attacked through the names its notebook uses, graded once as a class.

For each lesson (:mod:`tests.security.lesson_attacks` reads its hidden tests' calls) and each
technique, the demo class's racy answers plus the attack must score no more than the racy
answers alone, and the notebook must be ``tampered`` with a note naming the attempt (a patch of
a library the lesson's checks never call may instead change nothing at all).
"""

import pytest

from autograder.course.course import make_course
from autograder.grading.grade import grade_submissions
from autograder.grading.spec import Limits, Status
from tests.conftest import REPO
from tests.security.lesson_attacks import (
    HARMLESS_WHEN_UNUSED,
    TECHNIQUES,
    WRAPPING,
    targets,
    write_attacks,
)

pytestmark = pytest.mark.timeout(3600)

LIMITS = Limits(cell_timeout_s=120, memory_mb=3000, job_timeout_s=600)
COURSE_LESSONS = sorted(p.stem for p in (REPO / "solutions").glob("[0-9][0-9]_*.py"))
TECHNIQUE_NAMES = [*TECHNIQUES, *WRAPPING]
#: The matrix as measured (lessons x techniques: status and score), for the closing note.
MATRIX = REPO / "build" / "security" / "lesson_attacks.md"


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    root = tmp_path_factory.mktemp("lesson-attacks")
    course = make_course(REPO / "solutions", root / "course")
    write_attacks(course, REPO / "demo", root / "submitted")
    rows = grade_submissions(root / "submitted", course, root / "out", workers=2,
                             limits=LIMITS, progress=False)
    by_key = {(r.student, r.assignment): r for r in rows}
    table = ["| lesson | racy | " + " | ".join(TECHNIQUE_NAMES) + " |",
             "|---" * (len(TECHNIQUE_NAMES) + 2) + "|"]
    for lesson in COURSE_LESSONS:
        cells = [f"{by_key[(t, lesson)].status} {by_key[(t, lesson)].score:g}"
                 for t in TECHNIQUE_NAMES]
        table.append(f"| {lesson} | {by_key[('racy', lesson)].score:g} | "
                     + " | ".join(cells) + " |")
    MATRIX.parent.mkdir(parents=True, exist_ok=True)
    MATRIX.write_text("\n".join(table) + "\n", encoding="utf-8")
    return {"rows": by_key, "course": course}


def test_every_lesson_has_checks_to_attack(matrix):
    course = matrix["course"]
    assert [lesson.name for lesson in course.lessons] == COURSE_LESSONS
    for lesson in course.lessons:
        assert targets(course, lesson), f"{lesson.name}: no face.check call in its hidden tests"


@pytest.mark.parametrize("lesson", COURSE_LESSONS)
@pytest.mark.parametrize("technique", TECHNIQUE_NAMES)
def test_an_attack_gains_nothing_and_is_named(matrix, lesson, technique):
    racy = matrix["rows"][("racy", lesson)]
    attacked = matrix["rows"][(technique, lesson)]
    assert racy.status == Status.GRADED
    assert attacked.score <= racy.score, (
        f"{technique} on {lesson}: {attacked.score} > racy {racy.score} ({attacked.detail})")
    if technique in HARMLESS_WHEN_UNUSED and attacked.status == Status.GRADED:
        assert attacked.score == racy.score, f"{technique} on {lesson}: {attacked.detail}"
        return
    assert attacked.status == Status.TAMPERED, (
        f"{technique} on {lesson}: {attacked.status}, {attacked.detail}")
    assert " | " in attacked.detail and "grader" in attacked.detail.partition(" | ")[2], (
        f"{technique} on {lesson}: no note names the attempt ({attacked.detail})")
