"""The attack corpus, graded once as one class beside an honest student.

Every attack must end with its own status and at most the points its honest part earns, and
nothing outside its own job may change: the lesson sources, the course and its gradebook, every
other student's submission, and the output folder's layout. The honest student graded in the
same run keeps full marks.
"""

import hashlib
import os
import socket
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from autograder.course.answers import fill_answers
from autograder.grading.grade import grade_submissions
from autograder.grading.spec import Limits
from tests.conftest import one_lesson_course
from tests.security.attacks import ATTACKS, PROBES, RACY, SOLUTION

pytestmark = pytest.mark.timeout(1800)

FIXTURES = Path(__file__).parent / "fixtures"
LESSON = "97_guarded"
ADD = "def add(a, b):\n    return a + b"
LIMITS = Limits(cell_timeout_s=20, memory_mb=1200, job_timeout_s=300)
HONEST_SCORE = 2.0  # the add exercise, answered correctly by every attack


def digest_tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its SHA-256 (symlinks by their target)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = "link:" + str(path.readlink())
        elif path.is_file():
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def answer(attack: str) -> str:
    return f"SOLUTION = {SOLUTION!r}\n{RACY}\n{attack}\n"


class Listener:
    """A TCP server on the host's loopback that records every connection it accepts."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self.server.settimeout(0.5)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.server.close()


def edit_notebook(release: Path, target: Path, change) -> None:
    notebook = nbformat.read(release, as_version=4)
    for cell in notebook.cells:
        if cell.id == "ex_guarded_add":
            cell.source = ADD
        if cell.id == "ex_guarded_counter":
            cell.source = RACY
    change(notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def cell(notebook, grade_id):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == grade_id)


def retype_test(notebook):
    cell(notebook, "test_guarded_counter").cell_type = "markdown"
    notebook.cells = [nbformat.v4.new_markdown_cell(c.source, metadata=c.metadata, id=c.id)
                      if c.cell_type == "markdown" else c for c in notebook.cells]


def duplicate_answer(notebook):
    twin = nbformat.v4.new_code_cell(SOLUTION, metadata=dict(cell(notebook,
                                                                  "ex_guarded_counter").metadata))
    notebook.cells.insert(notebook.cells.index(cell(notebook, "test_guarded_counter")), twin)


def raise_points(notebook):
    cell(notebook, "test_guarded_counter").metadata["nbgrader"]["points"] = 300


def gut_test(notebook):
    cell(notebook, "test_guarded_counter").source = "pass"


def fake_graded_cell(notebook):
    fake = nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "solution": False, "grade_id": "bonus", "points": 50, "locked": True,
        "schema_version": 3, "task": False}})
    notebook.cells.append(fake)


def garble_grading_metadata(notebook):
    cell(notebook, "test_guarded_counter").metadata["nbgrader"] = "points: 300"


METADATA = {
    "meta_grading_metadata_unreadable": (garble_grading_metadata, ("tampered",)),
    "meta_test_cell_made_markdown": (retype_test, ("missing-cells", "tampered")),
    "meta_duplicated_answer_cell": (duplicate_answer, ("tampered",)),
    "meta_points_raised": (raise_points, ("tampered",)),
    "meta_test_cell_gutted": (gut_test, ("tampered",)),
    "meta_fake_graded_cell": (fake_graded_cell, ("tampered",)),
}


#: Submissions that are not notebook files; the grader, often root, reads them on the host.
FILES = {
    "file_link_to_another_students_notebook": lambda target, honest: target.symlink_to(honest),
    "file_link_to_etc_shadow": lambda target, honest: target.symlink_to("/etc/shadow"),
    "file_fifo": lambda target, honest: os.mkfifo(target),
    "file_folder": lambda target, honest: target.mkdir(),
    "file_not_json": lambda target, honest: target.write_text("root:x:0:0:secret"),
}


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacked")
    course = one_lesson_course(FIXTURES / f"{LESSON}.py", root)
    solutions = root / "solutions"
    release = course.release_notebook(course.lessons[0])
    submitted = root / "submitted"
    honest = submitted / "honest" / LESSON / f"{LESSON}.ipynb"
    fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": SOLUTION}, honest)
    fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": RACY},
                 submitted / "racy" / LESSON / f"{LESSON}.ipynb")
    for name, (source, _) in ATTACKS.items():
        fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": answer(source)},
                     submitted / name / LESSON / f"{LESSON}.ipynb")
    for name, (change, _) in METADATA.items():
        edit_notebook(release, submitted / name / LESSON / f"{LESSON}.ipynb", change)
    for name, make in FILES.items():
        target = submitted / name / LESSON / f"{LESSON}.ipynb"
        target.parent.mkdir(parents=True)
        make(target, honest)
    listener = Listener()
    secret = root / "secret.txt"
    secret.write_text("instructor only")
    probe = PROBES.replace("PATHS", repr([
        str(secret), str((solutions / f"{LESSON}.py").resolve()),
        str((course.root / "gradebook.db").resolve()), str(honest.resolve()), "/etc/shadow",
        str((course.root / "source" / LESSON / f"{LESSON}.ipynb").resolve())]))
    probe = probe.replace("WRITES", repr([str(honest.resolve()), str(secret)]))
    probe = probe.replace("ADDRESSES", repr([("127.0.0.1", listener.port)]))
    fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": answer(probe)},
                 submitted / "probe" / LESSON / f"{LESSON}.ipynb")
    before = {"solutions": digest_tree(solutions), "course": digest_tree(course.root),
              "submitted": digest_tree(submitted), "secret": digest_tree(root / "secret.txt")}
    out = root / "out"
    try:
        rows = grade_submissions(submitted, course, out, workers=2, limits=LIMITS,
                                 progress=False)
    finally:
        listener.close()
    after = {"solutions": digest_tree(solutions), "course": digest_tree(course.root),
             "submitted": digest_tree(submitted), "secret": digest_tree(root / "secret.txt")}
    return {"rows": {r.student: r for r in rows}, "before": before, "after": after,
            "out": out, "root": root, "listener": listener}


def test_honest_student_keeps_full_marks(attacked):
    r = attacked["rows"]["honest"]
    assert (r.status, r.score, r.max_score) == ("graded", 5, 5), r.detail


def test_racy_baseline_scores_only_the_add_exercise(attacked):
    r = attacked["rows"]["racy"]
    assert (r.status, r.score) == ("graded", HONEST_SCORE), r.detail


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_gets_its_status_and_no_points_it_did_not_earn(attacked, name):
    r = attacked["rows"][name]
    assert r.status in ATTACKS[name][1], r.detail
    assert r.score <= HONEST_SCORE, r.detail
    assert "test_guarded_counter=0/3" in r.detail, r.detail


@pytest.mark.parametrize("name", sorted(METADATA))
def test_metadata_attack_is_reported_never_as_a_crash(attacked, name):
    r = attacked["rows"][name]
    assert r.status in METADATA[name][1], r.detail
    assert r.score <= HONEST_SCORE and r.max_score == 5, r.detail


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_submission_that_is_no_notebook_file_is_invalid_and_shows_nothing_of_its_target(
        attacked, name):
    r = attacked["rows"][name]
    assert (r.status, r.score) == ("invalid-notebook", 0), r.detail
    assert "secret" not in r.detail and "root:" not in r.detail, r.detail


def test_probe_reaches_no_file_socket_or_interface_outside_its_sandbox(attacked):
    r = attacked["rows"]["probe"]
    assert r.score <= HONEST_SCORE, r.detail
    assert attacked["listener"].accepted == 0


def test_nothing_outside_the_jobs_changed(attacked):
    assert attacked["after"] == attacked["before"]
    assert sorted(p.name for p in attacked["root"].iterdir()) == sorted(
        ["solutions", "course", "submitted", "out", "secret.txt"])
    assert sorted(p.name for p in attacked["out"].iterdir()) == sorted(
        ["grades.csv", "gradebook.db", "feedback", "jobs"])


def test_feedback_shows_no_hidden_test_grader_frame_or_host_path(attacked):
    pages = list((attacked["out"] / "feedback").rglob("*.html"))
    assert len(pages) >= len(ATTACKS)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "HIDDEN-MARKER" not in text and "add(20, 22)" not in text, page
        assert "BEGIN HIDDEN TESTS" not in text, page
        assert "autograder/kernel" not in text and "runner.py" not in text, page
        assert sys.prefix not in text, page
