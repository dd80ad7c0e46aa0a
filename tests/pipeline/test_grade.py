"""Grading a class: nbgrader autograde per submission, rows from the gradebook, grades.csv."""

import csv
import shutil
from pathlib import Path

import pytest

from autograder.pipeline.course import make_course
from autograder.pipeline.demo import fill_answers, make_submissions, read_answers
from autograder.pipeline.grade import grade_submissions

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("grade")
    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(FIXTURES / "99_tiny.py", solutions)
    return make_course(solutions, root / "course")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_read_answers_splits_cells_by_grade_id(tmp_path):
    write(tmp_path / "a.py", "# a comment\n# %% ex_one\nx = 1\n\n# %% ex_two\ny = 2\n")
    assert read_answers(tmp_path / "a.py") == {"ex_one": "x = 1", "ex_two": "y = 2"}


def test_read_answers_rejects_code_before_any_header(tmp_path):
    write(tmp_path / "a.py", "x = 1\n# %% ex_one\n")
    with pytest.raises(ValueError, match="before the first"):
        read_answers(tmp_path / "a.py")


def test_fill_answers_refuses_unknown_grade_id(course, tmp_path):
    release = course.release_notebook(course.lessons[0])
    with pytest.raises(KeyError, match="ex_nope"):
        fill_answers(release, {"ex_nope": "pass"}, tmp_path / "x.ipynb")


def test_class_gets_full_partial_zero_and_not_submitted_rows(course, tmp_path):
    demo = tmp_path / "demo"
    write(demo / "good/99_tiny.py", "# %% ex_tiny_add\ndef add(a, b):\n    return b + a\n")
    write(demo / "wrong/99_tiny.py", "# %% ex_tiny_add\ndef add(a, b):\n    return a - b\n")
    write(demo / "empty/README.md", "submits the notebook unfilled\n")
    submitted = tmp_path / "submitted"
    make_submissions(demo, course, submitted)
    (submitted / "absent").mkdir()
    rows = {r.student: r for r in grade_submissions(submitted, course, tmp_path / "out")}
    assert (rows["good"].score, rows["good"].max_score, rows["good"].status) == (2, 2, "graded")
    assert rows["good"].detail == "test_tiny_add=2/2"
    assert (rows["wrong"].score, rows["wrong"].status) == (0, "graded")
    assert (rows["empty"].score, rows["empty"].status) == (0, "graded")
    assert (rows["absent"].score, rows["absent"].status) == (0, "not-submitted")
    with (tmp_path / "out/grades.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [r["student"] for r in table] == ["absent", "empty", "good", "wrong"]
    assert table[2] == {"student": "good", "assignment": "99_tiny", "score": "2",
                        "max_score": "2", "status": "graded", "detail": "test_tiny_add=2/2"}
