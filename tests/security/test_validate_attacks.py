"""The Validate button grades an attacked notebook as grading does: the forged report and the
planted observations gain nothing there either (Validate runs the same job, judge included)."""

import pytest

from autograder.course.course import lesson_course
from autograder.grading.validate import grade_notebook
from tests.conftest import REPO
from tests.security.lesson_attacks import write_attacks

LESSON = "00_anatomy"
ATTACKS = ("forged_report", "planted_observations", "frames_through_the_standard_library")


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    root = tmp_path_factory.mktemp("validate-attacks")
    course = lesson_course(REPO / "solutions", LESSON, root / "course")
    write_attacks(course, REPO / "demo", root / "submitted")
    return {student: grade_notebook(root / "submitted" / student / LESSON / f"{LESSON}.ipynb",
                                    REPO / "solutions")
            for student in ("racy", *ATTACKS)}


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_pressed_through_validate_gains_nothing_and_is_named(verdicts, attack):
    racy, attacked = verdicts["racy"], verdicts[attack]
    assert racy.status == "graded" and 0 < racy.score < racy.max_score
    assert attacked.score <= racy.score and not attacked.ok
    assert attacked.status == "tampered", (attacked.status, attacked.notes)
    assert any("grader" in note for note in attacked.notes), attacked.notes
