"""The instructor's loop through nbgrader's exchange: release, a student's fetch and submit,
collect, grade into the course (as Formgrader shows it), release feedback, the student's fetch
of that feedback."""

import re
import shutil
from pathlib import Path

from autograder.course.course import make_course, nbgrader_environment
from autograder.course.exchange import collect, release, release_feedback
from autograder.grading.grade import grade_submissions
from autograder.grading.spec import Limits

FIXTURES = Path(__file__).parent.parent / "grading" / "fixtures"


def student_api(home: Path, exchange: Path, cache: Path):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    cfg = Config()
    cfg.CourseDirectory.root = str(home)
    cfg.CourseDirectory.course_id = "racelab"
    cfg.Exchange.root = str(exchange)
    cfg.Exchange.path_includes_course = False
    cfg.Exchange.cache = str(cache)
    return NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)


def test_released_lesson_fetched_submitted_collected_graded_and_its_feedback_fetched(
        tmp_path, monkeypatch):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(FIXTURES / "99_tiny.py", solutions)
    course = make_course(solutions, tmp_path / "course")
    exchange = tmp_path / "exchange"
    assert release(course, exchange) == ["99_tiny"]
    assert (exchange / "racelab/outbound/99_tiny/99_tiny.ipynb").exists()

    home = tmp_path / "student"
    home.mkdir()
    monkeypatch.chdir(home)
    from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeSubmit

    with nbgrader_environment():
        api = student_api(home, exchange, tmp_path / "cache")
        fetch = ExchangeFetchAssignment(coursedir=api.coursedir, authenticator=api.authenticator,
                                        config=api.config)
        fetch.coursedir.assignment_id = "99_tiny"
        fetch.start()
        fetched = home / "99_tiny" / "99_tiny.ipynb"
        text = fetched.read_text().replace(
            "    # YOUR CODE HERE\\n",
            "").replace("    raise NotImplementedError()", "    return a + b")
        fetched.write_text(text)
        submit = ExchangeSubmit(coursedir=api.coursedir, authenticator=api.authenticator,
                                config=api.config)
        submit.start()

    submitted = collect(course, exchange)
    students = [p.name for p in submitted.iterdir()]
    assert len(students) == 1
    rows = grade_submissions(submitted, course, tmp_path / "out", workers=1,
                             limits=Limits(cell_timeout_s=30), progress=False,
                             record_in_course=True)
    assert [(r.assignment, r.score, r.max_score, r.status) for r in rows] == [
        ("99_tiny", 2, 2, "graded")]

    student = students[0]
    from nbgrader.api import Gradebook

    with nbgrader_environment(), Gradebook(course.db_url) as gb:  # what Formgrader reads
        [known] = gb.students
        assert (known.id, known.last_name) == (student, student)
        assert gb.find_submission("99_tiny", student).score == 2
    with nbgrader_environment():  # Formgrader's own view: graded only when the times match
        [shown] = course.api().get_submissions("99_tiny")
    assert (shown["student"], shown["autograded"], shown["score"], shown["max_score"]) == (
        student, True, 2.0, 2.0), shown
    assert (course.root / "autograded" / student / "99_tiny" / "99_tiny.ipynb").exists()
    assert (course.root / "feedback" / student / "99_tiny" / "99_tiny.html").exists()

    assert release_feedback(course, exchange) == ["99_tiny"]
    from nbgrader.exchange.default import ExchangeFetchFeedback

    with nbgrader_environment():
        fetch = ExchangeFetchFeedback(coursedir=api.coursedir, authenticator=api.authenticator,
                                      config=api.config)
        fetch.coursedir.assignment_id = "99_tiny"
        fetch.start()
    fetched_feedback = list((home / "99_tiny" / "feedback").rglob("99_tiny.html"))
    assert fetched_feedback, "Fetch Feedback found nothing"
    page = re.sub(r"<[^>]+>", "", fetched_feedback[0].read_text(encoding="utf-8"))
    assert "Score: 2.0 / 2.0" in " ".join(page.split()), "the student's own graded feedback"

    # Releasing again (a later lesson, say) keeps the course and the grades in its gradebook.
    from autograder.cli import main

    assert main(["release", "--solutions", str(solutions), "--course", str(course.root),
                 "--exchange", str(exchange)]) == 0
    with nbgrader_environment(), Gradebook(course.db_url) as gb:
        assert gb.find_submission("99_tiny", student).score == 2
