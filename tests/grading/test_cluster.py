"""Grading on a Dask cluster: real scheduler and worker processes, killed by PID.

Three demo students (``correct``, ``racy``, ``empty``) on lesson 00 (no TensorFlow) and lesson
06 (TensorFlow's profiler; the cheapest TensorFlow lesson to grade) are graded locally on 2
workers once per module. ``racelab grade --cluster`` on a real ``dask scheduler`` with two
``dask worker`` processes, recording into a real PostgreSQL gradebook, must give the same rows
and the same race report (every failure signature and cluster), and the database the same
scores as its ``grades.csv`` (engines: :mod:`tests.grading.engines`,
started for each test and stopped by PID). One test kills the worker grading ``racy`` on lesson
00 while its job runs: that notebook alone is ``worker-lost``, run once, and the same call again
grades only it.
"""

import os
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

pytest.importorskip("distributed")

import psutil  # noqa: E402
from distributed import Client  # noqa: E402

from autograder.course.course import make_course  # noqa: E402
from autograder.grading.cluster import ClusterError, check_scheduler  # noqa: E402
from autograder.grading.demo import make_submissions  # noqa: E402
from autograder.grading.grade import grade_submissions  # noqa: E402
from autograder.grading.report import compare, find_clusters, load_class  # noqa: E402
from autograder.grading.spec import Limits  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.grading.engines import (  # noqa: E402
    BIN,
    DASK_WAIT_S,
    csv_rows,
    dask_cluster,
    gradebook_rows,
    postgres_server,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: Lesson 00, and the TensorFlow lesson that grades fastest (lesson 06, about 5 s a notebook).
LESSONS = ("00_anatomy", "06_tracing")
#: The lesson of the worker-lost test (the fastest to grade).
LESSON = LESSONS[0]
STUDENTS = ("correct", "racy", "empty")
LIMITS = Limits(cell_timeout_s=60, memory_mb=1500, job_timeout_s=240)


def key(row) -> tuple:
    return (row.student, row.assignment, row.score, row.max_score, row.status)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The lessons' course, the three students' submissions and their local rows (2 workers):
    ``local`` maps (student, assignment) to the row's key."""
    root = tmp_path_factory.mktemp("cluster-class")
    solutions = root / "solutions"
    solutions.mkdir()
    for lesson in LESSONS:
        shutil.copy(REPO / "solutions" / f"{lesson}.py", solutions)
    course = make_course(solutions, root / "course")
    students = root / "demo"
    for student in STUDENTS:
        shutil.copytree(REPO / "demo" / student, students / student)
    make_submissions(students, course, root / "submitted")
    rows = grade_submissions(root / "submitted", course, root / "local", workers=2,
                             limits=LIMITS, progress=False)
    return {"root": root, "solutions": solutions, "course": course,
            "submitted": root / "submitted", "local_out": root / "local",
            "local": {(r.student, r.assignment): key(r) for r in rows}}


@pytest.fixture
def cluster(tmp_path):
    """A ``dask scheduler`` (no retries) and two single-threaded ``dask worker`` processes."""
    with dask_cluster(tmp_path) as running:
        yield running


@pytest.fixture
def gradebook_url():
    """A database of its own on a real PostgreSQL server, stopped by PID after the test."""
    with postgres_server() as database:
        yield database("racelab_cluster")


def attempts(client: Client) -> dict[str, int]:
    """How many times the scheduler sent each grading task to a worker."""
    log = client.run_on_scheduler(
        lambda dask_scheduler: [(str(t[0]), t[2]) for t in dask_scheduler.transition_log])
    counts: dict[str, int] = {}
    for task, finish in log:
        if task.startswith("racelab-grade-") and finish == "processing":
            counts[task] = counts.get(task, 0) + 1
    return counts


def test_cluster_grades_as_local_workers_do(demo, cluster, gradebook_url, tmp_path):
    local = set(demo["local"].values())
    assert {(student, lesson) for student, lesson, *_ in local} == \
        {(student, lesson) for student in STUDENTS for lesson in LESSONS}
    assert {status for *_, status in local} == {"graded"}
    out = tmp_path / "out"
    run = subprocess.run([str(BIN / "racelab"), "grade", str(demo["submitted"]), "--out",
                          str(out), "--solutions", str(demo["solutions"]), "--cluster",
                          cluster["address"], "--gradebook-url", gradebook_url,
                          "--cell-timeout", str(LIMITS.cell_timeout_s),
                          "--memory-mb", str(LIMITS.memory_mb)],
                         capture_output=True, text=True, timeout=DASK_WAIT_S * 2, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    graded = csv_rows(out / "grades.csv")
    assert graded == local
    assert gradebook_rows(gradebook_url) == {row[:4] for row in graded}
    assert sorted(attempts(cluster["client"]).values()) == [1] * len(local)
    local_class, cluster_class = load_class(demo["local_out"]), load_class(out)
    assert compare(local_class, cluster_class) == []
    assert find_clusters(cluster_class) == find_clusters(local_class)
    for student in STUDENTS:
        for lesson in LESSONS:
            feedback = out / "feedback" / student / lesson / f"{lesson}.html"
            assert feedback.exists()
            assert "racelab-job-" not in feedback.read_text(encoding="utf-8")  # no worker paths
            assert (out / "jobs" / student / f"{lesson}.done.json").exists()


def job_process(worker_pid: int, student: str) -> psutil.Process | None:
    """The grading job process (``run_in_process``) a worker runs for ``student``, if any."""
    try:
        children = psutil.Process(worker_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    for child in children:
        try:
            argv = child.cmdline()
        except psutil.Error:
            continue
        if any("autograder.grading.job" in a for a in argv) and \
                any(f"/jobs/{student}/" in a for a in argv):
            return child
    return None


def find_job(cluster: dict, student: str) -> tuple[int, psutil.Process] | None:
    for worker_pid in cluster["workers"]:
        found = job_process(worker_pid, student)
        if found is not None:
            return worker_pid, found
    return None


def test_worker_lost_mid_job_is_reported_once_and_graded_on_the_next_run(demo, cluster,
                                                                         tmp_path):
    """On lesson 00 alone: the same course, with its other lesson left out of the run."""
    out = tmp_path / "out"
    course = replace(demo["course"],
                     lessons=tuple(x for x in demo["course"].lessons if x.name == LESSON))
    local = {found: row for found, row in demo["local"].items() if found[1] == LESSON}

    def grade():
        return grade_submissions(demo["submitted"], course, out, limits=LIMITS,
                                 progress=False, cluster=cluster["address"])

    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(grade)
        worker_pid, job = wait_for(lambda: find_job(cluster, "racy"), "racy's job to start")
        os.kill(worker_pid, signal.SIGKILL)  # the worker, while its job runs
        job.kill()  # its orphaned job process (the sandbox dies with it)
        rows = {r.student: r for r in first.result(timeout=DASK_WAIT_S * 2)}

    assert {r.assignment for r in rows.values()} == {LESSON}
    lost = rows["racy"]
    assert lost.status == "worker-lost"
    assert cluster["workers"][worker_pid] in lost.detail
    for student in ("correct", "empty"):
        assert key(rows[student]) == local[(student, LESSON)]
    counts = attempts(cluster["client"])
    assert [n for task, n in counts.items() if "-racy-" in task] == [1]  # never run again
    assert sum(counts.values()) == 3
    assert not (out / "jobs" / "racy" / f"{LESSON}.done.json").exists()
    assert not (out / "feedback" / "racy").exists()
    assert {row[4] for row in csv_rows(out / "grades.csv") if row[0] == "racy"} == \
        {"worker-lost"}

    # the same call, on the worker left
    again = {(r.student, r.assignment): key(r) for r in grade()}
    assert again == local
    counts = attempts(cluster["client"])
    assert sum(counts.values()) == 4  # only racy was sent again
    assert [n for task, n in counts.items() if "-racy-" in task] == [1, 1]


class _RetryingScheduler:
    class scheduler:  # noqa: N801 - mirrors Client.scheduler
        address = "tcp://127.0.0.1:1"

    @staticmethod
    def run_on_scheduler(function):
        return 3


def test_a_scheduler_that_retries_lost_tasks_is_refused():
    with pytest.raises(ClusterError, match="ALLOWED_FAILURES=0"):
        check_scheduler(_RetryingScheduler())
