"""Grading a class: one sandboxed job per notebook, statuses, feedback, gradebook, resume.

The class is graded once per module (two workers) on a tiny lesson without TensorFlow; each
test then checks one student's row, so every hostile notebook is proven to get its own status
while the others keep theirs.
"""

import csv
import json
import os
import re
import signal
from pathlib import Path

import nbformat
import pytest

from autograder.course.answers import fill_answers, read_answers
from autograder.grading import grade as grade_module
from autograder.grading.demo import make_submissions
from autograder.grading.grade import grade_submissions
from autograder.grading.spec import Limits
from tests.conftest import one_lesson_course

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = "def add(a, b):\n    return b + a"
LIMITS = Limits(cell_timeout_s=30, memory_mb=800, job_timeout_s=240)

# Each answer cell is the student's whole cell for ex_tiny_add.
ANSWERS = {
    "good": GOOD,
    "wrong": "def add(a, b):\n    return a - b",
    "deadlock": GOOD + "\nimport threading\nlock = threading.Lock()\nlock.acquire()\n"
    "lock.acquire()",
    "exits": GOOD + "\nimport os\nos._exit(3)",
    "raises": GOOD + "\nraise RuntimeError('oops')",
    "hog": GOOD + "\nhog = bytearray(1500 * 2**20)\nimport time\ntime.sleep(5)",
    "chatty": GOOD + "\nfor i in range(100_000):\n    print(i)",
}


