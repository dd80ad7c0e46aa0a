"""The lab's Validate verdict is ``racelab validate``'s, and its dialog says why; lab config."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil

import nbformat
import pytest

from autograder.course.course import make_course
from autograder.grading.validate import NOT_ANSWERED, validate_notebook
from autograder.lab.config import (
    ASSIGNMENT_LIST,
    SELF_STUDY_DISABLED_PLUGINS,
    STUDENT_DISABLED_PLUGINS,
    LabSetup,
    write_config,
)
from autograder.lab.server import RaceLabValidate, dialog_response
from autograder.lab.verdict import CellVerdict, Verdict, grade_notebook
from tests.conftest import REPO

TINY = REPO / "tests" / "grading" / "fixtures" / "99_tiny.py"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nnot really").decode()


def verdict(*tests: CellVerdict, status: str = "graded", notes=()) -> Verdict:
    score = sum(t.score for t in tests)
    top = sum(t.points for t in tests)
    return Verdict("01_warmup", status, score, top, status == "graded" and score == top,
                   list(tests), list(notes))


def test_a_passing_verdict_is_nbgraders_success():
    assert dialog_response(verdict(CellVerdict("test_a", 2, 2, "passed"))) == {
        "success": True, "value": {}}


def test_a_failing_check_shows_its_explanation_and_picture_escaped():
    wrapped = PNG[:8] + "\n" + PNG[8:]  # as nbformat may store it
    failing = CellVerdict("test_b", 0, 3, "failed", "AssertionError: saw <7412> of 8000",
                          [wrapped, "not base64 <script>"], title="Exercise 2: a counter")
    answer = dialog_response(verdict(CellVerdict("test_a", 2, 2, "passed"), failing))
    assert answer["success"] is True
    score, entry = answer["value"]["failed"]
    assert score["source"] == "Score 2/5"
    assert "✓ test_a: 2/2" in score["error"] and "✗ Exercise 2: a counter: 0/3" in score["error"]
    assert entry["source"] == "✗ Exercise 2: a counter: 0 of 3 points"
    assert "AssertionError: saw &lt;7412&gt; of 8000" in entry["error"]
    assert f'src="data:image/png;base64,{PNG}"' in entry["error"]
    assert entry["error"].count("<img") == 1 and "<script>" not in entry["error"]


def test_each_failure_is_explained_once_and_an_unanswered_one_in_one_wording():
    broken = CellVerdict("test_a", 0, 2, "answer cell ex_a raised NameError: name 'x'",
                         "NameError: name 'x' is not defined")
    unanswered = CellVerdict("test_b", 0, 2, "answer cell ex_b raised NotImplementedError: ",
                             "NotImplementedError: ")
    entries = dialog_response(verdict(broken, unanswered))["value"]["failed"]
    assert entries[1]["error"].count("NameError") == 1, "the reason and the error, joined"
    assert NOT_ANSWERED in entries[2]["error"] and "NotImplementedError: <" not in str(entries)


def test_a_broken_answer_cell_is_named_and_a_bad_status_never_passes():
    broken = CellVerdict("test_a", 0, 2, "answer cell ex_a raised NameError: name 'x'",
                         "NameError: name 'x' is not defined")
    answer = dialog_response(verdict(broken, notes=["answer cell ex_a raised NameError"]))
    assert "NameError: name &#x27;x&#x27; is not defined" in answer["value"]["failed"][1]["error"]
    timed_out = verdict(CellVerdict("test_a", 2, 2, "passed"), status="timeout",
                        notes=["answer cell ex_a did not finish"])
    entries = dialog_response(timed_out)["value"]["failed"]
    assert entries[0]["source"] == "Score 2/2 (timeout)"
    assert entries[-1]["source"].startswith("the whole notebook: timeout")
    assert "did not finish" in entries[-1]["error"]


@pytest.mark.slow
def test_the_lab_verdict_is_racelab_validates_verdict(tmp_path, capsys):
    """Same notebook, both ways: the same pass/fail and the same points per test."""
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(TINY, solutions)
    course = make_course(solutions, tmp_path / "course")
    release = course.release_notebook(course.lessons[0])
    for name, body in (("right", "    return a + b"), ("wrong", "    return a - b"),
                       ("broken", "    return undefined_name")):
        notebook = nbformat.read(release, as_version=4)
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex_tiny_add":
                cell.source = f"def add(a, b):\n{body}\n"
        path = tmp_path / name / "99_tiny.ipynb"
        path.parent.mkdir()
        nbformat.write(notebook, path)
        lab = grade_notebook(path, solutions)
        code = validate_notebook(path, solutions)
        printed = capsys.readouterr().out
        assert lab.ok == (code == 0), f"{name}: lab says ok={lab.ok}, racelab validate {code}"
        for test in lab.tests:
            mark = "PASS" if test.passed else "FAIL"
            assert f"{mark}  {test.grade_id}  {test.score:g}/{test.points:g}" in printed
        assert lab.ok == (name == "right")
        if name == "wrong":
            assert lab.tests[0].explanation.startswith("AssertionError")
        if name == "broken":
            assert "NameError" in lab.tests[0].explanation


def test_student_and_instructor_configs(tmp_path):
    student = LabSetup("student", tmp_path / "s", tmp_path / "root", exchange=tmp_path / "x",
                       student="alice")
    write_config(student)
    config = student.config_dir
    server = json.loads((config / "jupyter_server_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions["nbgrader.server_extensions.formgrader"] is False
    assert extensions["nbgrader.server_extensions.validate_assignment"] is False
    assert extensions["nbgrader.server_extensions.assignment_list"] is True
    assert extensions["autograder.lab.server"] is True
    disabled = json.loads((config / "labconfig" / "page_config.json").read_text())
    assert set(disabled["disabledExtensions"]) == set(STUDENT_DISABLED_PLUGINS)
    nbgrader = json.loads((config / "nbgrader_config.json").read_text())
    assert nbgrader["CourseDirectory"] == {"course_id": "racelab", "student_id": "alice"}
    assert nbgrader["Exchange"]["root"] == str((tmp_path / "x").resolve())
    assert student.environment()["JUPYTER_CONFIG_DIR"] == str(config)

    self_study = LabSetup("student", tmp_path / "alone", tmp_path / "root")
    write_config(self_study)
    server = json.loads((self_study.config_dir / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"][
        "nbgrader.server_extensions.assignment_list"] is False, "no exchange: nothing to list"
    disabled = json.loads((self_study.config_dir / "labconfig" / "page_config.json").read_text())
    assert set(disabled["disabledExtensions"]) == {*STUDENT_DISABLED_PLUGINS,
                                                   *SELF_STUDY_DISABLED_PLUGINS}

    teacher = LabSetup("instructor", tmp_path / "i", tmp_path, course=tmp_path / "course")
    write_config(teacher)
    server = json.loads((teacher.config_dir / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"]
    nbgrader = json.loads((teacher.config_dir / "nbgrader_config.json").read_text())
    assert nbgrader["CourseDirectory"]["root"] == str((tmp_path / "course").resolve())


def _workspaces(setup: LabSetup) -> list[dict]:
    return [json.loads(path.read_text())
            for path in sorted((setup.home / "workspaces").glob("*.jupyterlab-workspace"))]


def test_class_mode_opens_on_the_assignments_panel_and_keeps_a_students_own_layout(tmp_path):
    student = LabSetup("student", tmp_path / "s", tmp_path / "root", exchange=tmp_path / "x")
    write_config(student)
    (workspace,) = _workspaces(student)
    assert workspace["metadata"]["id"] == "default"
    dock = workspace["data"]["layout-restorer:data"]["main"]["dock"]
    assert dock["widgets"] == [ASSIGNMENT_LIST] and ASSIGNMENT_LIST in workspace["data"]

    (path,) = (student.home / "workspaces").glob("*.jupyterlab-workspace")
    path.write_text(json.dumps({"data": {"theirs": {}}, "metadata": {"id": "default"}}))
    write_config(student)
    assert _workspaces(student) == [{"data": {"theirs": {}}, "metadata": {"id": "default"}}]

    self_study = LabSetup("student", tmp_path / "alone", tmp_path / "root")
    write_config(self_study)
    assert _workspaces(self_study) == [], "self-study opens on JupyterLab's own default"


def test_validate_names_a_notebook_that_is_no_lesson_and_fails_closed_on_timeout(tmp_path):
    """The server side of the button: the grader runs in a child process, bounded in time."""
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(TINY, solutions)
    stray = tmp_path / "Untitled.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), stray)
    answer = asyncio.run(RaceLabValidate(solutions=str(solutions)).validate(stray))
    assert answer["success"] is False
    assert "Untitled.ipynb is not a lesson of this course" in answer["value"]

    lesson = tmp_path / "99_tiny.ipynb"
    shutil.copy(stray, lesson)
    answer = asyncio.run(RaceLabValidate(solutions=str(solutions), timeout=1).validate(lesson))
    assert answer == {"success": False, "value": answer["value"]}
    assert "did not reach a verdict within 1 s" in answer["value"]


@pytest.mark.slow
def test_the_next_press_of_a_lesson_is_served_by_a_verdict_process_made_ready(tmp_path):
    """After a press, the next verdict process for that lesson waits with its runner started;
    it serves the next press with the verdict a cold press gives, and only one press."""
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(TINY, solutions)
    course = make_course(solutions, tmp_path / "course")
    release = course.release_notebook(course.lessons[0])
    notebooks = {}
    for name, body in (("right", "    return a + b"), ("wrong", "    return a - b")):
        notebook = nbformat.read(release, as_version=4)
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex_tiny_add":
                cell.source = f"def add(a, b):\n{body}\n"
        notebooks[name] = tmp_path / name / "99_tiny.ipynb"
        notebooks[name].parent.mkdir()
        nbformat.write(notebook, notebooks[name])

    async def presses():
        validate = RaceLabValidate(solutions=str(solutions))
        cold = await validate.validate(notebooks["wrong"])
        lesson, ready = validate._ready
        assert lesson == "99_tiny" and ready.returncode is None
        served = await validate.validate(notebooks["wrong"])
        assert ready.returncode == 1, "the ready process graded the press (1: not passed)"
        assert validate._ready[1] is not ready, "a new one waits for the next press"
        right = await validate.validate(notebooks["right"])
        last = validate._ready[1]
        await validate._make_ready("Untitled")  # no lesson: nothing is kept ready
        assert validate._ready is None and last.returncode is not None
        unready = RaceLabValidate(solutions=str(solutions), keep_ready=False)
        assert await unready.validate(notebooks["right"]) == right
        assert unready._ready is None
        return cold, served, right

    cold, served, right = asyncio.run(presses())
    assert served == cold and cold["success"] is True and cold["value"]["failed"]
    assert right == {"success": True, "value": {}}


def test_instructor_lab_creates_the_exchange_it_points_at(tmp_path):
    from autograder.lab.__main__ import main

    exchange = tmp_path / "exchange"
    assert main(["instructor", "--exchange", str(exchange), "--home", str(tmp_path / "home"),
                 "--print-config"]) == 0
    assert exchange.is_dir() and exchange.stat().st_mode & 0o777 == 0o777
