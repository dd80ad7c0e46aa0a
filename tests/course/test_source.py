"""Lesson sources are validated, and a broken one is reported with its file and line."""

from pathlib import Path

import pytest

from autograder.course.source import Lesson, SourceError, find_lessons, read_lesson

FIXTURES = Path(__file__).parent.parent / "grading" / "fixtures"
GOOD = (FIXTURES / "99_tiny.py").read_text()
ANSWER_HEADER = (
    '# %% nbgrader={"grade": false, "grade_id": "ex_tiny_add", "locked": false, '
    '"schema_version": 3, "solution": true, "task": false}'
)


def lesson_from(tmp_path: Path, text: str) -> Lesson:
    path = tmp_path / "99_tiny.py"
    path.write_text(text)
    return Lesson("99_tiny", path)


def line_of(text: str, needle: str) -> int:
    """Line number where ``needle`` (possibly spanning lines) first starts."""
    return text.count("\n", 0, text.index(needle)) + 1


def test_good_source_gets_stable_cell_ids(tmp_path):
    first = read_lesson(lesson_from(tmp_path, GOOD))
    second = read_lesson(lesson_from(tmp_path, GOOD))
    assert [c.id for c in first.cells] == [c.id for c in second.cells]
    assert "ex_tiny_add" in [c.id for c in first.cells]
    assert "jupytext" not in first.metadata


def test_find_lessons_takes_only_numbered_sources(tmp_path):
    for name in ("01_a.py", "02_b_c.py", "helpers.py", "3_x.py"):
        (tmp_path / name).write_text("")
    assert [lesson.name for lesson in find_lessons(tmp_path)] == ["01_a", "02_b_c"]


@pytest.mark.parametrize(
    ("broken", "needle", "message"),
    [
        pytest.param(GOOD.replace('"grade": false, "grade_id": "ex_tiny_add"',
                                  '"grade": fals, "grade_id": "ex_tiny_add"'),
                     "ex_tiny_add", "not valid JSON", id="invalid-json-metadata"),
        pytest.param(GOOD.replace('"grade_id": "test_tiny_add"', '"grade_id": "ex_tiny_add"'),
                     '"points": 2', "duplicate grade_id 'ex_tiny_add'", id="duplicate-grade-id"),
        pytest.param(GOOD.replace("    ### END SOLUTION\n", ""),
                     "### BEGIN SOLUTION", "never closed", id="unclosed-solution"),
        pytest.param(GOOD.replace("### BEGIN HIDDEN TESTS\n", ""),
                     "### END HIDDEN TESTS", "has no '### BEGIN HIDDEN TESTS'",
                     id="end-without-begin"),
        pytest.param(GOOD.replace("    return a + b\n",
                                  "    ### BEGIN SOLUTION\n    return a + b\n"),
                     "    ### BEGIN SOLUTION\n    return", "nested", id="nested-solution"),
        pytest.param(GOOD.replace("import sys", "### BEGIN SOLUTION\nimport sys\n### END SOLUTION"),
                     "### BEGIN SOLUTION", "not allowed", id="marker-outside-answer-cell"),
        pytest.param(GOOD.replace('"points": 2, ', ""),
                     '"test_tiny_add"', "needs positive 'points'", id="test-without-points"),
        pytest.param(GOOD.replace('"task": false}\ndef add', '"taks": false}\ndef add'),
                     "ex_tiny_add", "unknown keys ['taks']", id="misspelt-key"),
        pytest.param(GOOD.replace('"grade_id": "ex_tiny_add"', '"grade_id": "Ex-Add"'),
                     "Ex-Add", "not snake_case", id="bad-grade-id"),
    ],
)
def test_broken_source_names_file_line_and_problem(tmp_path, broken, needle, message):
    assert broken != GOOD, "the fixture edit did not apply"
    lesson = lesson_from(tmp_path, broken)
    with pytest.raises(SourceError) as caught:
        read_lesson(lesson)
    text = str(caught.value)
    assert message in text
    assert f"{lesson.path}:{line_of(broken, needle)}" in text


def test_source_without_graded_cells_is_rejected(tmp_path):
    lesson = lesson_from(tmp_path, "# %% [markdown]\n# # Title\n\n# %%\nx = 1\n")
    with pytest.raises(SourceError, match="no nbgrader cells"):
        read_lesson(lesson)