def hostile_answer(secrets: list[str], outside: str) -> str:
    """An answer that is correct only when every forbidden read fails; it also tries a write."""
    return GOOD + f"""
import os
leaks = []
for path in {secrets!r} + ['../../../gradebook.db', '../../../../gradebook.db']:
    try:
        with open(path, 'rb') as handle:
            handle.read(1)
        leaks.append('read ' + path)
    except OSError:
        pass
for path in {secrets!r}:
    if os.path.isdir(os.path.dirname(path)) and os.listdir(os.path.dirname(path)):
        leaks.append('listed ' + os.path.dirname(path))
try:  # lands, if anywhere, on the sandbox's private /tmp: the test checks the real disk
    with open({outside!r}, 'w') as handle:
        handle.write('escaped')
except OSError:
    pass
with open('mine.txt', 'w') as handle:
    handle.write('own folder is writable')
if leaks:
    def add(a, b):
        raise AssertionError('sandbox leaked: ' + ', '.join(leaks))
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    course = one_lesson_course(FIXTURES / "99_tiny.py", root)
    solutions = root / "solutions"
    release = course.release_notebook(course.lessons[0])
    submitted = root / "submitted"
    for student, answer in ANSWERS.items():
        fill_answers(release, {"ex_tiny_add": answer},
                     submitted / student / "99_tiny" / "99_tiny.ipynb")
    secrets = [str((solutions / "99_tiny.py").resolve()),
               str((submitted / "good" / "99_tiny" / "99_tiny.ipynb").resolve())]
    fill_answers(release, {"ex_tiny_add": hostile_answer(secrets, str(root / "escaped.txt"))},
                 submitted / "hostile" / "99_tiny" / "99_tiny.ipynb")
    invalid = submitted / "invalid" / "99_tiny" / "99_tiny.ipynb"
    invalid.parent.mkdir(parents=True)
    invalid.write_text('{"cells": [')
    notebook = nbformat.read(release, as_version=4)
    for cell in notebook.cells:
        if cell.id == "ex_tiny_add":
            cell.source = GOOD
        if cell.id == "test_tiny_add":
            cell.source = "pass  # edited to always pass"
    edited = submitted / "edited" / "99_tiny" / "99_tiny.ipynb"
    edited.parent.mkdir(parents=True)
    nbformat.write(notebook, edited)
    notebook.cells = [c for c in notebook.cells if c.id != "test_tiny_add"]
    deleted = submitted / "deleted" / "99_tiny" / "99_tiny.ipynb"
    deleted.parent.mkdir(parents=True)
    nbformat.write(notebook, deleted)
    (submitted / "absent").mkdir()
    out = root / "out"
    rows = grade_submissions(submitted, course, out, workers=2, limits=LIMITS, progress=False)
    return {"rows": {r.student: r for r in rows}, "out": out, "root": root, "course": course,
            "submitted": submitted, "solutions": solutions}


def row(graded, student):
    r = graded["rows"][student]
    return r.status, r.score


def test_correct_answer_gets_full_marks(graded):
    assert row(graded, "good") == ("graded", 2)
    assert graded["rows"]["good"].detail == "test_tiny_add=2/2"


def test_wrong_and_unanswered_score_zero(graded):
    assert row(graded, "wrong") == ("graded", 0)


def test_deadlocked_answer_cell_times_out_and_scores_zero_though_tests_pass(graded):
    status, score = row(graded, "deadlock")
    assert (status, score) == ("timeout", 0)
    assert "ex_tiny_add did not finish" in graded["rows"]["deadlock"].detail


def test_answer_cell_that_raises_scores_zero_and_names_the_error(graded):
    assert row(graded, "raises") == ("graded", 0)
    result = json.loads((graded["out"] / "jobs/raises/99_tiny.done.json").read_text())
    assert any("RuntimeError: oops" in note for note in result["result"]["notes"])


def test_os_exit_kills_only_its_own_notebook(graded):
    assert row(graded, "exits") == ("kernel-died", 0)
    assert row(graded, "good") == ("graded", 2)


def test_memory_hog_is_killed_at_the_cap(graded):
    status, score = row(graded, "hog")
    assert (status, score) == ("kernel-died", 0)
    assert "800 MB cap" in graded["rows"]["hog"].detail


def test_flood_of_output_is_capped_and_still_graded(graded):
    assert row(graded, "chatty") == ("graded", 2)
    result = json.loads((graded["out"] / "jobs/chatty/99_tiny/result.json").read_text())
    assert result["status"] == "graded"


def test_invalid_json_gets_its_own_status(graded):
    status, score = row(graded, "invalid")
    assert (status, score) == ("invalid-notebook", 0)
    assert "not a valid notebook" in graded["rows"]["invalid"].detail


def test_edited_test_cell_is_restored_and_reported(graded):
    status, score = row(graded, "edited")
    assert (status, score) == ("tampered", 2), "restored tests ran and the answer is right"
    assert "test_tiny_add" in graded["rows"]["edited"].detail


def test_deleted_grade_cell_is_reported_and_scores_zero(graded):
    assert row(graded, "deleted") == ("missing-cells", 0)
    assert "deleted" in graded["rows"]["deleted"].detail


def test_missing_submission_is_not_submitted(graded):
    assert row(graded, "absent") == ("not-submitted", 0)


def test_sandbox_blocks_reading_solutions_gradebook_and_other_students(graded):
    assert row(graded, "hostile") == ("graded", 2), graded["rows"]["hostile"].detail
    assert not (graded["root"] / "escaped.txt").exists()
    assert not list(graded["root"].rglob("mine.txt")), "nothing the sandbox writes reaches the host"


def page_text(path: Path) -> str:
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(), "html.parser").get_text()


def test_feedback_hides_hidden_tests_and_shows_grader_notes(graded):
    good = page_text(graded["out"] / "feedback/good/99_tiny/99_tiny.html")
    assert "add(1, 2) == 3" in good
    assert "add(2, 2)" not in good and "HIDDEN" not in good
    deadlock = page_text(graded["out"] / "feedback/deadlock/99_tiny/99_tiny.html")
    assert "did not finish within the time limit" in deadlock


def test_feedback_opens_offline_and_wraps_long_lines(graded):
    html = (graded["out"] / "feedback/good/99_tiny/99_tiny.html").read_text(encoding="utf-8")
    assert not re.search(r"""\b(src|href)=["']https?://""", html), "fetches from the internet"
    assert "pre-wrap" in html


