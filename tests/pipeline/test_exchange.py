"""Release, a student's fetch and submit through nbgrader's exchange, collect, then grade."""

import shutil
from pathlib import Path

from autograder.pipeline.course import make_course, nbgrader_environment
from autograder.pipeline.exchange import collect, release
from autograder.pipeline.grade import grade_submissions
from autograder.pipeline.spec import Limits

FIXTURES = Path(__file__).parent / "fixtures"


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


def test_released_lesson_fetched_submitted_collected_and_graded(tmp_path, monkeypatch):
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
                             limits=Limits(cell_timeout_s=30), progress=False)
    assert [(r.assignment, r.score, r.max_score, r.status) for r in rows] == [
        ("99_tiny", 2, 2, "graded")]
