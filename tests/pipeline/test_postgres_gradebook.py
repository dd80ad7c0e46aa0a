"""The class's gradebook on PostgreSQL: ``racelab grade --gradebook-url postgresql+psycopg://...``.

A real PostgreSQL server is started here (``initdb`` and ``postgres`` as the ``postgres`` user
when the tests run as root), listening on a Unix socket only, and stopped by its PID. Two demo
students on lesson 00 (no TensorFlow) are graded once into a database of their own and once into
the course's SQLite ``gradebook.db``: nbgrader's ``Gradebook`` and Formgrader's API must read
back the same students, assignments and scores as ``grades.csv`` from both.
"""

import argparse
import csv
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from autograder.cli import main
from autograder.pipeline.course import Course, make_course, nbgrader_environment
from autograder.pipeline.demo import make_submissions
from autograder.pipeline.source import find_lessons
from tests.conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LESSON = "00_anatomy"
STUDENTS = ("correct", "racy")
#: Where Debian's ``postgresql`` package puts the server's programs.
PG_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
#: Bound on the wait for the server to accept connections, and for it to stop.
WAIT_S = 60


def server_ready(data: Path) -> bool:
    """The postmaster says it accepts connections: the status line of ``postmaster.pid``, which
    ``pg_ctl start --wait`` reads too."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return False
    return len(lines) > 7 and lines[7].strip() == "ready"


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server on a private Unix socket; yields a function making a database's URL."""
    if not PG_BIN:
        pytest.skip("PostgreSQL's server programs are not installed "
                    "(Debian: apt-get install postgresql)")
    pytest.importorskip("psycopg", reason="needs the gradebook extra: pip install -e .[gradebook]")
    import psycopg

    bin_dir = PG_BIN[-1].parent
    folder = Path(tempfile.mkdtemp(prefix="rl-pg-", dir="/tmp"))  # a socket path is short
    as_user = {}
    if os.geteuid() == 0:  # initdb refuses root: the server runs as the postgres user
        account = pwd.getpwnam("postgres")
        os.chown(folder, account.pw_uid, account.pw_gid)
        as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    subprocess.run([str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "racelab",
                    "--auth=trust", "--no-sync", "--no-instructions"], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL, **as_user)
    log = (folder / "server.log").open("wb")
    server = subprocess.Popen([str(bin_dir / "postgres"), "-D", str(folder / "data"),
                               "-c", "listen_addresses=", "-c", f"unix_socket_directories={folder}",
                               "-c", "fsync=off"], cwd=folder, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True, **as_user)
    try:
        deadline = time.monotonic() + WAIT_S
        while not server_ready(folder / "data"):  # its socket opens before it takes sessions
            assert server.poll() is None, (folder / "server.log").read_text()
            assert time.monotonic() < deadline, "PostgreSQL did not get ready"
            time.sleep(0.05)
        admin = psycopg.connect(host=str(folder), user="racelab", dbname="postgres",
                                autocommit=True, connect_timeout=WAIT_S)

        def database(name: str) -> str:
            admin.execute(f'CREATE DATABASE "{name}"')
            return f"postgresql+psycopg://racelab@/{name}?host={folder}"

        try:
            yield database
        finally:
            admin.close()
    finally:
        server.send_signal(signal.SIGINT)  # fast shutdown: ends every session, then exits
        try:
            server.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(postgres, tmp_path_factory):
    """The same two students graded by the CLI into PostgreSQL and into SQLite."""
    root = tmp_path_factory.mktemp("pg-class")
    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(REPO / "solutions" / f"{LESSON}.py", solutions)
    students = root / "demo"
    for student in STUDENTS:
        shutil.copytree(REPO / "demo" / student, students / student)
    make_submissions(students, make_course(solutions, root / "template"), root / "submitted")
    url = postgres("racelab_course")
    runs = {"postgres": ["--gradebook-url", url], "sqlite": []}
    for name, extra in runs.items():
        assert main(["grade", str(root / "submitted"), "--out", str(root / name),
                     "--solutions", str(solutions), "--course", str(root / name / "course"),
                     "--workers", "2", "--cell-timeout", "60", "--memory-mb", "1500",
                     *extra]) == 0
    lessons = tuple(find_lessons(solutions))
    return {"root": root, "url": url,
            "courses": {"postgres": Course(root / "postgres" / "course", lessons, url),
                        "sqlite": Course(root / "sqlite" / "course", lessons)}}


