"""One grading job: a pure function of its inputs whose every output lands in its own folder."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course.answers import fill_answers
from autograder.grading.job import executed_path, run_job
from autograder.grading.spec import Job, JobFolder, Limits, Status
from tests.conftest import one_lesson_course

FIXTURES = Path(__file__).parent / "fixtures"
LESSON = "99_tiny"
LIMITS = Limits(cell_timeout_s=30, memory_mb=800, job_timeout_s=120)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return one_lesson_course(FIXTURES / f"{LESSON}.py", tmp_path_factory.mktemp("job"))


def job_for(course, tmp_path: Path, answer: str | None, student: str = "ada") -> Job:
    release = course.release_notebook(course.lessons[0])
    submission = tmp_path / "submitted" / f"{LESSON}.ipynb"
    if answer is None:
        submission.parent.mkdir(parents=True)
        submission.write_text('{"cells": [', encoding="utf-8")
    else:
        fill_answers(release, {"ex_tiny_add": answer}, submission)
    return Job(student, LESSON, str(submission), str(release), str(course.root),
               str(tmp_path / "job"), limits=LIMITS)


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_an_unreadable_notebook_scores_zero_without_running_anything(course, tmp_path):
    job = job_for(course, tmp_path, None)
    result = run_job(job)
    assert result.status == Status.INVALID_NOTEBOOK.value
    assert result.cells == {"test_tiny_add": [0.0, 2, "notebook unreadable"]}
    assert result.signatures["test_tiny_add"]["kind"] == Status.INVALID_NOTEBOOK.value
    assert json.loads(JobFolder(Path(job.workdir)).result.read_text())["score"] == 0.0


def test_a_right_answer_is_graded_and_every_output_is_inside_the_job_folder(course, tmp_path):
    outside = files_under(course.root)
    job = job_for(course, tmp_path, "def add(a, b):\n    return a + b")
    result = run_job(job)
    assert (result.status, result.score, result.max_score) == (Status.GRADED.value, 2.0, 2.0)
    assert executed_path(job, LESSON).exists()
    assert JobFolder(Path(job.workdir)).feedback.exists()
    assert files_under(course.root) == outside, "the job wrote into the shared course"


def test_the_command_line_job_writes_the_same_result_as_the_function(course, tmp_path):
    job = job_for(course, tmp_path, "def add(a, b):\n    return a - b")
    spec = tmp_path / "job.json"
    spec.write_text(job.to_json(), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "autograder.grading.job", str(spec)],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    written = json.loads(JobFolder(Path(job.workdir)).result.read_text())
    assert (written["status"], written["score"]) == (Status.GRADED.value, 0.0)
    assert written["cells"]["test_tiny_add"][0] == 0.0


def test_a_thread_of_the_answer_that_raises_is_no_tampering(course, tmp_path):
    """An uncaught exception in a thread the answer started is printed by threading's own
    excepthook, whose C traceback printer compiles each frame's source line under that
    library file's name: the kernel's audit once read that as forging library code, and an
    honest (if racy) answer was reported tampered."""
    answer = ("import threading\n\n"
              "def add(a, b):\n"
              "    thread = threading.Thread(target=lambda: {}['missing'])\n"
              "    thread.start()\n"
              "    thread.join()\n"
              "    return a + b")
    result = run_job(job_for(course, tmp_path, answer))
    assert (result.status, result.score) == (Status.GRADED.value, 2.0), result.notes
