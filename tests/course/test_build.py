"""`racelab build` generates student notebooks with nbgrader, and `--check` catches drift."""

import json
import shutil
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.course.build import build, stale_notebooks

FIXTURES = Path(__file__).parent.parent / "grading" / "fixtures"


@pytest.fixture()
def solutions(tmp_path: Path) -> Path:
    folder = tmp_path / "solutions"
    folder.mkdir()
    shutil.copy(FIXTURES / "99_tiny.py", folder)
    return folder


def test_build_writes_student_notebook_without_solution_or_hidden_tests(solutions, tmp_path):
    notebooks = tmp_path / "notebooks"
    build(solutions, notebooks, tmp_path / "course")
    text = (notebooks / "99_tiny.ipynb").read_text()
    cells = {c["id"]: "".join(c["source"]) for c in json.loads(text)["cells"]}
    assert "raise NotImplementedError()" in cells["ex_tiny_add"]
    assert "return a + b" not in text
    assert "assert add(1, 2) == 3" in cells["test_tiny_add"]
    assert "HIDDEN" not in text and "add(2, 2)" not in text
    assert all(not c.get("outputs") for c in json.loads(text)["cells"])


def test_build_is_byte_for_byte_reproducible(solutions, tmp_path):
    build(solutions, tmp_path / "a", tmp_path / "course-a")
    build(solutions, tmp_path / "b", tmp_path / "course-b")
    first, second = tmp_path / "a/99_tiny.ipynb", tmp_path / "b/99_tiny.ipynb"
    assert first.read_bytes() == second.read_bytes()


def test_check_passes_after_build_and_names_a_changed_source(solutions, tmp_path):
    notebooks = tmp_path / "notebooks"
    build(solutions, notebooks, tmp_path / "course")
    assert stale_notebooks(solutions, notebooks) == []
    source = solutions / "99_tiny.py"
    source.write_text(source.read_text().replace("# # Tiny lesson", "# # Tiny lesson, edited"))
    problems = stale_notebooks(solutions, notebooks)
    assert len(problems) == 1 and "99_tiny.ipynb" in problems[0] and "differs" in problems[0]


def test_notebooks_carry_the_kernels_language_info_so_jupyterlab_opens_them_unmodified(
        solutions, tmp_path):
    from ipykernel.ipkernel import IPythonKernel

    notebooks = tmp_path / "notebooks"
    build(solutions, notebooks, tmp_path / "course")
    path = notebooks / "99_tiny.ipynb"
    content = json.loads(path.read_text())
    assert content["metadata"]["language_info"] == IPythonKernel.language_info
    content["metadata"]["language_info"]["version"] = "3.12.9"  # built on another Python
    path.write_text(json.dumps(content, indent=1))
    assert stale_notebooks(solutions, notebooks) == []


def test_check_names_missing_and_orphaned_notebooks(solutions, tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "98_gone.ipynb").write_text("{}")
    problems = "\n".join(stale_notebooks(solutions, notebooks))
    assert "99_tiny.ipynb: missing" in problems
    assert "98_gone.ipynb: has no source" in problems


def test_build_removes_notebooks_whose_source_is_gone(solutions, tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "98_gone.ipynb").write_text("{}")
    build(solutions, notebooks, tmp_path / "course")
    assert sorted(p.name for p in notebooks.iterdir()) == ["99_tiny.ipynb"]


def test_cli_check_exit_codes(solutions, tmp_path, capsys):
    args = ["--solutions", str(solutions), "--notebooks", str(tmp_path / "nb"),
            "--course", str(tmp_path / "course")]
    assert main(["build", "--check", *args]) == 1
    assert "99_tiny.ipynb: missing" in capsys.readouterr().err
    assert main(["build", *args]) == 0
    assert main(["build", "--check", *args]) == 0


def test_cli_reports_broken_source_with_exit_2(solutions, tmp_path, capsys):
    source = solutions / "99_tiny.py"
    source.write_text(source.read_text().replace('"grade_id": "test_tiny_add"',
                                                 '"grade_id": "ex_tiny_add"'))
    args = ["--solutions", str(solutions), "--notebooks", str(tmp_path / "nb"),
            "--course", str(tmp_path / "course")]
    assert main(["build", *args]) == 2
    err = capsys.readouterr().err
    assert "duplicate grade_id 'ex_tiny_add'" in err and "99_tiny.py:" in err
    assert not (tmp_path / "nb").exists()


def test_a_lessons_course_is_built_once_and_copied_until_its_source_changes(solutions, tmp_path):
    """Validate builds the lesson's course each time it runs (seconds of nbgrader): the course
    is kept under a digest of the lesson source and the pipeline's code, and copied, with its
    configuration pointing at the copy, until the source changes."""
    from autograder.course.course import lesson_course, make_course

    cache = tmp_path / "cache"
    built = make_course(solutions, tmp_path / "plain", only="99_tiny")
    first = lesson_course(solutions, "99_tiny", tmp_path / "first", cache=cache)
    second = lesson_course(solutions, "99_tiny", tmp_path / "second", cache=cache)
    [kept] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    for course in (first, second):
        lesson = course.lessons[0]
        assert course.release_notebook(lesson).read_bytes() == \
            built.release_notebook(built.lessons[0]).read_bytes()
        assert course.db_url in (course.root / "nbgrader_config.py").read_text()
        with course.api().gradebook as gb:
            assert [c.name for c in gb.find_notebook("99_tiny", "99_tiny").grade_cells]
    source = solutions / "99_tiny.py"
    source.write_text(source.read_text().replace("return a + b", "return b + a"))
    lesson_course(solutions, "99_tiny", tmp_path / "third", cache=cache)
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 2
    assert kept.exists()