def test_grades_csv_has_a_row_per_student_with_status(graded):
    with (graded["out"] / "grades.csv").open() as handle:
        table = {r["student"]: r for r in csv.DictReader(handle)}
    assert set(table) == set(graded["rows"])
    assert table["good"] == {"student": "good", "assignment": "99_tiny", "score": "2",
                             "max_score": "2", "status": "graded", "detail": "test_tiny_add=2/2"}


def test_gradebook_records_the_scores(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded['out'] / 'gradebook.db'}") as gb:
        assert gb.find_submission("99_tiny", "good").score == 2
        assert gb.find_submission("99_tiny", "deadlock").score == 0


def test_rerun_grades_only_what_is_missing_or_changed(graded, monkeypatch):
    calls = []
    real = grade_module.run_in_process
    monkeypatch.setattr(grade_module, "run_in_process",
                        lambda job: calls.append(job.student) or real(job))
    (graded["out"] / "jobs/wrong/99_tiny.done.json").unlink()  # an interrupted job
    release = graded["course"].release_notebook(graded["course"].lessons[0])
    fill_answers(release, {"ex_tiny_add": GOOD},
                 graded["submitted"] / "raises" / "99_tiny" / "99_tiny.ipynb")  # resubmitted
    rows = grade_submissions(graded["submitted"], graded["course"], graded["out"], workers=2,
                             limits=LIMITS, progress=False)
    assert sorted(calls) == ["raises", "wrong"]
    by_student = {r.student: r for r in rows}
    assert (by_student["raises"].status, by_student["raises"].score) == ("graded", 2)
    assert len(rows) == len(graded["rows"])
    with (graded["out"] / "grades.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == len(rows)


def job_of(graded, student: str, out: Path, limits: Limits = LIMITS):
    """The job that grades ``student``'s notebook of the graded class, planned into ``out``."""
    jobs = grade_module.plan_jobs(graded["submitted"], graded["course"], out, limits)
    return next(job for job in jobs if job.student == student)


@pytest.mark.parametrize("student", ["good", "raises", "hostile"])
def test_a_job_forked_by_the_job_server_grades_as_a_new_interpreter_does(graded, tmp_path,
                                                                          student):
    forked = grade_module.run_in_process(job_of(graded, student, tmp_path / "forked"))
    new = grade_module.run_in_interpreter(job_of(graded, student, tmp_path / "new"))
    assert (forked.status, forked.score, forked.cells, forked.notes) == (
        new.status, new.score, new.cells, new.notes)
    assert forked.status == graded["rows"][student].status


def test_a_forked_job_over_its_time_is_killed_and_reported_ended(tmp_path):
    """A job whose spec is a FIFO blocks opening it for good: the server's fork is killed at
    the timeout, and nothing reads the FIFO afterwards."""
    spec = tmp_path / "stuck.job.json"
    os.mkfifo(spec)
    assert grade_module.job_server().run(spec, tmp_path / "stuck.log", timeout=2) is None
    with pytest.raises(OSError, match="No such device"):  # ENXIO: no reader left
        os.close(os.open(spec, os.O_WRONLY | os.O_NONBLOCK))


def test_jobs_run_in_a_new_interpreter_when_the_job_server_is_gone(graded, tmp_path):
    server = grade_module.job_server()
    os.kill(server._process.pid, signal.SIGKILL)
    server._process.wait()
    result = grade_module.run_in_process(job_of(graded, "good", tmp_path))
    assert (result.status, result.score) == ("graded", 2)
    assert grade_module.job_server() is not server
    assert not grade_module.job_server().lost


@pytest.mark.parametrize("course", [False, True], ids=["new-course", "with-course"])
def test_same_cli_grade_twice_grades_nothing_the_second_time(graded, tmp_path, monkeypatch,
                                                             course):
    """Without ``--course`` each run rebuilds OUT/course (its gradebook gets new random row ids);
    with it, the first run records grades in the course's gradebook. Neither changes a grade."""
    from autograder.cli import main

    release = graded["course"].release_notebook(graded["course"].lessons[0])
    for student in ("good", "wrong"):
        fill_answers(release, {"ex_tiny_add": ANSWERS[student]},
                     tmp_path / "submitted" / student / "99_tiny" / "99_tiny.ipynb")
    calls = []
    real = grade_module.run_in_process
    monkeypatch.setattr(grade_module, "run_in_process",
                        lambda job: calls.append(job.student) or real(job))
    argv = ["grade", str(tmp_path / "submitted"), "--out", str(tmp_path / "out"),
            "--solutions", str(graded["solutions"]), "--workers", "2", "--cell-timeout", "30",
            "--memory-mb", "800", *(["--course", str(tmp_path / "course")] if course else [])]
    assert main(argv) == 0
    assert sorted(calls) == ["good", "wrong"]
    first = (tmp_path / "out" / "grades.csv").read_bytes()
    assert main(argv) == 0
    assert sorted(calls) == ["good", "wrong"], "the second run graded again"
    assert (tmp_path / "out" / "grades.csv").read_bytes() == first


def test_read_answers_splits_cells_by_grade_id(tmp_path):
    (tmp_path / "a.py").write_text("# a comment\n# %% ex_one\nx = 1\n\n# %% ex_two\ny = 2\n")
    assert read_answers(tmp_path / "a.py").answers == {"ex_one": "x = 1", "ex_two": "y = 2"}


def test_read_answers_reads_base_edits_and_deletions(tmp_path):
    (tmp_path / "a.py").write_text("# base: correct\n# %% edit test_one\npass\n"
                                   "# %% delete test_two\n# %% ex_three\nz = 3\n")
    found = read_answers(tmp_path / "a.py")
    assert (found.base, found.edits, found.deletions, found.answers) == (
        "correct", {"test_one": "pass"}, ["test_two"], {"ex_three": "z = 3"})


def test_read_answers_rejects_code_before_any_header(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n# %% ex_one\n")
    with pytest.raises(ValueError, match="before the first"):
        read_answers(tmp_path / "a.py")


def test_fill_answers_refuses_unknown_grade_id(graded, tmp_path):
    release = graded["course"].release_notebook(graded["course"].lessons[0])
    with pytest.raises(KeyError, match="ex_nope"):
        fill_answers(release, {"ex_nope": "pass"}, tmp_path / "x.ipynb")


def test_demo_layout_fills_answers_and_submits_unfilled_when_absent(graded, tmp_path):
    demo = tmp_path / "demo"
    (demo / "good").mkdir(parents=True)
    (demo / "good/99_tiny.py").write_text(f"# %% ex_tiny_add\n{GOOD}\n")
    (demo / "empty").mkdir()
    (demo / "cheat").mkdir()
    (demo / "cheat/99_tiny.py").write_text("# base: good\n# %% edit test_tiny_add\npass\n")
    (demo / "quitter").mkdir()
    (demo / "quitter/99_tiny.py").write_text("# base: good\n# %% delete test_tiny_add\n")
    (demo / "elsewhere").mkdir()
    (demo / "elsewhere/ONLY").write_text("01_other\n")
    make_submissions(demo, graded["course"], tmp_path / "submitted")

    def cells(student):
        path = tmp_path / f"submitted/{student}/99_tiny/99_tiny.ipynb"
        return {c.id: c.source for c in nbformat.read(path, as_version=4).cells}

    assert cells("good")["ex_tiny_add"] == GOOD
    assert "NotImplementedError" in cells("empty")["ex_tiny_add"]
    assert (cells("cheat")["ex_tiny_add"], cells("cheat")["test_tiny_add"]) == (GOOD, "pass")
    assert cells("quitter")["ex_tiny_add"] == GOOD and "test_tiny_add" not in cells("quitter")
    assert not (tmp_path / "submitted/elsewhere/99_tiny").exists()


def test_feedback_summary_names_each_test_by_its_exercise_title(graded):
    html = (graded["out"] / "feedback/good/99_tiny/99_tiny.html").read_text(encoding="utf-8")
    assert '">Test cell</a>' not in html
    assert '<a href="#test_tiny_add">Tiny lesson</a>' in html