def csv_rows(path: Path) -> set[tuple]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {(r["student"], r["assignment"], float(r["score"]), float(r["max_score"]))
                for r in csv.DictReader(handle)}


def gradebook_rows(url: str) -> set[tuple]:
    """Every submission in the gradebook at ``url``, as nbgrader's ``Gradebook`` reads it."""
    from nbgrader.api import Gradebook

    with nbgrader_environment(), Gradebook(url) as gb:
        return {(s.student.id, a.name, float(s.score), float(s.max_score))
                for a in gb.assignments for s in a.submissions}


def test_postgres_gradebook_holds_the_rows_of_grades_csv(graded):
    expected = csv_rows(graded["root"] / "postgres" / "grades.csv")
    assert {row[0] for row in expected} == set(STUDENTS)
    assert len({row[2] for row in expected}) == 2, "the two students should score differently"
    assert gradebook_rows(graded["url"]) == expected


def test_postgres_and_sqlite_gradebooks_hold_the_same_rows(graded):
    sqlite = graded["courses"]["sqlite"]
    assert csv_rows(graded["root"] / "sqlite" / "grades.csv") == \
        csv_rows(graded["root"] / "postgres" / "grades.csv")
    assert gradebook_rows(sqlite.db_url) == gradebook_rows(graded["url"])


def test_formgrader_api_on_postgres_shows_every_student_assignment_and_score(graded):
    """What Formgrader's pages ask nbgrader for: the same answers from both databases."""
    seen = {}
    for name, course in graded["courses"].items():
        with nbgrader_environment():
            api = course.api()
            students = {s["id"]: s["score"] for s in api.get_students()}
            assignments = {a["name"]: (a["max_score"], a["average_score"])
                           for a in api.get_assignments()}
            submissions = {(s["student"], s["score"], s["max_score"], s["autograded"])
                           for s in api.get_submissions(LESSON)}
        seen[name] = (students, assignments, submissions)
    rows = csv_rows(graded["root"] / "postgres" / "grades.csv")
    students, assignments, submissions = seen["postgres"]
    assert students == {student: score for student, _, score, _ in rows}
    assert assignments == {LESSON: (max(r[3] for r in rows), sum(r[2] for r in rows) / len(rows))}
    assert submissions == {(student, score, top, True) for student, _, score, top in rows}
    assert seen["postgres"] == seen["sqlite"]


def test_the_template_gradebook_of_a_postgres_course_holds_no_grades(graded):
    from nbgrader.api import Gradebook

    course = graded["courses"]["postgres"]
    with nbgrader_environment(), Gradebook(course.template_url) as gb:
        assert gb.students == []


def test_recording_grades_is_one_transaction(graded, postgres):
    """A result the gradebook refuses (an unknown assignment) leaves nothing recorded at all."""
    from nbgrader.api import Gradebook

    from autograder.pipeline.gradebook import record_grades
    from autograder.pipeline.spec import JobResult

    url = postgres("racelab_refused")
    course = Course(graded["courses"]["postgres"].root, graded["courses"]["postgres"].lessons, url)
    results = [JobResult("correct", LESSON, LESSON, "graded", 1.0, 8.0),
               JobResult("ghost", "99_nope", "99_nope", "graded", 1.0, 1.0)]
    with pytest.raises(Exception, match="99_nope"):
        record_grades(course, results, {})
    with nbgrader_environment(), Gradebook(url) as gb:
        assert (gb.assignments, gb.students) == ([], [])


def test_instructor_lab_points_formgrader_at_the_gradebook_url(tmp_path):
    from autograder.lab.__main__ import setup_from_args
    from autograder.lab.config import nbgrader_config

    url = "postgresql+psycopg://racelab@/racelab?host=/tmp/pg"
    args = argparse.Namespace(role="instructor", home=tmp_path, root=None,
                              solutions=REPO / "solutions", exchange=None,
                              course=tmp_path / "course", no_sandbox=True, gradebook_url=url)
    assert nbgrader_config(setup_from_args(args))["CourseDirectory"]["db_url"] == url
    args.gradebook_url = None
    assert nbgrader_config(setup_from_args(args))["CourseDirectory"]["db_url"] == \
        f"sqlite:///{(tmp_path / 'course').resolve() / 'gradebook.db'}"
